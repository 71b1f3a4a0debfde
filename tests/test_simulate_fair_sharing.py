"""Fair-sharing preemption (``compiler.tools.simulate.fair_preemption``): the cases of
kubernetes-sigs/kueue v0.19.2 ``pkg/scheduler/preemption/preemption_fair_test.go`` that
tests/test_simulate_kueue_fair.py does not port (TestFairPreemptions' weight, deep-tree,
nominal-first and +Inf-share cases, TestFairPreemptionSkipsUnsatisfiableTournament's outcome),
then situations no upstream case reaches, found by mutating the module, each expectation read
from the same tag's ``pkg/scheduler/preemption/preemption.go`` (runFirstFsStrategy,
runSecondFsStrategy, findCandidates) and ``pkg/scheduler/preemption/fairsharing/
{ordering,target,strategy}.go`` as cited per test. As upstream, every search must leave the quota
tree as it found it (``run``).
"""

from __future__ import annotations

from sim_kueue import CPU, MEM, admitted, cohort, cq, quota, setup, targets, wl

from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.objects import ClusterQueueSpec, CohortSpec

LP, ANY = "LowerPriority", "Any"
FAIR = "InCohortFairSharing"
RECLAIM = "InCohortReclamation"
WITHIN = "InClusterQueue"
BOTH = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def fair(cqs: list[ClusterQueueSpec], cohorts: list[CohortSpec] | None = None,
         strategies: tuple[str, ...] = BOTH) -> Cluster:
    return Cluster.of(setup(cqs, cohorts or [], fair_sharing=True, strategies=strategies, flavors={"default": {}}))


def add(cl: Cluster, *specs: tuple[str, str, str, int]) -> None:
    """Admitted workloads (name, ClusterQueue, CPU, priority) on flavor ``default``."""
    for name, q, amount, prio in specs:
        admitted(cl, name, q, {CPU: ("default", amount)}, priority=prio)


def run(cl: Cluster, cq_name: str, amount: str, priority: int = 0, flavor: str = "default") -> set[tuple[str, str]]:
    """GetTargets for ``amount`` CPU in Preempt mode on ``flavor``; the tree must be unchanged."""
    def state() -> dict[str, dict[tuple[str, str], int]]:
        return {n.name: {k: v for k, v in n.usage.items() if v} for n in (*cl.tree.cqs.values(), *cl.tree.cohorts.values())}
    before = state()
    got = targets(cl, wl("incoming", cq_name, {CPU: amount}, priority=priority), {CPU: (flavor, "Preempt")})
    assert state() == before
    return got


def units(q: str, *names: str, prio: int = 0) -> list[tuple[str, str, str, int]]:
    return [(n, q, "1", prio) for n in names]


# ---- TestFairPreemptions, the cases tests/test_simulate_kueue_fair.py leaves out ----


def test_cq_with_higher_weight_can_preempt_more() -> None:
    """TestFairPreemptions "CQ with higher weight can preempt more"."""
    cl = fair([cq("a", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY, weight=2.0),
               cq("b", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY),
               cq("c", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY)])
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert run(cl, "a", "2") == {("b1", FAIR), ("b2", FAIR)}


def test_can_preempt_anything_borrowing_from_cq_with_zero_weight() -> None:
    """TestFairPreemptions "can preempt anything borrowing from CQ with 0 weight"."""
    cl = fair([cq("a", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY),
               cq("b", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY, weight=0.0),
               cq("c", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY)])
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert run(cl, "a", "3") == {("b1", FAIR), ("b2", FAIR), ("b3", FAIR)}


def test_cant_preempt_nominal_from_cq_with_zero_weight() -> None:
    """TestFairPreemptions "can't preempt nominal from CQ with 0 weight"."""
    cl = fair([cq("a", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY),
               cq("b", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY, weight=0.0)])
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3"))
    assert run(cl, "a", "1") == set()


def test_cant_preempt_nominal_from_cohort_with_zero_weight() -> None:
    """TestFairPreemptions "can't preempt nominal from Cohort with 0 weight"."""
    cl = fair([cq("left-cq", {"default": {CPU: quota("0")}}, cohort="root", reclaim=ANY),
               cq("right-cq", {"default": {CPU: quota("0")}}, cohort="right-cohort", reclaim=ANY, weight=0.0)],
              [cohort("root"), cohort("right-cohort", "root", 0.0, {("default", CPU): quota("1")})])
    add(cl, ("right-1", "right-cq", "1", 0))
    assert run(cl, "left-cq", "1") == set()


def test_forced_to_preempt_within_cluster_queue_because_borrower_too_important() -> None:
    """TestFairPreemptions "forced to preempt within clusterqueue because borrowing workload too
    important": RIGHT's only candidate is of higher priority than the preemptor (LowerPriority)."""
    cl = fair([cq("a", {"default": {CPU: quota("5")}}, cohort="ROOT", weight=10.0, reclaim=LP, within=LP),
               cq("b", cohort="RIGHT", weight=0.1)],
              [cohort("ROOT"), cohort("RIGHT", "ROOT", 0.1, {("default", CPU): quota("3")})])
    add(cl, *units("a", "a1", "a2", "a3", prio=-1), ("b1", "b", "4", 100))
    assert run(cl, "a", "4") == {("a1", WITHIN), ("a2", WITHIN), ("a3", WITHIN)}


def test_deep_preemption() -> None:
    """TestFairPreemptions "deep preemption": the almost-LCAs are the cohorts A (weight 1.01)
    and B (0.99) three levels above the queues; CCCC four levels down provides the capacity."""
    cohorts = [cohort("ROOT"), cohort("A", "ROOT", 1.01), cohort("AA", "A"), cohort("AAA", "AA"),
               cohort("B", "ROOT", 0.99), cohort("BB", "B"), cohort("BBB", "BB"),
               cohort("C", "ROOT"), cohort("CC", "C"), cohort("CCC", "CC"),
               cohort("CCCC", "CCC", quotas={("default", CPU): quota("1")})]
    cl = fair([cq("a", {"default": {CPU: quota("0")}}, cohort="AAA", reclaim=ANY),
               cq("b", {"default": {CPU: quota("0")}}, cohort="BBB")], cohorts)
    add(cl, ("b1", "b", "1", 0))
    assert run(cl, "a", "1") == {("b1", FAIR)}


def test_cohort_with_zero_weight_can_reclaim_nominal_quota() -> None:
    """TestFairPreemptions "cohort with zero weight can reclaim nominal quota"."""
    cl = fair([cq("a", {"default": {CPU: quota("0")}}, cohort="A", weight=0.0, reclaim=ANY),
               cq("b", {"default": {CPU: quota("0")}}, cohort="ROOT", weight=1.0)],
              [cohort("ROOT"), cohort("A", "ROOT", 0.0, {("default", CPU): quota("1")})])
    add(cl, ("b1", "b", "1", 0))
    assert run(cl, "a", "1") == {("b1", FAIR)}


def test_nominal_first_within_nominal_preempts_despite_high_share() -> None:
    """TestFairPreemptions "nominal first: workload fitting within nominal can preempt despite
    high aggregate DRS" (FairSharingPreemptWithinNominal, beta, on by default)."""
    cqs = [cq("a", {"premium": {CPU: quota("3")}, "cheap": {CPU: quota("0")}}, cohort="all", reclaim=ANY,
              when_borrow="MayStopSearch", when_preempt="MayStopSearch"),
           cq("b", {"premium": {CPU: quota("0")}, "cheap": {CPU: quota("6")}}, cohort="all")]
    cl = Cluster.of(setup(cqs, fair_sharing=True))
    for name, q, flavor in [("a_prem1", "a", "premium"), ("a_prem2", "a", "premium"),
                            *[(f"a_cheap{i}", "a", "cheap") for i in range(1, 6)], ("b_prem1", "b", "premium")]:
        admitted(cl, name, q, {CPU: (flavor, "1")})
    assert run(cl, "a", "1", flavor="premium") == {("b_prem1", RECLAIM)}


def test_zero_weight_borrowing_preemptor_cannot_preempt_from_weighted_borrower() -> None:
    """TestFairPreemptions "zero weight borrowing preemptor cannot preempt from a borrowing CQ
    with a non-zero weight" (fsStrategyUnsatisfiable: the preemptor's share is +Inf)."""
    cl = fair([cq("a", {"default": {CPU: quota("1")}}, cohort="all", weight=0.0, reclaim=ANY),
               cq("b", {"default": {CPU: quota("1")}}, cohort="all", weight=1.0)])
    add(cl, ("a1", "a", "1", 0), *units("b", "b1", "b2"))
    assert run(cl, "a", "1") == set()


def test_zero_weight_borrowing_preemptor_can_preempt_from_zero_weight_borrower() -> None:
    """TestFairPreemptions "zero weight borrowing preemptor can preempt from a borrowing CQ which
    also has zero weight": two +Inf shares compare by their unweighted ratios."""
    cl = fair([cq("a", {"default": {CPU: quota("1")}}, cohort="all", weight=0.0, reclaim=ANY),
               cq("b", {"default": {CPU: quota("0")}}, cohort="all", weight=0.0)],
              [cohort("all", quotas={("default", CPU): quota("3")})])
    add(cl, *units("b", "b1", "b2", "b3"))
    assert run(cl, "a", "2") == {("b1", FAIR)}


def test_non_zero_weight_borrowing_preemptor_preempts_from_borrower() -> None:
    """TestFairPreemptions "non-zero weight borrowing preemptor preempts from a borrowing CQ"."""
    cl = fair([cq("a", {"default": {CPU: quota("1")}}, cohort="all", weight=1.0, reclaim=ANY),
               cq("b", {"default": {CPU: quota("0")}}, cohort="all", weight=1.0)],
              [cohort("all", quotas={("default", CPU): quota("3")})])
    add(cl, *units("b", "b1", "b2", "b3"))
    assert run(cl, "a", "2") == {("b1", FAIR)}


def test_candidates_skipped_by_first_strategy_reach_the_second() -> None:
    """TestFairPreemptions "candidates skipped by the first strategy are still available to the
    second strategy": A borrows on weight 0 (share +Inf), so x's candidates skip the first
    strategy; once y1 is gone A no longer borrows and the second strategy takes x1."""
    cl = fair([cq("p", {"default": {CPU: quota("2")}}, cohort="A", weight=1.0, reclaim=ANY),
               cq("y", {"default": {CPU: quota("2")}}, cohort="A", weight=1.0),
               cq("x", {"default": {CPU: quota("1")}}, cohort="ROOT", weight=1.0)],
              [cohort("ROOT"), cohort("A", "ROOT", 0.0, {("default", CPU): quota("1")})])
    add(cl, ("p1", "p", "2", 0), ("y1", "y", "2", 0), ("y2", "y", "2", 0), *units("x", "x1", "x2"))
    assert run(cl, "p", "1") == {("y1", FAIR), ("x1", FAIR)}


def test_unsatisfiable_tournament_preempts_nothing_either_way() -> None:
    """TestFairPreemptionSkipsUnsatisfiableTournament, its outcome (the Go test also counts log
    lines): with the preemptor's weight 0 (share +Inf, the tournament skipped) or 1, nothing."""
    for weight in (0.0, 1.0):
        cl = fair([cq("a", {"default": {CPU: quota("1")}}, cohort="all", weight=weight, reclaim=ANY),
                   cq("b", {"default": {CPU: quota("1")}}, cohort="all", weight=1.0)])
        add(cl, ("a1", "a", "1", 0), *units("b", "b1", "b2"))
        assert run(cl, "a", "1") == set(), weight


# ---- beyond the upstream cases: what mutating fair_preemption found untested ----

S2A = ("LessThanOrEqualToFinalShare",)


def test_a_single_strategy_has_no_second_round() -> None:
    """fairPreemptions runs runSecondFsStrategy only ``if !fits && len(strategies) > 1``. The
    "candidates skipped by the first strategy" case above needs the second strategy (y1 and x1
    pass only LessThanInitialShare); configured with LessThanOrEqualToFinalShare alone, nothing
    is preempted."""
    cl = fair([cq("p", {"default": {CPU: quota("2")}}, cohort="A", weight=1.0, reclaim=ANY),
               cq("y", {"default": {CPU: quota("2")}}, cohort="A", weight=1.0),
               cq("x", {"default": {CPU: quota("1")}}, cohort="ROOT", weight=1.0)],
              [cohort("ROOT"), cohort("A", "ROOT", 0.0, {("default", CPU): quota("1")})], strategies=S2A)
    add(cl, ("p1", "p", "2", 0), ("y1", "y", "2", 0), ("y2", "y", "2", 0), *units("x", "x1", "x2"))
    assert run(cl, "p", "1") == set()


def test_two_infinite_shares_are_compared_by_the_first_strategy() -> None:
    """runFirstFsStrategy skips a target only when fsStrategyUnsatisfiable: the preemptor's share
    is +Inf and the target's is not. With both +Inf (weight 0, borrowing) the candidates are
    simulated, and CompareDRS ranks them by unweighted ratio: a (borrowing 1 with the incoming
    workload) is below b without b1 (borrowing 2), so LessThanOrEqualToFinalShare alone takes b1."""
    cl = fair([cq("a", {"default": {CPU: quota("1")}}, cohort="all", weight=0.0, reclaim=ANY),
               cq("b", {"default": {CPU: quota("0")}}, cohort="all", weight=0.0)],
              [cohort("all", quotas={("default", CPU): quota("3")})], strategies=S2A)
    add(cl, *units("b", "b1", "b2", "b3"))
    assert run(cl, "a", "2") == {("b1", FAIR)}


def test_less_than_initial_share_is_strict() -> None:
    """strategy.go LessThanInitialShare: ``CompareDRS(preemptorNewShare, targetOldShare) < 0``.
    a (at nominal 3, plus the incoming 1) and b (4 of 3) both borrow 1 of the cohort's 9: equal
    shares, so with LessThanInitialShare as the only strategy b1 is not preempted."""
    cl = fair([cq(n, {"default": {CPU: quota("3")}}, cohort="all", reclaim=ANY) for n in "abc"],
              strategies=("LessThanInitialShare",))
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4"), *units("c", "c1", "c2"))
    assert run(cl, "a", "1") == set()


def test_a_cohort_on_the_preemptors_path_is_not_pruned() -> None:
    """ordering.go nextTarget prunes a Cohort that does not borrow unless it is on the path from
    the root to the preemptor ("there may be imbalance within some subtree, or a possible
    preemption within Preemptor CQ itself"). p may not borrow (borrowingLimit 0) and is at its
    nominal quota, so the incoming workload preempts p_low in p; P stays within its quota (s
    lends it 2), yet the ordering must still descend into it to reach p.

        ROOT -- P -- p (2, borrowingLimit 0; p_low uses 2), s (2, unused)
    """
    cl = fair([cq("p", {"default": {CPU: quota("2", "0")}}, cohort="P", within=LP, reclaim=ANY),
               cq("s", {"default": {CPU: quota("2")}}, cohort="P")], [cohort("ROOT"), cohort("P", "ROOT")])
    add(cl, ("p_low", "p", "2", -1))
    assert run(cl, "p", "1") == {("p_low", WITHIN)}


def _cohort_beside_a_queue(q_uses: int) -> Cluster:
    """ROOT -- p (4, the preemptor's: p0 uses 2 at a priority no policy preempts), q (0, using
    ``q_uses``), C -- c (0, using 1). The root is full; p reclaims within its nominal quota, so
    the first target the ordering reaches gives up a workload (FairSharingPreemptWithinNominal)."""
    cl = fair([cq("p", {"default": {CPU: quota("4")}}, cohort="ROOT", reclaim=ANY),
               cq("q", {"default": {CPU: quota("0")}}, cohort="ROOT"),
               cq("c", {"default": {CPU: quota("0")}}, cohort="C")], [cohort("ROOT"), cohort("C", "ROOT")])
    add(cl, ("p0", "p", str(3 - q_uses), 5), *units("q", *[f"q{i}" for i in range(1, q_uses + 1)]), *units("c", "c1"))
    return cl


def test_a_queue_above_a_cohorts_share_is_visited_first() -> None:
    """nextTarget descends into the highest Cohort only if its share is at least the highest
    ClusterQueue's: q borrows 2, C 1, so q gives up q1."""
    assert run(_cohort_beside_a_queue(2), "p", "1") == {("q1", RECLAIM)}


def test_a_cohort_wins_a_tie_with_a_queue() -> None:
    """nextTarget: ``CompareDRS(highestCohortDrs, highestCqDrs) >= 0`` ("as a tiebreak, choosing
    the Cohort seems slightly more fair"): q and C both borrow 1 of the same pool, so c1 goes."""
    assert run(_cohort_beside_a_queue(1), "p", "1") == {("c1", RECLAIM)}


def test_a_tie_with_the_preemptors_queue_goes_to_the_other_queue() -> None:
    """nextTarget breaks a tie between ClusterQueues of equal share with CandidatesOrdering on
    their first candidates, which puts other ClusterQueues' workloads before the preemptor's own
    (pkg/scheduler/preemption/common/ordering.go), whatever their priorities. a (with the
    incoming 3) and b both borrow 1: b is visited first, b1 fails LessThanOrEqualToFinalShare (b
    would not borrow without it), then a's own a_low goes and a still does not fit: nothing.
    Visiting a first would have freed a_low, after which a no longer borrows and b1 passes."""
    cl = fair([cq("a", {"default": {CPU: quota("3")}}, cohort="all", within=LP, reclaim=ANY),
               cq("b", {"default": {CPU: quota("1")}}, cohort="all")], strategies=S2A)
    add(cl, ("a_low", "a", "1", -2), ("b1", "b", "2", 0))
    assert run(cl, "a", "3", priority=2) == set()


def test_a_tie_between_queues_goes_to_the_better_next_candidate() -> None:
    """The same tie-break after a pop: x1 (priority -1) sorts before y1 (0), which sorts before
    x2 (1). X borrows 2, Y 1: X gives up x1; then X and Y tie, and Y's first candidate y1 comes
    before X's next one x2, so y1 goes. (a reclaims within its nominal quota, so every target
    the ordering reaches is taken: FairSharingPreemptWithinNominal.)"""
    cl = fair([cq("a", {"default": {CPU: quota("4")}}, cohort="all", reclaim=ANY),
               cq("X", {"default": {CPU: quota("0")}}, cohort="all"),
               cq("Y", {"default": {CPU: quota("0")}}, cohort="all")])
    add(cl, ("a0", "a", "1", 9), ("x1", "X", "1", -1), ("x2", "X", "1", 1), ("y1", "Y", "1", 0))
    assert run(cl, "a", "2", priority=5) == {("x1", RECLAIM), ("y1", RECLAIM)}


def test_the_second_strategy_goes_on_past_a_cohort_with_nothing_to_give() -> None:
    """runSecondFsStrategy iterates TargetClusterQueueOrdering.Iter, which skips an iteration
    that only pruned nodes (nextTarget returned nil) and goes on. C borrows as much as b (2 of
    ROOT's 7) and wins the tie (a Cohort before a ClusterQueue), but c1 is above the preemptor's
    priority (reclaimWithinCohort LowerPriority): descending into C only prunes it. b1 fails
    LessThanOrEqualToFinalShare (b would stop borrowing) and passes LessThanInitialShare (p
    borrows 1 with the incoming 5, b 2), so the second strategy takes it.

        ROOT -- p (4), b (3; b1 uses 5), C -- c (0; c1 uses 2)
    """
    cl = fair([cq("p", {"default": {CPU: quota("4")}}, cohort="ROOT", reclaim=LP),
               cq("b", {"default": {CPU: quota("3")}}, cohort="ROOT"),
               cq("c", {"default": {CPU: quota("0")}}, cohort="C")], [cohort("ROOT"), cohort("C", "ROOT")])
    add(cl, ("b1", "b", "5", 0), ("c1", "c", "2", 5))
    assert run(cl, "p", "5", priority=1) == {("b1", FAIR)}


def test_the_first_strategy_goes_on_after_an_unsatisfiable_target() -> None:
    """runFirstFsStrategy skips a target whose candidates cannot pass (fsStrategyUnsatisfiable:
    the preemptor's side is +Inf, the target's is not), collects them for the second strategy,
    and goes on (``continue``). Here that reaches b: L and b borrow alike (memory 2 of ROOT's 4
    dominates both), L wins the tie as a Cohort, and inside L the target t is unsatisfiable
    (AP, weight 0, borrows: +Inf). Then L is pruned and b is next: without b1 (CPU only) b's
    share is still its memory's, equal to L's, so LessThanOrEqualToFinalShare takes b1.

        ROOT (2 CPU, 4 memory) -- L -- AP (weight 0) -- p (0; the incoming 1 CPU)
                                    -- t (0; t1 1 CPU, t_mem 2 memory)
                               -- b (0; b1 1 CPU, b_mem 2 memory)
                               -- r (2 CPU; r1 2 CPU)
    """
    none = {CPU: quota("0"), MEM: quota("0")}
    cl = fair([cq("p", {"default": dict(none)}, cohort="AP", reclaim=ANY),
               cq("t", {"default": dict(none)}, cohort="L"),
               cq("b", {"default": dict(none)}, cohort="ROOT"),
               cq("r", {"default": {CPU: quota("2"), MEM: quota("0")}}, cohort="ROOT")],
              [cohort("ROOT", quotas={("default", CPU): quota("2"), ("default", MEM): quota("4")}),
               cohort("L", "ROOT"), cohort("AP", "L", 0.0)])
    for name, q, res, amount in [("t1", "t", CPU, "1"), ("t_mem", "t", MEM, "2"), ("b1", "b", CPU, "1"),
                                 ("b_mem", "b", MEM, "2"), ("r1", "r", CPU, "2")]:
        admitted(cl, name, q, {res: ("default", amount)})
    assert run(cl, "p", "1") == {("b1", FAIR)}
