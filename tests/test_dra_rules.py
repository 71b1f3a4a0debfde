"""DRA rules: bad DeviceClass selectors and DRA settings give located diagnostics (rule ID + line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import compile_dir, copy_demo, find, line_of, mutate, policy_at

from compiler.lower.dra import lower_device_classes
from compiler.policy.kueue_manager import manager_config
from compiler.verify.dra_claims import claim_problems

ANCHOR = "systemNamespaces: [gpu-operator, kueue-system, argocd, monitoring]\n"
A = "device.attributes['gpu.nvidia.com']"
GPU = f"device.driver == 'gpu.nvidia.com' && {A}.type == 'gpu'"


def custom(root: Path, name: str, cls: str, *selectors: str) -> None:
    lines = [f"      deviceClasses:\n        - name: {name}\n          class: {cls}\n          selectors:\n"]
    lines += [f'            - "{s}"\n' for s in selectors]
    mutate(root, "fleet.yaml", ANCHOR, ANCHOR + "".join(lines))


# (case, class, selectors, rule, severity, needle on the reported line)
CASES = [
    ("matches nothing", "h100-80gb", [f"{GPU} && {A}.productName == 'NVIDIA B200'"], "DRA002", "error",
     "- name: custom-class"),
    ("overlaps another class", "h100-80gb", [f"{GPU} && {A}.architecture == 'Hopper'"], "DRA003", "error",
     "- name: custom-class"),
    ("CEL syntax error", "h100-80gb", [GPU, f"{A}.type = 'gpu'"], "DRA005", "error", "type = 'gpu'"),
    ("non-bool selector", "h100-80gb", [f"{A}.productName"], "DRA005", "error", ".productName\""),
    ("errors on devices without the attribute", "a100-80gb-mig-1g.10gb", [f"{A}.profile == '1g.10gb'"],
     "DRA006", "error", "profile == '1g.10gb'"),
    ("pins hardware", "h100-80gb", [f"{GPU} && {A}.uuid == 'GPU-2fa81118'"], "DRA007", "warning", "uuid =="),
    ("depends on the board variant", "h100-80gb", [f"{GPU} && {A}.productName == 'NVIDIA H100 PCIe'"],
     "DRA007", "warning", "NVIDIA H100 PCIe"),
    ("unknown budget class", "h100-81gb", [GPU], "DRA008", "error", "class: h100-81gb"),
    ("serving-only budget class", "h200", [GPU], "DRA008", "error", "class: h200"),
]


@pytest.mark.parametrize("case,cls,selectors,rule,severity,needle", CASES, ids=[c[0] for c in CASES])
def test_custom_device_class(tmp_path: Path, case: str, cls: str, selectors: list[str], rule: str,
                             severity: str, needle: str) -> None:
    root = copy_demo(tmp_path)
    custom(root, "custom-class", cls, *selectors)
    d = find(compile_dir(root).diagnostics, rule)
    assert d.severity.value == severity, d
    assert d.location is not None and d.location.file == "policies/fleet.yaml"
    assert d.location.line == line_of(root, "fleet.yaml", needle), d


def test_good_custom_class_counts_against_its_budget(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    sel = (f"{GPU} && {A}.architecture == 'Hopper' && "
           "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) < 0")
    custom(root, "hopper-80g", "h100-80gb", sel)
    res = compile_dir(root)
    assert not [d for d in res.diagnostics if d.code.startswith("DRA")], res.diagnostics
    assert res.policy is not None
    mapping = manager_config(res.policy, "onprem")["resources"]["deviceClassMappings"]
    assert {"name": "gpupolicy.dev/h100-80gb", "deviceClassNames": ["h100-80gb", "hopper-80g"]} in mapping
    objs = {(m.kind, m.namespace, m.name): m.obj for m in res.manifests if m.component == "dra"}
    assert objs[("DeviceClass", None, "hopper-80g")]["metadata"]["labels"]["gpupolicy.dev/class"] == "h100-80gb"
    assert ("ResourceClaimTemplate", "nlp-train", "hopper-80g-8") in objs


def test_custom_class_name_taken(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    custom(root, "gpu.nvidia.com", "h100-80gb", GPU)
    d = find(compile_dir(root).diagnostics, "DRA008")
    assert "driver chart class" in d.message and d.location is not None
    assert d.location.line == line_of(root, "fleet.yaml", "- name: gpu.nvidia.com")


def test_full_class_beside_mig_parents(tmp_path: Path) -> None:
    """A full-A100 pool next to the MIG-cut A100 pool: #719 nodes would list the MIG GPUs whole too."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "        - name: h100-train\n",
           "        - name: a100-full\n          model: a100-80gb\n          nodes: 1\n          gpusPerNode: 8\n"
           "          cut:\n            mode: full\n        - name: h100-train\n")
    d = find(compile_dir(root).diagnostics, "DRA004")
    assert d.severity.value == "warning" and "32 MIG-enabled GPUs of pool(s) a100-mig" in d.message
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "- name: a100-full")


def test_dra_below_134_compiles_without_dra_objects(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", 'kubernetesVersion: "1.34"', 'kubernetesVersion: "1.33"')
    policy, diags = policy_at(root)
    d = find(diags, "DRA001")
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "dra: true")
    assert not [x for x in diags if x.code.startswith("DRA") and x.code != "DRA001"]
    assert policy is not None and lower_device_classes(policy, "onprem") == []
    assert "deviceClassMappings" not in manager_config(policy, "onprem")["resources"]


@pytest.mark.parametrize("case,old,new,rule,needle", [
    ("dynamic MIG with static layouts", ANCHOR, ANCHOR + "      featureGates:\n        draDriver: {DynamicMIG: true}\n",
     "DRA012", "DynamicMIG: true"),
    ("kueue too old", "kueue: v0.19.2", "kueue: v0.14.0", "DRA013", "kueue: v0.14.0"),
    ("time-slicing on DRA", "          cut:\n            mode: full\n        - name: h200-serve",
     "          cut:\n            mode: timeslicing\n            replicas: 4\n        - name: h200-serve",
     "DRA011", "mode: timeslicing"),
])
def test_dra_settings(tmp_path: Path, case: str, old: str, new: str, rule: str, needle: str) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", old, new)
    d = find(compile_dir(root).diagnostics, rule)
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", needle), d


def test_kueue_counts_only_exact_count() -> None:
    def rct(exactly: dict | None = None, first: list | None = None) -> dict:  # type: ignore[type-arg]
        req: dict = {"name": "gpu"}  # type: ignore[type-arg]
        if exactly is not None:
            req["exactly"] = exactly
        if first is not None:
            req["firstAvailable"] = first
        return {"spec": {"spec": {"devices": {"requests": [req]}}}}

    assert claim_problems(rct({"deviceClassName": "h100-80gb", "allocationMode": "ExactCount", "count": 2})) == []
    assert claim_problems(rct({"deviceClassName": "h100-80gb"})) == []  # ExactCount, count 1 by default
    assert "allocationMode All" in claim_problems(rct({"deviceClassName": "h100-80gb", "allocationMode": "All"}))[0]
    assert "firstAvailable" in claim_problems(rct(first=[{"name": "a", "deviceClassName": "h100-80gb"}]))[0]
    assert "adminAccess" in claim_problems(rct({"deviceClassName": "h100-80gb", "adminAccess": True}))[0]


def test_verify_reports_claim_templates_kueue_cannot_count() -> None:
    """DRA009 runs in the verify stage on the rendered templates of out/<cluster>/dra/."""
    from compiler.model.manifest import Manifest
    from compiler.verify import verify

    def template(mode: str) -> dict:  # type: ignore[type-arg]
        req = {"name": "gpu", "exactly": {"deviceClassName": "h100-80gb", "allocationMode": mode}}
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"t-{mode.lower()}", "namespace": "team-a"},
                "spec": {"spec": {"devices": {"requests": [req]}}}}

    ms = [Manifest("onprem", "dra", template("All")), Manifest("onprem", "dra", template("ExactCount")),
          Manifest("onprem", "serving", template("All"))]  # serving claims are not Kueue's to count
    found = verify(ms, kube_versions={"onprem": "1.34"}, crds=None).diagnostics
    dra = [d for d in found if d.code == "DRA009"]
    assert len(dra) == 1 and "t-all" in dra[0].message and "allocationMode All" in dra[0].message
    assert dra[0].location is not None and dra[0].location.file == "out/onprem/dra/resourceclaimtemplate.team-a.t-all.yaml"


def test_kueue_mapping_limits(tmp_path: Path) -> None:
    """DRA010: eight fleet DeviceClasses plus the generated one make nine in one mapping (Kueue: 8)."""
    root = copy_demo(tmp_path)
    sel = (f"{GPU} && {A}.architecture == 'Hopper' && "
           "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) < 0")
    lines = ["      deviceClasses:\n"]
    for i in range(8):
        lines.append(f"        - name: hopper-{i}\n          class: h100-80gb\n          selectors:\n"
                     f'            - "{sel}"\n')
    mutate(root, "fleet.yaml", ANCHOR, ANCHOR + "".join(lines))
    d = find(compile_dir(root).diagnostics, "DRA010")
    assert "more than 8 DeviceClasses in gpupolicy.dev/h100-80gb" in d.message, d
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "dra: true")
    mutate(root, "fleet.yaml", "        - name: hopper-7\n          class: h100-80gb\n          selectors:\n"
           f'            - "{sel}"\n', "")
    assert not [x for x in compile_dir(root).diagnostics if x.code == "DRA010"]


def test_a_budget_on_a_shared_class_of_a_dra_cluster_is_an_error_in_the_team_file(tmp_path: Path) -> None:
    """A time-sliced pool on a DRA cluster gets no DeviceClass (DRA011, a warning on the fleet), so a
    team budget on its class could never be used: before, the team's file passed, its ClusterQueue
    covered gpupolicy.dev/l4-ts4 with nothing behind it and `explain` showed the guarantee. Now the
    budget is a FLEET012 error where the team wrote it."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "        - name: h200-serve\n",
           "        - name: l4-ts\n          model: l4\n          nodes: 2\n          gpusPerNode: 4\n"
           "          driver: \"580\"\n          cut:\n            mode: timeslicing\n            replicas: 4\n"
           "        - name: h200-serve\n")
    mutate(root, "teams/interns.yaml", "      clusters: [cloud]", "      clusters: [cloud, onprem]")
    mutate(root, "teams/interns.yaml", "  budgets:\n",
           "  budgets:\n    - cluster: onprem\n      class: l4-ts4\n      guaranteed: 8\n")
    _, diags = policy_at(root)
    d = find(diags, "FLEET012")
    assert d.severity.value == "error" and "'l4-ts4' on 'onprem' is a timeslicing cut" in d.message
    assert d.location is not None and d.location.file == "policies/teams/interns.yaml"
    assert d.location.line == line_of(root, "teams/interns.yaml", "class: l4-ts4")
    assert find(diags, "DRA011").severity.value == "warning"
