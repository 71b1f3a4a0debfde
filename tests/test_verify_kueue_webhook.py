"""Kueue's webhook-only rules (domain/kueue.md §4.2), checked directly on objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compiler.diagnostics import Diagnostic
from compiler.model.manifest import Manifest
from compiler.rules import get
from compiler.verify.context import ObjectContext
from compiler.verify.kueue_webhook import check_kueue


def check(obj: dict[str, Any]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    check_kueue(obj, ObjectContext(Manifest("onprem", "kueue", obj), out))
    return out


def found(obj: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(d.code, d.path) for d in check(obj)]


def cq(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cohortName": "research",
        "namespaceSelector": {"matchExpressions": [{"key": "gpupolicy.dev/team", "operator": "In", "values": ["a"]}]},
        "resourceGroups": [
            {"coveredResources": ["nvidia.com/gpu", "cpu"],
             "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": "2"},
                                                        {"name": "cpu", "nominalQuota": "64"}]}]},
            {"coveredResources": ["nvidia.com/mig-1g.10gb"],
             "flavors": [{"name": "a100-mig", "resources": [{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 14}]}]},
        ],
        "fairSharing": {"weight": "0.5"},
        "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["h100"]}]},
    }
    base.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"}, "spec": base}


RES0 = "spec.resourceGroups[0].flavors[0].resources[0]"


def test_valid_queue_cohort_and_flavor() -> None:
    assert check(cq()) == []
    cohort = {"kind": "Cohort", "spec": {"parentName": "org", "resourceGroups": cq()["spec"]["resourceGroups"]}}
    assert check(cohort) == []
    flavor = {"kind": "ResourceFlavor", "spec": {"nodeLabels": {"gpupolicy.dev/pool": "a"},
                                                 "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"},
                                                                {"key": "k", "effect": "NoExecute"}]}}
    assert check(flavor) == []
    assert check({"kind": "LocalQueue", "spec": {}}) == []


def resource(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(fields)
    return obj


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (resource(cq(), nominalQuota=-1, lendingLimit=None), [("VERIFY020", f"{RES0}.nominalQuota")]),
        (resource(cq(), borrowingLimit="-500m"), [("VERIFY020", f"{RES0}.borrowingLimit")]),
        (resource(cq(), lendingLimit=9), [("VERIFY021", f"{RES0}.lendingLimit")]),
        (resource(cq(), nominalQuota="8", lendingLimit="8001m"), [("VERIFY021", f"{RES0}.lendingLimit")]),
        (resource(cq(), nominalQuota="1Gi", lendingLimit="1024Mi"), []),  # equal values, different units
        (cq(cohortName=None), [("VERIFY022", f"{RES0}.lendingLimit")]),
        (resource(cq(), name="cpu"), [("VERIFY023", f"{RES0}.name")]),
        (cq(fairSharing={"weight": "-1"}), [("VERIFY027", "spec.fairSharing.weight")]),
        (cq(fairSharing={"weight": "1n"}), [("VERIFY027", "spec.fairSharing.weight")]),
        (cq(fairSharing={"weight": 0}), []),
        (cq(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}),
         [("VERIFY028", "spec.namespaceSelector.matchExpressions[0].values")]),
        (cq(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]}),
         [("VERIFY028", "spec.namespaceSelector.matchExpressions[0].values")]),
        (cq(namespaceSelector={"matchLabels": {"bad key!": "x"}}), [("VERIFY028", "spec.namespaceSelector.matchLabels[bad key!]")]),
        (cq(admissionChecksStrategy={"admissionChecks": [{"name": "p", "onFlavors": ["l4"]}]}),
         [("VERIFY029", "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]")]),
    ],
)
def test_cluster_queue_rules(obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found(obj) == expected


def test_duplicates_across_groups() -> None:
    obj = cq()
    groups = obj["spec"]["resourceGroups"]
    groups[1]["coveredResources"] = ["cpu"]
    groups[1]["flavors"][0] = {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": 1}]}
    assert found(obj) == [("VERIFY024", "spec.resourceGroups[1].coveredResources[0]"),
                          ("VERIFY024", "spec.resourceGroups[1].flavors[0].name")]


def test_bad_resource_name() -> None:
    obj = cq()
    obj["spec"]["resourceGroups"][1]["coveredResources"] = ["nvidia.com/mig 1g"]
    obj["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["name"] = "nvidia.com/mig 1g"
    assert found(obj) == [("VERIFY026", "spec.resourceGroups[1].coveredResources[0]")]


def test_size_limits() -> None:
    resources = [f"example.com/r{i}" for i in range(3)]
    flavors = [{"name": f"f{i}", "resources": [{"name": r, "nominalQuota": 1} for r in resources]} for i in range(257)]
    obj = cq(resourceGroups=[{"coveredResources": resources, "flavors": flavors}], admissionChecksStrategy=None)
    codes = found(obj)
    assert ("VERIFY025", "spec.resourceGroups[0]") in codes  # 771 pairs > 512
    assert ("VERIFY025", "spec.resourceGroups") in codes  # 257 flavors > 256


def test_cohort_limits_need_a_parent_and_may_lend_more_than_nominal() -> None:
    spec = copy.deepcopy(cq()["spec"]["resourceGroups"])
    spec[0]["flavors"][0]["resources"][0].update(lendingLimit=20, borrowingLimit=1)
    cohort = {"kind": "Cohort", "spec": {"resourceGroups": spec}}
    assert found(cohort) == [("VERIFY022", f"{RES0}.borrowingLimit"), ("VERIFY022", f"{RES0}.lendingLimit")]
    cohort["spec"]["parentName"] = "org"
    assert found(cohort) == []


def test_v1beta1_field_names() -> None:
    obj = cq(cohortName=None)
    obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    obj["spec"]["cohort"] = "research"
    del obj["spec"]["cohortName"]
    assert found(obj) == []


def test_resource_flavor_rules() -> None:
    flavor = {"kind": "ResourceFlavor", "spec": {
        "nodeLabels": {"gpupolicy.dev/pool": "not ok!"},
        "nodeTaints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"},
                       {"key": "bad key", "effect": "NoSchedule"}]}}
    assert found(flavor) == [("VERIFY030", "spec.nodeLabels[gpupolicy.dev/pool]"), ("VERIFY030", "spec.nodeTaints[1]"),
                             ("VERIFY030", "spec.nodeTaints[2].key")]


def test_every_verify_rule_is_documented() -> None:
    import compiler.verify  # noqa: F401  (registers the rules)

    for n in [*range(1, 17), *range(20, 31)]:
        rule = get(f"VERIFY{n:03d}")
        assert rule.summary and "\n" not in rule.summary
        assert rule.passing and rule.failing and rule.passing != rule.failing
