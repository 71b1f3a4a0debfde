"""Verify one custom resource the way the API server does on create:
defaults -> OpenAPI schema -> list-type invariants -> x-kubernetes-validations (CEL).
"""

from __future__ import annotations

import json
from typing import Any, Callable

import compiler.verify.rules as R
from compiler.cel import CelError, compile_expr, prepare
from compiler.diagnostics import did_you_mean
from compiler.verify.context import ObjectContext, PathPart, VerifyStats, format_path
from compiler.verify.jsonschema_backend import BLOCKING_CATEGORIES, SchemaError
from compiler.verify.structural import CelRule, CrdSchema, SchemaNode

_MISSING = object()
# (schema node, repr of a value) -> (rules evaluated, transition rules skipped, unsupported) for a
# value on which every rule of the node passed. Nodes are keys by identity, so entries never
# outlive or confuse compiled schemas.
_PASSED: dict[tuple[SchemaNode, str], tuple[int, int, int]] = {}
_PASSED_LIMIT = 20000
_REASONS = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


def apply_defaults(value: Any, node: SchemaNode) -> Any:
    """Return ``value`` with schema defaults filled in; containers are copied only when changed.

    As the API server does, an absent field (or a null one, unless nullable) with a ``default``
    gets the default, and defaults inside a defaulted value apply too.
    """
    if isinstance(value, dict):
        out: dict[str, Any] | None = None  # the copy, made on the first change
        for name, default, nullable in node.defaults:
            current = value.get(name, _MISSING)
            if current is _MISSING or (current is None and not nullable):
                out = dict(value) if out is None else out
                out[name] = default
        children = [(n, c) for n, c in node.props.items() if c.walk_defaults]
        if node.additional is not None and node.additional.walk_defaults:
            children += [(k, node.additional) for k in value if k not in node.props]
        for name, child in children:
            current = (value if out is None else out).get(name, _MISSING)
            if current is _MISSING:
                continue
            new = apply_defaults(current, child)
            if new is not current:
                out = dict(value) if out is None else out
                out[name] = new
        return value if out is None else out
    if isinstance(value, list) and node.items is not None and node.items.walk_defaults:
        items = [apply_defaults(v, node.items) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def _schema_at(schema: dict[str, Any], path: tuple[PathPart, ...]) -> dict[str, Any] | None:
    node: Any = schema
    for part in path:
        if not isinstance(node, dict):
            return None
        if isinstance(part, int):
            node = node.get("items")
        else:
            props = node.get("properties") or {}
            node = props.get(part) if part in props else node.get("additionalProperties")
    return node if isinstance(node, dict) else None


FieldsAt = Callable[[tuple[PathPart, ...]], list[str]]


def crd_fields_at(schema: dict[str, Any]) -> FieldsAt:
    """Property names a raw CRD schema allows at a path."""
    def fields(path: tuple[PathPart, ...]) -> list[str]:
        node = _schema_at(schema, path)
        return list((node or {}).get("properties") or {})
    return fields


def report_schema_errors(ctx: ObjectContext, errors: list[SchemaError], fields_at: FieldsAt | None) -> None:
    for err in errors:
        if err.category == "unknown":
            name = str(err.path[-1])
            hint = None
            if fields_at is not None:
                hint = did_you_mean(name, fields_at(err.path[:-1]))
            ctx.report(R.UNKNOWN_FIELD, err.path, f"unknown field {name!r}", hint=hint)
        elif err.category == "required":
            ctx.report(R.MISSING_REQUIRED, err.path, f"required field {str(err.path[-1])!r} is missing")
        else:
            ctx.report(R.INVALID_VALUE, err.path, err.message)


class CustomResourceChecker:
    """Runs list-type and CEL checks for one object; reports into ``ctx``."""

    def __init__(self, ctx: ObjectContext, stats: VerifyStats, unsupported_seen: set[str], crd_label: str) -> None:
        self.ctx = ctx
        self.stats = stats
        self.unsupported_seen = unsupported_seen
        self.crd_label = crd_label

    def walk(self, value: Any, node: SchemaNode, path: list[PathPart], run_cel: bool) -> None:
        if node.go_pattern is not None and isinstance(value, str) and not node.go_pattern[1].search(value):
            self.ctx.report(R.INVALID_VALUE, path, f"{value!r} does not match {node.go_pattern[0]!r}")
        if node.list_type in ("map", "set") and isinstance(value, list):
            self._list_invariants(value, node, path)
        if node.rules and run_cel:
            self._rules(value, node, path)
        if isinstance(value, dict):
            for name, child in node.props.items():
                if child.walk_checks and name in value:
                    path.append(name)
                    self.walk(value[name], child, path, run_cel)
                    path.pop()
            extra = node.additional
            if extra is not None and extra.walk_checks:
                for key, item in value.items():
                    if key not in node.props:
                        path.append(key)
                        self.walk(item, extra, path, run_cel)
                        path.pop()
        elif isinstance(value, list) and node.items is not None and node.items.walk_checks:
            for i, item in enumerate(value):
                path.append(i)
                self.walk(item, node.items, path, run_cel)
                path.pop()

    def _list_invariants(self, items: list[Any], node: SchemaNode, path: list[PathPart]) -> None:
        seen: dict[Any, int] = {}
        is_map = node.list_type == "map"
        for i, item in enumerate(items):
            if is_map:
                if not isinstance(item, dict):
                    continue
                key: Any = tuple(item.get(k) for k in node.map_keys)
            else:
                key = item
            try:
                hash(key)
            except TypeError:  # objects in a set: compare their canonical JSON
                key = json.dumps(key, sort_keys=True, default=str)
            first = seen.setdefault(key, i)
            if first != i:
                shown = dict(zip(node.map_keys, key)) if is_map else item
                what = "keys" if is_map else "value"
                self.ctx.report(
                    R.DUPLICATE_ITEM, [*path, i],
                    f"Duplicate value: {json.dumps(shown, sort_keys=True, default=str)} (same {what} as item "
                    f"{first}; x-kubernetes-list-type: {node.list_type})",
                )

    def _rules(self, value: Any, node: SchemaNode, path: list[PathPart]) -> None:
        # Queues generated from one policy repeat whole sub-objects (defaulted preemption and
        # flavorFungibility blocks, identical groups): remember values on which every rule passed.
        stats = self.stats
        memo_key = (node, repr(value))
        counts = _PASSED.get(memo_key)
        if counts is not None:
            stats.cel_rules_evaluated += counts[0]
            stats.transition_rules_skipped += counts[1]
            stats.cel_rules_unsupported += counts[2]
            return
        reported = len(self.ctx.diagnostics)
        before = (stats.cel_rules_evaluated, stats.transition_rules_skipped, stats.cel_rules_unsupported)
        self._evaluate(value, node.rules, path)
        if len(self.ctx.diagnostics) == reported:
            if len(_PASSED) >= _PASSED_LIMIT:
                _PASSED.clear()
            _PASSED[memo_key] = (stats.cel_rules_evaluated - before[0], stats.transition_rules_skipped - before[1],
                                 stats.cel_rules_unsupported - before[2])

    def _evaluate(self, value: Any, cel_rules: tuple[CelRule, ...], path: list[PathPart]) -> None:
        activation = None
        for rule in cel_rules:
            if rule.transition:
                self.stats.transition_rules_skipped += 1
                continue
            if rule.program is None:
                self.stats.cel_rules_unsupported += 1
                where = format_path(path)
                key = f"{self.crd_label}:{where}:{rule.rule}"
                if key not in self.unsupported_seen:
                    self.unsupported_seen.add(key)
                    self.ctx.report(R.CEL_UNSUPPORTED, where, f"rule not checked: {rule.compile_error}",
                                    hint=f"rule: {rule.rule}")
                continue
            if activation is None:
                try:
                    activation = prepare({"self": value})
                except CelError as exc:
                    self.ctx.report(R.CEL_ERROR, format_path(path), str(exc), hint=f"rule: {rule.rule}")
                    return
            self.stats.cel_rules_evaluated += 1
            try:
                result = rule.program.evaluate(activation)
            except CelError as exc:
                self.ctx.report(R.CEL_ERROR, format_path(path), f"rule could not be evaluated: {exc}",
                                hint=f"rule: {rule.rule}")
                continue
            if result is True:
                continue
            if result is not False:
                self.ctx.report(R.CEL_ERROR, format_path(path), f"rule evaluated to {result!r}, not a bool",
                                hint=f"rule: {rule.rule}")
                continue
            self._failure(rule, activation, format_path(path))

    def _failure(self, rule: CelRule, activation: Any, where: str) -> None:
        message = rule.message or f"failed rule: {rule.rule}"
        if rule.message_expression:
            try:
                text = compile_expr(rule.message_expression).evaluate(activation)
                if isinstance(text, str) and text.strip() and "\n" not in text:
                    message = text
            except CelError:
                pass  # upstream falls back to message as well
        if rule.field_path:
            sep = "" if rule.field_path.startswith(("[", ".")) else "."
            where = f"{where}{sep}{rule.field_path}" if where else rule.field_path.lstrip(".")
        reason = _REASONS.get(rule.reason or "FieldValueInvalid", "Invalid value")
        self.ctx.report(R.CEL_RULE, where, f"{reason}: {message}", hint=f"x-kubernetes-validations rule: {rule.rule}")


def verify_custom_resource(
    obj: dict[str, Any],
    schema: CrdSchema,
    raw_schema: dict[str, Any],
    ctx: ObjectContext,
    stats: VerifyStats,
    unsupported_seen: set[str],
    crd_label: str,
) -> dict[str, Any]:
    """Check ``obj`` against a compiled CRD version; return the defaulted object."""
    defaulted: dict[str, Any] = apply_defaults(obj, schema.root)
    errors = schema.validator.errors(defaulted)
    report_schema_errors(ctx, errors, crd_fields_at(raw_schema))
    blocking = any(e.category in BLOCKING_CATEGORIES for e in errors)
    if blocking:
        # As the API server: CEL rules are not run on an object with type or enum errors.
        stats.cel_skipped_invalid_objects += 1
    if schema.root.walk_checks:
        CustomResourceChecker(ctx, stats, unsupported_seen, crd_label).walk(defaulted, schema.root, [], not blocking)
    return defaulted
