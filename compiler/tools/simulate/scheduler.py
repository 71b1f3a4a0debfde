"""One Kueue v0.19.2 scheduling cycle over the heads of the ClusterQueues.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied): ``pkg/scheduler/scheduler.go``
(schedule, nominate, processEntry, fits, quotaResourcesToReserve,
reserveCapacityForUnreclaimablePreempt, the classical iterator) and
``pkg/scheduler/fair_sharing_iterator.go`` (the tournament over the cohort tree, DRS including the
candidate workload, FairSharingPrioritizeNonBorrowing on by default).

The cycle works on the live cluster state as Kueue works on its snapshot: each entry is nominated
(flavors and preemption targets) against the state at the start of the cycle, then entries are
processed in order; an entry admitted earlier in the cycle takes quota from later ones, whose
fit is checked again (``fits``, with the targets of earlier preemptions removed). Usage that is
only a reservation for the cycle (a preemptor's, or quota held for a preemptor without
candidates) is undone at the end. Preemption victims are evicted at once (Kueue waits for their
pods to terminate; the replay has no such delay).

Fast path (``Cluster.fast``, off for the reference mode the tests compare against): a nomination
that failed (no fit, or preemption without targets) is memoised per ClusterQueue and workload
shape against the versions of what it read (``deps``: the usage of its flavor-resources in its
tree, and the borrowing in the tree when a search compared shares), and reused while they stand
still. When at most one entry of a cycle can do anything and no failed entry holds quota for the
cycle, the processing order cannot matter, so the fair-sharing tournament is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.tools.simulate.bounds import no_targets
from compiler.tools.simulate.cluster import Cluster, Workload, shape
from compiler.tools.simulate.flavors import Assignment, assign
from compiler.tools.simulate.objects import FR
from compiler.tools.simulate.preemption import Target, get_targets
from compiler.tools.simulate.quota import (
    DRS,
    Node,
    add_all,
    compare_drs,
    cq_available,
    drs,
    lowest_subtree_that_fits,
    remove_all,
)


@dataclass
class Entry:
    wl: Workload
    assignment: Assignment
    targets: list[Target] = field(default_factory=list)
    status: str = ""  # admitted | preempting | nofit | no-candidates | skipped
    usage: dict[FR, int] = field(default_factory=dict)


def deps(cl: Cluster, wl: Workload) -> tuple[int, ...]:
    """Versions of the usage of every flavor-resource ``wl`` could be assigned, in its tree."""
    key = shape(cl, wl)
    frs = cl.dep_keys.get(key)
    if frs is None:
        root = cl.roots[wl.cq].name
        frs = cl.dep_keys[key] = [(root, (f, r)) for g in cl.spec(wl.cq).groups
                                  for r in g.covered if r in wl.requests for f in g.flavors]
    version = cl.fr_version
    return tuple([version.get(k, 0) for k in frs])


def _failed(e: Entry) -> bool:
    mode = e.assignment.final_mode()
    return mode == "NoFit" or (mode == "Preempt" and not e.targets)


def _values(cl: Cluster, wl: Workload) -> tuple[tuple[int, int, bool], ...]:
    """What flavor assignment reads of the state, per flavor-resource the workload could get: the
    unused quota and the borrowing level of its request (``flavors._fits_quota``)."""
    node = cl.node(wl.cq)
    return tuple((cq_available(node, fr), *lowest_subtree_that_fits(node, fr, wl.requests[fr[1]]))
                 for _, fr in cl.dep_keys[shape(cl, wl)])


def _still_no_targets(cl: Cluster, wl: Workload, a: Assignment, usage: dict[FR, int]) -> bool:
    """Whether every preemption search the memoised assignment consulted is still bounded empty."""
    if not all(not targets and no_targets(cl, wl, {fr}, {fr: val}) for (fr, val), targets in a.oracle.items()):
        return False
    if a.final_mode() != "Preempt":
        return True
    single = next(iter(usage.items())) if len(usage) == 1 else None
    frs = a.preempt_frs()
    return (single is not None and frs == {single[0]} and single in a.oracle) or no_targets(cl, wl, frs, usage)


def nominate(cl: Cluster, wl: Workload) -> Entry:
    if cl.fast:
        key, now = shape(cl, wl), deps(cl, wl)
        hit = cl.failures.get(key)
        if hit is not None:
            (then, borrow), a, values = hit
            usage = a.usage(wl)
            if then == now and (borrow is None or borrow == cl.borrow_version.get(cl.roots[wl.cq].name, 0)):
                return Entry(wl, a, usage=usage)
            # the usage moved, but maybe not what this assignment read: same numbers, same result
            reads = cl.drs_reads
            if values == _values(cl, wl) and _still_no_targets(cl, wl, a, usage):
                root = cl.roots[wl.cq].name
                cl.failures[key] = ((now, cl.borrow_version.get(root, 0) if cl.drs_reads != reads else None), a, values)
                return Entry(wl, a, usage=usage)
        reads = cl.drs_reads
    a = assign(cl, wl)
    e = Entry(wl, a, usage=a.usage(wl))
    if a.final_mode() == "Preempt":
        if wl.held_back:  # a preemption loop (replay.LOOP_LIMIT): no targets; not memoised, the memo is per shape
            return e
        frs = a.preempt_frs()
        single = next(iter(e.usage.items())) if len(e.usage) == 1 else None
        if single is not None and frs == {single[0]} and single in a.oracle:
            e.targets = a.oracle[single]
        elif not (cl.fast and no_targets(cl, wl, frs, e.usage)):
            e.targets = get_targets(cl, wl, frs, e.usage)
    if cl.fast and _failed(e):
        borrow = cl.borrow_version.get(cl.roots[wl.cq].name, 0) if cl.drs_reads != reads else None
        cl.failures[key] = ((now, borrow), a, _values(cl, wl))
    return e


def _fits(cl: Cluster, e: Entry, preempted: dict[str, Workload]) -> bool:
    """``fits``: the entry's usage is available once every victim chosen so far is gone."""
    gone = dict(preempted)
    for t in e.targets:
        gone[t.workload.key] = t.workload
    for w in gone.values():
        cl.remove_usage_of(w)
    node = cl.node(e.wl.cq)
    ok = all(cq_available(node, fr) >= v for fr, v in e.usage.items())
    for w in gone.values():
        cl.add_usage_of(w)
    return ok


def _reserve(cl: Cluster, e: Entry) -> dict[FR, int]:
    """quotaResourcesToReserve for a preemptor without candidates."""
    node = cl.node(e.wl.cq)
    out: dict[FR, int] = {}
    for fr, v in e.usage.items():
        q = node.quotas.get(fr)
        nominal = q.nominal if q else 0
        used = node.usage.get(fr, 0)
        if e.assignment.borrow > 0:
            out[fr] = v if q is None or q.borrowing_limit is None else min(v, nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(v, nominal - used))
    return {fr: v for fr, v in out.items() if v > 0}


def _classical_order(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.assignment.borrow, -e.wl.priority, e.wl.created, e.wl.key))


def _tournament_pick(cl: Cluster, pending: dict[str, Entry], root: Node) -> Entry | None:
    values: dict[tuple[str, str], DRS] = {}
    for q in root.subtree_cqs():
        e = pending.get(q.name)
        if e is None:
            continue
        add_all(q, e.usage)
        d = drs(q)
        for anc in q.path_to_root():
            values[(anc.name, e.wl.key)] = d
            d = drs(anc)
        remove_all(q, e.usage)

    def less(a: Entry, b: Entry, parent: str) -> bool:
        da, db = values[(parent, a.wl.key)], values[(parent, b.wl.key)]
        ba = any(fr in a.usage for fr in da.borrowed)
        bb = any(fr in b.usage for fr in db.borrowed)
        if ba != bb:
            return not ba
        c = compare_drs(da, db)
        if c:
            return c < 0
        if a.wl.priority != b.wl.priority:
            return a.wl.priority > b.wl.priority
        return (a.wl.created, a.wl.key) < (b.wl.created, b.wl.key)

    def run(cohort: Node) -> Entry | None:
        cands = [c for c in (run(ch) for ch in cohort.child_cohorts) if c is not None]
        cands += [pending[q.name] for q in cohort.child_cqs if q.name in pending]
        if not cands:
            return None
        best = cands[0]
        for cur in cands[1:]:
            if less(cur, best, cohort.name):
                best = cur
        return best

    return run(root)


def run_cycle(cl: Cluster, heads: list[Workload], now: float) -> list[Entry]:
    entries = [nominate(cl, h) for h in heads]
    preempted: dict[str, Workload] = {}
    reservations: list[tuple[Node, dict[FR, int]]] = []

    def process(e: Entry) -> None:
        mode = e.assignment.final_mode()
        if mode == "NoFit":
            e.status = "nofit"
            return
        if mode == "Preempt" and not e.targets:
            e.status = "no-candidates"
            if cl.spec(e.wl.cq).reclaim != "Any":
                r = _reserve(cl, e)
                add_all(cl.node(e.wl.cq), r)
                reservations.append((cl.node(e.wl.cq), r))
            return
        if any(t.workload.key in preempted for t in e.targets) or not _fits(cl, e, preempted):
            e.status = "skipped"
            return
        if mode == "Preempt":
            for t in e.targets:
                preempted[t.workload.key] = t.workload
            add_all(cl.node(e.wl.cq), e.usage)
            reservations.append((cl.node(e.wl.cq), e.usage))
            e.status = "preempting"
            return
        cl.admit(e.wl, e.usage, now)
        e.status = "admitted"

    live = [e for e in entries if not _failed(e)]
    holds = any(_failed(e) and e.assignment.final_mode() == "Preempt" and cl.spec(e.wl.cq).reclaim != "Any"
                for e in entries)
    if cl.fast and len(live) <= 1 and not holds:  # the order cannot matter
        for e in entries:
            process(e)
    elif cl.fair_sharing:
        pending = {e.wl.cq: e for e in entries}
        while pending:
            first = pending[min(pending)]
            node = cl.node(first.wl.cq)
            if node.parent is None:
                chosen: Entry | None = first
            else:
                chosen = _tournament_pick(cl, pending, node.root())
            assert chosen is not None
            del pending[chosen.wl.cq]
            process(chosen)
    else:
        for e in _classical_order(entries):
            process(e)
    for node, usage in reservations:
        remove_all(node, usage)
    return entries

