"""The shipped integrations: the pre-commit hooks as published, the CI workflows and the
composite action (pinning, permissions, what runs where)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, gpupolicy_exe, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
HOOKS: list[dict[str, Any]] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
WORKFLOW = REPO / ".github" / "workflows" / "gpupolicy.yml"
COMMENT_WORKFLOW = REPO / ".github" / "workflows" / "gpupolicy-comment.yml"
ACTION = REPO / "action.yml"


def run_hook(hook: dict[str, Any], cwd: Path) -> int:
    """Run a hook's ``entry`` the way pre-commit does (no file names), via the installed script."""
    argv = shlex.split(hook["entry"])
    assert argv[0] == "gpupolicy"
    gpupolicy_exe()  # skips when the console script is missing
    return run_cli(*argv[1:], cwd=cwd).returncode


def test_hooks_are_published_as_documented() -> None:
    assert [h["id"] for h in HOOKS] == ["gpupolicy-validate", "gpupolicy-check"]
    for hook in HOOKS:
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert re.match(hook["files"], "policies/teams/ml.yaml") and not re.match(hook["files"], "README.md")
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    own = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    for hook in HOOKS:  # the repository runs the hooks it publishes, with the same entry and scope
        assert own[hook["id"]]["entry"] == hook["entry"] and own[hook["id"]]["files"] == hook["files"]


@pytest.mark.parametrize("hook", HOOKS, ids=[h["id"] for h in HOOKS])
def test_hook_passes_and_fails(hook: dict[str, Any], tmp_path: Path) -> None:
    good = tmp_path / "pass"
    shutil.copytree(FIXTURES / "pass", good)
    if hook["id"] == "gpupolicy-check":
        assert run_cli("build", cwd=good).returncode == 0  # check needs committed output to compare with
    assert run_hook(hook, good) == 0
    bad = tmp_path / "fail"
    shutil.copytree(FIXTURES / "fail", bad)
    assert run_hook(hook, bad) == 1


def test_check_hook_fails_on_stale_output(tmp_path: Path) -> None:
    root = tmp_path / "pass"
    shutil.copytree(FIXTURES / "pass", root)
    assert run_cli("build", cwd=root).returncode == 0
    team = root / "policies" / "teams" / "ml.yaml"
    team.write_text(team.read_text().replace("guaranteed: 8", "guaranteed: 4"))
    check = next(h for h in HOOKS if h["id"] == "gpupolicy-check")
    assert run_hook(check, root) == 1


def _triggers(wf: dict[str, Any]) -> Any:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:  # an action
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job["steps"]]


@pytest.mark.parametrize("path", [WORKFLOW, COMMENT_WORKFLOW, ACTION], ids=lambda p: p.name)
def test_actions_are_pinned_and_scripts_take_no_expressions(path: Path) -> None:
    text = path.read_text()
    steps = _steps(yaml.safe_load(text))
    for ref in (s["uses"] for s in steps if "uses" in s):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"{ref} is not pinned by a commit SHA"
    for line in text.splitlines():
        if "uses:" in line and not line.lstrip().startswith("#"):
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), f"no version comment: {line.strip()}"
    for step in steps:
        script = step.get("run", "")
        # expressions in run: scripts invite injection (a branch name is code there); use env
        assert "${{" not in script, f"{path.name}: {script[:60]!r}"
        if script:
            syntax = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            assert syntax.returncode == 0, f"{path.name}: {syntax.stderr}"


def test_workflow_runs_the_checks_and_hands_the_diff_on() -> None:
    wf = yaml.safe_load(WORKFLOW.read_text())
    assert set(_triggers(wf)) == {"pull_request", "push"}
    runs = "\n".join(s.get("run", "") for s in _steps(wf))
    for command in ("gpupolicy validate --format github", "gpupolicy build", "gpupolicy check",
                    'gpupolicy diff --base "origin/${BASE_REF}" --format markdown',
                    "git diff --exit-code --stat -- out/ schemas/ .github/CODEOWNERS"):
        assert command in runs
    pr_job = wf["jobs"]["pull-request"]
    assert pr_job["permissions"] == {"contents": "read"}, "the job running the PR's code must hold no write token"
    upload = next(s for s in pr_job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "gpupolicy-diff" and "pr-number" in upload["with"]["path"]


def test_comment_workflow_runs_nothing_from_the_pull_request() -> None:
    wf = yaml.safe_load(COMMENT_WORKFLOW.read_text())
    assert _triggers(wf) == {"workflow_run": {"workflows": ["gpupolicy"], "types": ["completed"]}}
    job = wf["jobs"]["comment"]
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    steps = job["steps"]
    assert not [s for s in steps if "uses" in s], "no checkout, no action: nothing of the PR runs here"
    script = "\n".join(s["run"] for s in steps)
    assert "gh run download" in script and "--name gpupolicy-diff" in script
    assert "tr -cd '0-9'" in script, "the artifact's PR number is untrusted: digits only"
    assert '"$head" != "$HEAD_SHA"' in script, "the PR must be the one whose head the run built"
    assert "head -c 60000" in script


def test_composite_action_runs_one_command() -> None:
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"command", "base", "crds", "working-directory", "python-version"}
    assert all(i.get("description") for i in action["inputs"].values())
    steps = action["runs"]["steps"]
    assert all(s.get("shell") == "bash" for s in steps if "run" in s), "composite run steps need a shell"
    script = steps[-1]["run"]
    for command in ('gpupolicy "$COMMAND" --format github', 'gpupolicy diff --base "$BASE" --format markdown'):
        assert command in script
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in steps[1]["run"]
