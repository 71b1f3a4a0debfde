"""Upstream Helm charts gpupolicy installs per cluster, at pinned versions, with generated values.

Each becomes one ArgoCD Application (``compiler.lower.argocd``) whose ``helm.valuesObject`` is
computed here; values never go to a file under ``out/`` (SPEC §9):

- **Kueue** (``oci://registry.k8s.io/kueue/charts/kueue``, chart version = Kueue version without
  the ``v``) on clusters that get Kueue objects: ``managerConfig.controllerManagerConfigYaml`` is
  the YAML of ``compiler.policy.kueue_manager.manager_config``; the image is pinned to the same release.
- **GPU Operator** (``https://helm.ngc.nvidia.com/nvidia``, chart ``gpu-operator``, versions carry
  a ``v``) on clusters with GPU pools: values from ``compiler.lower.gpu_operator``.
- **NVIDIA DRA driver** (``oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu``,
  strict semver without ``v``) on clusters with ``dra: true`` and GPU pools: values from
  ``dra_driver_values`` below.

Versions: ``compiler.policy.versions`` (the pins, SPEC §9, and the fleet's overrides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.emit.tree import dump_yaml
from compiler.lower.gpu_operator import gpu_operator_values
from compiler.policy.cuts import cut_mode, mig_cut
from compiler.policy.drivers import driver_plan
from compiler.policy.graph import DRA_DRIVER_NAMESPACE, GPU_OPERATOR_NAMESPACE, KUEUE_NAMESPACE, Policy
from compiler.policy.kueue_manager import manager_config
from compiler.policy.labels import LABEL_MIG_CONFIG
from compiler.policy.node_agents import DRA_KUBELET_PLUGIN, agent_tolerations
from compiler.policy.node_contract import MIG_STATE
from compiler.policy.versions import dra_driver_version, gpu_operator_version, kueue_version, plain, with_v

KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_IMAGE = "registry.k8s.io/kueue/kueue"
GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"
DRA_DRIVER_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged"}  # driver/toolkit/plugin DaemonSets
# Where the GPU Operator's driver container exposes the driver on the host.
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"


@dataclass(frozen=True)
class Chart:
    """One chart install: where it comes from, which version, where it goes, with what values."""

    key: str  # Application name suffix, e.g. "kueue-chart"
    repo_url: str
    chart: str | None  # None for OCI artifact sources (path ".")
    version: str
    release: str
    namespace: str
    values: dict[str, Any]
    namespace_labels: dict[str, str] = field(default_factory=dict)
    ignore_differences: tuple[dict[str, Any], ...] = ()

    def source(self) -> dict[str, Any]:
        src: dict[str, Any] = {"repoURL": self.repo_url, "targetRevision": self.version}
        if self.chart is None:
            src["path"] = "."  # Argo CD >= 3.1 OCI source: the chart is the artifact itself
        else:
            src["chart"] = self.chart
        src["helm"] = {"releaseName": self.release, "valuesObject": self.values}
        return src


def kueue_values(policy: Policy, cluster: str) -> dict[str, Any]:
    version = with_v(kueue_version(policy, policy.clusters[cluster]))
    return {
        "controllerManager": {"manager": {"image": {
            "repository": KUEUE_IMAGE, "tag": version, "pullPolicy": "IfNotPresent"}}},
        "managerConfig": {"controllerManagerConfigYaml": dump_yaml(manager_config(policy, cluster))},
    }


def dra_driver_values(policy: Policy, cluster: str) -> dict[str, Any]:
    """Values for the NVIDIA DRA driver chart, kept minimal.

    - GPU allocation on (``resources.gpus.enabled``) with ``gpuResourcesEnabledOverride``: the
      chart refuses GPU resources without it, because its kubelet plugin must not share a node with
      the device plugin — the GPU Operator values disable the device plugin on DRA clusters.
    - ComputeDomains (multi-node NVLink / IMEX) off: gpupolicy has no intent that needs them.
    - ``nvidiaDriverRoot``: the GPU Operator's driver root unless no pool takes its driver
      (nodes bring their own, installed at ``/``; one root for every node: ``compiler.policy.drivers``).
    - Feature gates the pools need: time-sliced pools → ``TimeSlicingSettings``, MPS pools →
      ``MPSSupport`` (user-mediated sharing through a shared claim's ``GpuConfig``); then the
      fleet's explicit ``featureGates.draDriver`` for the cluster, which win.
    - ``kubeletPlugin.tolerations``: the chart default plus every node-contract taint
      (``compiler.policy.node_agents``), so serving nodes publish ResourceSlices too;
      ``kubeletPlugin.affinity`` on clusters with MIG pools: ``mig_gated_affinity``.
    """
    c = policy.clusters[cluster]
    gates: dict[str, bool] = {}
    for p in c.pools:
        sharing = cut_mode(p.cut).sharing
        if sharing is not None:
            gates[sharing.dra_feature_gate] = True
    gates.update(c.feature_gates.dra_driver)
    values: dict[str, Any] = {
        "gpuResourcesEnabledOverride": True,
        "nvidiaDriverRoot": OPERATOR_DRIVER_ROOT if driver_plan(policy, cluster).operator_pools else "/",
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
    }
    if gates:
        values["featureGates"] = dict(sorted(gates.items()))
    plugin: dict[str, Any] = {}
    tolerations = agent_tolerations(policy, cluster, DRA_KUBELET_PLUGIN)
    if tolerations:
        plugin["tolerations"] = tolerations
    if any(mig_cut(p.cut) is not None for p in c.pools):
        plugin["affinity"] = mig_gated_affinity()
    if plugin:
        values["kubeletPlugin"] = plugin
    return values


# NFD's label for a node with an NVIDIA PCI device: the first of the chart's default affinity terms.
NFD_NVIDIA_PCI = "feature.node.kubernetes.io/pci-10de.present"


def mig_gated_affinity() -> dict[str, Any]:
    """The DRA kubelet plugin's node affinity on clusters with MIG pools: only on nodes whose MIG
    layout MIG Manager has applied (``nvidia.com/mig.config.state=success``) or that take no MIG
    layout (no ``nvidia.com/mig.config`` label).

    Why: the plugin enumerates GPUs and MIG devices once, when it starts, and publishes them as
    ResourceSlices (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
    ``cmd/gpu-kubelet-plugin/device_state.go`` ``NewDeviceState`` → ``nvlib.go``
    ``enumerateAllPossibleDevices``; ``driver.go`` publishes that set), and MIG Manager, which
    restarts only its own operands around a reconfiguration (gpu-operator v26.7.0 ``nvidia.com/gpu.deploy.*``
    ``paused-for-mig-change``), does not restart it: started before the layout is applied it
    advertises whole GPUs and stale slices forever (k8s-dra-driver-gpu#473). A DaemonSet pod runs
    only where its node affinity matches and the DaemonSet controller deletes it when the node
    stops matching (kubernetes ``pkg/controller/daemon/daemon_controller.go``,
    ``NodeShouldRunDaemonPod``), so while MIG Manager reconfigures (state ``pending``/``rebooting``)
    the plugin is gone, and it starts again, enumerating the new slices, at ``success``. The chart's
    default affinity (``kubeletPlugin.affinity``, v0.4.1 ``values.yaml``) is replaced, keeping its NFD
    term: the GPU Operator's NFD worker labels every NVIDIA node with it.
    """
    base = {"key": NFD_NVIDIA_PCI, "operator": "In", "values": ["true"]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [dict(base), {"key": LABEL_MIG_CONFIG, "operator": "DoesNotExist"}]},
        {"matchExpressions": [dict(base, values=["true"]), {"key": MIG_STATE, "operator": "In", "values": ["success"]}]},
    ]}}}


# Kueue's internal certificate manager writes the CA into its webhooks and CRD conversion
# webhooks after install; the chart renders none, so only a client-side diff would see it.
_CA_BUNDLES = (
    {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
     "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
     "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
     "jqPathExpressions": [".spec.conversion.webhook?.clientConfig?.caBundle"]},
)


def cluster_charts(policy: Policy, cluster: str, *, kueue: bool) -> list[Chart]:
    """The charts one cluster needs: Kueue's when Kueue objects were lowered for it, the GPU
    Operator's (and the DRA driver's) when it has pools."""
    c = policy.clusters[cluster]
    charts: list[Chart] = []
    if kueue:
        charts.append(Chart("kueue-chart", KUEUE_CHART, None, plain(kueue_version(policy, c)),
                            "kueue", KUEUE_NAMESPACE, kueue_values(policy, cluster),
                            ignore_differences=_CA_BUNDLES))
    if c.pools:
        charts.append(Chart("gpu-operator-chart", GPU_OPERATOR_REPO, "gpu-operator",
                            with_v(gpu_operator_version(policy, c)), "gpu-operator", GPU_OPERATOR_NAMESPACE,
                            gpu_operator_values(policy, cluster), namespace_labels=PRIVILEGED))
        if c.dra:
            charts.append(Chart("dra-driver-chart", DRA_DRIVER_CHART, None, plain(dra_driver_version(policy, c)),
                                "dra-driver-nvidia-gpu", DRA_DRIVER_NAMESPACE,
                                dra_driver_values(policy, cluster), namespace_labels=PRIVILEGED))
    return charts
