"""The cohort tree of REPORT.md: departments (Kueue Cohorts) and their teams, readable at any size.

Up to ``FULL_MAX`` nodes every team is drawn under its department. Beyond that a tree of teams is
an unreadable strip (250 teams) and then too large for mermaid to draw at all (1,000 teams), so
it is collapsed to departments, each labelled with its team counts; ``allocation.json`` lists
every department's teams. Beyond ``DEPARTMENTS_MAX`` departments the deepest levels are folded
into their ancestors ("+ N sub-departments"), which keeps the diagram below mermaid's limits
(``compiler.report.mermaid``).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from compiler import escape
from compiler.policy.graph import Policy
from compiler.report.mermaid import NodeIds, block

FULL_MAX = 40  # departments + teams drawn one by one
DEPARTMENTS_MAX = 150  # departments drawn when collapsed: ~20 kB of diagram text, 149 edges


def _depths(parents: dict[str, str | None]) -> dict[str, int]:
    depths: dict[str, int] = {}
    for name in parents:
        chain: list[str] = []
        node: str | None = name
        while node is not None and node not in depths and node not in chain and node in parents:
            chain.append(node)
            node = parents[node]
        base = depths.get(node, -1) if node is not None else -1
        for i, n in enumerate(reversed(chain)):
            depths[n] = base + 1 + i
    return depths


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cohort_tree(policy: Policy) -> list[str]:
    """The section's lines: a caption when collapsed, then the mermaid block."""
    departments = sorted(policy.fleet.spec.departments, key=lambda d: d.name)
    teams = sorted(policy.teams, key=lambda t: t.name)
    dept_id, team_id = NodeIds("d"), NodeIds("t")
    if len(departments) + len(teams) <= FULL_MAX:
        lines = ["graph TD"]
        for d in departments:
            lines.append(f'  {dept_id(d.name)}["{escape.mermaid(d.name)} (weight {d.weight:g})"]')
        for d in departments:
            if d.parent:
                lines.append(f"  {dept_id(d.parent)} --> {dept_id(d.name)}")
        for t in teams:
            lines.append(f'  {team_id(t.name)}(["{escape.mermaid(t.name)}: {escape.mermaid(t.model.spec.isolation)}"])')
            lines.append(f"  {dept_id(t.model.spec.department)} --> {team_id(t.name)}")
        return block(lines)

    parents = {d.name: d.parent for d in departments}
    depths = _depths(parents)
    direct = Counter(t.model.spec.department for t in teams)
    below: Counter[str] = Counter()  # teams in the subtree
    subdepts: Counter[str] = Counter()  # departments in the subtree
    for name in parents:
        below[name] += direct[name]
        seen = {name}
        node = parents[name]
        while node is not None and node in parents and node not in seen:
            seen.add(node)
            below[node] += direct[name]
            subdepts[node] += 1
            node = parents[node]
    by_depth: dict[int, int] = defaultdict(int)
    for n in depths.values():
        by_depth[n] += 1
    max_depth, drawn_count = -1, 0
    for depth in sorted(by_depth):
        if drawn_count + by_depth[depth] > DEPARTMENTS_MAX:
            break
        max_depth, drawn_count = depth, drawn_count + by_depth[depth]
    drawn = [d for d in departments if depths.get(d.name, 0) <= max_depth]
    if not drawn:  # more roots than can be drawn: the first ones, and a count of the rest
        drawn = [d for d in departments if depths.get(d.name, 0) == 0][:DEPARTMENTS_MAX]
    shown = {d.name for d in drawn}
    lines = ["graph LR"]
    for d in drawn:
        label = f"{escape.mermaid(d.name)} · weight {d.weight:g} · "
        if not direct[d.name] and below[d.name]:
            label += f"{_plural(below[d.name], 'team')} below"
        else:
            label += _plural(direct[d.name], "team") + (f", {below[d.name]:,} with those below"
                                                         if below[d.name] != direct[d.name] else "")
        if depths.get(d.name, 0) == max_depth and subdepts[d.name]:
            label += f" · + {_plural(subdepts[d.name], 'sub-department')}"
        lines.append(f'  {dept_id(d.name)}["{label}"]')
    for d in drawn:
        if d.parent and d.parent in shown:
            lines.append(f"  {dept_id(d.parent)} --> {dept_id(d.name)}")
    hidden = len(departments) - len(drawn)
    caption = (f"{_plural(len(teams), 'team')} in {_plural(len(departments), 'department')}: collapsed to departments "
               f"with their team counts (a tree of more than {FULL_MAX} nodes cannot be read)"
               + (f"; {_plural(hidden, 'deeper department')} folded into their ancestors" if hidden else "")
               + ". `allocation.json` lists each department's teams.")
    return [caption, "", *block(lines)]
