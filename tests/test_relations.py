"""Relations checked in their second direction (compiler.validate.relations, docs/relations.md):
each rule fails on a one-line change of the demo, located on the line that causes it, and the
demo passes all of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO
from helpers import codes, compile_dir, copy_demo, find, line_of, mutate

from compiler.rules import all_rules
from compiler.validate.relations import RULES

# (rule, file, old, new, file the diagnostic is on, needle on its line)
CASES = [
    ("FLEET401", "teams/vision.yaml", "      clusters: [onprem]", "      clusters: [cloud]",
     "teams/vision.yaml", "- cluster: onprem"),
    ("SERVE403", "teams/nlp.yaml", "architecture: llama-3.1-70b", "architecture: llama-3.1-8b",
     "teams/nlp.yaml", "architecture:"),
    ("FLEET402", "fleet.yaml", "    - name: product\n", "    - name: robotics\n      parent: ai\n    - name: product\n",
     "fleet.yaml", "name: robotics"),
    # chat (pii, allowed in eu) served from the us cluster
    ("SERVE401", "teams/nlp.yaml", "      cluster: onprem\n      pool: h200-serve",
     "      cluster: cloud\n      pool: l40s-serve", "teams/nlp.yaml", "cluster: cloud"),
    # query-rewrite, the only deployment on l40s-serve, removed: the reserved pool idles
    ("SERVE402", "teams/search.yaml", "  serving:\n", "  servingRemoved:\n", "fleet.yaml", "serving: true#2"),
    ("SERVE404", "teams/search.yaml", "      architecture: llama-3.1-8b",
     "      architecture: {parametersB: 8, layers: 16, attentionHeads: 32, kvHeads: 8, headDim: 128}",
     "teams/search.yaml", "architecture:"),
    ("ADM401", "teams/interns.yaml", "  namespaces:\n    - name: interns-sandbox\n      clusters: [cloud]\n",
     "  namespaces: []\n", "teams/interns.yaml", "groups:"),
]


@pytest.mark.parametrize(("rule", "rel", "old", "new", "on", "needle"), CASES, ids=[c[0] for c in CASES])
def test_relation_rule_fails(tmp_path: Path, rule: str, rel: str, old: str, new: str, on: str, needle: str) -> None:
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    if rule == "SERVE402":
        path = root / "policies" / rel
        path.write_text(re.sub(r"  servingRemoved:\n((    |      ).*\n)*", "", path.read_text()))
    result = compile_dir(root)
    d = find(result.diagnostics, rule)
    assert d.location is not None and d.location.file.endswith(on)
    text, _, nth = needle.partition("#")
    assert d.location.line == line_of(root, on, text, int(nth or 1)), d
    assert d.hint


def test_demo_passes_every_relation_rule() -> None:
    result = compile_dir(REPO)
    assert not {r.id for r in RULES} & set(codes(result.diagnostics))


def test_relation_rules_are_registered_with_examples() -> None:
    registry = all_rules()
    for r in RULES:
        assert registry[r.id] is r and r.passing and r.failing


def test_relations_doc_names_every_relation_rule() -> None:
    doc = (REPO / "docs/relations.md").read_text()
    for r in RULES:
        assert r.id in doc, r.id
    for rid in set(re.findall(r"\b[A-Z]{3,6}\d{3}\b", doc)):
        assert rid in all_rules(), f"docs/relations.md cites unknown rule {rid}"


def test_two_clusters_with_one_name_are_reported_not_a_crash(tmp_path: Path) -> None:
    """Found by the field-effect test: renaming a cluster to another's name crashed the DRA proof."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: onprem\n", "    - name: cloud\n")
    assert "FLEET001" in codes(compile_dir(root).diagnostics)


def test_a_team_rendering_nothing_compiles(tmp_path: Path) -> None:
    """Found by the field-effect test: a team without namespaces or serving renders no file, and its
    empty unit was taken for a vanished cache entry."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/interns.yaml", "  namespaces:\n    - name: interns-sandbox\n      clusters: [cloud]\n", "")
    result = compile_dir(root)
    assert not result.failed and "FLEET401" in codes(result.diagnostics)


def test_gitops_path_is_where_the_build_writes(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    assert "GITOPS401" not in codes(compile_dir(root).diagnostics)
    mutate(root, "fleet.yaml", "    path: out\n", "    path: deploy\n")
    d = find(compile_dir(root).diagnostics, "GITOPS401")
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "path: deploy")
    assert "deploy/" in d.message and d.hint == "set gitops.path: out, or build with --out deploy"

