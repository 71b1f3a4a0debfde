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
from compiler.dra.inventory import DRIVER, PER_INSTANCE, Device, Inventory

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


def _activations(inventory: Inventory, device: Device, names: set[str], expr: str,
                 shared: bool = False) -> list[dict[str, Any]]:
    """The device's variants as CEL variables. Memoised on the inventory: every class asks about
    every device, and the variables depend only on the device, the alternatives the expression
    reads and the domains it looks up (building them was most of a proof's time). With
    ``shared`` (the expression reads by name: ``reads_by_name``) across inventories, by the
    device's content: another cluster's device alike gives the same outcomes."""
    alts = tuple(sorted(k for k in device.alternatives if k in names))
    if shared:
        memo = _ACTIVATIONS
        key: tuple[Any, ...] = (_content(inventory, device), alts, referenced_domains(expr))
    else:
        memo = inventory.__dict__.setdefault("_activations", {})
        key = (id(device), alts, referenced_domains(expr))
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


# An outcome of a device against a class's selectors: (verdict, what, selector index, message)
# with verdict True/False (matched or not) or None (what: "error", "unproven" or "bad").
Outcome = tuple[bool | None, str, int, str]
# Outcomes by (selectors, device content): the same pool layout on several clusters publishes
# devices that differ in per-instance values only (105 device groups, 18 kinds, on the 7 DRA
# clusters of the 1,000-team benchmark). A pure function's memo, emptied when it grows large.
_OUTCOMES: dict[tuple[Any, ...], Outcome] = {}
_ACTIVATIONS: dict[tuple[Any, ...], list[dict[str, Any]]] = {}  # the variables of those outcomes
_OUTCOMES_MAX = 50_000

# CEL string literals (raw, bytes, triple-quoted), masked before reading an expression's shape
_LITERAL = re.compile(r"""[rRbB]{0,2}(?:'{3}(?:\\.|[^\\])*?'{3}|"{3}(?:\\.|[^\\])*?"{3}"""
                      r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""")
# the reads of ``device`` by name: its driver, or one attribute or capacity of a named domain
_NAMED_READ = re.compile(r'\bdevice\s*\.\s*(?:driver|allowMultipleAllocations)\b'
                         r'|\bdevice\s*\.\s*(?:attributes|capacity)\s*\[\s*""\s*\]\s*'
                         r'(?:\.\s*[A-Za-z_][A-Za-z0-9_]*\b|\[\s*""\s*\])')
_MACRO = re.compile(r"\b(?:exists|exists_one|all|map|filter|bind)\b")  # they bind variables
_DEVICE = re.compile(r"\bdevice\b")
# literals whose text is not the string ``referenced`` reads: escapes, raw, bytes, triple quotes
_OPAQUE = re.compile(r"""\\|(?<![\w'"])[rRbB]{1,2}['"]|'{3}|"{3}""")


def reads_by_name(expr: str) -> bool:
    """Whether ``expr`` reads the device only by name (``device.attributes['d'].x``,
    ``device.capacity['d']['y']``, ``device.driver``): no macro, no computed key, no whole map.
    Its result then depends only on the values it names (``referenced``), and those that differ
    from device to device (``inventory.PER_INSTANCE``) are unknown, so never evaluated: devices
    alike but for per-instance values get the same outcome. Conservative: anything else is False,
    and so is a literal ``referenced`` may misread (an escape, a raw or triple-quoted string)."""
    if _OPAQUE.search(expr):
        return False
    masked = _LITERAL.sub('""', expr)
    return _MACRO.search(masked) is None and _DEVICE.search(_NAMED_READ.sub("", masked)) is None


def _content(inventory: Inventory, device: Device) -> tuple[Any, ...]:
    """What an outcome of a selector reading by name can depend on: everything about the device
    but its name, node, pool and per-instance values (which are generated strings and ints)."""
    memo = inventory.__dict__.setdefault("_content", {})
    key = memo.get(id(device))
    if key is None:
        attrs = tuple(sorted((k, repr(v)) for k, v in device.attributes.items() if k not in PER_INSTANCE))
        key = memo[id(device)] = (attrs, tuple(sorted(device.attributes)), repr(sorted(device.capacity.items())),
                                  tuple(sorted(device.unknown)), repr(sorted(device.alternatives.items())))
    return key


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
    shared = all(reads_by_name(expr) for expr in selectors)
    for group in inventory.groups:
        device = group.device
        if shared:
            key = (tuple(selectors), _content(inventory, device))
            outcome = _OUTCOMES.get(key)
            if outcome is None:
                if len(_OUTCOMES) >= _OUTCOMES_MAX or len(_ACTIVATIONS) >= _OUTCOMES_MAX:
                    _OUTCOMES.clear()
                    _ACTIVATIONS.clear()
                outcome = _OUTCOMES[key] = _outcome(programs, device, inventory, shared=True)
        else:
            outcome = _outcome(programs, device, inventory)
        verdict, what, i, msg = outcome
        if what == "bad":
            if all(j != i for j, _ in result.compile_errors):
                result.compile_errors.append((i, msg))
        elif what == "error":
            result.errors.append((device, i, msg))
        elif what == "unproven":
            result.unproven.append((device, i, msg))
        if verdict and device.mig_parent:
            result.parents += group.count
            result.parent_pools.add(device.pool)
        elif verdict:
            result.pools.add(device.pool)
            result.matched[device.owner or "?"] += group.count
    return result


def _outcome(programs: list[tuple[int, str, Any, set[str]]], device: Device, inventory: Inventory,
             shared: bool = False) -> Outcome:
    """The device against the selectors, ANDed in order: the first that fails or cannot tell decides."""
    for i, expr, program, names in programs:
        blind = sorted(names & {n.rpartition("/")[2] for n in device.unknown})
        if blind:
            return None, "unproven", i, f"reads {', '.join(blind)}, which only the node knows"
        try:
            answers = {_eval(program, act) for act in _activations(inventory, device, names, expr, shared)}
        except NotBool as exc:
            return None, "bad", i, str(exc)
        except CelError as exc:
            return None, "error", i, str(exc)
        if len(answers) > 1:
            which = ", ".join(sorted(k for k in device.alternatives if k in names))
            return None, "unproven", i, f"depends on {which}, which the fleet file does not fix"
        if not answers.pop():
            return False, "", i, ""
    return True, "", -1, ""
