"""REPORT.md: the removals the policy accepts on purpose (``acknowledgedRemovals``, GITOPS302), so
the report records who accepted which change a sync cannot undo, and why."""

from __future__ import annotations

from compiler.policy.graph import Policy


def acknowledged_section(policy: Policy) -> list[str]:
    rows = [(policy.fleet_src.path, a) for a in policy.fleet.spec.acknowledged_removals]
    rows += [(t.path, a) for t in policy.teams for a in t.model.spec.acknowledged_removals]
    if not rows:
        return []
    lines = ["## Acknowledged removals", "",
             "Objects this policy removes from a cluster on purpose (a sync cannot undo them; GITOPS302).", "",
             "| cluster | kind | name | reason | accepted in |", "|---|---|---|---|---|"]
    for path, a in sorted(rows, key=lambda r: (r[1].cluster, r[1].kind, r[1].name, r[0])):
        reason = a.reason.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {a.cluster} | {a.kind} | `{a.name}` | {reason} | `{path}` |")
    return [*lines, ""]
