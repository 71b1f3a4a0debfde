"""Karpenter NodePools (``karpenter.sh/v1``, component ``nodes``): the node contract of each pool
on clusters whose nodes Karpenter provisions (``provisioner: karpenter``).

Each pool becomes one NodePool named after it: the contract's labels in
``spec.template.metadata.labels`` (Karpenter syncs ``node-restriction.kubernetes.io/*``
labels onto the Node itself, which a kubelet may not), serving taints in
``spec.template.spec.taints``, the pool's instance types and capacity type as requirements,
``nodeClassRef`` to the pool's ``EC2NodeClass`` (``karpenter.k8s.aws``; gpupolicy assumes the
AWS provider, as the instance-type names do), and limits so Karpenter never launches more GPUs
than the policy declares (Kueue quotas are computed from ``nodes x gpusPerNode``).

Limits: ``nvidia.com/gpu`` = nodes x GPUs counts nodes while they launch (Karpenter knows an
instance type's GPUs, not how the device plugin will cut them); once a node is initialised
Karpenter counts the node's own capacity, where time-sliced/MPS and MIG GPUs appear as
``nvidia.com/gpu.shared`` / ``nvidia.com/mig-*``, so those get a limit too.

Known limit of dynamic provisioning: Karpenter simulates scheduling with instance-type
capacity only, so pending pods that request ``nvidia.com/gpu.shared`` or ``nvidia.com/mig-*``
never trigger a launch; such pools scale up only through pods requesting ``nvidia.com/gpu``
(or must be kept warm, e.g. with Karpenter's alpha static ``replicas``). Consolidation is
``WhenEmpty``: a GPU node is not disrupted to repack running training jobs or model servers.
"""

from __future__ import annotations

from typing import Any

from compiler.lower.common import obj
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import Policy
from compiler.policy.labels import LABEL_POOL
from compiler.policy.node_contract import FULL_GPU, PoolContract, pool_contracts

KARPENTER_API = "karpenter.sh/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_KIND = "EC2NodeClass"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
# Karpenter's WellKnownLabels (pkg/apis/v1/labels.go): constrained as requirements, not set as labels.
WELL_KNOWN = frozenset({
    "karpenter.sh/capacity-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "node.kubernetes.io/windows-build",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
})


def _limits(pc: PoolContract) -> dict[str, int]:
    limits = {FULL_GPU: pc.nodes * pc.gpus_per_node}
    for resource, per_node in pc.resources.items():
        if resource != FULL_GPU and per_node > 0:
            limits[resource] = pc.nodes * per_node
    return dict(sorted(limits.items()))


def node_pool(policy: Policy, cluster: str, pc: PoolContract) -> dict[str, Any] | None:
    pool = next(p for p in policy.clusters[cluster].pools if p.name == pc.pool)
    kp = pool.karpenter
    if kp is None:
        return None  # FLEET014 requires karpenter settings on every pool of such a cluster
    labels = {k: v for k, v in pc.labels.items() if k not in WELL_KNOWN}
    requirements: list[dict[str, Any]] = []
    if kp.instance_types:
        requirements.append({"key": INSTANCE_TYPE, "operator": "In", "values": sorted(kp.instance_types)})
    else:
        requirements += [
            {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(pc.gpus_per_node)]},
        ]
    requirements.append({"key": CAPACITY_TYPE, "operator": "In", "values": [kp.capacity_type]})
    for k, v in pc.labels.items():
        if k in WELL_KNOWN and k not in (INSTANCE_TYPE, CAPACITY_TYPE):
            requirements.append({"key": k, "operator": "In", "values": [v]})
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": kp.node_class},
        "requirements": requirements,
    }
    if pc.taints:
        template_spec["taints"] = [t.as_dict() for t in pc.taints]
    np = obj(KARPENTER_API, "NodePool", pc.pool, labels={LABEL_POOL: pc.pool})
    np["spec"] = {
        "template": {"metadata": {"labels": labels}, "spec": template_spec},
        "limits": _limits(pc),
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
    }
    return np


def lower_node_pools(policy: Policy, cluster: str) -> list[Manifest]:
    if policy.clusters[cluster].provisioner != "karpenter":
        return []  # the contract goes to out/reports/<cluster>-node-contract.json instead
    out = []
    for pc in pool_contracts(policy, cluster):
        np = node_pool(policy, cluster, pc)
        if np is not None:
            out.append(Manifest(cluster, "nodes", np, (policy.fleet_src.path,)))
    return out


TARGETS = (
    Target("nodes", "nodes", "cluster", passes=(lower_node_pools,), kinds=(
        Kind(KARPENTER_API, "NodePool", "cluster"),
    )),
)
