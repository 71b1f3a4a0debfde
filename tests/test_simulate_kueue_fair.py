"""Fair-sharing preemption cases ported from kubernetes-sigs/kueue v0.19.2,
``pkg/scheduler/preemption/preemption_fair_test.go`` (TestFairPreemptions): ``baseCQs`` a, b, c
(3 CPU each) and ``preemptible`` (0) in cohort ``all``, incoming workloads assigned to flavor
``default`` in Preempt mode, strategies [LessThanOrEqualToFinalShare, LessThanInitialShare] unless
the case sets them. Every test also checks that the quota tree is left as it was (the upstream
test's "Snapshot was modified" check).
"""

from __future__ import annotations

from sim_kueue import CPU, admitted, cohort, cq, quota, setup, targets, wl

from compiler.tools.simulate.cluster import Cluster

LP, ANY = "LowerPriority", "Any"
FAIR = "InCohortFairSharing"
RECLAIM = "InCohortReclamation"
WITHIN = "InClusterQueue"


def base(strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")) -> Cluster:
    kw = dict(cohort="all", within=LP, reclaim=ANY, bwc=LP, threshold=-3)
    cqs = [cq(n, {"default": {CPU: quota("3")}}, **kw) for n in ("a", "b", "c")]  # type: ignore[arg-type]
    cqs.append(cq("preemptible", {"default": {CPU: quota("0")}}, cohort="all"))
    return Cluster.of(setup(cqs, fair_sharing=True, strategies=strategies))


def add(cl: Cluster, *specs: tuple[str, str, str, int]) -> None:
    for name, q, amount, prio in specs:
        admitted(cl, name, q, {CPU: ("default", amount)}, priority=prio)


def units(q: str, *names: str, prio: int = 0) -> list[tuple[str, str, str, int]]:
    return [(n, q, "1", prio) for n in names]


def run(cl: Cluster, cq_name: str, amount: str, priority: int = 0) -> set[tuple[str, str]]:
    before = {n.name: dict(n.usage) for n in (*cl.tree.cqs.values(), *cl.tree.cohorts.values())}
    got = targets(cl, wl("incoming", cq_name, {CPU: amount}, priority=priority), {CPU: ("default", "Preempt")})
    after = {n.name: {k: v for k, v in n.usage.items() if v} for n in (*cl.tree.cqs.values(), *cl.tree.cohorts.values())}
    assert after == {k: {fr: v for fr, v in u.items() if v} for k, u in before.items()}
    return got


def test_reclaim_nominal_from_user_using_the_most() -> None:
    """TestFairPreemptions "reclaim nominal from user using the most"."""
    cl = base()
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5"), *units("c", "c1"))
    assert run(cl, "c", "1") == {("b1", RECLAIM)}


def test_can_reclaim_from_queue_using_less() -> None:
    """TestFairPreemptions "can reclaim from queue using less, if taking the latest workload from
    user using the most isn't enough"."""
    cl = base()
    add(cl, ("a1", "a", "3", 0), ("a2", "a", "1", 0), ("b1", "b", "2", 0), ("b2", "b", "3", 0))
    assert run(cl, "c", "3") == {("a1", RECLAIM)}


def test_reclaim_borrowable_quota_from_user_using_the_most() -> None:
    """TestFairPreemptions "reclaim borrowable quota from user using the most"."""
    cl = base()
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5"), *units("c", "c1"))
    assert run(cl, "a", "1") == {("b1", FAIR)}


def test_preempt_one_from_each_cq_borrowing() -> None:
    """TestFairPreemptions "preempt one from each CQ borrowing"."""
    cl = base()
    add(cl, ("a1", "a", "0.5", 0), ("a2", "a", "0.5", 0), ("a3", "a", "3", 0),
        ("b1", "b", "0.5", 0), ("b2", "b", "0.5", 0), ("b3", "b", "3", 0))
    assert run(cl, "c", "2") == {("a1", RECLAIM), ("b1", RECLAIM)}


def test_cant_preempt_when_everyone_under_nominal() -> None:
    """TestFairPreemptions "can't preempt when everyone under nominal"."""
    cl = base()
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3"), *units("c", "c1", "c2", "c3"))
    assert run(cl, "c", "1") == set()


def test_cant_preempt_when_it_would_switch_the_imbalance() -> None:
    """TestFairPreemptions "can't preempt when it would switch the imbalance"."""
    cl = base()
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5"))
    assert run(cl, "a", "2") == set()


def test_can_preempt_lower_priority_workloads_from_same_cq() -> None:
    """TestFairPreemptions "can preempt lower priority workloads from same CQ"."""
    cl = base()
    add(cl, *units("a", "a1_low", "a2_low", prio=-1), *units("a", "a3", "a4"),
        *units("b", "b1", "b2", "b3", "b4", "b5"))
    assert run(cl, "a", "2") == {("a1_low", WITHIN), ("a2_low", WITHIN)}


def test_can_preempt_a_combination_of_same_cq_and_highest_user() -> None:
    """TestFairPreemptions "can preempt a combination of same CQ and highest user"."""
    cl = base()
    add(cl, *units("a", "a_low", prio=-1), *units("a", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert run(cl, "a", "2") == {("a_low", WITHIN), ("b1", FAIR)}


def test_preempt_huge_workload_if_no_other_option() -> None:
    """TestFairPreemptions "preempt huge workload if there is no other option, as long as the target
    CQ gets a lower share"."""
    cl = base()
    add(cl, ("b1", "b", "9", 0))
    assert run(cl, "a", "2") == {("b1", RECLAIM)}


def test_cant_preempt_huge_workload_if_incoming_is_also_huge() -> None:
    """TestFairPreemptions "can't preempt huge workload if the incoming is also huge"."""
    cl = base()
    add(cl, ("a1", "a", "2", 0), ("b1", "b", "7", 0))
    assert run(cl, "a", "5") == set()


def test_cant_preempt_two_smaller_workloads_if_incoming_is_huge() -> None:
    """TestFairPreemptions "can't preempt 2 smaller workloads if the incoming is huge"."""
    cl = base()
    add(cl, ("b1", "b", "2", 0), ("b2", "b", "2", 0), ("b3", "b", "3", 0))
    assert run(cl, "a", "6") == set()


def test_preempt_from_target_and_others_even_if_over_nominal() -> None:
    """TestFairPreemptions "preempt from target and others even if over nominal"."""
    cl = base()
    add(cl, ("a1_low", "a", "2", -1), ("a2_low", "a", "1", -1), ("b1", "b", "3", 0), ("b2", "b", "3", 0))
    assert run(cl, "a", "4") == {("a1_low", WITHIN), ("b1", FAIR)}


def test_prefer_to_preempt_workloads_that_dont_make_target_biggest_share() -> None:
    """TestFairPreemptions "prefer to preempt workloads that don't make the target CQ have the
    biggest share"."""
    cl = base()
    add(cl, ("b1", "b", "2", 0), ("b2", "b", "1", 0), ("b3", "b", "2", 0), ("c1", "c", "1", 0))
    assert run(cl, "a", "3.5") == {("b2", FAIR)}


def test_preempt_from_different_cqs_if_end_result_has_smaller_max_share() -> None:
    """TestFairPreemptions "preempt from different cluster queues if the end result has a smaller
    max share"."""
    cl = base()
    add(cl, ("b1", "b", "2", 0), ("b2", "b", "2.5", 0), ("c1", "c", "2", 0), ("c2", "c", "2.5", 0))
    assert run(cl, "a", "3.5") == {("b1", FAIR), ("c1", FAIR)}


def test_scenario_above_does_not_flap() -> None:
    """TestFairPreemptions "scenario above does not flap"."""
    cl = base()
    add(cl, ("a1", "a", "3.5", 0), ("b2", "b", "2.5", 0), ("c2", "c", "2.5", 0))
    assert run(cl, "b", "2") == set()


def test_cannot_preempt_if_candidate_cq_goes_under_nominal() -> None:
    """TestFairPreemptions "cannot preempt if it would make the candidate CQ go under nominal after
    preempting one element"."""
    cl = base()
    add(cl, ("b1", "b", "3", 0), ("b2", "b", "3", 0), ("c1", "c", "3", 0))
    assert run(cl, "a", "4") == set()


def test_workloads_under_priority_threshold_not_capriciously_preempted() -> None:
    """TestFairPreemptions "workloads under priority threshold not capriciously preempted"
    (borrowWithinCohort does not apply under fair sharing)."""
    cl = base()
    add(cl, *units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3"),
        *units("preemptible", "preemptible1", "preemptible2", "preemptible3", prio=-3))
    assert run(cl, "a", "2") == set()


def test_preempt_lower_priority_first_even_if_big() -> None:
    """TestFairPreemptions "preempt lower priority first, even if big" (LessThanInitialShare only)."""
    cl = base(("LessThanInitialShare",))
    add(cl, ("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1))
    assert run(cl, "a", "1") == {("b_low", FAIR)}


def test_preempt_workload_that_doesnt_transfer_the_imbalance() -> None:
    """TestFairPreemptions "preempt workload that doesn't transfer the imbalance, even if high
    priority" (LessThanOrEqualToFinalShare only)."""
    cl = base(("LessThanOrEqualToFinalShare",))
    add(cl, ("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1))
    assert run(cl, "a", "1") == {("b_high", FAIR)}


def test_can_preempt_within_cluster_queue_when_no_cohort() -> None:
    """TestFairPreemptions "can preempt within cluster queue when no cohort"."""
    cl = Cluster.of(setup([cq("a", {"default": {CPU: quota("1")}}, within=LP)], fair_sharing=True))
    add(cl, ("a1", "a", "1", 0))
    assert run(cl, "a", "1", priority=1000) == {("a1", WITHIN)}


def test_hierarchical_preemption() -> None:
    """TestFairPreemptions "hierarchical preemption" (ROOT/LEFT/RIGHT cohorts with own quota,
    weights 2 on a and LEFT, 0.99 on e)."""
    cqs = [cq("a", {"default": {CPU: quota("1")}}, cohort="LEFT", weight=2.0, reclaim=ANY),
           cq("b", {"default": {CPU: quota("1")}}, cohort="LEFT"),
           cq("c", {"default": {CPU: quota("1")}}, cohort="ROOT"),
           cq("d", {"default": {CPU: quota("1")}}, cohort="RIGHT"),
           cq("e", {"default": {CPU: quota("1")}}, cohort="RIGHT", weight=0.99)]
    five = {("default", CPU): quota("5")}
    cohorts = [cohort("ROOT", quotas=five), cohort("LEFT", "ROOT", 2.0, five), cohort("RIGHT", "ROOT", 1.0, five)]
    cl = Cluster.of(setup(cqs, cohorts, fair_sharing=True))
    for q in "bcde":
        add(cl, *[(f"{q}{i}", q, "1", i) for i in range(1, 6)])
    assert run(cl, "a", "5") == {("b1", FAIR), ("b2", FAIR), ("c1", FAIR), ("c2", FAIR), ("e1", FAIR)}


def test_borrowing_cq_in_non_borrowing_cohort_is_protected() -> None:
    """TestFairPreemptions "borrowing cq in non-borrowing cohort is protected"."""
    cqs = [cq("a", {"default": {CPU: quota("5")}}, cohort="ROOT", weight=10.0, reclaim=ANY, within=LP),
           cq("b", cohort="RIGHT", weight=0.1)]
    cohorts = [cohort("ROOT"), cohort("RIGHT", "ROOT", 0.1, {("default", CPU): quota("1")})]
    cl = Cluster.of(setup(cqs, cohorts, fair_sharing=True, flavors={"default": {}}))
    add(cl, ("a1", "a", "1", -1), ("a2", "a", "1", -1), ("a3", "a", "1", -1), ("b1", "b", "1", -1))
    assert run(cl, "a", "5") == {("a1", WITHIN), ("a2", WITHIN), ("a3", WITHIN)}


def test_cq_with_zero_weight_can_reclaim_nominal_quota() -> None:
    """TestFairPreemptions "cq with zero weight can reclaim nominal quota"."""
    cqs = [cq("a", {"default": {CPU: quota("1")}}, cohort="ROOT", weight=0.0, reclaim=ANY),
           cq("b", {"default": {CPU: quota("0")}}, cohort="ROOT", weight=1.0)]
    cl = Cluster.of(setup(cqs, fair_sharing=True))
    add(cl, ("b1", "b", "1", 0))
    assert run(cl, "a", "1") == {("b1", RECLAIM)}
