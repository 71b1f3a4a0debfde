"""Loader hazards: every malformed file ends in a located LOAD diagnostic, never an exception."""

from __future__ import annotations

import math
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
    assert src.data == {"a": "yes", "b": 16, "c": "1_000", "d": None, "e": 1.5, "f": True}


# (written, value): YAML 1.2's core schema (yaml.org/spec/1.2.2, 10.3.2), what editors and the JSON
# Schema read. ruamel's resolver tags YAML 1.1's forms as numbers too; they stay text here.
CORE_SCALARS = [
    ("8", 8), ("-8", -8), ("+8", 8), ("0", 0), ("0o17", 15), ("0x1F", 31), ("0x1f", 31),
    ("1.5", 1.5), ("1.", 1.0), (".5", 0.5), ("-.5", -0.5), ("1e3", 1000.0), ("1.5E-2", 0.015),
    (".inf", math.inf), ("-.Inf", -math.inf), ("+.INF", math.inf),
    ("true", True), ("False", False), ("TRUE", True), ("~", None), ("null", None), ("NULL", None),
    # YAML 1.1 only (or ruamel only): text under YAML 1.2
    ("0b1000", "0b1000"), ("-0b1", "-0b1"), ("1_6", "1_6"), ("1_000", "1_000"), ("1__", "1__"),
    ("+0x10", "+0x10"), ("-0x10", "-0x10"), ("0x_1F", "0x_1F"), ("+0o17", "+0o17"), ("0o1_7", "0o1_7"),
    ("1_0.5", "1_0.5"), ("1_000e3", "1_000e3"), ("1:30", "1:30"), ("1:30.5", "1:30.5"), ("190:20:30", "190:20:30"),
    ("yes", "yes"), ("No", "No"), ("on", "on"), ("OFF", "OFF"), ("y", "y"),
    # a leading zero: octal 8 to YAML 1.1, 10 to YAML 1.2; kept as written (a number field refuses it)
    ("010", "010"), ("-010", "-010"), ("08", "08"), ("00", "00"),
    # an explicit tag holds the core forms only
    ("!!int 8", 8), ("!!int 0b1000", "0b1000"), ("!!int 1_6", "1_6"), ("!!float 1", 1.0), ("!!float 1_0.5", "1_0.5"),
    ("!!bool true", True), ("!!bool yes", "yes"), ("!!null ''", None), ("!!null nothing", "nothing"),
    ("!!str 8", "8"), ("'0b1000'", "0b1000"), ('"1_6"', "1_6"),
]


@pytest.mark.parametrize(("written", "value"), CORE_SCALARS, ids=[w for w, _ in CORE_SCALARS])
def test_plain_scalars_are_typed_by_yaml_12_core(written: str, value: object) -> None:
    for text in (f"a: {written}\n", f"a: [{written}]\n"):  # block and flow; libyaml's path and ruamel's
        src, diags = load_text("f.yaml", text.encode())
        assert not diags and src is not None, diags
        got = src.data["a"] if text.startswith("a: [") is False else src.data["a"][0]
        assert type(got) is type(value) and got == value, (text, got)


def test_nan_is_core() -> None:
    for written in (".nan", ".NaN", ".NAN"):
        src, _ = load_text("f.yaml", f"a: {written}\n".encode())
        assert src is not None and math.isnan(src.data["a"])
    src, _ = load_text("f.yaml", b"a: -.nan\n")  # no signed NaN in the core schema
    assert src is not None and src.data["a"] == "-.nan"



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
