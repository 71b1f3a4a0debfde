"""Charts of capacity and allocation in REPORT.md, as mermaid blocks GitHub renders.

Per cluster, one ``xychart-beta`` of its GPU classes: capacity as bars and what teams are
guaranteed as a line. Not two bar series: how mermaid draws a second one has changed (drawn over
the first in older releases; stacked on it in mermaid-js/mermaid
``packages/mermaid/src/diagrams/xychart/chartBuilder/components/plot/barPlot.ts`` on ``develop``),
and GitHub's mermaid version is not pinned, so a bar and a line read the same either way. Then, collapsed, one ``pie`` per class: who is guaranteed what, the largest
``PIE_SLICES`` teams by name and the rest as one slice, and the capacity no team is guaranteed.
Units are the class's own (GPUs, MIG instances or time-sliced shares), so bars compare within a
class, not across. Every chart is a few hundred characters whatever the fleet's size, far under
mermaid's limits (``compiler.report.mermaid``).
"""

from __future__ import annotations

import heapq

from compiler import escape
from compiler.policy.graph import Policy
from compiler.report.mermaid import block

PIE_SLICES = 8  # teams named in a pie; the rest are one slice


def _category(s: str) -> str:
    return f'"{escape.mermaid(s)}"'


def capacity_chart(policy: Policy, cluster: str) -> list[str]:
    classes = [(cid, cls.capacity, policy.allocation.guaranteed_total(cluster, cid))
               for cid, cls in policy.classes.get(cluster, {}).items() if cls.capacity > 0]
    if not classes:
        return []
    return block([
        "xychart-beta",
        f'  title "{escape.mermaid(cluster)}: capacity (bars) and guaranteed (line) per class"',
        "  x-axis [" + ", ".join(_category(cid) for cid, _c, _g in classes) + "]",
        '  y-axis "GPUs, MIG instances or shares"',
        "  bar [" + ", ".join(str(c) for _cid, c, _g in classes) + "]",
        "  line [" + ", ".join(str(g) for _cid, _c, g in classes) + "]",
    ]) + [""]


def allocation_pie(policy: Policy, cluster: str, cid: str, capacity: int) -> list[str]:
    # (-n, team, n): largest first, then by name, compared in C (no key function per entry);
    # only the first PIE_SLICES are ordered (heapq.nsmallest == sorted(...)[:k])
    held = [(-g, e.team, g) for e in policy.allocation.for_class(cluster, cid) if (g := e.guaranteed.value)]
    shown = heapq.nsmallest(PIE_SLICES, held)
    slices = [(team, n) for _k, team, n in shown]
    total = sum(n for _k, _t, n in held)
    if len(held) > PIE_SLICES:
        slices.append((f"{len(held) - PIE_SLICES:,} other teams", total - sum(n for _k, _t, n in shown)))
    free = capacity - total
    if free > 0:
        slices.append(("guaranteed to no team", free))
    if not slices:
        return []
    return block(["pie showData", f"  title {escape.mermaid(cluster)} {escape.mermaid(cid)}, capacity {capacity:,}",
                  *(f'  "{escape.mermaid(name)}" : {n}' for name, n in slices)]) + [""]


def cluster_charts(policy: Policy, cluster: str) -> list[str]:
    """The charts of one cluster's section: the capacity chart, then the pies collapsed."""
    pies: list[str] = []
    for cid, cls in policy.classes.get(cluster, {}).items():
        if cls.capacity > 0:
            pies += allocation_pie(policy, cluster, cid, cls.capacity)
    lines = capacity_chart(policy, cluster)
    if pies:
        lines += ["<details><summary>Guaranteed per team, one chart per class</summary>", "", *pies, "</details>", ""]
    return lines
