"""Replays kept in the store: the same trace against the same rendered Kueue objects is replayed
once.

The pull request's diff step runs ``gpupolicy diff --simulate`` twice (the comment's copy, then
the job summary's, ``.github/workflows/gpupolicy.yml``), and each run replays the trace against
both revisions: the whole Philly trace took ~52 s per side against the demo (bench/README.md), so
the second run replayed ~104 s for nothing. A replay's report is a pure function of what
``report_of`` reads: the objects of the cluster (``setup_paths``, by their digests), the trace's
and the mapping's bytes (and the trace's suffix, which chooses its reader), ``--load``,
``--checkpoint``, and the compiler (``compiler_fingerprint``: a new simulator replays again). It
is kept under a digest of all of them (kind ``simulation``, pruned as ``diff``'s base sides
are); a trace that cannot be read, or a missing, corrupt or foreign entry, only costs the replay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from compiler.cache.store import Store, compiler_fingerprint, content_digest, digest
from compiler.tools.simulate.objects import setup_paths
from compiler.tools.simulate.report import Report

KIND = "simulation"


def file_digest(files: Mapping[str, bytes], path: str) -> str:
    """A rendered file's digest: from the run's digests when ``files`` has them (a compile's
    ``LazyFiles``: no unit's bytes read for it), else of its bytes (``--from-out``)."""
    known = getattr(files, "digests", None)
    if isinstance(known, dict) and path in known:
        return str(known[path])
    return content_digest(files[path])


def replay_key(files: Mapping[str, bytes], cluster: str, trace: Path, mapping: Path | None,
               load: float, checkpoint: float, baselines: bool = False) -> str | None:
    """The key of a replay (``report_of``; with ``baselines``, ``gpupolicy simulate``'s report,
    which replays the two baselines too) by everything it reads; None when the trace or the
    mapping cannot be read (the replay says why, located)."""
    try:
        inputs = [trace.suffix, content_digest(trace.read_bytes()),
                  "" if mapping is None else content_digest(mapping.read_bytes())]
    except OSError:
        return None
    objects = [x for path in setup_paths(files, cluster) for x in (path, file_digest(files, path))]
    return digest(KIND, compiler_fingerprint(), cluster, repr(float(load)), repr(float(checkpoint)), *inputs,
                  *objects, *(("baselines",) if baselines else ()))


def kept_report(store: Store, key: str | None, replay: Callable[[], Report]) -> Report:
    """The report kept under ``key``, else ``replay()`` kept there. A failing replay raises and
    keeps nothing."""
    stored = None if key is None else store.get(KIND, key)
    if isinstance(stored, dict):
        try:
            return Report.from_json(stored)
        except (TypeError, KeyError):  # another layout of the report under a colliding key: replay
            pass
    report = replay()
    if key is not None:
        store.put(KIND, key, report.as_json(), compress=True)
        store.prune((KIND,))  # the replays other runs kept, past twice those this one used (or 16)
    return report
