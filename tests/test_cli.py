"""The installed console script, end to end: exit codes, formats, check, schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import REPO, run_cli

from compiler.diagnostics import rule_url


def test_repo_out_is_fresh() -> None:
    """out/, schemas/ and CODEOWNERS in the repository are what the policies render to."""
    r = run_cli("check", cwd=REPO)
    assert r.returncode == 0, r.stderr


def test_build_then_check_then_edit(demo_repo: Path) -> None:
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert run_cli("check", cwd=demo_repo).returncode == 0
    f = demo_repo / "policies/teams/vision.yaml"
    f.write_text(f.read_text().replace("guaranteed: 16", "guaranteed: 12"))
    r = run_cli("check", cwd=demo_repo)
    assert r.returncode == 1
    assert "stale: changed" in r.stderr and "clusterqueue._.vision.yaml" in r.stderr
    assert run_cli("build", cwd=demo_repo).returncode == 0
    assert run_cli("check", cwd=demo_repo).returncode == 0


def test_failed_build_leaves_out_untouched(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    before = {p: p.read_bytes() for p in (demo_repo / "out").rglob("*") if p.is_file()}
    f = demo_repo / "policies/teams/nlp.yaml"
    f.write_text(f.read_text().replace("guaranteed: 32", "guaranteed: 999"))
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1
    assert "KUEUE001" in r.stderr
    after = {p: p.read_bytes() for p in (demo_repo / "out").rglob("*") if p.is_file()}
    assert before == after


def test_text_format_has_code_frame(demo_repo: Path) -> None:
    f = demo_repo / "policies/teams/vision.yaml"
    f.write_text(f.read_text().replace("  isolation: isolated", "  isolaton: isolated"))
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 1
    assert "policies/teams/vision.yaml:10:3: error[SCHEMA001] unknown key 'isolaton'" in r.stderr
    assert "  10 |   isolaton: isolated" in r.stderr
    assert "^" in r.stderr and "did you mean 'isolation'?" in r.stderr
    assert "Traceback" not in r.stderr


def test_json_and_github_formats(demo_repo: Path) -> None:
    f = demo_repo / "policies/teams/vision.yaml"
    f.write_text(f.read_text().replace("lend: 4", "lend: 40"))
    r = run_cli("validate", "--format", "json", cwd=demo_repo)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert any(d["rule"] == "KUEUE002" and d["file"] == "policies/teams/vision.yaml" and d["line"] > 0
               for d in data)
    assert all(d["url"] == rule_url(d["rule"]) for d in data)
    r = run_cli("validate", cwd=demo_repo, env={"GITHUB_ACTIONS": "true"})
    assert "::error file=policies/teams/vision.yaml,line=" in r.stderr
    assert f"%0Asee {rule_url('KUEUE002')}" in r.stderr  # the rule's page, inside the one-line command


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli("frobnicate", cwd=tmp_path).returncode == 2
    assert run_cli("validate", "--policies", "nope", cwd=tmp_path).returncode == 2
    assert run_cli("validate", "--crds", str(tmp_path / "missing"), cwd=REPO).returncode == 2


def test_missing_fleet_is_policy_error(tmp_path: Path) -> None:
    (tmp_path / "policies" / "teams").mkdir(parents=True)
    r = run_cli("validate", cwd=tmp_path)
    assert r.returncode == 1 and "LOAD008" in r.stderr


def test_python_m_compiler(demo_repo: Path) -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "compiler", "validate", "--no-verify"], cwd=demo_repo,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_schema_command_regenerates(demo_repo: Path) -> None:
    shutil.rmtree(demo_repo / "schemas", ignore_errors=True)
    assert run_cli("schema", cwd=demo_repo).returncode == 0
    schema = json.loads((demo_repo / "schemas/team.schema.json").read_text())
    assert schema["title"] == "gpupolicy Team"
    assert "budgets" in json.dumps(schema)


def test_explain(demo_repo: Path) -> None:
    r = run_cli("explain", "search", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert "l4-ts4" in r.stdout and "guaranteed" in r.stdout and "kueue.x-k8s.io/queue-name=search" in r.stdout
    assert run_cli("explain", "nobody", cwd=demo_repo).returncode == 2


def test_rules_listing() -> None:
    r = run_cli("rules", cwd=REPO)
    assert r.returncode == 0
    assert "KUEUE001" in r.stdout and "LOAD001" in r.stdout
    assert "http" not in r.stdout  # text stays compact: the pages are in --format json
    rules = {rule["id"]: rule for rule in json.loads(run_cli("rules", "--format", "json", cwd=REPO).stdout)}
    assert rules["KUEUE001"]["url"] == rule_url("KUEUE001") and rules["KUEUE001"]["fail"]
