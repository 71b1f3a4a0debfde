"""The fast writers produce the reference bytes: compiler.emit.fast == PyYAML's SafeDumper
(``dump_yaml(fast=False)``), compiler.emit.jsonfast == ``json.dumps(indent=2, sort_keys=True)``,
compiler.load.fast == ruamel. Generated data (hypothesis) with strings chosen to trip a YAML
writer, plus every object the demo and the golden cases render."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import compile_dir, copy_demo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler.load.source as load
import compiler.load.yaml_faults as faults
from compiler.emit.fast import Unsupported
from compiler.emit.jsonfast import dumps_sorted_indent2
from compiler.emit.tree import _FAST, dump_yaml, render_tree

EXAMPLES = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "300"))
GOLDEN = REPO / "tests" / "golden"

# Strings a YAML writer gets wrong: YAML 1.1 booleans/nulls/numbers, indicators, document
# markers, leading/trailing spaces, quotes, unicode, control characters and line breaks.
TRICKY = [
    "", " ", "true", "True", "yes", "no", "on", "off", "null", "Null", "~", "1.34", "1.34.0", "0o17", "017",
    "0x1F", "1_000", "1e3", ".inf", "-.inf", ".nan", "12:30", "2024-01-01", "<<", "=", ":", "-", "?", "- a",
    "? a", "a:", "a: b", "a :b", "#", "a #b", "a#b", "---", "...", "--model", "-1", "+1", "'", '"', "'a'", "a'b",
    "[a]", "{a}", "a,b", "&a", "*a", "!a", "|", ">", "%", "@org/team", "`x`", " lead", "trail ", "a  b",
    "é", "日本", "emoji 😀", "\t", "a\tb", "\r", "a\rb", "\x00", "\x7f", "\u2028", "\x85", "\ufeff", "\n",
    "a\nb", "a\nb\n", "a\n\nb\n", "\na", " a\nb", "a \nb", "a\n b", "a\n\n", "x" * 200,
    "nvidia.com/gpu", "https://example.com:6443/x", "vllm/vllm-openai:v0.11.0", "data-class.gpupolicy.dev/pii",
    "object.metadata.labels['a'] == 'b' && !has(x)",
]

text = st.one_of(st.sampled_from(TRICKY), st.text(max_size=20),
                 st.lists(st.sampled_from(TRICKY), min_size=1, max_size=3).map("".join))
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), text)
keys = st.one_of(st.sampled_from(TRICKY[:60]), st.text(max_size=12))
data = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(keys, inner, max_size=4)), max_leaves=25)
documents = st.one_of(st.dictionaries(keys, data, max_size=5), st.lists(data, max_size=4), data)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_fast_emitter_matches_reference(doc: Any) -> None:
    assert dump_yaml(doc) == dump_yaml(doc, fast=False)


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=3))
def test_fast_emitter_shared_objects_match_reference(items: list[str]) -> None:
    shared = {"k": items}
    doc = {"a": shared, "b": [shared, {"c": []}], "d": items}  # PyYAML writes anchors and aliases
    assert dump_yaml(doc) == dump_yaml(doc, fast=False)


def test_fast_emitter_covers_the_demo() -> None:
    """Every demo object takes the fast path (a fallback is correct but slow: keep it rare)."""
    res = compile_dir(copy_demo(Path(os.environ.get("TMPDIR", "/tmp")) / f"emitfast-{os.getpid()}"))
    try:
        for m in res.manifests:
            try:
                _FAST.dump(m.obj)
            except Unsupported as exc:  # pragma: no cover - the assertion message
                pytest.fail(f"{m.relpath} needs the reference emitter: {exc}")
    finally:
        shutil.rmtree(Path(os.environ.get("TMPDIR", "/tmp")) / f"emitfast-{os.getpid()}", ignore_errors=True)


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if (p / "policies").is_dir()))
def test_golden_outputs_match_reference(case: str, tmp_path: Path) -> None:
    root = tmp_path / case
    shutil.copytree(GOLDEN / case / "policies", root / "policies")
    res = compile_dir(root)
    assert render_tree(res.manifests) == render_tree(res.manifests, fast=False)


json_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(keys, inner, max_size=4),
                            st.dictionaries(st.integers(), inner, max_size=2)), max_leaves=25)


@settings(max_examples=EXAMPLES, deadline=None)
@given(json_data)
def test_fast_json_matches_reference(doc: Any) -> None:
    try:
        expected = json.dumps(doc, indent=2, sort_keys=True)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            dumps_sorted_indent2(doc)
        return
    assert dumps_sorted_indent2(doc) == expected


def _both_loaders(text_: str) -> tuple[Any, Any]:
    fast = load.load_text("p.yaml", text_.encode())
    orig = faults.compose_fast
    faults.compose_fast = lambda _t: None  # type: ignore[assignment]
    try:
        slow = load.load_text("p.yaml", text_.encode())
    finally:
        faults.compose_fast = orig

    def key(r: Any) -> Any:
        src, diags = r
        return (None if src is None else (src.data, src.positions, src.key_positions), [str(d) for d in diags])

    return key(fast), key(slow)


def test_fast_loader_matches_ruamel_on_every_policy_file() -> None:
    files = [p for root in ("policies", "tests") for p in (REPO / root).rglob("*.yaml")]
    assert len(files) > 50
    used = 0
    for p in files:
        text_ = p.read_text(encoding="utf-8", errors="replace")
        used += faults.compose_fast(text_) is not None
        fast, slow = _both_loaders(text_)
        assert fast == slow, p
    assert used > len(files) // 2  # the fast path is the common one


LOADER_CASES = [
    "a: é\nb: [é, x, {y: ü}]\n", "a: |\n  l1\n  l2\nb: >\n  f\n  t\n\nc: x\n", "a:\nb: ~\nc: null\n",
    "d: yes\ne: 0o17\nf: 1_000\ng: 2024-01-01\nh: 1.34\ni: .inf\nj: 12:30\n", "a: multi\n  line\nb: 1\r\nc: 2\r\n",
    "'q k': 1\n\"dq\": 2\n? complex\n: 3\n", "- a\n- b: 1\n  c: [1, 2]\n- - x\n  - y\n", "a: {b: 1, c: [x, 'y']}\n",
    "a:  # c\n  v\n", "a: 'x\n  y'\n", "a: \"\\x41\\u263A\\N\\_\"\n", "-1: x\n1.5: y\ntrue: z\n", "a: [1,\n  2]\n",
    "a: b: c\n", "a: [1, 2\n", "a: 1\na: 2\n", "\ta: 1\n", "a: !!str 1\n", "a: &x 1\nb: *x\n", "<<: {a: 1}\n",
    "%YAML 1.2\n---\na: 1\n", "a: 1\n---\nb: 2\n", "", "# only a comment\n", "just a scalar\n",
    "a: 0b1000\nb: 1_6\nc: +0x10\nd: 010\ne: 1_0.5\nf: 0o17\ng: [0x_1F, -0b1, 08, .5, 1.]\nh: TRUE\ni: .NaN\n",
    "a: \"x\x1by\"\n", "a: 1\nb: x\x00\n", "a: 'x\ufeffy'\n", "%YAML 1.1\n---\na: yes\n", "a: &x 1\nb: &x 2\n",
]


@pytest.mark.parametrize("text_", LOADER_CASES)
def test_fast_loader_matches_ruamel_on_edge_cases(text_: str) -> None:
    fast, slow = _both_loaders(text_)
    assert fast == slow


@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(st.dictionaries(keys, data, min_size=1, max_size=5), st.sampled_from([False, True, None]))
def test_fast_loader_matches_ruamel_on_generated_yaml(doc: dict[str, Any], flow: bool | None) -> None:
    import yaml

    text_ = yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    fast, slow = _both_loaders(text_)
    assert fast == slow
