"""NVIDIA GPU Operator: device-plugin configs, the custom MIG Manager config, and the chart's values.

What is emitted per cluster (component ``gpu-operator``, namespace ``gpu-operator``):

- ``ConfigMap gpupolicy-device-plugin``: one data key per pool (key = pool name), each a
  device-plugin config file. Time-sliced and MPS pools get ``sharing`` (renamed to
  ``nvidia.com/gpu.shared`` by default, SPEC §9); full-card and MIG pools get a key without
  sharing, so a node's ``nvidia.com/device-plugin.config`` label always names an existing key
  (an unknown key makes the plugin skip reconfiguration, k8s-device-plugin README).
- ``ConfigMap gpupolicy-mig-parted`` (key ``config.yaml``) only when a pool lists per-device
  MIG profiles. A custom config replaces the one MIG Manager generates for every node of the
  cluster, so it holds every layout the cluster's nodes are labelled with (``all-disabled``,
  the named layouts such as ``all-balanced`` written out per model with ``device-filter`` on
  the model's PCI ids, and ``gpupolicy-<pool>`` for per-device layouts). Named layouts alone
  need no ConfigMap: MIG Manager (GPU Operator >= v26.3) generates them per node.
- ``gpu_operator_values``: the chart's Helm values, put inline in the cluster's GPU Operator
  Application. The chart owns the ClusterPolicy; gpupolicy never emits one.

The MIG strategy is ``mixed`` cluster-wide when any pool uses MIG (SPEC §9): the Operator
passes ``spec.mig.strategy`` to the device plugin and GFD as ``MIG_STRATEGY``, which overrides
``flags.migStrategy`` in the config files; under ``mixed`` GPUs with MIG disabled are still
advertised as ``nvidia.com/gpu``, so full-card pools are unaffected.

Driver: ``compiler.policy.drivers`` decides which pools take the Operator's one driver (chart
default, or a pinned ``driver.version``) and which bring their own (their nodes labelled
``nvidia.com/gpu.deploy.driver=false`` by the node contract); ``driver.enabled: false`` only
when no pool takes the Operator's.

DRA clusters (``cluster.dra``): the ClusterPolicy stays (chart default, ``deployCR``) with
``devicePlugin.enabled: false``; GPU and MIG *allocation* belongs to the NVIDIA DRA driver
(its own chart, ``versions.draDriver``, installed by the GitOps lowering with
``resources.gpus.enabled`` and ``gpuResourcesEnabledOverride``: its kubelet plugin must not run
beside the device plugin). MIG *geometry* stays with MIG Manager, a ClusterPolicy operand,
driven by the same ``nvidia.com/mig.config`` node labels: the DRA driver's GA path allocates
pre-created ("static") MIG devices, while creating them on demand (DynamicMIG) is an alpha
feature gate that conflicts with MPS and health checks. GFD and DCGM exporter stay too, so
the node contract and GPU metrics are the same on both paths. The GPUCluster CR is not used:
it is a technology preview in v26.7.0, excludes ClusterPolicy (and with it MIG Manager and
GFD), and cannot be migrated to in place. No device-plugin ConfigMap is emitted there;
sharing on DRA is a property of claims, not of nodes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from compiler.catalog import GpuModel
from compiler.emit.tree import dump_yaml
from compiler.lower.attribution import dcgm_attribution_values
from compiler.lower.common import obj
from compiler.mig import DISABLED
from compiler.model.fleet import Cluster, NodePool
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.cuts import GPU_RESOURCE, cut_mode, mig_cut
from compiler.policy.drivers import driver_plan
from compiler.policy.graph import GPU_OPERATOR_NAMESPACE, Policy
from compiler.policy.node_agents import GPU_OPERATOR_OPERANDS, NFD_WORKER, agent_tolerations
from compiler.policy.node_contract import CUSTOM_LAYOUT_PREFIX, mig_layout
from compiler.policy.partition import pool_mig_devices

SHARING_DIGEST_ENV = "GPUPOLICY_SHARING_SHA256"  # see sharing_digest

DEVICE_PLUGIN_CONFIGMAP = "gpupolicy-device-plugin"
MIG_PARTED_CONFIGMAP = "gpupolicy-mig-parted"


def _sharing(kind: str, replicas: int, rename: bool, fail_gt_one: bool) -> dict[str, Any]:
    return {kind: {
        "renameByDefault": rename,
        "failRequestsGreaterThanOne": fail_gt_one,
        "resources": [{"name": GPU_RESOURCE, "replicas": replicas}],
    }}


def device_plugin_config(pool: NodePool) -> dict[str, Any]:
    """The device-plugin config file of one pool (k8s-device-plugin api/config/v1)."""
    mode = cut_mode(pool.cut)
    cfg: dict[str, Any] = {"version": "v1",
                           "flags": {"migStrategy": "mixed" if mode.mig(pool.cut) is not None else "none"}}
    shares = mode.shares(pool.cut)
    if mode.sharing is not None and shares is not None:
        cfg["sharing"] = _sharing(mode.sharing.config_key, shares.replicas, shares.renamed,
                                  shares.fail_requests_greater_than_one)
    return cfg


def device_plugin_configs(policy: Policy, cluster: str) -> dict[str, str]:
    """ConfigMap data: pool name → rendered config file (empty on DRA clusters)."""
    c = policy.clusters[cluster]
    if c.dra:
        return {}
    return {p.name: dump_yaml(device_plugin_config(p)) for p in sorted(c.pools, key=lambda p: p.name)}


def _entries(model: GpuModel, devices: list[dict[str, int]]) -> list[dict[str, Any]]:
    """mig-parted entries for one model: identical GPUs share one entry (``devices: all``)."""
    groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for i, device in enumerate(devices):
        groups.setdefault(tuple(sorted((n, c) for n, c in device.items() if c)), []).append(i)
    out = []
    for key, indices in groups.items():
        entry: dict[str, Any] = {}
        if model.pci_device_ids:
            entry["device-filter"] = list(model.pci_device_ids)
        entry["devices"] = "all" if len(groups) == 1 else indices
        entry["mig-enabled"] = True
        entry["mig-devices"] = dict(key)
        out.append(entry)
    return out


def needs_custom_mig_config(cluster: Cluster) -> bool:
    return any((m := mig_cut(p.cut)) is not None and m.layout is None for p in cluster.pools)


def mig_parted_config(policy: Policy, cluster: str) -> dict[str, Any] | None:
    """The custom mig-parted config, or None when MIG Manager's generated one suffices."""
    c = policy.clusters[cluster]
    if not needs_custom_mig_config(c):
        return None
    layouts: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for pool in sorted(c.pools, key=lambda p: p.name):
        model = policy.catalog.get(pool.model)
        name = mig_layout(pool, model)
        if model is None or name is None or name == DISABLED:
            continue
        devices = pool_mig_devices(pool, policy.catalog)[0]
        if devices is None:
            continue  # reported by validation; lowering only runs on valid policies
        # One mig-config per name; models are told apart by device-filter. Two pools of one
        # model share a named layout only with the same devices, so the first one stands.
        layouts.setdefault(name, {}).setdefault(model.id, _entries(model, devices))
    configs: dict[str, Any] = {DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for name in sorted(layouts):
        configs[name] = [e for model_id in sorted(layouts[name]) for e in layouts[name][model_id]]
    return {"version": "v1", "mig-configs": configs}


def sharing_digest(policy: Policy, cluster: str) -> str:
    """A digest of the device-plugin ConfigMap's data. The Operator does not watch that ConfigMap
    (gpu-operator #1144: edited sharing settings do nothing until the device plugin restarts), so
    the digest goes into the device plugin's environment: a changed config changes the
    DaemonSet's pod template, and Kubernetes rolls the device plugin. Running pods keep their
    GPUs. MIG layouts get no such trigger: re-partitioning needs drained GPUs, so a changed
    layout is rolled out by relabelling nodes (``nvidia.com/mig.config``), deliberately."""
    data = device_plugin_configs(policy, cluster)
    h = hashlib.sha256()
    for key in sorted(data):
        h.update(f"{key}\0{data[key]}\0".encode())
    return h.hexdigest()[:16]


def gpu_operator_values(policy: Policy, cluster: str) -> dict[str, Any]:
    """Helm values for the GPU Operator chart on one cluster (the chart renders the ClusterPolicy)."""
    c = policy.clusters[cluster]
    has_mig = any(mig_cut(p.cut) is not None for p in c.pools)
    values: dict[str, Any] = {}
    if c.dra:
        values["devicePlugin"] = {"enabled": False}
    elif c.pools:
        values["devicePlugin"] = {"config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": ""},
                                  "env": [{"name": SHARING_DIGEST_ENV, "value": sharing_digest(policy, cluster)}]}
    if has_mig:
        values["mig"] = {"strategy": "mixed"}
    mig_manager: dict[str, Any] = {}
    if needs_custom_mig_config(c):
        mig_manager["config"] = {"name": MIG_PARTED_CONFIGMAP, "default": DISABLED}
    if has_mig and c.provisioner == "karpenter":
        # Cloud VMs usually cannot reset a GPU to change MIG mode; MIG Manager must reboot.
        mig_manager["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
    if mig_manager:
        values["migManager"] = mig_manager
    # Runtime attribution (SPEC §5): GPU metrics carry the workload's team/model/data-class.
    values.update(dcgm_attribution_values(policy.fleet.spec.admission.required_labels, dra=c.dra))
    driver = driver_plan(policy, cluster).values
    if driver:
        values["driver"] = driver
    # Node agents tolerate every taint of the node contract (serving pools), or serving nodes get
    # no driver, no GFD labels, no device plugin and no NFD labels (compiler.policy.node_agents).
    operands = agent_tolerations(policy, cluster, GPU_OPERATOR_OPERANDS)
    if operands:
        values["daemonsets"] = {"tolerations": operands}
        values["node-feature-discovery"] = {"worker": {"tolerations": agent_tolerations(policy, cluster, NFD_WORKER)}}
    return values


def lower_gpu_operator(policy: Policy, cluster: str) -> list[Manifest]:
    out: list[Manifest] = []
    sources = (policy.fleet_src.path,)
    data = device_plugin_configs(policy, cluster)
    if data:
        cm = obj("v1", "ConfigMap", DEVICE_PLUGIN_CONFIGMAP, namespace=GPU_OPERATOR_NAMESPACE)
        cm["data"] = data
        out.append(Manifest(cluster, "gpu-operator", cm, sources))
    mig = mig_parted_config(policy, cluster)
    if mig is not None:
        cm = obj("v1", "ConfigMap", MIG_PARTED_CONFIGMAP, namespace=GPU_OPERATOR_NAMESPACE)
        cm["data"] = {"config.yaml": dump_yaml(mig)}
        out.append(Manifest(cluster, "gpu-operator", cm, sources))
    return out


__all__ = [
    "CUSTOM_LAYOUT_PREFIX",
    "DEVICE_PLUGIN_CONFIGMAP",
    "MIG_PARTED_CONFIGMAP",
    "device_plugin_config",
    "device_plugin_configs",
    "gpu_operator_values",
    "lower_gpu_operator",
    "mig_parted_config",
]


TARGETS = (
    Target("gpu-operator", "gpu-operator", "cluster", passes=(lower_gpu_operator,), kinds=(
        Kind("v1", "ConfigMap"),  # device-plugin and MIG manager configs; the chart owns the rest
    )),
)
