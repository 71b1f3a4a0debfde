"""Building blocks of gpupolicy's ValidatingAdmissionPolicies: policy and binding skeletons, the
modes' ``validationActions``, resource rules and the scope variables every workload policy shares.
The policies themselves are ``compiler.lower.admission`` (labels, queue, serving isolation, GPU
backstop, namespace labels) and ``compiler.lower.admission_priority`` (tiers, serving class)."""

from __future__ import annotations

from typing import Any, Iterable

from compiler.lower.admission_cel import QUEUED_WORKLOADS, Workload, pod_specs, pod_templates, requests_gpu
from compiler.lower.common import obj
from compiler.policy.graph import Policy
from compiler.policy.kueue_manager import manager_config
from compiler.policy.labels import LABEL_PURPOSE, LABEL_TEAM
from compiler.policy.memo import per_policy

VAP_API = "admissionregistration.k8s.io/v1"
ACTIONS = {"Deny": ["Deny", "Audit"], "Warn": ["Warn", "Audit"], "Audit": ["Audit"]}
NOT_DELETING = {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"}
TRAINING_NAMESPACES = {"matchExpressions": [
    {"key": LABEL_PURPOSE, "operator": "In", "values": ["training"]},
    {"key": LABEL_TEAM, "operator": "Exists"},
]}


@per_policy
def queued_workloads(policy: Policy, cluster: str) -> list[Workload]:
    """The kinds Kueue manages on ``cluster`` (unknown framework names are not checked)."""
    frameworks = manager_config(policy, cluster).get("integrations", {}).get("frameworks", [])
    return [QUEUED_WORKLOADS[f] for f in frameworks if f in QUEUED_WORKLOADS]


def pod_integration(policy: Policy, cluster: str) -> bool:
    return "pod" in manager_config(policy, cluster).get("integrations", {}).get("frameworks", [])


def resource_rules(workloads: Iterable[Workload], operations: list[str]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[str]] = {}
    for w in workloads:
        groups.setdefault((w.group, w.version), [])
        if w.resource not in groups[(w.group, w.version)]:
            groups[(w.group, w.version)].append(w.resource)
    return [{"apiGroups": [g], "apiVersions": [v], "resources": sorted(rs), "operations": list(operations),
             "scope": "Namespaced"} for (g, v), rs in sorted(groups.items())]


def var(name: str, expression: str) -> dict[str, str]:
    return {"name": name, "expression": expression}


def check(expression: str, message: str, message_expression: str, reason: str = "Invalid") -> dict[str, str]:
    return {"expression": expression, "message": message, "messageExpression": message_expression,
            "reason": reason}


def scope_variables(workloads: list[Workload], *, claims: bool, always: Iterable[str] = ()) -> list[dict[str, str]]:
    """templates/podSpecs/requestsGpu of the object and (on UPDATE only) of the old object."""
    always = [k for k in always if any(w.kind == k for w in workloads)]
    return [
        var("templates", pod_templates("object", workloads)),
        var("podSpecs", pod_specs("variables.templates")),
        var("requestsGpu", requests_gpu("object", "variables.podSpecs", claims=claims, always=always)),
        var("oldPodSpecs", f"request.operation == 'UPDATE' ? {pod_specs('(' + pod_templates('oldObject', workloads) + ')')} : []"),
        var("oldRequestsGpu", f"request.operation == 'UPDATE' && "
                               f"({requests_gpu('oldObject', 'variables.oldPodSpecs', claims=claims, always=always)})"),
        var("labels", "has(object.metadata.labels) ? object.metadata.labels : {}"),
        var("oldLabels", "request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"),
        # GPU work, checked on CREATE, and on UPDATE when labels change or GPUs are newly asked for.
        var("inScope", "variables.requestsGpu && (request.operation == 'CREATE' || "
                        "variables.labels != variables.oldLabels || !variables.oldRequestsGpu)"),
        var("nsLabels", "has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {}"),
        var("nsTeam", f"'{LABEL_TEAM}' in variables.nsLabels ? variables.nsLabels['{LABEL_TEAM}'] : ''"),
    ]


def vap(name: str, rules: list[dict[str, Any]], variables: list[dict[str, str]], validations: list[dict[str, str]],
            conditions: list[dict[str, str]], audit: list[dict[str, str]] | None = None) -> dict[str, Any]:
    out = obj(VAP_API, "ValidatingAdmissionPolicy", name)
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": rules},
        "matchConditions": conditions,
        "variables": variables,
        "validations": validations,
    }
    if audit:
        spec["auditAnnotations"] = audit
    out["spec"] = spec
    return out


def binding(name: str, mode: str, namespaces: dict[str, Any] | None) -> dict[str, Any]:
    b = obj(VAP_API, "ValidatingAdmissionPolicyBinding", name)
    spec: dict[str, Any] = {"policyName": name, "validationActions": ACTIONS[mode]}
    if namespaces is not None:
        spec["matchResources"] = {"namespaceSelector": namespaces}
    b["spec"] = spec
    return b
