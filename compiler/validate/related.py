"""Diagnostics on every file that contributes (issue 20): a constraint that spans files (capacity in
fleet.yaml against guarantees in team files, a namespace claimed by two teams, a pin in the fleet
that breaks a team's deployment) is one error, located where the fix most likely belongs, plus a
note (severity ``info``, same rule ID) on each other file that contributes, naming the file the
error is on. So every file of a pull request that takes part shows the problem (GitHub annotates
each), and one root cause still counts as one error.

When the files a change touched are known (``prioritise``), the error moves to a touched file that
contributes, and touched files are listed first.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from compiler.diagnostics import Diagnostic, Location, Rule, Severity, sort_diagnostics

ERROR_FILE = "error_file"  # Diagnostic.extra key of a note: the file its rule's error is on


def related(rule: Rule, message: str, location: Location, error_file: str, hint: str | None = None) -> Diagnostic:
    """A note of ``rule`` at ``location`` about an error reported in ``error_file``."""
    note = rule.diag(message, location, severity=Severity.INFO,
                     hint=hint or f"related to the {rule.id} error in {error_file}")
    return replace(note, extra=((ERROR_FILE, error_file),))


def _file(d: Diagnostic) -> str:
    return d.location.file if d.location is not None else ""


def prioritise(diags: Iterable[Diagnostic], touched: frozenset[str]) -> list[Diagnostic]:
    """Sorted diagnostics, those on ``touched`` files first. An error on an untouched file whose
    rule left a note on a touched file moves there (the note's place, the error's message), and a
    note takes its old place: the author of the change sees the error on a file they edited."""
    out = list(diags)
    if not touched:
        return sort_diagnostics(out)
    for i, e in enumerate(out):
        if e.severity is Severity.INFO or _file(e) in touched or e.location is None:
            continue
        for j, n in enumerate(out):
            if (n.severity is Severity.INFO and n.code == e.code and dict(n.extra).get(ERROR_FILE) == _file(e)
                    and _file(n) in touched and n.location is not None):
                out[i] = replace(e, location=n.location)
                out[j] = replace(e, location=e.location, severity=Severity.INFO,
                                 hint=f"related to the {e.code} error in {_file(n)}",
                                 extra=((ERROR_FILE, _file(n)),))
                break
    ordered = sort_diagnostics(out)
    return [d for d in ordered if _file(d) in touched] + [d for d in ordered if _file(d) not in touched]
