"""The team-scope rules read the fleet and their team only (``compiler.diagnostics.Scope.TEAM``).

That promise is what lets the store keep a team's team-scope findings under its unit's key (the
fleet's and the team file's bytes: ``compiler.pipeline.run._TeamVerdicts``), so a one-team edit
runs them for one team. Held here: for every team of the demo, of each golden case and of a
generated organisation, the team-scope checks give the same findings on the whole policy as on a
policy of the fleet and that team alone. A check that read another team (or the allocation, which
every team's budgets shape) would differ for some team of these organisations.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO
from helpers import policy_at

from compiler.diagnostics import Diagnostic, Scope
from compiler.policy.graph import Policy, Team
from compiler.validate.driver import checks_of

GOLDEN = REPO / "tests" / "golden"
CASES = ["demo", "demo-findings", *sorted(p.name for p in GOLDEN.iterdir() if (p / "policies").is_dir()), "generated"]


def _team_findings(policy: Policy, team: Team) -> list[str]:
    found: list[Diagnostic] = [d for check in checks_of(Scope.TEAM) for d in check(policy, team)]
    return [repr(d) for d in found]


def _tree(case: str, tmp: Path) -> Path:
    root = tmp / "whole"
    if case == "generated":
        from bench.generate import generate

        generate(30, 6, root, seed=7)
    elif case.startswith("demo"):
        shutil.copytree(REPO / "policies", root / "policies")
    else:
        shutil.copytree(GOLDEN / case / "policies", root / "policies")
    if case == "demo-findings":  # team-scope findings to compare: FLEET009 (exclusive on MIG), FLEET011
        vision = root / "policies" / "teams" / "vision.yaml"
        vision.write_text(vision.read_text().replace("isolation: isolated", "isolation: exclusive")
                          .replace("clusters: [onprem]", "clusters: [onprem, cloud]"))
    return root


@pytest.mark.parametrize("case", CASES)
def test_team_scope_checks_read_the_fleet_and_their_team_only(case: str, tmp_path: Path) -> None:
    root = _tree(case, tmp_path)
    policy, _ = policy_at(root)
    assert policy is not None
    compared = 0
    for team in policy.teams:
        alone = tmp_path / f"alone-{team.name}"
        shutil.copytree(root / "policies", alone / "policies",
                        ignore=lambda d, names: [n for n in names if Path(d).name == "teams" and
                                                 f"policies/teams/{n}" != team.path])
        single, _ = policy_at(alone)
        if single is None or single.team(team.name) is None:
            continue  # a team that cannot stand alone (none of the cases has one, asserted below)
        mine = single.team(team.name)
        assert mine is not None
        assert _team_findings(single, mine) == _team_findings(policy, team), team.name
        compared += 1
    assert compared == len(policy.teams)


def test_the_comparison_sees_team_scope_findings(tmp_path: Path) -> None:
    """Not vacuous: on ``demo-findings`` the team-scope checks find something to compare."""
    policy, _ = policy_at(_tree("demo-findings", tmp_path))
    assert policy is not None
    vision = policy.team("vision")
    assert vision is not None
    found = " ".join(_team_findings(policy, vision))
    assert "FLEET009" in found and "FLEET011" in found
