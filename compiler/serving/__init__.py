"""vLLM serving on reserved pools: the model-architecture catalog, sizing arithmetic as data,
the SERVE002-SERVE018 checks (``compiler.validate.serving``) and the report rows.
Lowering to Kubernetes objects is ``compiler.lower.serving``."""

from __future__ import annotations

from compiler.serving.architectures import ARCHITECTURES, Architecture, by_hub_id, resolve_architecture
from compiler.serving.plan import Resolved, deployments, serving_report
from compiler.serving.sizing import (
    GIB,
    KIB,
    KV_ELEMENT_BYTES,
    WEIGHT_BYTES,
    Sizing,
    kv_bytes_per_token,
    kv_heads_stored,
    kv_needed,
    memory_budget,
    size,
    tp_problem,
    tpot_bound_ms,
    weight_bytes,
)

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "GIB",
    "KIB",
    "KV_ELEMENT_BYTES",
    "Resolved",
    "Sizing",
    "WEIGHT_BYTES",
    "by_hub_id",
    "deployments",
    "kv_bytes_per_token",
    "kv_heads_stored",
    "kv_needed",
    "memory_budget",
    "resolve_architecture",
    "serving_report",
    "size",
    "tp_problem",
    "tpot_bound_ms",
    "weight_bytes",
]
