"""Runtime attribution for audits: who held which GPU, for which model, with which data.

Kueue copies the workload labels to its Workloads (``labelKeysToCopy``, compiler.lower.kueue);
DCGM exporter puts pod labels on GPU metrics where a device belongs to one pod at a time.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from compiler.policy.graph import Policy

AUDIT_KEYS = (
    "gpupolicy.dev/team", "gpupolicy.dev/model", "gpupolicy.dev/data-class",
    "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/local-queue-name", "kueue.x-k8s.io/cluster-queue-name",
)


def dcgm_attribution_values(label_keys: Iterable[str] = (), *, dra: bool = False) -> dict[str, Any]:
    """GPU Operator Helm values (``dcgmExporter``) that put pod labels on GPU metrics.

    The chart copies ``enablePodLabels``/``podLabelAllowlistRegex`` into the ClusterPolicy; the
    operator turns them into ``DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS=true`` and
    ``..._POD_LABEL_ALLOWLIST_REGEX`` and grants the exporter read access to pods. The allowlist
    keeps only the audit labels and Kueue's queue labels (metric cardinality). On DRA clusters
    the exporter also needs ``KUBERNETES_ENABLE_DRA`` to map claim-allocated GPUs to pods (the
    kubelet must expose DRA devices in its pod-resources API).
    """
    keys = sorted({*AUDIT_KEYS, *label_keys})
    values: dict[str, Any] = {
        "enablePodLabels": True,
        "podLabelAllowlistRegex": ["^" + re.escape(k).replace("\\-", "-") + "$" for k in keys],
    }
    if dra:
        values["env"] = [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]
    return {"dcgmExporter": values}


ATTRIBUTION = {
    "full": (True, "one pod per GPU: DCGM maps each device to the pod holding it"),
    "mig": (True, "one pod per MIG instance: DCGM reports per GPU instance, mapped to its pod"),
    "timeslicing": (False, "time-slicing: pods share one physical GPU and DCGM cannot attribute its metrics per "
                           "pod or container; only Kueue Workloads (labelKeysToCopy) say who was admitted"),
    "mps": (False, "MPS: clients share one physical GPU; DCGM metrics are per device, not per pod"),
}


def attribution_report(policy: Policy) -> dict[str, Any]:
    """Per cluster and GPU class: can GPU usage be attributed to a pod (and so a team, model and
    data class)? Kueue Workloads always carry the labels; DCGM metrics only where pods do not share."""
    out: dict[str, Any] = {}
    for cluster in sorted(policy.clusters):
        dra = policy.clusters[cluster].dra
        classes: dict[str, Any] = {}
        for cid, cls in sorted(policy.classes.get(cluster, {}).items()):
            per_pod, why = ATTRIBUTION.get(cls.cut, (False, f"unknown cut {cls.cut}"))
            classes[cid] = {"cut": cls.cut, "pools": list(cls.pools), "perPodMetrics": per_pod, "reason": why}
            if dra and per_pod:
                classes[cid]["requires"] = "dcgm-exporter KUBERNETES_ENABLE_DRA and kubelet pod-resources DRA support"
        out[cluster] = {"dra": dra, "kueueLabelKeysToCopy": True, "classes": classes}
    return out
