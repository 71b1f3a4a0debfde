"""Text, JSON and markdown renderings of a simulation report, and ``--explain JOB``."""

from __future__ import annotations

import json

from compiler import escape
from compiler.tools.simulate.replay import Track
from compiler.tools.simulate.report import H, Report

TOP_CAUSES = 3


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _rows(rep: Report) -> list[list[str]]:
    rows = []
    for t in rep.teams:
        rows.append([t.team, str(t.jobs), str(t.never_fit), _f(t.gpu_hours, 0), _f(t.wait_p50_h, 2), _f(t.wait_p95_h, 2),
                     _f(t.wait_max_h, 1), f"{t.guarantee_used:.0%}", _f(t.borrowed_gpu_hours, 0),
                     _f(t.lent_gpu_hours, 0), f"{t.preemptions_suffered}/{t.preemptions_caused}",
                     _f(t.static_wait_p95_h, 2), _f(t.first_apply_wait_p95_h, 2), _f(t.finish_time_fairness, 2)])
    return rows


HEAD = ["team", "jobs", "never fit", "GPU-h", "wait p50 h", "wait p95 h", "wait max h", "guarantee used",
        "borrowed GPU-h", "lent GPU-h", "preempted/caused", "static p95 h", "first-apply p95 h", "FTF"]


def _summary(rep: Report) -> list[str]:
    cap = ", ".join(f"{k} {v:g}" for k, v in sorted(rep.capacity.items()))
    return [f"cluster {rep.cluster}: {rep.jobs} jobs over {rep.span_h:,.1f} h; fair sharing "
            f"{'on' if rep.fair_sharing else 'off'}; {rep.cycles} scheduling cycles",
            f"capacity (all nominal quota): {cap}",
            f"utilisation {rep.utilisation:.1%}: {rep.used_gpu_hours:,.0f} GPU-h used, "
            f"{rep.idle_gpu_hours:,.0f} GPU-h idle, {rep.stranded_gpu_hours:,.0f} of them stranded "
            f"(idle while a job that fits them waits on quota)"]


def render_text(rep: Report) -> str:
    lines = [escape.text(s) for s in _summary(rep)] + [""]
    rows = [HEAD] + [[escape.text(r[0]), *r[1:]] for r in _rows(rep)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    for r in rows:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    lines.append("")
    for t in rep.teams:
        if t.causes:
            lines.append(f"why {escape.text(t.team)} waited (job-hours):")
            lines += [f"  {h:>10,.1f}  {escape.text(c)}" for c, h in t.causes[:TOP_CAUSES]]
    if rep.baselines:
        lines.append("")
        lines.append("baselines (all teams): " + "; ".join(
            f"{k}: wait p50 {v['wait_p50_h']:.2f} h, p95 {v['wait_p95_h']:.2f} h, never fit {v['never_fit']:.0f}"
            for k, v in rep.baselines.items()))
    if rep.never_fit:
        lines.append("")
        lines.append(f"{len(rep.never_fit)} job(s) can never fit, e.g.:")
        lines += [f"  {escape.text(j)}: {escape.text(why)}" for j, why in rep.never_fit[:5]]
    lines += [f"warning: {escape.text(s)}" for s in warnings(rep.stalled)]
    return "\n".join(lines) + "\n"


WARNINGS_SHOWN = 5


def warnings(stalled: list[str]) -> list[str]:
    """The replay's warnings (stalls, preemption loops) as shown: the first few and how many more."""
    more = len(stalled) - WARNINGS_SHOWN
    return stalled[:WARNINGS_SHOWN] + ([f"{more} more warning(s): --format json has them all"] if more > 0 else [])


def render_markdown(rep: Report) -> str:
    lines = [f"### gpupolicy simulate: {escape.md_name(rep.cluster)}", ""]
    lines += [f"- {escape.md_text(s)}" for s in _summary(rep)] + [""]
    lines.append("| " + " | ".join(HEAD) + " |")
    lines.append("|" + "---|" * len(HEAD))
    lines += ["| " + " | ".join([escape.md_name(r[0], table=True), *r[1:]]) + " |" for r in _rows(rep)]
    lines.append("")
    for t in rep.teams:
        if t.causes:
            lines.append(f"**Why {escape.md_name(t.team)} waited** (job-hours): " + "; ".join(
                f"{escape.md_text(c)} ({h:,.1f})" for c, h in t.causes[:TOP_CAUSES]))
            lines.append("")
    if rep.teams:
        names = ", ".join(f'"{escape.mermaid(t.team)}"' for t in rep.teams)
        lines += ["```mermaid", "xychart-beta", '  title "p95 wait (h): policy vs static partition"',
                  f"  x-axis [{names}]", '  y-axis "hours"',
                  "  bar [" + ", ".join(f"{t.wait_p95_h:.2f}" for t in rep.teams) + "]"]
        if all(t.static_wait_p95_h is not None for t in rep.teams):
            lines.append("  line [" + ", ".join(f"{t.static_wait_p95_h:.2f}" for t in rep.teams) + "]")
        lines += ["```", ""]
    if rep.never_fit:
        lines.append(f"{len(rep.never_fit)} job(s) can never fit, e.g. {escape.md_code(rep.never_fit[0][0])}: "
                     f"{escape.md_text(rep.never_fit[0][1])}")
    lines += ["", *(f"- **warning:** {escape.md_text(s)}" for s in warnings(rep.stalled))] if rep.stalled else []
    return "\n".join(lines) + "\n"


def render_json(rep: Report) -> str:
    return json.dumps(rep.as_json(), indent=2, sort_keys=True) + "\n"


def explain_job_json(tr: Track) -> str:
    """``--explain JOB --format json``: the same story as ``explain_job``, as one document."""
    j = tr.job
    doc = {
        "job": j.name, "where": j.where, "team": j.team, "clusterQueue": j.cq,
        "requests": {r: v / 1000 for r, v in sorted(j.requests.items())},
        "priority": j.priority, "priorityClass": j.priority_class or None,
        "submitSeconds": j.submit, "durationSeconds": j.duration,
        "neverFits": tr.never_fits or None,
        "firstAdmitSeconds": tr.first_admit if tr.first_admit >= 0 else None,
        "finishSeconds": tr.finish if tr.finish >= 0 else None,
        "flavors": dict(sorted(tr.flavors.items())),
        "waitHours": tr.wait / H,
        "waitCauses": [{"cause": c, "hours": v / H} for c, v in sorted(tr.causes.items(), key=lambda x: -x[1])],
        "preemptedBy": [{"atSeconds": t, "by": who, "reason": why} for t, who, why in tr.preempted_by],
        "preemptionsCaused": tr.caused,
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def explain_job(tr: Track) -> str:
    j = tr.job
    gpus = ", ".join(f"{r}={v / 1000:g}" for r, v in sorted(j.requests.items()))
    lines = [f"job {j.name} ({j.where or 'trace'}): team {j.team}, ClusterQueue {j.cq}, {gpus}, "
             f"priority {j.priority}{f' ({j.priority_class})' if j.priority_class else ''}",
             f"  submitted at t={j.submit:,.0f}s, runs {j.duration:,.0f}s once admitted"]
    if tr.never_fits:
        lines.append(f"  never admitted: {tr.never_fits}")
    elif tr.first_admit < 0:
        lines.append("  still pending when the trace ended")
    else:
        lines.append(f"  first admitted at t={tr.first_admit:,.0f}s on {', '.join(sorted(set(tr.flavors.values())))}; "
                     f"finished at t={tr.finish:,.0f}s" if tr.finish >= 0 else "  not finished")
    lines.append(f"  waited {tr.wait / H:,.2f} h in total")
    for c, v in sorted(tr.causes.items(), key=lambda x: -x[1]):
        lines.append(f"    {v / H:>8,.2f} h  {c}")
    for t, who, why in tr.preempted_by:
        lines.append(f"  preempted at t={t:,.0f}s by {who} ({why}); restarted")
    if tr.caused:
        lines.append(f"  its admission preempted {tr.caused} workload(s)")
    return "\n".join(escape.text(line) for line in lines) + "\n"
