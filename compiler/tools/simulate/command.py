"""``gpupolicy simulate``: compile (or read out/), read the trace, replay, report.

Exit codes: 0 ok; 1 policy errors or a bad trace/mapping (located ``file:line`` messages);
2 usage (unknown cluster, unknown job for ``--explain``, bad flags).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Callable, TextIO

from compiler import escape
from compiler.cli.render import print_to_stderr
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, UsageError
from compiler.pipeline.options import Options
from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.compare import (
    RENDERERS,
    Run,
    compiled_files,
    pick_cluster,
    simulate_pair_or_problems,
    store_of,
)
from compiler.tools.simulate.kept import keep_outcomes, kept_report, kept_track, outcomes_key, replay_key
from compiler.tools.simulate.objects import ObjectsError, load_setup, read_out_dir
from compiler.tools.simulate.render import explain_job, explain_job_json, render_json, render_markdown, render_text
from compiler.tools.simulate.replay import Outcome, replay
from compiler.tools.simulate.report import Report, summarize
from compiler.tools.simulate.traces import Mapping as TeamMapping
from compiler.tools.simulate.traces import TraceError, compress, read_trace

BAR = 30


def head_files(opts: Options) -> Mapping[str, bytes] | None:
    """The working tree's rendered files, compiled in memory as ``check`` compiles them, through
    the store (``compiled_files``; diagnostics on stderr; None if it does not compile)."""
    res = compiled_files(opts, store_of(opts))
    if res.diagnostics:
        print_to_stderr(res.diagnostics, opts.root)
    return res.out_files if res.ok else None


def _files(opts: Options, ns: argparse.Namespace) -> Mapping[str, bytes] | None:
    if ns.from_out:
        if not opts.out_dir.is_dir():
            raise UsageError(f"--from-out: {opts.out_dir} is not a directory")
        return read_out_dir(opts.out_dir)
    return head_files(opts)


def print_problems(exc: Exception) -> None:
    for line in str(exc).splitlines():
        print(f"gpupolicy: simulate: {escape.text(line)}", file=sys.stderr)


def progress_bar(stream: TextIO) -> Callable[[int, int], None] | None:
    """A progress bar on ``stream`` when it is a terminal, outside CI (None otherwise): redrawn at
    most five times a second, so it costs nothing next to the replay."""
    if not stream.isatty() or os.environ.get("CI"):
        return None
    start = time.monotonic()
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2 and done < total:
            return
        last[0] = now
        filled = BAR * done // max(total, 1)
        stream.write(f"\rgpupolicy: simulate: [{'#' * filled}{'.' * (BAR - filled)}] {done:,}/{total:,} jobs "
                     f"finished, {now - start:,.0f}s")
        stream.flush()

    return show


def cmd_simulate(opts: Options, ns: argparse.Namespace) -> int:
    if ns.load <= 0:
        raise UsageError(f"--load must be > 0, got {ns.load}")
    if not 0 <= ns.checkpoint <= 1:
        raise UsageError(f"--checkpoint must be within 0..1, got {ns.checkpoint}")
    files = _files(opts, ns)
    if files is None:
        return EXIT_POLICY
    try:
        cluster = pick_cluster(files, ns.cluster)
    except UsageError as exc:
        raise UsageError(f"--cluster: {exc}") from exc
    try:
        setup = load_setup(files, cluster)
        jobs, fmt, skipped = read_trace(Path(ns.trace), setup, TeamMapping.load(ns.mapping))
    except (TraceError, ObjectsError) as exc:
        print_problems(exc)
        return EXIT_POLICY
    compress(jobs, ns.load)
    if ns.explain and ns.explain not in {j.name for j in jobs}:
        raise UsageError(f"--explain: no job {ns.explain!r} in the trace (names look like {jobs[0].name!r})")
    if ns.base:
        run = Run(Path(ns.trace), cluster, ns.load, ns.mapping, ns.checkpoint)
        pair = simulate_pair_or_problems(opts, ns.base, files, run, print_problems)
        if pair is None:
            return EXIT_POLICY
        sys.stdout.write(RENDERERS[ns.format or "markdown"](pair))
        return EXIT_OK
    t0 = time.perf_counter()

    def replayed() -> Outcome:
        bar = progress_bar(sys.stderr)
        out = replay(Cluster.of(setup), jobs, ns.checkpoint, bar)
        if bar is not None:
            print(file=sys.stderr)
        return out

    store = store_of(opts)
    okey = outcomes_key(files, cluster, Path(ns.trace), ns.mapping, ns.load, ns.checkpoint)
    if ns.explain:
        job = next(j for j in jobs if j.name == ns.explain)
        track = kept_track(store, okey, job)
        if track is None:
            out = replayed()
            keep_outcomes(store, okey, out)
            track = next(tr for tr in out.tracks if tr.job.name == ns.explain)
        sys.stdout.write(explain_job_json(track) if ns.format == "json" else explain_job(track))
        return EXIT_OK
    baselines = not ns.no_baselines  # the report kept like the pull request's (another format: no replay)
    key = replay_key(files, cluster, Path(ns.trace), ns.mapping, ns.load, ns.checkpoint, baselines)
    ran: list[Outcome] = []

    def summarized() -> Report:
        ran.append(replayed())
        keep_outcomes(store, okey, ran[0])  # for --explain, which then replays nothing
        return summarize(ran[0], jobs, baselines=baselines)

    rep = kept_report(store, key, summarized)
    took = f"in {time.perf_counter() - t0:.1f}s" if ran else "as replayed before (kept in .gpupolicy-cache/)"
    print(f"gpupolicy: simulate: {len(jobs)} jobs ({fmt}{f', {skipped} unfinished skipped' if skipped else ''}) "
          f"on {escape.text(cluster)} {took}", file=sys.stderr)
    fmt_out = ns.format or "text"
    sys.stdout.write({"json": render_json, "markdown": render_markdown}.get(fmt_out, render_text)(rep))
    return EXIT_OK
