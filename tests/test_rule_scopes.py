"""The team-scope rules read the fleet and their team only (``compiler.diagnostics.Scope.TEAM``),
and the fleet-scope rules the fleet file only (``Scope.FLEET``).

That promise is what lets the store keep a team's team-scope findings under its unit's key (the
fleet's and the team file's bytes: ``compiler.pipeline.units.StoredVerdicts``), so a one-team edit
runs them for one team, and the fleet-scope findings under the fleet file's key. Held here: for every team of the demo, of each golden case and of a
generated organisation, the team-scope checks give the same findings on the whole policy as on a
policy of the fleet and that team alone. A check that read another team (or the allocation, which
every team's budgets shape) would differ for some team of these organisations.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO
from helpers import policy_at, team_alone

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
        single, mine = team_alone(root, team, tmp_path / f"alone-{team.name}")
        if single is None or mine is None:
            continue  # a team that cannot stand alone (none of the cases has one, asserted below)
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


def _fleet_findings(policy: Policy) -> list[str]:
    return [repr(d) for check in checks_of(Scope.FLEET) for d in check(policy)]


def _same_fleet_findings_alone(root: Path, tmp_path: Path) -> list[str]:
    policy, _ = policy_at(root)
    assert policy is not None
    alone = tmp_path / "fleet-alone"
    shutil.copytree(root / "policies", alone / "policies",
                    ignore=lambda d, names: [n for n in names if Path(d).name == "teams"])
    fleet, _ = policy_at(alone)
    assert fleet is not None and not fleet.teams
    assert _fleet_findings(fleet) == _fleet_findings(policy)
    return _fleet_findings(policy)


@pytest.mark.parametrize("case", CASES)
def test_fleet_scope_checks_read_the_fleet_only(case: str, tmp_path: Path) -> None:
    """The fleet-scope findings of the whole policy are those of the fleet file without any team
    (among them every DeviceClass proof: DRA002-DRA008, ``check_dra_fleet``)."""
    _same_fleet_findings_alone(_tree(case, tmp_path), tmp_path)


def test_the_comparison_sees_fleet_scope_findings(tmp_path: Path) -> None:
    """Not vacuous: a fleet DeviceClass that matches no device (DRA002) and one named like a driver
    class (DRA008) are fleet-scope findings, the same with or without the teams."""
    root = _tree("demo", tmp_path)
    fleet_yaml = root / "policies" / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text().replace(
        "      dra: true\n",
        "      dra: true\n      deviceClasses:\n"
        "        - {name: nothing-here, class: h100-80gb, selectors: [\"device.attributes['gpu.nvidia.com'].productName"
        " == 'NVIDIA B300'\"]}\n        - {name: gpu.nvidia.com, class: h100-80gb, selectors: [\"true\"]}\n", 1))
    found = " ".join(_same_fleet_findings_alone(root, tmp_path))
    assert "DRA002" in found and "DRA008" in found, found


@pytest.mark.parametrize("case", CASES)
def test_a_cohort_reads_the_fleet_alone(case: str, tmp_path: Path) -> None:
    """``compiler.lower.kueue.cohort`` (the holder's spare quota given) reads the fleet only, which
    lets the store keep a cluster's Cohorts by the fleet and the departments' names
    (``compiler.pipeline.cohorts``): the same objects on the whole policy as on its fleet alone."""
    from dataclasses import replace

    from compiler.lower.kueue import cohort, cohort_plan, lower_cohorts

    policy, _ = policy_at(_tree(case, tmp_path))
    assert policy is not None
    fleet_only = replace(policy, teams=())
    compared = 0
    for cluster in sorted(policy.clusters):
        used, holder = cohort_plan(policy, cluster)
        mine = [cohort(policy, cluster, name) for name in used if name != holder]
        assert [m.obj for m in mine] == [cohort(fleet_only, cluster, m.name).obj for m in mine]
        whole = {m.name: m.obj for m in lower_cohorts(policy, cluster)}
        assert all(whole[m.name] == m.obj for m in mine)  # the pass's own, but the holder's
        compared += len(mine)
    assert compared or case != "generated"


@pytest.mark.parametrize("case", CASES)
def test_the_dra_report_reads_the_fleet_alone(case: str, tmp_path: Path) -> None:
    """``compiler.report.dra.dra_report`` reads the fleet only, which lets the store keep it by the
    fleet file (``StoredFragments.of_fleet``): the same section on the whole policy as on its fleet
    alone, and a value the store can keep (``marshal``) that comes back equal."""
    import marshal
    from dataclasses import replace

    from compiler.report.dra import dra_report

    policy, _ = policy_at(_tree(case, tmp_path))
    assert policy is not None
    whole = dra_report(policy)
    assert whole == dra_report(replace(policy, teams=()))
    assert marshal.loads(marshal.dumps(whole)) == whole
    assert whole or case != "generated"


@pytest.mark.parametrize("case", CASES)
def test_a_teams_serving_rows_read_the_fleet_and_that_team_alone(case: str, tmp_path: Path) -> None:
    """``compiler.serving.plan.serving_rows`` reads the fleet and its team only, which lets both
    reports keep the rows' text by those teams' units (``compiler.report.serving_rows``): a team's
    rows are the same on the whole policy as on the fleet and that team alone, and are the whole
    report's rows of that team, in order."""
    from dataclasses import replace

    from compiler.serving.plan import serving_report, serving_rows

    policy, _ = policy_at(_tree(case, tmp_path))
    assert policy is not None
    report = serving_report(policy)
    rows = [row for team in policy.teams for row in serving_rows(policy, team)]
    assert rows == report
    for team in policy.teams:
        assert serving_rows(policy, team) == serving_rows(replace(policy, teams=(team,)), team)
    assert report or case not in ("demo", "generated")


@pytest.mark.parametrize("case", CASES)
def test_a_teams_priority_row_reads_the_fleet_and_that_team_alone(case: str, tmp_path: Path) -> None:
    """REPORT.md's priority row of a team (``compiler.report.priorities._team_row``) reads the fleet
    and that team only, which lets the store keep the rows a block of teams at a time."""
    from dataclasses import replace

    from compiler.report.priorities import _team_row

    policy, _ = policy_at(_tree(case, tmp_path))
    assert policy is not None
    for team in policy.teams:
        assert _team_row(policy, team) == _team_row(replace(policy, teams=(team,)), team)
