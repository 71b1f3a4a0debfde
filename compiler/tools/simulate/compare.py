"""The same trace against a base revision and the working tree: per-team deltas for a pull request.

Used by ``gpupolicy simulate --base REF`` and ``gpupolicy diff --base REF --simulate TRACE``
(which appends this section to the diff report). The base revision's policies are extracted and
compiled in memory exactly as ``gpupolicy diff`` does (compiler.tools.diff_base.extract_base); the
trace is read against each side's own objects, so a team that exists on one side only shows as
such.

Markdown (the PR comment) is bounded: the table keeps the ``TABLE_ROWS`` teams whose p95 wait
changed most and the mermaid ``xychart-beta`` the ``CHART_TEAMS`` first of them, each saying how
many teams it leaves out. Every team, cluster and revision name is escaped for its place
(``compiler.escape``: table cells, prose, mermaid strings).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from compiler import escape
from compiler.cache.store import NullStore, Store
from compiler.diagnostics import EXIT_OK, UsageError
from compiler.pipeline.options import Options
from compiler.pipeline.run import Result, compile_policies
from compiler.pipeline.units import CacheEntryMissing
from compiler.tools.diff_base import extract_base, scratch_dir, side_options
from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.kept import kept_report, replay_key
from compiler.tools.simulate.objects import ObjectsError, clusters_in, load_setup
from compiler.tools.simulate.render import warnings
from compiler.tools.simulate.replay import replay
from compiler.tools.simulate.report import Report, TeamStats, summarize
from compiler.tools.simulate.traces import Mapping as TeamMapping
from compiler.tools.simulate.traces import TraceError, compress, read_trace

TABLE_ROWS = 30
CHART_TEAMS = 12


@dataclass
class Pair:
    ref: str
    cluster: str
    head: Report
    base: Report | None
    note: str  # why there is no base side, if there is none


@dataclass
class Run:
    """What to replay: the trace and its knobs (``simulate`` and ``diff --simulate`` share them)."""

    trace: Path
    cluster: str | None
    load: float = 1.0
    mapping: Path | None = None
    checkpoint: float = 0.0


def store_of(opts: Options) -> Store:
    """The store the compiles and replays go through (none with ``--no-cache``)."""
    return Store(opts.root) if opts.cache else NullStore()


def compiled_files(opts: Options, store: Store) -> Result:
    """The rendered files of the tree ``opts`` names, compiled in memory through ``store`` with
    the keys ``check`` and ``diff`` use there (so their units serve: the diff step compiles both
    revisions just before, ``gpupolicy build`` the work tree), without the reports a replay does
    not read. Their bytes are read from the store when asked (``Refetched``)."""
    res = compile_policies(opts, store, objects=False, reports=False)
    if not store.off:
        res.out_files = Refetched(res.out_files, lambda: compile_policies(opts, objects=False, reports=False))
    return res


class Refetched(Mapping[str, bytes]):
    """A compile's files read from the store, or, once an entry is gone (another process pruned
    the store meanwhile: ``CacheEntryMissing``), from the same tree compiled without it, as
    ``build`` and ``check`` do. ``digests`` are the compile's (the same either way)."""

    def __init__(self, files: Mapping[str, bytes], again: Callable[[], Result]) -> None:
        self.files = files
        self.again = again
        self.digests = getattr(files, "digests", None)

    def __getitem__(self, rel: str) -> bytes:
        try:
            return self.files[rel]
        except CacheEntryMissing:
            self.files = self.again().out_files
            return self.files[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def base_files(opts: Options, ref: str, store: Store) -> tuple[Mapping[str, bytes] | None, str]:
    """The rendered files of ``ref`` (None and a note when it has no policies or does not compile),
    read when asked (a replay reads one cluster's Kueue objects)."""
    with tempfile.TemporaryDirectory(prefix="gpupolicy-simulate-", dir=scratch_dir()) as tmp:
        root, policy_dir, existed = extract_base(opts.root, opts.policy_dir, ref, Path(tmp))
        if not existed:
            return None, f"no policy directory at {ref}"
        res = compiled_files(side_options(opts, root, policy_dir), store)
        if not res.ok:
            return None, f"the policies at {ref} do not compile"
        return res.out_files, ""


def pick_cluster(files: Mapping[str, bytes], wanted: str | None) -> str:
    """``wanted``, or the only cluster with Kueue objects; a UsageError names the choices."""
    clusters = clusters_in(files)
    cluster = wanted or (clusters[0] if len(clusters) == 1 else None)
    if cluster is None:
        raise UsageError(f"pick a cluster (rendered Kueue objects for: {', '.join(clusters) or 'none'})")
    if cluster not in clusters:
        raise UsageError(f"no Kueue objects rendered for cluster {cluster!r} (have: {', '.join(clusters)})")
    return cluster


def report_of(files: Mapping[str, bytes], cluster: str, run: Run, store: Store) -> Report:
    """Replay ``run`` against one side's objects (TraceError / ObjectsError propagate), or the
    report of the same replay kept in ``store`` (``compiler.tools.simulate.kept``)."""
    def replayed() -> Report:
        setup = load_setup(files, cluster)
        jobs, _, _ = read_trace(run.trace, setup, TeamMapping.load(run.mapping))
        compress(jobs, run.load)
        return summarize(replay(Cluster.of(setup), jobs, run.checkpoint), jobs, baselines=False)

    key = replay_key(files, cluster, run.trace, run.mapping, run.load, run.checkpoint)
    return kept_report(store, key, replayed)


def simulate_pair(opts: Options, ref: str, head_files: Mapping[str, bytes], run: Run) -> Pair:
    """Head and base reports for the same trace; a base that cannot be had is a note, not an error."""
    store = store_of(opts)
    cluster = pick_cluster(head_files, run.cluster)
    head = report_of(head_files, cluster, run, store)
    files, note = base_files(opts, ref, store)
    base = None
    if files is not None and cluster not in clusters_in(files):
        note = f"cluster {cluster} has no Kueue objects at {ref}"
    elif files is not None:
        try:
            base = report_of(files, cluster, run, store)
        except (TraceError, ObjectsError) as exc:  # the base side's problems are a note, not an error
            note = f"the trace does not map onto {ref}'s queues ({str(exc).splitlines()[0]})"
    return Pair(ref, cluster, head, base, note)


# --- rendering -----------------------------------------------------------------------------

Row = tuple[str, TeamStats | None, TeamStats | None]


def _rows(pair: Pair) -> list[Row]:
    """Every team of either side, the largest change of p95 wait first (then by name)."""
    old = {t.team: t for t in pair.base.teams} if pair.base else {}
    new = {t.team: t for t in pair.head.teams}

    def change(r: Row) -> tuple[float, str]:
        o, n = r[1], r[2]
        if o is None or n is None:
            return (-float("inf"), r[0])  # added and removed teams first
        return (-abs(n.wait_p95_h - o.wait_p95_h), r[0])

    return sorted(((name, old.get(name), new.get(name)) for name in set(old) | set(new)), key=change)


def _d(new: float, old: float, digits: int) -> str:
    delta = new - old
    return f"{new:,.{digits}f} ({'+' if delta >= 0 else ''}{delta:,.{digits}f})"


HEAD = ["team", "jobs", "wait p50 h", "wait p95 h", "wait max h", "preempted", "borrowed GPU-h", "GPU-h",
        "never fit"]


def _cells(o: TeamStats | None, n: TeamStats | None) -> list[str]:
    if n is None:
        return ["(removed)"] + [""] * (len(HEAD) - 2)
    if o is None:
        return [str(n.jobs), f"{n.wait_p50_h:.2f}", f"{n.wait_p95_h:.2f}", f"{n.wait_max_h:.1f}",
                str(n.preemptions_suffered), f"{n.borrowed_gpu_hours:,.0f}", f"{n.gpu_hours:,.0f}", str(n.never_fit)]
    return [_d(n.jobs, o.jobs, 0), _d(n.wait_p50_h, o.wait_p50_h, 2), _d(n.wait_p95_h, o.wait_p95_h, 2),
            _d(n.wait_max_h, o.wait_max_h, 1), _d(n.preemptions_suffered, o.preemptions_suffered, 0),
            _d(n.borrowed_gpu_hours, o.borrowed_gpu_hours, 0), _d(n.gpu_hours, o.gpu_hours, 0),
            _d(n.never_fit, o.never_fit, 0)]


def _new(o: TeamStats | None, n: TeamStats | None) -> str:
    return " (new)" if o is None and n is not None else ""


def _cluster_line(pair: Pair) -> str:
    h, b = pair.head, pair.base
    line = (f"{h.jobs:,} jobs over {h.span_h:,.0f} h; utilisation {h.utilisation:.1%}, idle {h.idle_gpu_hours:,.0f} "
            f"GPU-h, stranded {h.stranded_gpu_hours:,.0f} GPU-h")
    if b is not None:
        line += (f" (base: {b.utilisation:.1%}, idle {b.idle_gpu_hours:,.0f}, stranded "
                 f"{b.stranded_gpu_hours:,.0f})")
    return line


def render_markdown(pair: Pair) -> str:
    ref = escape.md_code(pair.ref)
    lines = [f"### gpupolicy simulate: {escape.md_name(pair.cluster)}, {ref} → working tree", ""]
    if pair.note:
        lines += [f"_{escape.md_text(pair.note)}: only the working tree is shown._", ""]
    lines += [_cluster_line(pair), ""]
    rows = _rows(pair)
    shown = rows[:TABLE_ROWS]
    lines.append("| " + " | ".join(HEAD) + " |")
    lines.append("|" + "---|" * len(HEAD))
    lines += ["| " + " | ".join([escape.md_name(name, table=True) + _new(o, n), *_cells(o, n)]) + " |"
              for name, o, n in shown]
    if len(rows) > len(shown):
        lines += ["", f"{len(rows) - len(shown)} more team(s) with smaller changes of p95 wait are left out "
                      f"(`--format json` has them all)."]
    charted = [r for r in shown if r[2] is not None][:CHART_TEAMS]
    if charted:
        title = escape.mermaid(f"p95 wait (h): {pair.ref} (bar) vs working tree (line)")
        lines += ["", "```mermaid", "xychart-beta", f'  title "{title}"',
                  "  x-axis [" + ", ".join(f'"{escape.mermaid(name)}"' for name, _, _ in charted) + "]",
                  '  y-axis "hours"',
                  "  bar [" + ", ".join(f"{o.wait_p95_h:.2f}" if o else "0" for _, o, _ in charted) + "]",
                  "  line [" + ", ".join(f"{n.wait_p95_h:.2f}" for _, _, n in charted if n) + "]", "```"]
        left = len([r for r in rows if r[2] is not None]) - len(charted)
        if left > 0:
            lines.append(f"The chart shows the {len(charted)} teams whose p95 wait changed most; {left} more left out.")
    warned = _warnings(pair)
    lines += ["", *(f"- **warning** ({escape.md_text(side)}): {escape.md_text(w)}" for side, w in warned)] \
        if warned else []
    return "\n".join(lines) + "\n"


def _warnings(pair: Pair) -> list[tuple[str, str]]:
    """The replay warnings (stalls, preemption loops) of the working tree, then those only the
    base had (what the change ends): a loop on both sides is said once."""
    out = [("working tree", w) for w in warnings(pair.head.stalled)]
    if pair.base is not None:
        head = set(pair.head.stalled)
        out += [(f"only on {pair.ref}", w) for w in warnings([w for w in pair.base.stalled if w not in head])]
    return out


def render_text(pair: Pair) -> str:
    rows = [HEAD] + [[escape.text(name) + _new(o, n), *_cells(o, n)] for name, o, n in _rows(pair)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    out = [escape.text(f"cluster {pair.cluster}: {pair.ref} -> working tree" + (f" ({pair.note})" if pair.note else "")),
           _cluster_line(pair)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    out += [escape.text(f"warning ({side}): {w}") for side, w in _warnings(pair)]
    return "\n".join(out) + "\n"


def as_json(pair: Pair) -> dict[str, Any]:
    return {"base": pair.ref, "cluster": pair.cluster, "note": pair.note, "head_report": pair.head.as_json(),
            "base_report": pair.base.as_json() if pair.base else None}


def render_json(pair: Pair) -> str:
    return json.dumps(as_json(pair), indent=2, sort_keys=True) + "\n"


RENDERERS: dict[str, Callable[[Pair], str]] = {"markdown": render_markdown, "text": render_text, "json": render_json}


def diff_with_simulation(opts: Options, ns: argparse.Namespace,
                         diff_command: Callable[[Options, argparse.Namespace], int]) -> int:
    """``gpupolicy diff --simulate TRACE``: the diff report, then the per-team simulation deltas
    (markdown and text appended; JSON under the key ``simulate``)."""
    if ns.simulate_load <= 0:
        raise UsageError(f"--simulate-load must be > 0, got {ns.simulate_load}")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = diff_command(opts, ns)
    diff_out = buf.getvalue()
    if rc != EXIT_OK:
        print(diff_out, end="")
        return rc
    from compiler.tools.simulate.command import head_files, print_problems

    files = head_files(opts)
    if files is None:
        return 1
    run = Run(Path(ns.simulate), ns.simulate_cluster, ns.simulate_load, ns.simulate_mapping)
    pair = simulate_pair_or_problems(opts, ns.base, files, run, print_problems)
    if pair is None:
        return 1
    fmt = ns.format or "markdown"
    if fmt == "json":
        data = json.loads(diff_out)
        data["simulate"] = as_json(pair)
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(diff_out.rstrip("\n") + "\n\n" + RENDERERS[fmt](pair), end="")
    return EXIT_OK


def simulate_pair_or_problems(opts: Options, ref: str, files: Mapping[str, bytes], run: Run,
                              report: Callable[[Exception], None]) -> Pair | None:
    try:
        return simulate_pair(opts, ref, files, run)
    except (TraceError, ObjectsError) as exc:
        report(exc)
        return None
