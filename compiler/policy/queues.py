"""Each team's ClusterQueue as the policy decides it: the training namespaces it admits from and its
resource groups (nominal quota, borrowing and lending limits per class, grouped by resource name).
Read by lowering (``compiler.lower.kueue``) and ``admit``'s replay of Kueue's flavor assignment.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compiler.policy.allocation import TeamAllocation
from compiler.policy.graph import Policy, Team


def _resource_entry(e: TeamAllocation, resource: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": e.guaranteed.value or 0}
    # unset/unlimited -> field absent (Kueue: null = unlimited); 0 and N are written out.
    if e.borrow.value is not None:
        entry["borrowingLimit"] = e.borrow.value
    if e.lend.value is not None:
        entry["lendingLimit"] = min(e.lend.value, e.guaranteed.value or 0)
    return entry


def resource_groups(policy: Policy, cluster: str, entries: list[TeamAllocation]) -> list[dict[str, Any]]:
    """One group per resource name; its flavors are the team's classes that use it.

    Kueue requires each flavor to list every covered resource in order and forbids a flavor
    or resource in two groups; grouping by resource satisfies both by construction."""
    classes = policy.classes.get(cluster, {})
    by_resource: dict[str, list[tuple[str, TeamAllocation]]] = defaultdict(list)
    for e in entries:
        cls = classes.get(e.gpu_class)
        if cls is not None and cls.training_pools:
            by_resource[cls.resource].append((cls.id, e))
    groups = []
    for resource in sorted(by_resource):
        flavors = [
            {"name": cid, "resources": [_resource_entry(e, resource)]}
            for cid, e in sorted(by_resource[resource], key=lambda x: x[0])
        ]
        groups.append({"coveredResources": [resource], "flavors": flavors})
    return groups


def training_namespaces(team: Team, cluster: str) -> list[str]:
    return sorted({ns.name for ns in team.model.spec.namespaces if cluster in ns.clusters})
