"""Node agents: the DaemonSets upstream charts run on every GPU node, and what they tolerate.

A node agent must run on every node of every GPU pool, serving pools included: without the GPU
Operator's operands a node has no driver, toolkit, GFD labels or device plugin; without the NFD
worker it has no ``feature.node.kubernetes.io/pci-10de.present`` label (which the DRA kubelet
plugin's default affinity selects on); without the DRA kubelet plugin it publishes no
ResourceSlice. Helm replaces lists, so overriding a chart's ``tolerations`` must repeat its
defaults. The defaults below are copied from the pinned charts:

- GPU Operator operands: NVIDIA/gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml``
  ``daemonsets.tolerations`` (copied to the ClusterPolicy's ``spec.daemonsets.tolerations`` by
  ``templates/clusterpolicy.yaml``; every operand DaemonSet gets them).
- NFD worker (GPU Operator subchart): same file, ``node-feature-discovery.worker.tolerations``.
- DRA kubelet plugin: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
  ``deployments/helm/dra-driver-nvidia-gpu/values.yaml`` ``kubeletPlugin.tolerations``
  (``templates/kubeletplugin.yaml`` copies them into the DaemonSet).

``agent_tolerations`` is what gpupolicy renders: the chart defaults plus one ``Exists``
toleration per taint key of the cluster's node contracts (the serving reservation
``gpupolicy.dev/serving``), so an agent runs on every pool whatever value the taint carries.
"""

from __future__ import annotations

from typing import Any

from compiler.policy.graph import Policy
from compiler.policy.node_contract import pool_contracts

Toleration = dict[str, Any]

GPU_TOLERATION: Toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CONTROL_PLANE_EQUAL: Toleration = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                                   "effect": "NoSchedule"}

GPU_OPERATOR_OPERANDS = "gpu-operator-operands"
NFD_WORKER = "nfd-worker"
DRA_KUBELET_PLUGIN = "dra-kubelet-plugin"

# The pinned charts' default tolerations per agent (module docstring for the paths).
CHART_DEFAULT_TOLERATIONS: dict[str, tuple[Toleration, ...]] = {
    GPU_OPERATOR_OPERANDS: (GPU_TOLERATION,),
    NFD_WORKER: (CONTROL_PLANE_EQUAL, GPU_TOLERATION),
    DRA_KUBELET_PLUGIN: (GPU_TOLERATION,),
}


def contract_taints(policy: Policy, cluster: str) -> list[tuple[str, str]]:
    """(key, effect) of every taint a pool of the cluster carries (node contract), sorted."""
    return sorted({(t.key, t.effect) for pc in pool_contracts(policy, cluster) for t in pc.taints})


def agent_tolerations(policy: Policy, cluster: str, agent: str) -> list[Toleration]:
    """The chart defaults of ``agent`` plus ``Exists`` for each contract taint; the defaults alone
    (``[]`` returned) when the cluster's pools carry no taint, so the values stay minimal."""
    defaults = CHART_DEFAULT_TOLERATIONS[agent]
    extra = [{"key": key, "operator": "Exists", "effect": effect} for key, effect in contract_taints(policy, cluster)
             if not any(t["key"] == key and t.get("effect") == effect and t.get("operator") == "Exists"
                        for t in defaults)]  # a default that tolerates every value of the taint already
    if not extra:
        return []
    return [dict(t) for t in defaults] + extra


def tolerates(tolerations: list[Toleration] | tuple[Toleration, ...], key: str, value: str, effect: str) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint`` (k8s.io/api core/v1 toleration.go): an empty
    effect matches every effect; an empty key with ``Exists`` matches every taint; ``Exists``
    ignores the value; ``Equal`` (the default) compares it."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != effect:
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t.get("key") != key:
            continue
        if op == "Exists" or str(t.get("value", "")) == value:
            return True
    return False
