"""Shared fixtures: repository paths, the upstream data beside the repo, the installed CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.diagnostics import Diagnostic
from compiler.rules import all_rules

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("GPUPOLICY_SHARED", REPO.parent / "shared"))
CRDS = Path(os.environ["GPUPOLICY_CRDS"]) if os.environ.get("GPUPOLICY_CRDS") else SHARED / "crds"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*/expected")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def gpu_data_dir() -> Path:
    """The shared MIG/GPU data (``GPUPOLICY_GPU_DATA`` overrides); skips with a reason when absent."""
    env = os.environ.get("GPUPOLICY_GPU_DATA")
    path = Path(env) if env else SHARED / "gpu-data"
    if not path.is_dir():
        pytest.skip(f"gpu-data not found at {path} (set GPUPOLICY_GPU_DATA to the shared gpu-data folder)")
    return path


@pytest.fixture(scope="session")
def crds_dir() -> Path:
    if not CRDS.is_dir():
        pytest.skip(f"upstream CRDs not found at {CRDS} (set GPUPOLICY_CRDS or place shared/ beside the repo)")
    return CRDS


def gpupolicy_exe() -> str:
    exe = Path(sys.executable).parent / "gpupolicy"
    if exe.exists():
        return str(exe)
    found = shutil.which("gpupolicy")
    if not found:
        pytest.skip("console script gpupolicy is not installed (run `make test`)")
    return found


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    full_env.update(env or {})
    if CRDS.is_dir():
        full_env.setdefault("GPUPOLICY_CRDS", str(CRDS))
    return subprocess.run([gpupolicy_exe(), *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    """A throwaway copy of the repository's policies, out/, schemas/ and CODEOWNERS."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(REPO / "policies", root / "policies")
    for d in ("out", "schemas"):
        if (REPO / d).is_dir():
            shutil.copytree(REPO / d, root / d)
    if (REPO / ".github" / "CODEOWNERS").is_file():
        (root / ".github").mkdir()
        shutil.copy(REPO / ".github" / "CODEOWNERS", root / ".github" / "CODEOWNERS")
    return root


# -- every diagnostic cites a registered rule ---------------------------------------------------------
REGISTERED_IDS = frozenset(all_rules())
UNREGISTERED: list[str] = []  # rule IDs of diagnostics created during the current test and not registered


@pytest.fixture(autouse=True)
def only_registered_rule_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fails any test during which a ``Diagnostic`` is created with a rule ID that ``compiler.rules``
    does not list (the test would pass while ``gpupolicy rules`` could not explain the ID)."""
    init = Diagnostic.__init__

    def checked(self: Diagnostic, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        if self.code not in REGISTERED_IDS:
            UNREGISTERED.append(self.code)

    monkeypatch.setattr(Diagnostic, "__init__", checked)
    start = len(UNREGISTERED)
    yield
    found = sorted(set(UNREGISTERED[start:]))
    del UNREGISTERED[start:]
    assert not found, f"diagnostics cite unregistered rule IDs {found}: declare them in the module that emits " \
                      "them and list them in its RULES (see compiler/rules.py)"
