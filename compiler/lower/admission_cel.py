"""CEL fragments of gpupolicy's ValidatingAdmissionPolicies, built from tables.

Each builder returns expression text over a root (``object`` or ``oldObject``). Expressions
run on untyped objects (the API server evaluates VAP expressions as ``dyn``), so every optional
field is guarded with ``has()``: a runtime error would count as a failure (failurePolicy Fail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Workload:
    """A kind admission looks into: where its PodSpecs live, and how Kueue names it."""

    group: str
    version: str
    resource: str
    kind: str
    # CEL over ``{r}``: the pod templates it carries, each with ``metadata`` and ``spec`` (a Pod
    # is its own template; TrainJob's podTemplateOverrides have the same two fields).
    templates: str
    template_labels: bool = True  # pods inherit the template's labels (TrainJob: no template)


def _template(path: str) -> str:
    return f"[{{r}}.{path}]"


def _replica_specs(key: str) -> str:
    # Kubeflow v1 jobs: spec.<key> maps a replica type (Master, Worker, ...) to a ReplicaSpec.
    m = f"{{r}}.spec.{key}"
    return f"(has({m}) ? {m}.filter(t, has({m}[t].template)).map(t, {m}[t].template) : [])"


# Kueue integration name (Configuration.integrations.frameworks) -> the workload kind.
QUEUED_WORKLOADS: dict[str, Workload] = {
    "batch/job": Workload("batch", "v1", "jobs", "Job", _template("spec.template")),
    "jobset.x-k8s.io/jobset": Workload(
        "jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet",
        "(has({r}.spec.replicatedJobs) ? {r}.spec.replicatedJobs.map(j, j.template.spec.template) : [])"),
    "kubeflow.org/pytorchjob": Workload("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob",
                                        _replica_specs("pytorchReplicaSpecs")),
    "kubeflow.org/tfjob": Workload("kubeflow.org", "v1", "tfjobs", "TFJob", _replica_specs("tfReplicaSpecs")),
    "kubeflow.org/xgboostjob": Workload("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob",
                                        _replica_specs("xgbReplicaSpecs")),
    "kubeflow.org/paddlejob": Workload("kubeflow.org", "v1", "paddlejobs", "PaddleJob",
                                       _replica_specs("paddleReplicaSpecs")),
    "kubeflow.org/jaxjob": Workload("kubeflow.org", "v1", "jaxjobs", "JAXJob", _replica_specs("jaxReplicaSpecs")),
    "kubeflow.org/mpijob": Workload("kubeflow.org", "v2beta1", "mpijobs", "MPIJob",
                                    _replica_specs("mpiReplicaSpecs")),
    # TrainJob's GPUs usually come from its (cluster) training runtime, which admission cannot
    # read; podTemplateOverrides carry only scheduling fields. Every TrainJob counts as GPU work.
    "trainer.kubeflow.org/trainjob": Workload(
        "trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob",
        "(has({r}.spec.podTemplateOverrides) ? {r}.spec.podTemplateOverrides : [])", template_labels=False),
}
ALWAYS_GPU_KINDS = ("TrainJob",)

POD = Workload("", "v1", "pods", "Pod", "[{r}]")
# Kinds the backstop also checks in unmanaged namespaces (pods are the real backstop; these
# give the error at `kubectl apply` time instead of in a ReplicaSet's events).
BACKSTOP_WORKLOADS: tuple[Workload, ...] = (
    POD,
    Workload("apps", "v1", "deployments", "Deployment", _template("spec.template")),
    Workload("apps", "v1", "statefulsets", "StatefulSet", _template("spec.template")),
    Workload("apps", "v1", "daemonsets", "DaemonSet", _template("spec.template")),
    Workload("apps", "v1", "replicasets", "ReplicaSet", _template("spec.template")),
    Workload("batch", "v1", "jobs", "Job", _template("spec.template")),
    Workload("batch", "v1", "cronjobs", "CronJob", _template("spec.jobTemplate.spec.template")),
)


def pod_templates(root: str, workloads: Iterable[Workload]) -> str:
    """The pod templates of ``root`` whichever kind it is: one ternary branch per kind."""
    branches = [f"{root}.kind == '{w.kind}' ? {w.templates.format(r=root)}" for w in workloads]
    return " : ".join(branches + ["[]"])


def pod_specs(templates: str) -> str:
    return f"{templates}.filter(p, has(p.spec)).map(p, p.spec)"


# Device-plugin GPU resources (full cards, renamed shares `nvidia.com/gpu.shared`, MIG slices
# under the mixed strategy) and DRA device classes requested as extended resources (KEP-5004).
# Extended resources must be set in limits (requests, if any, equal them), so limits suffice.
GPU_RESOURCE = ("r == 'nvidia.com/gpu' || r.startsWith('nvidia.com/gpu.') || r.startsWith('nvidia.com/mig-') || "
                "r.startsWith('deviceclass.resource.kubernetes.io/')")


def spec_requests_gpu(s: str, *, claims: bool) -> str:
    """A PodSpec ``s`` asks for a GPU: a container or init container has a GPU resource limit,
    or (``claims``) the pod references DRA ResourceClaims, whose device class admission
    cannot see from the pod."""
    expr = (f"((has({s}.containers) ? {s}.containers : []) + (has({s}.initContainers) ? {s}.initContainers : []))"
            f".exists(c, has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(r, {GPU_RESOURCE}))")
    if claims:
        expr += f" || (has({s}.resourceClaims) && size({s}.resourceClaims) > 0)"
    return expr


def requests_gpu(root: str, specs_var: str, *, claims: bool, always: Iterable[str] = ()) -> str:
    kinds = [f"{root}.kind == '{k}'" for k in always]
    return " || ".join(kinds + [f"{specs_var}.exists(s, {spec_requests_gpu('s', claims=claims)})"])


def tolerates_taint(key: str, effect: str = "NoSchedule") -> str:
    """A toleration ``t`` that lets a pod onto nodes tainted ``key``: any toleration of that key
    (whatever its value or effect: the intent is plain), or an empty key with ``operator:
    Exists``, which tolerates every taint of its effect (all effects when effect is empty)."""
    return (f"(has(t.key) && t.key == '{key}') || ((!has(t.key) || t.key == '') && has(t.operator) && "
            f"t.operator == 'Exists' && (!has(t.effect) || t.effect == '' || t.effect == '{effect}'))")


def selects_label(s: str, key: str, values: Iterable[str] | None = None) -> str:
    """PodSpec ``s`` selects nodes by ``key`` (any value, or one of ``values``) through
    nodeSelector or required node affinity (operators In and Exists)."""
    vals = sorted(values) if values is not None else None
    if vals is None:
        in_selector = f"'{key}' in {s}.nodeSelector"
        matches = "(e.operator == 'In' || e.operator == 'Exists')"
    else:
        lst = "[" + ", ".join(f"'{v}'" for v in vals) + "]"
        in_selector = f"'{key}' in {s}.nodeSelector && {s}.nodeSelector['{key}'] in {lst}"
        matches = f"e.operator == 'In' && has(e.values) && e.values.exists(v, v in {lst})"
    req = f"{s}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    return (f"(has({s}.nodeSelector) && {in_selector}) || (has({s}.affinity) && has({s}.affinity.nodeAffinity) && "
            f"has({req}) && has({req}.nodeSelectorTerms) && {req}.nodeSelectorTerms.exists(term, "
            f"has(term.matchExpressions) && term.matchExpressions.exists(e, e.key == '{key}' && {matches})))")


def controlled_by(root: str, workloads: Iterable[Workload]) -> str:
    """``root`` has a controller ownerReference to one of ``workloads`` (checked there), and a
    controller made the request: anyone who may create a Job may also write an ownerReference to a
    JobSet of the same namespace, and Kueue takes it for that JobSet's child (it looks the owner up
    by name: ``FindAncestorJobManagedByKueue``, pkg/controller/jobframework, kubernetes-sigs/kueue
    v0.19.2), so a Job with GPUs "owned" by an admitted CPU-only JobSet ran outside every queue. The
    controllers that create children (kube-controller-manager's job controller, the JobSet,
    Kubeflow and Trainer controllers) act as system identities of their own namespaces; a person,
    or a service account of the namespace itself, is checked as if the object had no owner. A
    service account of another namespace is trusted as a controller: only the platform can grant
    one the right to create objects here (the teams' Roles bind no subjects)."""
    kinds = " || ".join(f"(o.kind == '{w.kind}' && o.apiVersion.startsWith('{w.group}/'))" for w in workloads)
    return (f"has({root}.metadata.ownerReferences) && {root}.metadata.ownerReferences.exists(o, "
            f"has(o.controller) && o.controller && ({kinds})) && {BY_A_CONTROLLER}")


# The request comes from a controller: a system identity, not anonymous, and not a service account
# of the object's own namespace (which a team's own workloads may use).
BY_A_CONTROLLER = ("(request.userInfo.username.startsWith('system:') && request.userInfo.username != "
                   "'system:anonymous' && !request.userInfo.username.startsWith('system:serviceaccount:' + "
                   "request.namespace + ':'))")


def cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def cel_map(entries: dict[str, list[str]]) -> str:
    return "{" + ", ".join(f"'{k}': {cel_list(v)}" for k, v in sorted(entries.items())) + "}"


def device_requests_class(devices: str, classes: Iterable[str]) -> str:
    """A DRA ``devices`` block (ResourceClaim v1 ``spec.devices``) requests one of ``classes``."""
    lst = cel_list(sorted(classes))
    return (f"has({devices}.requests) && {devices}.requests.exists(q, "
            f"(has(q.exactly) && q.exactly.deviceClassName in {lst}) || "
            f"(has(q.firstAvailable) && q.firstAvailable.exists(a, a.deviceClassName in {lst})))")
