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


def test_simulate_base_shows_per_team_deltas(tmp_path: Path) -> None:
    """``--base REF``: the trace against the committed policies and against the working tree where
    nlp's guarantee is lowered; the markdown shows the delta and a mermaid chart."""
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
    r = run_cli("simulate", "--trace", trace(root), "--cluster", "onprem", "--base", "HEAD", cwd=root)
    assert r.returncode == 0, r.stderr
    assert "### gpupolicy simulate: onprem, HEAD → working tree" in r.stdout
    nlp = next(line for line in r.stdout.splitlines() if line.startswith("| nlp "))
    assert "(+" in nlp  # nlp waits longer (or more of its jobs never fit) with a smaller guarantee
    assert "xychart-beta" in r.stdout
