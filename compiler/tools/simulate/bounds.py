"""A cheap, sound test that a preemption search cannot find targets, run before the search.

Both of Kueue v0.19.2's searches (pkg/scheduler/preemption/preemption.go: classicalPreemptions and
fairPreemptions) only ever remove workloads from a candidate set, and succeed only once the
preemptor's request fits (``workloadFits``). Removing a workload frees at most its own usage, so
if the unused quota plus every candidate's usage is below the request the search returns no
targets (``victims.enough`` states the same condition over an explicit candidate list). Here the
candidate usage is summed from ``Cluster.held`` (usage per ClusterQueue and priority) instead of a
walk over admitted workloads, over a superset of the candidates:

- classical: the preemptor's own ClusterQueue (``withinClusterQueue``) and, with
  ``reclaimWithinCohort``, every other ClusterQueue of the tree above its nominal quota;
- fair sharing: the same, and, unless the preemptor stays within its nominal quota
  (``FairSharingPreemptWithinNominal``: then any candidate goes), only ClusterQueues whose side of
  the tree could pass a strategy: both strategies need the preemptor side's share (with its
  request) at most the target side's current share, target shares only fall as the search removes
  workloads, and the preemptor side's share is bounded below by removing every candidate's usage
  in its subtree (``fairsharing/strategy.go``, ``least_common_ancestor.go``);
- and what the preemptor could get is capped by its own ``borrowingLimit`` whatever others free:
  ``available`` (pkg/cache/scheduler/resource_node.go) never exceeds nominal + borrowing limit
  minus the ClusterQueue's own usage (less its own candidates).

``LowerOrNewerEqualPriority`` counts equal priorities (a superset). When this test says nothing,
the real search runs.
"""

from __future__ import annotations

import math
from typing import Any

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.objects import FR
from compiler.tools.simulate.quota import (
    VERSION,
    Node,
    add_all,
    borrowing,
    compare_drs,
    cq_available,
    drs,
    remove_all,
)

NO_LIMIT = 1 << 62


def _ceiling(policy: str, priority: int) -> int | None:
    """The highest candidate priority a policy allows (exclusive), None for none at all."""
    if policy == "LowerPriority":
        return priority
    if policy == "LowerOrNewerEqualPriority":
        return priority + 1
    if policy == "Any":
        return NO_LIMIT
    return None


def _held(cl: Cluster, cq: str, fr: FR, ceiling: int) -> int:
    return sum(v for p, v in cl.held[cq].get(fr, {}).items() if p < ceiling)


def _others(cl: Cluster, wl: Workload, frs: set[FR]) -> list[Node]:
    """Other ClusterQueues of the tree that may hold candidates (above nominal in ``frs``)."""
    me = cl.node(wl.cq)
    if me.parent is None:
        return []
    return [q for q in borrowing(cl.roots[wl.cq], frs) if q is not me and q.parent is not None]


def _side(n: Node, lca: Node) -> Node:
    """The child of ``lca`` on ``n``'s path (``n`` itself when it is the child)."""
    while n.parent is not lca:
        assert n.parent is not None
        n = n.parent
    return n


def _eligible(cl: Cluster, wl: Workload, usage: dict[FR, int], others: list[Node],
              cands: dict[str, dict[FR, int]]) -> list[Node]:
    """ClusterQueues whose side of the tree could pass a fair-sharing strategy (see the docstring).
    The request is added as the search adds it (only what exceeds local quotas reaches a Cohort);
    every candidate below the preemptor's side is taken off in full (a removal takes off at most
    that much), so the preemptor side's share is a lower bound."""
    cl.drs_reads += 1
    me = cl.node(wl.cq)
    mine = set(map(id, me.path_to_root()))
    out = []
    add_all(me, usage)
    try:
        for q in others:
            lca = q.parent
            while lca is not None and id(lca) not in mine:
                lca = lca.parent
            assert lca is not None
            pre, tgt = _side(me, lca), _side(q, lca)
            extra: dict[FR, int] = {}
            for c in pre.subtree_cqs():
                for fr, v in cands.get(c.name, {}).items():
                    extra[fr] = extra.get(fr, 0) - v
            low, old = drs(pre, extra), drs(tgt)
            if low.share() == math.inf and old.share() != math.inf:
                continue
            if compare_drs(low, old) <= 0:
                out.append(q)
    finally:
        remove_all(me, usage)
    return out


_SEEN: dict[tuple[object, ...], tuple[list[Node], dict[str, dict[FR, int]]]] = {}
_SEEN_AT = [-1]


def _candidates(cl: Cluster, wl: Workload, frs: set[FR]) -> tuple[list[Node], dict[str, dict[FR, int]]]:
    """(other ClusterQueues holding candidates, candidate usage per ClusterQueue and fr), kept
    while the tree's usage stands still (workloads of one queue and priority share them)."""
    if _SEEN_AT[0] != VERSION[0]:
        _SEEN.clear()
        _SEEN_AT[0] = VERSION[0]
    key = (cl.node(wl.cq), tuple(sorted(frs)), wl.priority)  # the node: its identity is the cluster's
    hit = _SEEN.get(key)
    if hit is not None:
        return hit
    spec = cl.spec(wl.cq)
    own = _ceiling(spec.within_cq, wl.priority)
    reclaim = _ceiling(spec.reclaim, wl.priority)
    others = _others(cl, wl, frs) if reclaim is not None else []
    cands: dict[str, dict[FR, int]] = {}
    if own is not None:
        cands[wl.cq] = {fr: _held(cl, wl.cq, fr, own) for fr in frs}
    for q in others:
        assert reclaim is not None
        cands[q.name] = {fr: _held(cl, q.name, fr, reclaim) for fr in frs}
    _SEEN[key] = others, cands
    return others, cands


_KNOWN: dict[tuple[object, ...], list[Any]] = {}  # key -> [versions, (smallest bounded, read shares), (largest not)]


def no_targets(cl: Cluster, wl: Workload, frs: set[FR], usage: dict[FR, int]) -> bool:
    """True when no preemption search (classical or fair) can find targets for ``usage``.

    For one flavor-resource the answer is monotone in the request (a larger one frees nothing more
    and raises the preemptor's share), and it depends only on that flavor-resource's usage in the
    tree and on who borrows (the shares), so while their versions stand still
    (``Cluster.fr_version``, ``borrow_version``: real admissions and releases, not a search's
    what-ifs) the smallest request known bounded and the largest known not bounded answer the
    requests around them."""
    if len(usage) != 1 or len(frs) != 1:
        return _no_targets(cl, wl, frs, usage)
    (fr, v), = usage.items()
    if fr not in frs:
        return _no_targets(cl, wl, frs, usage)
    root = cl.roots[wl.cq].name
    versions = (cl.fr_version.get((root, fr), 0), cl.borrow_version.get(root, 0))
    key = (cl.node(wl.cq), fr, wl.priority)
    known = _KNOWN.get(key)
    if known is None or known[0] != versions:
        if len(_KNOWN) > 10_000:
            _KNOWN.clear()
        known = _KNOWN[key] = [versions, (NO_LIMIT, False), (-1, False)]
    if v >= known[1][0] or v <= known[2][0]:
        bounded, shares = (True, known[1][1]) if v >= known[1][0] else (False, known[2][1])
        cl.drs_reads += shares
        return bounded
    reads = cl.drs_reads
    out = _no_targets(cl, wl, frs, usage)
    known[1 if out else 2] = (v, cl.drs_reads != reads)
    return out


def _no_targets(cl: Cluster, wl: Workload, frs: set[FR], usage: dict[FR, int]) -> bool:
    me = cl.node(wl.cq)
    others, cands = _candidates(cl, wl, frs)

    def short(qs: list[str]) -> bool:
        for fr, v in usage.items():
            if fr not in frs:
                continue
            most = cq_available(me, fr) + sum(cands[q].get(fr, 0) for q in qs)
            quota = me.quotas.get(fr)
            if quota is not None and quota.borrowing_limit is not None:  # others' removals cannot lift it
                own = cands.get(wl.cq, {}).get(fr, 0)
                most = min(most, me.subtree.get(fr, 0) + quota.borrowing_limit - me.usage.get(fr, 0) + own)
            if most < v:
                return True
        return False

    if short(list(cands)):
        return True
    if not cl.fair_sharing or not others:
        return False
    # FairSharingPreemptWithinNominal: within nominal (with the request), any candidate goes
    if all(me.subtree.get(fr, 0) >= me.usage.get(fr, 0) + usage.get(fr, 0) for fr in frs):
        return False
    keep = [q.name for q in _eligible(cl, wl, usage, others, cands)]
    return short(([wl.cq] if wl.cq in cands else []) + keep)
