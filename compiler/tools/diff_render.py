"""Rendering of ``gpupolicy diff``: markdown (a PR comment), json, text; and the command itself.

The markdown is a PR comment, so it has a size budget (``MAX_MARKDOWN`` bytes, ``--max-bytes``):
GitHub refuses a comment body above 65,536 characters, and a workflow that cuts the text blindly
loses the end of whatever table it cuts (issue 19: a fleet-wide change at 250 teams lost the team
table without a word). ``render_markdown`` fits it by construction and says what it left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any, Callable

from compiler import escape
from compiler.cli.render import print_to_stderr
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, UsageError
from compiler.tools.diff import DiffReport, Row, TeamDelta, run_diff

MARKER = "<!-- gpupolicy-diff -->"  # lets CI find and update its own PR comment
MAX_MARKDOWN = 60_000  # bytes: GitHub comments hold 65,536 characters; the comment workflow adds a line


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


def _net(teams: list[TeamDelta]) -> tuple[int, int, int, int, int]:
    """Net change over every budget row: guaranteed, finite borrowable, lendable, and the rows whose
    borrowable becomes / stops being unlimited (no number can carry those)."""
    g = b = lend = to_unl = from_unl = 0
    for d in teams:
        for _c, _k, old, new in d.budgets:
            o, n = old or Row(0, 0, 0), new or Row(0, 0, 0)
            g += n.guaranteed - o.guaranteed
            lend += n.lendable - o.lendable
            if (o.borrowable is None) != (n.borrowable is None):
                to_unl += n.borrowable is None
                from_unl += o.borrowable is None
            elif o.borrowable is not None and n.borrowable is not None:
                b += n.borrowable - o.borrowable
    return g, b, lend, to_unl, from_unl


def _signed(n: int) -> str:
    return f"{n:+,d}".replace("-", "−") if n else "0"


def _borrow_cell(b: int, to_unl: int, from_unl: int) -> str:
    return _signed(b) + (f", {to_unl} → unlimited" if to_unl else "") + (f", {from_unl} unlimited →" if from_unl else "")


def _team_row(d: TeamDelta) -> str:
    g, b, lend, to_unl, from_unl = _net([d])
    also = [escape.md_text(what) for what, _o, _n in d.attributes]
    if d.serving:
        also.append(f"serving ({len(d.serving)})")
    return (f"| {escape.md_name(d.team, table=True)} | {escape.md_text(d.status)} | {len(d.budgets)} | {_signed(g)} | "
            f"{_borrow_cell(b, to_unl, from_unl)} | {_signed(lend)} | {', '.join(also)} |\n")


@dataclass
class _Part:
    """A budgeted part of the comment: ``items`` are kept in order while they fit, the rest is
    counted and named (``what``) in the part and in the closing notice."""

    what: str
    head: str
    items: list[str]
    tail: str = ""
    kept: int = 0

    @property
    def left_out(self) -> int:
        return len(self.items) - self.kept


def _size(s: str) -> int:
    return len(s.encode())


def _omitted_line(p: _Part) -> str:
    return f"\n*… {p.left_out:,} more {p.what} left out of this comment (see the note at the end).*\n"


_NOTICE_RESERVE = 200  # the "… N more" line of a part, reserved while its items are fitted
_FOOTER_RESERVE = 1_200  # the closing notice, with a line per part that lost items


def _fit(parts: list[_Part], budget: int) -> None:
    """Keep items part by part, in priority order, while the whole stays within ``budget`` bytes."""
    left = budget
    for p in parts:
        if not p.items:
            continue
        frame = _size(p.head) + _size(p.tail) + _NOTICE_RESERVE
        if frame > left:
            p.kept = 0
            continue
        left -= frame
        for item in p.items:
            if _size(item) > left:
                break
            left -= _size(item)
            p.kept += 1
        if p.kept == len(p.items):
            left += _NOTICE_RESERVE


def _render_part(p: _Part) -> str:
    if not p.items or (not p.kept and p.left_out):
        return ""
    return p.head + "".join(p.items[:p.kept]) + (_omitted_line(p) if p.left_out else "") + p.tail


def render_markdown(r: DiffReport, budget: int | None = MAX_MARKDOWN) -> str:
    """The PR comment: summary first, then per team one row, then detail in collapsed sections.

    Within ``budget`` bytes of UTF-8 (GitHub counts characters, at most one per byte) by
    construction: the summary always, then the parts in the order that matters (team table, flags,
    fleet changes, per-team detail, manifest lists, manifest diffs), each kept while it fits;
    whatever is left out is counted in its part and named in a closing notice that says where the
    whole diff is. ``None``: no budget (the job summary, a terminal).
    Every policy-derived string goes through compiler.escape: a code span, a name, or inert text."""
    head = f"{MARKER}\n## gpupolicy diff against {escape.md_code(r.base)}\n\n"
    if r.base_note:
        head += f"> {escape.md_text(r.base_note)}\n\n"
    head += f"**{_summary(r)}**\n\n"
    if r.teams:
        g, b, lend, to_unl, from_unl = _net(r.teams)
        head += (f"Net over all teams: guaranteed {_signed(g)} · borrowable {_borrow_cell(b, to_unl, from_unl)} · "
                 f"lendable {_signed(lend)} (GPUs or shares, summed over clusters and classes).\n\n")
    if not (r.flags or r.teams or r.fleet or r.added or r.removed or r.modified):
        return head + "No change to the rendered output.\n"

    teams = _Part("team row(s)", f"### Teams ({len(r.teams):,})\n\n"
                  "| team | status | budget rows | guaranteed | borrowable | lendable | also changed |\n"
                  "|---|---|---:|---:|---:|---:|---|\n", [_team_row(d) for d in r.teams], "\n")
    flags = _Part("flagged change(s)", "### ⚠️ Changes a sync cannot apply in place\n\n"
                  "| kind | cluster | object | why |\n|---|---|---|---|\n",
                  [f"| {escape.md_text(f.kind)} | {escape.md_name(f.cluster, table=True)} | "
                   f"{escape.md_code(f.obj, table=True)} | {escape.md_text(f.message)} |\n" for f in r.flags], "\n")
    fleet = _Part("fleet change(s)", f"### Fleet ({len(r.fleet):,})\n\n| what | before | after |\n|---|---|---|\n",
                  [f"| {escape.md_text(what)} | {_v(old, table=True)} | {_v(new, table=True)} |\n"
                   for what, old, new in r.fleet], "\n")
    detail = _Part("team detail(s)", f"<details><summary>Per-team detail ({len(r.teams):,} teams)</summary>\n\n",
                   [f"#### {escape.md_code(d.team)}" + ("" if d.status == "changed" else f" ({escape.md_text(d.status)})")
                    + "\n\n" + "\n".join(_team_lines(d, markdown=True)).strip("\n") + "\n\n" for d in r.teams], "</details>\n\n")
    n = len(r.added) + len(r.removed) + len(r.modified)
    listing = _Part("added or removed file name(s)",
                    f"### Manifests ({n:,})\n\n<details><summary>{len(r.added):,} added, {len(r.removed):,} removed"
                    "</summary>\n\n",
                    [f"- added {escape.md_code(p)}\n" for p in r.added]
                    + [f"- removed {escape.md_code(p)}\n" for p in r.removed], "\n</details>\n\n")
    diffs = _Part("modified file diff(s)", "" if listing.items else f"### Manifests ({n:,})\n\n",
                  [f"<details><summary>modified <code>{escape.html(path)}</code></summary>\n\n"
                   f"{escape.md_fence(diff, 'diff')}\n</details>\n" for path, diff in r.modified], "\n")
    shown = [flags, teams, fleet, detail, listing, diffs]
    if budget is None:
        for p in shown:
            p.kept = len(p.items)
    else:
        _fit([teams, flags, fleet, detail, listing, diffs], budget - _size(head) - _FOOTER_RESERVE)
    out = head + "".join(_render_part(p) for p in shown)
    lost = [p for p in shown if p.left_out]
    if lost:
        out += ("---\n**Left out of this comment** to keep it within GitHub's 65,536-character limit: "
                + "; ".join(f"{p.left_out:,} of {len(p.items):,} {p.what}" for p in lost)
                + f". The whole diff: {escape.md_code(f'gpupolicy diff --base {r.base} --max-bytes 0')}.\n")
    return out


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
        print_to_stderr(diags, opts.root)
        return EXIT_POLICY
    fmt = ns.format or "markdown"
    if fmt == "markdown":
        max_bytes = getattr(ns, "max_bytes", MAX_MARKDOWN)
        if max_bytes < 0:
            raise UsageError(f"--max-bytes {max_bytes} is negative (0: no limit)")
        sys.stdout.write(render_markdown(report, max_bytes or None))
    else:
        sys.stdout.write(RENDERERS[fmt](report))
    return EXIT_OK
