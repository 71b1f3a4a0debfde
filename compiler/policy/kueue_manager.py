"""Kueue's manager Configuration (``config.kueue.x-k8s.io/v1beta2``) derived from the policy: which
namespaces and job frameworks Kueue manages, which labels it copies onto Workloads, which
resources it accounts (GPUs only, BlockUndeclared) and, on DRA clusters, the
``deviceClassMappings``. Delivered as Helm values of the Kueue chart (``compiler.lower.charts``);
read by the admission lowering (which kinds Kueue manages), ``verify`` and ``admit``.
"""

from __future__ import annotations

from typing import Any

from compiler.policy.dra_classes import device_class_mappings
from compiler.policy.graph import KUEUE_NAMESPACE, Policy
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_PURPOSE, LABEL_TEAM
from compiler.policy.multikueue_topology import is_manager

# Resources Kueue does not account (quota is about GPUs); prefixes, as Kueue matches them.
EXCLUDED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "hugepages-", "pods")
AUDIT_LABELS = (LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS)


def manager_config(policy: Policy, cluster: str) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2), delivered as Helm values."""
    c = policy.clusters[cluster]
    system = sorted({"kube-system", KUEUE_NAMESPACE, *c.system_namespaces})
    cfg: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "manageJobsWithoutQueueName": True,
        # Only gpupolicy's training namespaces; serving and system namespaces are never managed.
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {"key": LABEL_PURPOSE, "operator": "In", "values": ["training"]},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": system},
            ]
        },
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        "integrations": {
            "frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob"],
            "labelKeysToCopy": sorted(set(AUDIT_LABELS) | set(policy.fleet.spec.admission.required_labels)),
        },
        # Queues cover only GPU resources. CPU, memory and storage are excluded from quota, and
        # every other undeclared resource blocks admission: a job asking for a GPU resource its
        # team has no budget for is never admitted (IgnoreUndeclared would admit it unaccounted).
        "resources": {"quotaCheckStrategy": "BlockUndeclared", "excludeResourcePrefixes": list(EXCLUDED_RESOURCES)},
    }
    # A MultiKueue manager marks the workloads it creates on its workers with its own origin: its
    # garbage collector deletes every remote workload of its origin that has no local counterpart,
    # so two managers of one worker under the default origin ("multikueue") delete each other's
    # jobs (MultiKueue.Origin, apis/config/v1beta2/configuration_types.go, kubernetes-sigs/kueue
    # v0.19.2). A cluster name is a DNS label, so a valid label value.
    if is_manager(c):
        cfg["multiKueue"] = {"origin": cluster}
    # DRA clusters: claims on each class's DeviceClasses count as gpupolicy.dev/<class>.
    if mappings := device_class_mappings(policy, cluster):
        cfg["resources"]["deviceClassMappings"] = mappings
    return cfg
