"""The simulated cluster: workloads, the cohort tree and who holds what.

A ``Workload`` is one job of the trace with a single pod set: its total requests per resource (in
thousandths), the ClusterQueue its LocalQueue points to, its priority (the value of its
WorkloadPriorityClass) and its creation time, which Kueue uses for FIFO order
(``GetQueueOrderTimestamp`` in pkg/workload/workload.go at v0.19.2: the creation timestamp unless
evicted by a PodsReady timeout or an admission check, neither of which is simulated).

Besides the usage held in the tree, the cluster keeps what the fast path of the replay needs to
know cheaply, all changed only by real admissions and releases (``admit``/``release``), never by
the what-if removals of a preemption search:

- ``held``: usage per ClusterQueue, flavor-resource and priority (an upper bound on what
  preempting the workloads of a priority range could free, ``compiler.tools.simulate.bounds``);
- ``fr_version``: per (root of the cohort tree, flavor-resource) a counter bumped by every change
  of that flavor-resource's usage anywhere in the tree; ``borrow_version``: per root, bumped when
  any node's borrowed amount changes (what dominant resource shares depend on). A scheduling
  attempt that failed is memoised against the counters it read (``failures``), and reused while
  they stand still: nothing it depends on has changed, so it would fail the same way;
- ``admitted_digest``: per root, a digest of the set of admissions in the tree (each workload
  with its admission's sequence number: a re-admitted workload is another admission). The usage
  of every node, the candidates and their order are functions of that set, so a preemption search
  against a set seen before gives what it gave then (``preemption.get_targets``). In a deep
  backlog the same set comes back whenever a short job passes through, which the counters above
  cannot tell from a real change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from compiler.tools.simulate.objects import FR, ClusterQueueSpec, KueueSetup
from compiler.tools.simulate.quota import Node, Tree, add_all, build_tree, remove_all


@dataclass(eq=False)
class Workload:
    key: str
    cq: str
    requests: dict[str, int]  # resource -> thousandths
    priority: int = 0
    created: float = 0.0
    node_selector: dict[str, str] = field(default_factory=dict)
    # while admitted
    usage: dict[FR, int] = field(default_factory=dict)
    admitted_at: float = -1.0
    seq: int = 0  # admission order, breaks ties of admitted_at
    shape: tuple[Any, ...] | None = field(default=None, repr=False)  # ``shape``, computed once
    held_back: bool = False  # in a preemption loop: no longer preempts (replay.LOOP_LIMIT)

    def uses_any(self, frs: set[FR]) -> bool:
        return any(fr in frs for fr in self.usage)


def shape(cl: Cluster, wl: Workload) -> tuple[Any, ...]:
    """What a nomination depends on besides the cluster state: the ClusterQueue, requests, node
    selector and priority (and the creation time under ``LowerOrNewerEqualPriority``). Kept on the
    workload: none of these change while it waits."""
    if wl.shape is None:
        spec = cl.spec(wl.cq)
        newer = "LowerOrNewerEqualPriority" in (spec.within_cq, spec.reclaim)
        wl.shape = (wl.cq, tuple(sorted(wl.requests.items())), tuple(sorted(wl.node_selector.items())), wl.priority,
                    wl.created if newer else None)
    return wl.shape


_DIGEST_MOD = 1 << 128


def _admission(wl: Workload) -> int:
    """One admission's term of its tree's ``admitted_digest``: 128 bits of a hash of the workload
    and its sequence number. The digest is their sum, so admitting and releasing in any order
    gives the same digest for the same set; two different sets collide with probability ~2**-128."""
    h = hashlib.blake2b(f"{wl.key}\0{wl.seq}".encode(), digest_size=16).digest()
    return int.from_bytes(h, "big")


def _borrowed(n: Node, fr: FR) -> int:
    return max(0, n.usage.get(fr, 0) - n.subtree.get(fr, 0))


@dataclass
class Cluster:
    setup: KueueSetup
    tree: Tree
    admitted: dict[str, dict[str, Workload]]  # CQ -> key -> workload
    fair_sharing: bool
    strategies: tuple[str, ...]
    _seq: int = 0
    fast: bool = True  # memoised failures and search bounds; False = the straightforward reference
    held: dict[str, dict[FR, dict[int, int]]] = field(default_factory=dict)  # CQ -> fr -> priority -> usage
    fr_version: dict[tuple[str, FR], int] = field(default_factory=dict)
    borrow_version: dict[str, int] = field(default_factory=dict)
    drs_reads: int = 0  # bumped whenever a preemption search compares shares
    failures: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any, Any]] = field(default_factory=dict)
    roots: dict[str, Node] = field(default_factory=dict)
    dep_keys: dict[tuple[Any, ...], list[tuple[str, FR]]] = field(default_factory=dict)  # shape -> fr_version keys
    admitted_digest: dict[str, int] = field(default_factory=dict)  # root -> digest of its admissions
    searches: dict[tuple[Any, ...], tuple[list[Any], bool]] = field(default_factory=dict)  # preemption.get_targets

    @classmethod
    def of(cls, setup: KueueSetup, fair_sharing: bool | None = None) -> Cluster:
        fs = setup.fair_sharing if fair_sharing is None else fair_sharing
        tree = build_tree(setup)
        return cls(setup, tree, {q: {} for q in setup.queues}, fs, setup.strategies,
                   held={q: {} for q in setup.queues}, roots={q: n.root() for q, n in tree.cqs.items()})

    def spec(self, cq: str) -> ClusterQueueSpec:
        return self.setup.queues[cq]

    def node(self, cq: str) -> Node:
        return self.tree.cqs[cq]

    def _account(self, wl: Workload, usage: dict[FR, int], sign: int) -> None:
        """Bump the versions of what changes and keep ``held`` (called around real changes)."""
        root = self.roots[wl.cq].name
        held = self.held[wl.cq]
        self.admitted_digest[root] = (self.admitted_digest.get(root, 0) + sign * _admission(wl)) % _DIGEST_MOD
        for fr, v in usage.items():
            key = (root, fr)
            self.fr_version[key] = self.fr_version.get(key, 0) + 1
            by_prio = held.setdefault(fr, {})
            by_prio[wl.priority] = by_prio.get(wl.priority, 0) + sign * v

    def _borrow_state(self, wl: Workload, usage: dict[FR, int]) -> list[int]:
        out = []
        for fr in usage:
            n: Node | None = self.tree.cqs[wl.cq]
            while n is not None:
                out.append(_borrowed(n, fr))
                n = n.parent
        return out

    def admit(self, wl: Workload, usage: dict[FR, int], now: float) -> None:
        wl.usage = usage
        wl.admitted_at = now
        self._seq += 1
        wl.seq = self._seq
        self.admitted[wl.cq][wl.key] = wl
        before = self._borrow_state(wl, usage)
        add_all(self.node(wl.cq), usage)
        self._account(wl, usage, 1)
        if before != self._borrow_state(wl, usage):
            root = self.roots[wl.cq].name
            self.borrow_version[root] = self.borrow_version.get(root, 0) + 1

    def release(self, wl: Workload) -> None:
        """Finish or evict: the workload gives its quota back."""
        del self.admitted[wl.cq][wl.key]
        before = self._borrow_state(wl, wl.usage)
        remove_all(self.node(wl.cq), wl.usage)
        self._account(wl, wl.usage, -1)
        if before != self._borrow_state(wl, wl.usage):
            root = self.roots[wl.cq].name
            self.borrow_version[root] = self.borrow_version.get(root, 0) + 1
        wl.usage = {}
        wl.admitted_at = -1.0

    # snapshot simulation (SimulateWorkloadUsageRemoval / RemoveWorkload / AddWorkload)
    def remove_usage_of(self, wl: Workload) -> None:
        remove_all(self.node(wl.cq), wl.usage)

    def add_usage_of(self, wl: Workload) -> None:
        add_all(self.node(wl.cq), wl.usage)
