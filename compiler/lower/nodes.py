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

Static pools: Karpenter simulates scheduling with instance-type capacity only (an instance
type's ``nvidia.com/gpu`` count; karpenter#729: it does not know that time-slicing or MIG turns
those GPUs into ``nvidia.com/gpu.shared`` / ``nvidia.com/mig-*``, and it cannot simulate DRA
ResourceClaims), so pending pods that request those never trigger a launch, while Kueue admits
against the full quota. Pools whose nodes advertise anything but ``nvidia.com/gpu`` (time-sliced,
MPS and MIG pools) and every pool of a DRA cluster are therefore rendered **static**:
``spec.replicas = nodes`` (karpenter v1.14.1 ``pkg/apis/crds/karpenter.sh_nodepools.yaml``:
alpha, behind the controller's ``StaticCapacity`` feature gate, default false in
``pkg/operator/options/options.go``; listed as a prerequisite in the bootstrap report), with only
``limits.nodes`` (the CRD's CEL rule), and consolidation does not apply to them. OPS003
(``compiler.verify.ops``) checks that every resource Kueue may admit is one the provisioner can
create or a static pool holds.

Disruption: ``expireAfter: Never`` (the CRD default ``720h`` replaces every node monthly, and
expiration ignores budgets) and budgets that allow no drift or underutilisation disruption
(``reasons: [Drifted, Underutilized]`` at ``0``; 10 % otherwise, the CRD default): a multi-day
training job or a model server is never evicted to roll a node; node upgrades are an explicit
operation. Consolidation is ``WhenEmpty``: only empty GPU nodes are removed. OPS007 checks it.
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


# Karpenter's disruption: no node running work is replaced for drift or repacked; 10 % (the
# CRD default) for the rest, i.e. empty nodes.
DISRUPTION_BUDGETS: list[dict[str, Any]] = [
    {"nodes": "10%"},
    {"nodes": "0", "reasons": ["Drifted", "Underutilized"]},
]


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
        "expireAfter": "Never",
    }
    if pc.taints:
        template_spec["taints"] = [t.as_dict() for t in pc.taints]
    np = obj(KARPENTER_API, "NodePool", pc.pool, labels={LABEL_POOL: pc.pool})
    static = not pc.on_demand  # Karpenter cannot launch this pool's nodes on demand (module docstring)
    spec: dict[str, Any] = {}
    if static:
        spec["replicas"] = pc.nodes
    spec["template"] = {"metadata": {"labels": labels}, "spec": template_spec}
    spec["limits"] = {"nodes": pc.nodes} if static else _limits(pc)
    spec["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m",
                          "budgets": [dict(b) for b in DISRUPTION_BUDGETS]}
    np["spec"] = spec
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
