"""Rendering of ``gpupolicy diff``: markdown (a PR comment), json, text; and the command itself."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Callable

from compiler import escape
from compiler.cli.render import FORMATS, choose_format
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, sort_diagnostics
from compiler.tools.diff import DiffReport, Row, TeamDelta, run_diff

MARKER = "<!-- gpupolicy-diff -->"  # lets CI find and update its own PR comment
MAX_MARKDOWN = 60_000  # GitHub comments hold 65,536 characters


def _amount(v: int | None) -> str:
    return "unlimited" if v is None else str(v)


def _change(old: int | None, new: int | None, present: tuple[bool, bool]) -> str:
    if not present[0]:
        return f"— → {_amount(new)}"
    if not present[1]:
        return f"{_amount(old)} → —"
    if old == new:
        return _amount(old)
    delta = f" ({new - old:+d})" if old is not None and new is not None else ""
    return f"{_amount(old)} → {_amount(new)}{delta}"


def budget_cells(old: Row | None, new: Row | None) -> tuple[str, str, str]:
    present = (old is not None, new is not None)
    o = old or Row(0, 0, 0)
    n = new or Row(0, 0, 0)
    return (_change(o.guaranteed, n.guaranteed, present), _change(o.borrowable, n.borrowable, present),
            _change(o.lendable, n.lendable, present))


def _v(value: Any, *, table: bool = False) -> str:
    """A policy value in the PR comment: always a code span (nothing in it renders)."""
    if value is None:
        return "—"
    return escape.md_code(json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value),
                          table=table)


def _summary(r: DiffReport) -> str:
    n = len(r.added) + len(r.removed) + len(r.modified)
    parts = [f"{len(r.teams)} team(s) affected", f"{len(r.fleet)} fleet change(s)",
             f"{n} manifest(s) changed ({len(r.added)} added, {len(r.removed)} removed, {len(r.modified)} modified)"]
    if r.flags:
        parts.append(f"⚠️ {len(r.flags)} change(s) need attention")
    return " · ".join(parts)


def _team_lines(d: TeamDelta, *, markdown: bool) -> list[str]:
    lines = []
    if d.budgets:
        if markdown:
            lines += ["| cluster | class | guaranteed | borrowable | lendable |", "|---|---|---:|---:|---:|"]
        for cluster, cls, old, new in d.budgets:
            g, b, l_ = budget_cells(old, new)
            lines.append(f"| {escape.md_name(cluster, table=True)} | {escape.md_name(cls, table=True)} "
                         f"| {g} | {b} | {l_} |" if markdown
                         else escape.text(f"  {cluster}/{cls}: guaranteed {g}; borrowable {b}; lendable {l_}"))
        lines.append("")
    for what, old, new in d.attributes:
        lines.append(f"- {escape.md_text(what)}: {_v(old)} → {_v(new)}" if markdown
                     else escape.text(f"  {what}: {old} -> {new}"))
    for name, what, old, new in d.serving:
        if what in ("added", "removed"):
            lines.append(f"- serving {escape.md_code(name)} {what} ({_v(old if what == 'removed' else new)})"
                         if markdown else escape.text(f"  serving {name} {what}"))
        else:
            lines.append(f"- serving {escape.md_code(name)}: {escape.md_code(what)} {_v(old)} → {_v(new)}"
                         if markdown else escape.text(f"  serving {name}: {what} {old} -> {new}"))
    return lines


def render_markdown(r: DiffReport) -> str:
    # Every policy-derived string goes through compiler.escape: a code span, a name, or inert text.
    out = [MARKER, f"## gpupolicy diff against {escape.md_code(r.base)}", ""]
    if r.base_note:
        out += [f"> {escape.md_text(r.base_note)}", ""]
    out += [f"**{_summary(r)}**", ""]
    if r.flags:
        out += ["### ⚠️ Changes a sync cannot apply in place", "", "| kind | cluster | object | why |", "|---|---|---|---|"]
        out += [f"| {escape.md_text(f.kind)} | {escape.md_name(f.cluster, table=True)} | "
                f"{escape.md_code(f.obj, table=True)} | {escape.md_text(f.message)} |" for f in r.flags]
        out.append("")
    if r.teams:
        out += ["### Teams", ""]
        for d in r.teams:
            out += [f"#### {escape.md_code(d.team)}" + ("" if d.status == "changed" else f" ({escape.md_text(d.status)})"),
                    ""]
            out += _team_lines(d, markdown=True)
            out.append("")
    if r.fleet:
        out += ["### Fleet", "", "| what | before | after |", "|---|---|---|"]
        out += [f"| {escape.md_text(what)} | {_v(old, table=True)} | {_v(new, table=True)} |" for what, old, new in r.fleet]
        out.append("")
    if r.added or r.removed or r.modified:
        out += ["### Manifests", ""]
        out += [f"- added {escape.md_code(p)}" for p in r.added] + [f"- removed {escape.md_code(p)}" for p in r.removed]
        out.append("")
        text = "\n".join(out)
        for i, (path, diff) in enumerate(r.modified):
            block = (f"<details><summary>modified <code>{escape.html(path)}</code></summary>\n\n"
                     f"{escape.md_fence(diff, 'diff')}\n"
                     "</details>\n")
            if len(text) + len(block) > MAX_MARKDOWN:
                text += f"\n… {len(r.modified) - i} more modified file(s); run `gpupolicy diff` locally.\n"
                return text
            text += block
        return text + "\n"
    if not (r.flags or r.teams or r.fleet):
        out.append("No change to the rendered output.")
    return "\n".join(out) + "\n"


def render_text(r: DiffReport) -> str:
    out = [escape.text(f"gpupolicy diff against {r.base}"), _summary(r).replace("⚠️ ", "")]
    if r.base_note:
        out.append(escape.text(f"note: {r.base_note}"))
    for f in r.flags:
        out.append(escape.text(f"! {f.kind}: {f.cluster}: {f.obj} {f.message}"))
    for d in r.teams:
        out.append(escape.text(f"team {d.team}" + ("" if d.status == "changed" else f" ({d.status})")))
        out += [line for line in _team_lines(d, markdown=False) if line]
    for what, old, new in r.fleet:
        out.append(escape.text(f"fleet {what}: {old} -> {new}"))
    out += [escape.text(f"added    {p}") for p in r.added] + [escape.text(f"removed  {p}") for p in r.removed]
    for path, diff in r.modified:
        out += [escape.text(f"modified {path}"), *("    " + escape.text(line) for line in diff.splitlines())]
    return "\n".join(out) + "\n"


def render_json(r: DiffReport) -> str:
    data = asdict(r)
    data["modified"] = [{"path": p, "diff": d} for p, d in r.modified]
    for team in data["teams"]:
        team["budgets"] = [{"cluster": c, "class": k, "before": o, "after": n} for c, k, o, n in team["budgets"]]
        team["attributes"] = [{"what": w, "before": o, "after": n} for w, o, n in team["attributes"]]
        team["serving"] = [{"deployment": d, "what": w, "before": o, "after": n} for d, w, o, n in team["serving"]]
    data["fleet"] = [{"what": w, "before": o, "after": n} for w, o, n in r.fleet]
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


RENDERERS: dict[str, Callable[[DiffReport], str]] = {"markdown": render_markdown, "json": render_json, "text": render_text}


def diff_command(opts: Any, ns: argparse.Namespace) -> int:
    """Exit 0 with the report on stdout; 1 if the working tree does not compile; 2 on bad usage."""
    report, diags = run_diff(opts, ns.base)
    if report is None:  # the working tree does not compile: say why
        FORMATS[choose_format(None)](sort_diagnostics(diags), opts.root, sys.stderr, sys.stderr.isatty())
        return EXIT_POLICY
    sys.stdout.write(RENDERERS[ns.format or "markdown"](report))
    return EXIT_OK
