"""Line and column for verify findings: ``out/<path>.yaml:12:7`` rather than the file alone.

A finding names its object's file and a JSON path (``spec.resourceGroups[0].flavors[1]``). The
file is what the compiler renders, so it is parsed back with the policy loader, which records a
position for every node, and the path is located in it (the nearest existing ancestor when the
path names something absent, such as a missing required field). Findings are rare, so this
runs on them only, after verification.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterable

from compiler.diagnostics import Diagnostic, Location
from compiler.load.source import SourceFile, load_text

_PART = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def parse_path(text: str) -> tuple[str | int, ...]:
    """The inverse of ``context.format_path``; ``[3]`` is an index, ``[a.b/c]`` a map key."""
    out: list[str | int] = []
    for name, bracket in _PART.findall(text):
        if name:
            out.append(name)
        elif bracket.isdigit():
            out.append(int(bracket))
        else:
            out.append(bracket)
    return tuple(out)


def add_lines(diags: Iterable[Diagnostic], rendered: Callable[[str], bytes | None]) -> list[Diagnostic]:
    """``diags`` with each ``out/`` file location given the line of its JSON path; ``rendered``
    returns a file's bytes by its ``out/``-relative path (None: leave the finding as it is)."""
    sources: dict[str, SourceFile | None] = {}
    out = []
    for d in diags:
        loc = d.location
        if loc is None or loc.line or not loc.file.startswith("out/"):
            out.append(d)
            continue
        rel = loc.file[len("out/"):]
        if rel not in sources:
            data = rendered(rel)
            sources[rel] = None if data is None else load_text(loc.file, data)[0]
        src = sources[rel]
        if src is None:
            out.append(d)
            continue
        found = src.locate(parse_path(d.path or ""))
        out.append(replace(d, location=Location(loc.file, found.line, found.col)))
    return out
