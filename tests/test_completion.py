"""``gpupolicy completion bash|zsh|fish``: scripts generated from the parser, checked by the shells."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from compiler.cli.completion import commands
from compiler.cli.main import build_parser


def _subcommands() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_bash_script_is_valid_and_lists_every_subcommand(tmp_path: Path) -> None:
    p = run_cli("completion", "bash", cwd=REPO)
    assert p.returncode == 0, p.stderr
    script = tmp_path / "gpupolicy.bash"
    script.write_text(p.stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    first = next(line for line in p.stdout.splitlines() if "compgen -W" in line)
    listed = first.split('compgen -W "', 1)[1].split('"', 1)[0].split()
    assert set(_subcommands()) <= set(listed) and {"init", "completion", "diff", "explain"} <= set(listed)


def _complete(script: Path, cwd: Path, *words: str) -> list[str]:
    """What bash offers for the last word of ``words`` (as if typed after ``gpupolicy``)."""
    quoted = " ".join(f"'{w}'" for w in ("gpupolicy", *words))
    run = (f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _gpupolicy; "
           'printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", run], cwd=cwd, capture_output=True, text=True, check=True).stdout
    return [w for w in out.splitlines() if w]


def test_bash_completes_commands_options_choices_and_teams(tmp_path: Path) -> None:
    script = tmp_path / "gpupolicy.bash"
    script.write_text(run_cli("completion", "bash", cwd=REPO).stdout)
    assert _complete(script, REPO, "si") == ["simulate"]
    assert _complete(script, REPO, "diff", "--format", "") == ["markdown", "json", "text"]
    assert "--max-bytes" in _complete(script, REPO, "diff", "--m")
    assert _complete(script, REPO, "completion", "") == ["bash", "zsh", "fish"]
    assert _complete(script, REPO, "init", "--isolation", "") == ["shared", "isolated", "exclusive"]
    # team names from policies/teams, after options and their values
    assert _complete(script, REPO, "explain", "--root", ".", "") == ["interns", "nlp", "recsys", "search", "vision"]
    assert _complete(script, REPO, "explain", "vision", "--job", "x", "") == []  # one team only


def test_every_option_of_every_command_is_in_each_script() -> None:
    _top, cmds = commands(build_parser())
    scripts = {shell: run_cli("completion", shell, cwd=REPO).stdout for shell in ("bash", "zsh", "fish")}
    for c in cmds:
        for o in c.options:
            for name in o.names:
                assert name in scripts["bash"] and name in scripts["zsh"], (c.name, name)
                assert (f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}") in scripts["fish"]
        assert f"'{c.name}:" in scripts["zsh"] and f"-a {c.name} " in scripts["fish"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse_where_the_shell_is_installed(shell: str, tmp_path: Path) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"gpupolicy.{shell}"
    script.write_text(run_cli("completion", shell, cwd=REPO).stdout)
    assert subprocess.run([exe, "-n", str(script)], capture_output=True).returncode == 0


def test_unknown_shell_is_a_usage_error() -> None:
    p = run_cli("completion", "powershell", cwd=REPO)
    assert p.returncode == 2 and "invalid choice" in p.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize(("typed", "offered"), [("gpupolicy diff --format ", ["json", "markdown", "text"]),
                                                ("gpupolicy explain ", ["interns", "nlp", "vision"])])
def test_zsh_offers_choices_and_teams(tmp_path: Path, typed: str, offered: list[str]) -> None:
    """A real zsh, on a pseudo-terminal (zpty), completing a line with the generated script."""
    script = tmp_path / "_gpupolicy"
    script.write_text(run_cli("completion", "zsh", cwd=REPO).stdout)
    driver = tmp_path / "drive.zsh"
    driver.write_text(
        "zmodload zsh/zpty\nzpty z zsh -f -i\n"
        f"zpty -w z 'PS1=\"\"; autoload -U compinit; compinit -u -d {tmp_path}/zcd; source {script}'\n"
        f"zpty -w -n z $'{typed}\\t\\t'\nsleep 2\n"
        'while zpty -r -t z line; do print -r -- "$line"; done\nzpty -d z\n')
    out = subprocess.run(["zsh", "-f", str(driver)], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert all(word in out for word in offered), out[-500:]
