"""The shipped integrations: the pre-commit hooks as published, and the CI workflow's pinning."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, gpupolicy_exe, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
HOOKS: list[dict[str, Any]] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
WORKFLOW = REPO / ".github" / "workflows" / "gpupolicy.yml"


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


def test_workflow_parses_and_pins_actions_by_sha() -> None:
    text = WORKFLOW.read_text()
    wf = yaml.safe_load(text)
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"pull_request", "push"}
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses, "the workflow uses no action"
    for ref in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"{ref} is not pinned by a commit SHA"
    for line in text.splitlines():
        if "uses:" in line:
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), f"no version comment: {line.strip()}"
    runs = "\n".join(s.get("run", "") for s in steps)
    for command in ("gpupolicy validate --format github", "gpupolicy build", "gpupolicy check",
                    'gpupolicy diff --base "origin/${BASE_REF}" --format markdown',
                    "git diff --exit-code --stat -- out/ schemas/ .github/CODEOWNERS"):
        assert command in runs
    assert "${{" not in runs, "expressions in run: scripts invite injection; pass them through env"
