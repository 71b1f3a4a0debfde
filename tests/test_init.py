"""``gpupolicy init``: a new team file that validates at once, through the installed console script."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import get_args

import pytest
from conftest import REPO, gpupolicy_exe, run_cli

from compiler.model.team import Isolation
from compiler.tools.scaffold.args import ISOLATIONS

FLAGS = ["--department", "research", "--owner", "@acme/ml", "--group", "acme:ml", "--cluster", "onprem",
         "--class", "h100-80gb"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "policies", tmp_path / "policies")
    return tmp_path


def test_isolation_choices_are_the_models() -> None:
    assert ISOLATIONS == get_args(Isolation)


def test_init_with_flags_writes_a_team_that_validates(root: Path) -> None:
    p = run_cli("init", "--team", "ml", *FLAGS, "--gpus", "8", cwd=root)
    assert p.returncode == 0, p.stderr
    text = (root / "policies" / "teams" / "ml.yaml").read_text()
    assert text.startswith("# yaml-language-server: $schema=../../schemas/team.schema.json\n")
    assert 'owners: ["@acme/ml"]' in text and "guaranteed: 8" in text and "- name: ml-train" in text
    assert "gpupolicy explain ml" in p.stdout and "gpupolicy build" in p.stdout
    assert p.stderr == ""  # no warning on the new file either (it has a group, so a RoleBinding)
    v = run_cli("validate", "--strict", cwd=root)
    assert v.returncode == 0 and "ml.yaml" not in v.stdout + v.stderr
    explain = run_cli("explain", "ml", cwd=root)
    assert explain.returncode == 0 and "h100-80gb" in explain.stdout


def test_init_refuses_to_overwrite(root: Path) -> None:
    target = root / "policies" / "teams" / "vision.yaml"
    before = target.read_bytes()
    p = run_cli("init", "--team", "vision", *FLAGS, "--gpus", "1", cwd=root)
    assert p.returncode == 2 and "never overwrites" in p.stderr
    assert target.read_bytes() == before


def test_init_writes_nothing_that_would_not_validate(root: Path) -> None:
    p = run_cli("init", "--team", "ml", *FLAGS, "--gpus", "800", cwd=root)
    assert p.returncode == 1 and "nothing written" in p.stderr
    assert "policies/teams/ml.yaml:19:19: error[KUEUE001]" in p.stderr  # located in the file it would write
    assert not (root / "policies" / "teams" / "ml.yaml").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--team", "ML", *FLAGS, "--gpus", "1"], "'ML' is not a DNS label"),
    (["--team", "ml", *FLAGS, "--gpus", "1", "--namespace", "Vision_Train"], "'Vision_Train' is not a DNS label"),
    (["--team", "ml", *FLAGS[:2], "--owner", "not an owner", *FLAGS[4:], "--gpus", "1"], "is not @org/team"),
    (["--team", "ml", *FLAGS[:8], "--class", "l4-ts4", "--gpus", "1"], "a100-80gb-mig-1g.10gb, "),
    (["--team", "ml", "--department", "nope", *FLAGS[2:], "--gpus", "1"], "not one of the fleet's: ai, product, research"),
    (["--team", "ml", *FLAGS], "--gpus is required when stdin is not a terminal"),
])
def test_init_checks_every_answer(root: Path, args: list[str], message: str) -> None:
    p = run_cli("init", *args, cwd=root)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (root / "policies" / "teams" / "ml.yaml").exists()


def test_init_asks_on_a_terminal(root: Path) -> None:
    """stdin a terminal: each missing answer is asked for, a bad one asked again."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    proc = subprocess.Popen([gpupolicy_exe(), "init"], cwd=root, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    answers = ["Bad_Name", "ml", "research", "@acme/ml", "acme:ml", "isolated", "", "onprem",
               "a100-80gb-mig-3g.40gb", "4"]
    os.write(master, ("\n".join(answers) + "\n").encode())
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=30) == 0, out.decode()
    shown = out.decode()
    assert "'Bad_Name' is not a DNS label" in shown and "department [ai, product, research]" in shown
    assert "a100-80gb-mig-3g.40gb (16 free)" in shown and "h100-80gb (16 free)" in shown and "l4" not in shown
    text = (root / "policies" / "teams" / "ml.yaml").read_text()
    assert "isolation: isolated" in text and "class: a100-80gb-mig-3g.40gb" in text and 'groups: ["acme:ml"]' in text
    assert run_cli("validate", "--strict", cwd=root).returncode == 0
