"""Builders for tests that port Kueue v0.19.2's own scheduler tests to compiler.tools.simulate.

Quantities are written as in the Go tests ("6", "3Gi", "500m") and converted like the simulator
(thousandths of a unit).
"""

from __future__ import annotations

from typing import Any, Sequence

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.flavors import assign
from compiler.tools.simulate.objects import (
    ClusterQueueSpec,
    CohortSpec,
    KueueSetup,
    Quota,
    ResourceGroup,
    milli,
)
from compiler.tools.simulate.preemption import get_targets

CPU, MEM, GPU = "cpu", "memory", "nvidia.com/gpu"


def quota(nominal: str, borrowing: str | None = None, lending: str | None = None) -> Quota:
    return Quota(milli(nominal), None if borrowing in (None, "") else milli(borrowing),
                 None if lending in (None, "") else milli(lending))


def cq(name: str, *groups: dict[str, dict[str, Quota]], cohort: str | None = None, within: str = "Never",
       reclaim: str = "Never", bwc: str = "Never", threshold: int | None = None, weight: float = 1.0,
       strategy: str = "BestEffortFIFO", when_borrow: str = "MayStopSearch",
       when_preempt: str = "TryNextFlavor", preference: str | None = None) -> ClusterQueueSpec:
    """``groups``: one dict per resource group, flavor -> {resource: Quota}, in flavor order."""
    rgs = []
    quotas = {}
    for g in groups:
        covered: list[str] = []
        for f, res in g.items():
            for r, q in res.items():
                quotas[(f, r)] = q
                if r not in covered:
                    covered.append(r)
        rgs.append(ResourceGroup(tuple(covered), tuple(g)))
    return ClusterQueueSpec(name, cohort, tuple(rgs), quotas, strategy, within, reclaim, bwc, threshold, weight,
                            when_borrow, when_preempt, preference)


def cohort(name: str, parent: str | None = None, weight: float = 1.0,
           quotas: dict[tuple[str, str], Quota] | None = None) -> CohortSpec:
    return CohortSpec(name, parent, dict(quotas or {}), weight)


def setup(cqs: list[ClusterQueueSpec], cohorts: Sequence[CohortSpec] = (), flavors: dict[str, dict[str, str]] | None = None,
          fair_sharing: bool = False, strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare",
                                                                     "LessThanInitialShare")) -> KueueSetup:
    s = KueueSetup("test")
    s.queues = {q.name: q for q in cqs}
    s.cohorts = {c.name: c for c in cohorts}
    for q in cqs:
        if q.cohort and q.cohort not in s.cohorts:
            s.cohorts[q.cohort] = CohortSpec(q.cohort)
    for c in list(s.cohorts.values()):
        if c.parent and c.parent not in s.cohorts:
            s.cohorts[c.parent] = CohortSpec(c.parent)
    all_flavors = {f for q in cqs for g in q.groups for f in g.flavors}
    s.flavors = {f: {} for f in sorted(all_flavors)}
    s.flavors.update(flavors or {})
    s.fair_sharing, s.strategies = fair_sharing, strategies
    return s


def cpu(amount: str, flavor: str = "default") -> dict[str, tuple[str, str]]:
    """An assignment of ``amount`` CPU on ``flavor`` (``admitted``), as the Go cases write it."""
    return {CPU: (flavor, amount)}


def wl(name: str, cq_name: str, requests: dict[str, str], priority: int = 0, created: float = 0.0,
       node_selector: dict[str, str] | None = None) -> Workload:
    return Workload(name, cq_name, {r: milli(v) for r, v in requests.items()}, priority, created,
                    dict(node_selector or {}))


def admitted(cl: Cluster, name: str, cq_name: str, assignment: dict[str, tuple[str, str]], priority: int = 0,
             at: float = 0.0, created: float = 0.0) -> Workload:
    """An admitted workload: ``assignment`` maps resource -> (flavor, amount)."""
    w = Workload(name, cq_name, {r: milli(a) for r, (_, a) in assignment.items()}, priority, created)
    cl.admit(w, {(f, r): milli(a) for r, (f, a) in assignment.items()}, at)
    return w


def targets(cl: Cluster, incoming: Workload, assignment: dict[str, tuple[str, str]]) -> set[tuple[str, str]]:
    """GetTargets for an assignment resource -> (flavor, mode), as in preemption_test.go."""
    frs = {(f, r) for r, (f, mode) in assignment.items() if mode == "Preempt"}
    usage = {(f, r): incoming.requests[r] for r, (f, _) in assignment.items()}
    return {(t.workload.key, t.reason) for t in get_targets(cl, incoming, frs, usage)}


def assignment_of(cl: Cluster, incoming: Workload) -> dict[str, Any]:
    a = assign(cl, incoming)
    return {"mode": a.mode(), "flavors": dict(a.flavors), "borrow": a.borrow}
