"""What the store keeps for the pipeline's units, as small frozen records.

Each record converts to plain ``marshal``-able data (tuples, dicts, str, int, bytes) and back:
``compiler.cache.store`` never unpickles, so loading an entry cannot run code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from compiler.diagnostics import Diagnostic, Location, Severity
from compiler.model.manifest import Manifest

if TYPE_CHECKING:  # importing compiler.verify costs ~0.06 s, which a warm check does not need
    from compiler.verify.context import VerifyStats

DiagRecord = tuple[Any, ...]
StatsRecord = tuple[Any, ...]  # objects per (apiVersion, kind), then six counters
NO_STATS: StatsRecord = ({}, 0, 0, 0, 0, 0, 0)


def diag_out(d: Diagnostic) -> DiagRecord:
    loc = None if d.location is None else (d.location.file, d.location.line, d.location.col)
    return (d.code, d.message, loc, d.severity.value, d.hint, d.path, d.extra)


def diag_in(t: DiagRecord) -> Diagnostic:
    code, message, loc, sev, hint, path, extra = t
    return Diagnostic(code, message, None if loc is None else Location(*loc), Severity(sev), hint, path,
                      tuple(tuple(x) for x in extra))


def stats_out(stats: VerifyStats) -> StatsRecord:
    return (dict(stats.objects), stats.cel_rules_evaluated, stats.transition_rules_skipped,
            stats.cel_rules_unsupported, stats.cel_skipped_invalid_objects, stats.webhook_checks,
            stats.embedded_expressions)


def stats_total(parts: Iterable[StatsRecord]) -> StatsRecord:
    """One record of the objects and counters of ``parts``."""
    objects: Counter[Any] = Counter()
    ints = [0] * 6
    for kinds, *counts in parts:
        objects.update(kinds)
        ints = [a + b for a, b in zip(ints, counts)]
    return (dict(objects), *ints)


@dataclass(frozen=True)
class UnitRecord:
    """One team unit: its objects' inventory, what verify found, and what the OPS model reads of
    its files. The digests of its files are an entry of their own (kind ``files``): a run reads
    them only for the units that changed (``compiler.pipeline.run.Run.out_digests``); so is its
    part of CODEOWNERS (kind ``owners``), read by the child that renders CODEOWNERS
    (``compiler.pipeline.owners``)."""

    inventory: tuple[Any, ...]  # compiler.model.inventory.Inventory.to_record(); its rows: kind ``rows``
    diags: list[DiagRecord]
    stats: StatsRecord
    runtime: dict[str, Any]  # compiler.verify.runtime.file_facts of its inventory's files (the OPS model)

    def plain(self) -> tuple[Any, ...]:
        return (self.inventory, self.diags, self.stats, self.runtime)

    @classmethod
    def of(cls, value: Any) -> UnitRecord:
        return cls(*value)


@dataclass(frozen=True)
class RunRecord:
    """A whole run, keyed by every input: an unchanged tree is answered from this alone."""

    diags: list[DiagRecord]
    failed: bool
    units: list[str]  # keys of the team units, in order
    inline: dict[str, str]  # digests of the files rendered outside units
    glob: str  # the blob holding those files' bytes (the reports' are in ``homes``' blobs)
    repo: dict[str, str]  # digests of CODEOWNERS and schemas/ (the bytes: kind ``repo``, by digest)
    n: int  # objects
    stats: dict[str, object]  # verify statistics
    homes: dict[str, str] = field(default_factory=dict)  # files in blobs of their own -> the blob holding each
    pieces: list[str] = field(default_factory=list)  # the fragments those blobs' recipes name

    def plain(self) -> tuple[Any, ...]:
        return (self.diags, self.failed, self.units, self.inline, self.glob, self.repo, self.n, self.stats,
                self.homes, self.pieces)

    @classmethod
    def of(cls, value: Any) -> RunRecord:
        return cls(*value)

    @classmethod
    def failure(cls, diags: list[Diagnostic], stats: dict[str, object] | None = None) -> RunRecord:
        return cls([diag_out(d) for d in diags], True, [], {}, "", {}, 0, stats or {})


# What ``gpupolicy diff`` reads of an object both sides render identically
# (compiler.tools.diff_flags): whether it exists, for the kinds other objects name, and what it
# names, for the kinds that name others. Nothing else of such an object can raise a flag.
OUTLINED_KINDS = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "AdmissionCheck", "Topology"})
_REFERENCES = ("resourceGroups", "admissionChecksStrategy", "admissionChecks", "clusterQueue", "topologyName")
Outline = tuple[str, str, str, dict[str, Any], tuple[str, ...]]


def outline_out(m: Manifest) -> Outline | None:
    """An object reduced to its identity and its references to other objects (None for a kind
    that neither names nor is named)."""
    if m.kind not in OUTLINED_KINDS:
        return None
    meta = m.obj.get("metadata") or {}
    spec = m.obj.get("spec") or {}
    obj: dict[str, Any] = {"apiVersion": m.api_version, "kind": m.kind,
                           "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta}}
    if isinstance(spec, dict):
        obj["spec"] = {k: spec[k] for k in _REFERENCES if k in spec}
    return (m.relpath, m.cluster, m.component, obj, m.sources)


def outline_in(t: Outline) -> tuple[str, Manifest]:
    """(the object's out/ path, its outline as a manifest)."""
    relpath, cluster, component, obj, sources = t
    return relpath, Manifest(cluster, component, obj, tuple(sources))
