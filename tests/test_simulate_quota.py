"""The cohort tree's quota arithmetic (``compiler.tools.simulate.quota``), on one tree worked by
hand from Kueue v0.19.2's definitions (``pkg/cache/scheduler/resource_node.go``,
``clusterqueue_snapshot.go``, ``fair_sharing.go``, ``pkg/scheduler/preemption/classical/
hierarchical_preemption.go``): each figure below is derived in the comments, not read back from
the code. The ported Kueue cases test the same functions through preemption and flavor
assignment; these pin the numbers themselves (``make mutate`` found boundaries no case reached).

    r (cohort, 1 CPU)
    ├── c (cohort, 2 CPU)
    │   └── q (ClusterQueue, nominal 3, borrowingLimit 2, lendingLimit 1)
    ├── p (ClusterQueue, nominal 0)
    └── e (cohort, empty)
"""

from __future__ import annotations

import pytest
from sim_kueue import CPU, admitted, cohort, cq, quota, setup

from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.objects import milli
from compiler.tools.simulate.quota import (
    DRS,
    Node,
    available,
    borrowing_with,
    compare_drs,
    cq_available,
    drs,
    fits_in_quota,
    local_available,
    local_quota,
    lowest_subtree_that_fits,
    node_height,
    potential_available,
    within_nominal,
)

FR = ("default", CPU)


def tree() -> Cluster:
    return Cluster.of(setup(
        [cq("q", {"default": {CPU: quota("3", "2", "1")}}, cohort="c"),
         cq("p", {"default": {CPU: quota("0")}}, cohort="r")],
        [cohort("r", quotas={FR: quota("1")}), cohort("c", "r", quotas={FR: quota("2")}), cohort("e", "r")]))


def node(cl: Cluster, name: str) -> Node:
    return cl.tree.cqs.get(name) or cl.tree.cohorts[name]


def units(n: int) -> int:
    return milli(str(n))


def test_subtree_and_local_quotas() -> None:
    cl = tree()
    q, c, r, p = (node(cl, x) for x in ("q", "c", "r", "p"))
    # q keeps all but its lending limit: 3 - 1 = 2; c gets the 1 q lends on top of its own 2
    assert (q.subtree[FR], local_quota(q, FR)) == (units(3), units(2))
    assert (c.subtree[FR], local_quota(c, FR)) == (units(3), 0)  # no lending limit: nothing kept
    assert r.subtree[FR] == units(1) + units(3) + 0  # its own, c's whole subtree, p's nothing
    assert p.subtree[FR] == 0 and FR not in node(cl, "e").subtree
    # idle: q could reach its nominal plus its borrowing limit (5), below the 2 + 4 the tree holds
    assert potential_available(q, FR) == units(5)
    assert potential_available(p, FR) == units(4)  # no borrowing limit: the whole root


def test_heights() -> None:
    """getNodeHeight: a cohort of ClusterQueues only is 1, each cohort level adds one, an empty
    cohort is 0."""
    cl = tree()
    assert [node_height(node(cl, x)) for x in ("c", "e", "r")] == [1, 0, 2]
    flat = Cluster.of(setup([cq(x, {"default": {CPU: quota("1")}}, cohort="k") for x in ("a", "b", "d")]))
    assert node_height(node(flat, "k")) == 1  # however many ClusterQueues


def test_usage_climbs_past_the_local_quota() -> None:
    cl = tree()
    q, c, r, p = (node(cl, x) for x in ("q", "c", "r", "p"))
    admitted(cl, "w", "q", {CPU: ("default", "4")})
    # 2 of the 4 fit q's local quota; the other 2 are stored in c, which keeps nothing: in r too
    assert (q.usage[FR], c.usage[FR], r.usage[FR]) == (units(4), units(2), units(2))
    assert local_available(q, FR) == 0
    # r has 4 - 2 = 2 left; q may take 1 of it (3 stored in c, 2 of them used, plus its borrowing limit 2)
    assert available(r, FR) == units(2)
    assert (available(q, FR), cq_available(q, FR)) == (units(1), units(1))
    assert available(p, FR) == units(2)
    assert (within_nominal(q, [FR]), within_nominal(c, [FR]), within_nominal(p, [FR])) == (False, True, True)


def test_fits_in_quota_at_the_boundary() -> None:
    """QuantitiesFitInQuota: usage plus the request up to the subtree quota fits (c: 2 + 1 = 3);
    what is left to find above is the request beyond the node's local available quota."""
    cl = tree()
    q, c = node(cl, "q"), node(cl, "c")
    admitted(cl, "w", "q", {CPU: ("default", "4")})
    assert fits_in_quota(q, {FR: units(1)}) == (False, {FR: units(1)})
    assert fits_in_quota(c, {FR: units(1)}) == (True, {FR: units(1)})
    assert fits_in_quota(c, {FR: units(2)}) == (False, {FR: units(2)})
    idle = tree()
    assert fits_in_quota(idle.node("q"), {FR: units(3)}) == (True, {FR: units(1)})  # 2 of it local
    assert fits_in_quota(idle.node("q"), {FR: units(1)}) == (True, {FR: 0})  # all of it local


def test_lowest_subtree_that_fits() -> None:
    """FindHeightOfLowestSubtreeThatFits: 0 when the ClusterQueue does not borrow; else the height
    of the first ancestor that holds the rest, and whether that is smaller than the tree."""
    cl = tree()
    assert lowest_subtree_that_fits(cl.node("q"), FR, units(1)) == (0, True)
    admitted(cl, "w", "q", {CPU: ("default", "4")})
    assert lowest_subtree_that_fits(cl.node("q"), FR, units(1)) == (1, True)  # c: 2 + 1 <= 3
    assert lowest_subtree_that_fits(cl.node("q"), FR, units(2)) == (2, False)  # r: 2 + 2 <= 4
    assert lowest_subtree_that_fits(cl.node("q"), FR, units(3)) == (2, False)  # nowhere: the tree
    assert lowest_subtree_that_fits(cl.node("p"), FR, units(1)) == (2, False)


def test_dominant_resource_share() -> None:
    """DRS: what the node borrows over what its parent could lend it, in thousandths; a root and
    a node within its quota borrow nothing."""
    cl = tree()
    q, c, r = node(cl, "q"), node(cl, "c"), node(cl, "r")
    assert q.lendable == {CPU: units(4)}  # c could lend the whole root: 4
    admitted(cl, "w", "q", {CPU: ("default", "4")})
    assert drs(q) == DRS(1.0, 250.0, True, (FR,))  # 1 borrowed of 4
    assert drs(q, {FR: units(1)}).ratio == 500.0  # with 1 more
    assert drs(c) == DRS(1.0) and drs(r) == DRS(1.0)
    assert compare_drs(drs(q), drs(c)) == 1 and compare_drs(drs(c), drs(q)) == -1


@pytest.mark.parametrize("weight, share", [(2.0, 125.0), (0.0, float("inf"))])
def test_weight_divides_the_share(weight: float, share: float) -> None:
    d = DRS(weight, 250.0, True)
    assert d.share() == share
    assert DRS(weight).share() == 0.0


def test_below_the_local_quota_and_at_the_limit() -> None:
    cl = tree()
    q = node(cl, "q")
    admitted(cl, "w", "q", {CPU: ("default", "1")})
    # 1 of q's local 2 used, nothing stored in c: 1 left locally, and of the 1 q stores in c it may
    # use 1 + its borrowing limit 2 (r has 4 free): 4 in all, up to 3 + 2
    assert available(q, FR) == units(4)
    admitted(cl, "x", "q", {CPU: ("default", "4")})
    assert (available(q, FR), cq_available(q, FR)) == (0, 0)  # at nominal + borrowing limit
    assert [repr(q), repr(node(cl, "c"))] == ["CQ(q)", "Cohort(c)"]


def test_a_thousandth_stored_in_the_parent_goes_back() -> None:
    cl = tree()
    q, c, r = node(cl, "q"), node(cl, "c"), node(cl, "r")
    w = admitted(cl, "w", "q", {CPU: ("default", "2001m")})  # 1m past q's local quota
    assert (c.usage[FR], r.usage[FR]) == (1, 1)
    cl.release(w)
    assert (q.usage[FR], c.usage[FR], r.usage[FR]) == (0, 0, 0)


def test_a_node_without_the_resource() -> None:
    """A tree that has no quota of a flavor-resource anywhere: nothing available, nothing fits,
    even a thousandth borrows; a ClusterQueue lending all its nominal quota keeps none."""
    cl = Cluster.of(setup([cq("lone", {"other": {CPU: quota("2")}}),
                           cq("giver", {"default": {CPU: quota("2", None, "2")}}, cohort="k")]))
    lone = node(cl, "lone")
    assert (available(lone, FR), potential_available(lone, FR)) == (0, 0)
    empty = node(tree(), "e")
    assert fits_in_quota(empty, {FR: 1}) == (False, {FR: 1})
    assert borrowing_with(empty, FR, 1) and not borrowing_with(empty, FR, 0)
    assert local_quota(node(cl, "giver"), FR) == 0


def test_what_is_left_to_find_above_after_each_level() -> None:
    """FindHeightOfLowestSubtreeThatFits subtracts the ClusterQueue's, then each cohort's, local
    available quota from what it looks for above (here a cohort with a lending limit keeps 4 of 5).

        rB (0) -- m (2) -- c2 (4, lendingLimit 1) -- q2 (1)
    """
    cl = tree()
    admitted(cl, "w", "q", {CPU: ("default", "1")})  # q: 1 of its local 2 free
    assert lowest_subtree_that_fits(node(cl, "q"), FR, units(4)) == (1, True)  # c holds 4 - 1 = 3
    deep = Cluster.of(setup([cq("q2", {"default": {CPU: quota("1")}}, cohort="c2")],
                            [cohort("rB", quotas={FR: quota("0")}), cohort("m", "rB", quotas={FR: quota("2")}),
                             cohort("c2", "m", quotas={FR: quota("4", None, "1")})]))
    assert [node(deep, x).subtree[FR] for x in ("c2", "m", "rB")] == [units(5), units(3), units(3)]
    assert local_quota(node(deep, "c2"), FR) == units(4)
    assert lowest_subtree_that_fits(node(deep, "q2"), FR, units(6)) == (2, True)  # m: 6 - 4 = 2 <= 3


def test_the_share_is_of_the_usage_it_is_asked_about() -> None:
    cl = tree()
    q = node(cl, "q")
    assert drs(q, {FR: units(4)}).ratio == 250.0  # an idle queue asked about 4: 1 borrowed of 4
    admitted(cl, "w", "q", {CPU: ("default", "3")})
    assert drs(q) == DRS(1.0)  # at its quota: borrows nothing
    assert drs(q, {FR: units(1)}).ratio == 250.0
    assert drs(q) == DRS(1.0)  # asking about more did not change what it holds
    admitted(cl, "x", "q", {CPU: ("default", "1m")})
    assert drs(q).ratio == 0.25  # a thousandth of 4


def test_shares_add_a_resources_flavors() -> None:
    """Borrowing and lendable capacity are per resource, summed over its flavors (fair_sharing.go)."""
    cl = Cluster.of(setup([cq("two", {"f1": {CPU: quota("1")}, "f2": {CPU: quota("1")}}, cohort="k"),
                           cq("lender", {"f1": {CPU: quota("2")}, "f2": {CPU: quota("2")}}, cohort="k")]))
    two = node(cl, "two")
    assert two.lendable == {CPU: units(6)}  # 3 of each flavor in k
    admitted(cl, "a", "two", {CPU: ("f1", "2")})
    admitted(cl, "b", "two", {CPU: ("f2", "2")})
    assert drs(two).ratio == pytest.approx(2000 * 1000 / 6000)  # 1 + 1 borrowed of 6
    tiny = Cluster.of(setup([cq("t", {"default": {CPU: quota("0")}}, cohort="tiny")],
                            [cohort("tiny", quotas={FR: quota("1m")})]))
    admitted(tiny, "w", "t", {CPU: ("default", "1m")})
    assert drs(node(tiny, "t")).ratio == 1000.0  # all of a lendable thousandth
