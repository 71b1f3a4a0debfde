"""Where a verify finding points: the emitted file, the object, and a JSON path inside it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from compiler.diagnostics import Diagnostic, Location, Rule, Severity
from compiler.model.manifest import Manifest

PathPart = str | int
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def format_path(parts: Iterable[PathPart]) -> str:
    """``spec.resourceGroups[0].flavors[1]``; map keys that are not identifiers go in brackets,
    as the API server prints them (``metadata.labels[gpupolicy.dev/team]``)."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{part}]")
    return "".join(out)


@dataclass
class VerifyStats:
    """What verify looked at: objects per (apiVersion, kind) and how many CEL rules ran."""

    objects: Counter[tuple[str, str]] = field(default_factory=Counter)
    cel_rules_evaluated: int = 0
    transition_rules_skipped: int = 0
    cel_rules_unsupported: int = 0
    cel_skipped_invalid_objects: int = 0
    webhook_checks: int = 0
    embedded_expressions: int = 0  # device selectors and policy expressions compiled

    @property
    def total_objects(self) -> int:
        return sum(self.objects.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "objects": {f"{av} {k}": n for (av, k), n in sorted(self.objects.items())},
            "total_objects": self.total_objects,
            "cel_rules_evaluated": self.cel_rules_evaluated,
            "transition_rules_skipped": self.transition_rules_skipped,
            "cel_rules_unsupported": self.cel_rules_unsupported,
            "cel_skipped_invalid_objects": self.cel_skipped_invalid_objects,
            "webhook_checks": self.webhook_checks,
            "embedded_expressions": self.embedded_expressions,
        }


class ObjectContext:
    """Collects diagnostics about one manifest, each naming its kind/name and JSON path."""

    __slots__ = ("manifest", "location", "label", "diagnostics")

    def __init__(self, manifest: Manifest, diagnostics: list[Diagnostic]) -> None:
        self.manifest = manifest
        self.location = Location(f"out/{manifest.relpath}")
        name = manifest.name or "<unnamed>"
        ns = manifest.namespace
        self.label = f"{manifest.kind or '<no kind>'} {ns + '/' if ns else ''}{name}"
        self.diagnostics = diagnostics

    def report(
        self,
        rule: Rule,
        path: Sequence[PathPart] | str,
        message: str,
        *,
        hint: str | None = None,
        severity: Severity | None = None,
    ) -> None:
        where = path if isinstance(path, str) else format_path(path)
        text = f"{self.label}: {where}: {message}" if where else f"{self.label}: {message}"
        self.diagnostics.append(
            rule.diag(text, self.location, hint=hint, path=where or None, severity=severity)
        )
