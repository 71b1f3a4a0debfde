"""Helpers shared by the lowering passes: object skeletons (``obj``) and quantities. The label
keys they use are ``compiler.policy.labels``."""

from __future__ import annotations

from typing import Any

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpupolicy"}


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
