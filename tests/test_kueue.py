"""Kueue lowering: the object graph, the three budget values, the manager Configuration, and
admission of realistic job shapes."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from conftest import CRDS, REPO
from helpers import compile_dir, copy_demo, line_of, mutate

from compiler.policy.kueue_manager import manager_config
from compiler.tools.job_admission import admit, parse_shape
from compiler.verify.kueue_config import problems


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    res = compile_dir(REPO)
    assert res.ok
    return res


def _obj(res, kind: str, name: str, cluster: str, namespace: str | None = None):  # type: ignore[no-untyped-def]
    for m in res.manifests:
        if m.kind == kind and m.name == name and m.cluster == cluster and m.namespace == namespace:
            return m.obj
    raise AssertionError(f"no {kind} {name} on {cluster}")


def _resource(cq: dict, flavor: str) -> dict:  # type: ignore[type-arg]
    for g in cq["spec"]["resourceGroups"]:
        for f in g["flavors"]:
            if f["name"] == flavor:
                return f["resources"][0]  # type: ignore[no-any-return]
    raise AssertionError(flavor)


def test_unset_zero_unlimited_lower_distinctly(demo) -> None:  # type: ignore[no-untyped-def]
    nlp = _resource(_obj(demo, "ClusterQueue", "nlp", "onprem"), "h100-80gb")
    assert nlp == {"name": "gpupolicy.dev/h100-80gb", "nominalQuota": 32, "borrowingLimit": 0, "lendingLimit": 0}
    search = _resource(_obj(demo, "ClusterQueue", "search", "onprem"), "a100-80gb-mig-1g.10gb")
    assert "lendingLimit" not in search  # lend: unlimited → field absent
    assert "borrowingLimit" in search and search["borrowingLimit"] == 8  # inherited from department product
    interns = _resource(_obj(demo, "ClusterQueue", "interns", "cloud"), "l4-ts4")
    assert "borrowingLimit" not in interns  # unset → department research default unlimited
    assert interns["lendingLimit"] == 16


def test_graph_shape(demo) -> None:  # type: ignore[no-untyped-def]
    cq = _obj(demo, "ClusterQueue", "recsys", "onprem")
    assert cq["spec"]["cohortName"] == "product"
    assert cq["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["recsys-train"]
    for g in cq["spec"]["resourceGroups"]:
        for f in g["flavors"]:
            assert [r["name"] for r in f["resources"]] == g["coveredResources"]
    assert _obj(demo, "Cohort", "research", "onprem")["spec"]["parentName"] == "ai"
    assert "parentName" not in _obj(demo, "Cohort", "ai", "onprem")["spec"]
    lq = _obj(demo, "LocalQueue", "search", "cloud", "search-eval")
    assert lq["spec"] == {"clusterQueue": "search"}
    assert _obj(demo, "WorkloadPriorityClass", "production", "cloud")["value"] == 1000
    # MIG slices are their own resources on the DRA cluster, and serving pools get no flavor
    names = {m.name for m in demo.manifests if m.kind == "ResourceFlavor" and m.cluster == "onprem"}
    assert "a100-80gb-mig-3g.40gb" in names and "h200" not in names
    names = {m.name for m in demo.manifests if m.kind == "ResourceFlavor" and m.cluster == "cloud"}
    assert names == {"h100-80gb", "l4-ts4"}


def test_manager_configuration_is_valid_kueue_config(demo) -> None:  # type: ignore[no-untyped-def]
    for cluster in ("onprem", "cloud"):
        cfg = manager_config(demo.policy, cluster)
        assert problems(cfg) == []
        assert cfg["manageJobsWithoutQueueName"] is True
        assert "gpupolicy.dev/data-class" in cfg["integrations"]["labelKeysToCopy"]


def test_configuration_model_is_strict(demo) -> None:  # type: ignore[no-untyped-def]
    sample = CRDS / "kueue" / "kueue-config-sample.yaml"
    if sample.is_file():
        assert problems(yaml.safe_load(sample.read_text())) == []
    cfg = copy.deepcopy(manager_config(demo.policy, "onprem"))
    cfg["fairSharing"]["preemptionStrategies"].reverse()
    assert any("preemptionStrategies" in p for p in problems(cfg))
    cfg = copy.deepcopy(manager_config(demo.policy, "onprem"))
    cfg["resources"]["quotaCheckStrategy"] = "IgnoreUndeclared"
    assert any("excludeResourcePrefixes" in p for p in problems(cfg))
    cfg = copy.deepcopy(manager_config(demo.policy, "onprem"))
    cfg["integrations"]["frameworks"].append("kubeflow.org/notajob")
    assert any("notajob" in p for p in problems(cfg))
    cfg["unknownField"] = True
    assert any("unknownField" in p for p in problems(cfg))
    cfg = copy.deepcopy(manager_config(demo.policy, "onprem"))
    cfg["managedJobsNamespaceSelector"] = {"matchLabels": {}}
    assert any("kube-system" in p for p in problems(cfg))


def test_realistic_gpu_job_is_admissible(demo) -> None:  # type: ignore[no-untyped-def]
    v = admit(demo.policy, "recsys", "cloud", parse_shape("nvidia.com/gpu=8,cpu=96,memory=1Ti,ephemeral-storage=100Gi"))
    assert v.admissible, v.reasons
    assert v.flavors == (("nvidia.com/gpu", "h100-80gb"),)


def test_unbudgeted_gpu_resource_is_blocked(demo) -> None:  # type: ignore[no-untyped-def]
    v = admit(demo.policy, "search", "cloud", parse_shape("nvidia.com/gpu=1,cpu=4"))
    assert not v.admissible and "not covered" in v.reasons[0]


def test_borrowing_between_siblings(demo) -> None:  # type: ignore[no-untyped-def]
    # recsys: 8 guaranteed + borrow 4 of what vision lends (4)
    assert admit(demo.policy, "recsys", "onprem", {"a100-80gb-mig-3g.40gb": 12}).admissible
    v = admit(demo.policy, "recsys", "onprem", {"a100-80gb-mig-3g.40gb": 13})
    assert not v.admissible and "= 12" in v.reasons[0]


def test_protected_capacity_is_not_borrowable(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", "      borrow: 0\n      lend: 8", "      borrow: 24\n      lend: 8")
    res = compile_dir(root)
    # nlp lends 0 of its 32 H100 on onprem; only the 16 nobody is guaranteed can be borrowed
    # → KUEUE004 warning, build still passes
    assert res.ok
    assert any(d.code == "KUEUE004" and "lend at most 16" in d.message for d in res.diagnostics)
    assert admit(res.policy, "recsys", "onprem", {"h100-80gb": 16 + 16}).admissible
    assert not admit(res.policy, "recsys", "onprem", {"h100-80gb": 16 + 17}).admissible


def test_unguaranteed_gpus_are_lent_by_the_root_cohort(demo) -> None:  # type: ignore[no-untyped-def]
    """onprem: 64 H100, 48 guaranteed. The 16 left are the root Cohort's nominal quota, so any
    queue of the tree may borrow them (Kueue lends only quota someone holds)."""
    cohorts = {m.name: m.obj for m in demo.manifests if m.kind == "Cohort" and m.cluster == "onprem"}
    groups = cohorts["ai"]["spec"]["resourceGroups"]
    quota = {f["name"]: f["resources"][0]["nominalQuota"] for g in groups for f in g["flavors"]}
    assert quota["h100-80gb"] == 16 and quota["a100-80gb-mig-1g.10gb"] == 32
    assert "a100-80gb-mig-2g.20gb" not in quota  # no queue has that flavor: nothing could borrow it
    assert "resourceGroups" not in cohorts["research"]["spec"]  # only the root holds it
    assert admit(demo.policy, "vision", "onprem", {"a100-80gb-mig-1g.10gb": 16 + 32}).admissible


def test_unguaranteed_gpus_under_several_roots_are_stranded(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "      parent: ai\n      weight: 2", "      weight: 2")  # research becomes a root
    res = compile_dir(root)
    d = next(d for d in res.diagnostics if d.code == "KUEUE007" and "'onprem'" in d.message)
    assert "16 of h100-80gb" in d.message and "2 root departments (ai, research)" in d.message, d.message
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "- name: onprem")
    assert not [m for m in res.manifests if m.kind == "Cohort" and "resourceGroups" in m.obj["spec"]]
