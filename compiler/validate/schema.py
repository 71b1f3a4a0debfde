"""Stage 2a: each loaded file against its pydantic model, errors mapped back to file:line:col."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from compiler.diagnostics import Diagnostic, Rule, Scope, define, did_you_mean
from compiler.load.source import SourceFile, YamlPath
from compiler.model.common import API_VERSION, name_error
from compiler.model.fleet import FleetFile
from compiler.model.team import TeamFile
from compiler.policy.cuts import CUT_MODES
from compiler.validate.yaml_hints import generic_hint, yaml_hint

SCHEMA_UNKNOWN_KEY = define(
    "SCHEMA001",
    "Policy objects accept only the keys the language defines (no silent typos).",
    "spec:\n  isolation: shared",
    "spec:\n  isolaton: shared   # did you mean 'isolation'?",
    scope=Scope.FILE,
)
SCHEMA_TYPE = define(
    "SCHEMA002",
    "Every value has the type and range the language defines.",
    "guaranteed: 4",
    "guaranteed: -4",
    scope=Scope.FILE,
)
SCHEMA_REQUIRED = define(
    "SCHEMA003",
    "Required keys are present.",
    "spec:\n  department: research\n  isolation: shared",
    "spec:\n  isolation: shared   # no department",
    scope=Scope.FILE,
)
SCHEMA_HEADER = define(
    "SCHEMA004",
    "Every file starts with `apiVersion: gpupolicy.dev/v1alpha1` and the kind its place implies "
    "(Fleet for fleet.yaml, Team under teams/).",
    "apiVersion: gpupolicy.dev/v1alpha1\nkind: Team",
    "apiVersion: gpupolicy.dev/v2\nkind: Team",
    scope=Scope.FILE,
)


RULES: tuple[Rule, ...] = (SCHEMA_UNKNOWN_KEY, SCHEMA_TYPE, SCHEMA_REQUIRED, SCHEMA_HEADER)

M = TypeVar("M", bound=BaseModel)


def _aliases(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the mapping at ``loc`` (for 'did you mean' hints)."""
    model: Any = root
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    """Reach the model inside Optional[...] / list[...] / dict[str, ...]."""
    for _ in range(6):
        args = getattr(tp, "__args__", None)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp
        if not args:
            return tp
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if len(models) == 1:
            return models[0]
        if getattr(tp, "__origin__", None) is dict:
            tp = args[1]
        else:
            tp = next((a for a in args if a is not type(None)), args[0])
    return tp


def _data_path(data: Any, loc: tuple[Any, ...]) -> YamlPath:
    """Drop pydantic's union-member tags from ``loc`` so it addresses the YAML data."""
    path: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and isinstance(part, str) and part in cur:
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, dict) and isinstance(part, str) and i == len(loc) - 1:
            # a missing or unknown key: keep it so the message names it
            path.append(part)
        # anything else is a union member tag (e.g. 'timeslicing', 'int'): not in the data
    return tuple(path)


def _crumb(path: YamlPath) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _pydantic_to_diags(src: SourceFile, model: type[BaseModel], err: ValidationError) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    seen: set[tuple[YamlPath, str]] = set()
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        etype = e["type"]
        path = _data_path(src.data, loc)
        if (path, etype) in seen and etype in ("union_tag_invalid", "literal_error"):
            continue
        seen.add((path, etype))
        crumb = _crumb(path)
        if etype == "extra_forbidden":
            key = str(path[-1]) if path else "?"
            owner = _model_at(model, tuple(p for p in path[:-1] if isinstance(p, str)))
            choices = _aliases(owner) if owner else []
            hint = _misplaced(model, path, key) or did_you_mean(key, choices) or (
                f"allowed keys here: {', '.join(sorted(choices))}" if choices else
                "this mapping takes no such key; check its indentation (a key one level too deep or too shallow)"
            )
            diags.append(SCHEMA_UNKNOWN_KEY.diag(f"unknown key {key!r} at {crumb}", src.locate(path, key=True),
                                                 hint=hint, path=crumb))
        elif etype == "missing":
            parent = path[:-1]
            diags.append(SCHEMA_REQUIRED.diag(f"missing required key {str(path[-1])!r} in {_crumb(parent) or 'the document'}",
                                              src.locate(parent, key=True), path=crumb,
                                              hint=f"add `{path[-1]}:` with a value under {_crumb(parent) or 'the top level'} "
                                                   "(the JSON Schema in schemas/ lists what it takes)"))
        else:
            value = _value_at(src.data, path)
            shown = repr(value) if value is not None and len(repr(value)) < 80 else type(value).__name__
            msg = e["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
            named = name_error(etype, e.get("ctx"), e.get("input"))
            if named is not None:  # a name type pydantic-core checked itself: said as its validator would
                etype, msg = "value_error", named
            diags.append(SCHEMA_TYPE.diag(f"{crumb}: {msg} (got {shown})", src.locate(path, key=value is None), path=crumb,
                                          hint=yaml_hint(src, path, value, etype) or _type_hint(etype, path)
                                          or generic_hint(etype)))
    return diags


# Keys a team may expect in its own file that the language keeps in the platform team's fleet.yaml.
_FLEET_ONLY = {
    "waivers": "waivers live in fleet.yaml, which the platform team owns: a team cannot waive findings itself; "
               "ask the platform team for a waiver with an owner, a reason and an expiry date",
}


def _misplaced(model: type[BaseModel], path: YamlPath, key: str) -> str | None:
    """The hint for a fleet-only key written in a team file (under spec:, or beside it)."""
    if model is not TeamFile or path not in (("spec", key), (key,)):
        return None
    return _FLEET_ONLY.get(key)


def _type_hint(etype: str, path: YamlPath) -> str | None:
    last = path[-1] if path else ""
    if last in ("borrow", "lend"):
        return "use a whole number >= 0, 0 for none, 'unlimited' for no limit, or leave it out to inherit"
    if last == "guaranteed":
        return "use a whole number >= 0 (guaranteed cannot be 'unlimited'), or leave it out to inherit"
    if "owners" in path and etype == "string_pattern_mismatch":
        return "an owner is @user, @org/team or an e-mail address (CODEOWNERS syntax)"
    if etype == "union_tag_invalid" or last == "mode":
        return "cut.mode is one of: " + ", ".join(CUT_MODES)
    return None


def _value_at(data: Any, path: YamlPath) -> Any:
    cur = data
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def check_header(src: SourceFile, expected_kind: str) -> list[Diagnostic]:
    if not isinstance(src.data, dict):
        return [SCHEMA_HEADER.diag(f"expected a mapping with apiVersion and kind, got {type(src.data).__name__}",
                                   src.locate(()))]
    diags = []
    api = src.data.get("apiVersion")
    if api != API_VERSION:
        diags.append(SCHEMA_HEADER.diag(
            f"apiVersion is {api!r}; this compiler reads {API_VERSION!r}",
            src.locate(("apiVersion",)),
            hint=f"set apiVersion: {API_VERSION} (files of another version need a migration)",
        ))
    kind = src.data.get("kind")
    if kind != expected_kind:
        diags.append(SCHEMA_HEADER.diag(
            f"kind is {kind!r} but this file must be a {expected_kind}",
            src.locate(("kind",)),
            hint="fleet.yaml holds kind: Fleet; each file under teams/ holds one kind: Team",
        ))
    return diags


def parse_model(src: SourceFile, model: type[M], kind: str) -> tuple[M | None, list[Diagnostic]]:
    header = check_header(src, kind)
    if header:
        return None, header
    try:
        # strict: YAML gives ints, floats, bools and strings already typed, and a bool is never
        # a number (``guaranteed: true`` is an error, not 1 GPU).
        return model.model_validate(src.data, strict=True), []
    except ValidationError as err:
        return None, _pydantic_to_diags(src, model, err)


def parse_fleet(src: SourceFile) -> tuple[FleetFile | None, list[Diagnostic]]:
    return parse_model(src, FleetFile, "Fleet")


def parse_team(src: SourceFile) -> tuple[TeamFile | None, list[Diagnostic]]:
    return parse_model(src, TeamFile, "Team")
