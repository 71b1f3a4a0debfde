"""Which of Kueue's DRA accounting paths each cluster uses, and why (domain/kueue.md §6).

* device plugin: ``dra: false`` or Kubernetes < 1.34 — no DRA objects; Kueue counts
  ``nvidia.com/*`` extended resources.
* ResourceClaimTemplate counting (Kueue >= 0.18, gate ``KueueDRAIntegration`` beta on):
  Kueue counts ``exactly.count`` devices per DeviceClass of each template a pod references,
  under the ``deviceClassMappings`` name ``gpupolicy.dev/<class>``. The path gpupolicy uses.
* extended resource (KEP-5004): the DeviceClass also carries ``extendedResourceName`` so a pod
  may ask for ``gpupolicy.dev/<class>: N``; needs Kubernetes ``DRAExtendedResource`` (alpha,
  off in 1.34-1.35, beta on in 1.36) and Kueue >= 0.19 (``KueueDRAIntegrationExtendedResource``
  beta on). Added on top of templates where both allow it.
* counter-based (partitionable devices, KEP-4815): quota in driver counters (memory, SMs)
  instead of devices; needs Kubernetes >= 1.35, the driver's ``DynamicMIG`` gate (which creates
  MIG devices per claim and destroys partitions it did not create) and Kueue >= 0.19. gpupolicy
  budgets static MIG layouts in slices, so it never picks this path; the report says whether a
  cluster would be eligible.
* capacity-based (consumable capacity, KEP-5075): Kubernetes >= 1.36, Kueue alpha gate; not used.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model.fleet import Cluster
from compiler.policy.cuts import mig_cut
from compiler.policy.graph import Policy
from compiler.policy.versions import declared_dra_driver, kueue_version, version_tuple

# Kubernetes feature gates that matter here: first minor where each is on by default.
K8S_DEFAULT_ON = {"DRAExtendedResource": 36, "DRAPartitionableDevices": 36, "DRAConsumableCapacity": 36}


def kube_minor(cluster: Cluster) -> int:
    return int(cluster.kubernetes_version.split(".")[1])


def dra_active(cluster: Cluster) -> bool:
    """DRA objects are generated: ``dra: true``, Kubernetes >= 1.34 (DRA001 otherwise), and the
    cluster runs workloads itself (a MultiKueue manager only counts quota for its workers)."""
    return dra_counts(cluster) and not _manager(cluster)


def dra_counts(cluster: Cluster) -> bool:
    """Kueue counts GPUs in ResourceClaimTemplates here: a DRA cluster, or a MultiKueue manager of
    DRA workers (GITOPS003 keeps ``dra`` equal across them). A manager admits a job against the
    templates its pods name, so it holds the templates and the ``deviceClassMappings`` too; Kueue
    syncs neither templates nor DeviceClasses to workers (site/.../tasks/manage/setup_dra.md), and
    the manager needs no DeviceClass or driver: it allocates nothing."""
    return cluster.dra and kube_minor(cluster) >= 34


def _manager(cluster: Cluster) -> bool:
    return cluster.multikueue is not None and cluster.multikueue.role == "manager"


def k8s_gate(cluster: Cluster, gate: str) -> bool:
    declared = cluster.feature_gates.kubernetes.get(gate)
    if declared is not None:
        return declared
    return kube_minor(cluster) >= K8S_DEFAULT_ON.get(gate, 99)


def driver_has_dynamic_mig(version: str | None) -> bool:
    """DynamicMIG ships from v25.12.0 (NVIDIA numbering) and in every kubernetes-sigs v0.4+."""
    v = version_tuple(version)
    return v is not None and (v >= (25, 12, 0) or (v[0] == 0 and v >= (0, 4, 0)))


@dataclass(frozen=True)
class Accounting:
    cluster: str
    path: str  # "device-plugin" | "claim-template"
    extended_resource: bool  # DeviceClasses also carry extendedResourceName
    counter_eligible: bool
    reasons: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "extendedResource": self.extended_resource,
                "counterEligible": self.counter_eligible, "why": list(self.reasons)}


def decide(policy: Policy, cluster: Cluster) -> Accounting:
    k8s = f"Kubernetes {cluster.kubernetes_version}"
    if not cluster.dra:
        return Accounting(cluster.name, "device-plugin", False, False,
                          ("dra: false: GPUs are device-plugin extended resources (nvidia.com/*); no DRA objects",))
    if kube_minor(cluster) < 34:
        return Accounting(cluster.name, "device-plugin", False, False,
                          (f"{k8s} has no resource.k8s.io/v1 (DRA001); the device-plugin path is the fallback",))
    kueue = kueue_version(policy, cluster)
    if not dra_active(cluster):
        return Accounting(cluster.name, "claim-template", False, False, (
            f"MultiKueue manager of DRA workers: Kueue {kueue} admits each job against the "
            "ResourceClaimTemplates its pods name, so the manager holds the workers' templates in each team "
            "namespace and maps their DeviceClasses (deviceClassMappings); no DeviceClass or driver is "
            "installed on it, and each worker holds its own templates and DeviceClasses",))
    kv = version_tuple(kueue) or (0, 0, 0)
    reasons = [f"ResourceClaimTemplate counting: Kueue {kueue} counts exactly.count devices per DeviceClass "
               "(ExactCount only) under deviceClassMappings gpupolicy.dev/<class>"]
    gate = cluster.feature_gates.kubernetes.get("DRAExtendedResource")
    ext_k8s = k8s_gate(cluster, "DRAExtendedResource")
    ext = ext_k8s and kv >= (0, 19, 0)
    if ext:
        reasons.append(f"extendedResourceName: on ({k8s} with DRAExtendedResource, Kueue {kueue} counts it under "
                       "the same mapping): pods may also request gpupolicy.dev/<class>: N")
    else:
        why = (f"{k8s} runs DRAExtendedResource {'disabled' if gate is False else 'alpha, off by default'}"
               if not ext_k8s else f"Kueue {kueue} is older than v0.19")
        reasons.append(f"extendedResourceName: not set ({why})")
    dyn = cluster.feature_gates.dra_driver.get("DynamicMIG", False)
    drv = declared_dra_driver(policy, cluster)
    missing = []
    if kube_minor(cluster) < 35:
        missing.append(f"{k8s} < 1.35")
    elif not k8s_gate(cluster, "DRAPartitionableDevices"):
        missing.append("DRAPartitionableDevices off")
    if not dyn:
        missing.append("the DRA driver's DynamicMIG gate is off")
    elif not driver_has_dynamic_mig(drv):
        missing.append(f"DRA driver {drv or '(unpinned)'} has no DynamicMIG")
    if kv < (0, 19, 0):
        missing.append(f"Kueue {kueue} < v0.19")
    static_mig = [p.name for p in cluster.pools if mig_cut(p.cut) is not None]
    if missing:
        reasons.append("counter-based MIG quota: not used (" + "; ".join(missing) + ")")
    else:
        reasons.append("counter-based MIG quota: eligible, not used: budgets count static MIG slices, and "
                       "DynamicMIG replaces the static layouts")
    if static_mig:
        reasons.append(f"MIG pools {', '.join(static_mig)} are static layouts applied by MIG Manager: each slice "
                       "is one device, counted like a full card")
    return Accounting(cluster.name, "claim-template", ext, not missing, tuple(reasons))
