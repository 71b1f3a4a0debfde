"""Glue between the pipeline and ``compiler.verify``: which CRDs, which Kubernetes versions."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

import compiler.verify.kueue_config as kueue_config
from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, define
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.policy.kueue_manager import manager_config
from compiler.verify.context import VerifyStats
from compiler.verify.lines import add_lines
from compiler.verify.registry import CrdRegistry
from compiler.verify.stage import verify

UNVERIFIED = "VERIFY009"  # a custom resource with no CRD to check it against
UNSUPPORTED = "VERIFY006"  # a CRD's CEL rule the engine cannot compile

NO_CRDS = define(
    "VERIFY900",
    "Custom resources are verified against CRDs: pass --crds DIR (or set GPUPOLICY_CRDS).",
    "gpupolicy build --crds ./crds",
    "gpupolicy build   # no CRD directory found",
    Severity.WARNING,
    scope=Scope.OUTPUT,
)


RULES: tuple[Rule, ...] = (NO_CRDS,)


@lru_cache(maxsize=4)
def _registry(path: str) -> CrdRegistry:
    return CrdRegistry.load(Path(path))


class Verifier:
    """Verifies rendered objects for one policy: each cluster's Kubernetes version, the CRDs of
    ``crds`` (or none: custom resources are then counted, see ``run_level``). Findings are placed
    on the line of the rendered file (``rendered(relpath)`` gives its bytes)."""

    def __init__(self, policy: Policy, crds: Path | None, *, strict: bool) -> None:
        self.registry = None if crds is None else _registry(str(crds.resolve()))
        self.versions = {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters}
        self.version_at = {c.name: policy.fleet_src.locate(("spec", "clusters", i, "kubernetesVersion"))
                           for i, c in enumerate(policy.fleet.spec.clusters)}
        self.strict = strict

    def __call__(self, manifests: list[Manifest], rendered: Callable[[str], bytes | None]
                 ) -> tuple[list[Diagnostic], VerifyStats]:
        result = verify(manifests, kube_versions=self.versions, crds=self.registry, strict=self.strict,
                        version_at=self.version_at)
        return add_lines(result.diagnostics, rendered), result.stats


def run_level(policy: Policy, found: list[Diagnostic], crds: Path | None, *, strict: bool) -> list[Diagnostic]:
    """What verify reports once per run, whatever units the objects were verified in: the Kueue
    manager Configurations (Helm values, not manifests), one VERIFY900 summary instead of a
    VERIFY009 per custom resource when there is no CRD directory, and each CEL rule the engine
    cannot compile once (VERIFY006, on the first object in out/ order that has it)."""
    where = Location(policy.fleet_src.path)
    severity = Severity.ERROR if strict else Severity.WARNING
    diags: list[Diagnostic] = []
    if crds is None:
        unverified = sum(1 for d in found if d.code == UNVERIFIED)
        found = [d for d in found if d.code != UNVERIFIED]
        diags.append(NO_CRDS.diag(
            f"no CRD directory: {unverified} custom resources were not verified", where, severity=severity,
            hint="pass --crds DIR or set GPUPOLICY_CRDS (README: validating against your cluster's CRDs)")
            if unverified else NO_CRDS.diag("no CRD directory: custom resources were not verified", where,
                                            severity=severity))
    for cluster in sorted(policy.clusters):
        diags.extend(kueue_config.check(manager_config(policy, cluster), cluster, where))
    seen: set[tuple[str, str | None, str | None]] = set()
    for d in sorted(found, key=Diagnostic.sort_key) if any(d.code == UNSUPPORTED for d in found) else found:
        if d.code == UNSUPPORTED:
            if (d.message, d.path, d.hint) in seen:
                continue
            seen.add((d.message, d.path, d.hint))
        diags.append(d)
    return diags
