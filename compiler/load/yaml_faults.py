"""What can be wrong with a policy file as YAML, as located diagnostics: the LOAD rules, and
the two steps of ``compiler.load.source.load_text`` that meet them before any value is made:
decoding the bytes (size, UTF-8, byte order marks) and composing the node graph (nesting depth,
``%YAML`` directives, control characters, syntax errors, reused anchors), each fault reported
where it is, on one line with a hint.
"""

from __future__ import annotations

import re
import unicodedata
import warnings

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError
from ruamel.yaml.nodes import Node
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.tokens import DirectiveToken

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define
from compiler.load.fast import compose as compose_fast
from compiler.load.files import MAX_FILE_BYTES

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


RULES: tuple[Rule, ...] = (LOAD_SYNTAX, LOAD_ENCODING, LOAD_DOCS, LOAD_DUPKEY, LOAD_TAG, LOAD_LIMIT, LOAD_KEY)


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


def decoded(display_path: str, raw: bytes) -> tuple[str | None, list[Diagnostic]]:
    """A file's text (a leading byte order mark dropped), or None with why it cannot be read as one."""
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
    return text, []


def composed(display_path: str, text: str) -> tuple[list[Node] | None, list[Diagnostic]]:
    """The file's documents as node graphs (libyaml's fast path, else ruamel's), or None with
    the fault that stops them."""
    whole = Location(display_path, 1, 1)
    deep = _too_deep(text)
    if deep is not None:  # the parsers recurse per level: refuse before they overflow the stack
        return None, [LOAD_LIMIT.diag(f"file nests deeper than {MAX_DEPTH} levels", Location(display_path, *deep),
                                      hint="policy files are a few levels deep; close the brackets")]
    fast = compose_fast(text)
    if fast is not None:
        return [fast], []
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
    return (None, reused) if reused else (docs, [])
