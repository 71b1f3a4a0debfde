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
    ("control character", "teams/vision.yaml", 'kind: Team\nmetadata: {description: "a\x1b[2Jb"}\n', "LOAD001"),
    ("NUL", "teams/vision.yaml", b"kind: Team\x00\n", "LOAD001"),
    ("UTF-16", "teams/vision.yaml", "kind: Team\n".encode("utf-16"), "LOAD002"),
    ("byte order mark inside", "teams/vision.yaml", "kind: Team\nname: \ufeffx\n", "LOAD001"),
    ("YAML 1.1 directive", "teams/vision.yaml", "%YAML 1.1\n---\nkind: Team\n", "LOAD001"),
    ("YAML 1.3 directive", "teams/vision.yaml", "%YAML 1.3\n---\nkind: Team\n", "LOAD001"),
    ("reused anchor", "teams/vision.yaml", "kind: &k Team\napiVersion: &k x\n", "LOAD005"),
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


def test_a_control_character_is_reported_where_it_is(demo_repo: Path) -> None:
    """The reviewer's case: ESC inside metadata.description was ``vision.yaml:1:1: LOAD001 ... position 205``
    with a literal newline in the message. Now: its line and column, one line, the character named, a
    hint; in text and in GitHub annotations (escaped by compiler.escape, as every message is)."""
    path = demo_repo / "policies" / "teams" / "vision.yaml"
    text = path.read_text().replace("  name: vision\n", '  name: vision\n  description: "Vision \x1b[31mGPU team"\n', 1)
    path.write_text(text)
    line = text.split("\n").index('  description: "Vision \x1b[31mGPU team"') + 1
    col = len('  description: "Vision ') + 1
    r = run_cli("validate", "--no-verify", cwd=demo_repo)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"policies/teams/vision.yaml:{line}:{col}: error[LOAD001] control character U+001B (ESC)"), first
    assert "position" not in r.stderr and "\\n" not in first and "\x1b" not in r.stderr
    assert "hint: delete it" in r.stderr
    gh = run_cli("validate", "--no-verify", "--format", "github", cwd=demo_repo).stderr
    annotation = next(ln for ln in gh.splitlines() if "LOAD001" in ln)
    assert f"file=policies/teams/vision.yaml,line={line},col={col}" in annotation, annotation
    found = json.loads(run_cli("validate", "--no-verify", "--format", "json", cwd=demo_repo).stdout)
    assert [(d["rule"], d["line"], d["column"]) for d in found] == [("LOAD001", line, col)], found
    assert found[0]["hint"] and "U+001B" in found[0]["message"]


def test_the_code_frame_counts_lines_as_yaml_does(demo_repo: Path) -> None:
    """A line separator (U+2028) or form feed inside quoted text is no line break to YAML 1.2, so the
    finding's line is the parser's; the code frame shows that line (str.splitlines would break there,
    and show the line above), and a number YAML 1.1 would read is refused where it is written."""
    path = demo_repo / "policies" / "teams" / "vision.yaml"
    text = path.read_text().replace("  name: vision\n", '  name: vision\n  description: "a\u2028b\x85c"\n', 1)
    path.write_text(text.replace("guaranteed: 8\n", "guaranteed: 0b1000\n", 1))
    line = path.read_bytes().decode().split("\n").index("      guaranteed: 0b1000") + 1
    r = run_cli("validate", "--no-verify", cwd=demo_repo)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"policies/teams/vision.yaml:{line}:19: error[SCHEMA002]" in r.stderr, r.stderr
    assert f"  {line} |       guaranteed: 0b1000\n" in r.stderr, r.stderr
    assert "write 8" in r.stderr
