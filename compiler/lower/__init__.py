"""Stage 3, lower: the validated ``Policy`` → Kubernetes manifests, by pure passes.

Passes run per cluster (objects derived from the fleet) and per team and cluster (objects
derived from one team file), so an incremental build can re-run only what a change touches.
"""

from __future__ import annotations

from compiler.lower.argocd import lower_argocd
from compiler.lower.targets import CLUSTER_PASSES, TARGETS, TEAM_PASSES, ClusterPass, TeamPass
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy, Team

# The pass lists follow from the targets each lowering module declares (compiler/lower/targets.py).
__all__ = ["CLUSTER_PASSES", "TARGETS", "TEAM_PASSES", "ClusterPass", "TeamPass", "lower", "lower_all",
           "lower_cluster", "lower_delivery", "lower_team", "lower_team_unit"]


def lower_cluster(policy: Policy, cluster: str) -> list[Manifest]:
    out: list[Manifest] = []
    for p in CLUSTER_PASSES:
        out.extend(p(policy, cluster))
    return out


def lower_team(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    out: list[Manifest] = []
    for p in TEAM_PASSES:
        out.extend(p(policy, team, cluster))
    return out


def lower_team_unit(policy: Policy, team: Team) -> list[Manifest]:
    """One team's objects on every cluster, in the clusters' order: a team unit's
    (``compiler.pipeline.run``); lowering is pure, so lowering it again gives the same objects."""
    return [m for cluster in sorted(policy.clusters) for m in lower_team(policy, team, cluster)]


def lower(policy: Policy) -> list[Manifest]:
    return lower_all(policy)[0]


def lower_all(policy: Policy) -> tuple[list[Manifest], Inventory]:
    """Every object, sorted as in ``out/``, and the inventory the whole-output passes read."""
    out: list[Manifest] = []
    for cluster in sorted(policy.clusters):
        out.extend(lower_cluster(policy, cluster))
        for team in policy.teams:
            out.extend(lower_team(policy, team, cluster))
    inventory = Inventory.of(out)
    out.extend(lower_delivery(policy, inventory))
    return sorted(out, key=Manifest.sort_key), inventory


def lower_delivery(policy: Policy, inventory: Inventory) -> list[Manifest]:
    """The ArgoCD objects, derived from what the passes above produced (which components have
    files, their kinds and namespaces), counted into ``inventory``."""
    argocd = lower_argocd(policy, inventory)
    inventory.count += len(argocd)
    return argocd
