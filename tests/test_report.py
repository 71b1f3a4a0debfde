"""REPORT.md and allocation.json: the sections and the numbers an auditor reads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import compile_dir, copy_demo, policy_at

from compiler import escape
from compiler.report import mermaid
from compiler.report.policy_report import render_markdown


def test_report_sections_and_numbers() -> None:
    res = compile_dir(REPO)
    md = res.out_files["REPORT.md"].decode()
    for heading in ("## Cluster `onprem`", "## Cluster `cloud`", "## Cohort tree", "## Serving reservations",
                    "## GPU accounting path per cluster", "## Who held which GPU"):
        assert heading in md, heading
    # capacity and shares: 8 nodes x 8 H100 = 64, nlp 32 + recsys 16 guaranteed = 48 (75%)
    assert "| `h100-80gb` | full | `gpupolicy.dev/h100-80gb` | h100-train 8x8 | 64 | 0 | 48 (75%) |" in md
    assert "| nlp | `h100-80gb` | 32 (team) | 50% | 0 (team) | 0 (team) |" in md
    assert "```mermaid" in md and '  d2["research (weight 2)"]' in md and "  d2 --> t1" in md  # t1: nlp
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


# ---------- pictures: charts GitHub renders, a tree that stays readable and drawable ----------

_GRAPH_LINE = re.compile(r'^  (?:[dt]\d+(?:\["[^"\[\]`]*"\]|\(\["[^"\[\]`]*"\]\))|[dt]\d+ --> [dt]\d+)$')


def _mermaid_blocks(md: str) -> list[list[str]]:
    return [block.split("\n") for block in re.findall(r"(?ms)^```mermaid\n(.*?)\n```$", md)]


def test_report_charts_capacity_and_allocation() -> None:
    md = compile_dir(REPO).out_files["REPORT.md"].decode()
    blocks = _mermaid_blocks(md)
    xy = [b for b in blocks if b[0] == "xychart-beta"]
    assert len(xy) == 2  # one per cluster
    onprem = next(b for b in xy if "onprem" in b[1])
    assert '  x-axis ["a100-80gb-mig-1g.10gb", "a100-80gb-mig-2g.20gb", "a100-80gb-mig-3g.40gb", "h100-80gb"]' in onprem
    assert onprem[-2:] == ["  bar [64, 32, 32, 64]", "  line [32, 32, 16, 48]"]  # capacity, guaranteed
    pies = {b[1].strip(): b[2:] for b in blocks if b[0] == "pie showData"}
    # h100-80gb on onprem: nlp 32 + recsys 16 of 64, the rest held by no team
    assert pies["title onprem h100-80gb, capacity 64"] == ['  "nlp" : 32', '  "recsys" : 16',
                                                           '  "guaranteed to no team" : 16']


def _rename_department(root: Path, old: str, new: str) -> None:
    for path in [root / "policies" / "fleet.yaml", *(root / "policies" / "teams").glob("*.yaml")]:
        text = path.read_text()
        text = re.sub(rf"(name|parent|department): {old}\b", rf"\1: {new}", text)
        path.write_text(text)


def test_cohort_tree_ids_are_generated_not_names(tmp_path: Path) -> None:
    """A department named ``end`` (a mermaid keyword) broke the diagram; ``team-ml`` and a team
    ``ml`` became one node, as did any two names equal once punctuation became ``_``."""
    root = copy_demo(tmp_path)
    _rename_department(root, "research", "end")
    _rename_department(root, "product", "subgraph")
    teams = root / "policies" / "teams"
    for name in ("ml", "team-ml"):
        (teams / f"{name}.yaml").write_text(
            f"apiVersion: gpupolicy.dev/v1alpha1\nkind: Team\nmetadata: {{name: {name}}}\n"
            f"spec:\n  owners: ['@acme/{name}']\n  department: end\n  isolation: shared\n  dataClasses: [public]\n"
            f"  namespaces: [{{name: {name}-train, clusters: [cloud]}}]\n"
            "  budgets: [{cluster: cloud, class: l4-ts4, guaranteed: 4, lend: 0}]\n")
    res = compile_dir(root)
    assert res.ok, [str(d) for d in res.diagnostics if d.severity == "error"]
    [tree] = [b for b in _mermaid_blocks(res.out_files["REPORT.md"].decode()) if b[0].startswith("graph")]
    assert tree[0] == "graph TD"
    assert all(_GRAPH_LINE.match(line) for line in tree[1:]), [x for x in tree[1:] if not _GRAPH_LINE.match(x)]
    labels = {line.split("[", 1)[0].strip().rstrip("("): line for line in tree[1:] if "-->" not in line}
    ml = [i for i, line in labels.items() if '"ml: ' in line]
    team_ml = [i for i, line in labels.items() if '"team-ml: ' in line]
    assert len(ml) == len(team_ml) == 1 and ml != team_ml
    end = next(i for i, line in labels.items() if '["end (weight' in line)
    assert f"  {end} --> {ml[0]}" in tree and f"  {end} --> {team_ml[0]}" in tree


def test_mermaid_labels_are_escaped() -> None:
    hostile = 'a"] --> b["x %%{init: {"securityLevel": "loose"}}%% ```\n#quot;'
    out = escape.mermaid(hostile)
    assert not set(out) & set('"[]`%\n') and "%%{" not in out
    assert "#35;quot;" in out  # a name spelling an entity code stays literal


def test_cohort_tree_at_1000_teams_stays_under_mermaids_limits(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "bench" / "generate.py"), "--teams", "1000", "--clusters", "20",
                    "--out", str(tmp_path / "org")], check=True, capture_output=True)
    policy, _ = policy_at(tmp_path / "org")
    assert policy is not None
    md = render_markdown(policy).decode()
    blocks = _mermaid_blocks(md)
    assert all(len("\n".join(b)) < mermaid.MAX_TEXT for b in blocks)
    [tree] = [b for b in blocks if b[0].startswith("graph")]
    assert sum("-->" in line for line in tree) < mermaid.MAX_EDGES
    assert "1,000 teams in 127 departments: collapsed to departments" in md
    assert not any(line.lstrip().startswith("t") for line in tree[1:])  # no team nodes
    # every team is counted once, at its department
    counts = [int(m) for m in re.findall(r" · (\d+) teams?(?:\"|,)", "\n".join(tree))]
    assert sum(counts) == 1000
    assert len([b for b in blocks if b[0] == "xychart-beta"]) == 20


def test_cohort_tree_folds_deep_levels_beyond_the_department_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.report import cohort_tree as ct

    policy, _ = policy_at(REPO)
    assert policy is not None
    monkeypatch.setattr(ct, "FULL_MAX", 3)
    monkeypatch.setattr(ct, "DEPARTMENTS_MAX", 1)
    lines = ct.cohort_tree(policy)
    assert "2 deeper departments folded into their ancestors" in lines[0]
    assert '  d0["ai · weight 1 · 5 teams below · + 2 sub-departments"]' in lines


@pytest.mark.parametrize("stored", [False, True])
def test_report_over_what_github_renders_is_a_located_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              stored: bool) -> None:
    """GITOPS404: GitHub renders a Markdown file only under ~2 MB (REPORT.md is 1.3 MB at 1,000 teams,
    6.1 MB at 5,000). The demo's report is far under it; with the limit at its size the run warns on
    the platform's owners in fleet.yaml with the report's exact size, with or without a store (where
    the rules' process renders a report part), and still writes it; one byte more and it does not."""
    import compiler.report.report_size as report_size
    from compiler.cache.store import CACHE_DIRNAME, Store
    from compiler.pipeline.options import Options
    from compiler.pipeline.run import compile_policies

    root = copy_demo(tmp_path)
    opts = Options(root=root, policy_dir=root / "policies", out_dir=root / "out", verify=False)

    def compiled() -> Any:  # an empty store each time: the limit is not among its keys
        shutil.rmtree(root / CACHE_DIRNAME, ignore_errors=True)
        return compile_policies(opts, Store(root)) if stored else compile_policies(opts)

    res = compiled()
    size = len(res.out_files["REPORT.md"])
    assert res.ok and "GITOPS404" not in [d.code for d in res.diagnostics] and size < report_size.GITHUB_RENDER_BYTES
    monkeypatch.setattr(report_size, "GITHUB_RENDER_BYTES", size)
    res = compiled()
    [d] = [d for d in res.diagnostics if d.code == "GITOPS404"]
    assert d.severity.value == "warning" and res.ok and len(res.out_files["REPORT.md"]) == size
    fleet = root / "policies" / "fleet.yaml"
    assert d.location is not None and d.location.file == "policies/fleet.yaml"
    assert d.location.line == next(i for i, ln in enumerate(fleet.read_text().splitlines(), 1) if "owners:" in ln)
    assert f"out/REPORT.md is {size:,} bytes for 5 teams, over the {size:,}" in d.message
    assert d.hint and "gpupolicy explain" in d.hint
    monkeypatch.setattr(report_size, "GITHUB_RENDER_BYTES", size + 1)
    assert "GITOPS404" not in [d.code for d in compiled().diagnostics]


@pytest.mark.parametrize("stored", [False, True])
def test_long_tables_go_to_files_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: bool) -> None:
    """A table of REPORT.md with more than ``ROWS_INLINE`` rows (a cluster's budget entries, the
    teams' priority tiers) is written to ``out/REPORT.<name>.md`` and linked where it would stand
    (GitHub renders Markdown only under ~2 MB: GITOPS404); a smaller one stays inline. With the
    line at 4 rows the demo's 5 teams' tiers and its larger cluster's entries move; through the
    store (the rules' process renders a report part) the files are the uncached run's, before and
    after a one-team edit; ``gpupolicy report``'s text keeps every table inline; CODEOWNERS shares
    them as it shares REPORT.md."""
    import compiler.report.report_tables as report_tables
    from compiler.cache.store import Store
    from compiler.pipeline.options import Options
    from compiler.pipeline.run import compile_policies

    monkeypatch.setattr(report_tables, "ROWS_INLINE", 4)
    root = copy_demo(tmp_path)
    opts = Options(root=root, policy_dir=root / "policies", out_dir=root / "out", verify=False)

    def compiled() -> Any:
        res = compile_policies(opts, Store(root)) if stored else compile_policies(opts)
        if stored:
            plain = compile_policies(opts)
            assert dict(res.out_digests) == dict(plain.out_digests)
            for rel in res.out_digests:
                if rel.startswith("REPORT"):
                    assert res.out_files[rel] == plain.out_files[rel], rel
        return res

    res = compiled()
    policy = compile_policies(opts).policy
    assert res.ok and policy is not None
    md = res.out_files["REPORT.md"].decode()
    counts = {c: len(policy.allocation.for_cluster(c)) for c in policy.clusters}
    assert min(counts.values()) <= 4 < max(counts.values()), counts  # one cluster of each kind
    tables = sorted(rel for rel in res.out_digests if rel.startswith("REPORT.") and rel != "REPORT.md")
    assert tables == sorted([*(f"REPORT.cluster.{c}.md" for c, n in counts.items() if n > 4), "REPORT.priorities.md"])
    for cluster, n in counts.items():
        link = f"{n:,} rows, in [REPORT.cluster.{cluster}.md](REPORT.cluster.{cluster}.md)."
        assert (link in md) == (n > 4), cluster
    big = max(counts, key=lambda c: counts[c])
    side = res.out_files[f"REPORT.cluster.{big}.md"].decode()
    assert side.startswith("<!-- generated by gpupolicy; do not edit -->\n# Cluster `" + big + "`: the teams' budgets\n")
    assert "Part of [REPORT.md](REPORT.md)" in side and side.count("\n| ") == counts[big] + 1  # the header, each row
    row = next(ln for ln in side.splitlines() if ln.startswith("| ") and "(team)" in ln)
    assert row not in md and row in render_markdown(policy).decode()  # `gpupolicy report`: every table inline
    tiers = res.out_files["REPORT.priorities.md"].decode()
    rows = [ln for ln in tiers.splitlines() if ln.startswith("| ") and not ln.startswith("| team |")]
    assert len(rows) == 5 and not any(ln in md for ln in rows)
    assert "5 rows, in [REPORT.priorities.md](REPORT.priorities.md)." in md
    assert "\n/out/REPORT*.md @acme/ml-interns @acme/ml-platform @acme/nlp " in res.repo_files[".github/CODEOWNERS"].decode()
    mutate_budget = root / "policies" / "teams" / "vision.yaml"
    mutate_budget.write_text(mutate_budget.read_text().replace("guaranteed: 8", "guaranteed: 4", 1))
    again = compiled()
    assert again.out_files["REPORT.md"] != res.out_files["REPORT.md"] or any(
        again.out_files[t] != res.out_files[t] for t in tables)


def test_report_size_names_the_largest_markdown_file() -> None:
    """GITOPS404 reads REPORT.md and its tables' files, not allocation.json or the node contracts."""
    from compiler.report.report_size import check_report_size

    policy, _ = policy_at(REPO)
    assert policy is not None
    sizes = {"REPORT.md": 10, "REPORT.cluster.onprem.md": 30, "allocation.json": 99, "reports/x-node-contract.json": 99}
    [d] = check_report_size(policy, sizes, limit=20)
    assert d.message.startswith("out/REPORT.cluster.onprem.md is 30 bytes for 5 teams")
    assert check_report_size(policy, {**sizes, "REPORT.cluster.onprem.md": 19}, limit=20) == []


def test_a_table_of_exactly_rows_inline_rows_stays_inline() -> None:
    """``report_tables.table``: up to ``ROWS_INLINE`` rows inline, one more to a file of its own;
    no file taken (``gpupolicy report``), inline whatever its length."""
    from compiler.report.report_tables import ROWS_INLINE, table

    head, rows = ["| a |", "|---|"], ["| 1 |\n| 2 |"]
    side: dict[str, Any] = {}
    assert table(side, "x", "X", head, rows, ROWS_INLINE) == [*head, *rows] and side == {}
    assert table(None, "x", "X", head, rows, ROWS_INLINE + 1) == [*head, *rows]
    assert table(side, "x", "X", head, rows, ROWS_INLINE + 1) == [f"{ROWS_INLINE + 1:,} rows, in [REPORT.x.md](REPORT.x.md)."]
    assert "".join(side["REPORT.x.md"]).endswith("| a |\n|---|\n| 1 |\n| 2 |\n")
