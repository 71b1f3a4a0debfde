"""The serving rows of both reports: REPORT.md's table of serving reservations and
allocation.json's ``serving``, a row per deployment with its sizing arithmetic
(``compiler.serving.plan``), kept a block of teams at a time by those teams' units."""

from __future__ import annotations

from typing import Any

from compiler.emit.jsonfast import Written, written_at
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.report.fragments import Fragments, Pieces, joined, kept_blocks, team_name
from compiler.serving.plan import serving_report, serving_rows


@per_policy  # both reports: one scan of every team's deployments (the rows are only read)
def serving_plain(policy: Policy) -> list[dict[str, Any]]:
    return serving_report(policy)


def serving_section(policy: Policy, fragments: Fragments) -> list[str]:
    teams = _serving_teams(policy)
    if not teams:
        return []
    lines = ["## Serving reservations", "",
             "Serving runs outside Kueue on pools reserved by taint `gpupolicy.dev/serving=<pool>:NoSchedule` and "
             "label `node-restriction.kubernetes.io/gpupolicy-serving=<pool>`. Sizing per replica "
             "(GiB = 2^30 bytes; weights = parameters x bytes per dtype; KV = 2 x layers x KV heads x head dim x "
             "2 bytes per token):", "",
             "| team / deployment | cluster / pool | GPUs min..max (pool) | weights | KV needed | budget | "
             "headroom | TPOT bound / SLA |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    lines += kept_blocks(fragments, "REPORT.md serving", teams, _SERVING_BLOCK, team_name,
                         lambda block: "\n".join(map(_serving_line, _rows_of(policy, block)))) or []
    lines.append("")
    return lines


def _serving_line(r: dict[str, Any]) -> str:
    z = r["sizing"]
    if z is None:
        return f"| {r['team']} / {r['name']} | {r['cluster']} / {r['pool']} | - | - | - | - | - | - |"
    return (
        f"| {r['team']} / {r['name']} | {r['cluster']} / {r['pool']} | {r['gpusAtMin']}..{r['gpusAtMax']} "
        f"({r['poolGpus']}) | {z['weightsGiB']} GiB ({z['parameters'] / 1e9:.1f}B x {z['dtype']}) | "
        f"{z['kvNeededGiB']} GiB ({z['kvPerTokenKiB']:g} KiB/token x {z['maxModelLen']} x "
        f"{z['concurrentSequences']}) | {z['budgetGiB']} GiB ({z['tensorParallel']} x {z['gpuMemoryGiB']} x "
        f"{z['gpuMemoryUtilization']}) | {z['headroomGiB']} GiB | {z['tpotBoundMs']} ms / {z['tpotSlaMs']:g} ms"
        f"{'' if z['bandwidthSourced'] else ' (bandwidth unsourced)'} |")


@per_policy  # both reports
def _serving_teams(policy: Policy) -> list[Team]:
    """The teams with serving deployments, in the teams' order. Their rows read the fleet and
    their team alone (``serving_rows``), so both reports keep their text a block of teams at a
    time by those teams' units (``kept_blocks``): rendering the 1,100 deployments of 5,000 teams
    was ~0.1 s of allocation.json's process and ~0.05 s of REPORT.md's on every run."""
    return [t for t in policy.teams if t.model.spec.serving]


_SERVING_BLOCK = 16  # teams with deployments per block, on average


def _rows_of(policy: Policy, teams: list[Team]) -> list[dict[str, Any]]:
    return [row for team in teams for row in serving_rows(policy, team)]


def serving_written(policy: Policy, fragments: Fragments) -> Written:
    """allocation.json's ``serving``: the plain rows, or their text a block of teams at a time."""
    def text(nl: str) -> str | Pieces | None:
        teams = _serving_teams(policy)
        if not teams:
            return "[]"
        inner = nl + "  "

        def render(block: list[Team]) -> str | None:
            rows = [written_at(row, inner) for row in _rows_of(policy, block)]
            return None if None in rows else ",".join(inner + str(row) for row in rows)

        texts = kept_blocks(fragments, f"allocation.json serving {len(nl)}", teams, _SERVING_BLOCK, team_name, render)
        return None if texts is None else ["[", *joined(texts, ","), nl + "]"]

    return Written(lambda: serving_plain(policy), text)
