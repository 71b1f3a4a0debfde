"""Waivers (fleet.yaml ``waivers``): a covered finding is info and no longer fails; an expired waiver
is FLEET017 at its line, one covering nothing FLEET018, a bad one FLEET015/FLEET016; team files
cannot carry them; REPORT.md lists them; expiry is decided on every run, after the store."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from helpers import codes, compile_dir, copy_demo, find, line_of, mutate, policy_at

from compiler.diagnostics import Location, Severity, exit_code
from compiler.model.inventory import Inventory
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.pipeline.waivers import expire
from compiler.report.rule_docs import render_page
from compiler.rules import get
from compiler.validate.waivers import NOT_WAIVABLE, Places, why_not_waivable

TODAY = "2026-12-01"
# recsys budgets a MIG class on onprem; as an exclusive team it may only use full cards: FLEET009
# on teams/recsys.yaml, in its onprem budget entry.
EXCLUSIVE = ("  isolation: isolated", "  isolation: exclusive")


def waiver(rule: str = "FLEET009", *, expires: str = "2027-01-15", **target: str) -> str:
    target = target or {"team": "recsys"}
    lines = [f"    - rule: {rule}", *[f"      {k}: {v}" for k, v in target.items()],
             '      owner: "@acme/ml-platform"', "      reason: recsys moves to full cards in Q1 (PLAT-12)",
             f'      expires: "{expires}"']
    return "\n".join(lines) + "\n"


def with_waivers(tmp_path: Path, *entries: str, finding: bool = True) -> Path:
    root = copy_demo(tmp_path)
    if finding:
        mutate(root, "teams/recsys.yaml", *EXCLUSIVE)
    fleet = root / "policies" / "fleet.yaml"
    fleet.write_text(fleet.read_text() + "  waivers:\n" + "".join(entries))
    return root


@pytest.fixture(autouse=True)
def today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPOLICY_TODAY", TODAY)


def test_the_finding_fails_without_a_waiver(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", *EXCLUSIVE)
    res = compile_dir(root)
    assert find(res.diagnostics, "FLEET009").severity is Severity.ERROR and not res.ok


def test_a_waived_error_no_longer_fails(tmp_path: Path) -> None:
    root = with_waivers(tmp_path, waiver(team="recsys", cluster="onprem"))
    res = compile_dir(root)
    d = find(res.diagnostics, "FLEET009")
    assert d.severity is Severity.INFO
    assert d.location is not None and d.location.file == "policies/teams/recsys.yaml"
    assert d.location.line == line_of(root, "teams/recsys.yaml", "a100-80gb-mig-3g.40gb")
    assert "waived until 2027-01-15 by @acme/ml-platform (recsys moves to full cards in Q1 (PLAT-12))" in d.message
    assert res.ok and exit_code(res.diagnostics, strict=True) == 0 and "REPORT.md" in res.out_files


def test_target_is_precise(tmp_path: Path) -> None:
    """Another team, or another cluster of the right team, does not cover the finding."""
    root = with_waivers(tmp_path, waiver(team="vision"), waiver(team="recsys", cluster="cloud"))
    res = compile_dir(root)
    assert find(res.diagnostics, "FLEET009").severity is Severity.ERROR
    assert not res.ok


def test_scope_fleet_waives_everywhere(tmp_path: Path) -> None:
    root = with_waivers(tmp_path, waiver(scope="fleet"))
    res = compile_dir(root)
    assert find(res.diagnostics, "FLEET009").severity is Severity.INFO and res.ok


def test_expired_waiver_is_an_error_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = with_waivers(tmp_path, waiver(expires="2026-11-30"))
    res = compile_dir(root)
    expired = find(res.diagnostics, "FLEET017")
    assert expired.severity is Severity.ERROR and expired.location is not None
    assert (expired.location.file, expired.location.line) == (
        "policies/fleet.yaml", line_of(root, "fleet.yaml", "rule: FLEET009"))
    assert "expired on 2026-11-30 (today is 2026-12-01)" in expired.message
    assert find(res.diagnostics, "FLEET009").severity is Severity.ERROR and not res.ok
    monkeypatch.setenv("GPUPOLICY_TODAY", "2026-11-30")  # valid through its expiry day
    assert compile_dir(root).ok


def test_expiry_is_decided_after_the_store(tmp_path: Path) -> None:
    """A stored (date-free) result carries its waivers: the same diagnostics expire later."""
    root = with_waivers(tmp_path, waiver())
    stored = compile_dir(root).diagnostics
    assert "FLEET017" not in codes(stored)
    later = expire(stored, datetime.date(2027, 1, 16))
    assert find(later, "FLEET009").severity is Severity.ERROR
    assert find(later, "FLEET009").message.startswith("team isolation is 'exclusive'")
    assert codes(later).count("FLEET017") == 1
    assert expire(stored, datetime.date(2027, 1, 15)) == stored


def test_stale_waiver_is_a_warning(tmp_path: Path) -> None:
    root = with_waivers(tmp_path, waiver(), finding=False)
    res = compile_dir(root)
    stale = find(res.diagnostics, "FLEET018")
    assert stale.severity is Severity.WARNING and res.ok
    assert stale.location is not None and stale.location.line == line_of(root, "fleet.yaml", "rule: FLEET009")
    assert exit_code(res.diagnostics, strict=True) == 1


@pytest.mark.parametrize(("entry", "where", "message"), [
    (waiver("KEUE001"), "rule: KEUE001", "rule KEUE001, which gpupolicy does not have"),
    (waiver("SCHEMA001"), "rule: SCHEMA001", "SCHEMA001 cannot be waived"),
    (waiver("FLEET004"), "rule: FLEET004", "FLEET004 cannot be waived: trust boundary"),
])
def test_unknown_or_unwaivable_rule_is_fleet015(tmp_path: Path, entry: str, where: str, message: str) -> None:
    root = with_waivers(tmp_path, entry)
    res = compile_dir(root)
    d = find(res.diagnostics, "FLEET015")
    assert d.severity is Severity.ERROR and message in d.message and not res.ok
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", where)
    assert find(res.diagnostics, "FLEET009").severity is Severity.ERROR  # an invalid waiver covers nothing


@pytest.mark.parametrize(("target", "where", "message"), [
    ({"team": "recsyss"}, "team: recsyss", "team 'recsyss', which has no team file"),
    ({"team": "recsys", "cluster": "mars"}, "cluster: mars", "cluster 'mars', which the fleet does not declare"),
    ({"team": "recsys", "scope": "fleet"}, "scope: fleet", "`scope: fleet` (everywhere) and a team or cluster"),
])
def test_unknown_or_vague_target_is_fleet016(tmp_path: Path, target: dict[str, str], where: str, message: str
                                            ) -> None:
    root = with_waivers(tmp_path, waiver(**target))
    res = compile_dir(root)
    d = find(res.diagnostics, "FLEET016")
    assert message in d.message and not res.ok
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", where)


def test_a_waiver_without_target_is_fleet016(tmp_path: Path) -> None:
    root = with_waivers(tmp_path, waiver().replace("      team: recsys\n", ""))
    d = find(compile_dir(root).diagnostics, "FLEET016")
    assert "names no target" in d.message and d.hint is not None and "scope: fleet" in d.hint


@pytest.mark.parametrize(("old", "new"), [
    ('expires: "2027-01-15"', 'expires: "2027-02-30"'),
    ("reason: recsys moves to full cards in Q1 (PLAT-12)", 'reason: "   "'),
])
def test_bad_dates_and_blank_reasons_are_schema_errors(tmp_path: Path, old: str, new: str) -> None:
    root = with_waivers(tmp_path, waiver().replace(old, new))
    res = compile_dir(root)
    assert "SCHEMA002" in codes(res.diagnostics) and not res.ok


def test_a_team_file_cannot_carry_a_waiver(tmp_path: Path) -> None:
    """Waivers live in fleet.yaml only (CODEOWNERS: the platform team): a team cannot waive its own
    findings, nor another team's."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", *EXCLUSIVE)
    team = root / "policies" / "teams" / "vision.yaml"
    team.write_text(team.read_text() + "  waivers:\n" + waiver())
    res = compile_dir(root)
    d = find(res.diagnostics, "SCHEMA001")
    assert d.location is not None and d.location.file == "policies/teams/vision.yaml" and not res.ok
    assert d.hint is not None and "waivers live in fleet.yaml" in d.hint


def test_report_lists_waivers_only_when_there_are_some(tmp_path: Path) -> None:
    root = with_waivers(tmp_path, waiver(team="recsys", cluster="onprem"))
    report = compile_dir(root).out_files["REPORT.md"].decode()
    section = report[report.index("## Waivers"):]
    line = line_of(root, "fleet.yaml", "rule: FLEET009")
    assert (f"| `FLEET009` | team recsys, cluster onprem | `@acme/ml-platform` | recsys moves to full cards in Q1 "
            f"(PLAT-12) | 2027-01-15 | `policies/fleet.yaml:{line}` |") in section
    assert "## Waivers" not in (REPO / "out" / "REPORT.md").read_text()


def test_report_escapes_waiver_text(tmp_path: Path) -> None:
    entry = waiver().replace("reason: recsys moves to full cards in Q1 (PLAT-12)",
                             'reason: "a | b <img src=x> [link](http://x)"')
    report = compile_dir(with_waivers(tmp_path, entry)).out_files["REPORT.md"].decode()
    row = next(x for x in report.splitlines() if x.startswith("| `FLEET009`"))
    assert "a \\| b &lt;img src=x&gt; \\[link\\](http&#58;//x)" in row and row.count(" | ") == 5


def test_not_waivable_rules_exist_and_say_why() -> None:
    for key, why in NOT_WAIVABLE.items():
        assert why and (key in ("LOAD", "SCHEMA", "MIG") or get(key))
    assert why_not_waivable("LOAD009") and why_not_waivable("FLEET017") and not why_not_waivable("KUEUE001")
    assert "cannot be waived: trust boundary" in render_page(get("FLEET003"))


def test_cli_waiver_round_trip(tmp_path: Path) -> None:
    """Through the installed CLI with the on-disk store: build passes with the waiver, the same
    (stored) result fails once the date is past expiry, and JSON names the waived rule."""
    root = with_waivers(tmp_path, waiver())
    ok = run_cli("build", "--no-verify", cwd=root, env={"GPUPOLICY_TODAY": TODAY})
    assert ok.returncode == 0, ok.stderr
    assert "## Waivers" in (root / "out" / "REPORT.md").read_text()
    fresh = run_cli("check", "--no-verify", cwd=root, env={"GPUPOLICY_TODAY": TODAY})
    assert fresh.returncode == 0, fresh.stderr
    late = run_cli("check", "--no-verify", "--format", "parsable", cwd=root,
                   env={"GPUPOLICY_TODAY": "2027-01-16", "GPUPOLICY_TIMINGS": "1"})
    assert late.returncode == 1 and " result=" in late.stderr  # the whole run came from the store
    assert "[error] FLEET017" in late.stderr and "[error] FLEET009" in late.stderr
    shown = run_cli("validate", "--no-verify", "--format", "json", cwd=root, env={"GPUPOLICY_TODAY": TODAY})
    assert shown.returncode == 0, shown.stderr
    found = [d for d in json.loads(shown.stdout) if d.get("code", d.get("rule")) == "FLEET009"]
    assert found and found[0]["severity"] == "info"
    bad = run_cli("validate", "--no-verify", cwd=root, env={"GPUPOLICY_TODAY": "tomorrow"})
    assert bad.returncode == 2 and "GPUPOLICY_TODAY" in bad.stderr


def test_places_of_rendered_objects_and_fleet_entries(tmp_path: Path) -> None:
    """A finding on an out/ object belongs to the teams whose files it derives from and to its
    cluster; a finding in fleet.yaml belongs to the cluster whose entry holds its line."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/interns.yaml", "clusters: [cloud]", "clusters: [cloud, onprem]")
    policy, _ = policy_at(root)
    assert policy is not None
    inventory = Inventory(rows=[("onprem/kueue/clusterqueue._.recsys.yaml", "onprem", None,
                                  ("policies/teams/recsys.yaml",))])
    places = Places(policy, inventory)
    queue = Location("out/onprem/kueue/clusterqueue._.recsys.yaml", 3, 1)
    assert places.in_team(queue, "recsys") and not places.in_team(queue, "vision")
    assert places.in_cluster(queue, "onprem") and not places.in_cluster(queue, "cloud")
    pool = Location("policies/fleet.yaml", line_of(root, "fleet.yaml", "name: h100-train"), 9)
    assert places.in_cluster(pool, "onprem") and not places.in_cluster(pool, "cloud")
    budget = Location("policies/teams/recsys.yaml", line_of(root, "teams/recsys.yaml", "cluster: cloud") + 1, 14)
    assert places.in_cluster(budget, "cloud") and not places.in_cluster(budget, "onprem")
    assert not places.in_cluster(Location("policies/teams/recsys.yaml"), "cloud")  # the file as a whole
    row = line_of(root, "teams/interns.yaml", "clusters: [cloud, onprem]")
    text = (root / "policies/teams/interns.yaml").read_text().splitlines()[row - 1]
    onprem, cloud = (Location("policies/teams/interns.yaml", row, text.index(c) + 1) for c in ("onprem", "cloud"))
    assert places.in_cluster(onprem, "onprem") and not places.in_cluster(onprem, "cloud")  # one line, two clusters
    assert places.in_cluster(cloud, "cloud") and not places.in_cluster(cloud, "onprem")


def test_a_verify_finding_is_waived_and_judged_only_when_verify_ran(tmp_path: Path) -> None:
    """VERIFY900 (no CRD directory; an error under --strict) is reported on fleet.yaml as a whole, so
    only `scope: fleet` covers it; under --no-verify its waiver is not called stale."""
    root = with_waivers(tmp_path, waiver("VERIFY900", scope="fleet"), finding=False)
    opts = Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=None, strict=True)
    res = compile_policies(opts)
    d = find(res.diagnostics, "VERIFY900")
    assert d.severity is Severity.INFO and d.message.startswith("waived until 2027-01-15")
    assert res.ok and exit_code(res.diagnostics, strict=True) == 0 and "FLEET018" not in codes(res.diagnostics)
    unverified = compile_dir(root)
    assert "VERIFY900" not in codes(unverified.diagnostics) and "FLEET018" not in codes(unverified.diagnostics)


@pytest.mark.parametrize(("cluster", "waived"), [("onprem", True), ("cloud", False)])
def test_a_warning_on_one_item_of_a_flow_list(tmp_path: Path, cluster: str, waived: bool) -> None:
    """FLEET011 points at `onprem` in `clusters: [cloud, onprem]`: only a waiver for onprem covers it,
    and a covered warning no longer fails --strict."""
    root = with_waivers(tmp_path, waiver("FLEET011", team="interns", cluster=cluster), finding=False)
    mutate(root, "teams/interns.yaml", "clusters: [cloud]", "clusters: [cloud, onprem]")
    res = compile_dir(root)
    assert (find(res.diagnostics, "FLEET011").severity is Severity.INFO) is waived
    assert exit_code(res.diagnostics, strict=True) == (0 if waived else 1)
    assert ("FLEET018" in codes(res.diagnostics)) is not waived
