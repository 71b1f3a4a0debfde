"""The generated ValidatingAdmissionPolicies, evaluated with the project's CEL engine against
admission requests built from realistic objects (compiler.verify.vap replays the API server)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import copy_demo, policy_at

from compiler.cel import compile_expr
from compiler.lower.admission import lower_admission
from compiler.lower.admission_vap import ACTIONS
from compiler.lower.namespaces import lower_team_namespaces
from compiler.policy.graph import Policy
from compiler.verify.vap import Decision, admit, evaluate

DATA = {"gpupolicy.dev/team": "nlp", "gpupolicy.dev/model": "llama-3.1-70b", "gpupolicy.dev/data-class": "pii"}
QUEUED = {**DATA, "kueue.x-k8s.io/queue-name": "nlp"}


def load(root: Path) -> Policy:
    policy, diags = policy_at(root)
    assert policy is not None, [d.message for d in diags]
    return policy


@pytest.fixture(scope="module")
def demo() -> Policy:
    return load(REPO)


@pytest.fixture(scope="module")
def vaps(demo: Policy) -> dict[str, list[dict[str, Any]]]:
    return {c: [m.obj for m in lower_admission(demo, c)] for c in ("onprem", "cloud")}


@pytest.fixture(scope="module")
def namespaces(demo: Policy) -> dict[str, dict[str, Any]]:
    out = {m.obj["metadata"]["name"]: m.obj for t in demo.teams for c in demo.clusters
           for m in lower_team_namespaces(demo, t, c)}
    for plain in ("kube-system", "gpu-operator", "scratch"):
        out[plain] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plain}}
    return out


def container(gpu: str | None = "nvidia.com/gpu", n: int = 1) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "main", "image": "pytorch/pytorch:2.4.0",
                         "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"memory": "64Gi"}}}
    if gpu:
        c["resources"]["limits"][gpu] = n
    return c


def pod_spec(gpu: str | None = "nvidia.com/gpu", **extra: Any) -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [container(gpu)], **extra}


def job(labels: dict[str, str] | None = None, ns: str = "nlp-train", template_labels: dict[str, str] | None = None,
        gpu: str | None = "nvidia.com/gpu", **spec_extra: Any) -> dict[str, Any]:
    labels = dict(QUEUED if labels is None else labels)
    tl = {k: v for k, v in labels.items() if k != "kueue.x-k8s.io/queue-name"} if template_labels is None \
        else template_labels
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "finetune", "namespace": ns, "labels": labels},
            "spec": {"suspend": True, "parallelism": 2, "completions": 2,
                     "template": {"metadata": {"labels": tl}, "spec": pod_spec(gpu, **spec_extra)}}}


def pod(ns: str = "nlp-train", labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None,
        gpu: str | None = "nvidia.com/gpu", **spec_extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": ns, "labels": dict(QUEUED if labels is None else labels)}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(gpu, **spec_extra)}


def run(vaps: dict[str, list[dict[str, Any]]], namespaces: dict[str, dict[str, Any]], obj: dict[str, Any],
        cluster: str = "onprem", **kw: Any) -> Decision:
    ns = obj["metadata"].get("namespace")
    return admit(vaps[cluster], obj, namespace=namespaces.get(ns) if ns else None, **kw)


def denied_with(d: Decision, *fragments: str) -> None:
    assert not d.allowed, "request was admitted"
    text = " | ".join(d.denials)
    for f in fragments:
        assert f in text, f"{f!r} not in denial: {text}"


# ---------- labels, data class, queue ----------

def test_compliant_job_is_admitted_and_audited(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job())
    assert d.allowed, d.denials
    assert not d.warnings
    assert d.audit["gpupolicy-required-labels/gpu-workload"] == (
        "gpupolicy.dev/team=nlp gpupolicy.dev/model=llama-3.1-70b gpupolicy.dev/data-class=pii "
        "kueue.x-k8s.io/queue-name=nlp")


@pytest.mark.parametrize("label", sorted(DATA))
def test_job_missing_a_required_label_is_denied(vaps, namespaces, label: str) -> None:
    labels = {k: v for k, v in QUEUED.items() if k != label}
    d = run(vaps, namespaces, job(labels))
    denied_with(d, f"GPU Job in namespace nlp-train lacks label(s) {label}", "add to metadata.labels")
    hint = d.denials[0].split("add to metadata.labels: ")[1]
    assert "gpupolicy.dev/team: nlp" in hint and "gpupolicy.dev/model: <model id>" in hint
    # the namespace's data classes (map order, so either way round)
    assert re.search(r"gpupolicy.dev/data-class: <(internal\|pii|pii\|internal)>", hint), hint


def test_empty_label_value_counts_as_missing(vaps, namespaces) -> None:
    denied_with(run(vaps, namespaces, job({**QUEUED, "gpupolicy.dev/model": ""})), "lacks label(s) gpupolicy.dev/model")


def test_data_class_the_namespace_may_not_hold_is_denied(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job({**QUEUED, "gpupolicy.dev/data-class": "public"}))
    denied_with(d, "handles data class public, which this namespace may not hold (allowed: ")
    assert re.search(r"\(allowed: (internal, pii|pii, internal)\)", d.denials[0])


def test_undeclared_data_class_is_denied(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job({**QUEUED, "gpupolicy.dev/data-class": "secret"}))
    denied_with(d, "gpupolicy.dev/data-class=secret is not allowed (allowed: public, internal, pii)")


def test_team_label_must_match_the_namespace(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job({**QUEUED, "gpupolicy.dev/team": "vision"}))
    denied_with(d, "says gpupolicy.dev/team=vision but the namespace belongs to team nlp")


def test_pod_template_must_repeat_the_labels(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job(template_labels={"app": "x"}))
    denied_with(d, "pod template(s) lack or differ on gpupolicy.dev/team, gpupolicy.dev/model, gpupolicy.dev/data-class")


def test_job_without_queue_is_denied(vaps, namespaces) -> None:
    denied_with(run(vaps, namespaces, job(DATA)), "names no queue; add label kueue.x-k8s.io/queue-name: nlp")


def test_job_naming_another_queue_is_denied(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job({**DATA, "kueue.x-k8s.io/queue-name": "default"}))
    denied_with(d, "names queue default, which is not this namespace's LocalQueue; use kueue.x-k8s.io/queue-name: nlp")


def test_cpu_only_job_is_not_affected(vaps, namespaces) -> None:
    d = run(vaps, namespaces, job({}, template_labels={}, gpu=None))
    assert d.allowed and not d.warnings and not d.audit


@pytest.mark.parametrize("gpu", ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.40gb",
                                 "deviceclass.resource.kubernetes.io/gpu.nvidia.com"])
def test_every_gpu_resource_counts(vaps, namespaces, gpu: str) -> None:
    denied_with(run(vaps, namespaces, job(DATA, gpu=gpu)), "names no queue")


def test_gpu_in_an_init_container_counts(vaps, namespaces) -> None:
    j = job(DATA, gpu=None)
    j["spec"]["template"]["spec"]["initContainers"] = [container("nvidia.com/gpu")]
    denied_with(run(vaps, namespaces, j), "names no queue")


def test_dra_claim_makes_a_gpu_workload(vaps, namespaces) -> None:
    j = job({}, template_labels={}, gpu=None,
            resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "h100-80gb-1"}])
    denied_with(run(vaps, namespaces, j), "lacks label(s)", "names no queue")


def test_bare_gpu_pod_is_denied(vaps, namespaces) -> None:
    d = run(vaps, namespaces, pod())
    denied_with(d, "GPU Pod in namespace nlp-train bypasses Kueue quota: submit it as one of Job, JobSet, "
                   "PyTorchJob, TrainJob with label kueue.x-k8s.io/queue-name: nlp")


JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller-manager"


def test_pods_of_a_job_are_checked_at_the_job(vaps, namespaces) -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "finetune", "uid": "1", "controller": True}
    assert run(vaps, namespaces, pod(labels={}, owner=owner), user=JOB_CONTROLLER).allowed
    # ...but only a controller reference to a queued kind exempts a Pod.
    fake = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "2", "controller": True}
    denied_with(run(vaps, namespaces, pod(labels={}, owner=fake), user=JOB_CONTROLLER), "bypasses Kueue quota")


@pytest.mark.parametrize("user", ["alice", "system:serviceaccount:nlp-train:default", "system:anonymous"])
def test_an_owner_reference_a_person_writes_exempts_nothing(vaps, namespaces, user: str) -> None:
    """Anyone who may create a Pod or Job may write a controller ownerReference to a Job or JobSet of
    the namespace, and Kueue takes the object for that owner's child (by name); a GPU Job 'owned'
    by an admitted CPU-only JobSet ran outside every queue (a reviewer's bypass). Only a controller
    (a system identity of another namespace) makes a child: from anyone else, or a service
    account of the namespace itself, it is checked as if it had no owner."""
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "finetune", "uid": "1", "controller": True}
    denied_with(run(vaps, namespaces, pod(labels={}, owner=owner), user=user), "bypasses Kueue quota")
    child = job({}, template_labels={})
    child["metadata"]["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                             "name": "decoy", "uid": "3", "controller": True}]
    assert not run(vaps, namespaces, child, user=user).allowed
    assert run(vaps, namespaces, child, user=JOBSET_CONTROLLER).allowed


def test_jobset_pytorchjob_and_trainjob(vaps, namespaces) -> None:
    tmpl = {"metadata": {"labels": DATA}, "spec": pod_spec()}
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "js", "namespace": "nlp-train", "labels": QUEUED},
          "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {"template": tmpl}}}]}}
    assert run(vaps, namespaces, js).allowed
    js["metadata"]["labels"] = DATA
    denied_with(run(vaps, namespaces, js), "GPU JobSet in namespace nlp-train names no queue")
    child = job({}, template_labels={})
    child["metadata"]["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                             "name": "js", "uid": "3", "controller": True}]
    assert run(vaps, namespaces, child, user=JOBSET_CONTROLLER).allowed
    ptj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "ptj", "namespace": "nlp-train", "labels": {"kueue.x-k8s.io/queue-name": "nlp"}},
           "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": tmpl},
                                            "Worker": {"replicas": 3, "template": tmpl}}}}
    denied_with(run(vaps, namespaces, ptj), "GPU PyTorchJob in namespace nlp-train lacks label(s)")
    tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
          "metadata": {"name": "tj", "namespace": "nlp-train", "labels": {}},
          "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    denied_with(run(vaps, namespaces, tj), "GPU TrainJob in namespace nlp-train lacks label(s)", "names no queue")
    tj["metadata"]["labels"] = QUEUED
    assert run(vaps, namespaces, tj).allowed


# ---------- serving isolation ----------

SERVING_TOL = {"key": "gpupolicy.dev/serving", "operator": "Equal", "value": "h200-serve", "effect": "NoSchedule"}


@pytest.mark.parametrize("tolerations", [
    [SERVING_TOL],
    [{"key": "gpupolicy.dev/serving", "operator": "Exists"}],
    [{"operator": "Exists"}],
    [{"key": "", "operator": "Exists", "effect": "NoSchedule"}],
])
def test_tolerating_the_serving_taint_is_denied(vaps, namespaces, tolerations) -> None:
    d = run(vaps, namespaces, job(tolerations=tolerations))
    denied_with(d, "Job in training namespace nlp-train tolerates the serving taint")


def test_ordinary_tolerations_pass(vaps, namespaces) -> None:
    tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
           {"operator": "Exists", "effect": "NoExecute"}]
    assert run(vaps, namespaces, job(tolerations=tol)).allowed


@pytest.mark.parametrize("spec", [
    {"nodeSelector": {"node-restriction.kubernetes.io/gpupolicy-serving": "h200-serve"}},
    {"nodeSelector": {"gpupolicy.dev/pool": "h200-serve"}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-restriction.kubernetes.io/gpupolicy-serving", "operator": "Exists"}]}]}}}},
])
def test_selecting_serving_nodes_is_denied(vaps, namespaces, spec) -> None:
    denied_with(run(vaps, namespaces, job(**spec)), "selects serving nodes")


def test_selecting_training_nodes_passes(vaps, namespaces) -> None:
    avoid = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-restriction.kubernetes.io/gpupolicy-serving", "operator": "DoesNotExist"}]}]}}}
    assert run(vaps, namespaces, job(nodeSelector={"gpupolicy.dev/pool": "h100-train"}, affinity=avoid)).allowed


def test_serving_isolation_covers_cpu_pods_and_node_name(vaps, namespaces) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "4", "controller": True}
    d = run(vaps, namespaces, pod(labels={}, owner=owner, gpu=None, tolerations=[{"operator": "Exists"}]))
    denied_with(d, "Pod in training namespace nlp-train tolerates the serving taint")
    denied_with(run(vaps, namespaces, pod(labels={}, owner=owner, gpu=None, nodeName="h200-0")), "sets spec.nodeName")


def test_serving_namespace_is_gpupolicys_own(vaps, namespaces) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat", "namespace": "nlp-serving"},
           "spec": {"template": {"spec": pod_spec(tolerations=[SERVING_TOL])}}}
    d = run(vaps, namespaces, dep)
    assert d.allowed and not d.warnings and not d.outcomes


# ---------- updates: controllers are never blocked ----------

def test_kueue_resuming_a_grandfathered_job_passes(vaps, namespaces) -> None:
    old = job({"kueue.x-k8s.io/queue-name": "nlp"}, template_labels={})  # predates the policy
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    new["spec"]["template"]["spec"]["nodeSelector"] = {"gpupolicy.dev/pool": "h100-train"}
    assert run(vaps, namespaces, new, old=old, operation="UPDATE", user="system:serviceaccount:kueue-system:kueue").allowed
    relabel = copy.deepcopy(old)
    relabel["metadata"]["labels"]["team"] = "x"
    denied_with(run(vaps, namespaces, relabel, old=old, operation="UPDATE"), "lacks label(s)")


def test_update_adding_a_serving_toleration_is_denied(vaps, namespaces) -> None:
    old = job()
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["tolerations"] = [SERVING_TOL]
    denied_with(run(vaps, namespaces, new, old=old, operation="UPDATE"), "tolerates the serving taint")


def test_finalizer_removal_on_a_deleting_pod_passes(vaps, namespaces) -> None:
    old = pod(ns="scratch", labels={})
    old["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert run(vaps, namespaces, new, old=old, operation="UPDATE").allowed


# ---------- backstop ----------

def test_backstop_in_the_demo_denies(vaps, namespaces) -> None:
    d = run(vaps, namespaces, pod(ns="scratch", labels={}))
    # issue 15 #6: in Warn an unmanaged namespace takes GPUs Kueue counts as free (OPS006)
    denied_with(d, "gpupolicy does not manage this namespace")


@pytest.fixture(scope="module")
def strict_vaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    root = copy_demo(tmp_path_factory.mktemp("strict"))  # the demo's backstop denies (issue 15 #6)
    policy = load(root)
    return {c: [m.obj for m in lower_admission(policy, c)] for c in ("onprem", "cloud")}


@pytest.mark.parametrize("cluster", ["onprem", "cloud"])
def test_backstop_denies_gpu_pods_in_unmanaged_namespaces(strict_vaps, namespaces, cluster: str) -> None:
    d = run(strict_vaps, namespaces, pod(ns="scratch", labels={}), cluster=cluster)
    denied_with(d, "Pod in namespace scratch requests GPUs, but gpupolicy does not manage this namespace",
                "admission.exemptNamespaces")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nb", "namespace": "scratch"},
           "spec": {"template": {"spec": pod_spec("nvidia.com/gpu.shared")}}}
    denied_with(run(strict_vaps, namespaces, dep, cluster=cluster), "Deployment in namespace scratch requests GPUs")
    assert run(strict_vaps, namespaces, pod(ns="scratch", labels={}, gpu=None), cluster=cluster).allowed


@pytest.mark.parametrize("ns", ["kube-system", "gpu-operator"])
def test_backstop_spares_system_namespaces(strict_vaps, namespaces, ns: str) -> None:
    d = run(strict_vaps, namespaces, pod(ns=ns, labels={}))
    assert d.allowed and not d.outcomes


def test_backstop_checks_dra_claims_by_device_class(strict_vaps, namespaces) -> None:
    def rct(cls: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "scratch"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}}}
    denied_with(run(strict_vaps, namespaces, rct("gpu.nvidia.com")), "ResourceClaimTemplate in namespace scratch")
    denied_with(run(strict_vaps, namespaces, rct("h100-80gb")), "requests GPUs")
    assert run(strict_vaps, namespaces, rct("compute-domain-daemon.nvidia.com")).allowed
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "scratch"},
             "spec": {"devices": {"requests": [{"name": "g", "firstAvailable": [
                 {"name": "a", "deviceClassName": "mig.nvidia.com"}]}]}}}
    denied_with(run(strict_vaps, namespaces, claim), "ResourceClaim in namespace scratch")
    assert not any(r["apiGroups"] == ["resource.k8s.io"] for v in strict_vaps["cloud"]
                   if v["kind"] == "ValidatingAdmissionPolicy" for r in v["spec"]["matchConstraints"]["resourceRules"])


# ---------- namespace labels ----------

def test_namespace_labels_are_guarded(vaps, namespaces) -> None:
    old = namespaces["nlp-train"]
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["data-class.gpupolicy.dev/public"] = "true"
    d = run(vaps, namespaces, new, old=old, operation="UPDATE", user="alice")  # the demo's mode: Deny
    assert not d.allowed and any("data-class.gpupolicy.dev/public of namespace nlp-train" in m for m in d.denials)
    argo = "system:serviceaccount:argocd:argocd-application-controller"
    by_argo = run(vaps, namespaces, new, old=old, operation="UPDATE", user=argo)
    assert by_argo.allowed and not by_argo.warnings
    other = copy.deepcopy(old)
    other["metadata"]["labels"]["owner"] = "alice"
    assert not run(vaps, namespaces, other, old=old, operation="UPDATE", user="alice").warnings


# ---------- structure and the evaluator itself ----------

def test_modes_map_to_validation_actions(vaps) -> None:
    actions = {o["metadata"]["name"]: o["spec"]["validationActions"] for o in vaps["onprem"]
               if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert actions == {"gpupolicy-required-labels": ["Deny", "Audit"], "gpupolicy-queue-name": ["Deny", "Audit"],
                       "gpupolicy-serving-isolation": ["Deny", "Audit"], "gpupolicy-gpu-backstop": ["Deny", "Audit"],
                       "gpupolicy-namespace-labels": ["Deny", "Audit"]}  # the demo sets it Deny (OPS006)
    assert all("Deny" not in a or "Warn" not in a for a in ACTIONS.values())


def test_expressions_compile_and_variables_are_ordered(vaps) -> None:
    for objs in vaps.values():
        for vap in (o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"):
            spec = vap["spec"]
            names = [v["name"] for v in spec["variables"]]
            for i, v in enumerate(spec["variables"]):
                compile_expr(v["expression"])
                assert set(re.findall(r"variables\.(\w+)", v["expression"])) <= set(names[:i]), v["name"]
            for c in spec["matchConditions"]:
                compile_expr(c["expression"])
                assert "variables." not in c["expression"]  # not available to matchConditions
            for check in spec["validations"]:
                compile_expr(check["expression"])
                compile_expr(check["messageExpression"])
                assert "\n" not in check["message"] and check["reason"] in ("Invalid", "Forbidden")
                assert set(re.findall(r"variables\.(\w+)", check["expression"])) <= set(names)


def test_evaluator_binds_variables_lazily_and_applies_failure_policy() -> None:
    vap = {"metadata": {"name": "p"}, "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                                                "operations": ["CREATE"]}]},
        "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}],
        "variables": [{"name": "broken", "expression": "object.spec.nothing.here"},
                      {"name": "ok", "expression": "size(object.metadata.labels) > 0"}],
        "validations": [{"expression": "variables.ok || variables.broken", "message": "m1"},
                        {"expression": "!variables.ok", "messageExpression": "'bad ' + object.metadata.name"},
                        {"expression": "variables.broken", "messageExpression": "1 + 1", "message": "m3"}]}}
    binding = {"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}}
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {}}
    out = evaluate(vap, binding, p)
    assert out is not None
    messages = [v.message for v in out.violations]
    assert messages[0] == "bad x"  # short-circuit: the broken variable was never needed for check 1
    assert out.violations[1].error and "variable 'broken'" in messages[1]
    assert evaluate(vap, binding, {**p, "metadata": {"name": "x"}}) is None  # matchCondition false
    assert evaluate(vap, binding, p, operation="UPDATE", old=p) is None  # operation not matched
    vap["spec"]["failurePolicy"] = "Ignore"
    out = evaluate(vap, binding, p)
    assert out is not None and [v.message for v in out.violations] == ["bad x"]
