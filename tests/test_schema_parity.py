"""Schema parity (issue 19, item 8): the JSON Schema an editor checks (schemas/, ``gpupolicy schema``)
and the compiler give the same verdict on every value of every field.

For each leaf field of the Fleet and Team models (compiler.model.fields) the test takes a place a
case sets it (or could add it: tests/field_seeds.py), puts values at the boundaries of what the
field allows there (the pattern's edges, names of 63 and 64 characters, min/max and one beyond,
each enum member and a mis-cased one, a number as text, a bool, null, the wrong container) and
compares ``jsonschema`` validation of the file against the committed schema with the compiler's
own verdict (strict model validation, as ``compiler.validate.schema.parse_model`` runs it).

What a JSON Schema cannot say is listed in ``CROSS_FIELD`` with the reason; nothing else may differ.
"""

from __future__ import annotations

import copy
import json
import math
import re
import typing
from functools import cache
from typing import Any, Literal

import pytest
from conftest import REPO
from field_effects import REMOVE, Site, apply, constraints, sites
from field_seeds import Files, Scenario
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from compiler.load.source import load_text
from compiler.model.fields import LeafField, _members, _strip, leaf_fields
from compiler.model.fleet import FleetFile
from compiler.model.schemas import render_schemas
from compiler.model.team import TeamFile

MODELS: dict[str, tuple[type[BaseModel], str]] = {"Fleet": (FleetFile, "fleet.schema.json"),
                                                  "Team": (TeamFile, "team.schema.json")}
LEAVES: list[tuple[str, LeafField]] = [(k, f) for k, (m, _) in MODELS.items() for f in leaf_fields(m)]

# Checks across fields of one object, which a per-field JSON Schema does not express; the compiler
# reports them as SCHEMA errors on the object. A probe the compiler rejects only for one of these
# (matched by its message) is not a disagreement on the field.
CROSS_FIELD = {
    "give either variants or productName": "GpuModelSpec: variants or productName/pciDeviceIds, not both",
    "productName (or variants) is required": "GpuModelSpec: a catalog model needs an NVML name",
    "listed twice": "MigSpec: each profile once",
    "compute slices >": "MigSpec: a profile fits the GPU's compute slices",
    "memory slices": "MigSpec: a profile's placements fit the GPU's memory slices",
}

NAMES = ["a", "z9", "A", "Vision_Train", "vision-train", "-a", "a-", "a.b", "a..b", ".a", "a_b", "a b", "é",
         "x" * 63, "x" * 64, "a" + "-" * 61 + "b", "a." * 126 + "b", "a." * 126 + "bc", "x" * 253, "x" * 254]
SHAPED = ["", "1.34", "1.19", "1.20", "1.40", "1.41", "v0.19.2", "0.19", "0.4.1", "580", "580.65", "R580",
          "3g.40gb", "1g.10gb+me", "3G.40GB", "example.com/x", "example.com/", "/x", "a/b/c", "Example.com/x",
          "example.com/" + "x" * 63, "example.com/" + "x" * 64, "@acme", "@acme/ml", "ml@acme.com", "#x@a.bc",
          "https://x.example", "http://x.example:6443", "ftp://x.example", "https://", "not a url",
          "git@github.com:a/b.git", "ssh://git@x/y", "200Gi", "0Gi", "10Mi", "1Ki", "Deny", "deny",
          "0x20B510DE", "20b5", "10de:20b5", "0x20B5", "20b5x", "main", "out", "out/x", "Out", "out/", "8",
          "vllm/vllm-openai:v0.11.0", "Vllm/Vllm", "DRAExtendedResource", "dRA", "eu-central", "EU",
          "2099-12-31", "2027-02-30", "2027-02-29", "2028-02-29", "2100-02-29", "2000-02-29", "2027-13-01",
          "0000-01-01", "2027-1-01", "   ", " x ", "\t", "FLEET011", "FLEET11", "fleet011"]
SCALARS: list[Any] = [None, True, False, 0, 1, -1, 1.5, 8.0, [], {}]


def _bounds(leaf: LeafField) -> list[Any]:
    """Every numeric bound of the field with its neighbours, and strings at each length bound."""
    out: list[Any] = []
    for c in constraints(leaf):
        for attr in ("ge", "le", "gt", "lt"):
            v = getattr(c, attr, None)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out += [v, v - 1, v + 1, v - 0.5, v + 0.5, str(v)]
        for attr in ("min_length", "max_length"):
            n = getattr(c, attr, None)
            if isinstance(n, int):
                out += ["a" * max(n - 1, 0), "a" * n, "a" * (n + 1)]
        pattern = getattr(c, "pattern", None)
        if isinstance(pattern, str):
            out.append(pattern)  # the pattern as a value: hardly ever matches itself
    return out


def _literals(leaf: LeafField) -> list[Any]:
    out: list[Any] = []
    for m in _members(_strip(leaf.info.annotation)):
        for arg in typing.get_args(m) if typing.get_origin(m) is Literal else ():
            out += [arg, arg.upper() if isinstance(arg, str) else arg, arg.lower() if isinstance(arg, str) else arg,
                    f" {arg}"]
        for inner in typing.get_args(_strip(m)):
            if typing.get_origin(_strip(inner)) is Literal:
                out += [a for a in typing.get_args(_strip(inner))]
    return out


def _texts(tp: Any) -> bool:
    """Whether the type (or its items, keys, values) takes a string: then the name probes apply."""
    for m in _members(tp):
        origin = typing.get_origin(m)
        if origin in (list, dict):
            if any(_texts(a) for a in typing.get_args(m)):
                return True
        elif origin is Literal:
            if any(isinstance(a, str) for a in typing.get_args(m)):
                return True
        elif m not in (int, float, bool, type(None)) and not (isinstance(m, type) and issubclass(m, BaseModel)):
            return True  # str, HttpUrl and other string-like types
    return False


def probes(leaf: LeafField, current: Any) -> list[Any]:
    """Values at the edges of what the field allows, in the field's container shape and outside it."""
    tp = _strip(leaf.info.annotation)
    strings = NAMES + SHAPED if _texts(tp) else ["8", "x"]
    scalar = SCALARS + strings + _bounds(leaf) + _literals(leaf)
    kinds = {typing.get_origin(m) or m for m in _members(tp)}
    out: list[Any] = list(scalar)
    if list in kinds:
        out += [[v] for v in scalar if not isinstance(v, (list, dict))]
        if isinstance(current, list) and current:
            out += [current + current[:1]]  # a repeat
    if dict in kinds:
        sample = next(iter(current.items())) if isinstance(current, dict) and current else ("k", True)
        out += [{k: sample[1]} for k in NAMES + SHAPED]
        out += [{sample[0]: v} for v in scalar if not isinstance(v, dict)]
    if leaf.optional and current is not None:
        out.append(REMOVE)
    return out


@cache
def _scenarios() -> list[Scenario]:
    return Scenario.all()


@cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((REPO / "schemas" / MODELS[kind][1]).read_text()))


def compiler_accepts(kind: str, doc: Any) -> str | None:
    """None when the compiler accepts the document; else the first error's type and object."""
    try:
        MODELS[kind][0].model_validate(doc, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        return f"{first['type']} at {'.'.join(map(str, first['loc']))}: {first['msg']}"
    return None


def _place(leaf: LeafField, kind: str) -> Site:
    found = sites(leaf, kind, _scenarios())
    assert found, f"no case sets {leaf.dotted}"
    return found[0]


def _json_integer(value: Any) -> bool:
    """JSON has one number type: to every JSON Schema validator 8.0 *is* the integer 8 (draft 2020-12,
    "type": "integer"), so no schema can refuse it where the compiler, reading YAML, does (``8.0`` is
    a float there, and counts of GPUs, nodes or slices are whole; SCHEMA002 says so)."""
    items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
    return any(isinstance(v, float) and v.is_integer() for v in items)


def _show(v: Any) -> str:
    return "<removed>" if v is REMOVE else json.dumps(v)[:50]


@pytest.mark.parametrize(("kind", "leaf"), LEAVES, ids=[f"{k}.{f.dotted}" for k, f in LEAVES])
def test_schema_and_compiler_agree(kind: str, leaf: LeafField) -> None:
    site = _place(leaf, kind)
    files: Files = site.scenario.files
    assert compiler_accepts(kind, files[site.file]) is None and _validator(kind).is_valid(files[site.file])
    differ = []
    for value in probes(leaf, site.value() if site.present else None):
        doc = apply(files, site, value)[site.file]
        said = compiler_accepts(kind, doc)
        schema = _validator(kind).is_valid(doc)
        if schema != (said is None) and not any(m in str(said) for m in CROSS_FIELD) and not _json_integer(value):
            differ.append(f"{_show(value)}: schema {'accepts' if schema else 'rejects'}, compiler "
                          f"{'accepts' if said is None else 'rejects (' + str(said) + ')'}")
    assert not differ, f"{kind} {leaf.dotted} at {site}:\n" + "\n".join(differ[:12])


def test_the_committed_schemas_are_the_models() -> None:
    """What the parity test reads is what ``gpupolicy schema`` writes today."""
    for name, data in render_schemas().items():
        assert (REPO / "schemas" / name).read_bytes() == data, f"schemas/{name} is stale: run gpupolicy schema"


def test_the_reported_disagreements_are_gone() -> None:
    """Issue 19's two examples: a namespace with '_' and capitals, a number written as text."""
    team = _scenarios()[0].files["teams/vision.yaml"]
    bad_name = apply({"t": team}, Site(_scenarios()[0], "t", ("spec", "namespaces", 0, "name"), True), "Vision_Train")
    quoted = apply({"t": team}, Site(_scenarios()[0], "t", ("spec", "budgets", 0, "guaranteed"), True), "8")
    for doc in (bad_name["t"], quoted["t"]):
        assert compiler_accepts("Team", doc) is not None and not _validator("Team").is_valid(doc)


# -- YAML as written: the loader's reading and an editor's (YAML 1.2) give one verdict ---------------

def core_value(written: str) -> Any:
    """A plain scalar as YAML 1.2's core schema types it (yaml.org/spec/1.2.2, 10.3.2), which is what
    an editor's YAML parser hands the JSON Schema; written from the spec's table, not from the loader."""
    if re.fullmatch(r"null|Null|NULL|~", written):
        return None
    if re.fullmatch(r"true|True|TRUE|false|False|FALSE", written):
        return written.lower() == "true"
    if re.fullmatch(r"[-+]?[0-9]+", written):
        return int(written, 10)
    if re.fullmatch(r"0o[0-7]+|0x[0-9a-fA-F]+", written):
        return int(written[2:], 8 if written[1] == "o" else 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", written):
        return float(written)
    if re.fullmatch(r"[-+]?\.(inf|Inf|INF)", written):
        return float(written.replace(".", "").lower())
    if re.fullmatch(r"\.(nan|NaN|NAN)", written):
        return math.nan
    return written


# Number forms of YAML 1.1 (and of ruamel's lenient resolver) beside YAML 1.2's own, as plain scalars.
WRITTEN = ["8", "+8", "-8", "0", "0o10", "0x10", "0x1f", "8.5", "1e1", "1.", ".5", ".inf", "-.inf", ".nan",
           "0b1000", "-0b1", "1_6", "1_000", "16_", "1:30", "1:30.5", "190:20:30", "+0x10", "-0x10", "0x_10",
           "+0o10", "0o1_0", "1_0.5", "1_000e3", "yes", "No", "on", "OFF", "y", "true", "null", "~", "eight"]
# 010: octal 8 to YAML 1.1, 10 to YAML 1.2. The loader keeps it as written, so a number field refuses it
# (with a hint to write 10) where an editor reads 10, and a text field takes it where an editor sees a
# number: the one deliberate difference, listed in README ("Two things a per-field JSON Schema cannot say").
LEADING_ZERO = ["010", "+010", "08", "00"]

# (kind, file, line as committed, the line with {} for the written value, path of the value)
PLACES = [
    ("Team", "teams/vision.yaml", "      guaranteed: 8\n", "      guaranteed: {}\n",
     ("spec", "budgets", 0, "guaranteed")),  # an integer
    ("Team", "teams/vision.yaml", "      borrow: 8\n", "      borrow: {}\n",
     ("spec", "budgets", 0, "borrow")),  # an integer or 'unlimited'
    ("Fleet", "fleet.yaml", "      weight: 2\n", "      weight: {}\n", ("spec", "departments", 1, "weight")),  # a float
    ("Team", "teams/vision.yaml", "  name: vision\n", "  name: vision\n  description: {}\n",
     ("metadata", "description")),  # text
]


def _written_verdicts(kind: str, rel: str, line: str, template: str, path: tuple[str | int, ...],
                      written: str) -> tuple[str | None, bool]:
    """The compiler's verdict on the file with ``written`` in place (load and strict model
    validation, as ``gpupolicy validate`` runs them) and the JSON Schema's on the value an editor reads."""
    text = (REPO / "policies" / rel).read_text()
    assert text.count(line) >= 1, line
    src, diags = load_text(f"policies/{rel}", text.replace(line, template.format(written), 1).encode())
    assert src is not None and not diags, diags
    said = compiler_accepts(kind, src.data)
    doc = copy.deepcopy(src.data)
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = core_value(written)
    return said, _validator(kind).is_valid(doc)


@pytest.mark.parametrize("place", PLACES, ids=[".".join(map(str, p[-1])) for p in PLACES])
def test_yaml_as_written_gets_the_editors_verdict(place: tuple[Any, ...]) -> None:
    """``guaranteed: 0b1000`` was 8 to the compiler (ruamel's resolver) and text to an editor (YAML
    1.2), so the compiler accepted what the editor underlined. Every form, at a number and a text field."""
    kind, rel, line, template, path = place
    differ = []
    for written in WRITTEN:
        value = core_value(written)
        said, schema = _written_verdicts(kind, rel, line, template, path, written)
        if schema != (said is None) and not _json_integer(value) and not (isinstance(value, float) and math.isnan(value)):
            differ.append(f"{written} (an editor reads {value!r}): schema {'accepts' if schema else 'rejects'}, "
                          f"compiler {'accepts' if said is None else 'rejects (' + str(said) + ')'}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("written", LEADING_ZERO)
def test_a_leading_zero_is_refused_where_a_number_is_meant(written: str) -> None:
    for kind, rel, line, template, path in PLACES[:3]:
        said, schema = _written_verdicts(kind, rel, line, template, path, written)
        assert said is not None and schema, (written, path)  # stricter than the editor, on purpose
    said, schema = _written_verdicts(*PLACES[3], written)
    assert said is None and not schema  # text as written; an editor sees a number
