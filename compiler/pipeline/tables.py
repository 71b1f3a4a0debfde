"""Objects rendered and verified through tables keyed by their content, kept in the store: the
fleet-scope objects are lowered again on every run (cluster passes read the allocation) and a
changed team unit is lowered whole, but after a one-team edit only the objects that changed are
rendered (kind ``rendered``) or verified (kind ``verified``, per team and for the fleet); CRDs are
parsed once (kind ``crd``). Apart from ``compiler.pipeline.stages`` so that each stays short.
"""

from __future__ import annotations

import marshal
from typing import Any

import yaml

from compiler.cache.records import DiagRecord, StatsRecord, diag_in, diag_out, stats_out
from compiler.cache.store import Store, digest
from compiler.diagnostics import Diagnostic
from compiler.emit.tree import render_manifest
from compiler.model.manifest import Manifest
from compiler.pipeline.run import Run


def render_fleet(run: Run, fresh: list[Manifest]) -> dict[str, bytes]:
    """The fleet-scope and output-scope objects rendered, through a table of their renderings by
    content (kind ``rendered``): they are re-lowered on every run (cluster passes may read any
    team, through the allocation), but after a one-team edit a few Cohorts and that team's
    ClusterQueues differ, and hashing an object's ``marshal`` form costs a fifth of rendering it.
    Version 2 of the format has no back-references, so equal objects give equal bytes; an object
    marshal cannot hold is rendered each time."""
    if run.store.off:
        return {m.relpath: render_manifest(m) for m in fresh}
    table: dict[str, bytes] = run.store.get("rendered", run.fp) or {}
    kept: dict[str, bytes] = {}
    out: dict[str, bytes] = {}
    for m in fresh:
        try:
            key = digest(*m.sources, marshal.dumps(m.obj, 2))
        except ValueError:
            out[m.relpath] = render_manifest(m)
            continue
        data = table.get(key)
        out[m.relpath] = kept[key] = render_manifest(m) if data is None else data
    if kept.keys() != table.keys():
        run.store.put("rendered", run.fp, kept)
    return out


class ParsedCrds:
    """CRD documents parsed once, kept in the store by their text (kind ``crd``; PyYAML's version
    is part of the key): ``compiler.verify.registry.ParsedDocs``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @staticmethod
    def key(text: str) -> str:
        return digest("crd", yaml.__version__, text)

    def get(self, text: str) -> dict[str, Any] | None:
        doc = self.store.get("crd", self.key(text))
        return doc if isinstance(doc, dict) else None

    def put(self, text: str, doc: dict[str, Any]) -> None:
        try:
            self.store.put("crd", self.key(text), doc)
        except ValueError:  # a value marshal cannot hold (a YAML timestamp): parsed each time
            pass


def verify_objects(run: Run, fresh: list[Manifest], rendered: dict[str, bytes],
                   stats: list[StatsRecord], table_key: str | None = None) -> list[Diagnostic]:
    """Objects verified one at a time, through a table keyed by their content (an unchanged
    Cohort is not verified again): the fleet-scope and output-scope objects' (``table_key``
    None), or one team's (``new_unit``)."""
    assert run.verifier is not None
    versions = run.verifier.versions
    table_key = table_key or run.fp
    table = run.store.get("verified", table_key) or {}
    kept: dict[str, tuple[list[DiagRecord], StatsRecord]] = {}
    diags: list[Diagnostic] = []
    for m in fresh:
        key = digest(m.cluster, versions.get(m.cluster, "?"), str(sorted(versions.items())) if m.cluster == "argocd"
                     else "", m.relpath, rendered[m.relpath])
        hit = table.get(key)
        if hit is None:
            found, verified = run.verifier([m], rendered.get)
            hit = ([diag_out(d) for d in found], stats_out(verified))
        kept[key] = hit
        diags += [diag_in(d) for d in hit[0]]
        stats.append(hit[1])
    if kept.keys() != table.keys():
        run.store.put("verified", table_key, kept)
    return diags
