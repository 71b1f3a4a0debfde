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

Each replay's outcome per job (what ``--explain JOB`` prints) is kept beside it, under the same
inputs (``outcomes_key``): after a ``simulate``, explaining one job after another reads that entry
instead of replaying the whole trace for each (the 82,247 Philly jobs against the demo: 110 s
to replay on a busy machine, 0.9 s to explain one from the kept outcomes, an entry of 1.5 MB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from compiler.cache.store import Store, compiler_fingerprint, content_digest, digest
from compiler.tools.simulate.cluster import Workload
from compiler.tools.simulate.objects import setup_paths
from compiler.tools.simulate.replay import Job, Outcome, Track
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


def outcomes_key(files: Mapping[str, bytes], cluster: str, trace: Path, mapping: Path | None,
                 load: float, checkpoint: float) -> str | None:
    """The key of a replay's outcomes per job: the replay's own inputs (``replay_key``; the
    baselines are other replays)."""
    key = replay_key(files, cluster, trace, mapping, load, checkpoint)
    return None if key is None else digest(KIND, "outcomes", key)


def keep_outcomes(store: Store, key: str | None, out: Outcome) -> None:
    """Keep what ``--explain`` reads of each job's track: its outcome (the job itself is the
    trace's row, read again by the command)."""
    if key is not None:
        store.put(KIND, key, {tr.job.name: (tr.never_fits, tr.first_admit, tr.finish, tr.flavors, tr.wait,
                                            tr.causes, tr.preempted_by, tr.caused) for tr in out.tracks},
                  compress=True)


def kept_track(store: Store, key: str | None, job: Job) -> Track | None:
    """``job``'s track as its kept replay left it (the fields ``--explain`` prints), or None when
    no replay is kept (or its entry is not one ``keep_outcomes`` wrote)."""
    stored = None if key is None else store.get(KIND, key)
    rec = stored.get(job.name) if isinstance(stored, dict) else None
    if not isinstance(rec, tuple) or len(rec) != 8:
        return None
    wl = Workload(job.name, job.cq, dict(job.requests), job.priority, job.submit, dict(job.node_selector))
    tr = Track(job, wl, job.duration)
    (tr.never_fits, tr.first_admit, tr.finish, tr.flavors, tr.wait, tr.causes, preempted, tr.caused) = rec
    tr.preempted_by = list(preempted)
    return tr
