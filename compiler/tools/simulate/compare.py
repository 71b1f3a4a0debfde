"""``gpupolicy simulate --base REF``: the same trace against the base revision and the working
tree, per-team deltas for a pull request comment (markdown with a mermaid ``xychart-beta`` of p95
waits before and after), text or JSON.

The base revision's policies are extracted and compiled in memory exactly as ``gpupolicy diff``
does (compiler.tools.diff.extract_base); the trace is read against each side's own objects, so a
team or class that exists on one side only shows as such.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Mapping

from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.tools.diff import extract_base
from compiler.tools.simulate.report import Report, TeamStats


def base_files(opts: Options, ref: str) -> tuple[Mapping[str, bytes] | None, str]:
    """The rendered files of ``ref`` (None and a note when it has no policies or does not compile)."""
    with tempfile.TemporaryDirectory(prefix="gpupolicy-simulate-") as tmp:
        root, policy_dir, existed = extract_base(opts.root, opts.policy_dir, ref, Path(tmp))
        if not existed:
            return None, f"no policy directory at {ref}"
        res = compile_policies(Options(root=root, policy_dir=policy_dir, out_dir=root / "out", verify=False))
        if not res.ok:
            return None, f"the policies at {ref} do not compile"
        return dict(res.out_files), ""


def _d(new: float | None, old: float | None, digits: int = 2) -> str:
    if new is None or old is None:
        return "-"
    delta = new - old
    return f"{new:,.{digits}f} ({'+' if delta >= 0 else ''}{delta:,.{digits}f})"


Row = tuple[str, TeamStats | None, TeamStats | None]


def _rows(base: Report | None, head: Report) -> list[Row]:
    old = {t.team: t for t in base.teams} if base else {}
    new = {t.team: t for t in head.teams}
    return [(name, old.get(name), new.get(name)) for name in sorted(set(old) | set(new))]


HEAD = ["team", "wait p50 h", "wait p95 h", "wait max h", "GPU-h", "borrowed GPU-h", "preempted", "never fit"]


def _cells(name: str, o: TeamStats | None, n: TeamStats | None) -> list[str]:
    if n is None:
        return [name, "(removed)"] + [""] * (len(HEAD) - 2)
    if o is None:
        return [f"{name} (new)", f"{n.wait_p50_h:.2f}", f"{n.wait_p95_h:.2f}", f"{n.wait_max_h:.1f}",
                f"{n.gpu_hours:,.0f}", f"{n.borrowed_gpu_hours:,.0f}", str(n.preemptions_suffered), str(n.never_fit)]
    return [name, _d(n.wait_p50_h, o.wait_p50_h), _d(n.wait_p95_h, o.wait_p95_h), _d(n.wait_max_h, o.wait_max_h, 1),
            _d(n.gpu_hours, o.gpu_hours, 0), _d(n.borrowed_gpu_hours, o.borrowed_gpu_hours, 0),
            _d(n.preemptions_suffered, o.preemptions_suffered, 0), _d(n.never_fit, o.never_fit, 0)]


def render_markdown(ref: str, base: Report | None, head: Report, note: str) -> str:
    lines = [f"### gpupolicy simulate: {head.cluster}, {ref} → working tree", ""]
    if note:
        lines += [f"_{note}: only the working tree is shown._", ""]
    lines += [f"{head.jobs} jobs; utilisation {head.utilisation:.1%}"
              + (f" (base {base.utilisation:.1%})" if base else ""), ""]
    lines.append("| " + " | ".join(HEAD) + " |")
    lines.append("|" + "---|" * len(HEAD))
    lines += ["| " + " | ".join(_cells(*r)) + " |" for r in _rows(base, head)]
    rows = [r for r in _rows(base, head) if r[2] is not None]
    if rows:
        lines += ["", "```mermaid", "xychart-beta", f'  title "p95 wait (h): {ref} (bar) vs working tree (line)"',
                  "  x-axis [" + ", ".join(f'"{r[0]}"' for r in rows) + "]", '  y-axis "hours"',
                  "  bar [" + ", ".join(f"{r[1].wait_p95_h:.2f}" if r[1] else "0" for r in rows) + "]",
                  "  line [" + ", ".join(f"{r[2].wait_p95_h:.2f}" for r in rows if r[2]) + "]", "```"]
    return "\n".join(lines) + "\n"


def render_text(ref: str, base: Report | None, head: Report, note: str) -> str:
    rows = [HEAD] + [_cells(*r) for r in _rows(base, head)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    out = [f"cluster {head.cluster}: {ref} -> working tree, {head.jobs} jobs" + (f" ({note})" if note else "")]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out) + "\n"


def render_json(ref: str, base: Report | None, head: Report, note: str) -> str:
    return json.dumps({"base": ref, "note": note, "head_report": head.as_json(),
                       "base_report": base.as_json() if base else None}, indent=2, sort_keys=True) + "\n"


RENDERERS = {"markdown": render_markdown, "text": render_text, "json": render_json}
