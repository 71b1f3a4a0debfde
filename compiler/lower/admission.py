"""Admission: ValidatingAdmissionPolicies that make "no label, no schedule" true, per cluster.

What is enforced (admissionregistration.k8s.io/v1, in-process CEL, no webhook):

- ``gpupolicy-required-labels`` (fleet ``admission.modes.requiredLabels``): a GPU workload in a
  training namespace carries every ``admission.requiredLabels`` label, non-empty and within
  ``allowedValues`` (``gpupolicy.dev/data-class`` defaults to the declared data classes); its
  team label is the namespace's team; its data class is one the namespace may hold
  (``data-class.gpupolicy.dev/<class>: "true"`` on the Namespace); and its pod templates repeat
  those labels, because DCGM metrics and audits see pods, not the Job. An audit annotation
  records team, model, data class and queue of every GPU workload admitted.
- ``gpupolicy-queue-name`` (``queueName``): a GPU workload names a queue with
  ``kueue.x-k8s.io/queue-name``, and it is the team's LocalQueue (named after the team); a
  GPU Pod that no queued workload controls is refused, since Kueue's pod integration is off
  and it would bypass quota.
- ``gpupolicy-serving-isolation`` (``servingIsolation``): nothing in a training namespace, GPU
  or not, tolerates the serving taint ``gpupolicy.dev/serving`` (nor an empty-key ``operator:
  Exists`` toleration, which tolerates every taint), selects serving nodes
  (``node-restriction.kubernetes.io/gpupolicy-serving`` or a serving pool's
  ``gpupolicy.dev/pool``), or pins ``spec.nodeName`` (which skips the scheduler and taints).
- ``gpupolicy-gpu-backstop`` (``backstop``): in namespaces gpupolicy does not manage (no
  ``gpupolicy.dev/team`` label), Pods and pod-template workloads cannot request GPUs, nor (DRA
  clusters) create ResourceClaims or templates for an NVIDIA or gpupolicy DeviceClass; the
  cluster's ``systemNamespaces``, kube-system and ``admission.exemptNamespaces`` are exempt.
  Serving namespaces carry the team label: they are gpupolicy's own and allowed.
- ``gpupolicy-namespace-labels`` (``namespaceLabels``, default Warn): only ArgoCD and the
  platform groups change ``gpupolicy.dev/*``, ``data-class.gpupolicy.dev/*`` and
  ``priority.gpupolicy.dev/*`` labels on Namespaces, since those labels decide which rules, queue,
  data classes and priority tiers apply.
- Priority tiers and the serving PriorityClass: ``compiler.lower.admission_priority``.

Match choices. The policies match CREATE and UPDATE of the kinds Kueue integrates (from the
Kueue Configuration's ``integrations.frameworks``: batch Jobs, JobSets, Kubeflow jobs,
TrainJobs) and Pods; bindings select training namespaces (``gpupolicy.dev/purpose=training``
and a team label, so ``namespaceObject`` labels are there). Controllers must never be blocked:

- Objects controlled (``ownerReferences[].controller``) by a queued kind are checked at that
  kind, not again (matchCondition): Pods of a Job, Jobs of a JobSet, the JobSet of a TrainJob,
  when a controller made the request (``admission_cel.controlled_by``: an ownerReference anyone
  else writes exempts nothing).
  Pods controlled by anything else (ReplicaSets, StatefulSets, an unintegrated TFJob) are
  checked as bare Pods.
- An UPDATE is checked only when it touches what the rule reads: the labels (or a workload
  that newly asks for GPUs) for labels and queue; ``spec`` for serving isolation; a newly
  requested GPU for the backstop. Kueue suspending and resuming a Job, the Job controller
  removing pod finalizers, or metadata bookkeeping on objects that predate the policy pass.
  Serving isolation still re-checks Kueue's node-selector injection: a pre-existing Job that
  tolerates the serving taint stays suspended, which is the point. Objects being deleted skip.

``validationActions`` follow the fleet's modes: Deny -> [Deny, Audit], Warn -> [Warn, Audit],
Audit -> [Audit], so a rule can be rolled out as Warn before Deny and leaves audit evidence
either way. ``failurePolicy: Fail``: an expression error counts as a failed validation under
the binding's actions.
"""

from __future__ import annotations

from typing import Any

from compiler.lower.admission_cel import (
    ALWAYS_GPU_KINDS,
    BACKSTOP_WORKLOADS,
    POD,
    Workload,
    cel_list,
    cel_map,
    controlled_by,
    device_requests_class,
    pod_specs,
    pod_templates,
    selects_label,
    tolerates_taint,
)
from compiler.lower.admission_vap import (
    NOT_DELETING,
    TRAINING_NAMESPACES,
    VAP_API,
    pod_integration,
    queued_workloads,
    resource_rules,
    scope_variables,
)
from compiler.lower.admission_vap import binding as _binding
from compiler.lower.admission_vap import check as _check
from compiler.lower.admission_vap import vap as _policy
from compiler.lower.admission_vap import var as _var
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import DRA_DRIVER_NAMESPACE, GPU_OPERATOR_NAMESPACE, KUEUE_NAMESPACE, Policy
from compiler.policy.labels import (
    DATA_CLASS_PREFIX,
    LABEL_DATA_CLASS,
    LABEL_MODEL,
    LABEL_POOL,
    LABEL_QUEUE,
    LABEL_TEAM,
    PRIORITY_PREFIX,
    SERVING_NODE_LABEL,
    SERVING_TAINT_KEY,
)

LABELS_POLICY = "gpupolicy-required-labels"
QUEUE_POLICY = "gpupolicy-queue-name"
SERVING_POLICY = "gpupolicy-serving-isolation"
BACKSTOP_POLICY = "gpupolicy-gpu-backstop"
NAMESPACE_POLICY = "gpupolicy-namespace-labels"
ALWAYS_EXEMPT = ("kube-system",)
# NVIDIA DRA driver DeviceClasses that hand out GPUs (the ComputeDomain classes do not).
NVIDIA_GPU_DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")


def _label_hint(policy: Policy) -> str:
    adm = policy.fleet.spec.admission
    parts = []
    for k in adm.required_labels:
        if k == LABEL_TEAM:
            parts.append(f"'{k}: ' + variables.nsTeam")
        elif k == LABEL_DATA_CLASS:
            parts.append(f"'{k}: <' + variables.nsDataClasses.join('|') + '>'")
        elif k in adm.allowed_values:
            parts.append(f"'{k}: <{'|'.join(adm.allowed_values[k])}>'")
        else:
            parts.append(f"'{k}: <{'model id' if k == LABEL_MODEL else 'value'}>'")
    return " + ', ' + ".join(parts)


def allowed_values(policy: Policy) -> dict[str, list[str]]:
    """Allowed values per required label; the data-class label defaults to the declared classes."""
    adm = policy.fleet.spec.admission
    out = {k: list(v) for k, v in adm.allowed_values.items() if k in adm.required_labels}
    if LABEL_DATA_CLASS in adm.required_labels and LABEL_DATA_CLASS not in out:
        out[LABEL_DATA_CLASS] = [d.name for d in policy.fleet.spec.data_classes]
    return out


def labels_policy(policy: Policy, workloads: list[Workload]) -> dict[str, Any]:
    required = policy.fleet.spec.admission.required_labels
    templated = [w.kind for w in workloads if w.template_labels]
    variables = scope_variables([*workloads, POD], claims=True, always=ALWAYS_GPU_KINDS) + [
        _var("nsDataClasses", f"variables.nsLabels.filter(k, k.startsWith('{DATA_CLASS_PREFIX}') && "
                              f"variables.nsLabels[k] == 'true').map(k, k.substring({len(DATA_CLASS_PREFIX)}))"),
        _var("missing", f"{cel_list(required)}.filter(k, !(k in variables.labels) || variables.labels[k] == '')"),
        _var("allowed", cel_map(allowed_values(policy))),
        _var("badValues", "variables.allowed.filter(k, k in variables.labels && variables.labels[k] != '' && "
                          "!(variables.labels[k] in variables.allowed[k]))"),
        _var("untemplated", f"object.kind in {cel_list(templated)} ? {cel_list(required)}.filter(k, k in variables.labels "
                            "&& variables.templates.exists(p, !has(p.metadata) || !has(p.metadata.labels) || "
                            "!(k in p.metadata.labels) || p.metadata.labels[k] != variables.labels[k])) : []"),
    ]
    kind = "'GPU ' + object.kind + ' in namespace ' + request.namespace"
    validations = [
        _check("!variables.inScope || size(variables.missing) == 0",
               f"GPU workloads must carry the labels {', '.join(required)}",
               f"{kind} + ' lacks label(s) ' + variables.missing.join(', ') + '; add to metadata.labels: ' + "
               f"{_label_hint(policy)}"),
        _check("!variables.inScope || size(variables.badValues) == 0",
               "a required label has a value outside admission.allowedValues",
               f"{kind} + ': ' + variables.badValues.map(k, k + '=' + variables.labels[k] + ' is not allowed (allowed: ' + "
               "variables.allowed[k].join(', ') + ')').join('; ')"),
        _check(f"!variables.inScope || !('{LABEL_TEAM}' in variables.labels) || "
               f"variables.labels['{LABEL_TEAM}'] == variables.nsTeam",
               f"label {LABEL_TEAM} must name the team that owns the namespace",
               f"{kind} + ' says {LABEL_TEAM}=' + variables.labels['{LABEL_TEAM}'] + ' but the namespace belongs to "
               f"team ' + variables.nsTeam + '; set {LABEL_TEAM}: ' + variables.nsTeam", "Forbidden"),
        _check(f"!variables.inScope || !('{LABEL_DATA_CLASS}' in variables.labels) || "
               f"variables.labels['{LABEL_DATA_CLASS}'] in variables.nsDataClasses",
               "the workload's data class is not one its namespace may hold",
               f"{kind} + ' handles data class ' + variables.labels['{LABEL_DATA_CLASS}'] + ', which this namespace may "
               "not hold (allowed: ' + variables.nsDataClasses.join(', ') + '); use one of those or run it in a "
               "namespace of a team that declares the class'", "Forbidden"),
        _check("!variables.inScope || size(variables.untemplated) == 0",
               "pod templates must repeat the workload's required labels (GPU metrics and audits see pods)",
               f"{kind} + ': pod template(s) lack or differ on ' + variables.untemplated.join(', ') + '; repeat "
               "the same labels under the pod template metadata.labels (GPU metrics and audits see pods, not the "
               "' + object.kind + ')'"),
    ]
    keys = list(dict.fromkeys([*required, LABEL_QUEUE]))
    audit = [{"key": "gpu-workload", "valueExpression":
              f"variables.inScope ? {cel_list(keys)}.map(k, k + '=' + (k in variables.labels ? variables.labels[k] : "
              "'-')).join(' ') : ''"}]
    conditions = [NOT_DELETING, {"name": "not-controlled-by-a-queued-workload",
                                 "expression": "!(" + controlled_by("object", workloads) + ")"}]
    rules = resource_rules([*workloads, POD], ["CREATE", "UPDATE"])
    return _policy(LABELS_POLICY, rules, variables, validations, conditions, audit)


def queue_policy(policy: Policy, workloads: list[Workload], pods_queued: bool) -> dict[str, Any]:
    variables = scope_variables([*workloads, POD], claims=True, always=ALWAYS_GPU_KINDS)
    kind = "'GPU ' + object.kind + ' in namespace ' + request.namespace"
    kinds = ", ".join(w.kind for w in workloads)
    bare_pods = [] if pods_queued else [_check(
        "!variables.inScope || object.kind != 'Pod'",
        "GPU Pods must be submitted through a queued workload (Kueue's pod integration is off)",
        f"'GPU Pod in namespace ' + request.namespace + ' bypasses Kueue quota: submit it as one of {kinds} with "
        f"label {LABEL_QUEUE}: ' + variables.nsTeam", "Forbidden")]
    pod_exempt = "" if pods_queued else "object.kind == 'Pod' || "
    validations = bare_pods + [
        _check(f"!variables.inScope || {pod_exempt}'{LABEL_QUEUE}' in variables.labels",
               f"GPU workloads must name a Kueue LocalQueue with label {LABEL_QUEUE}",
               f"{kind} + ' names no queue; add label {LABEL_QUEUE}: ' + variables.nsTeam + ' (the team\\'s "
               "LocalQueue in this namespace)'"),
        _check(f"!variables.inScope || !('{LABEL_QUEUE}' in variables.labels) || "
               f"variables.labels['{LABEL_QUEUE}'] == variables.nsTeam",
               "GPU workloads must use the team's LocalQueue, named after the team",
               f"{kind} + ' names queue ' + variables.labels['{LABEL_QUEUE}'] + ', which is not this namespace\\'s "
               f"LocalQueue; use {LABEL_QUEUE}: ' + variables.nsTeam", "Forbidden"),
    ]
    conditions = [NOT_DELETING, {"name": "not-controlled-by-a-queued-workload",
                                 "expression": "!(" + controlled_by("object", workloads) + ")"}]
    rules = resource_rules([*workloads, POD], ["CREATE", "UPDATE"])
    return _policy(QUEUE_POLICY, rules, variables, validations, conditions)


def serving_policy(policy: Policy, cluster: str, workloads: list[Workload]) -> dict[str, Any]:
    serving_pools = sorted(p.name for p in policy.clusters[cluster].pools if p.serving)
    selects = selects_label("s", SERVING_NODE_LABEL)
    if serving_pools:
        selects += " || " + selects_label("s", LABEL_POOL, serving_pools)
    variables = [
        _var("templates", pod_templates("object", [*workloads, POD])),
        _var("podSpecs", pod_specs("variables.templates")),
        _var("inScope", "request.operation == 'CREATE' || object.spec != oldObject.spec"),
        _var("toleratesServing", "variables.podSpecs.exists(s, has(s.tolerations) && s.tolerations.exists(t, "
                                 f"{tolerates_taint(SERVING_TAINT_KEY)}))"),
        _var("selectsServing", f"variables.podSpecs.exists(s, {selects})"),
        _var("pinsNode", "variables.podSpecs.exists(s, has(s.nodeName) && s.nodeName != '')"),
    ]
    pools = f" or gpupolicy.dev/pool in {', '.join(serving_pools)}" if serving_pools else ""
    where = "object.kind + ' in training namespace ' + request.namespace"
    validations = [
        _check("!variables.inScope || !variables.toleratesServing",
               f"training workloads may not tolerate the serving taint {SERVING_TAINT_KEY}",
               f"{where} + ' tolerates the serving taint: remove tolerations with key {SERVING_TAINT_KEY} and any "
               "empty-key operator: Exists toleration (it tolerates every taint); serving nodes are reserved for "
               "the serving deployments'", "Forbidden"),
        _check("!variables.inScope || !variables.selectsServing",
               "training workloads may not select serving nodes",
               f"{where} + ' selects serving nodes ({SERVING_NODE_LABEL}{pools}) by nodeSelector or required node "
               "affinity; remove that term, Kueue adds the flavor\\'s node labels on admission'", "Forbidden"),
        _check("request.operation != 'CREATE' || !variables.pinsNode",
               "training workloads may not set spec.nodeName",
               f"{where} + ' sets spec.nodeName, which bypasses the scheduler, the serving taint and Kueue; remove it'",
               "Forbidden"),
    ]
    rules = resource_rules([*workloads, POD], ["CREATE", "UPDATE"])
    return _policy(SERVING_POLICY, rules, variables, validations, [NOT_DELETING])


def gpu_device_classes(policy: Policy, cluster: str) -> list[str]:
    """DeviceClasses that hand out GPUs on a DRA cluster: NVIDIA's, one per GPU class, the custom ones."""
    c = policy.clusters[cluster]
    if not c.dra:
        return []
    custom = [d.name for d in getattr(c, "device_classes", [])]
    return sorted({*NVIDIA_GPU_DEVICE_CLASSES, *policy.classes.get(cluster, {}), *custom})


def backstop_policy(policy: Policy, cluster: str) -> dict[str, Any]:
    workloads = list(BACKSTOP_WORKLOADS)
    classes = gpu_device_classes(policy, cluster)
    scope = [v for v in scope_variables(workloads, claims=False) if v["name"] in
             ("templates", "podSpecs", "requestsGpu", "oldPodSpecs", "oldRequestsGpu")]
    claims = "false"
    rules = resource_rules(workloads, ["CREATE", "UPDATE"])
    if classes:
        claims = (f"object.kind == 'ResourceClaim' ? (has(object.spec.devices) && "
                  f"{device_requests_class('object.spec.devices', classes)}) : object.kind == 'ResourceClaimTemplate' ? "
                  f"(has(object.spec.spec) && has(object.spec.spec.devices) && "
                  f"{device_requests_class('object.spec.spec.devices', classes)}) : false")
        # Claims are immutable; CREATE only, so finalizer updates on old claims never fail.
        rules.append({"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                      "resources": ["resourceclaims", "resourceclaimtemplates"], "operations": ["CREATE"],
                      "scope": "Namespaced"})
    variables = scope + [
        _var("claimsGpu", claims),
        _var("newGpu", "request.operation == 'CREATE' ? (variables.requestsGpu || variables.claimsGpu) : "
                       "(variables.requestsGpu && !variables.oldRequestsGpu)"),
    ]
    validations = [_check(
        "!variables.newGpu", "namespaces that gpupolicy does not manage cannot request GPUs",
        "object.kind + ' in namespace ' + request.namespace + ' requests GPUs, but gpupolicy does not manage this "
        "namespace: run GPU work in a team namespace (policies/teams/<team>.yaml), or ask the platform team to list "
        "' + request.namespace + ' in admission.exemptNamespaces'", "Forbidden")]
    return _policy(BACKSTOP_POLICY, rules, variables, validations, [NOT_DELETING])


def backstop_exempt(policy: Policy, cluster: str) -> list[str]:
    """kube-system, the namespaces gpupolicy installs add-ons into (compiler.lower.charts: the GPU
    Operator's validators request GPUs), the cluster's systemNamespaces and exemptNamespaces."""
    c = policy.clusters[cluster]
    addons = {GPU_OPERATOR_NAMESPACE, KUEUE_NAMESPACE, *([DRA_DRIVER_NAMESPACE] if c.dra else [])}
    return sorted({*ALWAYS_EXEMPT, *addons, *c.system_namespaces, *policy.fleet.spec.admission.exempt_namespaces})


def namespace_label_writers(policy: Policy) -> tuple[list[str], list[str]]:
    """(usernames, groups) allowed to change gpupolicy's namespace labels."""
    adm = policy.fleet.spec.admission
    argocd = policy.fleet.spec.gitops.argocd_namespace
    users = [f"system:serviceaccount:{argocd}:argocd-application-controller",
             "system:serviceaccount:kube-system:argocd-manager", *adm.label_writers]
    groups = ["system:masters", *policy.fleet.spec.platform.groups]
    return sorted(set(users)), sorted(set(groups))


def namespace_policy(policy: Policy) -> dict[str, Any]:
    users, groups = namespace_label_writers(policy)
    owned = (f"k.startsWith('{LABEL_TEAM.split('/')[0]}/') || k.startsWith('{DATA_CLASS_PREFIX}') || "
             f"k.startsWith('{PRIORITY_PREFIX}')")
    variables = [
        _var("labels", "has(object.metadata.labels) ? object.metadata.labels : {}"),
        _var("oldLabels", "request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"),
        _var("changed", f"variables.labels.filter(k, ({owned}) && (!(k in variables.oldLabels) || "
                        f"variables.oldLabels[k] != variables.labels[k])) + variables.oldLabels.filter(k, ({owned}) && "
                        "!(k in variables.labels))"),
        _var("writer", f"request.userInfo.username in {cel_list(users)} || (has(request.userInfo.groups) && "
                       f"request.userInfo.groups.exists(g, g in {cel_list(groups)}))"),
    ]
    validations = [_check(
        "size(variables.changed) == 0 || variables.writer",
        "only gpupolicy (ArgoCD) and the platform change gpupolicy's namespace labels",
        "'labels ' + variables.changed.join(', ') + ' of namespace ' + object.metadata.name + ' decide its team, "
        "queue and data classes and are set by gpupolicy through ArgoCD; change policies/ instead'", "Forbidden")]
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"],
              "operations": ["CREATE", "UPDATE"], "scope": "Cluster"}]
    return _policy(NAMESPACE_POLICY, rules, variables, validations, [NOT_DELETING])


def lower_admission(policy: Policy, cluster: str) -> list[Manifest]:
    adm = policy.fleet.spec.admission
    modes = adm.modes
    workloads = queued_workloads(policy, cluster)
    exempt = backstop_exempt(policy, cluster)
    unmanaged = {"matchExpressions": [
        {"key": LABEL_TEAM, "operator": "DoesNotExist"},
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": exempt},
    ]}
    pairs = [
        (labels_policy(policy, workloads), modes.required_labels, TRAINING_NAMESPACES),
        (queue_policy(policy, workloads, pod_integration(policy, cluster)), modes.queue_name, TRAINING_NAMESPACES),
        (serving_policy(policy, cluster, workloads), modes.serving_isolation, TRAINING_NAMESPACES),
        (backstop_policy(policy, cluster), modes.backstop, unmanaged),
        (namespace_policy(policy), modes.namespace_labels, None),
    ]
    out = []
    src = (policy.fleet_src.path,)
    for vap, mode, selector in pairs:
        name = vap["metadata"]["name"]
        out.append(Manifest(cluster, "admission", vap, src))
        out.append(Manifest(cluster, "admission", _binding(name, mode, selector), src))
    return out


TARGETS = (
    Target("admission", "admission", "cluster", passes=(lower_admission,), kinds=(
        Kind(VAP_API, "ValidatingAdmissionPolicy", "cluster"),
        Kind(VAP_API, "ValidatingAdmissionPolicyBinding", "cluster"),
    )),
)
