"""The simulated cluster: workloads, the cohort tree and who holds what.

A ``Workload`` is one job of the trace with a single pod set: its total requests per resource (in
thousandths), the ClusterQueue its LocalQueue points to, its priority (the value of its
WorkloadPriorityClass) and its creation time, which Kueue uses for FIFO order
(``GetQueueOrderTimestamp`` in pkg/workload/workload.go at v0.19.2: the creation timestamp unless
evicted by a PodsReady timeout or an admission check, neither of which is simulated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def uses_any(self, frs: set[FR]) -> bool:
        return any(fr in frs for fr in self.usage)


@dataclass
class Cluster:
    setup: KueueSetup
    tree: Tree
    admitted: dict[str, dict[str, Workload]]  # CQ -> key -> workload
    fair_sharing: bool
    strategies: tuple[str, ...]
    _seq: int = 0

    @classmethod
    def of(cls, setup: KueueSetup, fair_sharing: bool | None = None) -> Cluster:
        fs = setup.fair_sharing if fair_sharing is None else fair_sharing
        return cls(setup, build_tree(setup), {q: {} for q in setup.queues}, fs, setup.strategies)

    def spec(self, cq: str) -> ClusterQueueSpec:
        return self.setup.queues[cq]

    def node(self, cq: str) -> Node:
        return self.tree.cqs[cq]

    def admit(self, wl: Workload, usage: dict[FR, int], now: float) -> None:
        wl.usage = usage
        wl.admitted_at = now
        self._seq += 1
        wl.seq = self._seq
        self.admitted[wl.cq][wl.key] = wl
        add_all(self.node(wl.cq), usage)

    def release(self, wl: Workload) -> None:
        """Finish or evict: the workload gives its quota back."""
        del self.admitted[wl.cq][wl.key]
        remove_all(self.node(wl.cq), wl.usage)
        wl.usage = {}
        wl.admitted_at = -1.0

    # snapshot simulation (SimulateWorkloadUsageRemoval / RemoveWorkload / AddWorkload)
    def remove_usage_of(self, wl: Workload) -> None:
        remove_all(self.node(wl.cq), wl.usage)

    def add_usage_of(self, wl: Workload) -> None:
        add_all(self.node(wl.cq), wl.usage)
