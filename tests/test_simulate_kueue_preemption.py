"""Classical preemption cases ported from kubernetes-sigs/kueue v0.19.2,
``pkg/scheduler/preemption/preemption_test.go`` (TestPreemption): the same ClusterQueues
(``defaultClusterQueues``), admitted workloads, incoming workload and assignment; the simulator must
pick the same targets with the same reasons. Each test names the upstream case.
"""

from __future__ import annotations

import pytest
from sim_kueue import CPU, MEM, admitted, cohort, cpu, cq, quota, setup, targets, wl

from compiler.tools.simulate.cluster import Cluster

LP, ANY, NEVER, LONEP = "LowerPriority", "Any", "Never", "LowerOrNewerEqualPriority"


def default_cqs() -> Cluster:
    q = quota
    cqs = [
        cq("standalone", {"default": {CPU: q("6")}}, {"alpha": {MEM: q("3Gi")}, "beta": {MEM: q("3Gi")}}, within=LP),
        cq("c1", {"default": {CPU: q("6", "6"), MEM: q("3Gi", "3Gi")}}, cohort="cohort", within=LP, reclaim=LP),
        cq("c2", {"default": {CPU: q("6", "6"), MEM: q("3Gi", "3Gi")}}, cohort="cohort", within=NEVER, reclaim=ANY),
        cq("d1", {"default": {CPU: q("6"), MEM: q("3Gi")}}, cohort="cohort-no-limits", within=LP, reclaim=LP),
        cq("d2", {"default": {CPU: q("6"), MEM: q("3Gi")}}, cohort="cohort-no-limits", within=NEVER, reclaim=ANY),
        cq("l1", {"default": {CPU: q("6", "12"), MEM: q("3Gi", "6Gi")}}, cohort="legion", within=LP, reclaim=LP),
        cq("preventStarvation", {"default": {CPU: q("6")}}, within=LONEP),
        cq("a_standard", {"default": {CPU: q("1", "12")}}, cohort="with_shared_cq", within=NEVER, reclaim=LP,
           bwc=LP, threshold=0),
        cq("b_standard", {"default": {CPU: q("1", "12")}}, cohort="with_shared_cq", within=LP, reclaim=ANY,
           bwc=LP, threshold=0),
        cq("a_best_effort", {"default": {CPU: q("1", "12")}}, cohort="with_shared_cq", within=NEVER, reclaim=LP,
           bwc=LP, threshold=0),
        cq("b_best_effort", {"default": {CPU: q("0", "13")}}, cohort="with_shared_cq", within=NEVER, reclaim=LP,
           bwc=LP, threshold=0),
        cq("shared", {"default": {CPU: q("10")}}, cohort="with_shared_cq"),
        cq("lend1", {"default": {CPU: q("6", None, "4")}}, cohort="cohort-lend", within=LP, reclaim=LP),
        cq("lend2", {"default": {CPU: q("6", None, "2")}}, cohort="cohort-lend", within=LP, reclaim=LP),
        cq("a", {"default": {CPU: q("2"), MEM: q("2")}}, cohort="cohort-three", within=LP, reclaim=ANY),
        cq("b", {"default": {CPU: q("2"), MEM: q("2")}}, cohort="cohort-three"),
        cq("c", {"default": {CPU: q("2"), MEM: q("2")}}, cohort="cohort-three"),
    ]
    return Cluster.of(setup(cqs, fair_sharing=False))


P = "Preempt"


def test_preempt_lowest_priority() -> None:
    """preemption_test.go TestPreemption "preempt lowest priority"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("2"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("2"))
    admitted(cl, "high", "standalone", cpu("2"), priority=1)
    got = targets(cl, wl("in", "standalone", {CPU: "2"}, priority=1), {CPU: ("default", P)})
    assert got == {("low", "InClusterQueue")}


def test_preempt_multiple() -> None:
    """TestPreemption "preempt multiple"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("2"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("2"))
    admitted(cl, "high", "standalone", cpu("2"), priority=1)
    got = targets(cl, wl("in", "standalone", {CPU: "3"}, priority=1), {CPU: ("default", P)})
    assert got == {("low", "InClusterQueue"), ("mid", "InClusterQueue")}


def test_no_preemption_for_low_priority() -> None:
    """TestPreemption "no preemption for low priority"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("3"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("3"))
    assert targets(cl, wl("in", "standalone", {CPU: "1"}, priority=-1), {CPU: ("default", P)}) == set()


def test_not_enough_low_priority_workloads() -> None:
    """TestPreemption "not enough low priority workloads"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("3"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("3"))
    assert targets(cl, wl("in", "standalone", {CPU: "4"}), {CPU: ("default", P)}) == set()


def test_some_free_quota_preempt_low_priority() -> None:
    """TestPreemption "some free quota, preempt low priority"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("1"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("1"))
    admitted(cl, "high", "standalone", cpu("3"), priority=1)
    got = targets(cl, wl("in", "standalone", {CPU: "2"}, priority=1), {CPU: ("default", P)})
    assert got == {("low", "InClusterQueue")}


def test_minimal_set_excludes_low_priority() -> None:
    """TestPreemption "minimal set excludes low priority" (fillBackWorkloads)."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", cpu("1"), priority=-1)
    admitted(cl, "mid", "standalone", cpu("2"))
    admitted(cl, "high", "standalone", cpu("3"), priority=1)
    got = targets(cl, wl("in", "standalone", {CPU: "2"}, priority=1), {CPU: ("default", P)})
    assert got == {("mid", "InClusterQueue")}


def test_only_preempt_workloads_using_the_chosen_flavor() -> None:
    """TestPreemption "only preempt workloads using the chosen flavor"."""
    cl = default_cqs()
    admitted(cl, "low", "standalone", {MEM: ("alpha", "2Gi")}, priority=-1)
    admitted(cl, "mid", "standalone", {MEM: ("beta", "1Gi")})
    admitted(cl, "high", "standalone", {MEM: ("beta", "1Gi")}, priority=1)
    got = targets(cl, wl("in", "standalone", {CPU: "1", MEM: "2Gi"}, priority=1),
                  {CPU: ("default", "Fit"), MEM: ("beta", P)})
    assert got == {("mid", "InClusterQueue")}


def test_reclaim_quota_from_borrower() -> None:
    """TestPreemption "reclaim quota from borrower"."""
    cl = default_cqs()
    admitted(cl, "c1-low", "c1", cpu("3"), priority=-1)
    admitted(cl, "c2-mid", "c2", cpu("3"))
    admitted(cl, "c2-high", "c2", cpu("6"), priority=1)
    got = targets(cl, wl("in", "c1", {CPU: "3"}, priority=1), {CPU: ("default", P)})
    assert got == {("c2-mid", "InCohortReclamation")}


def test_no_workloads_borrowing() -> None:
    """TestPreemption "no workloads borrowing"."""
    cl = default_cqs()
    admitted(cl, "c1-high", "c1", cpu("4"), priority=1)
    admitted(cl, "c2-low-1", "c2", cpu("4"), priority=-1)
    assert targets(cl, wl("in", "c1", {CPU: "4"}, priority=1), {CPU: ("default", P)}) == set()


def test_not_enough_workloads_borrowing() -> None:
    """TestPreemption "not enough workloads borrowing"."""
    cl = default_cqs()
    admitted(cl, "c1-high", "c1", cpu("4"), priority=1)
    admitted(cl, "c2-low-1", "c2", cpu("4"), priority=-1)
    admitted(cl, "c2-low-2", "c2", cpu("4"), priority=-1)
    assert targets(cl, wl("in", "c1", {CPU: "4"}, priority=1), {CPU: ("default", P)}) == set()


def test_preempting_locally_borrowing_other_resources_without_cohort_candidates() -> None:
    """TestPreemption "preempting locally and borrowing other resources in cohort, without cohort
    candidates"."""
    cl = default_cqs()
    admitted(cl, "c1-low", "c1", cpu("4"), priority=-1)
    admitted(cl, "c2-low-1", "c2", cpu("4"), priority=-1)
    admitted(cl, "c2-high-2", "c2", cpu("4"), priority=1)
    got = targets(cl, wl("in", "c1", {CPU: "4", MEM: "5Gi"}, priority=1),
                  {CPU: ("default", P), MEM: ("default", P)})
    assert got == {("c1-low", "InClusterQueue")}


def test_preempting_locally_borrowing_same_resource() -> None:
    """TestPreemption "preempting locally and borrowing same resource in cohort"."""
    cl = default_cqs()
    admitted(cl, "c1-med", "c1", cpu("4"))
    admitted(cl, "c1-low", "c1", cpu("4"), priority=-1)
    admitted(cl, "c2-low-1", "c2", cpu("4"), priority=-1)
    got = targets(cl, wl("in", "c1", {CPU: "4"}, priority=1), {CPU: ("default", P)})
    assert got == {("c1-low", "InClusterQueue")}


def test_preempting_locally_borrowing_same_resource_no_borrowing_limit() -> None:
    """TestPreemption "preempting locally and borrowing same resource in cohort; no borrowing limit
    in the cohort"."""
    cl = default_cqs()
    admitted(cl, "d1-med", "d1", cpu("4"))
    admitted(cl, "d1-low", "d1", cpu("4"), priority=-1)
    admitted(cl, "d2-low-1", "d2", cpu("4"), priority=-1)
    got = targets(cl, wl("in", "d1", {CPU: "4"}, priority=1), {CPU: ("default", P)})
    assert got == {("d1-low", "InClusterQueue")}


def test_preempting_locally_borrowing_other_resources_with_cohort_candidates() -> None:
    """TestPreemption "preempting locally and borrowing other resources in cohort, with cohort
    candidates"."""
    cl = default_cqs()
    admitted(cl, "c1-med", "c1", cpu("4"))
    admitted(cl, "c2-low-1", "c2", cpu("5"), priority=-1)
    admitted(cl, "c2-low-2", "c2", cpu("1"), priority=-1)
    admitted(cl, "c2-low-3", "c2", cpu("1"), priority=-1)
    got = targets(cl, wl("in", "c1", {CPU: "2", MEM: "5Gi"}, priority=1),
                  {CPU: ("default", P), MEM: ("default", P)})
    assert got == {("c1-med", "InClusterQueue")}


def test_preempting_locally_not_borrowing_in_one_queue_cohort() -> None:
    """TestPreemption "preempting locally and not borrowing same resource in 1-queue cohort"."""
    cl = default_cqs()
    admitted(cl, "l1-med", "l1", cpu("4"))
    admitted(cl, "l1-low", "l1", cpu("2"), priority=-1)
    got = targets(cl, wl("in", "l1", {CPU: "4"}, priority=1), {CPU: ("default", P)})
    assert got == {("l1-med", "InClusterQueue")}


def test_do_not_reclaim_from_same_priority_with_lower_priority_policy() -> None:
    """TestPreemption "do not reclaim borrowed quota from same priority for
    withinCohort=ReclaimFromLowerPriority"."""
    cl = default_cqs()
    admitted(cl, "c1", "c1", cpu("2"))
    admitted(cl, "c2-1", "c2", cpu("4"))
    admitted(cl, "c2-2", "c2", cpu("4"))
    assert targets(cl, wl("in", "c1", {CPU: "4"}), {CPU: ("default", P)}) == set()


def test_reclaim_from_same_priority_with_any() -> None:
    """TestPreemption "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny"."""
    cl = default_cqs()
    admitted(cl, "c1-1", "c1", cpu("4"))
    admitted(cl, "c1-2", "c1", cpu("4"), priority=1)
    admitted(cl, "c2", "c2", cpu("2"))
    got = targets(cl, wl("in", "c2", {CPU: "4"}), {CPU: ("default", P)})
    assert got == {("c1-1", "InCohortReclamation")}


def test_preempt_from_all_cluster_queues_in_cohort() -> None:
    """TestPreemption "preempt from all ClusterQueues in cohort"."""
    cl = default_cqs()
    admitted(cl, "c1-low", "c1", cpu("3"), priority=-1)
    admitted(cl, "c1-mid", "c1", cpu("2"))
    admitted(cl, "c2-low", "c2", cpu("3"), priority=-1)
    admitted(cl, "c2-mid", "c2", cpu("4"))
    got = targets(cl, wl("in", "c1", {CPU: "4"}), {CPU: ("default", P)})
    assert got == {("c1-low", "InClusterQueue"), ("c2-low", "InCohortReclamation")}


def test_cannot_preempt_in_cluster_queue_with_never() -> None:
    """TestPreemption "can't preempt workloads in ClusterQueue for withinClusterQueue=Never"."""
    cl = default_cqs()
    admitted(cl, "c2-low", "c2", cpu("3"), priority=-1)
    assert targets(cl, wl("in", "c2", {CPU: "4"}, priority=1), {CPU: ("default", P)}) == set()


def test_preempt_newer_workloads_with_the_same_priority() -> None:
    """TestPreemption "preempt newer workloads with the same priority" (LowerOrNewerEqualPriority;
    of two candidates the most recently admitted goes first)."""
    cl = default_cqs()
    admitted(cl, "wl1", "preventStarvation", cpu("2"), priority=2, at=0.0, created=0.0)
    admitted(cl, "wl2", "preventStarvation", cpu("2"), priority=1, at=1.0, created=0.0)
    admitted(cl, "wl3", "preventStarvation", cpu("2"), priority=1, at=0.0, created=0.0)
    got = targets(cl, wl("in", "preventStarvation", {CPU: "2"}, priority=1, created=-15.0), {CPU: ("default", P)})
    assert got == {("wl2", "InClusterQueue")}


def test_borrow_within_cohort_allows_preempting_lower_priority_while_borrowing() -> None:
    """TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload from
    another ClusterQueue while borrowing"."""
    cl = default_cqs()
    admitted(cl, "a_best_effort_low", "a_best_effort", cpu("10"), priority=-1)
    admitted(cl, "b_best_effort_low", "b_best_effort", cpu("1"), priority=-1)
    got = targets(cl, wl("in", "a_standard", {CPU: "10"}), {CPU: ("default", P)})
    assert got == {("a_best_effort_low", "InCohortReclaimWhileBorrowing")}


def test_borrow_within_cohort_threshold_blocks_when_still_borrowing() -> None:
    """TestPreemption "use BorrowWithinCohort; don't allow preempting a lower-priority workload with
    priority above MaxPriorityThreshold, if borrowing is required even after the preemption"."""
    cl = default_cqs()
    admitted(cl, "b_standard", "b_standard", cpu("10"), priority=1)
    assert targets(cl, wl("in", "a_standard", {CPU: "10"}, priority=2), {CPU: ("default", P)}) == set()


def test_borrow_within_cohort_threshold_allows_without_borrowing() -> None:
    """TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload with
    priority above MaxPriorityThreshold, if borrowing is not required after the preemption"."""
    cl = default_cqs()
    admitted(cl, "b_standard", "b_standard", cpu("13"), priority=1)
    got = targets(cl, wl("in", "a_standard", {CPU: "1"}, priority=2), {CPU: ("default", P)})
    assert got == {("b_standard", "InCohortReclamation")}


def test_borrow_within_cohort_not_from_same_cluster_queue() -> None:
    """TestPreemption "use BorrowWithinCohort; don't allow for preemption of lower-priority workload
    from the same ClusterQueue"."""
    cl = default_cqs()
    admitted(cl, "a_standard", "a_standard", cpu("13"), priority=1)
    assert targets(cl, wl("in", "a_standard", {CPU: "1"}, priority=2), {CPU: ("default", P)}) == set()


def test_borrow_within_cohort_only_preempt_from_cq_if_no_workloads_below_threshold() -> None:
    """TestPreemption "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold
    and already above nominal"."""
    cl = default_cqs()
    admitted(cl, "a_standard_1", "a_standard", cpu("10"), priority=1)
    admitted(cl, "a_standard_2", "a_standard", cpu("1"), priority=1)
    admitted(cl, "b_standard_1", "b_standard", cpu("1"), priority=1)
    admitted(cl, "b_standard_2", "b_standard", cpu("1"), priority=2)
    got = targets(cl, wl("in", "b_standard", {CPU: "1"}, priority=3), {CPU: ("default", P)})
    assert got == {("b_standard_1", "InClusterQueue")}


def test_borrow_within_cohort_preempt_from_cq_and_others_below_threshold() -> None:
    """TestPreemption "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads
    below threshold"."""
    cl = default_cqs()
    admitted(cl, "b_standard_high", "b_standard", cpu("10"), priority=2)
    admitted(cl, "b_standard_mid", "b_standard", cpu("1"), priority=1)
    admitted(cl, "a_best_effort_low", "a_best_effort", cpu("1"), priority=-1)
    admitted(cl, "a_best_effort_lower", "a_best_effort", cpu("1"), priority=-2)
    got = targets(cl, wl("in", "b_standard", {CPU: "2"}, priority=2), {CPU: ("default", P)})
    assert got == {("a_best_effort_lower", "InCohortReclaimWhileBorrowing"), ("b_standard_mid", "InClusterQueue")}


def test_reclaim_quota_from_lender() -> None:
    """TestPreemption "reclaim quota from lender"."""
    cl = default_cqs()
    admitted(cl, "lend1-low", "lend1", cpu("3"), priority=-1)
    admitted(cl, "lend2-mid", "lend2", cpu("3"))
    admitted(cl, "lend2-high", "lend2", cpu("4"), priority=1)
    got = targets(cl, wl("in", "lend1", {CPU: "3"}, priority=1), {CPU: ("default", P)})
    assert got == {("lend2-mid", "InCohortReclamation")}


def test_preempt_from_all_cluster_queues_in_cohort_lend() -> None:
    """TestPreemption "preempt from all ClusterQueues in cohort-lend"."""
    cl = default_cqs()
    admitted(cl, "lend1-low", "lend1", cpu("3"), priority=-1)
    admitted(cl, "lend1-mid", "lend1", cpu("2"))
    admitted(cl, "lend2-low", "lend2", cpu("3"), priority=-1)
    admitted(cl, "lend2-mid", "lend2", cpu("4"))
    got = targets(cl, wl("in", "lend1", {CPU: "4"}), {CPU: ("default", P)})
    assert got == {("lend1-low", "InClusterQueue"), ("lend2-low", "InCohortReclamation")}


def test_cannot_preempt_beyond_requestable_quota_with_lending_limit() -> None:
    """TestPreemption "cannot preempt from other ClusterQueues if exceeds requestable quota
    including lending limit"."""
    cl = default_cqs()
    admitted(cl, "lend2-low", "lend2", cpu("10"), priority=-1)
    assert targets(cl, wl("in", "lend1", {CPU: "9"}), {CPU: ("default", P)}) == set()


@pytest.mark.parametrize("two_resources", [False, True])
def test_preemptions_from_cq_when_target_queue_is_exhausted(two_resources: bool) -> None:
    """TestPreemption "preemptions from cq when target queue is exhausted for the single requested
    resource" and "... for two requested resources"."""
    cl = default_cqs()
    both = (lambda a: {CPU: ("default", a), MEM: ("default", a)}) if two_resources else cpu
    for name, prio in (("a1", -2), ("a2", -2), ("a3", -1)):
        admitted(cl, name, "a", both("1"), priority=prio)
    for name in ("b1", "b2", "b3"):
        admitted(cl, name, "b", both("1"))
    req = {CPU: "2", MEM: "2"} if two_resources else {CPU: "2"}
    asg = {CPU: ("default", P), MEM: ("default", P)} if two_resources else {CPU: ("default", P)}
    assert targets(cl, wl("in", "a", req), asg) == {("a1", "InClusterQueue"), ("a2", "InClusterQueue")}


def test_preemptions_from_cq_when_exhausted_for_one_resource_but_not_the_other() -> None:
    """TestPreemption "preemptions from cq when target queue is exhausted for one requested
    resource, but not the other"."""
    cl = default_cqs()
    for name, prio in (("a1", -2), ("a2", -2), ("a3", -1)):
        admitted(cl, name, "a", cpu("1"), priority=prio)
    for name in ("b1", "b2", "b3"):
        admitted(cl, name, "b", cpu("1"))
    got = targets(cl, wl("in", "a", {CPU: "2", MEM: "2"}), {CPU: ("default", P), MEM: ("default", P)})
    assert got == {("a1", "InClusterQueue"), ("a2", "InClusterQueue")}


def test_allow_preemption_from_other_queues_if_target_not_exhausted() -> None:
    """TestPreemption "allow preemption from other cluster queues if target cq is not exhausted for
    the requested resource"."""
    cl = default_cqs()
    admitted(cl, "a1", "a", cpu("1"), priority=-1)
    for name in ("b1", "b2", "b3", "b4"):
        admitted(cl, name, "b", cpu("1"))
    admitted(cl, "b5", "b", cpu("1"), priority=-1)
    got = targets(cl, wl("in", "a", {CPU: "2"}), {CPU: ("default", P)})
    assert got == {("a1", "InClusterQueue"), ("b5", "InCohortReclamation")}


def test_long_range_preemption() -> None:
    """TestPreemption "long range preemption" (hierarchical cohorts: reclaim across a root)."""
    from sim_kueue import setup as mk

    s = mk([cq("cq-left", {"default": {CPU: quota("10")}}, cohort="cohort-left", reclaim=ANY),
            cq("cq-right", {"default": {CPU: quota("0")}}, cohort="cohort-right")],
           [cohort("cohort-left", "root"), cohort("cohort-right", "root")])
    cl = Cluster.of(s)
    admitted(cl, "to-be-preempted", "cq-right", cpu("5"))
    got = targets(cl, wl("in", "cq-left", {CPU: "8"}), {CPU: ("default", P)})
    assert got == {("to-be-preempted", "InCohortReclamation")}
