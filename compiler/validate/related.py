"""Diagnostics on every file that contributes (issue 20): a constraint that spans files (capacity in
fleet.yaml against guarantees in team files, a namespace claimed by two teams, a pin in the fleet
that breaks a team's deployment) is one error, located where the fix most likely belongs, plus a
note (severity ``info``, same rule ID) on each other file that contributes, naming the file the
error is on. So every file of a pull request that takes part shows the problem (GitHub annotates
each), and one root cause still counts as one error.

When the files a change touched are known (``compiler.diagnostics.prioritise``: the commands order
by it without importing the validate stage), the error moves to a touched file that contributes, and
touched files are listed first.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.diagnostics import ERROR_FILE, Diagnostic, Location, Rule, Severity

__all__ = ["ERROR_FILE", "related"]


def related(rule: Rule, message: str, location: Location, error_file: str, hint: str | None = None) -> Diagnostic:
    """A note of ``rule`` at ``location`` about an error reported in ``error_file``."""
    note = rule.diag(message, location, severity=Severity.INFO,
                     hint=hint or f"related to the {rule.id} error in {error_file}")
    return replace(note, extra=((ERROR_FILE, error_file),))
