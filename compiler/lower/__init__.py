"""Stage 3, lower: the validated ``Policy`` → Kubernetes manifests, by pure passes.

Passes run per cluster (objects derived from the fleet) and per team and cluster (objects
derived from one team file), so an incremental build can re-run only what a change touches.
"""

from __future__ import annotations

from typing import Callable

from compiler.model.inventory import Inventory
from compiler.lower.admission import lower_admission
from compiler.lower.argocd import lower_argocd
from compiler.lower.dra import lower_claim_templates, lower_device_classes
from compiler.lower.gpu_operator import lower_gpu_operator
from compiler.lower.kueue import lower_cohorts, lower_flavors, lower_priorities, lower_team_queues
from compiler.lower.multikueue import lower_multikueue
from compiler.lower.namespaces import lower_team_namespaces
from compiler.lower.nodes import lower_node_pools
from compiler.lower.rbac import lower_team_rbac
from compiler.lower.serving import lower_serving, lower_serving_priority
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy, Team

ClusterPass = Callable[[Policy, str], list[Manifest]]
TeamPass = Callable[[Policy, Team, str], list[Manifest]]

CLUSTER_PASSES: tuple[ClusterPass, ...] = (
    lower_flavors,
    lower_cohorts,
    lower_priorities,
    lower_multikueue,
    lower_gpu_operator,
    lower_device_classes,
    lower_node_pools,
    lower_serving_priority,
    lower_admission,
)
TEAM_PASSES: tuple[TeamPass, ...] = (
    lower_team_namespaces,
    lower_team_queues,
    lower_claim_templates,
    lower_serving,
    lower_team_rbac,
)


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
