"""CEL expressions *inside* emitted objects must compile, as the API server compiles them on
create: DRA device selectors (DeviceClass, ResourceClaim, ResourceClaimTemplate) and
ValidatingAdmissionPolicy expressions. Evaluating them against devices and requests is the
DRA and admission checks' job; here only "would the API server accept this object" matters.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from compiler.cel import CelError, compile_expr
from compiler.diagnostics import Rule, Scope, define
from compiler.verify.context import ObjectContext, PathPart

CEL_EXPRESSION_INVALID = define(
    "VERIFY016",
    "A CEL expression inside an object (device selector, admission policy) does not compile.",
    "selectors:\n- cel: {expression: \"device.driver == 'gpu.nvidia.com'\"}",
    "selectors:\n- cel: {expression: \"device.driver = 'gpu.nvidia.com'\"}",
    scope=Scope.OUTPUT,
)


RULES: tuple[Rule, ...] = (CEL_EXPRESSION_INVALID,)

# Variables the API server declares that this engine does not (authorization checks).
_UNSUPPORTED_VARIABLE = re.compile(r"undeclared reference to '(authorizer)'")


def _selectors(selectors: Any, base: list[PathPart]) -> Iterator[tuple[list[PathPart], Any]]:
    for i, sel in enumerate(selectors if isinstance(selectors, list) else []):
        cel = sel.get("cel") if isinstance(sel, dict) else None
        if isinstance(cel, dict) and "expression" in cel:
            yield [*base, i, "cel", "expression"], cel["expression"]


def _device_requests(devices: Any, base: list[PathPart]) -> Iterator[tuple[list[PathPart], Any]]:
    if not isinstance(devices, dict):
        return
    for i, req in enumerate(devices.get("requests") or []):
        if not isinstance(req, dict):
            continue
        path = [*base, "requests", i]
        yield from _selectors(req.get("selectors"), [*path, "selectors"])  # v1beta1 shape
        exactly = req.get("exactly")
        if isinstance(exactly, dict):
            yield from _selectors(exactly.get("selectors"), [*path, "exactly", "selectors"])
        for j, sub in enumerate(req.get("firstAvailable") or []):
            if isinstance(sub, dict):
                yield from _selectors(sub.get("selectors"), [*path, "firstAvailable", j, "selectors"])


def _policy(spec: dict[str, Any]) -> Iterator[tuple[list[PathPart], Any]]:
    fields = (("validations", ("expression", "messageExpression")), ("matchConditions", ("expression",)),
              ("variables", ("expression",)), ("auditAnnotations", ("valueExpression",)))
    for section, keys in fields:
        for i, item in enumerate(spec.get(section) or []):
            for key in keys:
                if isinstance(item, dict) and key in item:
                    yield ["spec", section, i, key], item[key]


def expressions(obj: dict[str, Any]) -> Iterator[tuple[list[PathPart], Any]]:
    """(path, expression) for every CEL expression the API server compiles in ``obj``."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, dict):
        return
    if group == "resource.k8s.io":
        if kind == "DeviceClass":
            yield from _selectors(spec.get("selectors"), ["spec", "selectors"])
        elif kind == "ResourceClaim":
            yield from _device_requests(spec.get("devices"), ["spec", "devices"])
        elif kind == "ResourceClaimTemplate":
            inner = spec.get("spec")
            if isinstance(inner, dict):
                yield from _device_requests(inner.get("devices"), ["spec", "spec", "devices"])
    elif group == "admissionregistration.k8s.io" and kind in ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"):
        yield from _policy(spec)


def check_embedded_cel(obj: dict[str, Any], ctx: ObjectContext) -> int:
    """Compile every embedded expression; returns how many were compiled."""
    count = 0
    for path, expr in expressions(obj):
        if not isinstance(expr, str):
            continue  # a type error the schema reports
        count += 1
        try:
            compile_expr(expr)
        except CelError as exc:
            if _UNSUPPORTED_VARIABLE.search(str(exc)):
                continue
            ctx.report(CEL_EXPRESSION_INVALID, path, str(exc), hint=f"expression: {expr}")
    return count
