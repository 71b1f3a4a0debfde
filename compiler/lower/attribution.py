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
    ``..._POD_LABEL_ALLOWLIST_REGEX`` and grants the exporter read access to pods
    (NVIDIA/gpu-operator v26.7.0 ``assets/state-dcgm-exporter/0210_clusterrole.yaml``: pods
    get/list/watch, nothing else). The allowlist keeps only the audit labels and Kueue's queue
    labels (metric cardinality).

    DRA clusters: the exporter's DRA mode (``KUBERNETES_ENABLE_DRA``) is deliberately **not**
    turned on. In that mode the exporter builds a ResourceSlice informer and waits for its cache
    before serving HTTP (NVIDIA/dcgm-exporter ``internal/pkg/transformation/dra.go``,
    ``NewDRAResourceSliceManager``: ``cache.WaitForCacheSync`` on a context never cancelled),
    but the operator's ClusterRole grants no ``resourceslices`` (its asset carries the TODO
    "Add resourceSlices permissions when GPU Operator exposes DRA exporter support") and the
    informer lists ``resource.k8s.io/v1beta1``, a beta API a 1.34+ cluster does not serve by
    default: the exporter would never become live. ``dra`` is accepted so the caller states the
    path; OPS002 (``compiler.verify.ops``) rejects values that turn DRA mode on without the grant.
    Per-pod GPU metrics on DRA clusters are reported as unavailable (``compiler.report.attribution``).
    """
    keys = sorted({*AUDIT_KEYS, *label_keys})
    values: dict[str, Any] = {
        "enablePodLabels": True,
        "podLabelAllowlistRegex": ["^" + re.escape(k).replace("\\-", "-") + "$" for k in keys],
    }
    return {"dcgmExporter": values}
