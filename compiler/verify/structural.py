"""A CRD version's structural schema, compiled once: a JSON Schema for the value constraints
plus a tree of ``SchemaNode``s for what JSON Schema cannot say (defaults, list types, CEL).

How the API server's semantics map onto JSON Schema (draft 4, as OpenAPI v3.0 is):
- objects reject unknown fields (``additionalProperties: false``) unless
  ``x-kubernetes-preserve-unknown-fields``; embedded resources also admit apiVersion/kind/metadata;
- ``x-kubernetes-int-or-string`` admits integers and strings; ``nullable`` admits null;
- the root ``metadata`` keeps only the CRD's own ``name``/``generateName`` constraints —
  ``compiler.verify.meta`` checks ObjectMeta the way the API server does;
- ``default``s are applied to the object before validation (``apply_defaults``), not checked.
Integer ``format``s (int32/int64) are not enforced (the API server does not either for CRs).
``pattern``s are Go (RE2) regexes; the few that JSON Schema's ECMA dialect rejects (inline flags
such as ``^(?i)...`` in the Gateway API CRDs) are checked by the walk with RE2 instead.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from compiler.cel import CelError, Program, compile_expr, references_old_self
from compiler.cel.library import compile_regex
from compiler.verify.jsonschema_backend import Validator, compile_validator

_DROP = frozenset({"default", "description", "example", "externalDocs", "title", "nullable", "format"})
_KEEP_FORMATS = frozenset({"date-time", "ipv4", "ipv6", "uuid", "date", "email", "hostname", "uri"})


@dataclass(frozen=True)
class CelRule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    rule: str
    message: str | None
    message_expression: str | None
    field_path: str | None
    reason: str | None
    program: Program | None  # None when the rule is skipped or unsupported
    transition: bool  # mentions oldSelf and is not optionalOldSelf: skipped on create
    compile_error: str | None


class SchemaNode:
    """The parts of one schema node that verify walks; children only where they matter."""

    __slots__ = ("props", "additional", "items", "defaults", "rules", "list_type", "map_keys",
                 "go_pattern", "walk_defaults", "walk_checks")

    def __init__(self) -> None:
        self.props: dict[str, SchemaNode] = {}
        self.additional: SchemaNode | None = None
        self.items: SchemaNode | None = None
        self.defaults: tuple[tuple[str, Any, bool], ...] = ()  # (property, default, nullable)
        self.rules: tuple[CelRule, ...] = ()
        self.list_type: str | None = None
        self.map_keys: tuple[str, ...] = ()
        self.go_pattern: tuple[str, Any] | None = None  # (source, RE2 regex) JSON Schema cannot run
        self.walk_defaults = False  # a default exists in this subtree
        self.walk_checks = False  # a CEL rule or list-type constraint exists in this subtree


def _compile_rule(spec: dict[str, Any]) -> CelRule:
    rule = str(spec.get("rule", ""))
    optional_old = bool(spec.get("optionalOldSelf", False))
    transition = references_old_self(rule) and not optional_old
    program: Program | None = None
    error: str | None = None
    if not transition:
        # On create, an optionalOldSelf rule sees oldSelf as optional.none().
        source = f"cel.bind(oldSelf, optional.none(), ({rule}))" if optional_old else rule
        try:
            program = compile_expr(source)
        except CelError as exc:
            error = str(exc)
    return CelRule(
        rule=rule,
        message=spec.get("message"),
        message_expression=spec.get("messageExpression"),
        field_path=spec.get("fieldPath"),
        reason=spec.get("reason"),
        program=program,
        transition=transition,
        compile_error=error,
    )


def compile_node(schema: dict[str, Any]) -> SchemaNode:
    """Build the ``SchemaNode`` tree for one openAPIV3Schema (sub)tree."""
    node = SchemaNode()
    defaults = []
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        child = compile_node(sub)
        node.props[name] = child
        if "default" in sub:
            defaults.append((name, sub["default"], bool(sub.get("nullable"))))
    node.defaults = tuple(defaults)
    if isinstance(schema.get("additionalProperties"), dict):
        node.additional = compile_node(schema["additionalProperties"])
    if isinstance(schema.get("items"), dict):
        node.items = compile_node(schema["items"])
    node.rules = tuple(_compile_rule(r) for r in schema.get("x-kubernetes-validations") or [] if isinstance(r, dict))
    node.list_type = schema.get("x-kubernetes-list-type")
    node.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not portable_pattern(pattern):
        node.go_pattern = (pattern, compile_regex(pattern))
    children = [c for c in (*node.props.values(), node.additional, node.items) if c is not None]
    node.walk_defaults = bool(node.defaults) or any(c.walk_defaults for c in children)
    node.walk_checks = (
        bool(node.rules) or node.list_type in ("map", "set") or node.go_pattern is not None
        or any(c.walk_checks for c in children)
    )
    # Drop children with nothing to walk so the walks never descend into them.
    node.props = {k: c for k, c in node.props.items() if c.walk_defaults or c.walk_checks}
    for attr in ("additional", "items"):
        c = getattr(node, attr)
        if c is not None and not (c.walk_defaults or c.walk_checks):
            setattr(node, attr, None)
    return node


def to_json_schema(schema: dict[str, Any], *, root: bool = False, junctor: bool = False) -> dict[str, Any]:
    """Translate a structural schema node into plain JSON Schema (draft 4).

    Inside ``anyOf``/``oneOf``/``allOf``/``not`` (``junctor``) a structural schema only adds value
    constraints, so no unknown-field rule is added there.
    """
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROP or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {n: to_json_schema(s, junctor=junctor) for n, s in value.items() if isinstance(s, dict)}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value, junctor=junctor)
        elif key == "not" and isinstance(value, dict):
            out[key] = to_json_schema(value, junctor=True)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [to_json_schema(s, junctor=True) for s in value if isinstance(s, dict)]
        else:
            out[key] = value
    if isinstance(out.get("pattern"), str) and not portable_pattern(out["pattern"]):
        del out["pattern"]  # checked with RE2 by the walk (SchemaNode.go_pattern)
    if schema.get("format") in _KEEP_FORMATS:
        out["format"] = schema["format"]
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    if embedded:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    is_object = schema.get("type") == "object" or "properties" in schema
    if (
        is_object
        and not junctor
        and not schema.get("x-kubernetes-preserve-unknown-fields")
        and "additionalProperties" not in schema
    ):
        out["additionalProperties"] = False
    if schema.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if root:
        out.setdefault("properties", {})
        out["properties"]["metadata"] = _root_metadata(schema)
        out["properties"].setdefault("apiVersion", {"type": "string"})
        out["properties"].setdefault("kind", {"type": "string"})
    return out


@functools.lru_cache(maxsize=None)
def portable_pattern(pattern: str) -> bool:
    """Whether both JSON Schema backends accept this Go regex as an ECMA-262 ``pattern``."""
    try:
        re.compile(pattern)
        compile_validator({"type": "string", "pattern": pattern}, draft=4)
    except Exception:
        return False
    return True


def _root_metadata(schema: dict[str, Any]) -> dict[str, Any]:
    """Only the name constraints a CRD may put on metadata; the rest is ObjectMeta's business."""
    meta = (schema.get("properties") or {}).get("metadata") or {}
    props = {k: to_json_schema(v) for k, v in (meta.get("properties") or {}).items()
             if k in ("name", "generateName") and isinstance(v, dict)}
    return {"type": "object", "properties": props} if props else {"type": "object"}


@dataclass
class CrdSchema:
    """Everything needed to verify objects of one CRD version."""

    root: SchemaNode
    validator: Validator
    rules_total: int


def compile_crd_schema(schema: dict[str, Any], *, python_backend: bool = False) -> CrdSchema:
    root = compile_node(schema)
    validator = compile_validator(to_json_schema(schema, root=True), draft=4, python=python_backend)
    return CrdSchema(root, validator, _count_rules(schema))


def _count_rules(schema: Any) -> int:
    if isinstance(schema, dict):
        own = len(schema.get("x-kubernetes-validations") or [])
        return own + sum(_count_rules(v) for k, v in schema.items() if k != "x-kubernetes-validations")
    if isinstance(schema, list):
        return sum(_count_rules(v) for v in schema)
    return 0
