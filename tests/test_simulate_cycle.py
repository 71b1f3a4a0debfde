"""The scheduling cycle (``compiler.tools.simulate.scheduler``) in situations the ported
TestSchedule cases (tests/test_simulate_kueue_schedule.py) do not reach, found by mutating the
module. Expectations follow kubernetes-sigs/kueue v0.19.2 ``pkg/scheduler/scheduler.go``
(schedule, processEntry, reserveCapacityForUnreclaimablePreempt, quotaResourcesToReserve,
makeClassicalIterator) and ``pkg/scheduler/fair_sharing_iterator.go`` (entryComparer.less), as
cited per test; the fast path's memo (``nominate``) must answer as the search it stands for.
"""

from __future__ import annotations

from sim_kueue import CPU, GPU, MEM, admitted, cohort, cq, quota, setup, wl

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.flavors import Assignment
from compiler.tools.simulate.objects import FR, milli
from compiler.tools.simulate.scheduler import Entry, _reserve, nominate, run_cycle


def statuses(cl: Cluster, *heads: Workload) -> dict[str, str]:
    return {e.wl.key: e.status for e in run_cycle(cl, list(heads), 0.0)}


# ---- TestResourcesToReserve (scheduler_test.go), on quotaResourcesToReserve ----

def _reserve_cq() -> Cluster:
    """TestResourcesToReserve's ClusterQueue: memory on on-demand (100) and spot (0, borrowing
    limit 100); gpu on model-a (10, borrowing limit 0) and model-b (10, borrowing limit 5)."""
    q = cq("cq", {"on-demand": {MEM: quota("100")}, "spot": {MEM: quota("0", "100")}},
           {"model-a": {GPU: quota("10", "0")}, "model-b": {GPU: quota("10", "5")}}, cohort="eng", strategy="StrictFIFO")
    return Cluster.of(setup([q]))


def reserved(borrowing: int, usage: dict[FR, str], cq_usage: dict[FR, str]) -> dict[FR, int]:
    cl = _reserve_cq()
    for i, ((flavor, res), amount) in enumerate(cq_usage.items()):
        admitted(cl, f"workload-{i}", "cq", {res: (flavor, amount)})
    a = Assignment(flavors={r: f for f, r in usage}, borrow=borrowing)
    e = Entry(wl("new", "cq", {r: v for (_, r), v in usage.items()}), a, usage={fr: milli(v) for fr, v in usage.items()})
    return _reserve(cl, e)


OD, SPOT, MA, MB = ("on-demand", MEM), ("spot", MEM), ("model-a", GPU), ("model-b", GPU)
USED = {OD: "60", SPOT: "60", MA: "2", MB: "10"}


def test_reserve_less_than_the_request_when_preempting() -> None:
    """TestResourcesToReserve "Reserved memory and gpu less than assignment usage, assignment
    preempts": within nominal, what is left of it (100 - 60, 10 - 6)."""
    got = reserved(0, {OD: "50", MA: "6"}, {OD: "60", SPOT: "50", MA: "6", MB: "2"})
    assert got == {OD: milli("40"), MA: milli("4")}


def test_reserve_the_request_when_it_is_left() -> None:
    """TestResourcesToReserve "Reserved memory equal assignment usage, assignment preempts"."""
    got = reserved(0, {OD: "30", MA: "2"}, {OD: "60", SPOT: "50", MA: "2", MB: "2"})
    assert got == {OD: milli("30"), MA: milli("2")}


def test_reserve_nothing_where_the_queue_borrows_already() -> None:
    """TestResourcesToReserve "Reserved memory is 0, CQ is borrowing, assignment preempts without
    borrowing" (the upstream map holds the zeros; reserving zero reserves nothing)."""
    got = reserved(0, {SPOT: "50", MB: "2"}, USED)
    assert {fr: v for fr, v in got.items() if v} == {}


def test_reserve_up_to_nominal_plus_borrowing_limit_when_borrowing() -> None:
    """TestResourcesToReserve "Reserved memory cut by nominal+borrowing quota, assignment
    preempts and borrows": spot 0 + 100 - 60 = 40; model-b min(2, 10 + 5 - 10)."""
    assert reserved(1, {SPOT: "50", MB: "2"}, USED) == {SPOT: milli("40"), MB: milli("2")}


def test_reserve_the_request_without_a_borrowing_limit() -> None:
    """TestResourcesToReserve "Reserved memory equal assignment usage, CQ borrowing limit is nil"."""
    assert reserved(1, {OD: "50", MB: "2"}, USED) == {OD: milli("50"), MB: milli("2")}


def test_reserve_all_of_nominal_when_nothing_is_used() -> None:
    """quotaResourcesToReserve reads the ClusterQueue's usage of the flavor-resource, none here:
    all 10 of model-a's nominal quota is reserved for a request of 10."""
    assert reserved(0, {MA: "10"}, {OD: "60"}) == {MA: milli("10")}


def test_reserve_the_smallest_quantity() -> None:
    """Nothing is too small to reserve: 1m of memory is held (MaxAmount(0, ...) keeps what is
    above zero)."""
    assert reserved(0, {OD: "1m"}, {OD: "60"}) == {OD: 1}


# ---- the order of a cycle ----

def test_a_reservation_is_made_before_a_later_head_is_admitted() -> None:
    """processEntry in the classical iterator's order: A (within nominal: borrowing level 0)
    before B (borrowing). A must preempt but b_hi is above its priority (reclaimWithinCohort
    LowerPriority): no candidates, and since a cannot always reclaim
    (reserveCapacityForUnreclaimablePreempt: not ``Any``) A holds a's free quota for the cycle, so
    B, which fits on its own, no longer does: skipped. (Heads given B first: the order is the
    scheduler's, not the caller's.)"""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("2")}}, cohort="co", reclaim="LowerPriority"),
                           cq("b", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "b_hi", "b", {CPU: ("default", "3")}, priority=10)
    got = statuses(cl, wl("B", "b", {CPU: "1"}), wl("A", "a", {CPU: "2"}))
    assert got == {"B": "skipped", "A": "no-candidates"}
    assert cl.tree.cqs["a"].usage.get(("default", CPU), 0) == 0  # the reservation ends with the cycle


def test_classical_order_puts_higher_priority_first() -> None:
    """makeClassicalIterator: at the same borrowing level, higher priority first
    (PrioritySortingWithinCohort, on by default), before FIFO. Both heads borrow 1 of the
    other's quota and only one fits: B (priority 5, created later) is admitted."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("1")}}, cohort="co"),
                           cq("b", {"default": {CPU: quota("1")}}, cohort="co")]))
    got = statuses(cl, wl("A", "a", {CPU: "2"}, priority=0, created=0.0), wl("B", "b", {CPU: "2"}, priority=5, created=1.0))
    assert got == {"A": "skipped", "B": "admitted"}


def test_tournament_puts_higher_priority_first_on_equal_shares() -> None:
    """fair_sharing_iterator.go entryComparer.less: equal shares (each head borrows 1 of the
    other's quota) and neither side borrowing alone, so priority decides (step 4, before FIFO): B
    (priority 5, created later) is admitted, A no longer fits."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("1")}}, cohort="co"),
                           cq("b", {"default": {CPU: quota("1")}}, cohort="co")], fair_sharing=True))
    got = statuses(cl, wl("A", "a", {CPU: "2"}, priority=0, created=0.0), wl("B", "b", {CPU: "2"}, priority=5, created=1.0))
    assert got == {"A": "skipped", "B": "admitted"}


def test_fair_sharing_cycle_with_queues_without_a_cohort() -> None:
    """fairSharingIterator.pop: a ClusterQueue without a Cohort returns its entry without a
    tournament. Two such queues, both heads fit: both admitted."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("1")}}), cq("b", {"default": {CPU: quota("1")}})],
                          fair_sharing=True))
    assert statuses(cl, wl("A", "a", {CPU: "1"}), wl("B", "b", {CPU: "1"})) == {"A": "admitted", "B": "admitted"}


def test_a_two_resource_preemptor_gets_its_targets() -> None:
    """GetTargets for a workload whose every resource needs preemption: the search runs on the
    whole assignment (not one resource's simulation). low holds all of q's CPU and memory; the
    higher-priority head preempts it within the ClusterQueue (withinClusterQueue
    LowerPriority)."""
    for fast in (True, False):
        cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2"), MEM: quota("2")}}, within="LowerPriority")]))
        cl.fast = fast
        admitted(cl, "low", "q", {CPU: ("default", "2"), MEM: ("default", "2")})
        entries = run_cycle(cl, [wl("high", "q", {CPU: "1", MEM: "1"}, priority=5)], 0.0)
        assert [(e.status, [(t.workload.key, t.reason) for t in e.targets]) for e in entries] == \
            [("preempting", [("low", "InClusterQueue")])], fast


# ---- the fast path's memo answers as the search would ----

def _shares() -> Cluster:
    """Fair sharing, cohort "all" of a and b (2 CPU, 2 memory each); b borrows 1 CPU with b1..b3;
    a0 (not preemptible: withinClusterQueue Never) holds 1 of a's CPU. A head of a asking 2 CPU
    borrows 1, as b does: neither strategy lets it take one of b's workloads."""
    qs = [cq(n, {"default": {CPU: quota("2"), MEM: quota("2")}}, cohort="all", reclaim="Any") for n in "ab"]
    cl = Cluster.of(setup(qs, fair_sharing=True))
    admitted(cl, "a0", "a", {CPU: ("default", "1")}, priority=9)
    for i in (1, 2, 3):
        admitted(cl, f"b{i}", "b", {CPU: ("default", "1")})
    return cl


def test_a_remembered_failure_is_searched_again_when_shares_move() -> None:
    """A nomination that failed after comparing shares is reused only while no node's borrowing
    changed (Kueue nominates afresh every cycle). b then borrows 2 memory (b_mem), which the head
    does not ask for: b's share doubles and LessThanOrEqualToFinalShare now passes for b1 and
    b2 (without them b's share is still its memory's)."""
    cl = _shares()
    head = wl("w", "a", {CPU: "2"})
    first = nominate(cl, head)
    assert (first.assignment.final_mode(), first.targets) == ("Preempt", [])
    assert nominate(cl, head).targets == []  # nothing moved: the same answer
    admitted(cl, "b_mem", "b", {MEM: ("default", "4")})
    assert {t.workload.key for t in nominate(cl, head).targets} == {"b1", "b2"}


def test_a_failure_kept_again_is_still_searched_again_when_shares_move() -> None:
    """As above, with the failure kept a second time on the way. The head asks 3 CPU: a would
    borrow 2, b borrows 1, so no strategy can pass (the search's bound sees it from the shares).
    b3 finishes and comes back (the CPU usage moved and returned, the same numbers): the memo is
    checked and kept again. Then b borrows 2 memory: b's share equals a's, and
    LessThanOrEqualToFinalShare takes all of b's CPU workloads (without each, b's share is still
    its memory's)."""
    cl = _shares()
    head = wl("w", "a", {CPU: "3"})
    assert nominate(cl, head).targets == []
    b3 = cl.admitted["b"]["b3"]
    cl.release(b3)
    admitted(cl, "b3", "b", {CPU: ("default", "1")})
    assert nominate(cl, head).targets == []
    admitted(cl, "b_mem", "b", {MEM: ("default", "4")})
    assert {t.workload.key for t in nominate(cl, head).targets} == {"b1", "b2", "b3"}


def test_a_remembered_failure_still_reserves() -> None:
    """reserveCapacityForUnreclaimablePreempt runs every cycle: a head without candidates holds
    its ClusterQueue's free quota in the second cycle as in the first, where its nomination comes
    from the fast path's memo. Here B (borrowing) is skipped both times."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("2")}}, cohort="co", reclaim="LowerPriority"),
                           cq("b", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "b_hi", "b", {CPU: ("default", "3")}, priority=10)
    a_head, b_head = wl("A", "a", {CPU: "2"}), wl("B", "b", {CPU: "1"})
    for _ in range(2):
        assert statuses(cl, b_head, a_head) == {"B": "skipped", "A": "no-candidates"}
    # the usage moved and came back (the same numbers): the memo is checked, then kept
    b_hi = cl.admitted["b"]["b_hi"]
    cl.release(b_hi)
    admitted(cl, "b_hi", "b", {CPU: ("default", "3")}, priority=10)
    assert statuses(cl, b_head, a_head) == {"B": "skipped", "A": "no-candidates"}


def test_a_search_for_the_whole_assignment_counts_every_resource() -> None:
    """GetTargets runs for the whole assignment (getInitialAssignments), so the preemptor's share
    includes every resource it asks for, not only the one needing preemption. The head asks 3
    CPU (fits, borrowing 2 of 4: a share of 500) and 1 GPU (a would borrow 1 of 4, b borrows 2).
    Counting the GPU alone, LessThanOrEqualToFinalShare would take b_g1 (250 <= 250); with the
    CPU the head's share is 500, above b's without b_g1 (250) and not below b's 500: no
    candidates. (The GPU is asked first: the one-resource simulation is of the first request.)"""
    qs = [cq("a", {"default": {CPU: quota("1"), GPU: quota("1")}}, cohort="all", reclaim="Any"),
          cq("b", {"default": {CPU: quota("3"), GPU: quota("1")}}, cohort="all")]
    cl = Cluster.of(setup(qs, [cohort("all", quotas={("default", GPU): quota("2")})], fair_sharing=True))
    admitted(cl, "a_g0", "a", {GPU: ("default", "1")}, priority=9)
    for name in ("b_g1", "b_g2", "b_g3"):
        admitted(cl, name, "b", {GPU: ("default", "1")})
    head = wl("w", "a", {GPU: "1", CPU: "3"})
    assert [(e.status, e.targets) for e in run_cycle(cl, [head], 0.0)] == [("no-candidates", [])]
    # b_g3 finishes and comes back (the same numbers): the fast path checks its memo, same answer
    cl.release(cl.admitted["b"]["b_g3"])
    admitted(cl, "b_g3", "b", {GPU: ("default", "1")})
    assert [(e.status, e.targets) for e in run_cycle(cl, [head], 1.0)] == [("no-candidates", [])]


def test_a_two_resource_failure_without_candidates_is_kept() -> None:
    """A head asking CPU (fits) and a GPU that only a higher-priority workload holds: no
    candidates (withinClusterQueue LowerPriority), in every cycle. After a_hi finishes and comes
    back (the same numbers) the fast path checks its memo against the whole assignment and keeps
    the answer Kueue gives again."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2"), GPU: quota("1")}}, within="LowerPriority")]))
    admitted(cl, "a_hi", "q", {GPU: ("default", "1")}, priority=9)
    head = wl("w", "q", {GPU: "1", CPU: "1"})
    assert [(e.status, e.targets) for e in run_cycle(cl, [head], 0.0)] == [("no-candidates", [])]
    cl.release(cl.admitted["q"]["a_hi"])
    admitted(cl, "a_hi", "q", {GPU: ("default", "1")}, priority=9)
    assert [(e.status, e.targets) for e in run_cycle(cl, [head], 1.0)] == [("no-candidates", [])]


def test_a_remembered_failure_is_assigned_again_when_its_borrowing_level_moves() -> None:
    """The classical iterator orders entries by borrowing level first
    (makeClassicalIterator: request under nominal quota first), and Kueue computes the level
    afresh every cycle. W (a, 2 CPU) has no candidates throughout (b's workloads are above its
    priority). At first a is empty: W would fit within a's nominal quota (level 0). Then a holds
    x (1) and b holds 1 less: the same 1 CPU is free for a, but W would now borrow (level 1),
    as B does; at the same level B's priority puts it first, and B is admitted before W holds
    a's quota for the cycle."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("2")}}, cohort="co", reclaim="LowerPriority"),
                           cq("b", {"default": {CPU: quota("2")}}, cohort="co")],
                          [cohort("co", quotas={("default", CPU): quota("1")})]))
    admitted(cl, "b_hi1", "b", {CPU: ("default", "2")}, priority=10)
    admitted(cl, "b_hi2", "b", {CPU: ("default", "2")}, priority=10)
    w = wl("W", "a", {CPU: "2"})
    first = nominate(cl, w)
    assert (first.assignment.final_mode(), first.assignment.borrow, first.targets) == ("Preempt", 0, [])
    admitted(cl, "x", "a", {CPU: ("default", "1")}, priority=10)
    cl.release(cl.admitted["b"]["b_hi1"])
    admitted(cl, "b_1", "b", {CPU: ("default", "1")}, priority=10)
    assert statuses(cl, w, wl("B", "b", {CPU: "1"}, priority=5)) == {"W": "no-candidates", "B": "admitted"}


def test_the_first_use_of_a_flavor_resource_moves_the_memo() -> None:
    """As above, where what moves is the first use of a flavor-resource in the tree: W asks 2 CPU
    (no candidates, within a's nominal quota) and 1 GPU, which nothing has used yet (level 0).
    Then a's x_gpu takes a's one GPU: W's GPU would borrow b's (level 1), so W now comes after B
    (same level, lower priority) and B is admitted."""
    quotas = {CPU: quota("2"), GPU: quota("1")}
    cl = Cluster.of(setup([cq("a", {"default": dict(quotas)}, cohort="co", reclaim="LowerPriority"),
                           cq("b", {"default": dict(quotas)}, cohort="co")],
                          [cohort("co", quotas={("default", CPU): quota("1")})]))
    admitted(cl, "b_hi1", "b", {CPU: ("default", "2")}, priority=10)
    admitted(cl, "b_hi2", "b", {CPU: ("default", "2")}, priority=10)
    w = wl("W", "a", {CPU: "2", GPU: "1"})
    first = nominate(cl, w)
    assert (first.assignment.final_mode(), first.assignment.borrow, first.targets) == ("Preempt", 0, [])
    admitted(cl, "x_gpu", "a", {GPU: ("default", "1")}, priority=10)
    assert statuses(cl, w, wl("B", "b", {CPU: "1"}, priority=5)) == {"W": "no-candidates", "B": "admitted"}


def test_a_search_that_compared_shares_counts_whatever_came_before() -> None:
    """As test_a_remembered_failure_is_searched_again_when_shares_move, after one other search has
    compared shares (a 3-CPU head, bounded by them): the count of such comparisons only has to
    move, from wherever it stands, for the failure to be kept as depending on shares."""
    cl = _shares()
    assert nominate(cl, wl("w3", "a", {CPU: "3"})).targets == []
    head = wl("w", "a", {CPU: "2"})
    assert nominate(cl, head).targets == []
    admitted(cl, "b_mem", "b", {MEM: ("default", "4")})
    assert {t.workload.key for t in nominate(cl, head).targets} == {"b1", "b2"}
