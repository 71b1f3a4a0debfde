"""The digest of every ``out/`` file a run renders, without reading every unit's files.

With a store a run starts from the last complete run's digests (kind ``digests``, pointed to by
``last``) and patches in the units that came and went, so a one-team edit reads two units'
``files`` entries instead of 1,000. ``validate`` and ``check`` do without them (``Result.all_digests``
computes them when asked: ``check`` compares the tree with the units that changed since the
build that wrote it, ``compiler.cli.out_tree``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.cache.records import RunRecord
from compiler.pipeline.units import add_files

if TYPE_CHECKING:
    from compiler.pipeline.run import Run


def out_digests(run: Run, rec: RunRecord) -> dict[str, str] | None:
    """Every ``out/`` file's digest. With a store, from the last run's (kind ``digests``,
    pointed to by ``last``): the units it had and this run has not lose their files, the units
    this run has and it had not add theirs, so a one-team edit reads two units' ``files``
    instead of every unit's (1,000 entries at 1,000 teams). A run answered from the store reads
    its own. Else (no store, a diff, a missing entry) every unit's ``files``, in out/ order."""
    if run.shared is not None or run.store.off or rec.failed:
        return merged_digests(run, rec)
    stored = run.store.get("digests", run.key_all)
    if stored is not None:
        return stored[2]
    last = run.store.get("last", run.fp)
    digests = None if last is None else delta_digests(run, rec, last)
    if digests is None:
        digests = merged_digests(run, rec)
        if digests is None:
            return None
    if run.reports:  # a complete run (a diff's lacks REPORT.md and allocation.json)
        run.store.put("digests", run.key_all, (rec.units, list(rec.inline), digests))
        run.store.put("last", run.fp, run.key_all)
        if last is not None and last != run.key_all:  # 8 MB at 1,000 teams: one run's is kept
            run.store.discard("digests", last)
    return digests


def merged_digests(run: Run, rec: RunRecord) -> dict[str, str] | None:
    digests: dict[str, str] = {}
    found = [run.unit_files(key) for key in rec.units]  # every missing one discarded
    for files in found:
        if files is None:
            return None
        add_files(digests, files)
    add_files(digests, rec.inline)
    return digests


def delta_digests(run: Run, rec: RunRecord, last: str) -> dict[str, str] | None:
    """``out_digests`` from the run keyed ``last``, or None when an entry it needs is gone."""
    prev = run.store.get("digests", last)
    if prev is None:
        return None
    prev_units, prev_inline, digests = prev
    had, has = set(prev_units), set(rec.units)
    for key in had - has:
        files = run.unit_files(key)
        if files is None:
            return None
        for rel in files:
            del digests[rel]
    for rel in prev_inline:
        del digests[rel]
    for key in rec.units:
        if key not in had:
            files = run.unit_files(key)
            if files is None:
                return None
            add_files(digests, files)
    add_files(digests, rec.inline)
    return digests
