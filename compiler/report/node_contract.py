"""``out/reports/<cluster>-node-contract.json``: the node contract (``compiler.policy.node_contract``)
as a document, one per cluster whose nodes gpupolicy does not provision (Karpenter clusters get
NodePools instead)."""

from __future__ import annotations

import json
from typing import Any

from compiler.policy.graph import Policy
from compiler.policy.node_contract import PoolContract, pool_contracts


def _pool_doc(pc: PoolContract) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pool": pc.pool,
        "model": pc.model,
        "cut": pc.cut,
        "serving": pc.serving,
        "nodes": pc.nodes,
        "gpusPerNode": pc.gpus_per_node,
        "labels": pc.labels,
        "taints": [t.as_dict() for t in pc.taints],
        "gpuProducts": list(pc.products),
        "gfdLabels": pc.gfd_labels,
    }
    if pc.mig_devices:
        doc["migDevicesPerNode"] = pc.mig_devices
        doc["migProducts"] = {p: pc.mig_products(p) for p in pc.products}
    if pc.resources:
        doc["resourcesPerNode"] = pc.resources
    return doc


def node_contract(policy: Policy, cluster: str) -> dict[str, Any]:
    """The contract as a JSON-able document (``out/reports/<cluster>-node-contract.json``)."""
    c = policy.clusters[cluster]
    return {
        "apiVersion": "gpupolicy.dev/v1alpha1",
        "kind": "NodeContract",
        "cluster": cluster,
        "provisioner": c.provisioner,
        "dra": c.dra,
        "description": (
            "Labels and taints every node of each pool must carry (set them when the node joins; "
            "gpupolicy does not write nodes), and what GPU Feature Discovery and the device plugin "
            "report once the cut is applied. Check a cluster with `gpupolicy nodes <kubectl get nodes -o json>`."
        ),
        "pools": [_pool_doc(pc) for pc in pool_contracts(policy, cluster)],
    }


def render_node_contract(policy: Policy, cluster: str) -> bytes:
    return (json.dumps(node_contract(policy, cluster), indent=2, sort_keys=True) + "\n").encode()


def contract_files(policy: Policy) -> dict[str, bytes]:
    """``out/``-relative report files: one contract per cluster whose nodes gpupolicy does not
    provision (Karpenter clusters get NodePools instead)."""
    return {
        f"reports/{c.name}-node-contract.json": render_node_contract(policy, c.name)
        for c in sorted(policy.fleet.spec.clusters, key=lambda c: c.name)
        if c.provisioner != "karpenter" and c.pools
    }
