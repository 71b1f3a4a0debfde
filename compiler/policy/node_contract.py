"""The node contract: what every node of a pool must carry so the generated objects select it.

Kueue flavors and serving Deployments select nodes by compiler-owned labels (SPEC §9); the
GPU Operator picks each node's device-plugin config and MIG layout from two more labels. This
module says, per pool, which labels and taints a node must carry and what the NVIDIA stack
will report on it once the cut is applied:

- labels: ``gpupolicy.dev/pool=<pool>``; ``gpupolicy.dev/class=<class>`` when the pool
  provides exactly one GPU class; ``nvidia.com/device-plugin.config=<pool>`` (device-plugin
  clusters; the key of the pool's entry in the device-plugin ConfigMap);
  ``nvidia.com/mig.config=<layout>`` on MIG-capable models (``all-disabled`` unless the pool
  is cut with MIG); serving pools ``node-restriction.kubernetes.io/gpupolicy-serving=<pool>``;
  ``nvidia.com/gpu.deploy.driver=false`` on a pool whose nodes bring their own driver while
  others take the GPU Operator's (``compiler.policy.drivers``); plus the pool's own ``nodeLabels``.
- taints: serving pools ``gpupolicy.dev/serving=<pool>:NoSchedule``; every pool of a Karpenter
  cluster ``nvidia.com/gpu=true:NoSchedule`` (CPU pods neither launch nor pin GPU nodes).
- what GPU Feature Discovery writes (``nvidia.com/gpu.product`` per variant, with ``-SHARED``
  for time-sliced/MPS GPUs that are not renamed; ``nvidia.com/gpu.count`` = physical GPUs;
  under the ``mixed`` MIG strategy ``gpu.product`` keeps the board name and each profile gets
  ``nvidia.com/mig-<profile>.product=<product>-MIG-<profile>`` and ``.count``), and the
  extended resources the device plugin advertises per node (none on DRA clusters).

Clusters provisioned by Karpenter get the contract as NodePools (``compiler.lower.nodes``); for
the others ``compiler.report.node_contract`` writes ``out/reports/<cluster>-node-contract.json``.
The GPU Operator lowering reads the MIG layout names, and ``gpupolicy nodes``
(``compiler.tools.node_drift``) checks real nodes against ``pool_contracts``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from compiler.catalog import GpuModel, gfd_product_label
from compiler.mig import DISABLED, instances
from compiler.model.fleet import Cluster, NodePool
from compiler.policy.cuts import GPU_RESOURCE, SHARED_RESOURCE, cut_mode, mig_cut, mig_profile_slug
from compiler.policy.drivers import DEPLOY_DRIVER_LABEL, driver_plan
from compiler.policy.graph import Policy
from compiler.policy.labels import (
    LABEL_CLASS,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_MIG_CONFIG,
    LABEL_POOL,
    SERVING_NODE_LABEL,
    SERVING_TAINT_KEY,
)
from compiler.policy.memo import per_policy
from compiler.policy.partition import pool_mig_devices

CUSTOM_LAYOUT_PREFIX = "gpupolicy-"  # mig-parted config names for per-device layouts
GPU_TAINT_KEY = "nvidia.com/gpu"  # on the GPU nodes gpupolicy provisions (Karpenter NodePools)
GFD_PRODUCT = "nvidia.com/gpu.product"
GFD_COUNT = "nvidia.com/gpu.count"
GFD_REPLICAS = "nvidia.com/gpu.replicas"
GFD_SHARING = "nvidia.com/gpu.sharing-strategy"
MIG_STATE = "nvidia.com/mig.config.state"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
FULL_GPU = GPU_RESOURCE
SHARED_GPU = SHARED_RESOURCE


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str = "NoSchedule"

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class PoolContract:
    cluster: str
    pool: str
    model: str
    nodes: int
    gpus_per_node: int
    cut: str  # full | mig | timeslicing | mps
    serving: bool
    labels: dict[str, str]  # every node carries exactly these values
    taints: tuple[Taint, ...]
    products: tuple[str, ...]  # allowed nvidia.com/gpu.product values; () = unknown to the catalog
    products_complete: bool  # False: some variant's product name is unknown, so others may appear
    gfd_labels: dict[str, str]  # further labels GFD / MIG Manager write once the cut is applied
    mig_devices: dict[str, int] = field(default_factory=dict)  # MIG instances per node by profile
    resources: dict[str, int] = field(default_factory=dict)  # extended resources per node (0 = none)
    mig_layout: str | None = None
    device_plugin_config: str | None = None
    # Karpenter launches the pool's nodes as pods need them (a NodePool without ``replicas``):
    # ``nodes`` is then a ceiling, not a count. False for static NodePools (``replicas = nodes``,
    # ``on_demand_pool``) and on clusters gpupolicy does not provision: there ``nodes`` is how many
    # nodes exist.
    on_demand: bool = False

    def mig_products(self, product: str) -> dict[str, str]:
        """``nvidia.com/mig-<profile>.product`` values on a node whose board reads ``product``."""
        return {
            f"nvidia.com/mig-{mig_profile_slug(p)}.product": f"{product}-MIG-{gfd_product_label(p)}"
            for p in self.mig_devices
        }


def custom_layout_name(pool: str) -> str:
    """``gpupolicy-<pool>``, shortened with a hash when it would not fit a label value (63)."""
    name = CUSTOM_LAYOUT_PREFIX + pool
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    return f"{CUSTOM_LAYOUT_PREFIX}{pool[:44].rstrip('-')}-{digest}"


def mig_layout(pool: NodePool, model: GpuModel | None) -> str | None:
    """The ``nvidia.com/mig.config`` value of the pool's nodes (None: not MIG-capable)."""
    if model is None or not model.mig_capable:
        return None
    mig = mig_cut(pool.cut)
    if mig is not None:
        return mig.layout if mig.layout is not None else custom_layout_name(pool.name)
    return DISABLED


def pool_classes(policy: Policy, cluster: str, pool: str) -> list[str]:
    return [cid for cid, cls in policy.classes.get(cluster, {}).items() if pool in cls.pools]


def _shared(pool: NodePool) -> tuple[str | None, int, bool]:
    """(sharing strategy label value, replicas, renamed) of a time-sliced / MPS pool."""
    mode = cut_mode(pool.cut)
    shares = mode.shares(pool.cut)
    if mode.sharing is None or shares is None:
        return None, 1, False
    return mode.sharing.strategy_label, shares.replicas, shares.renamed


def pool_contract(policy: Policy, cluster: Cluster, pool: NodePool) -> PoolContract:
    model = policy.catalog.get(pool.model)
    layout = mig_layout(pool, model)
    classes = pool_classes(policy, cluster.name, pool.name)
    labels: dict[str, str] = {LABEL_POOL: pool.name}
    if len(classes) == 1:
        labels[LABEL_CLASS] = classes[0]
    if not cluster.dra:
        labels[LABEL_DEVICE_PLUGIN_CONFIG] = pool.name
    if layout is not None:
        labels[LABEL_MIG_CONFIG] = layout
    taints: tuple[Taint, ...] = ()
    if pool.serving:
        labels[SERVING_NODE_LABEL] = pool.name
        taints = (Taint(SERVING_TAINT_KEY, pool.name),)
    if cluster.provisioner == "karpenter":
        # Karpenter launches a node for any pending pod its NodePool admits, and a node a pod
        # without GPUs sits on is never empty: GPU NodePools keep such pods off (Karpenter's GPU
        # NodePool examples taint them so). Whatever belongs there tolerates it: Kueue's flavors
        # (compiler.lower.kueue.GPU_TOLERATION), serving pods and the node agents' chart defaults.
        taints += (Taint(GPU_TAINT_KEY, "true"),)
    drivers = driver_plan(policy, cluster.name)
    if drivers.operator_pools and pool.name in drivers.host_pools:
        labels[DEPLOY_DRIVER_LABEL] = "false"  # its nodes bring their own driver (compiler.policy.drivers)
    for k, v in pool.node_labels.items():
        labels.setdefault(k, v)

    # On DRA clusters no device-plugin config reaches GFD: sharing is per claim, not per node.
    strategy, replicas, renamed = (None, 1, False) if cluster.dra else _shared(pool)
    products = model.gfd_products if model is not None else ()
    if strategy is not None and not renamed:
        products = tuple(f"{p}-SHARED" for p in products)  # k8s-device-plugin internal/lm/resource.go
    complete = model is not None and all(v.product_name for v in model.variants)
    gfd: dict[str, str] = {GFD_COUNT: str(pool.gpus_per_node)}
    mig: dict[str, int] = {}
    if mig_cut(pool.cut) is not None:
        devices = pool_mig_devices(pool, policy.catalog)[0] if model is not None else None
        mig = instances(devices or [])
        gfd[MIG_STRATEGY_LABEL] = "mixed"
        for profile, n in mig.items():
            gfd[f"nvidia.com/mig-{mig_profile_slug(profile)}.count"] = str(n)
    if strategy is not None:
        gfd[GFD_REPLICAS] = str(replicas)
        gfd[GFD_SHARING] = strategy
    # What the device plugin advertises: each class's resource (cut-mode table), nvidia.com/gpu
    # dropping to 0 when nothing is advertised under that name.
    mode = cut_mode(pool.cut)
    resources: dict[str, int] = {FULL_GPU: 0}
    for unit in mode.units(pool, mig):
        resources[mode.resource(unit.profile, renamed)] = unit.per_node
    if layout is not None:
        gfd[MIG_STATE] = "success"
    return PoolContract(
        cluster=cluster.name,
        pool=pool.name,
        model=pool.model,
        nodes=pool.nodes,
        gpus_per_node=pool.gpus_per_node,
        cut=pool.cut.mode,
        serving=pool.serving,
        labels=dict(sorted(labels.items())),
        taints=taints,
        products=products,
        products_complete=complete,
        gfd_labels=dict(sorted(gfd.items())),
        mig_devices=mig,
        # DRA clusters run no device plugin: GPUs are ResourceSlice devices, not node capacity.
        resources={} if cluster.dra else dict(sorted(resources.items())),
        mig_layout=layout,
        device_plugin_config=None if cluster.dra else pool.name,
        on_demand=on_demand_pool(cluster, resources),
    )


def on_demand_pool(cluster: Cluster, resources: dict[str, int]) -> bool:
    """Whether Karpenter can launch the pool's nodes on demand. Karpenter simulates scheduling with
    an instance type's ``nvidia.com/gpu`` only (karpenter#729): it cannot launch for time-sliced,
    MPS or MIG resources, nor for DRA claims, so such pools, and every pool of a DRA cluster, are
    static NodePools that hold ``replicas = nodes`` (``compiler.lower.nodes``)."""
    if cluster.provisioner != "karpenter" or cluster.dra:
        return False
    return all(resource == FULL_GPU or n == 0 for resource, n in resources.items())


@per_policy  # asked by the node agents, the runtime section and the contract files per cluster
def pool_contracts(policy: Policy, cluster: str) -> list[PoolContract]:
    """The contracts of the cluster's pools, by pool name (shared: callers only read them)."""
    c = policy.clusters[cluster]
    return [pool_contract(policy, c, p) for p in sorted(c.pools, key=lambda p: p.name)]
