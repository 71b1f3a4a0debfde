"""MultiKueue: manager objects, queue checks, capacity from workers, and the GITOPS00x rules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import compile_dir, find, line_of
from helpers import mutate as edit

from compiler.lower.common import obj
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.policy.multikueue_topology import check_manifests

GOLDEN = Path(__file__).parent / "golden" / "multikueue" / "policies"


@pytest.fixture
def fed(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(GOLDEN, root / "policies")
    return root


def objects(res, cluster: str, kind: str) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {m.name: m.obj for m in res.manifests if m.cluster == cluster and m.kind == kind}


def test_manager_objects(fed: Path) -> None:
    res = compile_dir(fed)
    assert res.ok, res.diagnostics
    ac = objects(res, "hub", "AdmissionCheck")["multikueue"]
    assert ac["spec"] == {"controllerName": "kueue.x-k8s.io/multikueue",
                          "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                         "name": "multikueue"}}
    assert objects(res, "hub", "MultiKueueConfig")["multikueue"]["spec"] == {"clusters": ["east", "west"]}
    clusters = objects(res, "hub", "MultiKueueCluster")
    # a reference to a Secret, never the kubeconfig itself; default name when the worker names none
    assert clusters["east"]["spec"]["clusterSource"] == {"kubeConfig": {"locationType": "Secret",
                                                                        "location": "east-kubeconfig"}}
    assert clusters["west"]["spec"]["clusterSource"]["kubeConfig"]["location"] == "multikueue-west"
    for m in res.manifests:
        if m.kind in ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"):
            assert (m.cluster, m.component) == ("hub", "multikueue")
    for name, cq in objects(res, "hub", "ClusterQueue").items():
        assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}, name
    for worker in ("east", "west"):
        assert not objects(res, worker, "AdmissionCheck")
        for cq in objects(res, worker, "ClusterQueue").values():
            assert "admissionChecksStrategy" not in cq["spec"]


def test_each_manager_marks_its_remote_workloads_with_its_own_origin(fed: Path) -> None:
    """A manager's garbage collector deletes the remote workloads of its origin that have no local
    counterpart, so two managers of one worker under Kueue's default origin would delete each
    other's jobs: each manager's Configuration names itself (multiKueue.origin); workers set none."""
    from compiler.policy.graph import Policy
    from compiler.policy.kueue_manager import manager_config

    res = compile_dir(fed)
    assert isinstance(res.policy, Policy)
    assert manager_config(res.policy, "hub")["multiKueue"] == {"origin": "hub"}
    assert "multiKueue" not in manager_config(res.policy, "east")


def test_workers_mirror_manager_queues(fed: Path) -> None:
    res = compile_dir(fed)
    hub = {(m.namespace, m.name) for m in res.manifests if m.cluster == "hub" and m.kind == "LocalQueue"}
    assert hub == {("llm-train", "llm"), ("speech-train", "speech")}
    for worker in ("east", "west"):
        assert hub <= {(m.namespace, m.name) for m in res.manifests if m.cluster == worker and m.kind == "LocalQueue"}


def test_manager_capacity_is_the_sum_of_workers(fed: Path) -> None:
    res = compile_dir(fed)
    assert res.policy is not None
    assert res.policy.classes["hub"]["h100-80gb"].capacity == 16 + 8
    assert res.policy.allocation.capacity[("hub", "l4")] == 8
    edit(fed, "teams/llm.yaml", "{cluster: hub, class: h100-80gb, guaranteed: 16}",
         "{cluster: hub, class: h100-80gb, guaranteed: 20}")
    d = find(compile_dir(fed).diagnostics, "KUEUE001")
    assert "28" in d.message and "24" in d.message and "workers' pools" in d.message
    assert d.location is not None and d.location.line == line_of(fed, "teams/llm.yaml", "guaranteed: 20")


@pytest.mark.parametrize(
    ("rel", "old", "new", "rule", "needle"),
    [
        ("fleet.yaml", "workers: [east, west]", "workers: [east, east]", "GITOPS001", "workers: [east, east]"),
        ("fleet.yaml", "workers: [east, west]", "workers: [east, hub]", "GITOPS001", "workers: [east, hub]"),
        ("fleet.yaml", "workers: [east, west]", "workers: []", "GITOPS001", "workers: []"),
        ("fleet.yaml", "        role: worker\n        kubeconfigSecret", "        role: manager\n        kubeconfigSecret",
         "GITOPS002", "workers: [east, west]"),
        ("fleet.yaml", "gpusPerNode: 8\n          cut: {mode: full}\n    - name: west",
         "gpusPerNode: 8\n          cut: {mode: full}\n      dra: true\n    - name: west", "GITOPS003",
         "workers: [east, west]"),
        ("teams/llm.yaml", "clusters: [hub, east, west]", "clusters: [hub, east]", "GITOPS004", "clusters: [hub, east]"),
        ("teams/llm.yaml", "    - {cluster: west, class: h100-80gb, guaranteed: 4}\n", "", "GITOPS004",
         "clusters: [hub, east, west]"),
        ("teams/speech.yaml", "    - {cluster: west, class: l4, guaranteed: 8}\n", "", "GITOPS005", "class: l4, guaranteed: 8"),
    ],
)
def test_rules(fed: Path, rel: str, old: str, new: str, rule: str, needle: str) -> None:
    edit(fed, rel, old, new)
    d = find(compile_dir(fed).diagnostics, rule)
    assert d.location is not None
    where = "fleet.yaml" if rule in ("GITOPS001", "GITOPS002", "GITOPS003") else rel
    assert d.location.file.endswith(where)
    assert d.location.line == line_of(fed, where, needle), d


def test_more_than_twenty_workers(fed: Path) -> None:
    workers = ", ".join(f"w{i}" for i in range(21))
    edit(fed, "fleet.yaml", "workers: [east, west]", f"workers: [{workers}]")
    d = find(compile_dir(fed).diagnostics, "GITOPS001")
    assert "21 workers" in d.message


def test_manager_training_pools_are_idle(fed: Path) -> None:
    edit(fed, "fleet.yaml", "      multikueue:\n        role: manager",
         "      pools:\n        - {name: idle, model: l4, nodes: 1, gpusPerNode: 4, cut: {mode: full}}\n"
         "      multikueue:\n        role: manager")
    d = find(compile_dir(fed).diagnostics, "GITOPS007")
    assert d.severity.value == "warning" and "idle" in d.message


def test_one_multikueue_check_per_cluster_queue(fed: Path) -> None:
    res = compile_dir(fed)
    assert res.policy is not None
    assert not check_manifests(res.policy, Inventory.of(res.manifests))
    extra = obj("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "multikueue-eu")
    extra["spec"] = {"controllerName": "kueue.x-k8s.io/multikueue"}
    cq = next(m for m in res.manifests if m.cluster == "hub" and m.kind == "ClusterQueue")
    cq.obj["spec"]["admissionChecksStrategy"]["admissionChecks"].append({"name": "multikueue-eu"})
    diags = check_manifests(res.policy, Inventory.of([*res.manifests, Manifest("hub", "multikueue", extra)]))
    assert [d.code for d in diags] == ["GITOPS006"] and cq.name in diags[0].message


def test_manager_of_dra_workers_holds_the_templates(tmp_path: Path) -> None:
    """Kueue admits a DRA job on the manager against the ResourceClaimTemplates its pods name and
    syncs neither templates nor DeviceClasses to workers: the manager holds the templates and the
    mappings (no DeviceClass, no driver), each worker its own, under the same names."""
    root = tmp_path / "fed-dra"
    shutil.copytree(GOLDEN.parent.parent / "multikueue-dra" / "policies", root / "policies")
    res = compile_dir(root)
    assert res.ok, [(d.code, d.message) for d in res.diagnostics]
    assert not objects(res, "hub", "DeviceClass") and objects(res, "east", "DeviceClass")
    hub = {(m.namespace, m.name) for m in res.manifests if m.cluster == "hub" and m.kind == "ResourceClaimTemplate"}
    workers = {(m.namespace, m.name) for m in res.manifests
               if m.cluster in ("east", "west") and m.kind == "ResourceClaimTemplate"}
    assert ("llm-train", "h100-80gb-8") in hub and hub <= workers
    from compiler.policy.kueue_manager import manager_config

    assert res.policy is not None
    mappings = manager_config(res.policy, "hub")["resources"]["deviceClassMappings"]
    assert {"name": "gpupolicy.dev/h100-80gb", "deviceClassNames": ["h100-80gb"]} in mappings
    cq = objects(res, "hub", "ClusterQueue")["llm"]
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["gpupolicy.dev/h100-80gb"]


def test_manager_templates_no_worker_has_are_flagged(tmp_path: Path) -> None:
    root = tmp_path / "fed-dra"
    shutil.copytree(GOLDEN.parent.parent / "multikueue-dra" / "policies", root / "policies")
    edit(root, "teams/llm.yaml", "{cluster: east, class: h100-80gb, guaranteed: 12}",
         "{cluster: east, class: h100-80gb, guaranteed: 2, borrow: 0}")
    edit(root, "teams/llm.yaml", "{cluster: west, class: h100-80gb, guaranteed: 4}",
         "{cluster: west, class: h100-80gb, guaranteed: 4, borrow: 0}")
    d = find(compile_dir(root).diagnostics, "DRA014")
    assert d.severity.value == "warning" and "h100-80gb-8" in d.message and "h100-80gb-4" not in d.message, d.message
    assert d.location is not None and d.location.line == line_of(root, "teams/llm.yaml", "{cluster: hub, class: h100-80gb")
