"""Diagnostic output formats (a registry, like check-jsonschema's reporters)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Sequence, TextIO

from compiler import escape
from compiler.diagnostics import Diagnostic, Severity
from compiler.load.secrets import redact

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_BOLD, _RESET = "\033[1m", "\033[0m"
_FRAME_WIDTH = 160  # characters of a source line shown in a code frame


def _frame(root: Path, d: Diagnostic, colour: bool) -> list[str]:
    """Two lines of context and a caret under the offending column."""
    loc = d.location
    if loc is None or loc.line <= 0:
        return []
    path = root / loc.file
    if path.is_symlink() or not path.is_file():  # only the policy files themselves (LOAD009)
        return []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
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


def format_text(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool) -> None:
    for d in diags:
        where = escape.text(str(d.location)) if d.location else "<policy>"
        sev = d.severity.value
        if colour:
            sev = f"{_COLOURS[d.severity]}{sev}{_RESET}"
            where = f"{_BOLD}{where}{_RESET}"
        print(f"{where}: {sev}[{d.code}] {escape.text(d.message)}", file=stream)
        for line in _frame(root, d, colour):
            print(line, file=stream)
        if d.hint:
            print(f"  hint: {escape.text(d.hint)}", file=stream)
    errors = sum(d.severity is Severity.ERROR for d in diags)
    warnings = sum(d.severity is Severity.WARNING for d in diags)
    if diags:
        print(f"{errors} error(s), {warnings} warning(s)", file=stream)


def format_json(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool) -> None:
    data = [
        {
            "rule": d.code,
            "severity": d.severity.value,
            "file": d.location.file if d.location else None,
            "line": d.location.line if d.location else None,
            "column": d.location.col if d.location else None,
            "path": d.path,
            "message": d.message,
            "hint": d.hint,
        }
        for d in diags
    ]
    json.dump(data, stream, indent=2)
    stream.write("\n")


def format_github(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool) -> None:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    for d in diags:
        props = [f"title={escape.gh_prop(d.code)}"]
        if d.location:
            props.insert(0, f"file={escape.gh_prop(d.location.file)}")
            if d.location.line:
                props.insert(1, f"line={d.location.line}")
                props.insert(2, f"col={d.location.col}")
        msg = d.message + (f" (hint: {d.hint})" if d.hint else "")
        print(f"::{level[d.severity]} {','.join(props)}::{escape.gh_data(msg)}", file=stream)


def format_parsable(diags: Sequence[Diagnostic], root: Path, stream: TextIO, colour: bool) -> None:
    for d in diags:
        where = escape.text(str(d.location)) if d.location else "<policy>"
        print(f"{where}: [{d.severity.value}] {d.code} {escape.text(d.message)}", file=stream)


FORMATS: dict[str, Callable[[Sequence[Diagnostic], Path, TextIO, bool], None]] = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "parsable": format_parsable,
}


def choose_format(requested: str | None) -> str:
    if requested:
        return requested
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
