"""Stage 1, load: policy files → plain data plus a map from every node to its file:line:col.

ruamel.yaml only *composes* the node graph (safe, YAML 1.2: ``yes`` stays a string); turning
nodes into Python values is done here so that every hazard becomes a located diagnostic
instead of an exception: non-UTF-8 bytes, control characters, a byte order mark inside the file,
a ``%YAML`` directive for another version, tabs and syntax errors, several documents in one
file, duplicate keys, unknown tags, merge keys, a reused anchor, alias bombs and absurd nesting
or size (those met before any value is made, and the LOAD rules: ``compiler.load.yaml_faults``).

Plain scalars are typed by YAML 1.2's core schema, as editors and the published JSON Schema read
them, not by ruamel's resolver, which also takes YAML 1.1's number forms (``0b1000``, ``1_000``,
``+0x1F``): those stay text (see ``_Converter.scalar``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml import nodes as libyaml_nodes

from compiler.diagnostics import Diagnostic, Location
from compiler.load.files import read_inputs
from compiler.load.secrets import check_secrets
from compiler.load.yaml_faults import (
    LOAD_DOCS,
    LOAD_DUPKEY,
    LOAD_KEY,
    LOAD_LIMIT,
    LOAD_TAG,
    MAX_DEPTH,
    MAX_NODES,
    composed,
    decoded,
)

YamlPath = tuple[str | int, ...]
Positions = tuple[dict[YamlPath, tuple[int, int]], dict[YamlPath, tuple[int, int]]]  # values, keys


@dataclass
class SourceFile:
    """One loaded policy file: its data and where each node came from."""

    path: str  # display path, repo-relative (e.g. policies/teams/ml.yaml)
    text: str
    data: Any
    # 1-based (line, col) of each value node, and of each mapping key, by path.
    positions: dict[YamlPath, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[YamlPath, tuple[int, int]] = field(default_factory=dict)
    # Supplies both position tables on first use (the incremental cache: a run locates nodes of
    # a few files, if any, so the other thousand tables are never read).
    lazy_positions: Callable[[], Positions] | None = field(default=None, repr=False, compare=False)
    # Where ``data`` holds a null (``blank_paths``): kept with the parse by the incremental cache,
    # which then walks no stored file's data again (0.09 s of the rules' process at 5,000 teams).
    blanks: list[YamlPath] | None = field(default=None, repr=False, compare=False)

    def blank_paths(self) -> list[YamlPath]:
        if self.blanks is None:
            self.blanks = blank_paths(self.data)
        return self.blanks

    def locate(self, path: YamlPath, *, key: bool = False) -> Location:
        """Position of ``path``, or of its nearest ancestor that exists."""
        if self.lazy_positions is not None:
            self.positions, self.key_positions = self.lazy_positions()
            self.lazy_positions = None
        p = tuple(path)
        if key and p in self.key_positions:
            line, col = self.key_positions[p]
            return Location(self.path, line, col)
        while p:
            if p in self.positions:
                line, col = self.positions[p]
                return Location(self.path, line, col)
            p = p[:-1]
        return Location(self.path, *self.positions.get((), (1, 1)))


def blank_paths(data: Any, path: YamlPath = ()) -> list[YamlPath]:
    """Where ``data`` holds a null, depth first in document order (SCHEMA301's blanks). Recurses
    into containers only (a policy is mostly scalars: 90,000 nodes at 1,000 teams)."""
    out: list[YamlPath] = []
    _collect_blanks(data, path, out)
    return out


def _collect_blanks(data: Any, path: YamlPath, out: list[YamlPath]) -> None:
    if isinstance(data, dict):
        items: Any = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return
    for k, v in items:
        t = type(v)
        if t is str or t is int:  # most values: nothing below them
            continue
        if v is None:
            out.append(path + (k,))
        elif t is dict or t is list or isinstance(v, (dict, list)):
            _collect_blanks(v, path + (k,), out)


# YAML 1.2's core schema (yaml.org/spec/1.2.2, 10.3.2), which editors (yaml-language-server) and the
# JSON Schema in schemas/ read: the only number forms. ruamel's resolver tags more as int or float,
# also for YAML 1.2: YAML 1.1's binary (0b1000), underscores (1_000, 1_0.5), a signed or separated
# hex or octal (+0x1F, 0x_1F, -0o17): text to a YAML 1.2 reader, hence text here, which a field
# that takes a number refuses (SCHEMA002, with yaml_hints' "write 8"). 1:30 (YAML 1.1's base 60)
# is text to ruamel's 1.2 resolver already.
_CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_CORE_SPECIAL = {
    **{f"{sign}.{inf}": (-math.inf if sign == "-" else math.inf) for sign in ("", "+", "-") for inf in ("inf", "Inf", "INF")},
    **{f".{nan}": math.nan for nan in ("nan", "NaN", "NAN")},
}
_CORE_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_CORE_NULL = frozenset({"", "~", "null", "Null", "NULL"})
# Nodes come from ruamel or, for ordinary files, from libyaml (compiler.load.fast).
_MAPPING = (MappingNode, libyaml_nodes.MappingNode)
_SEQUENCE = (SequenceNode, libyaml_nodes.SequenceNode)
_SCALAR = (ScalarNode, libyaml_nodes.ScalarNode)


class _Converter:
    def __init__(self, src: SourceFile, diags: list[Diagnostic]) -> None:
        self.src = src
        self.diags = diags
        self.count = 0
        self.aborted = False

    def loc(self, node: Node) -> Location:
        return Location(self.src.path, node.start_mark.line + 1, node.start_mark.column + 1)

    def convert(self, node: Node, path: YamlPath, depth: int) -> Any:
        if self.aborted:
            return None
        self.count += 1
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            self.aborted = True
            what = f"more than {MAX_NODES} nodes" if self.count > MAX_NODES else f"nesting deeper than {MAX_DEPTH}"
            self.diags.append(
                LOAD_LIMIT.diag(
                    f"file has {what} (aliases expanded); refusing to load it",
                    self.loc(node),
                    hint="an alias/anchor chain that doubles at each level is a YAML bomb; write the values out",
                )
            )
            return None
        self.src.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        tag = str(getattr(node.tag, "value", node.tag) or "")
        if isinstance(node, _MAPPING):
            return self.mapping(node, path, depth, tag)
        if isinstance(node, _SEQUENCE):
            if tag not in ("tag:yaml.org,2002:seq", "", "!"):
                self.bad_tag(node, tag)
            return [self.convert(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, _SCALAR)
        return self.scalar(node, tag)

    def mapping(self, node: MappingNode, path: YamlPath, depth: int, tag: str) -> dict[str, Any]:
        if tag not in ("tag:yaml.org,2002:map", "", "!"):
            self.bad_tag(node, tag)
        out: dict[str, Any] = {}
        seen: dict[str, Node] = {}
        for knode, vnode in node.value:
            ktag = str(getattr(knode.tag, "value", knode.tag) or "")
            if ktag == "tag:yaml.org,2002:merge":
                self.diags.append(
                    LOAD_TAG.diag("merge keys (`<<`) are not allowed", self.loc(knode),
                                  hint="write the keys out; merges hide where a value comes from")
                )
                continue
            if not isinstance(knode, _SCALAR):
                self.diags.append(LOAD_KEY.diag("mapping key is not a plain string", self.loc(knode)))
                continue
            key = str(knode.value)
            if key in seen:
                first = seen[key].start_mark.line + 1
                self.diags.append(
                    LOAD_DUPKEY.diag(
                        f"duplicate key {key!r} (first defined on line {first})",
                        self.loc(knode),
                        hint="remove one of them; YAML would silently keep the last",
                        path=".".join(str(p) for p in path + (key,)),
                    )
                )
                continue
            seen[key] = knode
            self.src.key_positions[path + (key,)] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            out[key] = self.convert(vnode, path + (key,), depth + 1)
        return out

    def scalar(self, node: ScalarNode, tag: str) -> Any:
        """The value of a scalar by YAML 1.2's core schema: an int, float, bool or null tag (resolved
        from a plain scalar, or explicit: ``!!int 8``) whose text is not that type's core form is
        text, as a YAML 1.2 reader has it (``0b1000``, ``1_000``; ``!!bool yes``)."""
        value = str(node.value)
        if tag == "tag:yaml.org,2002:str" or tag == "!":
            return value
        if tag == "tag:yaml.org,2002:null":
            return None if value in _CORE_NULL else value
        if tag == "tag:yaml.org,2002:bool":
            return _CORE_BOOL.get(value, value)
        if tag == "tag:yaml.org,2002:int":
            if not _CORE_INT.fullmatch(value):
                return value
            digits = value.lstrip("+-")
            if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
                # 010: octal 8 to YAML 1.1, 10 to YAML 1.2. Text, so that where a number is meant
                # it is refused (SCHEMA002, with a hint) rather than either reading guessed.
                return value
            try:
                if digits[:2] in ("0o", "0x"):
                    return int(digits[2:], 8 if digits[1] == "o" else 16)
                return int(value)
            except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
                return value
        if tag == "tag:yaml.org,2002:float":
            if value in _CORE_SPECIAL:
                return _CORE_SPECIAL[value]
            return float(value) if _CORE_FLOAT.fullmatch(value) else value
        if tag == "tag:yaml.org,2002:timestamp":
            return value  # dates stay text; no policy field is a timestamp
        self.bad_tag(node, tag)
        return value

    def bad_tag(self, node: Node, tag: str) -> None:
        self.diags.append(
            LOAD_TAG.diag(f"tag {tag!r} is not allowed in policy files", self.loc(node),
                          hint="remove the tag; policy files use plain maps, lists and scalars")
        )


def load_text(display_path: str, raw: bytes) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Parse one file's bytes. Returns the source (None if unusable) and its diagnostics."""
    text, faults = decoded(display_path, raw)
    if text is None:
        return None, faults
    src = SourceFile(display_path, text, None)
    composed_docs, faults = composed(display_path, text)
    if composed_docs is None:
        return None, faults
    docs = [d for d in composed_docs if d is not None]
    whole = Location(display_path, 1, 1)
    if not docs:
        return None, [LOAD_DOCS.diag("file is empty", whole, hint="start with apiVersion and kind")]
    if len(docs) > 1:
        second = docs[1]
        return None, [
            LOAD_DOCS.diag(
                f"file holds {len(docs)} YAML documents; a policy file holds exactly one",
                Location(display_path, second.start_mark.line + 1, second.start_mark.column + 1),
                hint="split them into separate files (one team per file under teams/)",
            )
        ]
    diags: list[Diagnostic] = []
    conv = _Converter(src, diags)
    src.data = conv.convert(docs[0], (), 0)
    if conv.aborted:
        return None, diags
    diags += check_secrets(src.data, src.locate)  # LOAD010: no credentials in any string
    return src, diags

@dataclass
class PolicySources:
    fleet: SourceFile | None
    teams: list[SourceFile]


def load_sources(files: list[tuple[str, bytes | None, bool]]) -> tuple[PolicySources, list[Diagnostic]]:
    """Parse (display path, bytes, is the fleet file) triples; unreadable files are skipped."""
    diags: list[Diagnostic] = []
    fleet: SourceFile | None = None
    teams: list[SourceFile] = []
    for shown, raw, is_fleet in files:
        if raw is None:
            continue
        src, d = load_text(shown, raw)
        diags.extend(d)
        if src is None:
            continue
        if is_fleet:
            fleet = src
        else:
            teams.append(src)
    return PolicySources(fleet, teams), diags


def load_policy_dir(policy_dir: Path, display_root: Path) -> tuple[PolicySources, list[Diagnostic]]:
    """Every policy file read (``compiler.load.files.read_inputs``) and parsed."""
    blobs, diags = read_inputs(policy_dir, display_root)
    sources, more = load_sources(blobs)
    return sources, diags + more
