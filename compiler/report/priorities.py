"""REPORT.md's priority section: the tiers, who may use which, and where serving's class is allowed."""

from __future__ import annotations

from compiler.policy.graph import Policy, Team
from compiler.policy.labels import LABEL_PRIORITY_CLASS
from compiler.policy.priorities import SERVING_PRIORITY_CLASS, fleet_default_tier, ordered_tiers, team_priorities
from compiler.report.fragments import Fragments, Rendered, kept_blocks, team_name
from compiler.report.report_tables import SideFiles, table

QUOTA_NAME = "gpupolicy-reserved-priority"  # compiler.lower.admission_priority.QUOTA_NAME (reports do not import lower)


def _names(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def priorities_section(policy: Policy, fragments: Fragments = Rendered(), side: SideFiles | None = None) -> list[str]:
    """The tiers, then a row per team, kept a block of teams at a time (a row reads the fleet and
    its team alone: ``compiler.policy.priorities.team_priorities``, tests/test_rule_scopes.py;
    5,000 rows were 0.07-0.13 s of REPORT.md's process on every run)."""
    tiers = ordered_tiers(policy)
    serving = policy.fleet.spec.defaults.serving_priority_value
    default, _ = fleet_default_tier(policy)
    lines = ["## Priority tiers", ""]
    if tiers:
        lines += ["| tier | value | fleet default | reserved for |", "|---|---:|---|---|"]
        for t in tiers:
            lines.append(f"| `{t.name}` | {t.value} | {'yes' if t.name == default else ''} | "
                         f"{_names(t.reserved_for) if t.reserved_for is not None else 'any team at or above it'} |")
        lines += ["", f"Every GPU workload in a training namespace names its tier with `{LABEL_PRIORITY_CLASS}` "
                  "(Kueue v0.19.2 would otherwise rank it at 0 or by its pods' PriorityClass); admission denies a tier "
                  "or a pod `priorityClassName` the team may not use.", ""]
        head = ["| team | its tier (default for its jobs) | may use | from |", "|---|---|---|---|"]
        rows = kept_blocks(fragments, "REPORT.md priorities", sorted(policy.teams, key=team_name), _BLOCK, team_name,
                           lambda block: "\n".join(_team_row(policy, team) for team in block)) or []
        lines += table(side, "priorities", "Priority tiers: each team's", head, rows, len(policy.teams))
        lines.append("")
    lines += [f"PriorityClass `{SERVING_PRIORITY_CLASS}` (value {serving}) is usable only in serving namespaces: "
              f"admission denies it elsewhere, and ResourceQuota `{QUOTA_NAME}` (pods: 0 at that class and the "
              "system classes) backs it in every other gpupolicy namespace.", ""]
    return lines


_BLOCK = 64  # teams per block of rows, on average


def _team_row(policy: Policy, team: Team) -> str:
    p = team_priorities(policy, team)
    skipped = p.reserved_skipped(policy)
    note = f"; reserved for others: {_names(skipped)}" if skipped else ""
    return f"| {team.name} | `{p.tier}` ({p.tier_origin}) | {_names(p.allowed)} | {p.allowed_origin}{note} |"
