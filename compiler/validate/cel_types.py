"""CEL as the API server type-checks it (docs/misconfigurations.md, family "cel"): a DeviceClass
selector is compiled against declared types when the DeviceClass is created, so comparing a
capacity (a Quantity) with a number, or a version attribute with a string, is rejected at apply
time ("no matching overload"), not at allocation. The evaluation-time rules (DRA002-DRA006) see the
devices; this one sees the types, and says how to write the comparison.

DRA301 reads the comparisons of the fleet's own ``deviceClasses`` selectors: an attribute or
capacity operand beside a comparison operator and a literal (or another quantity). The types are
those the NVIDIA DRA driver publishes (docs/reference/resourceslice-attributes.md): ``capacity.*``
are quantities; ``driverVersion``, ``cudaDriverVersion`` and ``cudaComputeCapability`` are
versions; ``numaNode``, ``gpuModuleID`` and ``partition*`` are ints; the rest are strings.
"""

from __future__ import annotations

import re
from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, checks, define
from compiler.policy.graph import Policy

CEL_TYPE = define(
    "DRA301", "A DeviceClass selector compares values of one type: a capacity (Quantity) only through "
    "compareTo/isGreaterThan/isLessThan with quantity(...), a version attribute through semver(...), strings with "
    "strings and ints with ints (the API server type-checks selectors when the DeviceClass is created).",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",
    "device.capacity['gpu.nvidia.com'].memory >= 80   # Quantity vs int: no matching overload", scope=Scope.FLEET)

RULES: tuple[Rule, ...] = (CEL_TYPE,)

VERSION_ATTRS = frozenset({"driverVersion", "cudaDriverVersion", "cudaComputeCapability"})
INT_ATTRS = frozenset({"numaNode", "gpuModuleID"})

_OPERAND = r"device\.(attributes|capacity)\[\s*['\"]([^'\"]+)['\"]\s*\]\.([A-Za-z_][A-Za-z0-9_]*)"
_LITERAL = r"('[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?|true|false|quantity\([^)]*\)|semver\([^)]*\))"
_OP = r"(==|!=|<=|>=|<|>)"
_LEFT = re.compile(_OPERAND + r"(?!\s*\.|\s*\[)\s*" + _OP + r"\s*" + _LITERAL)
_RIGHT = re.compile(_LITERAL + r"\s*" + _OP + r"\s*" + _OPERAND + r"(?!\s*\.|\s*\[)")


def _operand_type(kind: str, name: str) -> str:
    if kind == "capacity":
        return "quantity"
    if name in VERSION_ATTRS:
        return "version"
    if name in INT_ATTRS or name.startswith("partition"):
        return "int"
    return "string"


def _literal_type(lit: str) -> str:
    if lit.startswith(("'", '"')):
        return "string"
    if lit in ("true", "false"):
        return "bool"
    if lit.startswith("quantity("):
        return "quantity"
    if lit.startswith("semver("):
        return "version"
    return "double" if "." in lit else "int"


def _advice(kind: str, domain: str, name: str, optype: str, op: str, lit: str) -> str | None:
    """None when the comparison type-checks; else how to write it."""
    ltype = _literal_type(lit)
    attr = f"device.{kind}['{domain}'].{name}"
    if optype == "quantity":
        if op in ("==", "!=") and ltype == "quantity":
            return None
        value = lit.strip("'\"") if ltype == "string" else (lit if ltype == "quantity" else f"{lit}Gi")
        q = value if value.startswith("quantity(") else f'quantity("{value}")'
        return f"{attr}.compareTo({q}) {op} 0"
    if optype == "version":
        if op in ("==", "!=") and ltype == "version":
            return None
        value = lit if ltype == "version" else f'semver("{lit.strip(chr(39) + chr(34))}")'
        return f"{attr}.compareTo({value}) {op} 0"
    if optype == "int" and ltype in ("int",):
        return None
    if optype == "int":
        return f"{attr} {op} {lit.strip(chr(39) + chr(34))}"
    if ltype == "string":
        return None
    return f"{attr} {op} '{lit.strip(chr(39) + chr(34))}'"


def type_errors(expr: str) -> list[tuple[str, str]]:
    """(what is compared with what, how to write it) for each ill-typed comparison of ``expr``."""
    out: list[tuple[str, str]] = []
    for m in _LEFT.finditer(expr):
        kind, domain, name, op, lit = m.groups()
        out.extend(_one(kind, domain, name, op, lit))
    for m in _RIGHT.finditer(expr):
        lit, op, kind, domain, name = m.groups()
        flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        out.extend(_one(kind, domain, name, flipped, lit))
    return out


def _one(kind: str, domain: str, name: str, op: str, lit: str) -> list[tuple[str, str]]:
    optype = _operand_type(kind, name)
    advice = _advice(kind, domain, name, optype, op, lit)
    if advice is None:
        return []
    what = "capacity" if kind == "capacity" else "attribute"
    article = "an" if optype[0] in "aeiou" else "a"
    return [(f"{what} {name!r} is {article} {optype} and is compared with {lit} ({_literal_type(lit)}) by {op}",
             advice)]


def has_type_errors(selectors: list[str]) -> bool:
    return any(type_errors(s) for s in selectors)


@checks(CEL_TYPE)
def check_cel_types(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        for k, d in enumerate(c.device_classes):
            for j, expr in enumerate(d.selectors):
                for what, advice in type_errors(expr):
                    yield CEL_TYPE.diag(
                        f"DeviceClass {d.name!r} selector {j}: {what}; the API server type-checks selectors when "
                        "the DeviceClass is created and rejects this one (no matching overload), so the sync fails",
                        policy.fleet_src.locate(("spec", "clusters", ci, "deviceClasses", k, "selectors", j)),
                        hint=f"write {advice}")
