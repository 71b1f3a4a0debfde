"""The verify stage: every emitted object is checked as the target API server would check it.

Built-in kinds go through the bundled Kubernetes JSON schemas of the cluster's version
(``builtin``); custom resources through their CRD's structural schema and CEL rules
(``structural``, ``custom``), then Kueue's webhook-only rules (``kueue_webhook``); every object's
metadata through ``meta``; CEL expressions inside objects through ``embedded_cel``. A kind that is neither built-in nor in the CRD registry is never a
silent pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import compiler.verify.rules as R
from compiler.diagnostics import Diagnostic, Location, Severity, has_errors
from compiler.model.manifest import Manifest
from compiler.verify.builtin import (
    ResolvedVersion,
    bundled_versions,
    is_builtin_group,
    resolve,
    split_api_version,
    version_schemas,
)
from compiler.verify.context import ObjectContext, VerifyStats
from compiler.verify.custom import report_schema_errors, verify_custom_resource
from compiler.verify.dra_claims import check_claim_template
from compiler.verify.embedded_cel import check_embedded_cel
from compiler.verify.kueue_webhook import check_kueue
from compiler.verify.meta import BUILTIN_CLUSTER_SCOPED, verify_metadata
from compiler.verify.registry import CrdEntry, CrdLoadError, CrdRegistry
from compiler.verify.structural import CrdSchema, compile_crd_schema

ARGOCD_CLUSTER = "argocd"


@dataclass
class VerifyResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    stats: VerifyStats = field(default_factory=VerifyStats)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


class _Versions:
    """Kubernetes version per cluster; ``argocd`` objects use the highest version given. A finding
    about a cluster's version is placed where ``version_at`` says the version is written (the
    fleet file's ``kubernetesVersion``): a finding without a location is one GitHub's SARIF upload
    rejects, with every other finding of the run (``compiler.cli.sarif``)."""

    def __init__(self, kube_versions: Mapping[str, str], diagnostics: list[Diagnostic],
                 version_at: Mapping[str, Location] | None = None) -> None:
        self.given = {k: str(v) for k, v in kube_versions.items()}
        self.diagnostics = diagnostics
        self.at = version_at or {}
        self.cache: dict[str, ResolvedVersion | None] = {}

    def for_cluster(self, cluster: str) -> ResolvedVersion | None:
        if cluster in self.cache:
            return self.cache[cluster]
        requested = self.given.get(cluster)
        if requested is None and cluster == ARGOCD_CLUSTER and self.given:
            candidates = [r for r in (resolve(v) for v in self.given.values()) if r]
            requested = max(candidates, key=lambda r: r.bundled).requested if candidates else None
        resolved = resolve(requested) if requested is not None else None
        at = self.at.get(cluster) or next((self.at.get(c) for c, v in self.given.items() if v == requested), None)
        if requested is None:
            self.diagnostics.append(R.NO_KUBE_VERSION.diag(
                f"cluster {cluster!r} has no Kubernetes version; its built-in objects are not checked "
                f"(known: {sorted(self.given) or 'none'})", at))
        elif resolved is None:
            self.diagnostics.append(R.NO_KUBE_VERSION.diag(
                f"cluster {cluster!r}: cannot read Kubernetes version {requested!r} (expected e.g. '1.34')", at))
        elif not resolved.exact:
            newest = bundled_versions()[-1]
            self.diagnostics.append(R.NEAREST_SCHEMAS.diag(
                f"cluster {cluster!r}: no bundled schemas for Kubernetes {requested}; using {resolved.label} "
                f"(bundled: 1.{bundled_versions()[0][1]}..{newest[0]}.{newest[1]})", at))
        self.cache[cluster] = resolved
        return resolved


class _Verifier:
    def __init__(self, kube_versions: Mapping[str, str], crds: CrdRegistry | None, strict: bool,
                 python_backend: bool, version_at: Mapping[str, Location] | None = None) -> None:
        self.result = VerifyResult()
        self.versions = _Versions(kube_versions, self.result.diagnostics, version_at)
        self.crds = crds
        self.strict = strict
        self.python_backend = python_backend
        self.unsupported_seen: set[str] = set()

    def run(self, manifests: Iterable[Manifest]) -> VerifyResult:
        for manifest in manifests:
            self.one(manifest)
        return self.result

    def one(self, m: Manifest) -> None:
        ctx = ObjectContext(m, self.result.diagnostics)
        obj = m.obj
        api_version, kind = (obj.get("apiVersion"), obj.get("kind")) if isinstance(obj, dict) else (None, None)
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            ctx.report(R.NOT_AN_OBJECT, "", "not a Kubernetes object: apiVersion and kind must be non-empty strings")
            return
        self.result.stats.objects[(api_version, kind)] += 1
        group, version = split_api_version(api_version)
        resolved = self.versions.for_cluster(m.cluster)
        classify_at = resolved.bundled if resolved else bundled_versions()[-1]
        if is_builtin_group(group, classify_at):
            self.builtin(obj, group, version, kind, resolved, ctx)
        else:
            self.custom(obj, group, version, kind, ctx)

    def builtin(self, obj: dict[str, Any], group: str, version: str, kind: str,
                resolved: ResolvedVersion | None, ctx: ObjectContext) -> None:
        verify_metadata(obj, ctx, cluster_scoped=kind in BUILTIN_CLUSTER_SCOPED, custom=False)
        if resolved is None:
            return  # reported once for the cluster
        validator = version_schemas(resolved.bundled).validator(group, version, kind)
        if validator is None:
            served = [v for v in bundled_versions() if version_schemas(v).validator(group, version, kind)]
            since = f"; bundled schemas have it from Kubernetes {served[0][0]}.{served[0][1]}" if served else ""
            ctx.report(R.NO_SCHEMA, "", f"Kubernetes {resolved.label} serves no {kind} in {obj['apiVersion']}{since}",
                       hint="raise the cluster's Kubernetes version or emit an apiVersion it serves")
            return
        schemas = version_schemas(resolved.bundled)
        report_schema_errors(ctx, validator.errors(obj), lambda path: schemas.fields_at(group, version, kind, path))
        self.result.stats.embedded_expressions += check_embedded_cel(obj, ctx)
        if kind == "ResourceClaimTemplate" and ctx.manifest.component == "dra":  # the ones Kueue counts
            check_claim_template(obj, ctx)

    def custom(self, obj: dict[str, Any], group: str, version: str, kind: str, ctx: ObjectContext) -> None:
        entry = self.crds.get(group, kind) if self.crds is not None else None
        if entry is None:
            where = "the CRD directory" if self.crds is not None else "any CRD directory (none given)"
            ctx.report(R.UNKNOWN_KIND, "", f"{kind} ({obj['apiVersion']}) is not a built-in kind and not defined by {where}",
                       hint="add its CustomResourceDefinition to --crds", severity=Severity.ERROR if self.strict else None)
            return
        compiled = self.compiled(entry, version, kind, ctx)
        if compiled is None:
            return
        schema, raw = compiled
        label = f"{kind}.{group}/{version}"
        defaulted = verify_custom_resource(obj, schema, raw, ctx, self.result.stats, self.unsupported_seen, label)
        verify_metadata(obj, ctx, cluster_scoped=entry.scope == "Cluster", custom=True)
        if group == "kueue.x-k8s.io":
            self.result.stats.webhook_checks += check_kueue(defaulted, ctx)

    def compiled(self, entry: CrdEntry, version: str, kind: str,
                 ctx: ObjectContext) -> tuple[CrdSchema, dict[str, Any]] | None:
        key = f"{version}:{'py' if self.python_backend else 'rs'}"
        cached = entry.cache.get(key)
        if cached is None:
            cached = self._compile(entry, version)
            entry.cache[key] = cached
        if isinstance(cached, str):
            rule = R.VERSION_NOT_SERVED if cached.startswith("version") else R.CRD_UNUSABLE
            ctx.report(rule, "apiVersion", cached.split(":", 1)[1].strip())
            return None
        return cached

    def _compile(self, entry: CrdEntry, version: str) -> tuple[CrdSchema, dict[str, Any]] | str:
        try:
            served = entry.served_versions()
            if version not in served:
                return f"version: the {entry.kind} CRD ({entry.source}) serves {served}, not {version!r}"
            schema = entry.schema(version)
        except (CrdLoadError, KeyError, TypeError) as exc:
            return f"crd: {exc}"
        if schema is None:
            return f"crd: the {entry.kind} CRD ({entry.source}) has no openAPIV3Schema for {version}"
        try:
            return compile_crd_schema(schema, python_backend=self.python_backend), schema
        except Exception as exc:  # a schema the JSON Schema compiler rejects
            return f"crd: the {entry.kind} CRD schema for {version} does not compile: {exc}"


def verify(
    manifests: Iterable[Manifest],
    kube_versions: Mapping[str, str],
    crds: CrdRegistry | None = None,
    strict: bool = False,
    *,
    python_backend: bool = False,
    version_at: Mapping[str, Location] | None = None,
) -> VerifyResult:
    """Check every manifest; see the module docstring. ``strict`` makes unknown kinds errors;
    ``version_at``: where each cluster's Kubernetes version is written (``_Versions``).

    ``python_backend=True`` validates with the pure-Python ``jsonschema`` (slow; for comparison).
    """
    return _Verifier(kube_versions, crds, strict, python_backend, version_at).run(manifests)
