"""Helpers shared by the lowering passes: object skeletons and the labels SPEC §9 fixes."""

from __future__ import annotations

from typing import Any

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpupolicy"}

LABEL_TEAM = "gpupolicy.dev/team"
LABEL_DEPARTMENT = "gpupolicy.dev/department"
LABEL_PURPOSE = "gpupolicy.dev/purpose"
LABEL_POOL = "gpupolicy.dev/pool"
LABEL_CLASS = "gpupolicy.dev/class"
LABEL_MODEL = "gpupolicy.dev/model"
LABEL_DATA_CLASS = "gpupolicy.dev/data-class"
LABEL_QUEUE = "kueue.x-k8s.io/queue-name"
DATA_CLASS_PREFIX = "data-class.gpupolicy.dev/"
SERVING_TAINT_KEY = "gpupolicy.dev/serving"
SERVING_NODE_LABEL = "node-restriction.kubernetes.io/gpupolicy-serving"
# Read by the GPU Operator's device plugin / MIG Manager; written by gpupolicy's node contract.
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"


def obj(
    api_version: str,
    kind: str,
    name: str,
    *,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**MANAGED_BY, **(labels or {})}
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def quantity(value: float | int) -> int | str:
    """A Kubernetes quantity: whole numbers stay ints, fractions become decimal strings."""
    if float(value).is_integer():
        return int(value)
    return format(value, "g")
