"""Runtime attribution for audits, the GPU Operator side: the DCGM exporter values that put the audit
labels on GPU metrics where a device belongs to one pod at a time. Kueue copies the same labels to
its Workloads (``labelKeysToCopy``, ``compiler.policy.kueue_manager``); which classes can be
attributed per pod is ``compiler.report.attribution``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_QUEUE, LABEL_TEAM

AUDIT_KEYS = (
    LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS,
    LABEL_QUEUE, "kueue.x-k8s.io/local-queue-name", "kueue.x-k8s.io/cluster-queue-name",
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
