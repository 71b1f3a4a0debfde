"""Bad policies: each mutation of the demo organisation yields the expected rule at the expected line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import compile_dir, copy_demo, find, line_of, mutate

from compiler.diagnostics import Location

# (case, file, old text, new text, rule, line needle (text on the expected line, after mutation))
CASES = [
    ("unknown key with hint", "teams/vision.yaml", "  isolation: isolated", "  isolaton: isolated",
     "SCHEMA001", "isolaton"),
    ("wrong type", "teams/vision.yaml", "guaranteed: 8", "guaranteed: eight", "SCHEMA002", "guaranteed: eight"),
    ("negative number", "teams/vision.yaml", "guaranteed: 8", "guaranteed: -8", "SCHEMA002", "guaranteed: -8"),
    ("absurd number", "teams/vision.yaml", "guaranteed: 8", "guaranteed: 99999999999", "SCHEMA002",
     "guaranteed: 99999999999"),
    ("guaranteed unlimited", "teams/vision.yaml", "guaranteed: 8", "guaranteed: unlimited", "SCHEMA002",
     "guaranteed: unlimited"),
    ("missing required", "teams/vision.yaml", "  department: research\n", "", "SCHEMA003", "spec:"),
    ("bad apiVersion", "teams/vision.yaml", "apiVersion: gpupolicy.dev/v1alpha1", "apiVersion: gpupolicy.dev/v9",
     "SCHEMA004", "apiVersion"),
    ("wrong kind", "teams/vision.yaml", "kind: Team", "kind: Fleet", "SCHEMA004", "kind: Fleet"),
    ("bad name", "teams/vision.yaml", "  - name: vision-train", "  - name: Vision_Train", "SCHEMA002",
     "Vision_Train"),
    ("path traversal name", "teams/vision.yaml", "  - name: vision-train", "  - name: ../../etc", "SCHEMA002",
     "../../etc"),
    ("team file name differs", "teams/vision.yaml", "  name: vision", "  name: vizion", "FLEET003",
     "name: vizion"),
    ("unknown department", "teams/vision.yaml", "department: research", "department: reserch", "FLEET002",
     "department: reserch"),
    ("unknown cluster", "teams/vision.yaml", "  - cluster: onprem\n      class: a100-80gb-mig-3g.40gb",
     "  - cluster: onprim\n      class: a100-80gb-mig-3g.40gb", "FLEET002", "cluster: onprim"),
    ("unknown class", "teams/vision.yaml", "class: a100-80gb-mig-3g.40gb", "class: a100-80gb-mig-3g.20gb",
     "FLEET002", "class: a100-80gb-mig-3g.20gb"),
    ("unknown priority", "teams/nlp.yaml", "priority: production", "priority: prod", "FLEET002", "priority: prod"),
    ("unknown data class", "teams/vision.yaml", "dataClasses: [public, internal]",
     "dataClasses: [public, secret]", "FLEET002", "dataClasses"),
    ("isolation contradicts cut", "teams/recsys.yaml", "isolation: isolated", "isolation: exclusive",
     "FLEET009", None),
    ("exclusive on time-sliced", "teams/interns.yaml", "isolation: shared", "isolation: exclusive", "FLEET009",
     "class: l4-ts4"),
    ("namespace claimed twice", "teams/search.yaml", "name: search-eval", "name: interns-sandbox", "FLEET004",
     "clusters: [cloud]"),
    ("system namespace", "teams/interns.yaml", "name: interns-sandbox", "name: kube-system", "FLEET004",
     "clusters: [cloud]"),
    ("add-on namespace", "teams/vision.yaml", "- name: vision-train", "- name: dra-driver-nvidia-gpu", "FLEET004",
     "clusters: [onprem]"),
    ("residency", "teams/nlp.yaml", "    - cluster: onprem\n      class: h100-80gb",
     "    - cluster: cloud\n      class: h100-80gb", "FLEET006", "cluster: cloud"),
    ("over capacity", "teams/nlp.yaml", "guaranteed: 32", "guaranteed: 60", "KUEUE001", "guaranteed: 60"),
    ("lend over guaranteed", "teams/vision.yaml", "lend: 4", "lend: 12", "KUEUE002", "lend: 12"),
    ("department cap", "teams/nlp.yaml", "guaranteed: 32", "guaranteed: 48", "KUEUE003",
     ("fleet.yaml", "max: 40", 1)),
    ("budget twice", "teams/recsys.yaml", "- cluster: cloud\n      class: h100-80gb",
     "- cluster: onprem\n      class: h100-80gb", "KUEUE005", None),
    ("serving on a training pool", "teams/nlp.yaml", "pool: h200-serve", "pool: h100-train", "SERVE001",
     "pool: h100-train"),
    ("unknown model", "fleet.yaml", "model: l4", "model: l5", "FLEET002", "model: l5"),
    ("dra below 1.34", "fleet.yaml", "      dra: false", "      dra: true", "DRA001",
     ("fleet.yaml", "dra: true", 2)),
    ("department cycle", "fleet.yaml", "    - name: ai\n      weight: 1",
     "    - name: ai\n      parent: research\n      weight: 1", "FLEET005", "parent: research"),
    ("duplicate pool", "fleet.yaml", "name: h100-burst", "name: l4-dev", "FLEET001",
     ("fleet.yaml", "name: l4-dev", 2)),
    ("two default priorities", "fleet.yaml", "value: 10\n", "value: 10\n      default: true\n", "FLEET007",
     None),
    ("mig profile of another model", "fleet.yaml", "layout: all-balanced", "layout: all-1g.5gb", "MIG", "layout"),
    ("mig cut without layout (fuzz regression)", "fleet.yaml", "            layout: all-balanced\n", "", "MIG010",
     ("fleet.yaml", "cut:", 1)),
    ("mig devices short of the node", "fleet.yaml", "layout: all-balanced",
     "devices: [{gpus: 4, profiles: {3g.40gb: 2}}]", "MIG010", ("fleet.yaml", "devices: [{gpus: 4", 1)),
    ("timeslicing replicas out of range", "fleet.yaml", "replicas: 4", "replicas: 1", "SCHEMA002",
     "replicas: 1"),
]


@pytest.mark.parametrize(("case", "rel", "old", "new", "rule", "needle"), CASES, ids=[c[0] for c in CASES])
def test_negative(tmp_path: Path, case: str, rel: str, old: str, new: str, rule: str,
                  needle: str | tuple[str, str, int] | None) -> None:
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    res = compile_dir(root)
    assert not res.ok, f"{case}: expected failure"
    if rule == "MIG":
        d = next(d for d in res.diagnostics if d.code.startswith("MIG"))
    else:
        d = find(res.diagnostics, rule)
    where, text, occurrence = needle if isinstance(needle, tuple) else (rel, needle, 1)
    assert d.location is not None
    assert d.location.file == f"policies/{where}", d
    assert d.location.line > 0 and d.location.col > 0
    if text is not None:
        assert d.location.line == line_of(root, where, text, occurrence), (d.location, d.message)
    assert d.message


# Faults in how a file is written, located to the column: (case, file, old text, new text, rule, text on
# the expected line, text at the expected column, what the message or hint must say)
LOCATED = [
    ("ESC in a quoted description", "teams/vision.yaml", "  name: vision\n",
     '  name: vision\n  description: "Vision \x1b[31mteam"\n', "LOAD001", "description:", "\x1b", "U+001B (ESC)"),
    ("ESC in a plain description", "teams/vision.yaml", "  name: vision\n",
     "  name: vision\n  description: Vision \x1b[31mteam\n", "LOAD001", "description:", "\x1b", "U+001B (ESC)"),
    ("NUL in a value", "teams/vision.yaml", "department: research", "department: re\x00search", "LOAD001",
     "department:", "\x00", "U+0000 (NUL)"),
    ("control character in a comment", "fleet.yaml", "apiVersion:", "# \x07\napiVersion:", "LOAD001", "# \x07",
     "\x07", "U+0007 (BEL)"),
    ("byte order mark inside", "teams/vision.yaml", "  name: vision", "  name: vis\ufeffion", "LOAD001",
     "name: vis", "\ufeff", "byte order mark"),
    ("YAML 1.1 directive", "teams/vision.yaml", "apiVersion:", "%YAML 1.1\n---\napiVersion:", "LOAD001", "%YAML",
     "%", "%YAML 1.1"),
    ("reused anchor", "teams/vision.yaml", "      borrow: 8\n      lend: 4",
     "      borrow: &n 8\n      lend: &n 4", "LOAD005", "lend: &n", "&n", "defined twice"),
    ("binary integer", "teams/vision.yaml", "guaranteed: 8", "guaranteed: 0b1000", "SCHEMA002",
     "guaranteed: 0b1000", "0b1000", "write 8"),
    ("underscore in an integer", "teams/vision.yaml", "guaranteed: 16", "guaranteed: 1_6", "SCHEMA002",
     "guaranteed: 1_6", "1_6", "write 16"),
    ("sexagesimal integer", "teams/vision.yaml", "guaranteed: 32", "guaranteed: 1:30", "SCHEMA002",
     "guaranteed: 1:30", "1:30", "write 90"),
    ("signed hex", "teams/vision.yaml", "lend: 4", "lend: +0x4", "SCHEMA002", "lend: +0x4", "+0x4", "write 4"),
    ("underscore in a float", "fleet.yaml", "      weight: 2", "      weight: 2_0.5", "SCHEMA002", "weight: 2_0.5",
     "2_0.5", "write 20.5"),
    ("leading zero", "teams/vision.yaml", "guaranteed: 8", "guaranteed: 010", "SCHEMA002", "guaranteed: 010",
     "010", "write 10 without the leading zero"),
]


@pytest.mark.parametrize(("case", "rel", "old", "new", "rule", "line_text", "col_text", "says"), LOCATED,
                         ids=[c[0] for c in LOCATED])
def test_written_faults_are_located_to_the_column(tmp_path: Path, case: str, rel: str, old: str, new: str, rule: str,
                                                  line_text: str, col_text: str, says: str) -> None:
    """A character YAML forbids is reported where it is (not at 1:1 as "position 205"), and a YAML
    1.1 number form is text (YAML 1.2, as the JSON Schema and editors read it), refused where a
    number is meant, with the number to write."""
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    res = compile_dir(root)
    assert not res.ok, f"{case}: expected failure"
    d = find(res.diagnostics, rule)
    line = line_of(root, rel, line_text)
    col = (root / "policies" / rel).read_text().split("\n")[line - 1].index(col_text) + 1
    assert d.location == Location(f"policies/{rel}", line, col), (d.location, d.message)
    # a budget amount is a number or 'unlimited': one finding per alternative, at one place
    there = [x for x in res.diagnostics if x.code == rule and x.location == d.location]
    assert any(says in x.message or says in (x.hint or "") for x in there), [(x.message, x.hint) for x in there]
    assert all(x.hint and "\n" not in x.message for x in there)


def test_all_problems_are_collected(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "isolation: isolated", "isolaton: isolated")
    mutate(root, "teams/nlp.yaml", "guaranteed: 32", "guaranteed: -1")
    res = compile_dir(root)
    files = {d.location.file for d in res.diagnostics if d.location}
    assert {"policies/teams/vision.yaml", "policies/teams/nlp.yaml"} <= files


def test_did_you_mean(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "  isolation: isolated", "  isolaton: isolated")
    d = find(compile_dir(root).diagnostics, "SCHEMA001")
    assert d.hint == "did you mean 'isolation'?"


@pytest.mark.parametrize("bad", ["Vision_Train", "v" * 64, "vision-", "vision-train\\n"])
def test_a_bad_label_says_what_a_label_is(tmp_path: Path, bad: str) -> None:
    """pydantic-core checks DNS labels itself (``DNS_LABEL_BOUNDED``: the length inside the
    pattern); the finding says what a label is, as the validator in Python did, with the value, the
    field's path and the schema hint, for a bad character, 64 characters, a trailing '-' and a
    trailing newline (a double-quoted YAML escape: ``$`` in the pattern is the end of the text)."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "  - name: vision-train", f'  - name: "{bad}"')
    d = find(compile_dir(root).diagnostics, "SCHEMA002")
    shown = repr(bad.replace("\\n", "\n"))
    assert d.message == (f"spec.namespaces[0].name: {shown} is not a DNS-1123 label (lower-case letters, digits "
                         f"and '-', starting and ending alphanumeric, at most 63 characters) (got {shown})"), d.message
    assert d.location is not None and d.location.line == line_of(root, "teams/vision.yaml", "- name: ")
    assert d.hint and "schemas/team.schema.json" in d.hint
    mutate(root, "teams/vision.yaml", f'  - name: "{bad}"', f'  - name: "{"v" * 63}"')  # 63: a label
    assert "SCHEMA002" not in [x.code for x in compile_dir(root).diagnostics]


def test_team_defined_twice(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    text = (root / "policies/teams/vision.yaml").read_text()
    (root / "policies/teams/vision2.yaml").write_text(text)
    res = compile_dir(root)
    msgs = [d.message for d in res.diagnostics if d.code == "FLEET003"]
    assert any("also defined in policies/teams/vision.yaml" in m for m in msgs), msgs


def test_lending_over_a_guarantee_is_located_in_its_own_file_when_the_name_is_reused(tmp_path: Path) -> None:
    """KUEUE002 (a team-scope check) reads the team's own budgets: with vision's file copied to
    vision2.yaml (FLEET003) and only the original lending more than it is guaranteed, the finding
    names the original's line, not the file the name resolves to last (the copy)."""
    root = copy_demo(tmp_path)
    vision = root / "policies/teams/vision.yaml"
    (root / "policies/teams/vision2.yaml").write_text(vision.read_text())
    vision.write_text(vision.read_text().replace("lend: 4", "lend: 12", 1))
    res = compile_dir(root)
    found = [d for d in res.diagnostics if d.code == "KUEUE002"]
    assert len(found) == 1 and found[0].location is not None, found
    assert found[0].location.file == "policies/teams/vision.yaml"
    assert found[0].location.line == line_of(root, "teams/vision.yaml", "lend: 12")


def test_over_capacity_message_has_numbers(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/nlp.yaml", "guaranteed: 32", "guaranteed: 60")
    d = find(compile_dir(root).diagnostics, "KUEUE001")
    assert "76" in d.message and "64" in d.message and "nlp 60" in d.message and "recsys 16" in d.message
    assert d.hint and "12" in d.hint
