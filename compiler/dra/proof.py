"""Evaluate DeviceClass selectors against a cluster's inventory with the project's CEL engine.

For each class: which devices (by owning GPU class) it matches, whether it reaches MIG parents,
where a selector errors at runtime (Kubernetes then aborts the allocation), and where the answer
depends on something the policy cannot know (a serial, the board variant). Pure functions; the
rules in ``compiler.validate.dra`` turn results into diagnostics.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from compiler.cel import CelError, compile_expr, device_from_slice
from compiler.cel.activation import referenced_domains
from compiler.dra.inventory import DRIVER, Device, Inventory

# Names an expression reads: `.name` or `['name']` (attributes, capacities, domains alike).
_REF = re.compile(r"""\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(?:'([^']*)'|"([^"]*)")\s*\]""")


def referenced(expr: str) -> set[str]:
    out: set[str] = set()
    for dot, single, double in _REF.findall(expr):
        name = dot or single or double
        out.add(name)
        out.add(name.rpartition("/")[2])  # resource.kubernetes.io/pciBusID read as ['...'].pciBusID
    return out


@dataclass
class ClassMatch:
    """What one DeviceClass's selectors do on one cluster (counts are devices, all nodes)."""

    name: str
    matched: Counter[str] = field(default_factory=Counter)  # owner class -> devices matched
    parents: int = 0  # MIG-enabled GPUs listed whole (#719) it would match
    parent_pools: set[str] = field(default_factory=set)
    pools: set[str] = field(default_factory=set)  # pools of the matched devices (parents aside)
    errors: list[tuple[Device, int, str]] = field(default_factory=list)  # device, selector index, message
    unproven: list[tuple[Device, int, str]] = field(default_factory=list)  # device, selector, why
    compile_errors: list[tuple[int, str]] = field(default_factory=list)  # selector index, message

    @property
    def total(self) -> int:
        return sum(self.matched.values())

    def others(self, own: set[str]) -> dict[str, int]:
        return {k: v for k, v in sorted(self.matched.items()) if k not in own}


def _variants(device: Device, names: set[str]) -> list[dict[str, Any]]:
    """The device as a ResourceSlice entry, once per combination of the alternative values the
    expression reads (board variants, memory bounds)."""
    keys = sorted(k for k in device.alternatives if k in names)
    if not keys:
        return [{"attributes": device.attributes, "capacity": device.capacity}]
    out = []
    for combo in itertools.product(*(device.alternatives[k] for k in keys)):
        attrs, cap = dict(device.attributes), dict(device.capacity)
        for k, v in zip(keys, combo):
            (cap if k in cap else attrs)[k] = v
        out.append({"attributes": attrs, "capacity": cap})
    return out


class NotBool(CelError):
    """The selector evaluated to something other than a bool (Kubernetes rejects it at compile time)."""


def _eval(program: Any, activation: dict[str, Any]) -> bool:
    value = program.evaluate(activation)
    if not isinstance(value, bool):
        raise NotBool(f"returns {type(value).__name__} {value!r}, not a bool")
    return value


def _activations(inventory: Inventory, device: Device, names: set[str], expr: str) -> list[dict[str, Any]]:
    """The device's variants as CEL variables. Memoised on the inventory: every class asks about
    every device, and the variables depend only on the device, the alternatives the expression
    reads and the domains it looks up (building them was most of a proof's time)."""
    memo = inventory.__dict__.setdefault("_activations", {})
    key = (id(device), tuple(sorted(k for k in device.alternatives if k in names)), referenced_domains(expr))
    acts = memo.get(key)
    if acts is None:
        acts = memo[key] = [device_from_slice(DRIVER, entry, expressions=[expr]) for entry in _variants(device, names)]
    return acts


def evaluate_class(name: str, selectors: Sequence[str], inventory: Inventory) -> ClassMatch:
    """Match ``selectors`` (ANDed, as Kubernetes does) against every device group.

    Memoised on the (immutable) inventory: checks and both reports ask the same questions; the
    result is shared, so callers only read it."""
    memo = inventory.__dict__.setdefault("_matches", {})
    key = (name, tuple(selectors))
    if key not in memo:
        memo[key] = _evaluate_class(name, selectors, inventory)
    return memo[key]


def _evaluate_class(name: str, selectors: Sequence[str], inventory: Inventory) -> ClassMatch:
    result = ClassMatch(name)
    programs: list[tuple[int, str, Any, set[str]]] = []
    for i, expr in enumerate(selectors):
        try:
            programs.append((i, expr, compile_expr(expr), referenced(expr)))
        except CelError as exc:
            result.compile_errors.append((i, str(exc)))
    if result.compile_errors:
        return result
    for group in inventory.groups:
        device = group.device
        verdict: bool | None = True
        for i, expr, program, names in programs:
            blind = sorted(names & {n.rpartition("/")[2] for n in device.unknown})
            if blind:
                result.unproven.append((device, i, f"reads {', '.join(blind)}, which only the node knows"))
                verdict = None
                break
            try:
                answers = {_eval(program, act) for act in _activations(inventory, device, names, expr)}
            except NotBool as exc:
                if all(j != i for j, _ in result.compile_errors):
                    result.compile_errors.append((i, str(exc)))
                verdict = None
                break
            except CelError as exc:
                result.errors.append((device, i, str(exc)))
                verdict = None
                break
            if len(answers) > 1:
                which = ", ".join(sorted(k for k in device.alternatives if k in names))
                result.unproven.append((device, i, f"depends on {which}, which the fleet file does not fix"))
                verdict = None
                break
            if not answers.pop():
                verdict = False
                break
        if verdict and device.mig_parent:
            result.parents += group.count
            result.parent_pools.add(device.pool)
        elif verdict:
            result.pools.add(device.pool)
            result.matched[device.owner or "?"] += group.count
    return result

