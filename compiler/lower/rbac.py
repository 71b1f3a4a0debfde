"""Tenancy RBAC: a team's identity groups may submit work only in the team's own namespaces.

Per training namespace, Role ``gpupolicy-training``: create and manage the workload kinds Kueue
integrates (batch Jobs, JobSets, Kubeflow jobs, TrainJobs, as enabled in the Kueue
Configuration) and ConfigMaps; read, and delete, Pods (a deleted Pod of a Job is recreated);
read logs and events; read the namespace's Kueue LocalQueues and Workloads (queue position,
admission, preemption). No Pod create: GPU Pods are refused by admission anyway, and bare Pods
bypass Kueue. No Secrets, exec or port-forward: the platform grants those deliberately.

Per serving namespace, Role ``gpupolicy-serving`` (read-mostly): the vLLM Deployments,
ReplicaSets, Pods, logs, Services, events, PodDisruptionBudgets, autoscalers, InferencePools
and HTTPRoutes are read-only because ArgoCD owns them (edits would be reverted, and replicas
belong to the autoscaler); the one write is deleting a Pod, to restart a stuck replica. Secrets
(model-hub tokens) stay unreadable.

Each Role is bound by a RoleBinding of the same name to every group in the team's ``groups``
(kind Group). Nothing cluster-wide is granted to teams. Teams without groups get nothing (ADM001).
"""

from __future__ import annotations

from typing import Any

from compiler.lower.admission_vap import queued_workloads
from compiler.lower.common import obj
from compiler.lower.namespaces import team_namespaces
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import LABEL_PURPOSE, LABEL_TEAM

RBAC_API = "rbac.authorization.k8s.io/v1"
TRAINING_ROLE = "gpupolicy-training"
SERVING_ROLE = "gpupolicy-serving"
MANAGE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
READ = ["get", "list", "watch"]


def _rule(group: str, resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}


def training_rules(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    by_group: dict[str, list[str]] = {}
    for w in queued_workloads(policy, cluster):
        by_group.setdefault(w.group, []).append(w.resource)
    rules = [_rule(g, rs, MANAGE) for g, rs in sorted(by_group.items())]
    rules += [
        _rule("", ["configmaps"], MANAGE),
        _rule("", ["pods"], ["delete", *READ]),
        _rule("", ["pods/log"], ["get"]),
        _rule("", ["events"], READ),
        _rule("events.k8s.io", ["events"], READ),
        _rule("kueue.x-k8s.io", ["localqueues", "workloads"], READ),
    ]
    if policy.clusters[cluster].dra:
        # Jobs name the compiler's ResourceClaimTemplates (component dra); teams must be able
        # to list them, and to read the claims made from them (allocation, status).
        rules.append(_rule("resource.k8s.io", ["resourceclaims", "resourceclaimtemplates"], READ))
    return rules


def serving_rules() -> list[dict[str, Any]]:
    return [
        _rule("", ["configmaps", "endpoints", "events", "persistentvolumeclaims", "pods", "services"], READ),
        _rule("", ["pods"], ["delete"]),
        _rule("", ["pods/log"], ["get"]),
        _rule("apps", ["deployments", "replicasets"], READ),
        _rule("autoscaling", ["horizontalpodautoscalers"], READ),
        _rule("events.k8s.io", ["events"], READ),
        _rule("gateway.networking.k8s.io", ["httproutes"], READ),
        _rule("inference.networking.k8s.io", ["inferencepools"], READ),
        _rule("keda.sh", ["scaledobjects"], READ),
        _rule("policy", ["poddisruptionbudgets"], READ),
        _rule("resource.k8s.io", ["resourceclaims", "resourceclaimtemplates"], READ),
    ]


def lower_team_rbac(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    groups = sorted(set(team.model.spec.groups))
    if not groups:
        return []
    out = []
    sources = (policy.fleet_src.path, team.path)
    for ns, purpose in team_namespaces(team, cluster):
        name = TRAINING_ROLE if purpose == "training" else SERVING_ROLE
        labels = {LABEL_TEAM: team.name, LABEL_PURPOSE: purpose}
        role = obj(RBAC_API, "Role", name, namespace=ns, labels=labels)
        role["rules"] = training_rules(policy, cluster) if purpose == "training" else serving_rules()
        binding = obj(RBAC_API, "RoleBinding", name, namespace=ns, labels=labels)
        binding["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
        binding["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups]
        out += [Manifest(cluster, "admission", role, sources), Manifest(cluster, "admission", binding, sources)]
    return out


TARGETS = (
    # ClusterRole(Binding) is deliberately not declared: AppProjects would allow-list it for good.
    Target("rbac", "admission", "team", passes=(lower_team_rbac,), kinds=(
        Kind(RBAC_API, "Role"),
        Kind(RBAC_API, "RoleBinding"),
    )),
)
