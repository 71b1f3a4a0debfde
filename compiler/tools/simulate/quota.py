"""Quota arithmetic up the cohort tree, as Kueue v0.19.2 computes it.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied):
``pkg/cache/scheduler/resource_node.go`` (SubtreeQuota, localQuota, available,
potentialAvailable, addUsage/removeUsage, QuantitiesFitInQuota, IsWithinNominalInResources),
``pkg/cache/scheduler/clusterqueue_snapshot.go`` / ``cohort_snapshot.go`` (BorrowingWith) and
``pkg/cache/scheduler/fair_sharing.go`` (dominant resource share, CompareDRS).

A node is a ClusterQueue (leaf) or a Cohort. Its *subtree quota* is its own nominal quota plus,
for every child, what the child does not keep for itself (the child's subtree quota minus its
local quota, the part above its ``lendingLimit``). Usage beyond a node's local quota is stored in
its parent too, so ``usage`` at a Cohort is what its subtree takes from the Cohort's pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from compiler.tools.simulate.objects import FR, KueueSetup, Quota


class Node:
    __slots__ = ("name", "is_cq", "parent", "child_cohorts", "child_cqs", "quotas", "subtree", "usage",
                 "weight", "lendable", "drs_cache", "static", "cqs", "over", "order")

    def __init__(self, name: str, is_cq: bool, quotas: dict[FR, Quota], weight: float) -> None:
        self.name = name
        self.is_cq = is_cq
        self.parent: Node | None = None
        self.child_cohorts: list[Node] = []
        self.child_cqs: list[Node] = []
        self.quotas = quotas
        self.subtree: dict[FR, int] = {}
        self.usage: dict[FR, int] = {}
        self.weight = weight
        self.lendable: dict[str, int] = {}  # per resource name, from the parent (fair sharing)
        # ``drs`` of this node's usage, dropped when its usage changes (it reads nothing else that
        # changes): a fair-sharing search reads every queue's share of a cohort at every step, and
        # a global version made its own trial removals drop every queue's
        self.drs_cache: DRS | None = None
        self.static: dict[object, int] = {}  # results that depend on quotas only (potential, height)
        self.cqs: tuple[Node, ...] | None = None  # subtree_cqs, once the tree is built
        # on a tree's root: its ClusterQueues above their quota, per flavor-resource (``borrowing``)
        self.over: dict[FR, set[Node]] = {}
        self.order: dict[Node, int] | None = None  # on a root: each ClusterQueue's place in subtree_cqs

    def __repr__(self) -> str:
        return f"{'CQ' if self.is_cq else 'Cohort'}({self.name})"

    def path_to_root(self) -> Iterator[Node]:
        """The ancestors, parent first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_cqs(self) -> tuple[Node, ...]:
        """The ClusterQueues under this node (itself for one), its own before its Cohorts', each
        Cohort's in turn: asked for a tree's at every nomination and preemption search, so kept
        (``build_tree`` has linked every node before a replay asks; ~1.6 million recursive calls
        for 5,000 jobs on a cluster of 1,000 teams)."""
        if self.cqs is None:
            if self.is_cq:
                self.cqs = (self,)
            else:
                self.cqs = (*self.child_cqs, *(q for c in self.child_cohorts for q in c.subtree_cqs()))
        return self.cqs


def local_quota(n: Node, fr: FR) -> int:
    q = n.quotas.get(fr)
    if q is not None and q.lending_limit is not None:
        return max(0, n.subtree.get(fr, 0) - q.lending_limit)
    return 0


def local_available(n: Node, fr: FR) -> int:
    return max(0, local_quota(n, fr) - n.usage.get(fr, 0))


def available(n: Node, fr: FR) -> int:
    """What ``n`` can still use of ``fr`` now: its local quota plus what its parent can give,
    capped by its borrowing limit (``available`` in resource_node.go). May be negative."""
    if n.parent is None:
        return n.subtree.get(fr, 0) - n.usage.get(fr, 0)
    parent_av = available(n.parent, fr)
    q = n.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        lq = local_quota(n, fr)
        stored = n.subtree.get(fr, 0) - lq
        used_in_parent = max(0, n.usage.get(fr, 0) - lq)
        parent_av = min(stored - used_in_parent + q.borrowing_limit, parent_av)
    return local_available(n, fr) + parent_av


_CACHE: dict[tuple[object, ...], int] = {}  # results that hold while the usage version stands still
_CACHED_AT = [-1]


def _cached() -> dict[tuple[object, ...], int]:
    if _CACHED_AT[0] != VERSION[0]:
        _CACHE.clear()
        _CACHED_AT[0] = VERSION[0]
    return _CACHE


def cq_available(n: Node, fr: FR) -> int:
    cache = _cached()
    key = (n, fr)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = max(0, available(n, fr))
    return hit


def potential_available(n: Node, fr: FR) -> int:
    """What ``n`` could use of ``fr`` if the whole tree were idle."""
    hit = n.static.get(fr)
    if hit is None:
        hit = n.static[fr] = _potential_available(n, fr)
    return hit


def _potential_available(n: Node, fr: FR) -> int:
    if n.parent is None:
        return n.subtree.get(fr, 0)
    avail = local_quota(n, fr) + _potential_available(n.parent, fr)
    q = n.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        avail = min(n.subtree.get(fr, 0) + q.borrowing_limit, avail)
    return avail


VERSION = [0]  # bumped on every usage change: cached results are valid while it stands still


def add_usage(n: Node, fr: FR, val: int) -> None:
    VERSION[0] += 1
    la = local_available(n, fr)
    n.usage[fr] = n.usage.get(fr, 0) + val
    n.drs_cache = None
    if n.is_cq:
        _mark(n, fr)
    if n.parent is not None and val > la:
        add_usage(n.parent, fr, val - la)


def remove_usage(n: Node, fr: FR, val: int) -> None:
    VERSION[0] += 1
    stored_in_parent = n.usage.get(fr, 0) - local_quota(n, fr)
    n.usage[fr] = n.usage.get(fr, 0) - val
    n.drs_cache = None
    if n.is_cq:
        _mark(n, fr)
    if stored_in_parent <= 0 or n.parent is None:
        return
    remove_usage(n.parent, fr, min(val, stored_in_parent))


def _mark(cq: Node, fr: FR) -> None:
    """Keep ``cq`` in its root's set of ClusterQueues above their quota of ``fr``, or out of it."""
    over = cq.root().over.setdefault(fr, set())
    if borrowing_with(cq, fr, 0):
        over.add(cq)
    else:
        over.discard(cq)


def borrowing(root: Node, frs: Iterable[FR]) -> list[Node]:
    """The ClusterQueues of ``root``'s tree above their quota (a ClusterQueue's subtree quota is
    its nominal quota) of any of ``frs``, in ``subtree_cqs``' order: read from the sets usage
    changes keep (``_mark``) instead of every ClusterQueue of the tree (at 1,000 teams a tree of
    ~500, asked at every nomination that may preempt and every wait explained)."""
    found: set[Node] = set()
    for fr in frs:
        found.update(root.over.get(fr, ()))
    if not found:
        return []
    if root.order is None:
        root.order = {q: i for i, q in enumerate(root.subtree_cqs())}
    return sorted(found, key=root.order.__getitem__)


def add_all(n: Node, usage: dict[FR, int]) -> None:
    for fr, v in usage.items():
        add_usage(n, fr, v)


def remove_all(n: Node, usage: dict[FR, int]) -> None:
    for fr, v in usage.items():
        remove_usage(n, fr, v)


def borrowing_with(n: Node, fr: FR, val: int) -> bool:
    """Usage plus ``val`` above the node's (subtree) quota: the node would borrow."""
    return n.subtree.get(fr, 0) < n.usage.get(fr, 0) + val


def within_nominal(n: Node, frs: Iterable[FR]) -> bool:
    return all(n.subtree.get(fr, 0) >= n.usage.get(fr, 0) for fr in frs)


def fits_in_quota(n: Node, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    """QuantitiesFitInQuota: whether ``requests`` fit in the node's subtree quota, and what is left
    to find above once its local quota is used."""
    fits = True
    remaining: dict[FR, int] = {}
    for fr, v in requests.items():
        if n.subtree.get(fr, 0) < n.usage.get(fr, 0) + v:
            fits = False
        remaining[fr] = max(0, v - local_available(n, fr))
    return fits, remaining


def lowest_subtree_that_fits(cq: Node, fr: FR, val: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits (pkg/scheduler/preemption/classical/
    hierarchical_preemption.go): the borrowing level of a request, and whether a subtree smaller
    than the whole tree would hold it."""
    cache = _cached()
    key = (cq, fr, val, "lowest")
    hit = cache.get(key)
    if hit is None:
        height, smaller = _lowest_subtree_that_fits(cq, fr, val)
        hit = cache[key] = height * 2 + smaller
    return hit // 2, bool(hit % 2)


def _lowest_subtree_that_fits(cq: Node, fr: FR, val: int) -> tuple[int, bool]:
    if not borrowing_with(cq, fr, val) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = val - local_available(cq, fr)
    for node in cq.path_to_root():
        if not borrowing_with(node, fr, remaining):
            return node_height(node), node.parent is not None
        remaining -= local_available(node, fr)
    return node_height(cq.root()), False


def node_height(n: Node) -> int:
    hit = n.static.get("height")
    if hit is None:
        hit = n.static["height"] = _node_height(n)
    return hit


def _node_height(n: Node) -> int:
    h = min(len(n.child_cohorts) + len(n.child_cqs), 1)
    for c in n.child_cohorts:
        h = max(h, node_height(c) + 1)
    return h


@dataclass(frozen=True)
class DRS:
    """Dominant resource share of a node (fair_sharing.go): the largest ratio, over resources, of
    what the node borrows to what its parent could lend it, in thousandths, over its weight."""

    weight: float
    ratio: float = 0.0
    borrowing: bool = False
    borrowed: tuple[FR, ...] = field(default=())
    # ``compare_drs``' order as one tuple, computed once: a fair-sharing search at hundreds of
    # queues compares millions of shares
    order: tuple[int, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        zero = self.weight == 0 and self.ratio != 0
        object.__setattr__(self, "order", (1, self.ratio) if zero else (0, self.share()))

    def share(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight


NEGATIVE_DRS = DRS(1.0, -1.0)


def compare_drs(a: DRS, b: DRS) -> int:
    """CompareDRS: a share of a node of weight zero that borrows is above every other, and two such
    compare by ratio; the rest compare by ratio over weight (``DRS.order``)."""
    x, y = a.order, b.order
    return (x > y) - (x < y)


def drs(n: Node, extra: dict[FR, int] | None = None) -> DRS:
    if n.parent is None:
        return DRS(n.weight)
    if not extra:
        cached = n.drs_cache
        if cached is not None:
            return cached
        items = n.usage
    else:
        items = dict(n.usage)
        for fr, v in extra.items():
            items[fr] = items.get(fr, 0) + v
    subtree = n.subtree
    borrowed: dict[str, int] = {}
    frs: list[FR] = []
    for fr, used in items.items():  # only quota'd flavor-resources count, as in Kueue
        quota = subtree.get(fr)
        if quota is not None and used > quota:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + used - quota
            frs.append(fr)
    if not borrowed:
        out = DRS(n.weight)
    else:
        ratio = 0.0
        for res in sorted(borrowed):
            lr = n.lendable.get(res, 0)
            if lr > 0:
                r = borrowed[res] * 1000.0 / lr
                if r > ratio:
                    ratio = r
        out = DRS(n.weight, ratio, True, tuple(frs))
    if not extra:
        n.drs_cache = out
    return out


@dataclass
class Tree:
    """Every node of one cluster's Kueue objects, by name."""

    cqs: dict[str, Node]
    cohorts: dict[str, Node]


def build_tree(setup: KueueSetup) -> Tree:
    """Nodes with their subtree quotas (updateCohortResourceNode / accumulateFromChild) and the
    lendable capacity fair sharing divides by (calculateLendable). Cohort cycles are not checked
    here: gpupolicy's validation rejects them before rendering."""
    cohorts = {c.name: Node(c.name, False, dict(c.quotas), c.weight) for c in setup.cohorts.values()}
    cqs = {q.name: Node(q.name, True, dict(q.quotas), q.weight) for q in setup.queues.values()}
    for c in setup.cohorts.values():
        if c.parent:
            cohorts[c.name].parent = cohorts[c.parent]
            cohorts[c.parent].child_cohorts.append(cohorts[c.name])
    for q in setup.queues.values():
        if q.cohort:
            cqs[q.name].parent = cohorts[q.cohort]
            cohorts[q.cohort].child_cqs.append(cqs[q.name])

    def fill(n: Node) -> None:
        n.subtree = {fr: q.nominal for fr, q in n.quotas.items()}
        for child in (*n.child_cohorts, *n.child_cqs):
            fill(child)
            for fr, sub in child.subtree.items():
                n.subtree[fr] = n.subtree.get(fr, 0) + sub - local_quota(child, fr)

    roots = [n for n in cohorts.values() if n.parent is None]
    for r in roots:
        fill(r)
    for leaf in cqs.values():
        if leaf.parent is None:
            fill(leaf)
    for n in (*cqs.values(), *cohorts.values()):
        if n.parent is not None:
            lend: dict[str, int] = {}
            for fr in n.root().subtree:
                lend[fr[1]] = lend.get(fr[1], 0) + potential_available(n.parent, fr)
            n.lendable = lend
    return Tree(cqs, cohorts)
