"""Diagnostic output formats (a registry, like check-jsonschema's reporters), the colour choice
and the positions of file-level findings.

Every format names each rule's page (``compiler.diagnostics.rule_url``): a ``url`` field in JSON,
``helpUri`` in SARIF, a ``see`` line in GitHub annotations and JUnit failures, and in text on a
terminal known to show links the rule ID itself as a hyperlink (OSC 8), as ruff does, so plain
text stays compact.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import Protocol, Sequence, TextIO

from compiler import escape
from compiler.diagnostics import Diagnostic, Location, Severity, rule_url, sort_diagnostics
from compiler.load.secrets import redact

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_BOLD, _RESET = "\033[1m", "\033[0m"
_FRAME_WIDTH = 160  # characters of a source line shown in a code frame
WHOLE_FILE = "whole_file"  # Diagnostic.extra key: the finding is about the file, placed at its start


class Renderer(Protocol):
    def __call__(self, diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                 strict: bool = False) -> None: ...


def use_colour(stream: TextIO) -> bool:
    """Colour on a terminal; ``FORCE_COLOR`` (https://force-color.org) forces it anywhere and
    ``NO_COLOR`` (https://no-color.org) turns it off, each when set and not empty. force-color.org's
    reference implementation reads ``FORCE_COLOR`` last, so it wins when both are set."""
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


# -- file-level findings get a real position -------------------------------------------------------

_HEAD = 4096  # bytes read first to find a document's start (a header comment is shorter)
_MAX_HEAD = 65536  # and at most, however long the comments; policy files are at most 1 MiB (LOAD006)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # YAML 1.2's, as positions count lines; str.splitlines also breaks at
# FF, VT, FS-RS, NEL, LS and PS, which are no line breaks to YAML 1.2 (and may sit inside quoted text)


def _first_content(text: str) -> tuple[int, int] | None:
    for n, raw in enumerate(_LINE_BREAK.split(text), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("%") or stripped == "---":
            continue
        if stripped.startswith("--- "):  # content on the marker's line, unless only a comment
            if stripped[4:].lstrip().startswith("#"):
                continue
            return n, len(raw) - len(raw[4:].lstrip()) + 1
        return n, len(raw) - len(raw.lstrip()) + 1
    return None


def document_start(text: str) -> tuple[int, int]:
    """Line and column (1-based) of the first YAML content: after blank lines, comments, ``%``
    directives and the ``---`` marker (1:1 for a file that is all of those)."""
    return _first_content(text) or (1, 1)


def _start_of(root: Path, rel: str, inside: dict[str, bool]) -> tuple[int, int] | None:
    """Where ``rel`` starts, for a plain file inside the repository: not a symbolic or hard link
    nor anything else LOAD009 refuses to read, in a directory that resolves inside the root
    (``inside``: that verdict per directory, as thousands of out/ files share a few)."""
    path = root / rel
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        parent = path.parent.as_posix()
        if parent not in inside:
            inside[parent] = path.parent.resolve().is_relative_to(root.resolve())
        if not inside[parent]:
            return None
        with path.open("rb") as f:  # a full regeneration makes thousands of out/ files stale: read little
            head = f.read(_HEAD)
            if len(head) == _HEAD and _first_content(head.decode("utf-8", errors="replace")) is None:
                head += f.read(_MAX_HEAD - _HEAD)  # comments all the way so far
    except (OSError, ValueError, RuntimeError):
        return None
    return document_start(head.decode("utf-8", errors="replace"))


def place_file_findings(diags: Sequence[Diagnostic], root: Path) -> list[Diagnostic]:
    """Findings about a whole file (line 0) placed at the start of its YAML document, so every
    format has a line and column (GitHub annotations and SARIF regions need one). A file that
    does not exist (a missing fleet.yaml, a missing generated file) keeps no position."""
    starts: dict[str, tuple[int, int] | None] = {}
    inside: dict[str, bool] = {}
    out = []
    for d in diags:
        loc = d.location
        if loc is None or loc.line > 0 or not loc.file:
            out.append(d)
            continue
        if loc.file not in starts:
            starts[loc.file] = _start_of(root, loc.file, inside)
        start = starts[loc.file]
        out.append(d if start is None else replace(
            d, location=Location(loc.file, *start), extra=(*d.extra, (WHOLE_FILE, "1"))))
    return out


# -- formats ------------------------------------------------------------------------------------

def _frame(root: Path, d: Diagnostic, colour: bool) -> list[str]:
    """Two lines of context and a caret under the offending column."""
    loc = d.location
    if loc is None or loc.line <= 0 or dict(d.extra).get(WHOLE_FILE):
        return []
    path = root / loc.file
    if path.is_symlink() or not path.is_file():  # only the policy files themselves (LOAD009)
        return []
    try:
        lines = _LINE_BREAK.split(path.read_bytes().decode("utf-8", errors="replace"))
    except OSError:
        return []
    if loc.line > len(lines):
        return []
    out = []
    width = len(str(loc.line))
    for n in range(max(1, loc.line - 1), loc.line + 1):
        shown = escape.text(redact(lines[n - 1]))  # a credential (LOAD010) is never printed back
        out.append(f"  {n:>{width}} | {shown[:_FRAME_WIDTH]}{' ...' if len(shown) > _FRAME_WIDTH else ''}")
    if loc.col > _FRAME_WIDTH or any(escape.text(redact(ln)) != ln for ln in lines[max(0, loc.line - 2):loc.line]):
        return out  # no caret where it cannot point at the right column
    caret = " " * (max(loc.col, 1) - 1) + "^"
    if colour:
        caret = _COLOURS[d.severity] + caret + _RESET
    out.append(f"  {' ' * width} | {caret}")
    return out


_LINK_PROGRAMS = frozenset({"Hyper", "iTerm.app", "terminology", "WezTerm", "vscode"})  # $TERM_PROGRAM
_LINK_TERMS = frozenset({"xterm-kitty", "alacritty", "alacritty-direct"})  # $TERM


def use_hyperlinks(stream: TextIO, colour: bool) -> bool:
    """Rule IDs as terminal links where the terminal is known to show them, as ruff decides through
    the ``supports-hyperlinks`` crate (``zkat/supports-hyperlinks``, ``src/lib.rs`` at 0a7728c5):
    ``FORCE_HYPERLINK`` (anything but ``0``) first; else a terminal, with colour, that is DomTerm,
    VTE >= 0.50, one of its TERM_PROGRAM / TERM values, xfce4-terminal, Windows Terminal or Konsole.
    Elsewhere (a CI log, an unknown terminal) the escape sequence could show as text."""
    forced = os.environ.get("FORCE_HYPERLINK")
    if forced is not None:
        return forced.strip() != "0"
    try:
        if not (colour and stream.isatty()):
            return False
    except ValueError:
        return False
    env = os.environ
    vte = env.get("VTE_VERSION", "")
    return ("DOMTERM" in env or (vte.isdigit() and int(vte) >= 5000) or env.get("TERM_PROGRAM") in _LINK_PROGRAMS
            or env.get("TERM") in _LINK_TERMS or env.get("COLORTERM") == "xfce4-terminal"
            or "WT_SESSION" in env or "KONSOLE_VERSION" in env)


def hyperlink(url: str, label: str) -> str:
    """``label`` as an OSC 8 terminal hyperlink to ``url`` (ruff links rule codes the same way);
    terminals without OSC 8 show the label alone. Only for trusted text: the rule registry's."""
    return f"\033]8;;{url}\033\\{label}\033]8;;\033\\"


def format_text(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                strict: bool = False) -> None:
    links = use_hyperlinks(stream, colour)
    for d in diags:
        where = escape.text(str(d.location)) if d.location else "<policy>"
        sev = d.severity.value
        code = d.code
        if colour:
            sev = f"{_COLOURS[d.severity]}{sev}{_RESET}"
            where = f"{_BOLD}{where}{_RESET}"
        if links:
            code = hyperlink(rule_url(d.code), d.code)
        print(f"{where}: {sev}[{code}] {escape.text(d.message)}", file=stream)
        for line in _frame(root, d, colour):
            print(line, file=stream)
        if d.hint:
            print(f"  hint: {escape.text(d.hint)}", file=stream)
    errors = sum(d.severity is Severity.ERROR for d in diags)
    warnings = sum(d.severity is Severity.WARNING for d in diags)
    if diags:
        print(f"{errors} error(s), {warnings} warning(s)", file=stream)


def json_records(diags: Sequence[Diagnostic]) -> list[dict[str, object]]:
    """The diagnostics as JSON values (the ``json`` format, and the ``diagnostics`` of a command's
    JSON document)."""
    return [
        {
            "rule": d.code,
            "severity": d.severity.value,
            "file": d.location.file if d.location else None,
            "line": d.location.line if d.location else None,
            "column": d.location.col if d.location else None,
            "path": d.path,
            "message": d.message,
            "hint": d.hint,
            "url": rule_url(d.code),
        }
        for d in diags
    ]


def format_json(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                strict: bool = False) -> None:
    json.dump(json_records(diags), stream, indent=2)
    stream.write("\n")


def format_github(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                  strict: bool = False) -> None:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    for d in diags:
        props = [f"title={escape.gh_prop(d.code)}"]
        if d.location:
            props.insert(0, f"file={escape.gh_prop(d.location.file)}")
            if d.location.line:
                props.insert(1, f"line={d.location.line}")
                props.insert(2, f"col={d.location.col}")
        msg = d.message + (f" (hint: {d.hint})" if d.hint else "") + f"\nsee {rule_url(d.code)}"
        print(f"::{level[d.severity]} {','.join(props)}::{escape.gh_data(msg)}", file=stream)


def format_parsable(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                    strict: bool = False) -> None:
    for d in diags:
        where = escape.text(str(d.location)) if d.location else "<policy>"
        print(f"{where}: [{d.severity.value}] {d.code} {escape.text(d.message)}", file=stream)


def format_sarif(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                 strict: bool = False) -> None:
    from compiler.cli.sarif import sarif_log

    json.dump(sarif_log(diags), stream, indent=2)
    stream.write("\n")


def format_junit(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool, *,
                 strict: bool = False) -> None:
    from compiler.cli.junit import junit_xml

    stream.write(junit_xml(diags, strict=strict))


FORMATS: dict[str, Renderer] = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "parsable": format_parsable,
    "sarif": format_sarif,
    "junit": format_junit,
}
DOCUMENT_FORMATS = frozenset({"json", "sarif", "junit"})  # one document on stdout, not lines on stderr


def choose_format(requested: str | None) -> str:
    if requested:
        return requested
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def print_to_stderr(diags: Sequence[Diagnostic], root: Path) -> None:
    """Diagnostics of a tool command (diff, init) on stderr, in the default format of this
    environment, coloured as ``use_colour`` decides (NO_COLOR, FORCE_COLOR)."""
    FORMATS[choose_format(None)](sort_diagnostics(diags), root, sys.stderr, use_colour(sys.stderr))
