"""Structural-schema semantics on a synthetic CRD (no upstream files needed): defaults,
nullable, int-or-string, preserve-unknown, embedded resources, list types, CEL rule options."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compiler.model.manifest import Manifest
from compiler.verify import CrdRegistry, VerifyResult, verify
from compiler.verify.structural import compile_node, to_json_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "quantity(string(self.size)).asInteger() <= self.limit",
                 "messageExpression": "'size ' + string(self.size) + ' over ' + string(self.limit)"},
                {"rule": "self.mode != 'off' || !has(self.extra)", "message": "extra needs a mode", "fieldPath": ".extra", "reason": "FieldValueForbidden"},
                {"rule": "self.limit == oldSelf.limit", "message": "immutable"},
                {"rule": "!oldSelf.hasValue() || oldSelf.value().mode == self.mode", "optionalOldSelf": True, "message": "mode is immutable"},
                {"rule": "self.nosuch.frobnicate()", "message": "unsupported"},
            ],
            "properties": {
                "size": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                         "pattern": "^[0-9]+[KMG]?i?$",
                         "x-kubernetes-validations": [{"rule": "quantity(string(self)).sign() >= 0"}]},
                "limit": {"type": "integer", "default": 100},
                "mode": {"type": "string", "enum": ["on", "off"], "default": "on"},
                "note": {"type": "string", "nullable": True},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
                "nested": {"type": "object", "default": {},
                           "properties": {"level": {"type": "integer", "default": 3}},
                           "x-kubernetes-validations": [{"rule": "self.level == 3"}]},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                          "items": {"type": "object", "required": ["port"],
                                    "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "code": {"type": "string", "pattern": "^(?i)[a-z]+$"},
                "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "anyOf": [{"required": ["a"]}, {"properties": {"b": {"minLength": 2}}, "required": ["b"]}]},
                "boom": {"type": "object", "properties": {"v": {"type": "integer"}},
                         "x-kubernetes-validations": [{"rule": "self.missing > 0"}, {"rule": "self.v"}]},
            },
        },
    },
}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "gadgets.example.com"},
       "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}},
                             {"name": "v0", "served": False, "storage": False, "schema": {"openAPIV3Schema": SCHEMA}}]}}


def gadget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 5, **spec}}


def run(*objs: dict[str, Any], python: bool = False) -> VerifyResult:
    registry = CrdRegistry.from_documents([copy.deepcopy(CRD)])
    return verify([Manifest("c", "x", o) for o in objs], kube_versions={"c": "1.34"}, crds=registry,
                  python_backend=python)


def found(result: VerifyResult) -> list[tuple[str, str | None]]:
    return [(d.code, d.path) for d in result.diagnostics]


@pytest.mark.parametrize("python", [False, True], ids=["jsonschema-rs", "jsonschema"])
def test_valid_gadget(python: bool) -> None:
    obj = gadget(size="4Gi", note=None, extra={"anything": [1, {"goes": True}]},
                 template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
                 ports=[{"port": 80}, {"port": 80, "protocol": "UDP"}], tags=["a", "b"], choice={"b": "xy"},
                 mode="on", limit=2**40)
    result = run(obj, python=python)
    assert found(result) == [("VERIFY006", "spec")]  # the one rule this engine cannot compile
    assert result.stats.transition_rules_skipped == 1  # the oldSelf rule; optionalOldSelf ran
    assert result.stats.cel_rules_unsupported == 1


def test_defaults_feed_cel_rules() -> None:
    # limit defaults to 100 and nested.level to 3: both rules pass only because defaults apply.
    result = run(gadget(size=50))
    assert [c for c, _ in found(result)] == ["VERIFY006"]
    result = run(gadget(size=500))
    assert ("VERIFY004", "spec") in found(result)
    assert any("size 500 over 100" in d.message for d in result.diagnostics)  # messageExpression


def test_field_path_and_reason() -> None:
    result = run(gadget(mode="off", extra={}))
    d = next(d for d in result.diagnostics if d.code == "VERIFY004")
    assert d.path == "spec.extra" and d.message.endswith("Forbidden: extra needs a mode")


def test_null_takes_the_default_unless_nullable() -> None:
    assert [c for c, _ in found(run(gadget(limit=None)))] == ["VERIFY006"]
    result = run(gadget(size=None))  # no default, not nullable: a type error
    assert ("VERIFY002", "spec.size") in found(result)


def test_unknown_fields_but_not_where_preserved() -> None:
    result = run(gadget(bogus=1, template={"apiVersion": "v1", "kind": "Pod", "spec": {"y": 2}}))
    assert ("VERIFY001", "spec.bogus") in found(result)
    assert ("VERIFY001", "spec.template.spec.y") in found(result)


def test_int_or_string_and_pattern() -> None:
    assert ("VERIFY002", "spec.size") in found(run(gadget(size=True)))
    assert ("VERIFY002", "spec.size") in found(run(gadget(size="lots")))


def test_list_map_keys_use_defaults_and_sets_are_unique() -> None:
    result = run(gadget(ports=[{"port": 80}, {"port": 80, "protocol": "TCP"}], tags=["a", "a"]))
    assert ("VERIFY007", "spec.ports[1]") in found(result)
    assert ("VERIFY007", "spec.tags[1]") in found(result)


def test_go_regex_pattern() -> None:
    assert not any(c == "VERIFY002" for c, _ in found(run(gadget(code="AbC"))))
    assert ("VERIFY002", "spec.code") in found(run(gadget(code="a1")))
    assert ("VERIFY002", "spec.code") in found(run(gadget(code="a1"), python=True))


def test_junctor_properties_do_not_reject_fields() -> None:
    assert ("VERIFY002", "spec.choice") in found(run(gadget(choice={"b": "x"})))
    assert not any(c == "VERIFY001" for c, _ in found(run(gadget(choice={"a": "x", "b": "xyz"}))))


def test_runtime_errors_and_non_bool_results() -> None:
    result = run(gadget(boom={"v": 1}))
    errors = [d for d in result.diagnostics if d.code == "VERIFY005"]
    assert len(errors) == 2 and all(d.path == "spec.boom" for d in errors)
    assert any("missing" in d.message for d in errors) and any("not a bool" in d.message for d in errors)


def test_crd_name_constraint_and_scope() -> None:
    result = run({**gadget(), "metadata": {"name": "much-too-long-name", "namespace": "x"}})
    assert ("VERIFY002", "metadata.name") in found(result)
    assert ("VERIFY011", "metadata.namespace") in found(result)


def test_unserved_version() -> None:
    assert ("VERIFY010", "apiVersion") in found(run({**gadget(), "apiVersion": "example.com/v0"}))


def test_unsupported_rule_reported_once() -> None:
    result = run(gadget(), gadget(), gadget())
    assert [c for c, _ in found(result)].count("VERIFY006") == 1
    assert result.stats.cel_rules_unsupported == 3


def test_schema_without_openapi_is_unusable() -> None:
    crd = copy.deepcopy(CRD)
    del crd["spec"]["versions"][0]["schema"]
    registry = CrdRegistry.from_documents([crd])
    result = verify([Manifest("c", "x", gadget())], kube_versions={"c": "1.34"}, crds=registry)
    assert [d.code for d in result.diagnostics] == ["VERIFY014"]


def test_json_schema_translation() -> None:
    js = to_json_schema(SCHEMA, root=True)
    spec = js["properties"]["spec"]
    assert spec["additionalProperties"] is False
    assert "additionalProperties" not in spec["properties"]["extra"]
    assert spec["properties"]["note"]["type"] == ["string", "null"]
    assert "type" not in spec["properties"]["size"]
    assert js["properties"]["metadata"] == {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}
    assert "additionalProperties" not in spec["properties"]["choice"]["anyOf"][1]
    node = compile_node(SCHEMA)
    assert set(node.props["spec"].props) >= {"size", "nested", "ports", "tags", "boom"}
    assert "extra" not in node.props["spec"].props  # nothing to walk there
