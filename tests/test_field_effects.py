"""No silent fields (issue 22): every leaf field of the Fleet and Team models has an effect.

For each leaf (compiler.model.fields.leaf_fields) the test finds where the demo, a golden case or
a seeded variant of the demo sets it, gives it other valid values (removal, another enum member,
a neighbouring number, the boundaries, an edited string) and compiles: the rendered files, the
reports, CODEOWNERS or the diagnostics must change. A field whose mutations change nothing fails
unless it carries the informational marker (compiler.model.common.informational) with a reason,
which the JSON Schema and the README then show.

``make test`` tries a few values at the first places a field is set; ``make fuzz``
(GPUPOLICY_FUZZ_EXAMPLES) tries every value at every place it is set, and checks that an
informational field really changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from field_effects import REMOVE, Compiler, Site, apply, candidates, sites, unshadowed, valid
from field_seeds import Scenario

from compiler.model.fields import LeafField, leaf_fields
from compiler.model.fleet import FleetFile
from compiler.model.team import TeamFile

FUZZ = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "0")) > 0
TRIES = 12  # compiles per field in the make-test sample (each ~0.05-0.1 s)

LEAVES: list[tuple[str, LeafField]] = [("Fleet", f) for f in leaf_fields(FleetFile)] + [
    ("Team", f) for f in leaf_fields(TeamFile)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[Scenario], Compiler]]:
    comp = Compiler(tmp_path_factory.mktemp("effects"))
    started = time.monotonic()
    yield Scenario.all(), comp
    log = os.environ.get("GPUPOLICY_EFFECTS_LOG")  # figures of a run, for the record (make fuzz)
    if log:
        Path(log).write_text(json.dumps({"fields": len(LEAVES), "compiles": comp.runs,
                                         "seconds": round(time.monotonic() - started, 1), "fuzz": FUZZ}) + "\n")


def _pool(kind: str, leaf: LeafField, scenarios: list[Scenario]) -> list[Any]:
    """Values the field, or the same field of the same model elsewhere (``versions.kueue`` of the
    fleet and of a cluster), has in any case."""
    out: list[Any] = []
    for k, other in LEAVES:
        if k == kind and other.owner is leaf.owner and other.name == leaf.name:
            for s in sites(other, kind, scenarios):
                if s.present and s.value() not in out:
                    out.append(s.value())
    return out


def probe(kind: str, leaf: LeafField, scenarios: list[Scenario], comp: Compiler, *, every_site: bool
          ) -> tuple[list[str], list[str]]:
    """(effects found, places tried without effect). With ``every_site`` each place the field is set
    must show an effect with some value; otherwise the first effect anywhere ends the probe."""
    found = sites(leaf, kind, scenarios)
    assert found, f"no case sets {leaf.dotted} nor has an object to add it to: add it to a golden case or a seed"
    pool = _pool(kind, leaf, scenarios)
    effects: list[str] = []
    tried: dict[str, list[str]] = {}
    invalid: list[tuple[Site, Any]] = []
    present = [s for s in found if s.present]
    places = present if every_site and present else found  # a field set nowhere: wherever it can be added
    exhaustive, every_site = every_site, every_site and bool(present)
    values = [candidates(leaf, s, pool) for s in places]
    budget = TRIES
    done: set[str] = set()
    # The context matters more than the value: one value at each place first, then a second one...
    for r in range(max(map(len, values), default=0)):
        for site, vals in zip(places, values):
            if r >= len(vals) or str(site) in done or (not exhaustive and budget <= 0):
                continue
            if not valid(_files_with(site, vals[r]), site.file):
                invalid.append((site, vals[r]))
                continue
            budget -= 1
            effect = comp.changes(site, vals[r])
            if effect:
                effects.append(f"{site}={_show(vals[r])}: {effect}")
                done.add(str(site))
                if not every_site:
                    return effects, []
            else:
                tried.setdefault(str(site), []).append(_show(vals[r]))
    if exhaustive and leaf.shadowed_by:  # overridden where it stands: its effect with the winners unset
        for site in [p for p in places if str(p) not in done]:
            for alone in unshadowed(site, leaf):
                if str(site) in done or not comp.compiles(alone.scenario):
                    continue
                for value in candidates(leaf, alone, pool):
                    effect = comp.changes(alone, value) if valid(_files_with(alone, value), alone.file) else None
                    if effect:
                        effects.append(f"{alone}={_show(value)}: {effect}")
                        done.add(str(site))
                        break
    silent = [f"{s} tried {', '.join(v)}" for s, v in tried.items() if s not in done]
    if not effects and not silent:  # no other valid value exists (apiVersion, kind, mode): a wrong one is caught
        for site, value in [x for x in invalid if x[0].present][:2]:
            effect = comp.changes(site, value)
            if effect and effect.startswith("diagnostics"):  # a located error, not a crash or a silent drop
                effects.append(f"{site}={_show(value)} (only value; a wrong one gives {effect})")
                break
    return effects, silent


def _files_with(site: Site, value: Any) -> dict[str, Any]:
    return apply(site.scenario.files, site, value)


def _show(value: Any) -> str:
    return "<removed>" if value is REMOVE else json.dumps(value)[:40]


@pytest.mark.parametrize(("kind", "leaf"), LEAVES, ids=[f"{k}.{f.dotted}" for k, f in LEAVES])
def test_field_has_an_effect(kind: str, leaf: LeafField, world: tuple[list[Scenario], Compiler]) -> None:
    scenarios, comp = world
    if leaf.informational:
        if FUZZ:  # the marker must not hide an effect the field has
            effects, _ = probe(kind, leaf, scenarios, comp, every_site=True)
            assert not effects, f"{leaf.dotted} is marked informational but changes the output: {effects}"
        return
    effects, silent = probe(kind, leaf, scenarios, comp, every_site=FUZZ)
    assert effects, (f"{kind} field {leaf.dotted} changes nothing (tried: {silent}); give it an effect or a "
                     "check, remove it, or mark it informational(reason) in compiler/model")
    if FUZZ:
        assert not silent, f"{leaf.dotted} has no effect at {silent}"


def test_informational_fields_are_documented() -> None:
    """Each informational field says why, in the JSON Schema description and the README."""
    schemas = {"Fleet": json.loads((REPO / "schemas/fleet.schema.json").read_text()),
               "Team": json.loads((REPO / "schemas/team.schema.json").read_text())}
    readme = (REPO / "README.md").read_text()
    marked = [(k, f) for k, f in LEAVES if f.informational]
    assert marked, "expected at least sla.ttftP95Ms to be marked informational"
    for kind, leaf in marked:
        assert f"`{leaf.dotted.removeprefix('spec.')}`" in readme, f"README does not list informational {leaf.dotted}"
        text = json.dumps(schemas[kind], ensure_ascii=False)
        assert f"Informational (no effect on output or checks): {leaf.informational}" in text, leaf.dotted


def test_every_model_field_is_walked() -> None:
    """The walker reaches every model of the language (a new nested model is covered automatically)."""
    owners = {f.owner.__name__ for _, f in LEAVES}
    for name in ("Sla", "MigDevices", "MpsCut", "EndpointPicker", "GpuModelSpec", "MigProfileSpec",
                 "DriverNameSpec", "GpuVariantSpec", "ModelArchitecture", "FeatureGates", "AdmissionModes"):
        assert name in owners, name
    assert len(LEAVES) >= 170


def _schema_leaves(schema: dict[str, Any]) -> set[str]:
    """Leaf property paths of a JSON Schema (``[]`` into arrays, ``{}`` into maps), through $ref and unions."""
    defs = schema.get("$defs", {})
    out: set[str] = set()

    def objects(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
        found, stack = [], [(node, path)]
        while stack:
            n, p = stack.pop()
            if "$ref" in n:
                stack.append((defs[n["$ref"].split("/")[-1]], p))
            stack += [(sub, p) for k in ("anyOf", "oneOf", "allOf") for sub in n.get(k, [])]
            if "items" in n:
                stack.append((n["items"], p + "[]"))
            if isinstance(n.get("additionalProperties"), dict):
                stack.append((n["additionalProperties"], p + "{}"))
            stack += [(sub, p + "{}") for sub in n.get("patternProperties", {}).values()]  # keys with a pattern
            if "properties" in n:
                found.append((p, n))
        return found

    def walk(obj: dict[str, Any], prefix: str) -> None:
        for key, prop in obj.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            subs = objects(prop, path)
            scalar = any(m.get("type") not in (None, "object", "array", "null") or "enum" in m or "const" in m
                         for m in prop.get("anyOf", []) + prop.get("oneOf", []))
            if not subs or scalar:
                out.add(path)
            for p, o in subs:
                walk(o, p)

    walk(schema, "")
    return out


@pytest.mark.parametrize("model", [FleetFile, TeamFile], ids=["Fleet", "Team"])
def test_the_effect_map_matches_the_json_schema(model: type[FleetFile] | type[TeamFile]) -> None:
    """The walker finds exactly the leaves an editor sees in the generated JSON Schema (a field the
    walker missed would escape the effect test)."""
    schema = _schema_leaves(model.model_json_schema(by_alias=True, mode="validation"))
    walked = {re.sub(r"<[^>]*>", "", f.dotted) for f in leaf_fields(model)}
    assert schema == walked, (sorted(schema - walked), sorted(walked - schema))


def test_shadowing_fields_exist() -> None:
    """A field marked shadowed names fields of the language that win over it (a typo would hide it)."""
    dotted = {(k, f.path) for k, f in LEAVES}
    shadowed = [(k, f) for k, f in LEAVES if f.shadowed_by]
    assert {f.dotted for _, f in shadowed} >= {"spec.priorities[].default", "spec.defaults.budget.guaranteed"}
    for _, leaf in shadowed:
        for ref in leaf.shadowed_by:
            assert ref in dotted, (leaf.dotted, ref)
