"""Golden cases: tests/golden/<case>/policies → tests/golden/<case>/expected (out/ tree plus
CODEOWNERS). Refresh with ``pytest tests/test_golden.py --update-golden`` and review the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import compile_dir

from compiler.emit.tree import diff_tree, read_tree, render_tree

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "policies").is_dir()) if GOLDEN.is_dir() else []


def _expected_files(res_out: dict[str, bytes], repo_files: dict[str, bytes]) -> dict[str, bytes]:
    files = {f"out/{k}": v for k, v in res_out.items()}
    files.update({k: v for k, v in repo_files.items() if not k.startswith("schemas/")})
    return files


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, tmp_path: Path, update_golden: bool) -> None:
    root = tmp_path / case
    shutil.copytree(GOLDEN / case / "policies", root / "policies")
    res = compile_dir(root, verify=True, strict=False)
    errors = [d for d in res.diagnostics if d.severity.value == "error"]
    assert res.ok, errors
    actual = _expected_files(res.out_files, res.repo_files)
    expected_dir = GOLDEN / case / "expected"
    if update_golden:
        shutil.rmtree(expected_dir, ignore_errors=True)
        for rel, data in actual.items():
            (expected_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (expected_dir / rel).write_bytes(data)
    stale = diff_tree(actual, read_tree(expected_dir))
    assert not stale, f"golden {case} differs (run pytest --update-golden and review): {stale[:10]}"


@pytest.mark.parametrize("case", CASES)
def test_golden_fast_and_reference_emitters_agree(case: str, tmp_path: Path) -> None:
    root = tmp_path / case
    shutil.copytree(GOLDEN / case / "policies", root / "policies")
    res = compile_dir(root)
    assert render_tree(res.manifests, fast=True) == render_tree(res.manifests, fast=False)
