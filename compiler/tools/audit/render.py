"""The audit as CSV (the ledger) and markdown (ledger, waits, findings, utilisation)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone

from compiler.tools.audit.findings import Finding
from compiler.tools.audit.ledger import Row
from compiler.tools.audit.metrics import Cell, Window
from compiler.tools.audit.waits import Wait

COLUMNS = ("namespace", "name", "team", "model", "data_class", "cluster", "residency", "queue", "cluster_queue",
           "gpu_class", "gpus", "created", "admitted", "ended", "state", "end_reason", "borrowed", "preempted_by",
           "preemption", "evictions")


def ts(t: datetime | None) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if t else ""


def _cells(r: Row) -> list[str]:
    return [r.namespace, r.name, r.team, r.model, r.data_class, r.cluster, r.residency, r.queue, r.cluster_queue,
            r.gpu_class, str(r.gpus), ts(r.created), ts(r.admitted), ts(r.ended), r.state, r.end_reason,
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


def _md(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ") or "-"


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
            lines.append(f"- {label}: {w.source} holds no samples: no number")
        else:
            span = (w.end or 0) - (w.start or 0)
            lines.append(f"- {label}: {w.source}, {w.samples} samples over {span / 3600:.1f} h")
        if w is not None and w.ignored:
            lines.append(f"  (ignored, not utilisation: {', '.join(f'{n} x{c}' for n, c in sorted(w.ignored.items()))})")
    keys = sorted(set(before.cells if before else {}) | set(after.cells if after else {}))
    lines += ["", "| GPU class | team | before | after | change |", "|---|---|---|---|---|"]
    for k in keys:
        b = before.cells.get(k) if before else None
        a = after.cells.get(k) if after else None
        change = (f"{a.mean - b.mean:+.1f} points" if a and b and a.mean is not None and b.mean is not None
                  else "no number (data missing on one side)")
        lines.append(f"| {_md(k[0])} | {_md(k[1])} | {_util(b)} | {_util(a)} | {change} |")
    return lines + [""]


def markdown(rows: list[Row], waits: list[Wait], found: list[Finding], before: Window | None, after: Window | None,
             meta: dict[str, str]) -> str:
    states = Counter(r.state for r in rows)
    workloads = len({r.key for r in rows})
    lines = ["# GPU audit (gpupolicy audit)", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [f"- workloads: {workloads}; ledger rows: {len(rows)} ("
              + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + ")",
              "- Kueue keeps only each condition's latest state and clears the admission on eviction: "
              "an evicted workload's earlier admission time and class are not in the export", ""]
    lines += ["## Ledger: who held which GPU class, for which model and data class, when", "",
              "| workload | team | model | data class | cluster (residency) | queue | class | GPUs | admitted | "
              "finished/evicted | state | guarantee | preempted by |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        end = ts(r.ended) + (f" ({r.end_reason})" if r.end_reason and r.ended else "")
        pre = f"{r.preempted_by} — {r.preemption}" if r.preempted_by else ""
        lines.append(f"| {_md(r.key)} | {_md(r.team)} | {_md(r.model)} | {_md(r.data_class)} | "
                     f"{_md(r.cluster)} ({_md(r.residency)}) | {_md(r.queue)} | {_md(r.gpu_class)} | {r.gpus} | "
                     f"{_md(ts(r.admitted))} | {_md(end)} | {r.state} | {_md(r.borrowed)} | {_md(pre)} |")
    lines += ["", "## Why did it wait", "",
              "| workload | team | from | to | waited | cause | source |", "|---|---|---|---|---|---|---|"]
    for w in waits:
        lines.append(f"| {_md(w.key)} | {_md(w.team)} | {_md(ts(w.start))} | {_md(ts(w.end) or 'still waiting')} | "
                     f"{_duration(w.seconds)} | {_md(w.cause)} | {'derived from the ledger' if w.derived else 'Kueue condition'} |")
    lines += ["", "## Findings against the policy", ""]
    if not found:
        lines.append("None.")
    counts = Counter(f.kind for f in found)
    lines += [f"- {n} {k}" for k, n in sorted(counts.items())]
    lines += ["", *[f"- **{f.kind}** {f.subject}: {f.message}" for f in found]] if found else []
    lines.append("")
    lines += utilisation_md(before, after)
    return "\n".join(lines)
