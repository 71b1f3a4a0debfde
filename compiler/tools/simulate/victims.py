"""What preemption works with: targets, the preemptor's context, policies and candidate order.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied):
``pkg/scheduler/preemption/common/preemption_policy.go`` (LowerPriority, LowerOrNewerEqualPriority,
Any; the 5-minute timestamp buffer gate is off by default and not modelled),
``pkg/scheduler/preemption/common/ordering.go`` (CandidatesOrdering) and
``pkg/scheduler/preemption/preemption.go`` (workloadFits, fillBackWorkloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.objects import FR
from compiler.tools.simulate.quota import DRS, borrowing_with, cq_available

NEVER, WITHIN_CQ, HIERARCHICAL, RECLAIM_NO_BORROW, RECLAIM_BORROW = range(5)
REASONS = {WITHIN_CQ: "InClusterQueue", HIERARCHICAL: "InCohortReclamation",
           RECLAIM_NO_BORROW: "InCohortReclamation", RECLAIM_BORROW: "InCohortReclaimWhileBorrowing"}


@dataclass(frozen=True)
class Target:
    workload: Workload
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing


def satisfies_policy(preemptor: Workload, candidate: Workload, policy: str) -> bool:
    if policy == "LowerPriority":
        return preemptor.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and preemptor.created < candidate.created)
    return policy == "Any"


def candidate_order(preemptor_cq: str) -> Callable[[Workload], tuple[int, int, float, int, str]]:
    """CandidatesOrdering: other ClusterQueues first, lower priority, most recently admitted."""
    return lambda w: (w.cq == preemptor_cq, w.priority, -w.admitted_at, 0, w.key)


class Context:
    def __init__(self, cl: Cluster, wl: Workload, frs: set[FR], usage: dict[FR, int]) -> None:
        self.cl, self.wl, self.frs, self.usage = cl, wl, frs, usage
        self.cq = cl.node(wl.cq)
        self.spec = cl.spec(wl.cq)
        self.ancestors = {id(a) for a in self.cq.path_to_root()}
        self.after: dict[tuple[str, tuple[tuple[FR, int], ...]], DRS] = {}  # target shares, while unchanged

    def fits(self, allow_borrowing: bool) -> bool:
        for fr, v in self.usage.items():
            if not allow_borrowing and borrowing_with(self.cq, fr, v):
                return False
            if v > cq_available(self.cq, fr):
                return False
        return True

    def remove(self, w: Workload) -> None:
        self.cl.remove_usage_of(w)
        self.after.clear()

    def restore(self, targets: list[Target]) -> None:
        for t in targets:
            self.cl.add_usage_of(t.workload)

    def fill_back(self, targets: list[Target], allow_borrowing: bool) -> list[Target]:
        """Give back, newest first, the targets not needed after all (fillBackWorkloads)."""
        for i in range(len(targets) - 2, -1, -1):
            self.cl.add_usage_of(targets[i].workload)
            if self.fits(allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.cl.remove_usage_of(targets[i].workload)
        return targets


def enough(ctx: Context, cands: list[Workload]) -> bool:
    """A necessary condition, checked first for speed: removing every candidate frees at most
    their usage, so without it the workload cannot fit whatever the strategy picks."""
    for fr, v in ctx.usage.items():
        if fr in ctx.frs and cq_available(ctx.cq, fr) + sum(w.usage.get(fr, 0) for w in cands) < v:
            return False
    return True
