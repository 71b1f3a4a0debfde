"""Namespaces of each team on each cluster, labelled for Kueue, admission and audits."""

from __future__ import annotations

from compiler.lower.common import obj
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import Policy, Team, serving_namespace
from compiler.policy.labels import (
    DATA_CLASS_PREFIX,
    LABEL_DEFAULT_PRIORITY,
    LABEL_DEPARTMENT,
    LABEL_PURPOSE,
    LABEL_TEAM,
    PRIORITY_PREFIX,
)
from compiler.policy.priorities import team_priorities

# Argo CD never prunes these (docs/user-guide/sync-options.md "No Prune Resources"): a renamed or
# removed team must not take its Secrets, PVCs and model cache with it; deleting is a human step.
KEEP_ON_PRUNE = {"argocd.argoproj.io/sync-options": "Prune=false"}


def team_namespaces(team: Team, cluster: str) -> list[tuple[str, str]]:
    """(namespace, purpose) of a team on one cluster: training namespaces, then serving."""
    spec = team.model.spec
    out = [(ns.name, "training") for ns in spec.namespaces if cluster in ns.clusters]
    if any(s.cluster == cluster for s in spec.serving):
        out.append((serving_namespace(team.name, spec.serving_namespace), "serving"))
    return sorted(set(out))


def lower_team_namespaces(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    spec = team.model.spec
    out = []
    for name, purpose in team_namespaces(team, cluster):
        labels = {
            LABEL_TEAM: team.name,
            LABEL_DEPARTMENT: spec.department,
            LABEL_PURPOSE: purpose,
        }
        for dc in sorted(spec.data_classes):
            labels[DATA_CLASS_PREFIX + dc] = "true"
        if purpose == "training":  # the tiers admission lets its jobs name (compiler.lower.admission_priority)
            prio = team_priorities(policy, team)
            if prio.tier is not None:
                labels[LABEL_DEFAULT_PRIORITY] = prio.tier
            for tier in prio.allowed:
                labels[PRIORITY_PREFIX + tier] = "true"
        ns = obj("v1", "Namespace", name, labels=labels, annotations=KEEP_ON_PRUNE)
        out.append(Manifest(cluster, "namespaces", ns, (policy.fleet_src.path, team.path)))
    return out


TARGETS = (
    Target("namespaces", "namespaces", "team", passes=(lower_team_namespaces,), kinds=(
        Kind("v1", "Namespace", "cluster"),
    )),
)
