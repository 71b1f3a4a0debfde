"""The rule registry: every rule has a stable ID, a one-line summary and PASS/FAIL examples."""

from __future__ import annotations

import re

from compiler.rules import AREAS, all_rules


def test_every_rule_is_documented() -> None:
    rules = all_rules()
    assert len(rules) >= 100
    for rid, rule in rules.items():
        assert re.fullmatch(r"(%s)\d{3}" % "|".join(AREAS), rid)
        assert rule.summary.strip() and "\n" not in rule.summary, rid
        assert rule.passing.strip() and rule.failing.strip(), rid
        assert rule.passing != rule.failing, rid
    assert {rid[:-3] for rid in rules} == set(AREAS)
