"""Flavor assignment cases ported from kubernetes-sigs/kueue v0.19.2,
``pkg/scheduler/flavorassigner/flavorassigner_test.go`` (TestAssignFlavors). As upstream, the
preemption oracle is a fake that answers "Preempt, borrowing 0" unless the case sets a
``simulationResult``; ``clusterQueueUsage`` / ``secondaryClusterQueueUsage`` are added to the
queues' usage. The pod-count resource ``pods`` is requested (1 per pod) when a case covers it.
Checked: representative mode, chosen flavor per resource and the borrowing level.
"""

from __future__ import annotations

from sim_kueue import CPU, MEM, cq, quota, setup, wl

from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.flavors import NO_CANDIDATES, PREEMPT, Assignment, assign
from compiler.tools.simulate.objects import FR, milli
from compiler.tools.simulate.quota import add_all

PODS = "pods"
LABELS = {"one": {"type": "one"}, "two": {"type": "two"}, "b_one": {"b_type": "one"}, "b_two": {"b_type": "two"}}
MSS = dict(when_borrow="MayStopSearch", when_preempt="MayStopSearch")
TNF = dict(when_borrow="TryNextFlavor", when_preempt="TryNextFlavor")


def fake_oracle(results: dict[FR, tuple[int, int]] | None = None):  # type: ignore[no-untyped-def]
    def oracle(cl: Cluster, w: Workload, fr: FR, val: int, out: Assignment) -> tuple[int, int]:
        return (results or {}).get(fr, (PREEMPT, 0))
    return oracle


def run(main, secondary=None, usage=None, secondary_usage=None, requests=None, selector=None,  # type: ignore[no-untyped-def]
        results=None, fair_sharing=False):
    cqs = [main] + ([secondary] if secondary else [])
    cl = Cluster.of(setup(cqs, flavors=LABELS, fair_sharing=fair_sharing))
    for name, u in ((main.name, usage), (secondary.name if secondary else "", secondary_usage)):
        if u:
            add_all(cl.node(name), {fr: milli(v) for fr, v in u.items()})
    a = assign(cl, wl("in", main.name, requests or {}, node_selector=selector), fake_oracle(results))
    return a.mode(), dict(a.flavors), a.borrow


def test_single_flavor_fits() -> None:
    """TestAssignFlavors "single flavor, fits"."""
    main = cq("test", {"default": {CPU: quota("1"), MEM: quota("2Mi")}})
    assert run(main, requests={CPU: "1", MEM: "1Mi"}) == ("Fit", {CPU: "default", MEM: "default"}, 0)


def test_single_flavor_used_resources_doesnt_fit() -> None:
    """TestAssignFlavors "single flavor, used resources, doesn't fit"."""
    main = cq("test", {"default": {CPU: quota("4")}})
    assert run(main, usage={("default", CPU): "3"}, requests={CPU: "2"}) == ("Preempt", {CPU: "default"}, 0)


def test_multiple_resource_groups_fits() -> None:
    """TestAssignFlavors "multiple resource groups, fits"."""
    main = cq("test", {"one": {CPU: quota("2")}, "two": {CPU: quota("4")}},
              {"b_one": {MEM: quota("1Gi")}, "b_two": {MEM: quota("5Gi")}})
    assert run(main, requests={CPU: "3", MEM: "10Mi"}) == ("Fit", {CPU: "two", MEM: "b_one"}, 0)


def test_multiple_resources_in_a_group_doesnt_fit() -> None:
    """TestAssignFlavors "multiple resources in a group, doesn't fit"."""
    main = cq("test", {"one": {CPU: quota("2"), MEM: quota("1Gi")}, "two": {CPU: quota("4"), MEM: quota("5Mi")}})
    mode, flavors, _ = run(main, requests={CPU: "3", MEM: "10Mi"})
    assert (mode, flavors) == ("NoFit", {})


def test_multiple_flavors_fits_a_node_selector() -> None:
    """TestAssignFlavors "multiple flavors, fits a node selector" (keys the flavor lacks are ignored)."""
    main = cq("test", {"one": {CPU: quota("4")}, "two": {CPU: quota("4")}})
    got = run(main, requests={CPU: "1"}, selector={"type": "two", "ignored1": "foo"})
    assert got == ("Fit", {CPU: "two"}, 0)


def test_not_enough_space_to_borrow() -> None:
    """TestAssignFlavors "not enough space to borrow" (the other queue lends nothing)."""
    main = cq("test", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    other = cq("secondary", {"one": {CPU: quota("10", None, "0")}}, cohort="test-cohort")
    mode, flavors, _ = run(main, other, secondary_usage={("one", CPU): "9"}, requests={CPU: "2"})
    assert (mode, flavors) == ("NoFit", {})


def test_past_max_but_can_preempt_in_cluster_queue() -> None:
    """TestAssignFlavors "past max, but can preempt in ClusterQueue"."""
    main = cq("test", {"one": {CPU: quota("2", "8")}}, cohort="test-cohort")
    other = cq("secondary", {"one": {CPU: quota("98")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "9"}, secondary_usage={("one", CPU): "9"}, requests={CPU: "2"},
              results={("one", CPU): (PREEMPT, 1)})
    assert got == ("Preempt", {CPU: "one"}, 1)


def test_past_min_but_can_preempt_in_cluster_queue() -> None:
    """TestAssignFlavors "past min, but can preempt in ClusterQueue"."""
    main = cq("test", {"one": {CPU: quota("2")}})
    assert run(main, usage={("one", CPU): "1"}, requests={CPU: "2"}) == ("Preempt", {CPU: "one"}, 0)


def test_resource_not_listed_in_cluster_queue() -> None:
    """TestAssignFlavors "resource not listed in clusterQueue"."""
    main = cq("test", {"one": {CPU: quota("4")}})
    mode, flavors, _ = run(main, requests={"example.com/gpu": "2"})
    assert (mode, flavors) == ("NoFit", {})


def test_preempt_before_try_next_flavor() -> None:
    """TestAssignFlavors "preempt before try next flavor" (WhenCanPreempt=MayStopSearch)."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10")}, "two": {PODS: quota("10"), CPU: quota("10")}},
              **MSS)
    got = run(main, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Preempt", {CPU: "one", PODS: "one"}, 0)


def test_preempt_try_next_flavor() -> None:
    """TestAssignFlavors "preempt try next flavor" (default fungibility)."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10")}, "two": {PODS: quota("10"), CPU: quota("10")}})
    got = run(main, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "two", PODS: "two"}, 0)


def test_borrow_try_next_flavor_found_the_first_flavor() -> None:
    """TestAssignFlavors "borrow try next flavor, found the first flavor"."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", "1")}, "two": {PODS: quota("10"), CPU: quota("1")}},
              cohort="test-cohort", **TNF)
    other = cq("secondary", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "one", PODS: "one"}, 1)


def test_borrow_try_next_flavor_found_the_second_flavor() -> None:
    """TestAssignFlavors "borrow try next flavor, found the second flavor"."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", "1")}, "two": {PODS: quota("10"), CPU: quota("10")}},
              cohort="test-cohort", **TNF)
    other = cq("secondary", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "two", PODS: "two"}, 0)


def test_borrow_before_try_next_flavor() -> None:
    """TestAssignFlavors "borrow before try next flavor" (WhenCanBorrow=MayStopSearch)."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", "1")}, "two": {PODS: quota("10"), CPU: quota("10")}},
              cohort="test-cohort")
    other = cq("secondary", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "one", PODS: "one"}, 1)


def test_borrowing_while_preemption_needed_may_stop_search() -> None:
    """TestAssignFlavors "when borrowing while preemption is needed for flavor one;
    WhenCanBorrow=MayStopSearch"."""
    main = cq("test", {"one": {CPU: quota("0", "12")}, "two": {CPU: quota("12")}}, cohort="test-cohort",
              reclaim="LowerPriority", bwc="LowerPriority", **MSS)
    other = cq("secondary", {"one": {CPU: quota("12")}}, cohort="test-cohort")
    got = run(main, other, secondary_usage={("one", CPU): "10"}, requests={CPU: "12"},
              results={("one", CPU): (PREEMPT, 1)})
    assert got == ("Preempt", {CPU: "one"}, 1)


def test_borrowing_while_preemption_needed_try_next_flavor() -> None:
    """TestAssignFlavors "when borrowing while preemption is needed for flavor one;
    WhenCanBorrow=TryNextFlavor"."""
    main = cq("test", {"one": {CPU: quota("0", "12")}, "two": {CPU: quota("12")}}, cohort="test-cohort",
              reclaim="LowerPriority", bwc="LowerPriority", when_borrow="TryNextFlavor", when_preempt="MayStopSearch")
    other = cq("secondary", {"one": {CPU: quota("12")}}, cohort="test-cohort")
    assert run(main, other, requests={CPU: "12"}) == ("Fit", {CPU: "two"}, 0)


def test_borrowing_limit_exceeds_quota_available_in_cohort() -> None:
    """TestAssignFlavors "when borrowing while preemption is needed, but borrowingLimit exceeds the
    quota available in the cohort"."""
    main = cq("test", {"one": {CPU: quota("0", "12")}}, cohort="test-cohort", reclaim="LowerPriority",
              bwc="LowerPriority")
    other = cq("secondary", {"one": {CPU: quota("11")}}, cohort="test-cohort")
    mode, flavors, _ = run(main, other, secondary_usage={("one", CPU): "10"}, requests={CPU: "12"})
    assert (mode, flavors) == ("NoFit", {})


def test_lend_try_next_flavor_found_the_second_flavor() -> None:
    """TestAssignFlavors "lend try next flavor, found the second flavor"."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", None, "1")},
                       "two": {PODS: quota("10"), CPU: quota("10", None, "0")}}, cohort="test-cohort", **TNF)
    other = cq("secondary", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "two", PODS: "two"}, 0)


def test_lend_try_next_flavor_found_the_first_flavor() -> None:
    """TestAssignFlavors "lend try next flavor, found the first flavor"."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", None, "1")},
                       "two": {PODS: quota("10"), CPU: quota("1", None, "0")}}, cohort="test-cohort", **TNF)
    other = cq("secondary", {"one": {CPU: quota("1")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"})
    assert got == ("Fit", {CPU: "one", PODS: "one"}, 1)


def test_cannot_preempt_in_cohort_tries_second_flavor() -> None:
    """TestAssignFlavors "cannot preempt in cohort (oracle returns None) for the first flavor, tries
    the second flavor (which fits)"."""
    main = cq("test", {"one": {CPU: quota("0", "2")}, "two": {CPU: quota("0", "2")}}, cohort="test-cohort",
              reclaim="LowerPriority", bwc="LowerPriority", **MSS)
    other = cq("secondary", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}}, cohort="test-cohort")
    got = run(main, other, secondary_usage={("one", CPU): "2"}, requests={CPU: "2"},
              results={("one", CPU): (NO_CANDIDATES, 0)})
    assert got == ("Fit", {CPU: "two"}, 1)


def test_quota_exhausted_but_can_preempt_in_cohort_and_cluster_queue() -> None:
    """TestAssignFlavors "quota exhausted, but can preempt in cohort and ClusterQueue"."""
    main = cq("test", {"one": {PODS: quota("10"), CPU: quota("10", None, "0")}}, cohort="test-cohort")
    other = cq("secondary", {"one": {PODS: quota("0"), CPU: quota("0")}}, cohort="test-cohort")
    got = run(main, other, usage={("one", CPU): "2"}, requests={CPU: "9", PODS: "1"},
              results={("one", CPU): (PREEMPT, 1)})
    assert got == ("Preempt", {CPU: "one", PODS: "one"}, 1)


def test_fair_sharing_reclaim_any_can_preempt_while_borrowing() -> None:
    """TestAssignFlavors "when borrowing while preemption is needed for flavor one, fair sharing
    enabled, reclaimWithinCohort=Any"."""
    main = cq("test", {"one": {CPU: quota("0")}, "two": {CPU: quota("12")}}, cohort="test-cohort", reclaim="Any",
              **MSS)
    other = cq("secondary", {"one": {CPU: quota("12")}}, cohort="test-cohort")
    got = run(main, other, secondary_usage={("one", CPU): "10"}, requests={CPU: "12"},
              results={("one", CPU): (PREEMPT, 1)}, fair_sharing=True)
    assert got == ("Preempt", {CPU: "one"}, 1)


def test_fair_sharing_reclaim_never_goes_to_next_flavor() -> None:
    """TestAssignFlavors "when borrowing while preemption is needed for flavor one, fair sharing
    enabled, reclaimWithinCohort=Never"."""
    main = cq("test", {"one": {CPU: quota("0")}, "two": {CPU: quota("12")}}, cohort="test-cohort", reclaim="Never",
              **MSS)
    other = cq("secondary", {"one": {CPU: quota("12")}}, cohort="test-cohort")
    got = run(main, other, secondary_usage={("one", CPU): "10"}, requests={CPU: "12"},
              results={("one", CPU): (NO_CANDIDATES, 0)}, fair_sharing=True)
    assert got == ("Fit", {CPU: "two"}, 0)

