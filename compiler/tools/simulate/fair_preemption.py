"""Fair-sharing preemption, as Kueue v0.19.2 chooses targets.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied): ``pkg/scheduler/preemption/
preemption.go`` (fairPreemptions, runFirstFsStrategy, runSecondFsStrategy, findCandidates) and
``pkg/scheduler/preemption/fairsharing/{ordering,target,strategy,least_common_ancestor}.go``, with
the FairSharingPreemptWithinNominal gate on (beta, default).
"""

from __future__ import annotations

from compiler.tools.simulate.cluster import Workload
from compiler.tools.simulate.quota import (
    DRS,
    NEGATIVE_DRS,
    Node,
    add_all,
    borrowing,
    borrowing_with,
    compare_drs,
    drs,
    remove_all,
)
from compiler.tools.simulate.victims import Context, Target, candidate_order, enough, satisfies_policy


def _share(n: Node) -> DRS:
    return drs(n)


class _Ordering:
    """TargetClusterQueueOrdering: repeatedly descend from the root to the child with the highest
    share until a ClusterQueue with candidates is reached."""

    def __init__(self, ctx: Context, candidates: list[Workload]) -> None:
        self.ctx = ctx
        self.ancestors = set(map(id, ctx.cq.path_to_root()))
        self.by_cq: dict[str, list[Workload]] = {}
        for c in candidates:
            self.by_cq.setdefault(c.cq, []).append(c)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[str] = set()
        self.kids: dict[Node, list[Node]] | None = None  # per cohort: its ClusterQueues with candidates

    def with_candidates(self, cohort: Node) -> list[Node]:
        """``cohort``'s child ClusterQueues that had candidates: the others are pruned at their
        first visit (``next_target``), so leaving them out changes no choice, and a cohort of 500
        queues is not walked at every step of every search. In no particular order: the choice is
        the largest share, ties broken by the first candidates' keys, which are unique."""
        if self.kids is None:
            self.kids = {}
            for name in self.by_cq:
                q = self.ctx.cl.node(name)
                if q.parent is not None:
                    self.kids.setdefault(q.parent, []).append(q)
        return self.kids.get(cohort, [])

    def has(self, cq: str) -> bool:
        return bool(self.by_cq.get(cq))

    def pop(self, cq: str) -> Workload:
        return self.by_cq[cq].pop(0)

    def next_target(self, cohort: Node) -> Node | None:
        best_cq: Node | None = None
        best_cq_drs = NEGATIVE_DRS
        key = candidate_order(self.ctx.wl.cq)
        for q in self.with_candidates(cohort):
            if q.name in self.pruned_cqs:
                continue
            d = _share(q)
            if (not d.borrowing and q is not self.ctx.cq) or not self.has(q.name):
                self.pruned_cqs.add(q.name)
            elif best_cq is not None and compare_drs(d, best_cq_drs) == 0:
                if key(self.by_cq[q.name][0]) < key(self.by_cq[best_cq.name][0]):
                    best_cq = q
            elif compare_drs(d, best_cq_drs) == 1:
                best_cq, best_cq_drs = q, d
        best_co: Node | None = None
        best_co_drs = NEGATIVE_DRS
        for c in cohort.child_cohorts:
            if c.name in self.pruned_cohorts:
                continue
            d = _share(c)
            if not d.borrowing and id(c) not in self.ancestors:
                self.pruned_cohorts.add(c.name)
            elif compare_drs(d, best_co_drs) >= 0:
                best_co, best_co_drs = c, d
        if best_co is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_co is not None and compare_drs(best_co_drs, best_cq_drs) >= 0:
            return self.next_target(best_co)
        return best_cq

    def step(self) -> tuple[bool, Node | None]:
        """(exhausted, the next target ClusterQueue or None to look again), as ``Iter``."""
        cq = self.ctx.cq
        if cq.parent is None:
            if cq.name in self.pruned_cqs or not self.has(cq.name):
                return True, None
            return False, cq
        root = cq.root()
        if root.name in self.pruned_cohorts:
            return True, None
        return False, self.next_target(root)


def _almost_lca(cq: Node, lca: Node) -> Node:
    prev = cq
    for anc in cq.path_to_root():
        if anc is lca:
            return prev
        prev = anc
    raise AssertionError("no common ancestor")


def _shares(ctx: Context, target: Node) -> tuple[DRS, DRS]:
    lca = next(a for a in target.path_to_root() if id(a) in ctx.ancestors)
    return _share(_almost_lca(ctx.cq, lca)), _share(_almost_lca(target, lca))


def _target_share_after(ctx: Context, target: Node, w: Workload) -> DRS:
    """The target's share without ``w`` (workloads of equal usage give equal shares: memoised
    until the next removal)."""
    key = (target.name, tuple(sorted(w.usage.items())))
    hit = ctx.after.get(key)
    if hit is not None:
        return hit
    remove_all(target, w.usage)
    try:
        ctx.after[key] = out = _shares(ctx, target)[1]
        return out
    finally:
        add_all(target, w.usage)


def _strategy(name: str, new_pre: DRS, old_tgt: DRS, new_tgt: DRS) -> bool:
    if name == "LessThanInitialShare":
        return compare_drs(new_pre, old_tgt) < 0
    return compare_drs(new_pre, new_tgt) <= 0  # LessThanOrEqualToFinalShare


def _fits_fs(ctx: Context) -> bool:
    remove_all(ctx.cq, ctx.usage)
    try:
        return ctx.fits(True)
    finally:
        add_all(ctx.cq, ctx.usage)


def _first(ctx: Context, cands: list[Workload], strategy: str) -> tuple[bool, list[Target], list[Workload]]:
    order = _Ordering(ctx, cands)
    targets: list[Target] = []
    retry: list[Workload] = []
    # queueWithinNominalInResourcesNeedingPreemption, with the preemptor's usage already added
    within = all(not borrowing_with(ctx.cq, fr, 0) for fr in ctx.frs)
    while True:
        done, t = order.step()
        if done:
            break
        if t is None:
            continue
        if t is ctx.cq or within:
            w = order.pop(t.name)
            ctx.remove(w)
            targets.append(Target(w, "InClusterQueue" if t is ctx.cq else "InCohortReclamation"))
            if _fits_fs(ctx):
                return True, targets, []
            continue
        new_pre, old_tgt = _shares(ctx, t)
        if new_pre.share() == float("inf") and old_tgt.share() != float("inf"):
            while order.has(t.name):
                retry.append(order.pop(t.name))
            continue
        while order.has(t.name):
            w = order.pop(t.name)
            new_tgt = _target_share_after(ctx, t, w)
            if _strategy(strategy, new_pre, old_tgt, new_tgt):
                ctx.remove(w)
                targets.append(Target(w, "InCohortFairSharing"))
                if _fits_fs(ctx):
                    return True, targets, []
                break
            retry.append(w)
    return False, targets, retry


def _second(ctx: Context, retry: list[Workload], targets: list[Target]) -> bool:
    order = _Ordering(ctx, retry)
    while True:
        done, t = order.step()
        if done:
            return False
        if t is None:
            continue
        new_pre, old_tgt = _shares(ctx, t)
        w = order.pop(t.name)
        if compare_drs(new_pre, old_tgt) < 0:
            ctx.remove(w)
            targets.append(Target(w, "InCohortFairSharing"))
            if _fits_fs(ctx):
                return True
        order.pruned_cqs.add(t.name)


def fair_candidates(ctx: Context) -> list[Workload]:
    out: list[Workload] = []
    spec = ctx.spec
    if spec.within_cq != "Never":
        out += [w for w in ctx.cl.admitted[ctx.wl.cq].values()
                if satisfies_policy(ctx.wl, w, spec.within_cq) and w.uses_any(ctx.frs)]
    if ctx.cq.parent is not None and spec.reclaim != "Never":
        for q in borrowing(ctx.cq.root(), ctx.frs):  # above quota in a resource needing preemption
            if q is ctx.cq or q.parent is None:
                continue
            out += [w for w in ctx.cl.admitted[q.name].values()
                    if satisfies_policy(ctx.wl, w, spec.reclaim) and w.uses_any(ctx.frs)]
    return out


def fair_preemptions(ctx: Context) -> list[Target]:
    cands = fair_candidates(ctx)
    if not cands or not enough(ctx, cands):
        return []
    ctx.cl.drs_reads += 1  # what follows compares shares: the result depends on them
    cands.sort(key=candidate_order(ctx.wl.cq))
    add_all(ctx.cq, ctx.usage)
    fits, targets, retry = _first(ctx, cands, ctx.cl.strategies[0])
    if not fits and len(ctx.cl.strategies) > 1:
        fits = _second(ctx, retry, targets)
    remove_all(ctx.cq, ctx.usage)
    if not fits:
        ctx.restore(targets)
        return []
    targets = ctx.fill_back(targets, True)
    ctx.restore(targets)
    return targets
