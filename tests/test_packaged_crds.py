"""The CRDs shipped with the compiler (compiler/verify/crds) are the pinned upstream files, byte for
byte, and an installed compiler with no CRD directory around verifies against them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import SHARED, run_cli
from helpers import copy_demo

from compiler.pipeline.options import PACKAGED_CRDS, default_crds
from compiler.verify.registry import CrdRegistry


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_packaged_crds_are_the_shared_upstream_files() -> None:
    shared = SHARED / "crds"
    if not shared.is_dir():
        pytest.skip("no ../shared/crds to compare with")
    packaged = sorted(p for p in PACKAGED_CRDS.rglob("*") if p.suffix == ".yaml")
    assert len(packaged) >= 30
    for p in packaged:
        rel = p.relative_to(PACKAGED_CRDS)
        assert _digest(p) == _digest(shared / rel), rel
    for folder in {p.relative_to(PACKAGED_CRDS).parts[0] for p in packaged}:
        assert (PACKAGED_CRDS / folder / "SOURCE.txt").read_bytes() == (shared / folder / "SOURCE.txt").read_bytes()
    assert CrdRegistry.load(PACKAGED_CRDS).kinds() == CrdRegistry.load(shared).kinds()


def test_default_falls_back_to_the_packaged_crds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUPOLICY_CRDS", raising=False)
    root = tmp_path / "repo"  # no ../shared beside it
    root.mkdir()
    assert default_crds(root) == PACKAGED_CRDS


def test_cli_without_crds_verifies_against_the_packaged_ones(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    proc = run_cli("build", "--root", str(root), cwd=root, env={"GPUPOLICY_CRDS": ""})
    assert proc.returncode == 0, proc.stderr
    assert "VERIFY900" not in proc.stderr and "custom resources were not verified" not in proc.stderr
