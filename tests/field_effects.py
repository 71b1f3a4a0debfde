"""Machinery of the field-effect test (tests/test_field_effects.py): where each leaf field of the
policy language is set (the demo, the golden cases, a few seeded variants of the demo), which
other valid values it can take, and whether compiling with such a value changes anything.

"Changes anything" = the rendered ``out/`` files (manifests, REPORT.md, allocation.json, node
contracts), CODEOWNERS, or the diagnostics (rule ID, severity, message; not the location).
A candidate value counts only when the mutated file still validates against its pydantic
model, so a field cannot pass merely because a malformed value is rejected; a field with no
other valid value (``apiVersion``, ``kind``) is proven by the diagnostic a wrong value gives.
"""

from __future__ import annotations

import copy
import hashlib
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import annotated_types as at
import yaml
from field_seeds import Files, Scenario
from pydantic import BaseModel, ValidationError

from compiler.model.fields import LeafField, _members, _strip
from compiler.model.fleet import FleetFile
from compiler.model.team import TeamFile
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies

REMOVE: Any = object()  # candidate: delete the key (optional fields)

# -- where a field is set ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Site:
    scenario: Scenario
    file: str
    path: tuple[Any, ...]  # concrete keys and indices down to the field
    present: bool

    def value(self) -> Any:
        node = self.scenario.files[self.file]
        for k in self.path:
            node = node[k]
        return node

    def __str__(self) -> str:
        return f"{self.scenario.name}:{self.file}:{'.'.join(map(str, self.path))}"


def sites(leaf: LeafField, kind: str, scenarios: list[Scenario]) -> list[Site]:
    """Every place ``leaf`` (of a ``kind`` file: Fleet or Team) is set, in all scenarios, then every
    object it could be added to."""
    found: list[Site] = []
    for sc in scenarios:
        for rel, data in sc.files.items():
            if isinstance(data, dict) and data.get("kind") == kind:
                found += [Site(sc, rel, p, present) for p, present in _walk(data, leaf.path, ())]
    return sorted(found, key=lambda s: not s.present)


def _walk(node: Any, steps: tuple[str, ...], at_: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], bool]]:
    step, rest = steps[0], steps[1:]
    if step == "[]":
        if isinstance(node, list):
            for i, item in enumerate(node):
                yield from _walk(item, rest, at_ + (i,))
    elif step == "{}":
        if isinstance(node, dict):
            for k, item in node.items():
                yield from _walk(item, rest, at_ + (k,))
    elif step.startswith("<"):
        tag, _, value = step[1:-1].partition("=")
        if isinstance(node, dict) and node.get(tag) == value:
            yield from _walk(node, rest, at_)
    elif isinstance(node, dict):
        if not rest:
            yield at_ + (step,), step in node
        elif step in node:
            yield from _walk(node[step], rest, at_ + (step,))
        elif all(not s.startswith(("[", "{", "<")) for s in rest):  # an absent object: add it with the field
            yield at_ + (step, *rest), False


def unshadowed(site: Site, leaf: LeafField) -> Iterator[Site]:
    """The same place in copies of its case where the fields that win over ``leaf`` are unset
    (``LeafField.shadowed_by``): where the field's value is overridden everywhere, this is where it
    takes effect. First every such field unset; then, as unsetting them all may break the case (a
    budget lending more than the default guarantee), those in the field's own file and one of each
    other file's at a time."""
    found: list[tuple[str, tuple[Any, ...]]] = []
    for kind, steps in leaf.shadowed_by:
        for rel, data in site.scenario.files.items():
            if isinstance(data, dict) and data.get("kind") == kind:
                found += [(rel, p) for p, present in _walk(data, steps, ()) if present and (rel, p) != (site.file,
                                                                                                       site.path)]
    own = [f for f in found if f[0] == site.file]
    others = [f for f in found if f[0] != site.file]
    for i, unset in enumerate([found] + [own + [o] for o in others]):
        files = copy.deepcopy(site.scenario.files)
        for rel, path in unset:
            node = files[rel]
            for k in path[:-1]:
                node = node[k]
            del node[path[-1]]
        yield Site(Scenario(f"{site.scenario.name}~unshadowed-{i}", files), site.file, site.path, site.present)


# -- other values ----------------------------------------------------------------------------------------
def constraints(leaf: LeafField) -> list[Any]:
    """The field's constraint objects (``Field`` metadata and those of nested ``Annotated`` types)."""
    found: list[Any] = list(leaf.info.metadata)

    def dig(tp: Any) -> None:
        if typing.get_origin(tp) is typing.Annotated:
            found.extend(typing.get_args(tp)[1:])
        for arg in typing.get_args(tp):  # the annotated type itself too
            dig(arg)

    dig(leaf.info.annotation)
    return found


def _numbers(leaf: LeafField) -> list[float]:
    out: list[float] = []
    for c in constraints(leaf):
        for attr in ("ge", "le", "gt", "lt"):
            v = getattr(c, attr, None)
            if isinstance(v, (int, float)) and not isinstance(c, at.MinLen):
                out.append(v + (1 if attr == "gt" else -1 if attr == "lt" else 0))
    return out


def _literals(tp: Any) -> list[Any]:
    return [a for m in _members(tp) if typing.get_origin(m) is Literal for a in typing.get_args(m)]


def _text_variants(s: str) -> list[str]:
    out = []
    digits = [m.start() for m in re.finditer(r"\d", s)]
    for pos in reversed(digits[-2:]):
        out.append(s[:pos] + str((int(s[pos]) + 1) % 10) + s[pos + 1:])
    out += [s + "x", s + "-x", "x" + s]
    return out


def _vary(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, list):
        return v + [_vary(v[-1]) if v else "x"]
    if isinstance(v, dict):
        return {**v, "x": "y"}
    return f"{v}x"


def candidates(leaf: LeafField, site: Site, pool: list[Any]) -> list[Any]:
    """Other values for the field at ``site``, most telling first (removal, another enum member,
    a neighbouring number, the boundaries, values the field has elsewhere, edited strings), then a
    few malformed ones (used only when no other valid value exists)."""
    current = site.value() if site.present else None
    tp = _strip(leaf.info.annotation)
    kinds = {typing.get_origin(m) or m for m in _members(tp)} - {type(None)}
    if kinds - {bool, int, float, list, dict, Literal, str}:
        kinds.add(str)  # HttpUrl and other string-like types
    raw: list[Any] = []
    if site.present and leaf.optional:
        raw.append(REMOVE)
    raw += _literals(tp)
    default = leaf.info.default if not leaf.info.is_required() else None
    base = current if site.present else default if default is not None else next(iter(pool), None)
    if bool in kinds:
        raw.append(not base)
    if kinds & {int, float}:
        n = base if isinstance(base, (int, float)) and not isinstance(base, bool) else 1
        low = next(iter(_numbers(leaf)), 0)
        raw += [low if n != low else n + 1, n + 1, n * 10, 999, n - 1, *_numbers(leaf), n // 2 if isinstance(n, int)
                else n / 2, 1, 8]
    if str in kinds:
        edited = _text_variants(base) if isinstance(base, str) else ["x", "a1", "https://example.com/x"]
        others = [v for v in pool if isinstance(v, str)]
        raw += others + edited if site.present else edited + others  # added: not the value it inherits
    if list in kinds:
        items = base if isinstance(base, list) else []
        more = [items + [v] for v in _text_variants(items[-1])] if items and isinstance(items[-1], str) else []
        raw += [items[:-1]] if items else []
        raw += more + [v for v in pool if isinstance(v, list)] + [[]]
        raw += [items + [x] for p in pool if isinstance(p, list) for x in p if x not in items]
        raw += [[x] for x in ("x", "a1", "Example", "@acme/x", 1, 535)]
    if dict in kinds:
        d = base if isinstance(base, dict) else {}
        raw += [dict(list(d.items())[:-1])] if d else []
        if d:
            k, v = list(d.items())[-1]
            raw += [{**d, k: _vary(v)}] + [{**d, kk: v} for kk in _text_variants(str(k))]
        raw += [v for v in pool if isinstance(v, dict)]
        raw += [{"example.com/x": ["y"]}, {"Example": True}, {"1g.10gb": 1}, {"example.com/x": "y"}]
    raw += ["x", -1]  # malformed: proves a check where no other valid value exists
    seen: list[Any] = []
    for c in raw:
        if c is REMOVE or not any(c == x and type(c) is type(x) for x in seen):
            same = c is not REMOVE and (c == current if site.present else c == default) and type(c) is type(
                current if site.present else default)
            if not same:
                seen.append(c)
    return seen


def apply(files: Files, site: Site, value: Any) -> Files:
    out = dict(files)
    data = out[site.file] = copy.deepcopy(files[site.file])
    node = data
    for k in site.path[:-1]:
        if isinstance(node, dict) and k not in node:
            node[k] = {}
        node = node[k]
    if value is REMOVE:
        del node[site.path[-1]]
    else:
        node[site.path[-1]] = value
    return out


def valid(files: Files, rel: str) -> bool:
    model: type[BaseModel] = FleetFile if rel == "fleet.yaml" else TeamFile
    try:
        model.model_validate(files[rel], strict=True)  # as the compiler reads a file
    except ValidationError:
        return False
    return True


# -- compiling -------------------------------------------------------------------------------------------
_POLICY_HASH = re.compile(rb'(Policy sha256: `|"policySha256": ")[0-9a-f]{64}')
_POLICY_LINE = re.compile(rb"(\.yaml):\d+(:\d+)?")


def _content(data: bytes) -> bytes:
    """A file's bytes without the digest of the policy sources (REPORT.md, allocation.json), which
    changes with any byte of any policy file, whatever the byte means, nor the line numbers of
    policy files (REPORT.md's waivers say where each is declared): a location, as for diagnostics,
    is not an effect of a field (removing a description above shifts it)."""
    return _POLICY_LINE.sub(rb"\1:-", _POLICY_HASH.sub(rb"\1-", data))


@dataclass
class Compiler:
    tmp: Path
    baselines: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    runs: int = 0

    def root(self, name: str) -> Path:
        return self.tmp / re.sub(r"[^a-z0-9]+", "-", name) / "repo"

    def write(self, name: str, files: Files) -> Path:
        root = self.root(name)
        for rel, data in files.items():
            path = root / "policies" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            text = yaml.safe_dump(data, sort_keys=False)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
        return root

    def fingerprint(self, name: str, files: Files) -> tuple[Any, ...]:
        root = self.write(name, files)
        self.runs += 1
        r = compile_policies(Options(root=root, policy_dir=root / "policies", out_dir=root / "out", verify=False))
        diags = tuple(sorted((d.code, d.severity.name, d.message) for d in r.diagnostics))
        out = tuple(sorted((k, hashlib.sha256(_content(r.out_files[k])).hexdigest()) for k in r.out_files))
        repo = tuple(sorted((k, hashlib.sha256(v).hexdigest()) for k, v in r.repo_files.items()))
        return diags, out, repo

    def compiles(self, sc: Scenario) -> bool:
        """Whether the case compiles without errors (its baseline, computed once)."""
        if sc.name not in self.baselines:
            self.baselines[sc.name] = self.fingerprint(sc.name, sc.files)
        return not any(d[1] == "ERROR" for d in self.baselines[sc.name][0])

    def baseline(self, sc: Scenario) -> tuple[Any, ...]:
        if sc.name not in self.baselines:
            self.baselines[sc.name] = self.fingerprint(sc.name, sc.files)
            errors = [d for d in self.baselines[sc.name][0] if d[1] == "ERROR"]
            assert not errors, f"scenario {sc.name} does not compile, so no mutation can show an effect: {errors}"
        return self.baselines[sc.name]

    def changes(self, site: Site, value: Any) -> str | None:
        """What compiling with ``value`` at ``site`` changes: None, or a short description."""
        base = self.baseline(site.scenario)
        try:
            now = self.fingerprint(site.scenario.name, apply(site.scenario.files, site, value))
        except Exception as exc:  # a valid policy must never crash the compiler
            raise AssertionError(f"compiling {site} = {value!r} crashed: {exc!r}") from exc
        self.write(site.scenario.name, site.scenario.files)  # restore the tree on disk
        if now == base:
            return None
        said = []
        if now[0] != base[0]:
            said.append("diagnostics " + ", ".join(sorted({d[0] for d in set(now[0]) ^ set(base[0])})))
        if now[1] != base[1] or now[2] != base[2]:
            changed = sorted(set(now[1]) ^ set(base[1]) | set(now[2]) ^ set(base[2]))
            said.append("output " + ", ".join(sorted({k for k, _ in changed})[:3]))
        return "; ".join(said)
