"""Verify stage against the upstream CRDs (../shared/crds, or $GPUPOLICY_CRDS) and the bundled
Kubernetes schemas: valid objects pass, each kind of mistake gets its own rule ID."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
import yaml
from conftest import CRDS

from compiler.diagnostics import Severity
from compiler.model.manifest import Manifest
from compiler.verify import CrdRegistry, VerifyResult, verify


@pytest.fixture(scope="module")
def registry() -> CrdRegistry:
    if not CRDS.is_dir():
        pytest.skip(f"upstream CRDs not found at {CRDS} (set GPUPOLICY_CRDS to the crds/ directory)")
    return CrdRegistry.load(CRDS)


def run(registry: CrdRegistry | None, *objs: dict[str, Any], versions: dict[str, str] | None = None,
        cluster: str = "onprem", strict: bool = False, **kw: Any) -> VerifyResult:
    manifests = [Manifest(cluster, "kueue", o) for o in objs]
    return verify(manifests, kube_versions=versions or {"onprem": "1.34"}, crds=registry, strict=strict, **kw)


def codes(result: VerifyResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def only(result: VerifyResult, code: str) -> Any:
    found = [d for d in result.diagnostics if d.code == code]
    assert len(found) == 1, result.diagnostics
    return found[0]


def queue(**spec: Any) -> dict[str, Any]:
    base = {"cohortName": "research", "namespaceSelector": {"matchLabels": {"gpupolicy.dev/team": "team-a"}},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu"], "flavors": [
                {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4,
                                                "lendingLimit": 2}, {"name": "cpu", "nominalQuota": "64"}]}]}]}
    base.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team-a"}, "spec": base}


FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "h100"},
          "spec": {"nodeLabels": {"gpupolicy.dev/pool": "h100-a"},
                   "nodeTaints": [{"key": "gpupolicy.dev/dedicated", "value": "train", "effect": "NoSchedule"}],
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
COHORT = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "research"},
          "spec": {"parentName": "org", "fairSharing": {"weight": "2"}}}
LOCAL_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "team-a", "namespace": "team-a"}, "spec": {"clusterQueue": "team-a"}}
PRIORITY = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "high"},
            "value": 1000, "description": "deadline work"}
APPLICATION = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               "metadata": {"name": "onprem-kueue", "namespace": "argocd"},
               "spec": {"project": "gpupolicy", "destination": {"server": "https://onprem.example", "namespace": "kueue-system"},
                        "source": {"repoURL": "https://git.example/gpu.git", "targetRevision": "main", "path": "out/onprem/kueue"},
                        "syncPolicy": {"automated": {"prune": True}, "syncOptions": ["ServerSideApply=true"]}}}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "team-a", "labels": {"gpupolicy.dev/team": "team-a", "data-class.gpupolicy.dev/pii": "true"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm", "namespace": "serve"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "vllm"}},
                       "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": {"containers": [
                           {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def device_classes() -> list[dict[str, Any]]:
    path = CRDS / "dra-nvidia" / "deviceclasses-rendered-v1.yaml"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# --- valid objects ------------------------------------------------------------------------------


@pytest.mark.parametrize("obj", [queue(), FLAVOR, COHORT, LOCAL_QUEUE, PRIORITY, APPLICATION, NAMESPACE, DEPLOYMENT],
                         ids=lambda o: o["kind"])
def test_valid_object_passes(registry: CrdRegistry, obj: dict[str, Any]) -> None:
    result = run(registry, copy.deepcopy(obj))
    assert result.diagnostics == []
    assert result.ok


def test_rendered_device_classes_pass_at_1_34(registry: CrdRegistry) -> None:
    result = run(registry, *device_classes())
    assert result.diagnostics == []
    assert result.stats.embedded_expressions == 5


def test_stats_count_objects_and_rules(registry: CrdRegistry) -> None:
    result = run(registry, queue(), FLAVOR, LOCAL_QUEUE, NAMESPACE)
    stats = result.stats
    assert stats.objects[("kueue.x-k8s.io/v1beta2", "ClusterQueue")] == 1
    assert stats.objects[("v1", "Namespace")] == 1 and stats.total_objects == 4
    assert stats.cel_rules_evaluated >= 5  # CQ spec, preemption, flavorFungibility, group; RF taints/tolerations
    assert stats.transition_rules_skipped == 4  # 3 ResourceFlavor rules and LocalQueue's clusterQueue
    assert stats.webhook_checks == 2
    assert stats.as_dict()["total_objects"] == 4


def test_inputs_are_not_mutated_by_defaulting(registry: CrdRegistry) -> None:
    obj = queue()
    before = copy.deepcopy(obj)
    run(registry, obj)
    assert obj == before


# --- mistakes, each with its rule ID -------------------------------------------------------------


def test_unknown_field_in_custom_resource(registry: CrdRegistry) -> None:
    obj = queue()
    obj["spec"]["cohort_name"] = obj["spec"].pop("cohortName")
    result = run(registry, obj)
    d = only(result, "VERIFY001")
    assert d.path == "spec.cohort_name" and "cohort_name" in d.message and "ClusterQueue team-a" in d.message
    assert d.hint == "did you mean 'cohortName'?"
    assert d.location is not None and d.location.file == "out/onprem/kueue/clusterqueue._.team-a.yaml"


def test_unknown_field_in_builtin(registry: CrdRegistry) -> None:
    obj = copy.deepcopy(DEPLOYMENT)
    obj["spec"]["template"]["spec"]["containers"][0]["imag"] = "x"
    d = only(run(registry, obj), "VERIFY001")
    assert d.path == "spec.template.spec.containers[0].imag"
    assert d.hint == "did you mean 'image'?"


def test_wrong_type(registry: CrdRegistry) -> None:
    obj = copy.deepcopy(PRIORITY)
    obj["value"] = "high"
    assert only(run(registry, obj), "VERIFY002").path == "value"
    dep = copy.deepcopy(DEPLOYMENT)
    dep["spec"]["replicas"] = "two"
    assert only(run(registry, dep), "VERIFY002").path == "spec.replicas"


def test_enum_and_pattern_violations(registry: CrdRegistry) -> None:
    result = run(registry, queue(queueingStrategy="Fastest"))
    assert only(result, "VERIFY002").path == "spec.queueingStrategy"
    obj = queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "64 cores"
    assert only(run(registry, obj), "VERIFY002").path == "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"


def test_missing_required(registry: CrdRegistry) -> None:
    obj = copy.deepcopy(PRIORITY)
    del obj["value"]
    d = only(run(registry, obj), "VERIFY003")
    assert d.path == "value" and "required" in d.message
    dep = copy.deepcopy(DEPLOYMENT)
    del dep["spec"]["selector"]
    assert only(run(registry, dep), "VERIFY003").path == "spec.selector"


def test_cel_borrowing_limit_needs_cohort(registry: CrdRegistry) -> None:
    obj = queue()
    del obj["spec"]["cohortName"]
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("lendingLimit")
    d = only(run(registry, obj), "VERIFY004")
    assert d.path == "spec" and "borrowingLimit must be nil when cohort is empty" in d.message
    assert d.hint is not None and "!has(self.cohortName)" in d.hint


def test_cel_flavors_must_cover_all_resources(registry: CrdRegistry) -> None:
    obj = queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    d = only(run(registry, obj), "VERIFY004")
    assert d.path == "spec.resourceGroups[0]"
    assert "flavors must have the same number of resources as the coveredResources" in d.message


def test_cel_sees_defaults(registry: CrdRegistry) -> None:
    # reclaimWithinCohort defaults to Never, which forbids borrowWithinCohort.policy != Never.
    obj = queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}})
    d = only(run(registry, obj), "VERIFY004")
    assert d.path == "spec.preemption" and "reclaimWithinCohort=Never" in d.message


def test_cel_resource_flavor_tolerations(registry: CrdRegistry) -> None:
    obj = copy.deepcopy(FLAVOR)
    obj["spec"]["tolerations"] = [{"operator": "Equal", "value": "x"}]  # no key needs operator Exists
    d = only(run(registry, obj), "VERIFY004")
    assert d.path == "spec.tolerations" and "operator must be Exists" in d.message


def test_cel_rule_using_kubernetes_regex_library(registry: CrdRegistry) -> None:
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "serving"},
            "spec": {"template": {"metadata": {"labels": {"karpenter.sh/custom": "x"}},
                                  "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                                           "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                             "values": ["p5.48xlarge"]}]}}}}
    result = run(registry, pool)
    assert codes(result) == ["VERIFY004"]  # labels may not use the karpenter.sh domain (uses find())
    pool["spec"]["template"]["metadata"]["labels"] = {"gpupolicy.dev/pool": "serving"}
    assert run(registry, pool).diagnostics == []


def test_root_level_rule_sees_metadata(registry: CrdRegistry) -> None:
    cluster = {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "mine"}, "spec": {}}
    result = run(registry, cluster)
    assert "VERIFY004" in codes(result)


def test_type_errors_block_cel_as_the_api_server_does(registry: CrdRegistry) -> None:
    obj = queue()
    del obj["spec"]["cohortName"]  # would fail a CEL rule ...
    obj["spec"]["queueingStrategy"] = 5  # ... but a type error stops CEL evaluation
    result = run(registry, obj)
    assert "VERIFY002" in codes(result) and "VERIFY004" not in codes(result)
    assert result.stats.cel_skipped_invalid_objects == 1


def test_list_map_duplicate_keys(registry: CrdRegistry) -> None:
    obj = queue()
    flavors = obj["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    d = only(run(registry, obj), "VERIFY007")
    assert d.path == "spec.resourceGroups[0].flavors[1]" and '"name": "h100"' in d.message


def test_lending_limit_above_nominal_quota(registry: CrdRegistry) -> None:
    obj = queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 10
    d = only(run(registry, obj), "VERIFY021")
    assert d.path == "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit"
    assert "10" in d.message and "8" in d.message


def test_device_class_needs_1_34(registry: CrdRegistry) -> None:
    classes = device_classes()
    result = run(registry, classes[0], versions={"cloud": "1.33"}, cluster="cloud")
    d = only(result, "VERIFY008")
    assert d.severity is Severity.ERROR and "1.33" in d.message and "from Kubernetes 1.34" in d.message


def test_unknown_kind_is_a_warning_then_an_error_under_strict(registry: CrdRegistry) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert only(run(registry, widget), "VERIFY009").severity is Severity.WARNING
    assert only(run(registry, widget, strict=True), "VERIFY009").severity is Severity.ERROR
    assert only(run(None, widget), "VERIFY009").severity is Severity.WARNING  # no CRD directory at all


def test_version_not_served(registry: CrdRegistry) -> None:
    obj = queue()
    obj["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    d = only(run(registry, obj), "VERIFY010")
    assert "v1beta2" in d.message


def test_v1beta1_cluster_queue_still_verifies(registry: CrdRegistry) -> None:
    obj = queue()
    obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    obj["spec"]["cohort"] = obj["spec"].pop("cohortName")
    assert run(registry, obj).diagnostics == []


@pytest.mark.parametrize(
    ("obj", "path"),
    [({**queue(), "metadata": {"name": "Team_A"}}, "metadata.name"),
     ({**queue(), "metadata": {"name": "team-a", "namespace": "team-a"}}, "metadata.namespace"),
     ({**NAMESPACE, "metadata": {"name": "team.a"}}, "metadata.name"),
     ({**NAMESPACE, "metadata": {"name": "team-a", "labels": {"gpupolicy.dev/team": "not valid!"}}},
      "metadata.labels[gpupolicy.dev/team]"),
     ({**LOCAL_QUEUE, "metadata": {"name": "team-a", "namespace": "Team A"}}, "metadata.namespace"),
     ({**PRIORITY, "metadata": {}}, "metadata.name")],
)
def test_bad_metadata(registry: CrdRegistry, obj: dict[str, Any], path: str) -> None:
    assert only(run(registry, obj), "VERIFY011").path == path


def test_unknown_metadata_field_on_custom_resource(registry: CrdRegistry) -> None:
    obj = {**PRIORITY, "metadata": {"name": "high", "label": {"a": "b"}}}
    assert only(run(registry, obj), "VERIFY001").path == "metadata.label"


def test_cluster_without_kubernetes_version(registry: CrdRegistry) -> None:
    result = run(registry, NAMESPACE, DEPLOYMENT, versions={"cloud": "1.33"})
    d = only(result, "VERIFY012")
    assert "onprem" in d.message and d.severity is Severity.ERROR


def test_nearest_bundled_version_is_said(registry: CrdRegistry) -> None:
    result = run(registry, NAMESPACE, DEPLOYMENT, versions={"onprem": "1.99"})
    d = only(result, "VERIFY013")
    assert d.severity is Severity.INFO and "1.99" in d.message
    assert result.ok


def test_argocd_objects_use_the_highest_version(registry: CrdRegistry) -> None:
    classes = device_classes()
    result = run(registry, classes[0], APPLICATION, versions={"onprem": "1.34", "cloud": "1.33"}, cluster="argocd")
    assert result.diagnostics == []


def test_not_an_object(registry: CrdRegistry) -> None:
    result = run(registry, {"kind": "Namespace", "metadata": {"name": "x"}})
    assert codes(result) == ["VERIFY015"]


def test_embedded_cel_must_compile(registry: CrdRegistry) -> None:
    dc = copy.deepcopy(device_classes()[0])
    dc["spec"]["selectors"][0]["cel"]["expression"] = "device.driver = 'gpu.nvidia.com'"
    d = only(run(registry, dc), "VERIFY016")
    assert d.path == "spec.selectors[0].cel.expression"
    vap = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "gpu-labels"},
           "spec": {"failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                            "operations": ["CREATE"], "resources": ["pods"]}]},
                    "variables": [{"name": "team", "expression": "object.metadata.?labels['gpupolicy.dev/team'].orValue('')"}],
                    "validations": [{"expression": "variables.team != ''", "messageExpression": "'missing ' + 'team'"},
                                    {"expression": "authorizer.group('').resource('pods').check('create').allowed()"}]}}
    assert run(registry, vap).diagnostics == []
    vap["spec"]["validations"][0]["expression"] = "variables.team !="
    assert only(run(registry, vap), "VERIFY016").path == "spec.validations[0].expression"


def test_backends_agree(registry: CrdRegistry) -> None:
    obj = queue(queueingStrategy="Fastest", extra=1)
    del obj["spec"]["resourceGroups"][0]["coveredResources"]
    fast = [(d.code, d.path) for d in run(registry, obj).diagnostics]
    slow = [(d.code, d.path) for d in run(registry, obj, python_backend=True).diagnostics]
    assert sorted(fast) == sorted(slow)
    assert {"VERIFY001", "VERIFY002", "VERIFY003"} <= {c for c, _ in fast}


def test_many_queues_are_fast(registry: CrdRegistry) -> None:
    manifests = []
    for i in range(2000):
        obj = queue()
        obj["metadata"]["name"] = f"team-{i}"
        manifests.append(Manifest("onprem", "kueue", obj))
    verify(manifests[:1], kube_versions={"onprem": "1.34"}, crds=registry)
    start = time.perf_counter()
    result = verify(manifests, kube_versions={"onprem": "1.34"}, crds=registry)
    assert result.diagnostics == [] and result.stats.total_objects == 2000
    assert time.perf_counter() - start < 5.0  # ~0.15 s here; generous for slow CI machines


def test_identical_bad_objects_are_each_reported(registry: CrdRegistry) -> None:
    bad = queue()
    del bad["spec"]["cohortName"]
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("lendingLimit")
    good = queue()
    result = run(registry, good, copy.deepcopy(bad), good, copy.deepcopy(bad))
    assert codes(result) == ["VERIFY004", "VERIFY004"]


def test_every_upstream_crd_version_compiles(registry: CrdRegistry) -> None:
    from compiler.verify.structural import compile_crd_schema

    for group, kind in registry.kinds():
        entry = registry.get(group, kind)
        assert entry is not None
        for version in entry.served_versions():
            schema = entry.schema(version)
            assert schema is not None, (kind, version)
            compiled = compile_crd_schema(schema)
            assert compiled.validator.errors({}) is not None


def test_go_only_regex_patterns_are_checked_with_re2(registry: CrdRegistry) -> None:
    # AdmissionCheck's parameters.kind pattern is '^(?i)[a-z]...': valid Go, not ECMA-262.
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "multikueue"},
             "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"}}}
    assert run(registry, check).diagnostics == []
    check["spec"]["parameters"]["kind"] = "Multi_Kueue"
    d = only(run(registry, check), "VERIFY002")
    assert d.path == "spec.parameters.kind" and "(?i)" in d.message
