"""Diagnostics as values: every problem the compiler finds, with a stable rule ID and a place.

Stages never print or exit; they return ``Diagnostic`` lists. The CLI sorts them, renders them
in the requested format and decides the exit code once (see ``exit_code``).

A ``Rule`` is what a diagnostic cites: declared with ``define`` in the module that emits it, its
check attached with ``@checks``; ``compiler.rules`` is the registry of them all.
"""

from __future__ import annotations

import difflib
import enum
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, TypeVar


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based position in a policy file; ``line == 0`` means 'the file as a whole' (the CLI shows
    such a finding at the start of the file's YAML document: ``cli.render.place_file_findings``)."""

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


# -- rules: what a diagnostic cites ---------------------------------------------------------------

AREAS = ("LOAD", "SCHEMA", "FLEET", "KUEUE", "MIG", "DRA", "SERVE", "ADM", "GITOPS", "VERIFY", "OPS")
RULE_ID = re.compile(r"^(%s)\d{3}$" % "|".join(AREAS))


class Scope(str, enum.Enum):
    """What a rule reads, hence when its verdict can change (and what a cache may key it on)."""

    FILE = "file"  # one policy file alone: loading, schema
    FLEET = "fleet"  # fleet.yaml and what derives from it (GPU classes, catalog); no team
    TEAM = "team"  # one team file against the fleet: its check is called as check(policy, team)
    POLICY = "policy"  # the fleet and every team together: cross-team claims, the allocation
    OUTPUT = "output"  # the rendered objects (lowered manifests, verify)


Check = Callable[..., Iterable["Diagnostic"]]
F = TypeVar("F", bound=Check)


@dataclass(frozen=True)
class Rule:
    """One rule: a stable ID ``<AREA><3 digits>`` (SPEC §9), a one-line summary, PASS/FAIL examples,
    its scope and, for a semantic rule, the check that emits it (attached with ``@checks(rule)``)."""

    id: str
    summary: str
    passing: str  # a YAML (or prose) example that passes
    failing: str  # a YAML (or prose) example that fails
    severity: Severity
    scope: Scope
    check: Check | None = field(default=None, compare=False, repr=False)
    # A policy-scope rule's findings about one team that read the fleet and that team alone, called
    # as team_part(policy, team) with the team-scope checks, so a store keeps them as it keeps
    # theirs (``per_team``); ``check`` finds the rest.
    team_part: Check | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not RULE_ID.match(self.id):
            raise ValueError(f"rule ID {self.id!r} is not <AREA><3 digits>")

    @property
    def area(self) -> str:
        return self.id[:-3]

    def diag(
        self,
        message: str,
        location: Location | None = None,
        *,
        hint: str | None = None,
        path: str | None = None,
        severity: Severity | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            code=self.id,
            message=message,
            location=location,
            severity=severity or self.severity,
            hint=hint,
            path=path,
        )


def define(
    id: str, summary: str, passing: str, failing: str, severity: Severity = Severity.ERROR, *, scope: Scope
) -> Rule:
    """A rule, declared in the module that emits it; ``compiler.rules`` collects every module's ``RULES``."""
    return Rule(id, summary, passing, failing, severity, scope)


def checks(*rules: Rule) -> Callable[[F], F]:
    """Declare ``fn`` as the check of ``rules`` (one rule, as a rule; several only while a check is
    not split yet). ``compiler.validate.driver`` runs it by the rules' scope."""

    def attach(fn: F) -> F:
        for rule in rules:
            if rule.check is not None:
                raise ValueError(f"rule {rule.id} already has a check ({rule.check.__name__})")
            if rule.scope is not rules[0].scope:
                raise ValueError(f"a check's rules share one scope: {rule.id} is {rule.scope.value}")
            object.__setattr__(rule, "check", fn)  # declared once, at import; compare=False keeps the hash
        return fn

    return attach


def per_team(*rules: Rule) -> Callable[[F], F]:
    """Declare ``fn`` as the per-team part of policy-scope ``rules`` (``Rule.team_part``): their
    findings about one team that read the fleet and that team only, which
    ``compiler.validate.driver`` runs with the team-scope checks (``tests/test_rule_scopes.py``
    holds it to that) and a store keeps with theirs, so a one-team edit runs it for one team."""

    def attach(fn: F) -> F:
        for rule in rules:
            if rule.scope is not Scope.POLICY:
                raise ValueError(f"only a policy-scope rule has a per-team part: {rule.id} is {rule.scope.value}")
            if rule.team_part is not None:
                raise ValueError(f"rule {rule.id} already has a per-team part ({rule.team_part.__name__})")
            object.__setattr__(rule, "team_part", fn)
        return fn

    return attach


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    unique = {(d.sort_key(), d.severity, d.hint, d.path): d for d in diags}
    return sorted(unique.values(), key=Diagnostic.sort_key)


ERROR_FILE = "error_file"  # Diagnostic.extra key of a related note: the file its rule's error is on


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


# Where the project lives and where each rule's page is (docs/rules/<ID>.md, generated from the
# registry). One place, so diagnostics, SARIF and the package metadata cannot disagree.
HOMEPAGE = "https://github.com/gpupolicy/gpupolicy"


def rule_url(code: str) -> str:
    """The documentation page of rule ``code`` (e.g. ``KUEUE004``)."""
    return f"{HOMEPAGE}/blob/main/docs/rules/{code}.md"


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
