"""Stage 1, load: policy files → plain data plus a map from every node to its file:line:col.

ruamel.yaml only *composes* the node graph (safe, YAML 1.2: ``yes`` stays a string); turning
nodes into Python values is done here so that every hazard becomes a located diagnostic
instead of an exception: non-UTF-8 bytes, control characters, a byte order mark inside the file,
a ``%YAML`` directive for another version, tabs and syntax errors, several documents in one
file, duplicate keys, unknown tags, merge keys, a reused anchor, alias bombs and absurd nesting
or size.

Plain scalars are typed by YAML 1.2's core schema, as editors and the published JSON Schema read
them, not by ruamel's resolver, which also takes YAML 1.1's number forms (``0b1000``, ``1_000``,
``+0x1F``): those stay text (see ``_Converter.scalar``).
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.tokens import DirectiveToken
from yaml import nodes as libyaml_nodes

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define
from compiler.load.fast import compose as compose_fast
from compiler.load.files import LOAD_MISSING, MAX_FILE_BYTES, read_inputs
from compiler.load.secrets import check_secrets

YamlPath = tuple[str | int, ...]
Positions = tuple[dict[YamlPath, tuple[int, int]], dict[YamlPath, tuple[int, int]]]  # values, keys

MAX_NODES = 100_000  # counted with aliases expanded, so an alias bomb stops here
MAX_DEPTH = 64

LOAD_SYNTAX = define(
    "LOAD001",
    "The file must be well-formed YAML 1.2 (no tabs for indentation, balanced brackets and quotes, no control "
    "characters or byte order mark inside it, no `%YAML` directive for another version).",
    "spec:\n  department: research",
    "spec:\n\tdepartment: research   # tab",
    scope=Scope.FILE,
)
LOAD_ENCODING = define(
    "LOAD002",
    "Policy files must be UTF-8 text.",
    "name: ml  # saved as UTF-8",
    "name: ml  # saved as Latin-1 with a byte 0xE9",
    scope=Scope.FILE,
)
LOAD_DOCS = define(
    "LOAD003",
    "A policy file holds exactly one YAML document, and it is not empty.",
    "apiVersion: gpupolicy.dev/v1alpha1\nkind: Team",
    "kind: Team\n---\nkind: Team",
    scope=Scope.FILE,
)
LOAD_DUPKEY = define(
    "LOAD004",
    "A mapping may not repeat a key (YAML would silently keep the last one).",
    "guaranteed: 4\nborrow: 2",
    "guaranteed: 4\nguaranteed: 8",
    scope=Scope.FILE,
)
LOAD_TAG = define(
    "LOAD005",
    "Only plain YAML types are allowed: no custom tags, binary, sets or merge keys (`<<`), and no anchor "
    "defined twice (an alias would refer to the later one).",
    "owners: ['@acme/ml']",
    "owners: !!python/object:os.system ls",
    scope=Scope.FILE,
)
LOAD_LIMIT = define(
    "LOAD006",
    "Files stay within the loader's limits (1 MiB, 100,000 nodes with aliases expanded, "
    "nesting depth 64), so an alias bomb or runaway file is refused, not expanded.",
    "a: &x [1, 2]\nb: *x",
    "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]   # ... doubling 30 times",
    scope=Scope.FILE,
)
LOAD_KEY = define(
    "LOAD007",
    "Mapping keys are plain strings.",
    "budgets: []",
    "? [a, b]\n: 1",
    scope=Scope.FILE,
)


RULES: tuple[Rule, ...] = (
    LOAD_SYNTAX, LOAD_ENCODING, LOAD_DOCS, LOAD_DUPKEY, LOAD_TAG, LOAD_LIMIT, LOAD_KEY, LOAD_MISSING,
)


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


def _too_deep(text: str) -> tuple[int, int] | None:
    """(line, col) where flow brackets, or block indentation, first nest deeper than MAX_DEPTH
    (quoted text and comments skipped); None for an ordinary file. Cheap, and exact enough: a
    real policy file is under ten levels deep."""
    depth = 0
    quote = ""
    line, col = 1, 0
    start = True  # at the start of a line: count its indentation
    comment = False
    for ch in text:
        col += 1
        if ch == "\n":
            line, col, start, comment = line + 1, 0, True, False
            continue
        if comment:
            continue
        if start:
            if ch == " ":
                if col > 2 * MAX_DEPTH:
                    return line, col
                continue
            start = False
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line, col
        elif ch in "]}":
            depth = max(0, depth - 1)
    return None


def text_position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of ``text[index]``, counted as ruamel's marks count them, so that a
    position found in the text agrees with the parser's: YAML 1.2 line breaks (LF, CRLF or a lone
    CR; not NEL, LS or PS), columns in characters, a byte order mark taking none."""
    head = text[:index]
    if head.endswith("\r") and text.startswith("\n", index):
        head = head[:-1]  # the CR of a CRLF is on its line: the LF breaks it
    line = head.count("\n") + head.count("\r") - head.count("\r\n") + 1
    start = max(head.rfind("\n"), head.rfind("\r")) + 1
    return line, index - start - text.count("\ufeff", start, index) + 1


_C0_NAMES = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC "
             "FS GS RS US").split()


def describe_char(code: int) -> str:
    """A character named for a message, never itself: ``control character U+001B (ESC)``."""
    if code < 0x20 or code == 0x7F:
        return f"control character U+{code:04X} ({_C0_NAMES[code] if code < 0x20 else 'DEL'})"
    if 0x80 <= code <= 0x9F:
        return f"control character U+{code:04X} (C1)"
    if code == 0xFEFF:
        return "byte order mark U+FEFF"
    if code in (0xFFFE, 0xFFFF):
        return f"noncharacter U+{code:04X}"
    name = unicodedata.name(chr(code), "") if not 0xD800 <= code <= 0xDFFF else "surrogate"
    return f"character U+{code:04X}" + (f" ({name})" if name else "")


def _reader_error(display_path: str, text: str, exc: ReaderError) -> Diagnostic:
    """A character YAML forbids (ruamel's reader names it by its index in ``text``), at its line and column."""
    position = exc.position if isinstance(exc.position, int) and 0 <= exc.position <= len(text) else 0
    code = exc.character if isinstance(exc.character, int) else ord(text[position]) if position < len(text) else 0
    if code == 0:
        hint = ("a NUL character: is the file UTF-16 or binary? Save it as UTF-8 text" if position < 2 else
                "delete it (editors often do not show it)")
    else:
        escaped = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        hint = (f"delete it (editors often do not show it; pasted terminal output?); a value that must hold it "
                f"writes the escape \"{escaped}\" inside double quotes")
    return LOAD_SYNTAX.diag(f"{describe_char(code)}: YAML does not allow it in a file, not even inside quotes",
                            Location(display_path, *text_position(text, position)), hint=hint)


_DIRECTIVE_LINE = re.compile(r"^%", re.MULTILINE)


def _version_directive(display_path: str, text: str) -> Diagnostic | None:
    """A ``%YAML`` directive for a version other than 1.2. The directive switches ruamel (and editors)
    to that version's types, ``yes`` a boolean and ``010`` octal under 1.1, and ruamel fails on 1.3 with
    an assertion rather than an error, so it is refused before composing. Scans only a file with a
    line starting with ``%``: a directive's, or a syntax error's."""
    if _DIRECTIVE_LINE.search(text) is None:
        return None
    try:
        for token in YAML(typ="safe", pure=True).scan(text):
            if isinstance(token, DirectiveToken) and token.name == "YAML" and tuple(token.value or ()) != (1, 2):
                version = ".".join(map(str, token.value or ()))
                older = " (under YAML 1.1, yes would be a boolean and 010 octal 8)" if token.value < (1, 2) else ""
                return LOAD_SYNTAX.diag(
                    f"%YAML {version} directive: policy files are YAML 1.2, the version gpupolicy and editors read",
                    Location(display_path, token.start_mark.line + 1, token.start_mark.column + 1),
                    hint=f"delete the directive line{older}")
    except MarkedYAMLError:
        return None  # a syntax error: composing reports it, with the parser's context
    return None


_TUPLE_REPR = re.compile(r"\('([^']*)',\)")  # ruamel's "but found ('<scalar>',)"
_ANCHOR_AT = re.compile(r"second occurrence\s+in \"[^\"]*\", line (\d+), column (\d+)")
_ANCHOR_NAME = re.compile(r"found duplicate anchor '([^']*)'")


def _one_line(s: str) -> str:
    return _TUPLE_REPR.sub(r"'\1'", " ".join(str(s).split()))


def _syntax_hint(problem: str, context: str) -> str:
    if "\\t" in problem or "\t" in problem:
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "a value holding ': ' needs quotes; else check the indentation of this line and the one above"
    if "quoted scalar" in context and "end of stream" in problem:
        return "close the quote this value opens"
    if "flow" in context:
        return "close the bracket, and separate items with ','"
    if "undefined alias" in problem:
        return "define the anchor (&name) before the alias (*name) that repeats it, or write the value out"
    if "<document start>" in problem:
        return "a line after a %-directive starts the document: ---"
    if "escape character" in problem:
        return "in double quotes a backslash starts an escape: write \\\\ for a backslash, or use single quotes"
    return "check this line and the one above: indentation (spaces only), quotes, brackets and ': ' after keys"


def _syntax_error(display_path: str, exc: MarkedYAMLError) -> Diagnostic:
    """A scanner, parser or composer error, on one line at the problem's mark (else the context's),
    naming where the construct it is in began when that is elsewhere."""
    mark = exc.problem_mark or exc.context_mark
    loc = Location(display_path, mark.line + 1, mark.column + 1) if mark else Location(display_path, 1, 1)
    problem = _one_line(exc.problem or exc.context or "malformed YAML")
    context = _one_line(exc.context or "") if exc.problem else ""
    began = exc.context_mark
    if context and began is not None and mark is not None and (began.line, began.column) != (mark.line, mark.column):
        context = f"{context} (from line {began.line + 1}, column {began.column + 1})"
    message = f"YAML syntax error: {context}: {problem}" if context else f"YAML syntax error: {problem}"
    return LOAD_SYNTAX.diag(message, loc, hint=_syntax_hint(problem, context))


def _reused_anchors(display_path: str, caught: list[warnings.WarningMessage]) -> list[Diagnostic]:
    """ruamel warns, on stderr, when an anchor is defined twice; a located error here instead."""
    out = []
    for w in caught:
        if not issubclass(w.category, ReusedAnchorWarning):
            continue
        text = str(w.message)
        at, name = _ANCHOR_AT.search(text), _ANCHOR_NAME.search(text)
        out.append(LOAD_TAG.diag(
            f"anchor &{name.group(1) if name else '?'} is defined twice: an alias after this line refers to this "
            "value, one before it to the first",
            Location(display_path, int(at.group(1)), int(at.group(2))) if at else Location(display_path, 1, 1),
            hint="give each anchor its own name, or write the values out"))
    return out


def load_text(display_path: str, raw: bytes) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Parse one file's bytes. Returns the source (None if unusable) and its diagnostics."""
    whole = Location(display_path, 1, 1)
    if len(raw) > MAX_FILE_BYTES:
        return None, [LOAD_LIMIT.diag(f"file is over the limit of {MAX_FILE_BYTES} bytes", whole,  # read up to 1 more
                                      hint="a policy file is a page or two; this is generated, a data dump or not a policy file")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start].decode("utf-8")  # valid: the error is the first undecodable byte
        utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
        return None, [
            LOAD_ENCODING.diag(
                f"byte 0x{raw[exc.start]:02X} at offset {exc.start} is not valid UTF-8",
                Location(display_path, *text_position(before, len(before))),
                hint=(f"the file is UTF-16 (it starts with the byte order mark {raw[:2].hex(' ').upper()}); "
                      "save it as UTF-8") if utf16 else "save the file as UTF-8",
            )
        ]
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\ufeff" in text:  # YAML allows a byte order mark only at the start of the stream
        return None, [LOAD_SYNTAX.diag(
            "byte order mark U+FEFF inside the file: YAML allows one only at its very start",
            Location(display_path, *text_position(text, text.index("\ufeff"))),
            hint="delete it (it is invisible: files concatenated, or text pasted from a file saved with a BOM)")]
    src = SourceFile(display_path, text, None)
    deep = _too_deep(text)
    if deep is not None:  # the parsers recurse per level: refuse before they overflow the stack
        return None, [LOAD_LIMIT.diag(f"file nests deeper than {MAX_DEPTH} levels", Location(display_path, *deep),
                                      hint="policy files are a few levels deep; close the brackets")]
    fast = compose_fast(text)
    if fast is not None:
        docs = [fast]
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:  # ruamel's warnings become diagnostics
                warnings.simplefilter("always")
                try:
                    directive = _version_directive(display_path, text)
                    if directive is not None:
                        return None, [directive]
                    docs = list(YAML(typ="safe", pure=True).compose_all(text))
                except RecursionError:
                    return None, [LOAD_LIMIT.diag(f"file nests deeper than {MAX_DEPTH} levels", whole,
                                                  hint="policy files are a few levels deep")]
        except ReaderError as exc:
            return None, [_reader_error(display_path, text, exc)]
        except MarkedYAMLError as exc:
            return None, [_syntax_error(display_path, exc)]
        except YAMLError as exc:
            message = _one_line(str(exc))
            return None, [LOAD_SYNTAX.diag(f"YAML error: {message}", whole, hint=_syntax_hint(message, ""))]
        reused = _reused_anchors(display_path, caught)
        if reused:
            return None, reused
    docs = [d for d in docs if d is not None]
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
