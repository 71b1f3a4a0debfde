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


@pytest.mark.parametrize(
    ("raw", "line", "col"),
    [
        ("a: é\nb: ñ caf".encode() + b"\xe9\n", 2, 9),  # characters, not bytes: 'ñ' is two
        (b"\xef\xbb\xbfname: caf\xe9\n", 1, 10),  # the byte order mark takes no column
        (b"a: 1\rb: caf\xe9\r", 2, 7),  # a lone CR breaks a line, as the parser counts
    ],
)
def test_non_utf8_is_located_in_characters(raw: bytes, line: int, col: int) -> None:
    assert _one(raw) == ("LOAD002", line, col)


def test_utf16_says_so() -> None:
    src, diags = load_text("policies/teams/x.yaml", "a: 1\n".encode("utf-16"))
    assert src is None and [d.code for d in diags] == ["LOAD002"]
    assert diags[0].location == __import__("compiler.diagnostics").diagnostics.Location("policies/teams/x.yaml", 1, 1)
    assert diags[0].hint is not None and "UTF-16" in diags[0].hint


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


def _located(text: str | bytes) -> tuple[str, int, int, str, str]:
    raw = text.encode() if isinstance(text, str) else text
    src, diags = load_text("policies/teams/x.yaml", raw)
    assert src is None and len(diags) == 1, diags
    d = diags[0]
    assert d.location is not None and d.location.file == "policies/teams/x.yaml"
    assert d.hint, d  # every loader finding says what to do
    assert "\n" not in d.message and "position" not in d.message and "<unicode string>" not in d.message, d.message
    return d.code, d.location.line, d.location.col, d.message, d.hint


@pytest.mark.parametrize(
    ("text", "line", "col", "named"),
    [
        ('apiVersion: v\nmetadata:\n  description: "GPU \x1b[31m team"\n', 3, 21, "U+001B (ESC)"),  # quoted
        ("apiVersion: v\nmetadata:\n  description: GPU \x1b[31m team\n", 3, 20, "U+001B (ESC)"),  # plain
        ("a: 1\n\x1bb: 2\n", 2, 1, "U+001B (ESC)"),  # in a key
        ("a: 1\nb: x\x00y\n", 2, 5, "U+0000 (NUL)"),
        ("a: 1\n\x00", 2, 1, "U+0000 (NUL)"),
        ("a: 1\nb: x\x07\n", 2, 5, "U+0007 (BEL)"),
        ("a: 1\nb: x\x0cy\n", 2, 5, "U+000C (FF)"),
        ("a: 1\nb: x\x7fy\n", 2, 5, "U+007F (DEL)"),
        ("a: 1\nb: x\x9by\n", 2, 5, "U+009B (C1)"),
        ("a: 1\nb: x\ufffe\n", 2, 5, "U+FFFE"),
        ("a: 1\n# a comment \x1b\nb: 2\n", 2, 13, "U+001B"),  # in a comment too
        ("a: é\nb: ü\x1b\n", 2, 5, "U+001B"),  # columns count characters, not bytes
        ("a: 1\r\nb: 2\r\nc: x\x1b\r\n", 3, 5, "U+001B"),  # CRLF
        ("a: 1\rb: 2\rc: x\x1b\r", 3, 5, "U+001B"),  # a lone CR breaks a line in YAML 1.2
        ("a: 'x\u2028y'\nb: x\x1b\n", 2, 5, "U+001B"),  # LS is no line break in YAML 1.2
        ("\ufeffa: x\x1b\n", 1, 5, "U+001B"),  # the leading byte order mark takes no column
        ("a: 1\n...\n%YAML 1.2\n---\nb: x\x1b\n", 5, 5, "U+001B"),
    ],
)
def test_a_character_yaml_forbids_is_located(text: str, line: int, col: int, named: str) -> None:
    """ruamel's reader names a forbidden character by its index in the text ("position 205", at 1:1);
    it is reported at its own line and column, named, on one line, with a hint."""
    code, got_line, got_col, message, hint = _located(text)
    assert (code, got_line, got_col) == ("LOAD001", line, col), message
    assert named in message and "not even inside quotes" in message
    assert "delete it" in hint


def test_a_nul_at_the_start_suspects_utf16() -> None:
    code, line, col, message, hint = _located("a: 1\n".encode("utf-16-be"))
    assert (code, line, col) == ("LOAD001", 1, 1) and "U+0000" in message and "UTF-16" in hint


@pytest.mark.parametrize(
    ("text", "code", "line", "col", "needle"),
    [
        ("\ufeff\ufeffa: 1\n", "LOAD001", 1, 1, "byte order mark"),  # a second one
        ('a: 1\nb: "x\ufeffy"\n', "LOAD001", 2, 6, "byte order mark"),
        ("a: 1\n\ufeffb: 2\n", "LOAD001", 2, 1, "byte order mark"),
        ("%YAML 1.1\n---\na: yes\n", "LOAD001", 1, 1, "%YAML 1.1"),
        ("# c\n%YAML 1.3\n---\na: 1\n", "LOAD001", 2, 1, "%YAML 1.3"),  # ruamel asserts on 1.3
        ("%YAML 2.0\n---\na: 1\n", "LOAD001", 1, 1, "%YAML 2.0"),
        ("a: 1\n...\n%YAML 1.1\n---\nb: 2\n", "LOAD001", 3, 1, "%YAML 1.1"),  # a later document's
        ("%YAML 1.2\n%YAML 1.2\n---\na: 1\n", "LOAD001", 2, 1, "duplicate YAML directive"),
        ("%YAML 1.2\na: 1\n", "LOAD001", 2, 1, "document start"),
        ('a: "abc\n', "LOAD001", 2, 1, "from line 1, column 4"),
        ('a: "\\q"\n', "LOAD001", 1, 6, "unknown escape"),
        ("a: b: c\n", "LOAD001", 1, 5, "mapping values"),
        ("a: {b: 1\n", "LOAD001", 2, 1, "flow mapping"),
        ("a: *x\n", "LOAD001", 1, 4, "undefined alias"),
        ("a: &x 1\nb: &x 2\nc: *x\n", "LOAD005", 2, 4, "anchor &x is defined twice"),
        ("a: 1\n... x\n", "LOAD001", 2, 5, "after document end"),
    ],
)
def test_every_loader_error_is_located_on_one_line(text: str, code: str, line: int, col: int, needle: str) -> None:
    got = _located(text)
    assert got[:3] == (code, line, col), got
    assert needle in got[3], got[3]


def test_a_reused_anchor_prints_no_warning(recwarn: pytest.WarningsRecorder) -> None:
    _located("a: &x 1\nb: &x 2\n")
    assert not recwarn.list


def test_yaml_12_directive_is_accepted() -> None:
    src, diags = load_text("f.yaml", b"%YAML 1.2\n---\na: 0b1\nb: 010\n")
    assert not diags and src is not None and src.data == {"a": "0b1", "b": "010"}


def test_text_position_agrees_with_ruamel_marks() -> None:
    """A position found in the text (a forbidden character's index) and the parser's marks count
    lines and columns alike: LF, CRLF and lone CR breaks, NEL/LS/PS inside lines, characters."""
    from ruamel.yaml import YAML

    from compiler.load.yaml_faults import text_position

    texts = ["a: 1\r\nb:\r  c: é\n  d: [x, 'y\u2028z', \"\x85\"]\r\ne: {f: 𝄞, g: 1}\n",
             "\ufeffa: 1\nb: [x, é]\nc: 2\n", "- 1\r- 'a\r\n  b'\r\n- 3\n"]
    for text in texts:
        stack = [YAML(typ="safe", pure=True).compose(text)]
        seen = 0
        while stack:
            node = stack.pop()
            mark = node.start_mark
            assert text_position(text, mark.index) == (mark.line + 1, mark.column + 1), (text, mark)
            seen += 1
            if isinstance(node.value, list):
                stack += [x for item in node.value for x in (item if isinstance(item, tuple) else (item,))]
        assert seen > 3


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
