"""``gpupolicy simulate`` through the installed console script."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

TRACE = """submit,duration,gpus,team,class,priority,name
0,3600,32,nlp,h100-80gb,standard,nlp-big
60,1800,8,nlp,h100-80gb,production,nlp-urgent
0,7200,8,recsys,h100-80gb,,recsys-1
120,600,16,vision,a100-80gb-mig-1g.10gb,,vision-1
180,600,20,search,a100-80gb-mig-1g.10gb,preemptible,search-1
200,600,99,nlp,h100-80gb,,nlp-huge
"""


def trace(repo: Path, text: str = TRACE) -> str:
    p = repo / "trace.csv"
    p.write_text(text)
    return str(p)


def test_simulate_json_from_a_compile(demo_repo: Path) -> None:
    r = run_cli("simulate", "--trace", trace(demo_repo), "--cluster", "onprem", "--format", "json", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["cluster"] == "onprem" and rep["jobs"] == 6
    teams = {t["team"]: t for t in rep["teams"]}
    assert teams["nlp"]["jobs"] == 3 and teams["nlp"]["never_fit"] == 1
    assert teams["nlp"]["preemptions_caused"] >= 1  # production preempts standard within nlp
    assert rep["never_fit"][0][0] == "nlp-huge"
    assert set(rep["baselines"]) == {"policy", "static-partition", "first-apply-wins"}
    assert "Traceback" not in r.stderr


def test_simulate_text_markdown_and_from_out(demo_repo: Path) -> None:
    t = trace(demo_repo)
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert "utilisation" in r.stdout and "why nlp waited" in r.stdout and "can never fit" in r.stdout
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", "--format", "markdown",
                "--no-baselines", "--load", "2", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("### gpupolicy simulate: onprem") and "```mermaid" in r.stdout


def test_simulate_explain_job(demo_repo: Path) -> None:
    r = run_cli("simulate", "--trace", trace(demo_repo), "--cluster", "onprem", "--from-out",
                "--explain", "nlp-big", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert "job nlp-big" in r.stdout and "preempted at" in r.stdout and "nlp-urgent" in r.stdout
    r = run_cli("simulate", "--trace", trace(demo_repo), "--cluster", "onprem", "--from-out",
                "--explain", "nlp-big", "--format", "json", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # one document, the same story
    assert doc["job"] == "nlp-big" and doc["team"] == "nlp"
    assert doc["preemptedBy"] and "nlp-urgent" in doc["preemptedBy"][0]["by"]
    assert abs(sum(c["hours"] for c in doc["waitCauses"]) - doc["waitHours"]) < 1e-6


def test_simulate_bad_trace_is_located_exit_1(demo_repo: Path) -> None:
    t = trace(demo_repo, "submit,duration,gpus,team\n0,-1,1,nlp\n0,5,1,ghost\n")
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert r.returncode == 1
    assert "trace.csv:2: duration must be > 0" in r.stderr and "trace.csv:3: unknown team 'ghost'" in r.stderr
    assert "Traceback" not in r.stderr


def test_simulate_usage_errors_exit_2(demo_repo: Path) -> None:
    t = trace(demo_repo)
    r = run_cli("simulate", "--trace", t, "--cluster", "mars", "--from-out", cwd=demo_repo)
    assert r.returncode == 2 and "no Kueue objects rendered for cluster 'mars'" in r.stderr
    r = run_cli("simulate", "--trace", t, "--from-out", cwd=demo_repo)
    assert r.returncode == 2 and "--cluster" in r.stderr
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", "--explain", "nope", cwd=demo_repo)
    assert r.returncode == 2
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--load", "0", cwd=demo_repo)
    assert r.returncode == 2
    r = run_cli("simulate", "--trace", str(demo_repo / "missing.csv"), "--cluster", "onprem", "--from-out",
                cwd=demo_repo)
    assert r.returncode == 1 and "no such trace file" in r.stderr


def test_a_row_naming_a_tier_its_team_may_not_use_is_refused(demo_repo: Path) -> None:
    """production is reserved for nlp (the fleet's reservedFor): recsys's namespace carries no
    priority.gpupolicy.dev/production label, so the gpupolicy-priority admission policy would
    refuse a recsys job naming it; the simulator says so at the row instead of admitting it."""
    t = trace(demo_repo, TRACE.replace("0,7200,8,recsys,h100-80gb,,recsys-1",
                                       "0,7200,8,recsys,h100-80gb,production,recsys-1"))
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert r.returncode == 1
    assert "trace.csv:4: priority tier 'production' is not one namespace 'recsys-train' may use (allowed: " \
           "preemptible, standard)" in r.stderr, r.stderr
    ok = run_cli("simulate", "--trace", trace(demo_repo), "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert ok.returncode == 0, ok.stderr  # nlp-urgent names production, which nlp may use


def _budget_change(tmp_path: Path) -> Path:
    """A git repo of the demo policies, committed, with nlp's guarantee lowered in the work tree."""
    import os
    import shutil
    import subprocess

    from conftest import REPO

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    root = tmp_path / "repo"
    shutil.copytree(REPO / "policies", root / "policies")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "demo"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    team = root / "policies" / "teams" / "nlp.yaml"
    assert "guaranteed: 32" in team.read_text()
    team.write_text(team.read_text().replace("guaranteed: 32", "guaranteed: 8", 1))
    return root


def test_simulate_base_shows_per_team_deltas(tmp_path: Path) -> None:
    """``--base REF``: the trace against the committed policies and against the working tree where
    nlp's guarantee is lowered; the markdown shows the delta and a mermaid chart."""
    root = _budget_change(tmp_path)
    r = run_cli("simulate", "--trace", trace(root), "--cluster", "onprem", "--base", "HEAD", cwd=root)
    assert r.returncode == 0, r.stderr
    assert "### gpupolicy simulate: onprem, `HEAD` → working tree" in r.stdout
    nlp = next(line for line in r.stdout.splitlines() if line.startswith("| nlp "))
    assert "(+" in nlp  # nlp waits longer (or more of its jobs never fit) with a smaller guarantee
    assert "xychart-beta" in r.stdout and "stranded" in r.stdout


def test_diff_simulate_adds_per_team_deltas(tmp_path: Path) -> None:
    """``diff --base HEAD --simulate TRACE``: the diff report, then the simulation deltas (jobs,
    waits, preemptions, borrowing) and the p95 chart; in JSON under ``simulate``."""
    root = _budget_change(tmp_path)
    t = trace(root)
    r = run_cli("diff", "--base", "HEAD", "--simulate", t, "--simulate-cluster", "onprem", cwd=root)
    assert r.returncode == 0, r.stderr
    head, _, sim = r.stdout.partition("### gpupolicy simulate: onprem, `HEAD` → working tree")
    assert head.strip() and sim, r.stdout
    assert "| team | jobs | wait p50 h | wait p95 h | wait max h | preempted | borrowed GPU-h |" in sim
    nlp = next(line for line in sim.splitlines() if line.startswith("| nlp "))
    assert "(+" in nlp
    chart = sim[sim.index("```mermaid"):]
    assert "xychart-beta" in chart and 'x-axis ["nlp"' in chart  # nlp changed most: first
    r = run_cli("diff", "--base", "HEAD", "--simulate", t, "--simulate-cluster", "onprem", "--format", "json",
                cwd=root)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["simulate"]["cluster"] == "onprem" and data["simulate"]["base_report"]["jobs"] == 6
    r = run_cli("diff", "--base", "HEAD", "--simulate", t, cwd=root)  # two clusters: say which
    assert r.returncode == 2 and "onprem" in r.stderr and "Traceback" not in r.stderr
    bad = trace(root, "submit,duration,gpus,team\n0,5,1,ghost\n")
    r = run_cli("diff", "--base", "HEAD", "--simulate", bad, "--simulate-cluster", "onprem", cwd=root)
    assert r.returncode == 1 and "trace.csv:2: unknown team 'ghost'" in r.stderr


def test_many_teams_are_bounded_in_the_comment() -> None:
    """Top teams by change of p95 wait only, saying how many are left out; names escaped."""
    from compiler.tools.simulate import compare
    from compiler.tools.simulate.report import Report, TeamStats

    def rep(shift: float) -> Report:
        teams = [TeamStats(f"t{i:02d}", jobs=1, wait_p95_h=i * shift) for i in range(50)]
        teams.append(TeamStats('x"]; %%{init}%%', jobs=1, wait_p95_h=100 * shift))  # changed most
        return Report("c", 1, 1.0, {}, 0.0, 0.0, 0.0, teams, [], True, 0, [])

    md = compare.render_markdown(compare.Pair("main", "c", rep(2.0), rep(1.0), ""))
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| team ")]
    assert len(rows) == compare.TABLE_ROWS and rows[1].startswith("| t49 ")
    assert rows[0].startswith('| `x"]; %%{init}%%` |')  # a code span in the table: inert
    assert "21 more team(s) with smaller changes" in md and "39 more left out" in md
    chart = md[md.index("x-axis"):].splitlines()[0]
    assert chart.count('", "') == compare.CHART_TEAMS - 1
    assert "%%{" not in md[md.index("```mermaid"):] and chart.startswith('x-axis ["x#quot;#93;; #37;#37;#123;init')


def test_progress_bar_only_on_a_terminal_outside_ci() -> None:
    import io

    import pytest

    from compiler.tools.simulate.command import progress_bar

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    mp = pytest.MonkeyPatch()
    try:
        mp.delenv("CI", raising=False)
        assert progress_bar(io.StringIO()) is None  # piped: nothing
        tty = Tty()
        bar = progress_bar(tty)
        assert bar is not None
        bar(41_123, 82_247)
        bar(82_247, 82_247)
        assert "[" + "#" * 14 + "." * 16 + "] 41,123/82,247 jobs" in tty.getvalue()
        assert "[" + "#" * 30 + "] 82,247/82,247 jobs" in tty.getvalue()
        mp.setenv("CI", "true")
        assert progress_bar(Tty()) is None  # CI logs are not terminals worth redrawing
    finally:
        mp.undo()


def test_from_out_reads_one_clusters_objects_and_locates_a_bad_one(demo_repo: Path) -> None:
    """``--from-out`` reads the files of the cluster it replays only (another cluster's unreadable
    file is not read); one of its own that cannot be read is a located error, exit 1."""
    t = trace(demo_repo)
    (demo_repo / "out" / "cloud" / "kueue" / "broken.yaml").mkdir()
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    (demo_repo / "out" / "onprem" / "kueue" / "broken.yaml").mkdir()
    r = run_cli("simulate", "--trace", t, "--cluster", "onprem", "--from-out", cwd=demo_repo)
    assert r.returncode == 1 and "out/onprem/kueue/broken.yaml: cannot read Kueue object" in r.stderr
    assert "Traceback" not in r.stderr
