"""Which admitted workloads Kueue v0.19.2 would preempt for a pending one.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied):

- classical preemption: ``pkg/scheduler/preemption/preemption.go`` (classicalPreemptions,
  fillBackWorkloads, workloadFits, queueUnderNominalInResourcesNeedingPreemption) and
  ``pkg/scheduler/preemption/classical/{candidate_generator,hierarchical_preemption}.go``
  (candidate collection over the cohort tree, hierarchical advantage, preemption variants,
  ``borrowWithinCohort`` with ``maxPriorityThreshold``);
- policies, candidate order and fits: ``compiler.tools.simulate.victims``;
- fair sharing: ``compiler.tools.simulate.fair_preemption``.
"""

from __future__ import annotations

from compiler.tools.simulate.cluster import Cluster, Workload, shape
from compiler.tools.simulate.fair_preemption import fair_preemptions
from compiler.tools.simulate.objects import FR
from compiler.tools.simulate.quota import Node, fits_in_quota, within_nominal
from compiler.tools.simulate.victims import (
    HIERARCHICAL,
    NEVER,
    REASONS,
    RECLAIM_BORROW,
    RECLAIM_NO_BORROW,
    WITHIN_CQ,
    Context,
    Target,
    candidate_order,
    enough,
    satisfies_policy,
)

__all__ = ["Target", "get_targets", "classical_preemptions"]


def get_targets(cl: Cluster, wl: Workload, frs: set[FR], usage: dict[FR, int]) -> list[Target]:
    """The workloads to preempt for ``wl`` to take ``usage`` (empty: it cannot). On the fast path
    a search is memoised against the set of admissions in the preemptor's tree
    (``Cluster.admitted_digest``), which fixes every usage, candidate and order the search reads,
    and ``shape``, which fixes what it reads of the preemptor: at 1,000 teams under a deep
    backlog ~45% of the fair-sharing searches of a replay met a set seen before."""
    if not cl.fast:
        return _search(cl, wl, frs, usage)
    root = cl.roots[wl.cq].name
    key = (root, cl.admitted_digest.get(root, 0), shape(cl, wl), frozenset(frs), tuple(sorted(usage.items())))
    hit = cl.searches.get(key)
    if hit is not None:
        targets, compared = hit
        cl.drs_reads += compared  # as the search did: the failure memo keys on whether it compared shares
        return list(targets)
    reads = cl.drs_reads
    out = _search(cl, wl, frs, usage)
    if len(cl.searches) >= SEARCHES_KEPT:
        cl.searches.clear()
    cl.searches[key] = (list(out), cl.drs_reads != reads)
    return out


SEARCHES_KEPT = 1 << 14  # then start again: a replay's working set of states is far smaller


def _search(cl: Cluster, wl: Workload, frs: set[FR], usage: dict[FR, int]) -> list[Target]:
    ctx = Context(cl, wl, frs, usage)
    return fair_preemptions(ctx) if cl.fair_sharing else classical_preemptions(ctx)



# --- classical -----------------------------------------------------------------------------

def _variant(ctx: Context, cand: Workload, advantage: bool) -> int:
    if not cand.uses_any(ctx.frs):
        return NEVER
    same = cand.cq == ctx.wl.cq
    policy = ctx.spec.within_cq if same else ctx.spec.reclaim
    if not satisfies_policy(ctx.wl, cand, policy):
        return NEVER
    if same:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL
    if ctx.spec.borrow_within == "Never":
        return RECLAIM_NO_BORROW
    threshold = ctx.spec.borrow_threshold
    if cand.priority >= ctx.wl.priority or (threshold is not None and cand.priority > threshold):
        return RECLAIM_NO_BORROW
    return RECLAIM_BORROW


Elem = tuple[Workload, Node | None, int]  # candidate, lowest common ancestor, variant


def _from_cq(ctx: Context, cq: str, lca: Node | None, advantage: bool) -> list[Elem]:
    out: list[Elem] = []
    for w in ctx.cl.admitted[cq].values():
        v = _variant(ctx, w, advantage)
        if v != NEVER:
            out.append((w, lca, v))
    return out


def _in_subtree(ctx: Context, cur: Node, root: Node, skip: Node | None, adv: bool, out: list[Elem]) -> None:
    for child in cur.child_cohorts:
        if child is skip or within_nominal(child, ctx.frs):
            continue
        _in_subtree(ctx, child, root, skip, adv, out)
    for q in cur.child_cqs:
        if q is not ctx.cq and not within_nominal(q, ctx.frs):
            out.extend(_from_cq(ctx, q.name, root, adv))


def _hierarchical(ctx: Context) -> tuple[list[Elem], list[Elem]]:
    hier: list[Elem] = []
    prio: list[Elem] = []
    if ctx.cq.parent is None or ctx.spec.reclaim == "Never":
        return hier, prio
    advantage, remaining = fits_in_quota(ctx.cq, ctx.usage)
    previous: Node | None = None
    for root in ctx.cq.path_to_root():
        _in_subtree(ctx, root, root, previous, advantage, hier if advantage else prio)
        fits, remaining = fits_in_quota(root, remaining)
        advantage = advantage or fits
        previous = root
    return hier, prio


def _valid(ctx: Context, elem: Elem, borrow: bool) -> bool:
    w, lca, variant = elem
    if w.cq == ctx.wl.cq:
        return True
    if borrow and variant == RECLAIM_NO_BORROW:
        return False
    node = ctx.cl.node(w.cq)
    if within_nominal(node, ctx.frs):
        return False
    for anc in node.path_to_root():
        if anc is lca:
            break
        if within_nominal(anc, ctx.frs):
            return False
    return True


def classical_preemptions(ctx: Context) -> list[Target]:
    same = _from_cq(ctx, ctx.wl.cq, None, False) if ctx.spec.within_cq != "Never" else []
    hier, prio = _hierarchical(ctx)
    key = candidate_order(ctx.wl.cq)
    same.sort(key=lambda e: key(e[0]))
    hier.sort(key=lambda e: key(e[0]))
    prio.sort(key=lambda e: key(e[0]))
    candidates = hier + prio + same  # no workload is "evicted but still admitted" in the replay
    if not candidates or not enough(ctx, [e[0] for e in candidates]):
        return []
    forbidden = ctx.spec.borrow_within == "Never"
    under_nominal = all(ctx.cq.quotas.get(fr) is not None and ctx.cq.quotas[fr].nominal > ctx.cq.usage.get(fr, 0)
                        for fr in ctx.frs)
    if (not hier and not prio) or (forbidden and not under_nominal):
        attempts = [True]
    elif forbidden and not hier:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        targets: list[Target] = []
        for elem in candidates:
            if not _valid(ctx, elem, borrow):
                continue
            ctx.remove(elem[0])
            targets.append(Target(elem[0], REASONS[elem[2]]))
            if ctx.fits(borrow):
                targets = ctx.fill_back(targets, borrow)
                ctx.restore(targets)
                return targets
        ctx.restore(targets)
    return []
