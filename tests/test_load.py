"""Loader hazards: every malformed file ends in a located LOAD diagnostic, never an exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.load.files import MAX_FILE_BYTES
from compiler.load.source import load_policy_dir, load_text


def _one(text: str | bytes) -> tuple[str, int, int]:
    raw = text.encode() if isinstance(text, str) else text
    src, diags = load_text("policies/teams/x.yaml", raw)
    assert diags, "expected a diagnostic"
    d = diags[0]
    assert d.location is not None and d.location.file == "policies/teams/x.yaml"
    return d.code, d.location.line, d.location.col


@pytest.mark.parametrize(
    ("text", "code", "line", "col"),
    [
        ("a: 1\nb:\n\tc: 2\n", "LOAD001", 3, 1),  # tab indentation
        ("a: [1, 2\nb: 3\n", "LOAD001", 2, 2),  # unbalanced bracket
        ("", "LOAD003", 1, 1),  # empty file
        ("# only a comment\n", "LOAD003", 1, 1),
        ("a: 1\n---\nb: 2\n", "LOAD003", 3, 1),  # two documents
        ("a: 1\nb: 2\na: 3\n", "LOAD004", 3, 1),  # duplicate key
        ("a: !!binary aGVsbG8=\n", "LOAD005", 1, 4),
        ("a: !custom 1\n", "LOAD005", 1, 4),
        ("base: &b {x: 1}\nother:\n  <<: *b\n", "LOAD005", 3, 3),  # merge key
        ("? [a, b]\n: 1\n", "LOAD007", 1, 3),
    ],
)
def test_malformed_yaml_is_located(text: str, code: str, line: int, col: int) -> None:
    assert _one(text) == (code, line, col)


def test_non_utf8_names_the_byte() -> None:
    code, line, col = _one(b"name: caf\xe9\n")
    assert (code, line, col) == ("LOAD002", 1, 10)


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    code, _, _ = _one("\n".join(lines) + "\n")
    assert code == "LOAD006"


def test_deep_nesting_is_refused() -> None:
    text = "a: " + "[" * 100 + "]" * 100 + "\n"
    assert _one(text)[0] == "LOAD006"


def test_oversized_file_is_refused() -> None:
    assert _one("a: " + "x" * (1 << 20) + "\n")[0] == "LOAD006"


def test_yaml_12_scalars() -> None:
    src, diags = load_text("f.yaml", b"a: yes\nb: 0x10\nc: 1_000\nd: ~\ne: 1.5\nf: true\n")
    assert not diags and src is not None
    assert src.data == {"a": "yes", "b": 16, "c": 1000, "d": None, "e": 1.5, "f": True}


def test_positions_are_one_based() -> None:
    src, _ = load_text("f.yaml", b"spec:\n  budgets:\n    - cluster: a\n      class: b\n")
    assert src is not None
    assert src.locate(("spec", "budgets", 0, "class")).line == 4
    assert src.locate(("spec", "budgets", 0, "class"), key=True).col == 7
    assert src.locate(("spec", "budgets", 0, "nope")).line == 3  # nearest ancestor


def test_missing_fleet_file(tmp_path: Path) -> None:
    (tmp_path / "policies" / "teams").mkdir(parents=True)
    sources, diags = load_policy_dir(tmp_path / "policies", tmp_path)
    assert sources.fleet is None
    assert [d.code for d in diags] == ["LOAD008"]
    assert diags[0].location is not None and diags[0].location.file == "policies/fleet.yaml"


def test_stray_files_in_teams_dir(tmp_path: Path) -> None:
    (tmp_path / "policies" / "teams").mkdir(parents=True)
    (tmp_path / "policies" / "fleet.yaml").write_text("a: 1\n")
    (tmp_path / "policies" / "teams" / "ml.yml").write_text("a: 1\n")
    _, diags = load_policy_dir(tmp_path / "policies", tmp_path)
    assert [d.code for d in diags] == ["LOAD008"]


@pytest.mark.parametrize("size", [0, 10, 70_000, MAX_FILE_BYTES, MAX_FILE_BYTES + 1, 3 * MAX_FILE_BYTES])
def test_read_policy_file_reads_up_to_one_byte_over_the_limit(tmp_path: Path, size: int) -> None:
    """A policy file is read whole, sized by its ``fstat``, and never past one byte over the
    loader's limit (which the loader then reports)."""
    from compiler.load.files import read_policy_file

    path = tmp_path / "t.yaml"
    data = bytes(i % 251 for i in range(size))
    path.write_bytes(data)
    got, problem = read_policy_file(path)
    assert problem is None and got == data[:MAX_FILE_BYTES + 1]
