"""REPORT.md and allocation.json: the sections and the numbers an auditor reads."""

from __future__ import annotations

import json

from conftest import REPO
from helpers import compile_dir


def test_report_sections_and_numbers() -> None:
    res = compile_dir(REPO)
    md = res.out_files["REPORT.md"].decode()
    for heading in ("## Cluster `onprem`", "## Cluster `cloud`", "## Cohort tree", "## Serving reservations",
                    "## GPU accounting path per cluster", "## Who held which GPU"):
        assert heading in md, heading
    # capacity and shares: 8 nodes x 8 H100 = 64, nlp 32 + recsys 16 guaranteed = 48 (75%)
    assert "| `h100-80gb` | full | `gpupolicy.dev/h100-80gb` | h100-train 8x8 | 64 | 0 | 48 (75%) |" in md
    assert "| nlp | `h100-80gb` | 32 (team) | 50% | 0 (team) | 0 (team) |" in md
    assert "```mermaid" in md and "research --> team_nlp" in md
    assert "| nlp / chat | onprem / h200-serve | 8..16 (16) | 131.42 GiB" in md
    assert "| cloud | `l4-ts4` | **no** |" in md


def test_allocation_json_ties_to_policy() -> None:
    res = compile_dir(REPO)
    data = json.loads(res.out_files["allocation.json"])
    assert len(data["policySha256"]) == 64
    assert data["sources"] == sorted(["policies/fleet.yaml", *(f"policies/teams/{t}.yaml" for t in
                                                               ("interns", "nlp", "recsys", "search", "vision"))])
    interns = data["clusters"]["cloud"]["classes"]["l4-ts4"]["teams"]["interns"]
    assert interns["borrow"] == {"value": "unlimited", "origin": "department research"}
    assert interns["lend"] == {"value": 16, "origin": "team"}
    assert data["clusters"]["cloud"]["classes"]["l4-ts4"]["capacity"] == 96
    assert data["accounting"]["onprem"]["path"] == "claim-template"
