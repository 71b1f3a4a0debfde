"""What a node says about its GPUs, and how nodes group into pools.

Read from the labels GPU Feature Discovery writes (``nvidia.com/gpu.product``, ``gpu.count``,
``gpu.memory``, ``gpu.sharing-strategy``, ``gpu.replicas``, ``mig-<profile>.count`` under the mixed
MIG strategy), MIG Manager's ``nvidia.com/mig.config``, the node's advertised capacity, its taints,
Karpenter's labels (``karpenter.sh/nodepool``, ``karpenter.sh/capacity-type``,
``karpenter.k8s.aws/ec2nodeclass``, ``node.kubernetes.io/instance-type``) and gpupolicy's own
node contract (``gpupolicy.dev/pool``, the serving label and taint) when it is already there.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from compiler.policy.labels import LABEL_MIG_CONFIG, LABEL_POOL, SERVING_NODE_LABEL, SERVING_TAINT_KEY
from compiler.policy.node_contract import GFD_COUNT, GFD_PRODUCT, GFD_REPLICAS, GFD_SHARING
from compiler.tools.cluster_import.quantities import whole_gpus

GFD_MEMORY = "nvidia.com/gpu.memory"
GFD_PRESENT = "nvidia.com/gpu.present"
KARPENTER_POOL = "karpenter.sh/nodepool"
KARPENTER_CAPACITY = "karpenter.sh/capacity-type"
KARPENTER_NODE_CLASS = "karpenter.k8s.aws/ec2nodeclass"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
REGION = "topology.kubernetes.io/region"
CAPI_ANNOTATION = "cluster.x-k8s.io/machine"
_MIG_COUNT = re.compile(r"^nvidia\.com/mig-(?P<slug>.+)\.count$")
_KUBELET = re.compile(r"^v?1\.(\d+)")


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def mig_profile(slug: str) -> str:
    """``1g.10gb.me`` (label form) -> ``1g.10gb+me`` (profile name)."""
    return slug[:-3] + "+me" if slug.endswith(".me") else slug


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    capacity: dict[str, int]  # nvidia.com/* and gpupolicy.dev/* extended resources
    kubelet_minor: int | None
    annotations: frozenset[str] = frozenset()
    mig_counts: dict[str, int] = field(default_factory=dict)  # MIG profile -> instances on the node

    @property
    def product(self) -> str | None:
        return self.labels.get(GFD_PRODUCT)

    @property
    def gpu_count(self) -> int | None:
        count = _int(self.labels.get(GFD_COUNT))
        if count is not None:
            return count
        full = self.capacity.get("nvidia.com/gpu")
        return full if full else None

    @property
    def is_gpu(self) -> bool:
        return (self.product is not None or self.labels.get(GFD_PRESENT) == "true"
                or any(v > 0 for v in self.capacity.values()))

    @property
    def serving(self) -> bool:
        return SERVING_NODE_LABEL in self.labels or any(t[0] == SERVING_TAINT_KEY for t in self.taints)

    @property
    def sharing(self) -> str | None:
        """``time-slicing`` / ``mps`` (GFD), or ``time-slicing`` guessed from a ``-SHARED`` product."""
        strategy = self.labels.get(GFD_SHARING)
        if strategy in ("time-slicing", "mps"):
            return strategy
        if (self.product or "").endswith("-SHARED"):
            return "time-slicing"
        return None

    @property
    def replicas(self) -> int | None:
        return _int(self.labels.get(GFD_REPLICAS))

    @property
    def mig_config(self) -> str | None:
        return self.labels.get(LABEL_MIG_CONFIG)

    @property
    def pool_key(self) -> tuple[str, str]:
        """How nodes group: gpupolicy's pool label, else Karpenter's NodePool, else the GPU shape."""
        if LABEL_POOL in self.labels:
            return ("pool", self.labels[LABEL_POOL])
        if KARPENTER_POOL in self.labels:
            return ("karpenter", self.labels[KARPENTER_POOL])
        shape = (self.product, self.gpu_count, self.mig_config, self.sharing, self.replicas, self.serving,
                 tuple(sorted(self.mig_counts.items())))
        return ("shape", repr(shape))


def node_facts(node: dict[str, Any]) -> NodeFacts:
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    spec = node.get("spec") or {}
    taints = tuple((str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                   for t in spec.get("taints") or [] if isinstance(t, dict))
    status = node.get("status") or {}
    capacity = {str(k): whole_gpus(v, f"status.capacity[{k}]") for k, v in (status.get("capacity") or {}).items()
                if str(k).startswith(("nvidia.com/", "gpupolicy.dev/"))}
    kubelet = str((status.get("nodeInfo") or {}).get("kubeletVersion") or "")
    m = _KUBELET.match(kubelet)
    mig: dict[str, int] = {}
    for key, value in labels.items():
        mm = _MIG_COUNT.match(key)
        if mm and (n := _int(value)):
            mig[mig_profile(mm.group("slug"))] = n
    return NodeFacts(str(meta.get("name")), labels, taints, capacity, int(m.group(1)) if m else None,
                     frozenset(str(k) for k in (meta.get("annotations") or {})), mig)


@dataclass
class NodeGroup:
    """Nodes that look alike: one draft pool."""

    key: tuple[str, str]
    nodes: list[NodeFacts]

    @property
    def first(self) -> NodeFacts:
        return self.nodes[0]

    def common(self, label: str) -> str | None:
        values = {n.labels.get(label) for n in self.nodes}
        return values.pop() if len(values) == 1 else None

    def varies(self) -> list[str]:
        """GPU facts that differ between the group's nodes (a pool should be uniform)."""
        out = []
        for what, get in (("GPU product", lambda n: n.product), ("GPU count", lambda n: n.gpu_count),
                          ("MIG layout", lambda n: n.mig_config), ("sharing", lambda n: (n.sharing, n.replicas))):
            values = {repr(get(n)) for n in self.nodes}
            if len(values) > 1:
                out.append(f"{what} differs between nodes ({', '.join(sorted(values))})")
        return out


def group_nodes(facts: list[NodeFacts]) -> list[NodeGroup]:
    """GPU nodes grouped into would-be pools, in a stable order."""
    groups: dict[tuple[str, str], list[NodeFacts]] = defaultdict(list)
    for f in sorted(facts, key=lambda f: f.name):
        if f.is_gpu:
            groups[f.pool_key].append(f)
    return [NodeGroup(k, v) for k, v in sorted(groups.items())]
