"""The one registry of rule IDs (SPEC §9): ``<AREA><3 digits>``, each with a one-line summary and
a PASS/FAIL example. Modules define their rules next to the code that checks them with
``define(...)``; ``all_rules()`` imports every such module so the registry is complete.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from compiler.diagnostics import Diagnostic, Location, Severity

AREAS = ("LOAD", "SCHEMA", "FLEET", "KUEUE", "MIG", "DRA", "SERVE", "ADM", "GITOPS", "VERIFY")
_ID = re.compile(r"^(%s)\d{3}$" % "|".join(AREAS))


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    passing: str  # a YAML (or prose) example that passes
    failing: str  # a YAML (or prose) example that fails
    severity: Severity = Severity.ERROR

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


_REGISTRY: dict[str, Rule] = {}

# Modules that define rules; imported by all_rules() so docs and tests see every rule.
RULE_MODULES: tuple[str, ...] = (
    "compiler.load.source",
    "compiler.validate.schema",
    "compiler.verify",
    "compiler.catalog",
    "compiler.mig",
    "compiler.policy.partition",
    "compiler.verify.kueue_config",
    "compiler.validate.semantic",
    "compiler.validate.capacity",
    "compiler.validate.admission",
    "compiler.serving.checks",
    "compiler.policy.multikueue_topology",
    "compiler.policy.gitops_names",
    "compiler.dra.rules",
)


def define(
    id: str, summary: str, passing: str, failing: str, severity: Severity = Severity.ERROR
) -> Rule:
    if not _ID.match(id):
        raise ValueError(f"rule ID {id!r} is not <AREA><3 digits>")
    existing = _REGISTRY.get(id)
    if existing is not None:
        if existing.summary != summary:
            raise ValueError(f"rule {id} defined twice")
        return existing
    rule = Rule(id, summary, passing, failing, severity)
    _REGISTRY[id] = rule
    return rule


def all_rules() -> dict[str, Rule]:
    for mod in RULE_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:  # a stage not written yet
            if exc.name != mod:
                raise
    return dict(sorted(_REGISTRY.items()))


def get(id: str) -> Rule:
    return _REGISTRY[id]
