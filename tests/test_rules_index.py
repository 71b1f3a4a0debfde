"""compiler/rules_index.json, which ``gpupolicy rules`` reads instead of importing the registry
(issue #21): the committed index is what the registry gives (a new or changed rule without
`make docs` fails here), the command prints from it exactly what the registry would, without
importing pydantic or the registry, and a missing or damaged index falls back to the registry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, run_cli

from compiler.diagnostics import rule_url
from compiler.report.rule_index import INDEX, entries, parse_index, render_index, rule_entries
from compiler.rules import all_rules


def test_committed_index_is_what_the_registry_gives() -> None:
    assert INDEX == REPO / "compiler" / "rules_index.json"
    assert INDEX.read_text(encoding="utf-8") == render_index(all_rules()), \
        "compiler/rules_index.json is stale: run `make docs`"


def test_entries_follow_the_registry_in_order() -> None:
    rules = all_rules()
    index = entries(rules)
    assert [e["id"] for e in index] == list(rules)
    kueue = next(e for e in index if e["id"] == "KUEUE001")
    rule = rules["KUEUE001"]
    assert kueue == {"id": "KUEUE001", "area": "KUEUE", "severity": rule.severity.value, "scope": rule.scope.value,
                     "summary": rule.summary, "pass": rule.passing, "fail": rule.failing}


def test_cli_listing_equals_the_registry_listing() -> None:
    rules = all_rules().values()
    text = run_cli("rules", cwd=REPO)
    assert text.returncode == 0, text.stderr
    assert text.stdout == "".join(f"{r.id}  [{r.severity.value}] {r.summary}\n" for r in rules)
    examples = run_cli("rules", "--examples", cwd=REPO).stdout
    expected = "".join(f"{r.id}  [{r.severity.value}] {r.summary}\n"
                       + "    PASS:\n" + "\n".join("      " + x for x in r.passing.splitlines()) + "\n"
                       + "    FAIL:\n" + "\n".join("      " + x for x in r.failing.splitlines()) + "\n"
                       for r in rules)
    assert examples == expected
    as_json = run_cli("rules", "--format", "json", cwd=REPO).stdout
    assert as_json == json.dumps(
        [{"id": r.id, "area": r.area, "severity": r.severity.value, "scope": r.scope.value, "summary": r.summary,
          "pass": r.passing, "fail": r.failing, "url": rule_url(r.id)} for r in rules], indent=2) + "\n"


def test_listing_imports_neither_the_registry_nor_pydantic() -> None:
    probe = ("import contextlib, io, sys\nfrom compiler.cli.main import main\n"
             "for argv in (['rules'], ['rules', '--examples'], ['rules', '--format', 'json']):\n"
             "    with contextlib.redirect_stdout(io.StringIO()):\n        assert main(argv) == 0\n"
             "print(sorted(m for m in sys.modules if m == 'compiler.rules' or m.split('.')[0] == 'pydantic'))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_a_missing_or_damaged_index_falls_back_to_the_registry(tmp_path: Path) -> None:
    from_registry = entries(all_rules())
    assert rule_entries(tmp_path / "absent.json") == from_registry
    good = render_index(all_rules())
    damaged = {
        "not json": good[:-40],
        "not a list": "{}",
        "a missing field": good.replace('    "scope": "team",\n', "", 1),
        "a field out of order": json.dumps([{"area": "ADM", "id": "ADM001", "severity": "warning", "scope": "team",
                                             "summary": "s", "pass": "p", "fail": "f"}]),
        "a value not a string": good.replace('"severity": "warning"', '"severity": 2', 1),
    }
    for why, content in damaged.items():
        assert parse_index(content) is None, why
        path = tmp_path / "index.json"
        path.write_text(content, encoding="utf-8")
        assert rule_entries(path) == from_registry, why
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe[")
    assert rule_entries(tmp_path / "binary.json") == from_registry
    assert parse_index(good) == from_registry
