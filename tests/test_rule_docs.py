"""docs/rules/: one generated page per rule plus an index; committed pages equal what the registry
renders (a new rule without regenerated docs fails here: run `make docs`), every rule URL resolves."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, run_cli

from compiler.diagnostics import Rule, Scope, Severity, rule_url
from compiler.report.rule_docs import PAGE, render_index, render_page, render_rule_docs
from compiler.rules import all_rules

DOCS = REPO / "docs" / "rules"


def test_committed_pages_are_what_the_registry_renders() -> None:
    expected = render_rule_docs()
    committed = {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}
    assert sorted(committed) == sorted(expected), "docs/rules/ is stale: run `make docs`"
    stale = [name for name, text in expected.items() if committed[name] != text]
    assert not stale, f"docs/rules/ pages differ from the registry: {stale[:5]}; run `make docs`"


def test_every_rule_url_resolves_to_its_page() -> None:
    for rid in all_rules():
        url = rule_url(rid)
        assert url.endswith(f"/docs/rules/{rid}.md"), url
        page = DOCS / url.rsplit("/", 1)[-1]
        assert page.is_file(), f"{rid}: {url} has no page"
        assert page.read_text(encoding="utf-8").splitlines()[2] == f"# {rid}"


def test_a_page_has_every_section() -> None:
    page = render_page(all_rules()["KUEUE001"])
    for part in ("| Severity | error |", "| Scope | `policy`", "| Declared in | `compiler/validate/capacity.py` |",
                 "| Check | `check_over_capacity` |", "| Waivable | yes |", "## What it checks and why",
                 "## Examples", "Passes:", "Fails:", "## How to fix", "## How to waive", "rule: KUEUE001"):
        assert part in page, part


def test_unwaivable_rules_say_why() -> None:
    page = render_page(all_rules()["LOAD009"])
    assert "| Waivable | no |" in page and "LOAD009 cannot be waived: a file is read" in page
    assert "rule: LOAD009" not in page


def test_index_groups_rules_by_area_and_links_each() -> None:
    index = render_rule_docs()["README.md"]
    areas = re.findall(r"^## (\w+)$", index, re.M)
    assert areas == sorted(set(areas), key=areas.index) and "KUEUE" in areas and "FLEET" in areas
    for rid in all_rules():
        assert f"| [{rid}]({rid}.md) |" in index


def test_rule_text_is_escaped_for_markdown() -> None:
    rule = Rule("FLEET999", "A file `teams/<team>.yaml` is named <team>.yaml | *not* [x](y) ~~z~~",
                "a: 1\n```\nb: 2", "a: 2", Severity.ERROR, Scope.FLEET)
    page = render_page(rule)
    assert ("A file `teams/<team>.yaml` is named &lt;team&gt;.yaml \\| \\*not\\* \\[x\\](y) \\~\\~z\\~\\~"
            in page)  # the code span kept as written, the rest inert
    assert "````text\na: 1\n```\nb: 2\n````" in page  # a fence inside an example cannot close the block
    assert "```yaml\na: 2\n```" in page  # a YAML example is highlighted as YAML
    index = render_index({"FLEET999": rule})
    row = next(x for x in index.splitlines() if x.startswith("| [FLEET999]"))
    assert row.count(" | ") == 2  # the '|' of the summary does not open a column


def test_cli_writes_the_pages_and_removes_stale_ones(tmp_path: Path) -> None:
    out = tmp_path / "rules"
    out.mkdir()
    (out / "KUEUE999.md").write_text("a rule that no longer exists\n")
    (out / "notes.md").write_text("not a rule page: kept\n")
    r = run_cli("rules", "--docs", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(1 removed)" in r.stderr
    written = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.md")}
    assert not (out / "KUEUE999.md").exists() and written.pop("notes.md") == "not a rule page: kept\n"
    assert written == render_rule_docs()
    assert all(PAGE.match(name) for name in written if name != "README.md")
