"""The DeviceClasses a DRA cluster gets and what Kueue counts for them: generated and fleet-declared
``DraClass``es, the ``deviceClassMappings`` (``gpupolicy.dev/<class>``) of the queued classes, and
the ResourceClaimTemplate shapes (devices per claim) each team's budget allows, with their names.

Read by lowering (``compiler.lower.dra``, the Kueue manager Configuration), the DRA rules and the
DRA report; objects are built in ``compiler.lower.dra``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.dra.accounting import dra_active, dra_counts
from compiler.dra.selectors import class_selector
from compiler.policy.classes import GpuClass, dra_resource
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.policy.multikueue_topology import workers_of

SHAPES = (1, 2, 4, 8, 16)  # devices per claim; one claim is always allocated on one node


@dataclass(frozen=True)
class DraClass:
    """A DeviceClass gpupolicy writes: generated for a GPU class, or declared in the fleet file."""

    name: str
    budget_class: str  # the GPU class its claims count against
    selectors: tuple[str, ...]
    custom: bool


@per_policy
def device_classes(policy: Policy, cluster: str) -> list[DraClass]:
    """Every DeviceClass of a DRA cluster, generated first (sorted), then the fleet's own. On a
    MultiKueue manager of DRA workers: its workers' (the manager maps and references them, it
    does not create them)."""
    c = policy.clusters[cluster]
    if not dra_active(c):
        if not dra_counts(c):
            return []
        seen: dict[str, DraClass] = {}
        for w in workers_of(c):
            if w in policy.clusters:
                for dc in device_classes(policy, w):
                    seen.setdefault(dc.name, dc)
        return [dc for dc in seen.values() if dc.budget_class in policy.classes.get(cluster, {})]
    out = []
    for cls in policy.classes.get(cluster, {}).values():
        if cls.slices and (expr := class_selector(cls, c, policy.catalog)) is not None:
            out.append(DraClass(cls.id, cls.id, (expr,), False))
    out += [DraClass(d.name, d.class_, tuple(d.selectors), True) for d in c.device_classes]
    return out


def queued_classes(policy: Policy, cluster: str) -> set[str]:
    """GPU classes some team's ClusterQueue covers on the cluster (training pools, a budget)."""
    # per class, not per allocation entry: asked once per team and cluster (via manager_config)
    return {cid for cid, cls in policy.classes.get(cluster, {}).items()
            if cls.training_pools and policy.allocation.for_class(cluster, cid)}


def device_class_mappings(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    """Kueue ``resources.deviceClassMappings``: one entry per queued class, listing its generated
    DeviceClass and the fleet's classes that count against it. Classes no queue covers stay
    unmapped (Kueue allows 16 mappings): Kueue rejects a workload whose claim names an unmapped
    DeviceClass, as it rejects one asking for a resource its queue does not cover
    (BlockUndeclared). The driver chart's gpu.nvidia.com / mig.nvidia.com stay unmapped too."""
    queued = queued_classes(policy, cluster)
    names: dict[str, list[str]] = {}
    for dc in device_classes(policy, cluster):
        if dc.budget_class in queued:
            names.setdefault(dc.budget_class, []).append(dc.name)
    return [{"name": dra_resource(cid), "deviceClassNames": names[cid]} for cid in sorted(names)]


def claim_template_name(device_class: str, count: int) -> str:
    return f"{device_class}-{count}"


def team_shapes(policy: Policy, team: Team, cluster: str) -> list[tuple[DraClass, int]]:
    """(DeviceClass, devices per claim) the team's budgets allow: full cards in powers of two up
    to one node's worth and the team's guarantee plus borrowing; MIG slices one per claim (a
    CUDA process sees a single MIG device)."""
    classes = policy.classes.get(cluster, {})
    out = []
    by_budget: dict[str, list[DraClass]] = {}
    for dc in device_classes(policy, cluster):
        by_budget.setdefault(dc.budget_class, []).append(dc)
    for e in policy.allocation.for_team(team.name):
        cls = classes.get(e.gpu_class)
        if e.cluster != cluster or cls is None or not cls.training_pools:
            continue
        reach = _max_claim(cls, e.guaranteed.value or 0, e.borrow.value)
        for dc in by_budget.get(cls.id, []):
            out += [(dc, n) for n in SHAPES if n <= reach]
    return out


def _max_claim(cls: GpuClass, guaranteed: int, borrow: int | None) -> int:
    node = max(s.per_node for s in cls.slices if not s.serving)
    if cls.mode.max_devices_per_claim is not None:  # MIG: one slice per claim
        node = min(node, cls.mode.max_devices_per_claim)
    team = node if borrow is None else guaranteed + borrow
    return min(node, team)
