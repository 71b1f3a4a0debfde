"""allocation.json written by structure (compiler.report.policy_report._teams_text through
compiler.emit.jsonfast.Written) is exactly ``json.dumps(allocation_data(policy), indent=2,
sort_keys=True)``: on the demo, a generated organisation, and hand-made budget entries with the
values the fast path must refuse (bools, odd origins) or escape."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers import copy_demo, policy_at

from compiler.emit.jsonfast import Written, dumps_sorted_indent2
from compiler.policy.allocation import Resolved, TeamAllocation
from compiler.policy.graph import Policy
from compiler.report import policy_report, serving_rows
from compiler.report.fragments import in_blocks, team_name
from compiler.report.policy_report import _teams, _written, allocation_data, render_json, render_markdown


def _reference(policy: Policy) -> bytes:
    return (json.dumps(allocation_data(policy), indent=2, sort_keys=True) + "\n").encode()


def _policy(root: Path) -> Policy:
    policy, _diags = policy_at(root)
    assert policy is not None
    return policy


def test_demo_allocation_json_is_the_reference(tmp_path: Path) -> None:
    policy = _policy(copy_demo(tmp_path))
    assert render_json(policy) == _reference(policy)


@pytest.mark.parametrize("block", [16, 2, 1])
def test_generated_allocation_json_is_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    block: int) -> None:
    """Also with the serving rows and the tables cut into blocks of every size
    (``_SERVING_BLOCK``, ``_ROWS_BLOCK``): both reports the same bytes however they are cut."""
    from bench.generate import generate

    generate(60, 5, tmp_path / "org")
    policy = _policy(tmp_path / "org")
    whole = render_markdown(policy)
    monkeypatch.setattr(serving_rows, "_SERVING_BLOCK", block)
    monkeypatch.setattr(policy_report, "_ROWS_BLOCK", block)
    policy = _policy(tmp_path / "org")
    assert len(policy.allocation.entries) > 300  # the structured path carries most of the file
    blocks = in_blocks(serving_rows._serving_teams(policy), serving_rows._SERVING_BLOCK, team_name)
    assert len(blocks) >= (1 if block == 16 else 4)
    assert render_json(policy) == _reference(policy)
    assert render_markdown(policy) == whole


def _entry(team: str, g: Any, b: Any, le: Any, origin: str = "team") -> TeamAllocation:
    return TeamAllocation(team, "c", "k", Resolved(g, origin), Resolved(b, "fleet defaults"),
                          Resolved(le, "built-in"), "teams/x.yaml", ("spec", "budgets", 0))


ODD = [
    [],  # an empty class: "{}"
    [_entry("a", 2, None, 0), _entry("b", 0, 5, None), _entry("c", None, None, None)],
    [_entry("a", 1, 1, 1), _entry("b", True, 1, 1)],  # True == 1: must be written "true", not cached as 1
    [_entry("a", 1, True, False)],
    [_entry("é-ü", 3, 2**70, 1, origin='department "q\\uote" ünï')],  # escaped key, huge int, escaped origin
    [_entry("z", 4, 1, 1), _entry("a", 4, 1, 1), _entry("z", 2, None, 0)],  # unsorted; a team twice: the last
    [_entry("a", 1.5, 1, 1)],  # a float value: the generic writer
    [_entry("a", 2, 1, 1), _entry("b", 2.0, 1, 1)],  # 2.0 == 2 as a key, but written "2.0"
    [_entry("a", 1, 1, 1, origin=None)],  # type: ignore[arg-type]  # a non-str origin: the generic writer
]


@pytest.mark.parametrize("entries", ODD)
def test_written_teams_match_the_generic_writer(entries: list[TeamAllocation]) -> None:
    seen: dict[tuple[Any, ...], str] = {}
    doc = {"clusters": {"c": {"classes": {"k": {"teams": _written(seen)(entries)}}}}, "x": [1, {"y": None}]}
    plain = {"clusters": {"c": {"classes": {"k": {"teams": _teams(entries)}}}}, "x": [1, {"y": None}]}
    expected = json.dumps(plain, indent=2, sort_keys=True)
    assert dumps_sorted_indent2(doc) == expected
    assert dumps_sorted_indent2(doc) == expected  # again, with the kinds of entries kept in ``seen``


def test_written_falls_back_with_the_rest_of_the_document() -> None:
    """A value the fast writer refuses (NaN) sends the whole document to json.dumps, which asks
    each Written for its plain value."""
    entries = [_entry("a", 2, None, 0)]
    doc = {"n": math.nan, "t": _written({})(entries)}
    assert dumps_sorted_indent2(doc) == json.dumps({"n": math.nan, "t": _teams(entries)}, indent=2, sort_keys=True)


def test_written_may_decline() -> None:
    doc = {"a": Written(lambda: {"k": [1, 2]}, lambda nl: None)}
    assert dumps_sorted_indent2(doc) == json.dumps({"a": {"k": [1, 2]}}, indent=2, sort_keys=True)


def test_unknown_objects_still_fail_as_json_does() -> None:
    class Odd:
        pass

    with pytest.raises(TypeError, match="Object of type Odd is not JSON serializable"):
        dumps_sorted_indent2({"a": Odd()})
