"""The audit as CSV (the ledger) and markdown (ledger, waits, findings, utilisation).

Everything in AUDIT.md that comes from an export (names, labels, Kueue's messages, metric labels,
file names) goes through the project's markdown escapers (``compiler.escape``): a name that is a
plain DNS-like name stays as it is, any other is a code span (``md_name``); prose quoting an export
has every markdown and HTML metacharacter escaped and no ``@mention`` (``md_text``). So a model
label ``__bold__`` is shown as written, and a Kueue message carrying HTML, a heading or a mention
renders as text."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone

from compiler import escape
from compiler.tools.audit.findings import Finding
from compiler.tools.audit.ledger import Row
from compiler.tools.audit.metrics import Cell, Window
from compiler.tools.audit.waits import Wait
from compiler.tools.cluster_import.quantities import shown

COLUMNS = ("namespace", "name", "team", "model", "data_class", "cluster", "residency", "queue", "cluster_queue",
           "gpu_class", "gpus", "created", "admitted", "ended", "state", "end_reason", "borrowed", "preempted_by",
           "preemption", "evictions")


def ts(t: datetime | None) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if t else ""


def _cells(r: Row) -> list[str]:
    return [r.namespace, r.name, r.team, r.model, r.data_class, r.cluster, r.residency, r.queue, r.cluster_queue,
            r.gpu_class, shown(r.gpus), ts(r.created), ts(r.admitted), ts(r.ended), r.state, r.end_reason,
            r.borrowed, r.preempted_by, r.preemption, str(r.evictions)]


def ledger_csv(rows: Iterable[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_safe(c) for c in _cells(r)])
    return buf.getvalue()


def _safe(cell: str) -> str:
    """No spreadsheet formulas from exported strings."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@") and not cell[1:2].isdigit() else cell


def _name(cell: str) -> str:
    """A name from the export in a table cell (namespace/name, team, model, class, ...)."""
    return escape.md_name(cell, table=True) if cell else "-"


def _prose(cell: str) -> str:
    """Text quoting the export (a cause, a reason, a message) in a table cell or a list item."""
    return escape.md_text(cell) if cell else "-"


def _duration(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    h, rest = divmod(max(seconds, 0), 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def _util(cell: Cell | None) -> str:
    if cell is None or cell.mean is None:
        return "no data"
    return f"{cell.mean:.1f}% ({len(cell.hours)} h with data, {len(cell.gpus)} GPUs, {cell.samples} samples)"


def utilisation_md(before: Window | None, after: Window | None) -> list[str]:
    lines = ["## Utilisation before and after", ""]
    if before is None and after is None:
        return lines + ["No metric export given (--metrics-before/--metrics-after): no utilisation figure.", ""]
    for label, w in (("before", before), ("after", after)):
        if w is None:
            lines.append(f"- {label}: no export given")
        elif not w.samples:
            lines.append(f"- {label}: {_prose(w.source)} holds no samples: no number")
        else:
            span = (w.end or 0) - (w.start or 0)
            lines.append(f"- {label}: {_prose(w.source)}, {w.samples} samples over {span / 3600:.1f} h")
        if w is not None and w.ignored:
            ignored = ", ".join(f"{n} x{c}" for n, c in sorted(w.ignored.items()))
            lines.append(f"  (ignored, not utilisation: {escape.md_text(ignored)})")
    keys = sorted(set(before.cells if before else {}) | set(after.cells if after else {}))
    lines += ["", "| GPU class | team | before | after | change |", "|---|---|---|---|---|"]
    for k in keys:
        b = before.cells.get(k) if before else None
        a = after.cells.get(k) if after else None
        change = (f"{a.mean - b.mean:+.1f} points" if a and b and a.mean is not None and b.mean is not None
                  else "no number (data missing on one side)")
        lines.append(f"| {_name(k[0])} | {_name(k[1])} | {_util(b)} | {_util(a)} | {change} |")
    return lines + [""]


def markdown(rows: list[Row], waits: list[Wait], found: list[Finding], before: Window | None, after: Window | None,
             meta: dict[str, str], warnings: list[str] | None = None) -> str:
    states = Counter(r.state for r in rows)
    workloads = len({r.key for r in rows})
    lines = ["# GPU audit (gpupolicy audit)", ""]
    lines += [f"- {k}: {_prose(v)}" for k, v in meta.items()]
    lines += [f"- workloads: {workloads}; ledger rows: {len(rows)} ("
              + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + ")",
              "- Kueue keeps only each condition's latest state and clears the admission on eviction: "
              "an evicted workload's earlier admission time and class are not in the export", ""]
    if warnings:
        lines += ["## Warnings about the export", "", *[f"- {escape.md_text(w)}" for w in warnings], ""]
    lines += ["## Ledger: who held which GPU class, for which model and data class, when", "",
              "| workload | team | model | data class | cluster (residency) | queue | class | GPUs | admitted | "
              "finished/evicted | state | guarantee | preempted by |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        end = ts(r.ended) + (f" ({r.end_reason})" if r.end_reason and r.ended else "")
        pre = f"{r.preempted_by} — {r.preemption}" if r.preempted_by else ""
        lines.append(f"| {_name(r.key)} | {_name(r.team)} | {_name(r.model)} | {_name(r.data_class)} | "
                     f"{_name(r.cluster)} ({_name(r.residency)}) | {_name(r.queue)} | {_name(r.gpu_class)} | "
                     f"{shown(r.gpus)} | {ts(r.admitted) or '-'} | {_prose(end)} | {r.state} | {_prose(r.borrowed)} | "
                     f"{_prose(pre)} |")
    lines += ["", "## Why did it wait", "",
              "| workload | team | from | to | waited | cause | source |", "|---|---|---|---|---|---|---|"]
    for w in waits:
        lines.append(f"| {_name(w.key)} | {_name(w.team)} | {ts(w.start) or '-'} | {ts(w.end) or 'still waiting'} | "
                     f"{_duration(w.seconds)} | {_prose(w.cause)} | "
                     f"{'derived from the ledger' if w.derived else 'Kueue condition'} |")
    lines += ["", "## Findings against the policy", ""]
    if not found:
        lines.append("None.")
    counts = Counter(f.kind for f in found)
    lines += [f"- {n} {k}" for k, n in sorted(counts.items())]
    lines += ["", *[f"- **{f.kind}** {_name(f.subject)}: {_prose(f.message)}" for f in found]] if found else []
    lines.append("")
    lines += utilisation_md(before, after)
    return "\n".join(lines)
