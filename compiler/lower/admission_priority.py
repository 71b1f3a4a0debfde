"""Admission for priorities: a team runs at the tiers the policy grants it, and only serving
namespaces run at the serving PriorityClass.

Why (issue "Tenants cannot raise their own priority"): Kueue v0.19.2 ranks a job by its
``kueue.x-k8s.io/priority-class`` label, and without it by the pod templates' ``priorityClassName``
(kubernetes-sigs/kueue@v0.19.2 ``pkg/controller/jobframework/reconciler.go`` ``ExtractPriority``;
``pkg/util/priority/priority.go`` ``GetPriorityFromPriorityClass``: a *pod* PriorityClass, then the
cluster's ``globalDefault``, then 0). So a Job with ``priorityClassName: gpupolicy-serving`` gets
Kueue priority 1,000,000, jumps every queue and preempts inside its ClusterQueue, and its pods
preempt other pods at the scheduler, outside Kueue. Kueue's own default (a WorkloadPriorityClass
named ``default``) needs the alpha gate ``WorkloadPriorityClassDefaulting``, off at v0.19.2
(``pkg/controller/jobframework/defaults.go``, ``pkg/features/kube_features.go``), and a LocalQueue
has no default priority (``apis/kueue/v1beta2/localqueue_types.go``); a MutatingAdmissionPolicy is
off by default before Kubernetes 1.36 (KEP-3962). So admission *requires* the tier instead of
defaulting it (``compiler.policy.priorities``).

- ``gpupolicy-priority`` (fleet ``admission.modes.priority``), in training namespaces, on the kinds
  the other policies check (Kueue's integrations and Pods; objects controlled by a queued kind are
  checked there): the Kueue label must name a tier the namespace's team may use (the Namespace's
  ``priority.gpupolicy.dev/<tier>: "true"`` labels, ``compiler.policy.priorities``); every
  ``priorityClassName`` of the object's pod specs is empty or such a tier (the serving class is
  the next policy's); and a GPU workload names its tier (the message names the team's default,
  the Namespace's ``gpupolicy.dev/priority``). Checked on CREATE and when the label or a
  ``priorityClassName`` changes (Kueue's label is mutable), so controllers updating older objects
  pass.
- ``gpupolicy-serving-priority`` (same mode), bound in every namespace; only gpupolicy's serving
  namespaces (``gpupolicy.dev/purpose=serving`` and a team label) are exempt: no Pod or pod template (Deployments, StatefulSets, DaemonSets,
  ReplicaSets, Jobs, CronJobs and Kueue's kinds) newly names ``gpupolicy-serving``.
- A second wall that needs no CEL: a ResourceQuota ``gpupolicy-reserved-priority`` with
  ``hard: {pods: "0"}`` scoped (``scopeSelector`` ``PriorityClass In``) to the serving class and the
  two system classes above it, in every gpupolicy namespace that is not a serving namespace.

Not covered: a cluster's own ``globalDefault`` PriorityClass is written into bare Pods by the
Priority admission plugin before validation; unless it shares a tier's name such Pods are denied
in training namespaces (GPU Pods are denied there anyway when Kueue's pod integration is off).
"""

from __future__ import annotations

from typing import Any

from compiler.lower.admission_cel import (
    ALWAYS_GPU_KINDS,
    BACKSTOP_WORKLOADS,
    POD,
    Workload,
    controlled_by,
    pod_specs,
    pod_templates,
)
from compiler.lower.admission_vap import (
    NOT_DELETING,
    TRAINING_NAMESPACES,
    VAP_API,
    binding,
    check,
    queued_workloads,
    resource_rules,
    scope_variables,
    vap,
    var,
)
from compiler.lower.common import obj
from compiler.lower.namespaces import team_namespaces
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import (
    LABEL_DEFAULT_PRIORITY,
    LABEL_PRIORITY_CLASS,
    LABEL_PURPOSE,
    LABEL_TEAM,
    PRIORITY_PREFIX,
)
from compiler.policy.priorities import SERVING_PRIORITY_CLASS, SYSTEM_PRIORITY_CLASSES

PRIORITY_POLICY = "gpupolicy-priority"
SERVING_PRIORITY_POLICY = "gpupolicy-serving-priority"
QUOTA_NAME = "gpupolicy-reserved-priority"
# Pod PriorityClasses no training pod may use: serving's and the built-in ones above it.
RESERVED_CLASSES = (SERVING_PRIORITY_CLASS, *SYSTEM_PRIORITY_CLASSES)


def _class_names(specs: str) -> str:
    return f"{specs}.filter(s, has(s.priorityClassName) && s.priorityClassName != '').map(s, s.priorityClassName)"


def priority_policy(policy: Policy, workloads: list[Workload]) -> dict[str, Any]:
    variables = scope_variables([*workloads, POD], claims=True, always=ALWAYS_GPU_KINDS) + [
        var("nsPriorities", f"variables.nsLabels.filter(k, k.startsWith('{PRIORITY_PREFIX}') && "
                             f"variables.nsLabels[k] == 'true').map(k, k.substring({len(PRIORITY_PREFIX)}))"),
        var("nsDefault", f"'{LABEL_DEFAULT_PRIORITY}' in variables.nsLabels ? "
                          f"variables.nsLabels['{LABEL_DEFAULT_PRIORITY}'] : '<tier>'"),
        var("tier", f"'{LABEL_PRIORITY_CLASS}' in variables.labels ? variables.labels['{LABEL_PRIORITY_CLASS}'] : ''"),
        var("oldTier", f"'{LABEL_PRIORITY_CLASS}' in variables.oldLabels ? "
                        f"variables.oldLabels['{LABEL_PRIORITY_CLASS}'] : ''"),
        var("classNames", _class_names("variables.podSpecs")),
        var("oldClassNames", _class_names("variables.oldPodSpecs")),
        var("changed", "request.operation == 'CREATE' || variables.tier != variables.oldTier || "
                        "variables.classNames != variables.oldClassNames"),
        var("badClasses", f"variables.classNames.filter(n, n != '{SERVING_PRIORITY_CLASS}' && "
                           "!(n in variables.nsPriorities))"),
    ]
    kind = "object.kind + ' in namespace ' + request.namespace"
    may_use = "' may use: ' + variables.nsPriorities.join(', ') + ')'"
    validations = [
        check("!variables.changed || variables.tier == '' || variables.tier in variables.nsPriorities",
               f"label {LABEL_PRIORITY_CLASS} must name a priority tier the namespace's team may use",
               f"{kind} + ' names priority tier ' + variables.tier + ', which team ' + variables.nsTeam + ' may not "
               f"use; set {LABEL_PRIORITY_CLASS}: ' + variables.nsDefault + ' (team ' + variables.nsTeam + {may_use}",
               "Forbidden"),
        check("!variables.changed || size(variables.badClasses) == 0",
               "priorityClassName must be empty or a priority tier the namespace's team may use",
               f"{kind} + ' sets priorityClassName ' + variables.badClasses.join(', ') + ', which team ' + "
               "variables.nsTeam + ' may not use: pod priority preempts at the scheduler, outside Kueue; remove "
               f"priorityClassName and set label {LABEL_PRIORITY_CLASS}: ' + variables.nsDefault", "Forbidden"),
    ]
    if policy.fleet.spec.priorities:
        validations.append(check(
            "!variables.inScope || variables.tier != ''",
            f"GPU workloads must name their priority tier with label {LABEL_PRIORITY_CLASS}",
            f"'GPU ' + {kind} + ' names no priority tier; add label {LABEL_PRIORITY_CLASS}: ' + variables.nsDefault + "
            f"' (team ' + variables.nsTeam + {may_use} + '. Without it Kueue ranks it at priority 0 or by its pods\\' "
            "priorityClassName, not at the team\\'s tier'"))
    conditions = [NOT_DELETING, {"name": "not-controlled-by-a-queued-workload",
                                 "expression": "!(" + controlled_by("object", workloads) + ")"}]
    rules = resource_rules([*workloads, POD], ["CREATE", "UPDATE"])
    return vap(PRIORITY_POLICY, rules, variables, validations, conditions)


def serving_priority_policy(workloads: list[Workload]) -> dict[str, Any]:
    kinds = list({w.kind: w for w in [POD, *BACKSTOP_WORKLOADS, *workloads]}.values())
    names = f"has(s.priorityClassName) && s.priorityClassName == '{SERVING_PRIORITY_CLASS}'"
    variables = [
        var("templates", pod_templates("object", kinds)),
        var("podSpecs", pod_specs("variables.templates")),
        var("oldPodSpecs", f"request.operation == 'UPDATE' ? "
                            f"{pod_specs('(' + pod_templates('oldObject', kinds) + ')')} : []"),
        var("namesServing", f"variables.podSpecs.exists(s, {names})"),
        var("namedServing", f"variables.oldPodSpecs.exists(s, {names})"),
        # A serving namespace is gpupolicy's: purpose=serving *and* a team label (a selector cannot say so).
        var("nsLabels", "has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {}"),
        var("servingNamespace", f"'{LABEL_PURPOSE}' in variables.nsLabels && "
                                f"variables.nsLabels['{LABEL_PURPOSE}'] == 'serving' && '{LABEL_TEAM}' in variables.nsLabels"),
    ]
    validations = [check(
        "!variables.namesServing || variables.namedServing || variables.servingNamespace",
        f"only serving namespaces may use PriorityClass {SERVING_PRIORITY_CLASS}",
        f"object.kind + ' in namespace ' + request.namespace + ' names PriorityClass {SERVING_PRIORITY_CLASS}, which "
        f"is reserved for gpupolicy\\'s serving deployments (namespaces with {LABEL_PURPOSE}=serving and a team): "
        "it would preempt other pods at the scheduler and jump every Kueue queue; remove priorityClassName "
        f"(training jobs name a tier with label {LABEL_PRIORITY_CLASS})'", "Forbidden")]
    rules = resource_rules(kinds, ["CREATE", "UPDATE"])
    return vap(SERVING_PRIORITY_POLICY, rules, variables, validations, [NOT_DELETING])


def lower_priority_admission(policy: Policy, cluster: str) -> list[Manifest]:
    mode = policy.fleet.spec.admission.modes.priority
    workloads = queued_workloads(policy, cluster)
    src = (policy.fleet_src.path,)
    out = []
    for policy_obj, selector in ((priority_policy(policy, workloads), TRAINING_NAMESPACES),
                                 (serving_priority_policy(workloads), None)):
        out.append(Manifest(cluster, "admission", policy_obj, src))
        out.append(Manifest(cluster, "admission", binding(policy_obj["metadata"]["name"], mode, selector), src))
    return out


def reserved_priority_quota(namespace: str, team: str, purpose: str) -> dict[str, Any]:
    rq = obj("v1", "ResourceQuota", QUOTA_NAME, namespace=namespace, labels={LABEL_TEAM: team, LABEL_PURPOSE: purpose})
    rq["spec"] = {
        "hard": {"pods": "0"},
        "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": sorted(RESERVED_CLASSES)},
        ]},
    }
    return rq


def lower_priority_quota(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    """The quota wall in each of the team's namespaces on ``cluster`` except its serving namespace."""
    sources = (policy.fleet_src.path, team.path)
    return [Manifest(cluster, "namespaces", reserved_priority_quota(ns, team.name, purpose), sources)
            for ns, purpose in team_namespaces(team, cluster) if purpose != "serving"]


TARGETS = (
    Target("admission-priority", "admission", "cluster", passes=(lower_priority_admission,), kinds=(
        Kind(VAP_API, "ValidatingAdmissionPolicy", "cluster"),
        Kind(VAP_API, "ValidatingAdmissionPolicyBinding", "cluster"),
    )),
    Target("priority-quota", "namespaces", "team", passes=(lower_priority_quota,), kinds=(
        Kind("v1", "ResourceQuota"),
    )),
)
