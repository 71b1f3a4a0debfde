"""Glue between the pipeline and ``compiler.verify``: which CRDs, which Kubernetes versions."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic, Location, Severity
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.rules import define

NO_CRDS = define(
    "VERIFY900",
    "Custom resources are verified against CRDs: pass --crds DIR (or set GPUPOLICY_CRDS).",
    "gpupolicy build --crds ./crds",
    "gpupolicy build   # no CRD directory found",
    Severity.WARNING,
)


@lru_cache(maxsize=4)
def _registry(path: str) -> Any:
    from compiler.verify import CrdRegistry

    return CrdRegistry.load(Path(path))


def run_verify(
    policy: Policy, manifests: list[Manifest], crds: Path | None, *, strict: bool
) -> tuple[list[Diagnostic], dict[str, object]]:
    from compiler.verify import verify

    diags: list[Diagnostic] = []
    registry = None
    if crds is None:
        diags.append(NO_CRDS.diag("no CRD directory: custom resources were not verified",
                                  Location(policy.fleet_src.path),
                                  severity=Severity.ERROR if strict else Severity.WARNING))
    else:
        registry = _registry(str(crds.resolve()))
    from compiler.verify import kueue_config
    from compiler.lower.kueue import manager_config

    for cluster in sorted(policy.clusters):  # Helm values, not manifests: checked here
        diags.extend(kueue_config.check(manager_config(policy, cluster), cluster, Location(policy.fleet_src.path)))
    versions = {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters}
    result = verify(manifests, kube_versions=versions, crds=registry, strict=strict)
    found = list(result.diagnostics)
    if registry is None:
        # one summary instead of a warning per custom resource
        unverified = [d for d in found if d.code == "VERIFY009"]
        found = [d for d in found if d.code != "VERIFY009"]
        if unverified:
            diags[0] = NO_CRDS.diag(
                f"no CRD directory: {len(unverified)} custom resources were not verified",
                Location(policy.fleet_src.path), severity=Severity.ERROR if strict else Severity.WARNING,
                hint="pass --crds DIR or set GPUPOLICY_CRDS (README: validating against your cluster's CRDs)")
    if found:
        from compiler.emit.tree import render_manifest
        from compiler.verify.lines import add_lines

        by_path = {m.relpath: m for m in manifests}
        found = add_lines(found, lambda rel: render_manifest(by_path[rel]) if rel in by_path else None)
    diags.extend(found)
    return diags, result.stats.as_dict()
