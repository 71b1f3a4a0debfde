"""`gpupolicy --version` names the installed distribution's version (pyproject.toml)."""

from __future__ import annotations

import tomllib

from conftest import REPO, run_cli


def test_version_is_the_project_version() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    proc = run_cli("--version", cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == f"gpupolicy {version}", (proc.stdout, proc.stderr)
