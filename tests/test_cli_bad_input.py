"""Every kind of bad input through the installed CLI: exit 1, a located diagnostic naming the
file, no traceback, out/ untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "out").rglob("*")) if p.is_file()}


def _alias_bomb() -> str:
    lines = ["apiVersion: gpupolicy.dev/v1alpha1", "kind: Team", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


BAD: list[tuple[str, str, str | bytes, str]] = [
    ("malformed", "teams/vision.yaml", "spec: [unclosed\n", "LOAD001"),
    ("tabs", "teams/vision.yaml", "spec:\n\towners: []\n", "LOAD001"),
    ("duplicate key", "teams/vision.yaml", "apiVersion: a\napiVersion: b\n", "LOAD004"),
    ("empty", "teams/vision.yaml", "", "LOAD003"),
    ("not utf-8", "teams/vision.yaml", b"kind: Team\nname: \xff\xfe\n", "LOAD002"),
    ("alias bomb", "teams/vision.yaml", _alias_bomb(), "LOAD006"),
    ("two documents", "teams/vision.yaml", "kind: Team\n---\nkind: Team\n", "LOAD003"),
    ("not a mapping", "teams/vision.yaml", "- a\n- b\n", "SCHEMA004"),
]


@pytest.mark.parametrize(("case", "rel", "content", "rule"), BAD, ids=[b[0] for b in BAD])
def test_bad_file_exits_1_located(demo_repo: Path, case: str, rel: str, content: str | bytes, rule: str) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    before = _tree(demo_repo)
    path = demo_repo / "policies" / rel
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1, (case, r.stderr)
    assert "Traceback" not in r.stderr
    assert re.search(rf"policies/{re.escape(rel)}:\d+:\d+: error\[{rule}\]", r.stderr), r.stderr
    assert _tree(demo_repo) == before
    found = json.loads(run_cli("validate", "--format", "json", cwd=demo_repo).stdout)  # one document
    assert any(d["rule"] == rule for d in found)
    assert all(d["line"] >= 1 and d["column"] >= 1 for d in found if d["file"]), found  # annotations need both


def test_missing_fleet_file_via_cli(demo_repo: Path) -> None:
    (demo_repo / "policies" / "fleet.yaml").unlink()
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1 and "policies/fleet.yaml: error[LOAD008]" in r.stderr
