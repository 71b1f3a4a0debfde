"""Why a workload waits, in the policy's own terms.

Each failed attempt of a head is explained from the quota tree at that moment, for the resource
that blocked it: the team's guarantee in use, its borrowing limit reached, the cohort having
nothing left to lend (and to whom it is lent), its own guarantee lent out and waiting to be
reclaimed, or a request larger than the team could ever get. Workloads that never reach the head
of their queue wait "behind" the team's earlier or higher-priority jobs.
"""

from __future__ import annotations

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.objects import FR, shown
from compiler.tools.simulate.quota import VERSION, Node, borrowing, cq_available, potential_available

BEHIND = "queued behind {team}'s earlier or higher-priority jobs"


n = shown

_SEEN: dict[tuple[Node, FR, str], str] = {}
_SEEN_AT = [-1]


def borrowers(root: Node, fr: FR, exclude: str) -> str:
    """The ClusterQueues of the tree above their nominal quota of ``fr`` (but ``exclude``),
    kept while the tree's usage stands still."""
    if _SEEN_AT[0] != VERSION[0]:
        _SEEN.clear()
        _SEEN_AT[0] = VERSION[0]
    key = (root, fr, exclude)
    hit = _SEEN.get(key)
    if hit is None:
        hit = _SEEN[key] = _borrowers(root, fr, exclude)
    return hit


def _borrowers(root: Node, fr: FR, exclude: str) -> str:
    return ", ".join(sorted(q.name for q in borrowing(root, (fr,)) if q.name != exclude))


def explain_block(cl: Cluster, wl: Workload, fr: FR, val: int, preempting: bool = False) -> str:
    """The policy fact that blocks ``val`` of ``fr`` now. Only policy numbers appear (guarantees,
    limits), never the moment's usage, so that waits add up per cause."""
    node = cl.node(wl.cq)
    q = node.quotas.get(fr)
    nominal = q.nominal if q else 0
    used = node.usage.get(fr, 0)
    flavor, res = fr
    what = f"{flavor}" if res.endswith(flavor) else f"{res} on {flavor}"
    cap = potential_available(node, fr)
    team = wl.cq
    if val > cap:
        return (f"never fits: asks more {what} than {team} can ever reach ({n(cap)}: guarantee {n(nominal)}, "
                f"borrowing limit {'unlimited' if q is None or q.borrowing_limit is None else n(q.borrowing_limit)})")
    lenders_to = borrowers(node.root(), fr, team) if node.parent else ""
    if used + val <= nominal:
        tail = f" (borrowed by {lenders_to})" if lenders_to else ""
        if preempting:
            return f"reclaiming {team}'s lent guarantee of {n(nominal)} {what}{tail}"
        return f"{team}'s guarantee of {n(nominal)} {what} is lent to other teams{tail}"
    if q is not None and q.borrowing_limit is not None and used + val > nominal + q.borrowing_limit:
        if q.borrowing_limit == 0:
            return f"{team}'s guarantee of {n(nominal)} {what} in use (borrowing limit 0)"
        return f"{team}'s guarantee of {n(nominal)} {what} in use and borrowing limit {n(q.borrowing_limit)} reached"
    if node.parent is None:
        return f"{team}'s guarantee of {n(nominal)} {what} in use (no cohort to borrow from)"
    if preempting:
        return f"{team} preempting to borrow {what} in cohort {node.parent.name}"
    return (f"{team}'s guarantee of {n(nominal)} {what} in use and cohort {node.parent.name} has none to lend"
            + (f" (lent to {lenders_to})" if lenders_to else ""))


def explain_failure(cl: Cluster, wl: Workload, usage: dict[FR, int], reasons: list[str],
                    preempting: bool = False) -> str:
    """The first blocked resource of an attempt, explained; else Kueue's own reason."""
    spec = cl.spec(wl.cq)
    for res, val in sorted(wl.requests.items()):
        frs = [fr for fr in usage if fr[1] == res]
        if not frs:  # no flavor chosen: explain the first flavor covering the resource
            frs = [(f, res) for g in spec.groups if res in g.covered for f in g.flavors][:1]
        for fr in frs:
            if preempting or cq_available(cl.node(wl.cq), fr) < val:
                return explain_block(cl, wl, fr, val, preempting)
    return reasons[0] if reasons else "waiting for quota"
