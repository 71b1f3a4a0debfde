"""Flavor assignment (``compiler.tools.simulate.flavors``) in situations no ported Kueue case
reaches (found by mutating the module): each expectation is worked by hand from Kueue v0.19.2's
``pkg/scheduler/flavorassigner/flavorassigner.go`` (``findFlavorForPodSets``, ``isPreferred``,
``shouldTryNextFlavor``, ``fitsResourceQuota``, ``canPreemptWhileBorrowing``,
``checkFlavorForPodSets``, ``assignFlavors``) and ``pkg/scheduler/preemption/preemption_oracle.go``
(``SimulatePreemption``), as cited per test.

Where the preemption search is not the point, a fake oracle answers (mode, borrowing level) per
flavor-resource, as upstream's flavorassigner_test.go does; where it is, the real one runs, in the
fast mode and the reference mode alike. ``preference`` is only set with ``whenCanBorrow`` and
``whenCanPreempt`` both TryNextFlavor (the CRD allows nothing else: clusterqueue_types.go).
"""

from __future__ import annotations

import pytest
from sim_kueue import CPU, MEM, admitted, cpu, cq, quota, setup, wl

from compiler.tools.simulate.causes import explain_failure
from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.flavors import FIT, NO_CANDIDATES, PREEMPT, Assignment, assign
from compiler.tools.simulate.objects import FR, ClusterQueueSpec, milli

TNF = dict(when_borrow="TryNextFlavor", when_preempt="TryNextFlavor")
POB, BOP = "PreemptionOverBorrowing", "BorrowingOverPreemption"
LP, ANY = "LowerPriority", "Any"


class Oracle:
    """A fake SimulatePreemption: the answer set per flavor-resource (else Preempt at level 0),
    and the flavor-resources it was asked about."""

    def __init__(self, answers: dict[FR, tuple[int, int]] | None = None) -> None:
        self.answers = answers or {}
        self.asked: list[FR] = []

    def __call__(self, cl: Cluster, w: Workload, fr: FR, val: int, out: Assignment) -> tuple[int, int]:
        self.asked.append(fr)
        return self.answers.get(fr, (PREEMPT, 0))


def summary(a: Assignment) -> tuple[str, dict[str, str], int]:
    return a.mode(), dict(a.flavors), a.borrow


def lender_cluster(main: ClusterQueueSpec, lender_quotas: dict[str, dict[str, str]],
                   fair_sharing: bool = False) -> Cluster:
    """``main`` and a ClusterQueue ``s`` (flavor -> {resource: nominal}) in cohort ``co``."""
    s = cq("s", {f: {r: quota(v) for r, v in res.items()} for f, res in lender_quotas.items()}, cohort="co")
    return Cluster.of(setup([main, s], fair_sharing=fair_sharing))


@pytest.mark.parametrize("preference, expected", [
    (None, ("Fit", {CPU: "one"}, 1)),
    (BOP, ("Fit", {CPU: "one"}, 1)),
    (POB, ("Preempt", {CPU: "two"}, 0)),
])
def test_preference_between_borrowing_and_preemption(preference: str | None, expected: object) -> None:
    """isPreferred: under BorrowingOverPreemption (also the default, no preference set) the better
    preemption mode wins before the borrowing level, under PreemptionOverBorrowing the other way
    round. ``one`` fits by borrowing from ``s`` (level 1), ``two`` needs a preemption within
    ``q``'s nominal quota (the oracle: Preempt, level 0); both TryNextFlavor, so both are tried.
    (The "more technically" lines of the API's comment on ``preference``, clusterqueue_types.go,
    describe the two orders the other way round; isPreferred's code and the values' names are as
    here.)"""
    main = cq("q", {"one": {CPU: quota("0")}, "two": {CPU: quota("4")}}, cohort="co", preference=preference, **TNF)
    cl = lender_cluster(main, {"one": {CPU: "4"}})
    admitted(cl, "x", "q", cpu("3", "two"))
    oracle = Oracle()
    assert summary(assign(cl, wl("in", "q", {CPU: "2"}), oracle)) == expected
    assert oracle.asked == [("two", CPU)]


def test_no_candidates_loses_to_a_preemption() -> None:
    """isPreferred: a flavor with preemption candidates is preferred over one without
    (noPreemptionCandidates), whatever the borrowing: ``one`` (Preempt) is kept over ``two``
    (no candidates), both tried (whenCanPreempt TryNextFlavor)."""
    main = cq("q", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}})
    cl = Cluster.of(setup([main]))
    admitted(cl, "x", "q", cpu("2", "one"))
    admitted(cl, "y", "q", cpu("2", "two"))
    oracle = Oracle({("two", CPU): (NO_CANDIDATES, 0)})
    assert summary(assign(cl, wl("in", "q", {CPU: "2"}), oracle)) == ("Preempt", {CPU: "one"}, 0)
    assert oracle.asked == [("one", CPU), ("two", CPU)]


@pytest.mark.parametrize("preference", [None, POB])
def test_a_tie_keeps_the_earlier_flavor(preference: str | None) -> None:
    """isPreferred is strict: a later flavor with the same preemption mode and borrowing level is
    not preferred, under either preference, so the first of equals is kept."""
    main = cq("q", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}}, preference=preference, **TNF)
    cl = Cluster.of(setup([main]))
    admitted(cl, "x", "q", cpu("2", "one"))
    admitted(cl, "y", "q", cpu("2", "two"))
    assert summary(assign(cl, wl("in", "q", {CPU: "2"}), Oracle())) == ("Preempt", {CPU: "one"}, 0)


def test_preemption_over_borrowing_tries_on_after_a_preemption() -> None:
    """Under PreemptionOverBorrowing at equal borrowing levels the better preemption mode is
    preferred: the representative mode of ``one`` is Preempt (worse than the initial Fit), so
    shouldTryNextFlavor goes on, and ``two`` fits at level 0, which stops the search."""
    main = cq("q", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}}, preference=POB, **TNF)
    cl = Cluster.of(setup([main]))
    admitted(cl, "x", "q", cpu("2", "one"))
    assert summary(assign(cl, wl("in", "q", {CPU: "2"}), Oracle())) == ("Fit", {CPU: "two"}, 0)


def test_preemption_over_borrowing_at_the_same_level_prefers_a_fit() -> None:
    """PreemptionOverBorrowing, equal borrowing levels (1): Fit beats Preempt. ``one`` fits by
    borrowing from ``s``; ``two`` needs a preemption that leaves ``q`` borrowing (the oracle says
    Preempt at level 1): ``one`` is kept."""
    main = cq("q", {"one": {CPU: quota("0")}, "two": {CPU: quota("4")}}, cohort="co", preference=POB, **TNF)
    cl = lender_cluster(main, {"one": {CPU: "4"}})
    admitted(cl, "x", "q", cpu("3", "two"))
    oracle = Oracle({("two", CPU): (PREEMPT, 1)})
    assert summary(assign(cl, wl("in", "q", {CPU: "2"}), oracle)) == ("Fit", {CPU: "one"}, 1)


def test_representative_mode_follows_the_preference() -> None:
    """findFlavorForPodSets keeps, over a flavor's resources, the mode the others are preferred to
    (isPreferred with the ClusterQueue's preference). Under PreemptionOverBorrowing ``one``'s CPU
    (Preempt, level 0) is preferred to its memory (Fit by borrowing, level 1), so ``one`` counts as
    borrowing at level 1; ``two`` (CPU Preempt at level 0, memory within nominal) is preferred to
    it. Were the modes compared by BorrowingOverPreemption, ``one`` would count as Preempt at level
    0, a tie that keeps ``one``."""
    main = cq("q", {"one": {CPU: quota("4"), MEM: quota("0")}, "two": {CPU: quota("4"), MEM: quota("4")}},
              cohort="co", preference=POB, **TNF)
    cl = lender_cluster(main, {"one": {CPU: "0", MEM: "4"}})
    admitted(cl, "x", "q", cpu("3", "one"))
    admitted(cl, "y", "q", cpu("3", "two"))
    got = summary(assign(cl, wl("in", "q", {CPU: "2", MEM: "2"}), Oracle()))
    assert got == ("Preempt", {CPU: "two", MEM: "two"}, 0)


@pytest.mark.parametrize("fast", [True, False])
def test_a_preemption_stops_the_search_when_it_may(fast: bool) -> None:
    """SimulatePreemption finds a candidate (``low``, below the preemptor's priority in its own
    ClusterQueue, withinClusterQueue LowerPriority): Preempt, and with whenCanPreempt
    MayStopSearch shouldTryNextFlavor stops at ``one``, though ``two`` is free. The candidate is
    the target the scheduler then uses."""
    main = cq("q", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}}, within=LP, when_preempt="MayStopSearch")
    cl = Cluster.of(setup([main]))
    cl.fast = fast
    admitted(cl, "low", "q", cpu("2", "one"), priority=-1)
    a = assign(cl, wl("in", "q", {CPU: "2"}))
    assert summary(a) == ("Preempt", {CPU: "one"}, 0)
    assert [t.workload.key for t in a.oracle[(("one", CPU), milli("2"))]] == ["low"]


@pytest.mark.parametrize("fast", [True, False])
def test_reclaim_is_preferred_to_preemption_in_the_queue(fast: bool) -> None:
    """SimulatePreemption answers Reclaim when no candidate is in the preemptor's own ClusterQueue,
    Preempt when one is, each with the borrowing level once the candidates are gone; isPreferred
    ranks reclaim above preempt. On ``one`` the candidate is ``low`` in ``q``; on ``two`` it is
    ``b``, which ``s`` runs on ``q``'s lent quota (reclaimWithinCohort Any). Without the
    candidates ``q`` would not borrow on either (level 0, in a cohort)."""
    main = cq("q", {"one": {CPU: quota("2")}, "two": {CPU: quota("2")}}, cohort="co", within=LP, reclaim=ANY)
    cl = lender_cluster(main, {"one": {CPU: "0"}, "two": {CPU: "0"}})
    cl.fast = fast
    admitted(cl, "low", "q", cpu("2", "one"), priority=-1)
    admitted(cl, "b", "s", cpu("2", "two"))
    a = assign(cl, wl("in", "q", {CPU: "2"}))
    assert summary(a) == ("Preempt", {CPU: "two"}, 0)
    assert [t.workload.key for t in a.oracle[(("two", CPU), milli("2"))]] == ["b"]


@pytest.mark.parametrize("fast", [True, False])
def test_no_candidates_keep_the_borrowing_level_of_the_request(fast: bool) -> None:
    """SimulatePreemption without candidates answers NoCandidates with
    FindHeightOfLowestSubtreeThatFits for the request as it stands. ``q`` lends all its nominal 2
    (lendingLimit 2) and ``s`` uses it; ``q`` never reclaims, so nothing can be preempted, but 2
    is within ``q``'s own quota: level 0."""
    main = cq("q", {"one": {CPU: quota("2", None, "2")}}, cohort="co")
    cl = lender_cluster(main, {"one": {CPU: "0"}})
    cl.fast = fast
    admitted(cl, "b", "s", cpu("2", "one"))
    a = assign(cl, wl("in", "q", {CPU: "2"}))
    assert (summary(a), a.modes) == (("Preempt", {CPU: "one"}, 0), {CPU: NO_CANDIDATES})
    assert not a.oracle[(("one", CPU), milli("2"))]


@pytest.mark.parametrize("borrow_within, reclaim, fair_sharing, asked", [
    ("Never", "Never", False, False),
    ("Never", ANY, False, False),  # reclaiming counts only with fair sharing
    ("Never", "Never", True, False),
    ("Never", ANY, True, True),
    (LP, LP, False, True),
])
def test_preempting_while_borrowing_gates_the_search(borrow_within: str, reclaim: str, fair_sharing: bool,
                                                     asked: bool) -> None:
    """fitsResourceQuota: a request above the nominal quota (2 > 1) that only the whole cohort
    could hold (mayReclaimInHierarchy false) is searched for preemptions only when
    canPreemptWhileBorrowing: borrowWithinCohort not Never, or fair sharing with
    reclaimWithinCohort not Never. Otherwise it is NoFit, without asking the oracle."""
    main = cq("q", {"one": {CPU: quota("1")}}, cohort="co", bwc=borrow_within, reclaim=reclaim)
    cl = lender_cluster(main, {"one": {CPU: "2"}}, fair_sharing=fair_sharing)
    admitted(cl, "b", "s", cpu("2", "one"))
    oracle = Oracle({("one", CPU): (PREEMPT, 1)})
    a = assign(cl, wl("in", "q", {CPU: "2"}), oracle)
    assert summary(a) == (("Preempt", {CPU: "one"}, 1) if asked else ("NoFit", {}, 0))
    assert oracle.asked == ([("one", CPU)] if asked else [])
    assert not a.never_fits  # 2 is within what q could reach in an idle cohort (3)


def test_a_workload_without_requests_fits() -> None:
    """assignFlavors: a pod set with nothing to assign has a Fit status (RepresentativeMode), and
    resources under excludeResourcePrefixes are dropped from the requests before
    (pkg/workload/workload.go, dropExcludedResources)."""
    cl = Cluster.of(setup([cq("q", {"one": {CPU: quota("2")}})]))
    assert summary(assign(cl, wl("in", "q", {}))) == ("Fit", {}, 0)
    cl.setup.excluded_prefixes = ("example.com/",)
    a = assign(cl, wl("in", "q", {"example.com/licence": "1"}))
    assert (summary(a), a.reasons, a.never_fits) == (("Fit", {}, 0), [], False)
    assert summary(assign(cl, wl("in", "q", {"example.com/licence": "1", CPU: "1"}))) == ("Fit", {CPU: "one"}, 0)


def test_a_resource_no_group_covers_never_fits() -> None:
    """assignFlavors / findFlavorForPodSets: a resource no resource group covers gets "resource
    ... unavailable in ClusterQueue" and no flavor, so the workload can never be admitted there,
    even when its other resource merely waits (here CPU: 2 above the nominal 1, NoFit while ``s``
    uses the cohort's rest, but within what ``q`` could reach). The reason is what ``simulate``
    reports for such a workload (causes.explain_failure: no quota blocks it)."""
    main = cq("q", {"one": {CPU: quota("1")}}, cohort="co")
    cl = lender_cluster(main, {"one": {CPU: "2"}})
    admitted(cl, "b", "s", cpu("2", "one"))
    a = assign(cl, wl("in", "q", {CPU: "2", "example.com/fpga": "1"}))
    assert (a.mode(), a.never_fits, a.modes[CPU]) == ("NoFit", True, 0)
    w = wl("alone", "q", {"example.com/fpga": "1"})
    a = assign(cl, w)
    assert (a.mode(), a.never_fits) == ("NoFit", True)
    assert explain_failure(cl, w, a.usage(w), a.reasons) == "resource example.com/fpga unavailable in ClusterQueue q"


def test_why_each_flavor_was_passed_over() -> None:
    """findFlavorForPodSets goes on past a flavor that does not exist ("flavor ... not found",
    checkFlavorForPodSets) and one whose node labels contradict the job's node selector; a request
    above the maximum capacity is NoFit, one above the unused quota (but within the nominal) asks
    the oracle (no candidates here: withinClusterQueue Never) and tries on; a fitting flavor adds
    no reason. The first reason is what ``simulate`` reports when no quota explains a wait: in
    Kueue's words and quantities (fitsResourceQuota's messages), never the simulator's thousandths."""
    main = cq("q", {"ghost": {CPU: quota("4")}, "one": {CPU: quota("4")}, "two": {CPU: quota("1")},
                    "three": {CPU: quota("4")}, "four": {CPU: quota("4")}})
    cl = Cluster.of(setup([main], flavors={"one": {"type": "one"}}))
    del cl.setup.flavors["ghost"]
    admitted(cl, "x", "q", cpu("3", "three"), priority=5)
    a = assign(cl, wl("in", "q", {CPU: "2"}, node_selector={"type": "other"}))
    assert summary(a) == ("Fit", {CPU: "four"}, 0)
    assert a.reasons == [
        "flavor ghost not found",
        "flavor one doesn't match the job's node selector",
        "insufficient quota for cpu in flavor two, request (2) > maximum capacity (1)",
        "insufficient unused quota for cpu in flavor three, 1 more needed",
    ]
    assert a.modes == {CPU: FIT}


def test_reasons_give_quantities_as_kueue_writes_them() -> None:
    """A fraction of a unit is written as a quantity (0.5), not in the simulator's thousandths
    (500): the reasons reach ``simulate``'s report and are read back by ``audit``'s parser of
    Kueue's own messages (compiler.tools.audit.waits)."""
    main = cq("q", {"one": {CPU: quota("1")}, "two": {CPU: quota("2")}})
    cl = Cluster.of(setup([main]))
    admitted(cl, "x", "q", cpu("1.5", "two"))
    a = assign(cl, wl("in", "q", {CPU: "1.5"}))
    assert a.reasons[:2] == [
        "insufficient quota for cpu in flavor one, request (1.5) > maximum capacity (1)",
        "insufficient unused quota for cpu in flavor two, 1 more needed",
    ]
