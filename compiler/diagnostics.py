"""Diagnostics as values: every problem the compiler finds, with a stable rule ID and a place.

Stages never print or exit; they return ``Diagnostic`` lists. The CLI sorts them, renders them
in the requested format and decides the exit code once (see ``exit_code``).
"""

from __future__ import annotations

import difflib

import enum
from dataclasses import dataclass, field
from typing import Iterable


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based position in a policy file; ``line == 0`` means 'the file as a whole'."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    location: Location | None = None
    severity: Severity = Severity.ERROR
    hint: str | None = None
    path: str | None = None  # breadcrumb inside the document, e.g. "spec.budgets[2].borrow"
    extra: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location or Location("")
        return (loc.file, loc.line, loc.col, self.code, self.message)


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.sort_key(), d.severity, d.hint, d.path): d for d in diags}
    return sorted(unique.values(), key=Diagnostic.sort_key)


def has_errors(diags: Iterable[Diagnostic], *, strict: bool = False) -> bool:
    """Errors fail the run; under ``--strict`` warnings do too."""
    for d in diags:
        if d.severity is Severity.ERROR or (strict and d.severity is Severity.WARNING):
            return True
    return False


EXIT_OK = 0
EXIT_POLICY = 1
EXIT_USAGE = 2


def exit_code(diags: Iterable[Diagnostic], *, strict: bool = False) -> int:
    return EXIT_POLICY if has_errors(diags, strict=strict) else EXIT_OK


class UsageError(Exception):
    """Bad command line or environment (exit 2), as opposed to a bad policy (exit 1)."""


# -- 'did you mean' suggestions, shared by every diagnostic that names an unknown thing --
def closest(value: str, options: Iterable[str]) -> str | None:
    """The option most like ``value`` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(value: str, options: Iterable[str]) -> str | None:
    match = closest(value, options)
    return None if match is None else f"did you mean {match!r}?"
