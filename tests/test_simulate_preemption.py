"""Classical preemption in situations no ported Kueue case reaches (found by mutating
``compiler.tools.simulate.preemption``): each expectation follows from Kueue v0.19.2's
``classical/hierarchical_preemption.go`` (``classifyPreemptionVariant``,
``collectCandidatesForHierarchicalReclaim``) as cited per test."""

from __future__ import annotations

from sim_kueue import CPU, admitted, cohort, cpu, cq, quota, setup, targets, wl

from compiler.tools.simulate.cluster import Cluster

LP, ANY = "LowerPriority", "Any"


def test_an_equal_priority_workload_is_not_reclaimed_while_borrowing() -> None:
    """isAboveBorrowingThreshold: a candidate of the preemptor's own priority (or above) may be
    reclaimed only if the preemptor then fits without borrowing, whatever the threshold. ``s``
    borrows 1 of ``q``'s quota with ``w``, at the preemptor's priority; ``p`` needs 2 beside
    ``x``'s 1 in ``q`` (nominal 2). Preempting ``w`` alone would do if ``p`` could borrow, but not
    from a workload of its own priority: the attempt without borrowing takes ``w`` and ``x``."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2")}}, cohort="co", within=LP, reclaim=ANY, bwc=LP),
                           cq("s", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "w", "s", cpu("3"), priority=5)
    admitted(cl, "x", "q", cpu("1"), priority=0)
    got = targets(cl, wl("p", "q", {CPU: "2"}, priority=5), {CPU: ("default", "Preempt")})
    assert got == {("w", "InCohortReclamation"), ("x", "InClusterQueue")}


def test_a_subtree_searched_below_is_not_searched_again_above() -> None:
    """collectCandidatesForHierarchicalReclaim walks up from the preemptor, skipping at each
    level the subtree it came from: ``s``'s workloads are candidates once (found under ``c``),
    not again under ``r``, so reclaiming 2 takes two of them, not one counted twice.

        r (3) -- c (0) -- q (2, the preemptor's), s (0, borrowing 5)
    """
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2")}}, cohort="c", within=LP, reclaim=ANY),
                           cq("s", {"default": {CPU: quota("0")}}, cohort="c")],
                          [cohort("r", quotas={("default", CPU): quota("3")}), cohort("c", "r")]))
    for i in range(5):
        admitted(cl, f"w{i}", "s", cpu("1"), priority=-5 + i)
    got = targets(cl, wl("p", "q", {CPU: "2"}), {CPU: ("default", "Preempt")})
    assert got == {("w0", "InCohortReclamation"), ("w1", "InCohortReclamation")}


def test_the_preemptors_own_queue_is_no_reclaim_candidate() -> None:
    """collectCandidatesInSubtree skips the preemptor's ClusterQueue (its workloads are candidates
    within it, once). ``p`` asks for 4 where ``q``'s tree holds 3: nothing can make room, so
    nothing is preempted."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("1")}}, cohort="co", within=LP, reclaim=ANY),
                           cq("s", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "x1", "q", cpu("1"), priority=-2)
    admitted(cl, "x2", "q", cpu("1"), priority=-1)  # q borrows 1 of s's
    assert targets(cl, wl("p", "q", {CPU: "4"}), {CPU: ("default", "Preempt")}) == set()


def test_hierarchical_candidates_go_before_priority_ones() -> None:
    """classicalPreemptions tries the candidates found with a hierarchical advantage first: ``b``
    (under ``r``, where ``p`` fits once ``c`` holds it) before ``a`` (under ``c``, found before the
    advantage), though ``a``'s priority is lower. Either alone makes room.

        r (0) -- c (2) -- q (0, the preemptor's), s1 (0: a borrows 1)
              \\- s2 (0: b borrows 1)
    """
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("0")}}, cohort="c", within=LP, reclaim=ANY, bwc=LP),
                           cq("s1", {"default": {CPU: quota("0")}}, cohort="c"),
                           cq("s2", {"default": {CPU: quota("0")}}, cohort="r")],
                          [cohort("r", quotas={("default", CPU): quota("0")}),
                           cohort("c", "r", quotas={("default", CPU): quota("2")})]))
    admitted(cl, "a", "s1", cpu("1"), priority=-10)
    admitted(cl, "b", "s2", cpu("1"), priority=-1)
    assert targets(cl, wl("p", "q", {CPU: "1"}), {CPU: ("default", "Preempt")}) == {("b", "InCohortReclamation")}


def test_fill_back_may_keep_the_preemptor_borrowing() -> None:
    """fillBackWorkloads gives back the targets not needed, checking the fit as the attempt did:
    here with borrowing allowed, so of ``c1`` and ``c2`` (taken in priority order) only ``c2``
    stays preempted, and ``p`` borrows 1 of ``s``'s quota."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2")}}, cohort="co", within=LP),
                           cq("s", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "c1", "q", cpu("1"), priority=-2)
    admitted(cl, "c2", "q", cpu("3"), priority=-1)
    assert targets(cl, wl("p", "q", {CPU: "3"}), {CPU: ("default", "Preempt")}) == {("c2", "InClusterQueue")}


def test_at_nominal_is_not_under_nominal() -> None:
    """queueUnderNominalInResourcesNeedingPreemption is strict (nominal <= usage: not under). With
    borrowWithinCohort forbidden and ``q`` exactly at its nominal 2, only the attempt that lets
    ``p`` borrow is made: preempting ``x1`` frees the 2 ``p`` needs in ``co``. An attempt without
    borrowing (``q`` taken as under nominal) would take ``x1`` and ``x2``."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2")}}, cohort="co", within=LP, reclaim=ANY),
                           cq("s", {"default": {CPU: quota("1")}}, cohort="co"),
                           cq("l", {"default": {CPU: quota("2")}}, cohort="co")]))
    admitted(cl, "x1", "q", cpu("1"), priority=-2)
    admitted(cl, "x2", "q", cpu("1"), priority=-1)
    admitted(cl, "w", "s", cpu("2"), priority=-1)  # s borrows 1 of l's
    assert targets(cl, wl("p", "q", {CPU: "2"}), {CPU: ("default", "Preempt")}) == {("x1", "InClusterQueue")}


def test_only_own_queue_candidates_mean_one_attempt_with_borrowing() -> None:
    """classicalPreemptions: with no candidate outside the preemptor's ClusterQueue the only
    attempt lets it borrow. ``q`` (nominal 2, under it at 1.5) needs room for 1.5 with 1 free in
    ``co``: preempting ``x1`` is enough if ``p`` may borrow; fitting under nominal would take two."""
    cl = Cluster.of(setup([cq("q", {"default": {CPU: quota("2")}}, cohort="co", within=LP),
                           cq("l", {"default": {CPU: quota("1")}}, cohort="co")]))
    for name, priority in (("x1", -3), ("x2", -2), ("x3", -1)):
        admitted(cl, name, "q", cpu("500m"), priority=priority)
    admitted(cl, "y", "l", cpu("500m"))  # l within its quota: no candidate
    assert targets(cl, wl("p", "q", {CPU: "1500m"}), {CPU: ("default", "Preempt")}) == {("x1", "InClusterQueue")}
