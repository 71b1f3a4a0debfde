"""``gpupolicy nodes``: compare real nodes (``kubectl get nodes -o json``) with the node contract.

Findings are ``drift`` (the generated objects will not work as the policy says: exit 1) or
``info`` (worth knowing, not wrong: GPU Feature Discovery labels not there yet, a MIG
reconfiguration in progress, a GPU node outside every pool, a Karpenter pool launched on demand
scaled below its declared size). Pure functions over parsed JSON; the CLI reads the file and
prints.

A pool short of nodes is drift wherever its declared ``nodes`` is a count: Kueue's quotas are
``nodes x gpusPerNode``, so admitted work waits for GPUs that are not there. That holds on clusters
gpupolicy does not provision and for Karpenter's static NodePools (``replicas = nodes``: a shortfall
means Karpenter could not launch them, e.g. its ``StaticCapacity`` feature gate is off); only a pool
Karpenter launches on demand (``PoolContract.on_demand``) is expected to shrink with demand.

A node without ``gpupolicy.dev/pool`` is a GPU node if it advertises GPUs (device-plugin clusters)
or if the NVIDIA stack labelled it one (``is_gpu_node``): on DRA clusters GPUs are ResourceSlice
devices, never node capacity, so the labels are all a node export says. Such a node is named:
as drift when it still carries the rest of a pool's node contract (it lost its pool label, and the
pool's flavor no longer selects it), else as information (a GPU node outside every pool).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from compiler.policy.graph import Policy
from compiler.policy.labels import LABEL_MIG_CONFIG, LABEL_POOL, SERVING_NODE_LABEL, SERVING_TAINT_KEY
from compiler.policy.node_contract import (
    GFD_COUNT,
    GFD_PRODUCT,
    MIG_STATE,
    PoolContract,
    pool_contracts,
)

DRIFT = "drift"
INFO = "info"
# Set by the GPU Operator on nodes where Node Feature Discovery found an NVIDIA PCI device
# (NVIDIA/gpu-operator v26.7.0, controllers/state_manager.go: commonGPULabelKey, gpuNodeLabels).
GPU_PRESENT = "nvidia.com/gpu.present"


@dataclass(frozen=True)
class Finding:
    severity: str  # drift | info
    kind: str  # label | taint | product | gfd | resource | pool-size | unknown-pool | unlabelled
    message: str
    pool: str | None = None
    node: str | None = None
    key: str | None = None
    expected: Any = None
    actual: Any = None


@dataclass
class PoolCount:
    pool: str
    declared: int
    found: int


@dataclass
class NodeReport:
    cluster: str
    nodes: int
    pools: list[PoolCount] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return any(f.severity == DRIFT for f in self.findings)


def _name(node: dict[str, Any]) -> str:
    return str(node["metadata"]["name"])


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (node["metadata"].get("labels") or {}).items()}


def _taints(node: dict[str, Any]) -> list[dict[str, str]]:
    return [{k: str(t.get(k, "")) for k in ("key", "value", "effect")} for t in (node.get("spec") or {}).get("taints") or []]


def _quantity(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def is_gpu_node(labels: dict[str, str], node: dict[str, Any]) -> bool:
    """A node with NVIDIA GPUs, by what it advertises or by how the NVIDIA stack labelled it.

    - capacity or allocatable of an ``nvidia.com/`` extended resource (the device plugin's full
      cards, shares and MIG devices: device-plugin clusters only);
    - ``nvidia.com/gpu.present=true`` (the GPU Operator, from Node Feature Discovery's PCI scan:
      NVIDIA/gpu-operator v26.7.0, controllers/state_manager.go);
    - ``nvidia.com/gpu.product`` or a positive ``nvidia.com/gpu.count``, which GPU Feature
      Discovery writes for every node with GPUs (NVIDIA/k8s-device-plugin v0.20.0,
      internal/lm/resource.go: ``NewGPUResourceLabeler`` -> ``baseLabeler``, none when the
      count is 0). GFD keeps running on DRA clusters (README, "GPU Operator and the node
      contract"), where no node advertises a GPU resource: the NVIDIA DRA driver publishes
      GPUs as ResourceSlices.
    """
    status = node.get("status") or {}
    for advertised in (status.get("capacity") or {}, status.get("allocatable") or {}):
        if any(str(k).startswith("nvidia.com/") and (_quantity(v) or 0) > 0 for k, v in advertised.items()):
            return True
    return (labels.get(GPU_PRESENT) == "true" or bool(labels.get(GFD_PRODUCT))
            or (_quantity(labels.get(GFD_COUNT, "")) or 0) > 0)


def pool_guesses(policy: Policy, nodes: Iterable[dict[str, Any]]) -> list[str]:
    """Clusters whose pools include every pool label found on the nodes."""
    seen = {_labels(n).get(LABEL_POOL) for n in nodes} - {None}
    return [c.name for c in policy.fleet.spec.clusters
            if seen and seen <= {p.name for p in c.pools}]


def _check_labels(pc: PoolContract, name: str, labels: dict[str, str]) -> Iterable[Finding]:
    for key, want in pc.labels.items():
        have = labels.get(key)
        if have is None:
            yield Finding(DRIFT, "label", f"missing label {key}={want}", pc.pool, name, key, want, None)
        elif have != want:
            yield Finding(DRIFT, "label", f"label {key} is {have!r}, the contract says {want!r}", pc.pool, name,
                          key, want, have)
    if not pc.serving and SERVING_NODE_LABEL in labels:
        yield Finding(DRIFT, "label", f"training pool node carries the serving label {SERVING_NODE_LABEL}",
                      pc.pool, name, SERVING_NODE_LABEL, None, labels[SERVING_NODE_LABEL])


def _check_taints(pc: PoolContract, name: str, taints: list[dict[str, str]]) -> Iterable[Finding]:
    for t in pc.taints:
        want = t.as_dict()
        if want not in taints:
            other = [x for x in taints if x["key"] == t.key]
            text = f"taint {t.key}={t.value}:{t.effect} missing" + (f" (has {other[0]['value']}:{other[0]['effect']})"
                                                                    if other else "")
            yield Finding(DRIFT, "taint", text, pc.pool, name, t.key, want, other[0] if other else None)
    if not pc.serving:
        for x in taints:
            if x["key"] == SERVING_TAINT_KEY:
                yield Finding(DRIFT, "taint", f"training pool node is tainted {SERVING_TAINT_KEY}={x['value']}; "
                              "Kueue flavors do not tolerate it", pc.pool, name, SERVING_TAINT_KEY, None, x)


def _check_gpus(policy: Policy, pc: PoolContract, name: str, labels: dict[str, str]) -> Iterable[Finding]:
    product = labels.get(GFD_PRODUCT)
    if product is None:
        yield Finding(INFO, "gfd", f"no {GFD_PRODUCT} label (GPU Feature Discovery not running yet?)", pc.pool, name,
                      GFD_PRODUCT)
    elif pc.products and product not in pc.products:
        other = policy.catalog.by_product(product.removesuffix("-SHARED"))
        known = other is not None or pc.products_complete
        text = f"GPU product {product!r}, the pool's {pc.model} reads as {' or '.join(pc.products)}"
        if other is not None and other.id != pc.model:
            text += f" (that is a {other.id})"
        yield Finding(DRIFT if known else INFO, "product", text, pc.pool, name, GFD_PRODUCT, list(pc.products), product)
    expected = dict(pc.gfd_labels)
    if product is not None and product in pc.products:
        expected.update(pc.mig_products(product))
    for key, want in expected.items():
        have = labels.get(key)
        if have == want:
            continue
        if key == MIG_STATE and have in ("pending", "rebooting"):
            yield Finding(INFO, "gfd", f"MIG reconfiguration {have}", pc.pool, name, key, want, have)
        elif have is None:
            yield Finding(INFO, "gfd", f"no {key} label (expected {want})", pc.pool, name, key, want, None)
        else:
            yield Finding(DRIFT, "gfd", f"{key} is {have!r}, expected {want!r}", pc.pool, name, key, want, have)


def _check_resources(pc: PoolContract, name: str, node: dict[str, Any]) -> Iterable[Finding]:
    status = node.get("status") or {}
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    for resource, want in pc.resources.items():
        cap = _quantity(capacity.get(resource, 0))
        alloc = _quantity(allocatable.get(resource, capacity.get(resource, 0)))
        if cap != want:
            why = " (full-card requests could land on shared or MIG GPUs)" if want == 0 else ""
            yield Finding(DRIFT, "resource", f"capacity {resource} is {cap}, expected {want}{why}", pc.pool, name,
                          resource, want, cap)
        elif alloc != cap:
            yield Finding(DRIFT, "resource", f"allocatable {resource} is {alloc} of {cap} (unhealthy devices?)",
                          pc.pool, name, resource, want, alloc)


def check_nodes(policy: Policy, cluster: str, nodes: list[dict[str, Any]]) -> NodeReport:
    contracts = {pc.pool: pc for pc in pool_contracts(policy, cluster)}
    c = policy.clusters[cluster]
    report = NodeReport(cluster, len(nodes))
    members: dict[str, list[str]] = defaultdict(list)
    for node in sorted(nodes, key=_name):
        name, labels = _name(node), _labels(node)
        pool = labels.get(LABEL_POOL)
        if pool is None:
            report.findings.extend(_unlabelled(c.pools, contracts.values(), name, labels, node))
            continue
        pc = contracts.get(pool)
        if pc is None:
            report.findings.append(Finding(DRIFT, "unknown-pool", f"{LABEL_POOL}={pool} names no pool of cluster "
                                           f"{cluster} (pools: {', '.join(contracts) or 'none'})", pool, name,
                                           LABEL_POOL, None, pool))
            continue
        members[pool].append(name)
        report.findings.extend(_check_labels(pc, name, labels))
        report.findings.extend(_check_taints(pc, name, _taints(node)))
        report.findings.extend(_check_gpus(policy, pc, name, labels))
        report.findings.extend(_check_resources(pc, name, node))
    for pool, pc in contracts.items():
        found = len(members[pool])
        report.pools.append(PoolCount(pool, pc.nodes, found))
        if found < pc.nodes:
            report.findings.append(_short(pc, c.provisioner == "karpenter", found))
        elif found > pc.nodes:
            report.findings.append(Finding(DRIFT, "pool-size", f"{found} nodes, {pc.nodes} declared: quotas count "
                                           "only the declared ones", pool, None, None, pc.nodes, found))
    return report


def _short(pc: PoolContract, karpenter: bool, found: int) -> Finding:
    """A pool with fewer nodes than declared (module docstring: drift unless launched on demand)."""
    text = f"{found} of {pc.nodes} declared nodes"
    if pc.on_demand:  # Karpenter scales it down to what pods need
        return Finding(INFO, "pool-size", text, pc.pool, None, None, pc.nodes, found)
    if karpenter:
        text += (f" (a static NodePool, replicas: {pc.nodes}, that Karpenter has not filled: is its "
                 "StaticCapacity feature gate on?)")
    return Finding(DRIFT, "pool-size", text, pc.pool, None, None, pc.nodes, found)


def _carries_contract(pc: PoolContract, labels: dict[str, str]) -> bool:
    """The node carries every label of the pool's contract but the pool label itself, and at least
    one of them says more than ``nvidia.com/mig.config`` (which the GPU Operator sets to
    ``all-disabled`` on any MIG-capable node)."""
    rest = {k: v for k, v in pc.labels.items() if k != LABEL_POOL}
    return bool(set(rest) - {LABEL_MIG_CONFIG}) and all(labels.get(k) == v for k, v in rest.items())


def _unlabelled(pools: Iterable[Any], contracts: Iterable[PoolContract], name: str, labels: dict[str, str],
                node: dict[str, Any]) -> Iterable[Finding]:
    for p in pools:
        if p.node_labels and all(labels.get(k) == v for k, v in p.node_labels.items()):
            yield Finding(DRIFT, "label", f"matches the nodeLabels of pool {p.name} but has no {LABEL_POOL} label",
                          p.name, name, LABEL_POOL, p.name, None)
            return
    owners = [pc.pool for pc in contracts if _carries_contract(pc, labels)]
    if owners:
        pool = owners[0] if len(owners) == 1 else None
        yield Finding(DRIFT, "label", f"carries the node contract of pool {' or '.join(owners)} but no {LABEL_POOL} "
                      "label: no flavor or serving deployment selects it", pool, name, LABEL_POOL,
                      owners[0] if len(owners) == 1 else owners, None)
    elif is_gpu_node(labels, node):
        yield Finding(INFO, "unlabelled", f"GPU node outside every pool (no {LABEL_POOL} label)", None, name, LABEL_POOL)


def render_text(report: NodeReport) -> str:
    lines = [f"cluster {report.cluster}: {report.nodes} nodes, {len(report.pools)} pools"]
    by_pool: dict[str | None, list[Finding]] = defaultdict(list)
    for f in report.findings:
        by_pool[f.pool].append(f)
    for pc in report.pools:
        lines.append(f"pool {pc.pool}: {pc.found} of {pc.declared} nodes")
        lines += [f"  {f.severity.upper():5} {f.node or '-'}: {f.message}" for f in by_pool.pop(pc.pool, [])]
    for pool, findings in sorted(by_pool.items(), key=lambda kv: kv[0] or ""):
        lines.append(f"outside the contract{f' (pool {pool})' if pool else ''}:")
        lines += [f"  {f.severity.upper():5} {f.node or '-'}: {f.message}" for f in findings]
    n = sum(f.severity == DRIFT for f in report.findings)
    lines.append(f"{n} drift finding(s)" if n else "no drift")
    return "\n".join(lines) + "\n"


def render_json(report: NodeReport) -> str:
    doc = {
        "cluster": report.cluster,
        "nodes": report.nodes,
        "drift": report.drift,
        "pools": [asdict(p) for p in report.pools],
        "findings": [{k: v for k, v in asdict(f).items() if v is not None} for f in report.findings],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
