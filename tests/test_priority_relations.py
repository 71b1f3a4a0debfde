"""Priority relations checked from the fleet's side: reservedFor names real teams (ADM010), and the
default tier is stated once (ADM011)."""

from __future__ import annotations

from pathlib import Path

from test_rules_alone import alone, at


def test_adm010_reserved_for_a_team_without_file(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml", "reservedFor: [nlp]", "reservedFor: [nlpp]", "ADM010")
    assert "'nlpp', which has no team file" in d.message and d.hint == "did you mean 'nlp'?"
    at(root, d, "fleet.yaml", "reservedFor: [nlpp]")


def test_adm011_default_tier_and_defaults_priority_disagree(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml", "    priority: standard\n", "    priority: preemptible\n", "ADM011")
    assert "'standard' is marked default, but defaults.priority is 'preemptible'" in d.message
    at(root, d, "fleet.yaml", "default: true")
