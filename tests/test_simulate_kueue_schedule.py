"""One scheduling cycle, cases ported from kubernetes-sigs/kueue v0.19.2,
``pkg/scheduler/scheduler_test.go`` (TestSchedule): the same ClusterQueues (sales, eng-alpha,
eng-beta, lend-a, lend-b), one pending head per ClusterQueue, admitted workloads in the cache;
checked: which heads are admitted, on which flavor, which stay pending, which workloads a preemptor
targets. A pod set of N pods requesting 1 CPU each is a workload requesting N CPU (the replay has
one pod set per workload).
"""

from __future__ import annotations

from sim_kueue import CPU, admitted, cohort, cq, quota, setup, wl

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.objects import ClusterQueueSpec
from compiler.tools.simulate.scheduler import run_cycle

GPU_EX = "example.com/gpu"


def schedule_cqs(extra: list[ClusterQueueSpec] = (), cohorts=()) -> Cluster:  # type: ignore[no-untyped-def]
    q = quota
    cqs = [
        cq("sales", {"default": {CPU: q("50", "0")}}, strategy="StrictFIFO"),
        cq("eng-alpha", {"on-demand": {CPU: q("50", "50")}, "spot": {CPU: q("100", "0")}}, cohort="eng",
           strategy="StrictFIFO"),
        cq("eng-beta", {"on-demand": {CPU: q("50", "10")}, "spot": {CPU: q("0", "100")}},
           {"model-a": {GPU_EX: q("20", "0")}}, cohort="eng", strategy="StrictFIFO", reclaim="Any",
           within="LowerPriority"),
        cq("lend-a", {"default": {CPU: q("3", None, "2")}}, cohort="lend"),
        cq("lend-b", {"default": {CPU: q("2", None, "2")}}, cohort="lend"),
        *extra,
    ]
    return Cluster.of(setup(cqs, list(cohorts)))


def cycle(cl: Cluster, *heads: Workload) -> dict[str, tuple[str, dict[str, str], set[tuple[str, str]]]]:
    entries = run_cycle(cl, list(heads), 0.0)
    return {e.wl.key: (e.status, dict(e.assignment.flavors) if e.status == "admitted" else {},
                       {(t.workload.key, t.reason) for t in e.targets} if e.status == "preempting" else set())
            for e in entries}


def test_single_cluster_queue_full() -> None:
    """TestSchedule "single clusterQueue full"."""
    cl = schedule_cqs()
    admitted(cl, "assigned", "sales", {CPU: ("default", "40")})
    got = cycle(cl, wl("new", "sales", {CPU: "11"}))
    assert got["new"][0] in ("nofit", "no-candidates")
    assert set(cl.admitted["sales"]) == {"assigned"}


def test_admit_in_different_cohorts() -> None:
    """TestSchedule "admit in different cohorts"."""
    cl = schedule_cqs()
    got = cycle(cl, wl("sales/new", "sales", {CPU: "1"}), wl("eng-alpha/new", "eng-alpha", {CPU: "51"}))
    assert got["sales/new"][:2] == ("admitted", {CPU: "default"})
    assert got["eng-alpha/new"][:2] == ("admitted", {CPU: "on-demand"})


def test_admit_in_same_cohort_with_no_borrowing() -> None:
    """TestSchedule "admit in same cohort with no borrowing"."""
    cl = schedule_cqs()
    got = cycle(cl, wl("eng-alpha/new", "eng-alpha", {CPU: "40"}), wl("eng-beta/new", "eng-beta", {CPU: "40"}))
    assert got["eng-alpha/new"][:2] == ("admitted", {CPU: "on-demand"})
    assert got["eng-beta/new"][:2] == ("admitted", {CPU: "on-demand"})


def test_cannot_borrow_if_cohort_was_assigned_and_would_overadmit() -> None:
    """TestSchedule "cannot borrow if cohort was assigned and would result in overadmission"."""
    cl = schedule_cqs()
    got = cycle(cl, wl("eng-alpha/new", "eng-alpha", {CPU: "45"}), wl("eng-beta/new", "eng-beta", {CPU: "56"}))
    assert got["eng-alpha/new"][:2] == ("admitted", {CPU: "on-demand"})
    assert got["eng-beta/new"][0] == "skipped"  # left in the queue


def test_can_borrow_if_cohort_was_assigned_and_will_not_overadmit() -> None:
    """TestSchedule "can borrow if cohort was assigned and will not result in overadmission"."""
    cl = schedule_cqs()
    got = cycle(cl, wl("eng-alpha/new", "eng-alpha", {CPU: "45"}), wl("eng-beta/new", "eng-beta", {CPU: "55"}))
    assert got["eng-alpha/new"][:2] == ("admitted", {CPU: "on-demand"})
    assert got["eng-beta/new"][:2] == ("admitted", {CPU: "on-demand"})


def test_can_borrow_if_needs_reclaim_from_cohort_in_different_flavor() -> None:
    """TestSchedule "can borrow if needs reclaim from cohort in different flavor"."""
    cl = schedule_cqs()
    admitted(cl, "user-on-demand", "eng-beta", {CPU: ("on-demand", "50")})
    admitted(cl, "user-spot", "eng-beta", {CPU: ("spot", "1")})
    got = cycle(cl, wl("can-reclaim", "eng-alpha", {CPU: "100"}), wl("needs-to-borrow", "eng-beta", {CPU: "1"}))
    assert got["needs-to-borrow"][:2] == ("admitted", {CPU: "on-demand"})
    assert got["can-reclaim"][0] != "admitted"


def test_workload_exceeds_lending_limit_when_borrow_in_cohort() -> None:
    """TestSchedule "workload exceeds lending limit when borrow in cohort"."""
    cl = schedule_cqs()
    admitted(cl, "a", "lend-b", {CPU: ("default", "2")})
    got = cycle(cl, wl("b", "lend-b", {CPU: "3"}))
    assert got["b"][0] in ("nofit", "no-candidates")


def test_hierarchical_cohort_respects_lending_limit_when_borrowing() -> None:
    """TestSchedule "hierarchical cohort respects lending limit when borrowing": lender(10,
    lendingLimit 3) and borrower(5, borrowingLimit 10, all used) under CHILD under ROOT; a 4 CPU
    workload is inadmissible, only 3 are lendable."""
    extra = [cq("cq-lender", {"on-demand": {CPU: quota("10", None, "3")}}, cohort="child"),
             cq("cq-borrower", {"on-demand": {CPU: quota("5", "10")}}, cohort="child")]
    cl = schedule_cqs(extra, [cohort("root"), cohort("child", "root")])
    admitted(cl, "used", "cq-borrower", {CPU: ("on-demand", "5")})
    got = cycle(cl, wl("wl-pending", "cq-borrower", {CPU: "4"}))
    assert got["wl-pending"][0] in ("nofit", "no-candidates")
    got = cycle(cl, wl("wl-three", "cq-borrower", {CPU: "3"}))
    assert got["wl-three"][:2] == ("admitted", {CPU: "on-demand"})


def test_preempt_workloads_in_cluster_queue_and_cohort() -> None:
    """TestSchedule "preempt workloads in ClusterQueue and cohort": the preemptor is not admitted in
    this cycle; it preempts the cohort borrower and its own lowest-priority workload."""
    cl = schedule_cqs()
    admitted(cl, "use-all-spot", "eng-alpha", {CPU: ("spot", "100")})
    admitted(cl, "low-1", "eng-beta", {CPU: ("on-demand", "30")}, priority=-1)
    admitted(cl, "low-2", "eng-beta", {CPU: ("on-demand", "10")}, priority=-2)
    admitted(cl, "borrower", "eng-alpha", {CPU: ("on-demand", "60")})
    got = cycle(cl, wl("preemptor", "eng-beta", {CPU: "20"}))
    assert got["preemptor"][0] == "preempting"
    assert got["preemptor"][2] == {("borrower", "InCohortReclamation"), ("low-2", "InClusterQueue")}
    assert "preemptor" not in cl.admitted["eng-beta"]


def test_multiple_cqs_need_preemption() -> None:
    """TestSchedule "multiple CQs need preemption": other-beta reclaims from other-alpha; the
    pending workload of other-alpha (no preemption policy) stays inadmissible."""
    extra = [cq("other-alpha", {"on-demand": {CPU: quota("50", "50")}}, cohort="other"),
             cq("other-beta", {"on-demand": {CPU: quota("50", "10")}}, cohort="other", reclaim="Any",
                within="LowerPriority")]
    cl = schedule_cqs(extra)
    admitted(cl, "use-all", "other-alpha", {CPU: ("on-demand", "100")})
    got = cycle(cl, wl("preemptor", "other-beta", {CPU: "1"}, priority=-1),
                wl("pending", "other-alpha", {CPU: "1"}, priority=1))
    assert got["preemptor"][0] == "preempting"
    assert got["preemptor"][2] == {("use-all", "InCohortReclamation")}
    assert got["pending"][0] in ("nofit", "no-candidates")


def test_not_enough_resources_to_borrow_fallback_to_next_flavor() -> None:
    """TestSchedule "not enough resources to borrow, fallback to next flavor; WhenCanPreempt:
    TryNextFlavor"."""
    cl = schedule_cqs()
    admitted(cl, "existing", "eng-beta", {CPU: ("on-demand", "45")})
    got = cycle(cl, wl("new", "eng-alpha", {CPU: "60"}))
    assert got["new"][:2] == ("admitted", {CPU: "spot"})


def test_two_workloads_borrow_different_resources_of_one_flavor_in_one_cycle() -> None:
    """TestSchedule "two workloads can borrow different resources from the same flavor in the same
    cycle"."""
    rg = {"default": {"r1": quota("10", "10"), "r2": quota("10", "10")}}
    extra = [cq(n, rg, cohort="co", reclaim="Any", within="LowerPriority") for n in ("cq1", "cq2", "cq3")]
    cl = schedule_cqs(extra)
    got = cycle(cl, wl("wl1", "cq1", {"r1": "16"}, priority=-1), wl("wl2", "cq2", {"r2": "16"}, priority=-2))
    assert got["wl1"][:2] == ("admitted", {"r1": "default"})
    assert got["wl2"][:2] == ("admitted", {"r2": "default"})
