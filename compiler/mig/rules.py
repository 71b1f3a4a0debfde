"""MIG rule IDs (SPEC §9) and the problem value the MIG checks return.

Checks return ``MigProblem``s (rule + message + hint) rather than diagnostics because they do
not know where in a policy file the layout was written; the caller turns them into located
``Diagnostic``s with ``to_diagnostics(problems, location, path=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, define

UNKNOWN_PROFILE = define(
    "MIG001",
    "MIG profile does not exist for this GPU model (or has another name on the declared driver)",
    "gpu: a100-80gb\nmig: {devices: [{1g.10gb: 7}]}",
    "gpu: a100-80gb\nmig: {devices: [{1g.5gb: 7}]}   # 1g.5gb is an A100-40GB profile",
    scope=Scope.FLEET,
)
COUNT_OVER_MAX = define(
    "MIG002",
    "More instances of a MIG profile than one GPU can hold",
    "gpu: h100-80gb\nmig: {devices: [{1g.10gb: 7}]}",
    "gpu: h100-80gb\nmig: {devices: [{1g.10gb: 8}]}   # at most 7 per GPU",
    scope=Scope.FLEET,
)
NO_PLACEMENT = define(
    "MIG003",
    "MIG profiles do not fit one GPU: too many compute or memory slices, or no valid placement",
    "gpu: a100-80gb\nmig: {devices: [{3g.40gb: 1, 4g.40gb: 1}]}   # 4g at slices 0-3, 3g at 4-7",
    "gpu: a100-80gb\nmig: {devices: [{3g.40gb: 2, 1g.10gb: 1}]}   # needs 9 of 8 memory slices",
    scope=Scope.FLEET,
)
STRATEGY_MISMATCH = define(
    "MIG004",
    "MIG strategy does not match the layout (single needs one identical profile on every GPU)",
    "mig: {strategy: mixed, layout: all-balanced}",
    "mig: {strategy: single, layout: all-balanced}   # 3 profiles per GPU need mixed",
    scope=Scope.FLEET,
)
UNKNOWN_LAYOUT = define(
    "MIG005",
    "Named MIG layout does not exist for this GPU model",
    "gpu: a100-80gb\nmig: {layout: all-1g.10gb}",
    "gpu: a100-80gb\nmig: {layout: all-1g.5gb}   # a 40GB layout; the node ends up MIG-INVALID",
    scope=Scope.FLEET,
)
NOT_MIG_CAPABLE = define(
    "MIG006",
    "GPU model is not MIG-capable",
    "gpu: l4\ncut: {timeSlicing: {replicas: 4}}",
    "gpu: l4\nmig: {layout: all-1g.6gb}",
    scope=Scope.FLEET,
)
DRIVER_TOO_OLD = define(
    "MIG007",
    "MIG profile needs a newer driver branch than the one declared",
    "gpu: a30\ndriver: '535'\nmig: {devices: [{2g.12gb+me: 1}]}",
    "gpu: a30\ndriver: '470'\nmig: {devices: [{2g.12gb+me: 1}]}   # R525 and later",
    scope=Scope.FLEET,
)
BAD_DRIVER = define(
    "MIG008",
    "Driver version is not understood (expected a branch such as 535 or a full version 550.90.07)",
    "driver: '550.90.07'",
    "driver: latest",
    scope=Scope.FLEET,
)
EMPTY_DEVICE = define(
    "MIG009",
    "MIG is enabled on a GPU with no MIG devices, so the GPU offers no capacity",
    "mig: {devices: [{1g.10gb: 7}]}",
    "mig: {layout: all-enabled}",
    severity=Severity.WARNING,
    scope=Scope.FLEET,
)


RULES: tuple[Rule, ...] = (
    UNKNOWN_PROFILE, COUNT_OVER_MAX, NO_PLACEMENT, STRATEGY_MISMATCH, UNKNOWN_LAYOUT, NOT_MIG_CAPABLE,
    DRIVER_TOO_OLD, BAD_DRIVER, EMPTY_DEVICE,
)


@dataclass(frozen=True)
class MigProblem:
    rule: Rule
    message: str
    hint: str | None = None

    @property
    def code(self) -> str:
        return self.rule.id

    @property
    def severity(self) -> Severity:
        return self.rule.severity

    def __str__(self) -> str:
        return self.message

    def diagnostic(self, location: Location | None, *, path: str | None = None) -> Diagnostic:
        return self.rule.diag(self.message, location, hint=self.hint, path=path)


def to_diagnostics(
    problems: Iterable[MigProblem], location: Location | None, *, path: str | None = None
) -> list[Diagnostic]:
    return [p.diagnostic(location, path=path) for p in problems]
