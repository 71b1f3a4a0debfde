"""``gpupolicy simulate``: compile (or read out/), read the trace, replay, report.

Exit codes: 0 ok; 1 policy errors or a bad trace/mapping (located ``file:line`` messages);
2 usage (unknown cluster, unknown job for ``--explain``, bad flags).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from compiler.cli.render import FORMATS
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, UsageError, sort_diagnostics
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.compare import RENDERERS, base_files
from compiler.tools.simulate.objects import KueueSetup, ObjectsError, clusters_in, load_setup, read_out_dir
from compiler.tools.simulate.render import explain_job, render_json, render_markdown, render_text
from compiler.tools.simulate.replay import Job, replay
from compiler.tools.simulate.report import summarize
from compiler.tools.simulate.traces import Mapping as TeamMapping
from compiler.tools.simulate.traces import TraceError, compress, read_trace


def _files(opts: Options, ns: argparse.Namespace) -> Mapping[str, bytes] | None:
    if ns.from_out:
        if not opts.out_dir.is_dir():
            raise UsageError(f"--from-out: {opts.out_dir} is not a directory")
        return read_out_dir(opts.out_dir)

    opts.verify = False
    res = compile_policies(opts)
    if res.diagnostics:
        FORMATS["text"](sort_diagnostics(res.diagnostics), opts.root, sys.stderr, sys.stderr.isatty())
    if not res.ok:
        return None
    return res.out_files


def _progress(done: int, total: int) -> None:
    print(f"\rgpupolicy: simulate: {done}/{total} jobs finished", end="", file=sys.stderr, flush=True)


def cmd_simulate(opts: Options, ns: argparse.Namespace) -> int:

    if ns.load <= 0:
        raise UsageError(f"--load must be > 0, got {ns.load}")
    if not 0 <= ns.checkpoint <= 1:
        raise UsageError(f"--checkpoint must be within 0..1, got {ns.checkpoint}")
    files = _files(opts, ns)
    if files is None:
        return EXIT_POLICY
    clusters = clusters_in(files)
    cluster = ns.cluster or (clusters[0] if len(clusters) == 1 else None)
    if cluster is None or cluster not in clusters:
        raise UsageError(f"pick a cluster with --cluster (rendered Kueue objects for: {', '.join(clusters) or 'none'})"
                         if cluster is None else f"no Kueue objects rendered for cluster {cluster!r} "
                         f"(have: {', '.join(clusters)})")
    try:
        setup = load_setup(files, cluster)
        jobs, fmt, skipped = read_trace(Path(ns.trace), setup, TeamMapping.load(ns.mapping))
    except (TraceError, ObjectsError) as exc:
        for line in str(exc).splitlines():
            print(f"gpupolicy: simulate: {line}", file=sys.stderr)
        return EXIT_POLICY
    compress(jobs, ns.load)
    if ns.explain and ns.explain not in {j.name for j in jobs}:
        raise UsageError(f"--explain: no job {ns.explain!r} in the trace (names look like {jobs[0].name!r})")
    if ns.base:
        return _compare(opts, ns, cluster, setup, jobs)
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    out = replay(Cluster.of(setup), jobs, ns.checkpoint, _progress if tty else None)
    if tty:
        print(file=sys.stderr)
    if ns.explain:
        sys.stdout.write(explain_job(next(tr for tr in out.tracks if tr.job.name == ns.explain)))
        return EXIT_OK
    rep = summarize(out, jobs, baselines=not ns.no_baselines)
    print(f"gpupolicy: simulate: {len(jobs)} jobs ({fmt}{f', {skipped} unfinished skipped' if skipped else ''}) "
          f"on {cluster} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    fmt_out = ns.format or "text"
    sys.stdout.write({"json": render_json, "markdown": render_markdown}.get(fmt_out, render_text)(rep))
    return EXIT_OK


def _compare(opts: Options, ns: argparse.Namespace, cluster: str, head_setup: KueueSetup, jobs: list[Job]) -> int:
    """``--base REF``: the same trace against the base revision; per-team deltas."""

    head = summarize(replay(Cluster.of(head_setup), jobs, ns.checkpoint), jobs, baselines=False)
    files, note = base_files(opts, ns.base)
    base = None
    if files is not None and cluster not in clusters_in(files):
        note = f"cluster {cluster} has no Kueue objects at {ns.base}"
    elif files is not None:
        try:
            base_setup = load_setup(files, cluster)
            base_jobs, _, _ = read_trace(Path(ns.trace), base_setup, TeamMapping.load(ns.mapping))
        except (TraceError, ObjectsError) as exc:
            note = f"the trace does not map onto {ns.base}'s queues ({str(exc).splitlines()[0]})"
        else:
            compress(base_jobs, ns.load)
            base = summarize(replay(Cluster.of(base_setup), base_jobs, ns.checkpoint), base_jobs, baselines=False)
    sys.stdout.write(RENDERERS[ns.format or "markdown"](ns.base, base, head, note))
    return EXIT_OK
