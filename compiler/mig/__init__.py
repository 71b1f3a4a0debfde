"""MIG geometry: profile lookup per driver branch, named layouts, placement packing, strategy
checks and per-node capacity. What can be wrong is a ``MigFault``
(``compiler.mig.problems``); the rules that report faults, MIG001-MIG011, are ``compiler.validate.mig``."""

from __future__ import annotations

from compiler.mig.check import (
    STRATEGIES,
    ProfileMatch,
    Strategy,
    check_device,
    check_pool_layout,
    instances,
    lookup_profile,
)
from compiler.mig.layouts import BALANCED, DISABLED, ENABLED, layout_names, resolve_layout
from compiler.mig.packing import PackResult, Placement, pack
from compiler.mig.problems import (
    BAD_DRIVER,
    COUNT_OVER_MAX,
    DRIVER_TOO_OLD,
    EMPTY_DEVICE,
    NO_PLACEMENT,
    NOT_MIG_CAPABLE,
    STRATEGY_MISMATCH,
    UNKNOWN_LAYOUT,
    UNKNOWN_PROFILE,
    MigFault,
    MigProblem,
)

__all__ = [
    "BAD_DRIVER",
    "BALANCED",
    "COUNT_OVER_MAX",
    "DISABLED",
    "DRIVER_TOO_OLD",
    "EMPTY_DEVICE",
    "ENABLED",
    "NOT_MIG_CAPABLE",
    "NO_PLACEMENT",
    "STRATEGIES",
    "STRATEGY_MISMATCH",
    "UNKNOWN_LAYOUT",
    "UNKNOWN_PROFILE",
    "MigFault",
    "MigProblem",
    "PackResult",
    "Placement",
    "ProfileMatch",
    "Strategy",
    "check_device",
    "check_pool_layout",
    "instances",
    "layout_names",
    "lookup_profile",
    "pack",
    "resolve_layout",
]
