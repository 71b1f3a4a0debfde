"""Preemption loops (kubernetes-sigs/kueue#14543): a workload that has preempted in
``replay.LOOP_LIMIT`` cycles without running to completion is named and held back, so the replay
ends; every format shows the warning."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from test_simulate_fast_path import EXAMPLES, _cluster, _story, cluster_specs, job_specs

from compiler.tools.simulate import replay as replay_mod
from compiler.tools.simulate.compare import Pair
from compiler.tools.simulate.compare import render_markdown as pair_markdown
from compiler.tools.simulate.compare import render_text as pair_text
from compiler.tools.simulate.objects import SCALE
from compiler.tools.simulate.render import render_json, render_markdown, render_text
from compiler.tools.simulate.replay import LOOP_CAUSE, Job, replay
from compiler.tools.simulate.report import summarize

GPU = "nvidia.com/gpu"
# found by a random search over the fast-path test's generator: q0 (no quota, reclaim Any) and q1
# (reclaim Any) under fair sharing with both strategies; before the guard this replay of 22 jobs
# ran for minutes, its usage log growing by gigabytes (and still does without it, since evicted
# workloads are requeued EVICTION_S after their eviction: j9, j7 and j11 of q0 and j6 of q1 evict
# one another's queue's workloads over and over)
LOOP_SPEC = ([(0, None, None, 0, "LowerPriority", "Any", "Never", 1, 0),
              (2, None, None, 0, "Never", "Any", "Never", 1, 1),
              (3, None, None, 0, "LowerPriority", "LowerPriority", "Never", 2, 0)],
             2, True, "BestEffortFIFO", ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
LOOP_ROWS = [(0, 22, 2, 5, 0), (1, 34, 26, 5, 0), (3, 30, 20, 3, 100), (1, 23, 26, 4, 10), (2, 34, 15, 1, 100),
             (1, 36, 26, 3, 0), (1, 37, 19, 5, 100), (3, 18, 24, 2, 0), (3, 6, 11, 2, 10), (0, 23, 27, 2, 10),
             (3, 9, 2, 3, 100), (3, 32, 26, 3, 10), (2, 5, 27, 4, 100), (1, 16, 1, 1, 10), (1, 3, 17, 1, 10),
             (2, 40, 10, 2, 10), (1, 26, 7, 4, 100), (1, 12, 27, 5, 10), (0, 37, 15, 1, 0), (0, 29, 23, 5, 100),
             (3, 18, 20, 5, 100), (2, 31, 22, 2, 10)]


def _jobs(spec: Any, rows: list[tuple[int, int, int, int, int]]) -> list[Job]:
    n = len(spec[0])
    return [Job(f"j{i}", f"q{q % n}", f"q{q % n}", t, d, {GPU: g * SCALE}, p, gpus=g)
            for i, (q, t, d, g, p) in enumerate(rows)]


Outcome = tuple[float, str, str]  # (instant, workload, cycle status)


@contextmanager
def _recording(limit: int | None = None) -> Iterator[list[Outcome]]:
    """Every cycle outcome, in order, recorded around the replay's scheduler while in the block,
    with ``LOOP_LIMIT`` set to ``limit`` if given (a context manager, not monkeypatch: hypothesis
    tests use it too)."""
    seen: list[Outcome] = []
    real, was = replay_mod.run_cycle, replay_mod.LOOP_LIMIT

    def recorded(cl: Any, heads: Any, now: float) -> Any:
        entries = real(cl, heads, now)
        seen.extend((now, e.wl.key, e.status) for e in entries)
        return entries

    replay_mod.run_cycle = recorded
    replay_mod.LOOP_LIMIT = was if limit is None else limit
    try:
        yield seen
    finally:
        replay_mod.run_cycle, replay_mod.LOOP_LIMIT = real, was


def _statuses(seen: list[Outcome], key: str) -> list[str]:
    """One workload's cycle outcomes, in order."""
    return [status for _, k, status in seen if k == key]


def test_a_preemption_loop_ends_named_and_held_back() -> None:
    with _recording() as seen:
        out = replay(_cluster(LOOP_SPEC, True), _jobs(LOOP_SPEC, LOOP_ROWS))
    assert out.cycles < 2_000
    looped = [tr for tr in out.tracks if tr.wl.held_back]
    assert sorted(tr.job.name for tr in looped) == ["j11", "j6", "j7", "j9"]
    assert len(out.stalled) == 4
    for tr in looped:
        assert any(tr.job.name in s and "kubernetes-sigs/kueue#14543" in s and f"in {replay_mod.LOOP_LIMIT} cycles" in s
                   for s in out.stalled)
        # j6's one failure once held back is in the instant it is admitted: no time to charge
        assert (LOOP_CAUSE in tr.causes) == (tr.job.name != "j6"), tr.causes
    _held_at_the_limit(seen, out, replay_mod.LOOP_LIMIT)


def _held_at_the_limit(seen: list[Outcome], out: Any, limit: int) -> None:
    """Each workload is held back exactly at the cycle where it preempted for the ``limit``-th
    time (a job finishes once: the count is over its life), and preempts no more after it."""
    for tr in out.tracks:
        rounds, held = 0, False
        for s in _statuses(seen, tr.job.name):
            if s == "preempting":
                assert not held, f"{tr.job.name} preempted after being held back"
                rounds += 1
                held = held or rounds == limit
        assert held == tr.wl.held_back, tr.job.name


def test_a_lower_limit_holds_back_sooner() -> None:
    with _recording(3) as seen:
        out = replay(_cluster(LOOP_SPEC, True), _jobs(LOOP_SPEC, LOOP_ROWS))
    assert out.stalled and all("in 3 cycles" in s for s in out.stalled)
    first = float(out.stalled[0].split("(t=")[1].split("s)")[0])
    assert first < 94  # the default limit's first loop is named at t=94s
    _held_at_the_limit(seen, out, 3)


def test_a_loop_replays_as_the_reference_path_does() -> None:
    assert _story(LOOP_SPEC, LOOP_ROWS, True) == _story(LOOP_SPEC, LOOP_ROWS, False)


def test_every_format_shows_the_loop() -> None:
    jobs = _jobs(LOOP_SPEC, LOOP_ROWS)
    out = replay(_cluster(LOOP_SPEC, True), jobs)
    rep = summarize(out, jobs, baselines=False)
    assert rep.stalled == out.stalled
    for text in (render_text(rep), render_markdown(rep), pair_text(Pair("main", "c", rep, rep, "")),
                 pair_markdown(Pair("main", "c", rep, None, "no base"))):
        assert text.count("14543") >= 2, text  # markdown escapes the "#"
    assert "kubernetes-sigs/kueue#14543" in render_json(rep)
    base = rep.__class__(**{**rep.__dict__, "stalled": [*rep.stalled, "t=1s: a loop the change ends"]})
    both = pair_markdown(Pair("main", "c", rep, base, ""))
    assert both.count("14543") == len(rep.stalled) <= 5, "a warning on both sides is said once"
    assert "**warning** (only on main): " in both and "a loop the change ends" in both, both
    odd = pair_markdown(Pair("x<b>*", "c", rep, base, ""))  # a ref is the user's text: escaped
    line = next(x for x in odd.splitlines() if "only on x" in x)
    assert "only on x&lt;b&gt;\\*)" in line, line
    many = rep.__class__(**{**rep.__dict__, "stalled": [f"loop {i}" for i in range(8)]})
    shown = render_markdown(many)
    assert "loop 4" in shown and "loop 5" not in shown and "3 more warning(s)" in shown


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_specs, job_specs)
def test_held_back_exactly_at_the_limit(spec: Any, rows: list[tuple[int, int, int, int, int]]) -> None:
    """On random clusters, with a limit of 2: held back exactly at a workload's second cycle of
    preempting, and never preempting after."""
    with _recording(2) as seen:
        out = replay(_cluster(spec, True), _jobs(spec, rows))
    _held_at_the_limit(seen, out, 2)


def test_a_kept_search_reads_the_shares_the_search_read() -> None:
    """A search answered from the kept ones counts as comparing shares when the search did
    (``Cluster.drs_reads``): the failure memo then keys on who borrows."""
    from compiler.tools.simulate.cluster import Workload
    from compiler.tools.simulate.preemption import get_targets

    cl = _cluster(LOOP_SPEC, True)
    fr = ("f", GPU)
    for key, q, n in (("a", "q1", 4), ("b", "q2", 3)):  # q1 borrows 2 of q2's quota
        cl.admit(Workload(key, q, {GPU: n * SCALE}), {fr: n * SCALE}, 1.0)
    pre = Workload("p", "q0", {GPU: 2 * SCALE}, priority=10)
    reads = cl.drs_reads
    first = get_targets(cl, pre, {fr}, {fr: 2 * SCALE})
    compared = cl.drs_reads - reads
    assert compared, "the search compared shares"
    again = get_targets(cl, pre, {fr}, {fr: 2 * SCALE})
    assert len(cl.searches) == 1 and [t.workload.key for t in again] == [t.workload.key for t in first]
    assert cl.drs_reads - reads == 2 * compared


@pytest.mark.parametrize("limit", [2, 3])
def test_the_count_is_over_the_jobs_life(limit: int) -> None:
    """``high`` preempts twice, admitted after each: held back at the second with a limit of 2
    (admissions between do not restart the count), not with 3."""
    from sim_kueue import cq, quota, setup

    from compiler.tools.simulate.cluster import Cluster

    cl = Cluster.of(setup([cq("a", {"f": {GPU: quota("2")}}, within="LowerPriority")]))
    jobs = [Job(name, "a", "a", t, d, {GPU: g * SCALE}, p, gpus=g) for name, t, d, g, p in (
        ("low1", 0, 100, 1, 0), ("low2", 0, 100, 1, 0),
        ("high", 1, 100, 2, 10),  # preempts both lows
        ("top", 2, 0.5, 1, 100),  # preempts high; low1 takes the other GPU
        )]  # top ends at 2.5: high preempts low1 again
    with _recording(limit) as seen:
        out = replay(cl, jobs)
    high_seen = _statuses(seen, "high")
    assert high_seen.count("preempting") == 2 and high_seen[-1] == "admitted"
    high = next(tr for tr in out.tracks if tr.job.name == "high")
    assert high.wl.held_back == (limit == 2)
    assert len(out.stalled) == (limit == 2)


# a second story of the same search: q0 and q1 take turns, j2 reclaiming within q1's nominal
# quota and j4 winning it back by a fair-sharing strategy, each admitted in between
TURNS_SPEC = ([(4, None, None, 0, "LowerPriority", "Any", "LowerPriority", 3, 1),
               (2, 4, None, 0, "LowerPriority", "Any", "Never", 2, 1)],
              0, True, "BestEffortFIFO", ("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
TURNS_ROWS = [(2, 18, 15, 5, 10), (0, 18, 11, 1, 0), (3, 22, 30, 1, 100), (1, 21, 24, 3, 100), (0, 14, 21, 5, 100),
              (3, 13, 29, 4, 100), (1, 40, 9, 5, 10), (1, 19, 21, 4, 0), (1, 9, 11, 3, 100), (1, 5, 7, 2, 0),
              (1, 29, 6, 4, 100), (1, 29, 13, 2, 100), (3, 28, 11, 4, 0), (3, 22, 25, 4, 100), (0, 21, 26, 5, 0),
              (2, 1, 5, 1, 10), (1, 14, 25, 1, 100), (3, 4, 5, 1, 100), (2, 0, 25, 1, 10), (3, 40, 21, 2, 100),
              (0, 40, 30, 5, 100), (1, 22, 20, 3, 0)]


def test_two_workloads_taking_turns_end_named() -> None:
    with _recording() as seen:
        out = replay(_cluster(TURNS_SPEC, True), _jobs(TURNS_SPEC, TURNS_ROWS))
    assert out.cycles < 5_000
    held = {tr.job.name: tr for tr in out.tracks if tr.wl.held_back}
    assert sorted(held) == ["j2", "j4"]  # that ends the turns
    assert "j2" in {k for _, k, why in held["j4"].preempted_by if why == "InCohortReclamation"}
    assert {k for _, k, why in held["j2"].preempted_by if why == "InCohortFairSharing"} == {"j4"}
    _held_at_the_limit(seen, out, replay_mod.LOOP_LIMIT)
    assert _story(TURNS_SPEC, TURNS_ROWS, True) == _story(TURNS_SPEC, TURNS_ROWS, False)


def test_an_evicted_workload_is_requeued_after_its_pods_terminate() -> None:
    """``low`` is preempted at t=1: it is queued again at t=1 + EVICTION_S (an instant of its own,
    where it does not fit), not at the next unrelated event, and the completion planned for its
    evicted run (t=100) runs no cycle."""
    from sim_kueue import cq, quota, setup

    from compiler.tools.simulate.cluster import Cluster

    cl = Cluster.of(setup([cq("a", {"f": {GPU: quota("2")}}, within="LowerPriority")]))
    jobs = [Job(name, "a", "a", t, d, {GPU: 2 * SCALE}, p, gpus=2)
            for name, t, d, p in (("low", 0, 100, 0), ("high", 1, 10, 10))]
    with _recording() as seen:
        out = replay(cl, jobs)
    requeued = 1 + replay_mod.EVICTION_S
    assert seen == [(0, "low", "admitted"), (1, "high", "preempting"), (1, "high", "admitted"),
                        (requeued, "low", "no-candidates"), (11, "low", "admitted")], seen
    low = next(tr for tr in out.tracks if tr.job.name == "low")
    assert low.finish == 111 and low.wait == 10  # waiting from its eviction at t=1 to t=11
