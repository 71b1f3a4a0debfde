"""The replay's fast path (memoised failures, search bounds, no tournament when order cannot
matter) gives exactly what the straightforward path gives (``Cluster.fast = False``), on random
small clusters and traces: same admissions, flavors, preemptions and waiting causes."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_kueue import cohort, cq, quota, setup

from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.objects import SCALE
from compiler.tools.simulate.quota import DRS, compare_drs
from compiler.tools.simulate.replay import Job, replay

GPU = "nvidia.com/gpu"
# the values the API allows (apis/kueue/v1beta2/clusterqueue_types.go at v0.19.2): ``Any`` within a
# ClusterQueue would let equal jobs preempt each other for ever
WITHIN = ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
RECLAIM = ["Never", "LowerPriority", "Any"]

queue_specs = st.lists(st.tuples(
    st.integers(0, 6),  # nominal quota on flavor f
    st.one_of(st.none(), st.integers(0, 6)),  # borrowing limit
    st.one_of(st.none(), st.integers(0, 6)),  # lending limit
    st.integers(0, 4),  # nominal quota on flavor g (second flavor of the group; 0 = none)
    st.sampled_from(WITHIN),  # withinClusterQueue
    st.sampled_from(RECLAIM),  # reclaimWithinCohort
    st.sampled_from(["Never", "LowerPriority"]),  # borrowWithinCohort
    st.integers(0, 3),  # fair sharing weight
    st.integers(0, 1),  # which sub-cohort
), min_size=2, max_size=4)
cluster_specs = st.tuples(queue_specs, st.integers(0, 6), st.booleans(),
                          st.sampled_from(["BestEffortFIFO", "StrictFIFO"]),
                          st.sampled_from([("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
                                           ("LessThanInitialShare",)]))
job_specs = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(1, 30), st.integers(1, 5),
                               st.sampled_from([0, 10, 100])), min_size=1, max_size=30)


def _cluster(spec: Any, fast: bool, reverse: bool = False) -> Cluster:
    queues, pool, fair, strategy, strategies = spec
    cqs = []
    for i, (nominal, borrow, lend, second, within, reclaim, bwc, weight, sub) in enumerate(queues):
        flavors = {"f": {GPU: quota(str(nominal), None if borrow is None else str(borrow),
                                    None if lend is None else str(min(lend, nominal)))}}
        if second:
            flavors["g"] = {GPU: quota(str(second))}
        cqs.append(cq(f"q{i}", flavors, cohort=f"sub{sub}", within=within, reclaim=reclaim, bwc=bwc,
                      weight=float(weight), strategy=strategy))
    cohorts = [cohort("root", quotas={("f", GPU): quota(str(pool))}), cohort("sub0", "root"),
               cohort("sub1", "root", weight=2.0)]
    cl = Cluster.of(setup(cqs[::-1] if reverse else cqs, cohorts, fair_sharing=fair, strategies=strategies))
    cl.fast = fast
    return cl


def _story(spec: Any, rows: list[tuple[int, int, int, int, int]], fast: bool,
           reverse: bool = False) -> list[tuple[Any, ...]]:
    n = len(spec[0])
    jobs = [Job(f"j{i}", f"q{q % n}", f"q{q % n}", t, d, {GPU: g * SCALE}, p, gpus=g)
            for i, (q, t, d, g, p) in enumerate(rows)]
    out = replay(_cluster(spec, fast, reverse), jobs)
    return [(tr.job.name, tr.first_admit, tr.finish, tr.runs, tr.flavors, tr.preempted_by, tr.caused,
             sorted(tr.causes.items()), tr.never_fits) for tr in out.tracks] + [(out.cycles, out.stalled)]


# Mutation testing of simulate/bounds.py found that 80 examples miss a tightened bound (line
# ``FairSharingPreemptWithinNominal``: >= turned into >) that ~800 catch; a passing run of 1,000
# takes ~5 s. `make fuzz` runs GPUPOLICY_FUZZ_EXAMPLES of them.
EXAMPLES = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "1000"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_fast_path_equals_reference(spec: Any, rows: list[tuple[int, int, int, int, int]]) -> None:
    assert _story(spec, rows, True) == _story(spec, rows, False)


def test_fast_path_memoises_failures() -> None:
    """The memo is used: a backlog retried on every release is not re-assigned each time."""
    spec = ([(2, 0, None, 0, "Never", "Never", "Never", 1, 0), (2, 0, None, 0, "Never", "Never", "Never", 1, 1)],
            0, True, "BestEffortFIFO", ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
    rows = [(0, t, 5, 2, 0) for t in range(20)] + [(1, t, 5, 3, 0) for t in range(20)]
    cl = _cluster(spec, True)
    n = len(spec[0])
    replay(cl, [Job(f"j{i}", f"q{q % n}", f"q{q % n}", t, d, {GPU: g * SCALE}, p, gpus=g)
                for i, (q, t, d, g, p) in enumerate(rows)])
    assert cl.failures, "failed nominations are memoised"
    assert _story(spec, rows, True) == _story(spec, rows, False)


def _integrals_by_definition(out: Any, span_start: float) -> tuple[dict[str, float], ...]:
    """Guarantee used, borrowed and lent GPU-seconds read literally from the definitions
    (``compiler.tools.simulate.report``'s docstring): at every usage change, every queue of every
    cohort tree adds its rates times the time since the last change."""
    cl = out.cluster
    nominal: dict[Any, int] = {}
    lendable: dict[Any, int] = {}
    pools: dict[Any, int] = {}
    members: dict[Any, list[str]] = {}
    for spec in cl.setup.queues.values():
        for fr, q in spec.quotas.items():
            nominal[(spec.name, fr)] = q.nominal
            lendable[(spec.name, fr)] = q.nominal if q.lending_limit is None or spec.cohort is None \
                else min(q.nominal, q.lending_limit)
    for c in cl.setup.cohorts.values():
        root = cl.tree.cohorts[c.name].root().name
        for fr, q in c.quotas.items():
            pools[(root, fr)] = pools.get((root, fr), 0) + q.nominal
    for (name, fr) in nominal:
        root = cl.node(name).root().name if cl.node(name).parent else name
        members.setdefault((root, fr), []).append(name)
    used = dict.fromkeys(nominal, 0)
    totals: tuple[dict[str, float], ...] = tuple(dict.fromkeys(cl.setup.queues, 0.0) for _ in range(3))
    g_used, borrowed, lent = totals
    log = sorted(out.usage_log, key=lambda e: e[0])
    t_prev = span_start
    for i in range(len(log) + 1):
        t = log[i][0] if i < len(log) else out.end
        if t > t_prev:
            for (root, fr), qs in members.items():
                total_b, idle = 0, {}
                for q in qs:
                    u, nom = used[(q, fr)], nominal[(q, fr)]
                    g_used[q] += min(u, nom) * (t - t_prev)
                    if u > nom:
                        borrowed[q] += (u - nom) * (t - t_prev)
                        total_b += u - nom
                    elif cl.node(q).parent is not None:
                        idle[q] = max(0, lendable[(q, fr)] - u)
                denom = sum(idle.values()) + pools.get((root, fr), 0)
                if total_b and denom:
                    for q, v in idle.items():
                        lent[q] += total_b * v / denom * (t - t_prev)
        if i < len(log):
            _, cq_, fr, delta = log[i]
            used[(cq_, fr)] = used.get((cq_, fr), 0) + delta
            t_prev = t
    return totals


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_integrals_are_the_definition(spec: Any, rows: list[tuple[int, int, int, int, int]]) -> None:
    """The report's guarantee used, borrowing and lending (each queue brought up to date at its own
    usage changes) equal the definitions read literally, on random cohort trees with pools,
    lending limits and two flavors."""
    import pytest

    from compiler.tools.simulate.report import _integrals

    n = len(spec[0])
    jobs = [Job(f"j{i}", f"q{q % n}", f"q{q % n}", t, d, {GPU: g * SCALE}, p, gpus=g)
            for i, (q, t, d, g, p) in enumerate(rows)]
    out = replay(_cluster(spec, True), jobs)
    start = min(j.submit for j in jobs)
    got, want = _integrals(out, start), _integrals_by_definition(out, start)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for q in w:
            assert g[q] == pytest.approx(w[q], rel=1e-9, abs=1e-6), q


def test_a_queue_in_no_cohort_is_its_own_tree_whatever_its_name() -> None:
    """A ClusterQueue in no Cohort named like a root Cohort (names of the two kinds are apart in
    Kueue) neither lends from that Cohort's tree nor takes its pool: only ``a`` lends to ``b``."""
    from compiler.tools.simulate.report import _integrals

    flavor = {"f": {GPU: quota("4")}}
    cqs = [cq("a", {"f": {GPU: quota("2")}}, cohort="ai"), cq("b", {"f": {GPU: quota("0")}}, cohort="ai"),
           cq("ai", flavor)]
    out = replay(Cluster.of(setup(cqs, [cohort("ai", quotas={("f", GPU): quota("2")})])),
                 [Job("j", "b", "b", 0.0, 100.0, {GPU: 2 * SCALE}, 0, gpus=2)])
    _, borrowed, lent = _integrals(out, 0.0)
    assert borrowed["b"] == 2 * SCALE * 100.0
    assert lent["ai"] == 0.0 and lent["a"] == 2 * SCALE * 100.0 * 2 / 4  # a's 2 idle of 2 + the pool's 2


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_asking_only_the_queues_with_workloads_changes_nothing(spec: Any, rows: list[tuple[int, int, int, int, int]]
                                                               ) -> None:
    """A cycle that asks only the queues holding workloads for their heads (``replay.SPARSE``)
    replays exactly as one that asks every queue."""
    from compiler.tools.simulate import replay as module

    was = module.SPARSE
    try:
        for reverse in (False, True):  # the queues' order, by name and not
            module.SPARSE = 0  # always only the queues with workloads
            sparse = _story(spec, rows, True, reverse)
            module.SPARSE = None  # always every queue
            every = _story(spec, rows, True, reverse)
            assert sparse == every
    finally:
        module.SPARSE = was


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_the_kept_borrowers_are_the_queues_above_their_quota(spec: Any, rows: list[tuple[int, int, int, int, int]]
                                                              ) -> None:
    """``quota.borrowing`` (sets kept by every usage change) names, after every cycle and
    completion, exactly the ClusterQueues of each tree above their quota, in the tree's order."""
    from compiler.tools.simulate.quota import borrowing

    n = len(spec[0])
    jobs = [Job(f"j{i}", f"q{q % n}", f"q{q % n}", t, d, {GPU: g * SCALE}, p, gpus=g)
            for i, (q, t, d, g, p) in enumerate(rows)]
    seen = [0]

    def observe(now: float, cl: Cluster) -> None:
        for root in set(cl.roots.values()):
            for fr in {fr for q in root.subtree_cqs() for fr in (*q.subtree, *q.usage)}:
                want = [q for q in root.subtree_cqs() if q.usage.get(fr, 0) > q.subtree.get(fr, 0)]
                assert borrowing(root, (fr,)) == want
                seen[0] += bool(want)
            both = list(root.subtree)
            assert borrowing(root, both) == [q for q in root.subtree_cqs()
                                             if any(q.usage.get(fr, 0) > q.subtree.get(fr, 0) for fr in both)]

    replay(_cluster(spec, True), jobs, observe=observe)


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_fair_searches_read_only_the_queues_that_matter(spec: Any, rows: list[tuple[int, int, int, int, int]]
                                                        ) -> None:
    """A fair-sharing search visits only the ClusterQueues with candidates and takes candidates
    from the ClusterQueues kept as above their quota; visiting every child and scanning every
    ClusterQueue of the tree, as written in Kueue, replays exactly the same."""
    from compiler.tools.simulate import fair_preemption as fp

    def every_child(self: Any, cohort: Any) -> list[Any]:
        return list(cohort.child_cqs)

    def scanned(root: Any, frs: Any) -> list[Any]:
        return [q for q in root.subtree_cqs() if any(q.usage.get(fr, 0) > q.subtree.get(fr, 0) for fr in frs)]

    fair = (spec[0], spec[1], True, spec[3], spec[4])  # fair sharing on
    for reverse in (False, True):  # the queues' order, by name and not
        kept = _story(fair, rows, True, reverse)
        was = fp._Ordering.with_candidates, fp.borrowing
        try:
            fp._Ordering.with_candidates, fp.borrowing = every_child, scanned  # type: ignore[method-assign]
            written = _story(fair, rows, True, reverse)
        finally:
            fp._Ordering.with_candidates, fp.borrowing = was  # type: ignore[method-assign]
        assert kept == written


def test_the_admitted_digest_is_the_set_of_admissions() -> None:
    """Admitting and releasing in any order gives the same digest for the same set; a workload
    admitted again is another admission (its admitted time, hence the candidates' order, moved)."""
    from compiler.tools.simulate.cluster import Workload

    spec = ([(4, None, None, 0, "Never", "Never", "Never", 1, 0), (4, None, None, 0, "Never", "Never", "Never", 1, 1)],
            0, True, "BestEffortFIFO", ("LessThanInitialShare",))
    cl = _cluster(spec, True)
    a, b = (Workload(k, q, {GPU: SCALE}) for k, q in (("a", "q0"), ("b", "q1")))
    usage = {("f", GPU): SCALE}
    digest = lambda: cl.admitted_digest.get("root", 0)  # noqa: E731
    assert digest() == 0
    cl.admit(a, dict(usage), 1.0)
    only_a = digest()
    cl.admit(b, dict(usage), 2.0)
    both = digest()
    assert len({0, only_a, both}) == 3
    cl.release(b)
    assert digest() == only_a
    cl.release(a)
    assert digest() == 0
    cl.admit(b, dict(usage), 3.0)
    cl.admit(a, dict(usage), 4.0)
    assert digest() not in (0, only_a, both), "a and b admitted again are other admissions"
    cl.release(a)
    cl.release(b)
    assert digest() == 0


@contextmanager
def _checked_searches(seen: list[int]) -> Iterator[None]:
    """Patch the replay's preemption searches so that every search answered from the kept ones is
    run again on the spot and compared; ``seen`` counts them."""
    from compiler.tools.simulate import flavors, preemption, scheduler

    real = preemption.get_targets

    def checked(cl: Cluster, wl: Any, frs: Any, usage: Any) -> Any:
        kept = len(cl.searches)
        out = real(cl, wl, frs, usage)
        if len(cl.searches) == kept and kept:  # answered from the kept searches
            seen[0] += 1
            again = preemption._search(cl, wl, frs, usage)
            assert [(t.workload.key, t.reason) for t in out] == [(t.workload.key, t.reason) for t in again]
        return out

    flavors.get_targets = scheduler.get_targets = checked
    try:
        yield
    finally:
        flavors.get_targets = scheduler.get_targets = real


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_a_kept_search_is_the_search_run_again(spec: Any, rows: list[tuple[int, int, int, int, int]]) -> None:
    """A preemption search answered from the kept ones (same admissions in the tree, same shape of
    preemptor, same request) gives what the search gives when run again, fair sharing or not."""
    seen = [0]
    with _checked_searches(seen):
        _story(spec, rows, True)


def test_searches_are_kept_by_the_admitted_set() -> None:
    """A tree that comes back to the same admissions reuses its searches, and replays as the
    straightforward path does (a story found by a random search over the generator above: about
    one random story in five meets a set of admissions again)."""
    spec = ([(2, None, None, 0, "Never", "Any", "LowerPriority", 1, 0),
             (2, 1, None, 0, "LowerOrNewerEqualPriority", "LowerPriority", "LowerPriority", 1, 0)],
            2, True, "BestEffortFIFO", ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
    rows = [(2, 14, 4, 5, 10), (1, 5, 21, 3, 100), (2, 17, 24, 4, 10), (2, 26, 15, 1, 0), (2, 2, 13, 4, 0),
            (2, 7, 21, 4, 10), (3, 7, 16, 1, 100), (0, 36, 14, 4, 10), (1, 35, 20, 3, 100), (0, 17, 5, 3, 10)]
    seen = [0]
    with _checked_searches(seen):
        fast = _story(spec, rows, True)
    assert seen[0] > 0, "some searches were answered from the kept ones"
    assert fast == _story(spec, rows, False)


def _compare_drs_as_written(a: Any, b: Any) -> int:
    """CompareDRS as pkg/cache/scheduler/fair_sharing.go (v0.19.2) writes it."""
    za, zb = a.weight == 0 and a.ratio != 0, b.weight == 0 and b.ratio != 0
    if za and zb:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if za:
        return 1
    if zb:
        return -1
    sa, sb = a.share(), b.share()
    return (sa > sb) - (sa < sb)


drs_values = st.builds(DRS, st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]),
                       st.one_of(st.sampled_from([-1.0, 0.0, 250.0, 500.0, 1000.0]), st.floats(0, 5000)))


@settings(max_examples=500, deadline=None)
@given(drs_values, drs_values)
def test_compare_drs_is_kueues(a: Any, b: Any) -> None:
    """The one-tuple order (``DRS.order``) compares as Kueue's CompareDRS, weight zero included."""
    assert compare_drs(a, b) == _compare_drs_as_written(a, b)
    assert compare_drs(a, b) == -compare_drs(b, a)
