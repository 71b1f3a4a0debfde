"""The audit-attribution section of REPORT.md and allocation.json: per cluster and GPU class, whether
GPU usage can be attributed to a pod (and so a team, model and data class), from the cut-mode
table (``compiler.policy.cuts``)."""

from __future__ import annotations

from typing import Any

from compiler.policy.cuts import CUT_MODES
from compiler.policy.graph import Policy


def attribution_report(policy: Policy) -> dict[str, Any]:
    """Per cluster and GPU class: can GPU usage be attributed to a pod (and so a team, model and
    data class)? Kueue Workloads always carry the labels; DCGM metrics only where pods do not share."""
    out: dict[str, Any] = {}
    for cluster in sorted(policy.clusters):
        dra = policy.clusters[cluster].dra
        classes: dict[str, Any] = {}
        for cid, cls in sorted(policy.classes.get(cluster, {}).items()):
            mode = CUT_MODES[cls.cut]  # the cut-mode table says whether pods share a device
            per_pod, why = mode.per_pod_metrics, mode.attribution
            if dra and per_pod:
                # The exporter's DRA mode stays off (compiler.lower.attribution): without it the
                # exporter cannot map claim-allocated GPUs to pods.
                per_pod, why = False, ("DRA cluster: the DCGM exporter's DRA mode is off (its ServiceAccount "
                                       "cannot list ResourceSlices); Kueue Workloads carry the labels")
            classes[cid] = {"cut": cls.cut, "pools": list(cls.pools), "perPodMetrics": per_pod, "reason": why}
        out[cluster] = {"dra": dra, "kueueLabelKeysToCopy": True, "classes": classes}
    return out
