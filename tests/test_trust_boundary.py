"""Issue 18, inputs and outputs: a pull request can only change what its owners own.

Through the installed CLI: only regular files inside the policy directory are read (LOAD009),
booleans are not numbers, nesting is a located LOAD006, credentials are refused (LOAD010), every
path written is repository-relative, ``out/`` as a symbolic link is handled, every output format
escapes untrusted text, and CODEOWNERS gives no team a file derived from another team or the fleet.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli

from compiler import escape
from compiler.load.files import read_inputs
from compiler.load.secrets import find_secret
from compiler.tools.diff import DiffReport, Row, TeamDelta
from compiler.tools.diff_flags import Flag
from compiler.tools.diff_render import render_markdown

TEAMS = Path("policies") / "teams"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "out").rglob("*")) if p.is_file()}


def _built(root: Path) -> dict[str, bytes]:
    r = run_cli("build", cwd=root)
    assert r.returncode == 0, r.stderr
    return _tree(root)


def _line(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# -- 1, 3: only regular files inside the policy directory; never their content -----------------------

def test_symlink_to_etc_passwd_is_refused_naming_the_path_not_its_content(demo_repo: Path) -> None:
    before = _tree(demo_repo)  # a failed build leaves out/ as it was
    (demo_repo / TEAMS / "evil.yaml").symlink_to("/etc/passwd")
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1, r.stderr
    assert "policies/teams/evil.yaml: error[LOAD009]" in r.stderr and "symbolic link" in r.stderr
    assert "root:" not in r.stderr + r.stdout and "/bin/" not in r.stderr + r.stdout
    assert _tree(demo_repo) == before


@pytest.mark.parametrize("kind", ["dangling symlink", "fifo", "symlink to another team", "teams dir symlink",
                                  "hard link"])
def test_special_team_files_fail_the_build_and_keep_the_team(demo_repo: Path, kind: str, tmp_path: Path) -> None:
    before = _tree(demo_repo)
    vision = demo_repo / TEAMS / "vision.yaml"
    if kind == "dangling symlink":
        vision.unlink()
        vision.symlink_to(tmp_path / "gone.yaml")
    elif kind == "fifo":
        vision.unlink()
        os.mkfifo(vision)
    elif kind == "symlink to another team":
        (demo_repo / TEAMS / "vision2.yaml").symlink_to("vision.yaml")
    elif kind == "hard link":
        os.link(vision, demo_repo / TEAMS / "vision2.yaml")
    else:
        outside = tmp_path / "elsewhere"
        (demo_repo / TEAMS).rename(outside)
        (demo_repo / TEAMS).symlink_to(outside)
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1, (kind, r.stderr)  # never exit 0 with the team's files deleted
    assert re.search(r"policies/teams(/vision2?\.yaml)?: error\[LOAD009\]", r.stderr), r.stderr
    assert _tree(demo_repo) == before  # the team's Namespaces and queues are all still there


def test_unreadable_team_file_is_an_error_not_a_missing_team(demo_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def deny(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        if str(path).endswith("vision.yaml"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr("compiler.load.files.os.open", deny)
    blobs, diags = read_inputs(demo_repo / "policies", demo_repo)
    [d] = [d for d in diags if d.code == "LOAD009"]
    assert d.location is not None and d.location.file == "policies/teams/vision.yaml"
    assert "Permission denied" in d.message and d.severity.value == "error"
    assert ("policies/teams/vision.yaml", None, False) in blobs


# -- 5, 6: nesting is located; booleans are not numbers ---------------------------------------------

@pytest.mark.parametrize("nest", ["[" * 1000 + "]" * 1000, "{a: " * 1000 + "}" * 1000])
def test_deep_nesting_is_a_located_load_diagnostic(demo_repo: Path, nest: str) -> None:
    (demo_repo / TEAMS / "vision.yaml").write_text(f"apiVersion: gpupolicy.dev/v1alpha1\nkind: Team\nx: {nest}\n")
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 1, r.stderr
    assert re.search(r"policies/teams/vision\.yaml:3:\d+: error\[LOAD006\] file nests deeper than 64", r.stderr)
    assert "RecursionError" not in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_boolean_is_not_a_gpu_count(demo_repo: Path, value: str) -> None:
    path = demo_repo / TEAMS / "vision.yaml"
    path.write_text(path.read_text().replace("guaranteed: 8", f"guaranteed: {value}", 1))
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 1
    assert f"policies/teams/vision.yaml:{_line(path, 'guaranteed: ' + value)}:19: error[SCHEMA002] " \
           "spec.budgets[0].guaranteed" in r.stderr, r.stderr


# -- 2, 4, 5: written paths are repository-relative; out/ as a link; modes; staging ------------------

def test_absolute_root_leaks_no_absolute_path(demo_repo: Path) -> None:
    r = run_cli("build", "--root", str(demo_repo), cwd=demo_repo.parent)
    assert r.returncode == 0, r.stderr
    written = list((demo_repo / "out").rglob("*")) + [demo_repo / ".github" / "CODEOWNERS"]
    for p in written:
        if p.is_file():
            assert str(demo_repo.parent) not in p.read_text(errors="replace"), p
    assert "\n//" not in (demo_repo / ".github" / "CODEOWNERS").read_text()


def test_out_or_policies_outside_the_root_is_a_usage_error(demo_repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "out"
    r = run_cli("build", "--root", str(demo_repo), "--out", str(elsewhere), cwd=demo_repo)
    assert r.returncode == 2 and "outside the" in r.stderr and not elsewhere.exists()
    (demo_repo / "out").rename(tmp_path / "real-out")
    (demo_repo / "out").symlink_to(tmp_path / "real-out")  # out -> a directory outside the repository
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 2 and "outside the" in r.stderr and "Errno" not in r.stderr
    (demo_repo / "policies").rename(tmp_path / "real-policies")
    (demo_repo / "policies").symlink_to(tmp_path / "real-policies")  # policies -> outside
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 2 and "--policies" in r.stderr and "outside the" in r.stderr


def test_repository_files_are_never_written_through_a_link_outside(demo_repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(demo_repo / ".github")
    (demo_repo / ".github").symlink_to(elsewhere)  # .github -> a directory outside the repository
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 2 and "refusing to write .github/CODEOWNERS" in r.stderr, r.stderr
    assert list(elsewhere.iterdir()) == []


def test_out_as_a_symlink_inside_the_repository(demo_repo: Path) -> None:
    (demo_repo / "gen").mkdir()
    (demo_repo / "out").rename(demo_repo / "gen" / "out")
    (demo_repo / "out").symlink_to("gen/out")
    path = demo_repo / TEAMS / "vision.yaml"
    for n in (9, 10):  # two changed builds: the link stays, the tree behind it is swapped
        path.write_text(path.read_text().replace(f"guaranteed: {n - 1}", f"guaranteed: {n}", 1))
        r = run_cli("build", cwd=demo_repo)
        assert r.returncode == 0, r.stderr
        assert (demo_repo / "out").is_symlink()
    assert run_cli("check", cwd=demo_repo).returncode == 0
    assert not [p for p in (demo_repo / "gen").iterdir() if p.name != "out"]  # no staging or backup left


def test_symlink_inside_out_is_stale_and_removed(demo_repo: Path) -> None:
    _built(demo_repo)
    (demo_repo / "out" / "onprem" / "sneaky.yaml").symlink_to("/etc/passwd")
    r = run_cli("check", cwd=demo_repo)
    assert r.returncode == 1 and "extra    out/onprem/sneaky.yaml" in r.stderr, r.stderr
    assert run_cli("build", cwd=demo_repo).returncode == 0
    assert not os.path.lexists(demo_repo / "out" / "onprem" / "sneaky.yaml")


def test_written_files_have_normal_modes_and_stale_staging_is_removed(demo_repo: Path) -> None:
    dead = demo_repo / ".out.new-999999999-abcd"  # a killed build's staging tree (no such pid)
    (dead / "x").mkdir(parents=True)
    old = demo_repo / ".out.new-legacy"
    old.mkdir()
    os.utime(old, (1, 1))
    path = demo_repo / TEAMS / "vision.yaml"
    path.write_text(path.read_text().replace("guaranteed: 8", "guaranteed: 9", 1))
    old_mask = os.umask(0o022)
    try:
        assert run_cli("build", cwd=demo_repo).returncode == 0
    finally:
        os.umask(old_mask)
    assert not dead.exists() and not old.exists()
    assert stat.S_IMODE((demo_repo / "out").stat().st_mode) == 0o755
    assert stat.S_IMODE((demo_repo / ".github" / "CODEOWNERS").stat().st_mode) == 0o644
    assert {stat.S_IMODE(p.stat().st_mode) for p in (demo_repo / "out").rglob("*.yaml")} == {0o644}


# -- 7, 8: escaping in every format -------------------------------------------------------------------

HOSTILE = "x\n::add-mask::secret\r\x1b]0;pwned\x07\u202e"


def test_every_diagnostic_format_keeps_one_diagnostic_per_line(demo_repo: Path) -> None:
    (demo_repo / TEAMS / f"{HOSTILE}.yaml").write_text("apiVersion: gpupolicy.dev/v1alpha1\nkind: Team\n")
    for fmt in ("github", "text", "parsable", "json"):
        r = run_cli("validate", "--format", fmt, cwd=demo_repo)
        assert r.returncode == 1, (fmt, r.stderr)
        out = r.stdout + r.stderr
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, fmt
        lines = out.splitlines()
        assert not [ln for ln in lines if "add-mask" in ln and ln.startswith("::add-mask")], fmt
        if fmt == "github":
            assert all(re.match(r"::(error|warning|notice) ", ln) for ln in lines), lines
        if fmt == "json":
            files = {d["file"] for d in json.loads(r.stdout)}
            assert f"policies/teams/{HOSTILE}.yaml" in files  # JSON carries the exact name, escaped


def test_escape_functions_make_text_inert() -> None:
    assert "\n" not in escape.text(HOSTILE) and "\x1b" not in escape.text(HOSTILE)
    assert escape.gh_data("a\nb%") == "a%0Ab%25" and escape.gh_prop("a:b,c") == "a%3Ab%2Cc"
    span = escape.md_code("``` `x`|y")
    assert span.startswith("```` ") and span.endswith(" ````") and "\n" not in span
    assert escape.md_code("a|b", table=True) == "`a\\|b`"
    assert escape.md_fence("```\nx", "diff").startswith("````diff\n")
    assert "<" not in escape.md_text("<img src=x>") and "@acme" not in escape.md_text("@acme/team")
    assert escape.html('<b a="x">@t') == "&lt;b a=&quot;x&quot;&gt;&#64;t"
    assert '"' not in escape.mermaid('a"] --> b["x') and "]" not in escape.mermaid("a]")
    assert escape.codeowners_path("out/a*b?[c] d#e") == "out/a\\*b\\?\\[c\\]\\ d\\#e"


def _outside_code(md: str) -> str:
    """The markdown with fenced blocks and code spans removed: what GitHub renders as markup."""
    md = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", md)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", md)


def test_pr_comment_renders_policy_text_only_as_code() -> None:
    evil = "<img src=x onerror=alert(1)> @acme/platform [link](https://evil) ```\n# heading | cell"
    report = DiffReport(
        base=evil, base_note=evil,
        teams=[TeamDelta(team=evil, budgets=[(evil, evil, Row(1, 1, 1), Row(2, None, 1))],
                         attributes=[("isolation", evil, "shared")], serving=[(evil, "model", evil, "m")])],
        fleet=[(evil, evil, "x")], added=[evil], removed=[evil],
        modified=[(evil, f"+{evil}\n-```\n```")], flags=[Flag("immutable", evil, evil, evil)])
    md = render_markdown(report)
    bare = _outside_code(md)
    assert "<img" not in bare and "@acme/platform" not in bare and "](https://evil)" not in bare
    assert "<details><summary>modified <code>&lt;img" in md  # the path as text inside HTML, not HTML
    assert md.count("````diff") == 1  # the diff block's fence is longer than any fence inside it


def test_pr_comment_through_the_cli_keeps_hostile_group_names_in_code(demo_repo: Path) -> None:
    """A group name is free text that reaches RBAC objects, hence the diff of manifests."""
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "demo"]):
        subprocess.run(["git", *args], cwd=demo_repo, check=True, capture_output=True, env=env)
    path = demo_repo / TEAMS / "vision.yaml"
    hostile = "x```</details><img src=x onerror=alert(1)> @acme/ml-platform ````"
    path.write_text(path.read_text().replace("  groups: [", f"  groups: [{json.dumps(hostile)}, ", 1))
    r = run_cli("diff", "--base", "HEAD", "--format", "markdown", cwd=demo_repo)
    assert r.returncode == 0, r.stderr
    assert "acme:vision" in r.stdout or "x```" in r.stdout  # the change is shown
    bare = _outside_code(r.stdout)
    assert "<img" not in bare and "@acme/ml-platform" not in bare and "</details><img" not in bare


# -- 9: CODEOWNERS: exact paths, owner syntax, isolation ------------------------------------------------

def _codeowners(root: Path) -> list[tuple[re.Pattern[str], list[str]]]:
    return _rules((root / ".github" / "CODEOWNERS").read_text())


def _rules(text: str) -> list[tuple[re.Pattern[str], list[str]]]:
    """CODEOWNERS lines as (regex, owners): ``*`` one path segment's characters, escapes literal."""
    rules = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        pattern, *owners = re.split(r"(?<!\\) ", line)
        rx = ""
        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "\\":
                rx += re.escape(pattern[i + 1])
                i += 2
                continue
            rx += "[^/]*" if ch == "*" else re.escape(ch)
            i += 1
        rx = "^" + (rx[1:] if pattern.startswith("/") else "(.*/)?" + rx) + "(/.*)?$"
        rules.append((re.compile(rx), owners))
    return rules


def _owners_of(rules: list[tuple[re.Pattern[str], list[str]]], path: str) -> list[str]:
    found: list[str] = []
    for rx, owners in rules:
        if rx.match(path):
            found = owners  # the last matching line decides
    return found


def _assert_owners_isolated(root: Path) -> list[tuple[re.Pattern[str], list[str]]]:
    """Every out/ file's owners, as GitHub reads CODEOWNERS (the last matching line decides; ``*``
    within one folder): a team owns only files derived from it alone, a file of no team is the
    platform's, and the shared lines match only the spare Cohorts among the YAML files."""
    rules = _codeowners(root)
    platform = set(yaml.safe_load((root / "policies" / "fleet.yaml").read_text())["spec"]["platform"]["owners"])
    team_owners = {p.stem: set(yaml.safe_load(p.read_text())["spec"]["owners"]) for p in (root / TEAMS).glob("*.yaml")}
    lines = (root / ".github" / "CODEOWNERS").read_text().split("\n\n")
    [section] = [chunk for chunk in lines if chunk.startswith("# Shared generated files")]
    shared_rules = _rules("\n".join(section.splitlines()[1:]))  # any team owner may approve
    checked = 0
    for p in sorted((root / "out").rglob("*.yaml")):
        rel = p.relative_to(root).as_posix()
        with p.open() as f:
            header = f.readline()
        sources = set(re.findall(r"policies/teams/([a-z0-9-]+)\.yaml", header))
        owners = set(_owners_of(rules, rel))
        assert owners, rel
        shared = bool(_owners_of(shared_rules, rel))
        assert not shared or "/kueue/cohort._." in rel, rel  # a spare Cohort, shared by every guarantee
        for team, mine in team_owners.items():
            extra = mine - platform
            if extra & owners and not shared:
                assert sources == {team}, (rel, team, header)  # a team owns only what derives from it alone
        if not sources and not shared:
            assert owners <= platform, (rel, owners)
        checked += 1
    assert checked > 100
    return rules


@pytest.mark.parametrize("namespace", [
    "a100-80gb-mig-3g",  # named like a class and its cluster-wide objects
    "interns-sandbox",  # the interns' namespace on the other cluster (FLEET004 allows it)
    "gpupolicy-onprem-kueue",  # named like an ArgoCD Application (out/argocd/onprem/application.argocd.<it>.yaml)
    "nlp-vision",  # starting with another team's name: that team's line for every such name no longer holds
])
def test_no_team_owns_a_file_derived_from_another_team_or_the_fleet(demo_repo: Path, namespace: str) -> None:
    """No team owns another's files or the fleet's (``_assert_owners_isolated``), with a namespace
    named like a class or an ArgoCD Application, one another team uses on another cluster, or one
    starting with another team's name."""
    vision = demo_repo / TEAMS / "vision.yaml"
    text = vision.read_text()
    vision.write_text(text.replace("  namespaces:\n", f"  namespaces:\n    - {{name: {namespace}, clusters: [onprem]}}\n", 1))
    _built(demo_repo)
    rules = _assert_owners_isolated(demo_repo)
    owners_text = (demo_repo / ".github" / "CODEOWNERS").read_text()
    if namespace == "interns-sandbox":  # a name two teams use: a line per cluster, never one for all
        assert "/out/onprem/kueue/localqueue.interns-sandbox.*.yaml @acme/vision" in owners_text
        assert "/out/cloud/kueue/localqueue.interns-sandbox.*.yaml @acme/ml-interns" in owners_text
        assert "/out/*/kueue/localqueue.interns-sandbox." not in owners_text
    # one line for recsys-train and recsys's ClusterQueue, on both clusters, of every kind
    assert "/out/*/*/*.recsys*yaml @acme/recsys" in owners_text and "recsys-train" not in owners_text
    if namespace == "nlp-vision":  # vision's, on onprem: nlp keeps a line per namespace
        assert "/out/*/*/*.nlp-vision.*yaml @acme/vision" in owners_text and ".nlp*yaml" not in owners_text
        assert "/out/*/*/*.nlp-train.*yaml @acme/nlp" in owners_text
        assert "/out/*/kueue/clusterqueue._.nlp.yaml @acme/nlp" in owners_text
    elif namespace != "interns-sandbox":  # the name of fleet files (and other teams' objects): a line per kind
        assert f"/out/*/*/*.{namespace}." not in owners_text
        assert f"/out/*/kueue/localqueue.{namespace}.*.yaml @acme/vision" in owners_text
    dc = "out/onprem/dra/deviceclass._.a100-80gb-mig-3g.40gb.yaml"
    assert (demo_repo / dc).exists()
    assert set(_owners_of(rules, dc)) == {"@acme/ml-platform"}
    r = run_cli("build", "--no-cache", cwd=demo_repo)  # the whole inventory at once: the same file
    assert r.returncode == 0, r.stderr
    assert (demo_repo / ".github" / "CODEOWNERS").read_text() == owners_text


def test_codeowners_has_a_line_per_namespace_not_per_kind_or_cluster(tmp_path: Path) -> None:
    """A generated organisation (40 teams on 4 clusters, namespaces on several clusters each): each
    team's namespaces, named after it, and its ClusterQueue have one line for every cluster and kind
    (``/out/*/*/*.<team>*yaml``), so the file grows with teams, not namespaces, clusters or kinds
    (~0.22 KB per team, bench/README.md), and still gives no team another's file."""
    from bench.generate import generate

    generate(40, 4, tmp_path / "org")
    root = tmp_path / "org"
    _built(root)
    _assert_owners_isolated(root)
    text = (root / ".github" / "CODEOWNERS").read_text()
    team_lines = [ln for ln in text.split("\n# team ", 1)[1].splitlines() if ln.startswith("/out/")]
    namespaces = {p.name.split(".")[2]: re.findall(r"policies/teams/([a-z0-9-]+)\.yaml", p.read_text())[0]
                  for p in (root / "out").glob("*/namespaces/namespace._.*.yaml")}  # each team's, serving's too
    assert len(namespaces) > 60 and len(set(namespaces.values())) == 40
    assert all(ns.startswith(team) for ns, team in namespaces.items())
    expected = {f"/out/*/*/*.{team}*yaml" for team in set(namespaces.values())}
    assert {ln.split(" ")[0] for ln in team_lines} == expected
    assert len(team_lines) == len(expected)
    [cohorts] = [ln for ln in text.splitlines() if "/kueue/cohort._." in ln]  # the spare Cohorts: one line
    assert cohorts.startswith("/out/*/kueue/cohort._.")


def test_owner_syntax_is_validated_with_a_location(demo_repo: Path) -> None:
    path = demo_repo / TEAMS / "vision.yaml"
    path.write_text(path.read_text().replace('owners: ["@acme/vision"]', 'owners: ["#x@a.bc"]', 1))
    r = run_cli("validate", cwd=demo_repo)
    assert r.returncode == 1
    assert f"policies/teams/vision.yaml:{_line(path, '#x@a.bc')}:" in r.stderr and "SCHEMA002" in r.stderr
    assert "@user, @org/team or an e-mail address" in r.stderr


# -- 10: credentials ----------------------------------------------------------------------------------

TOKENS = [
    "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "github_pat_11AAAAAAA0" + "abcdefghijKLMNOPQRSTuvwxyz0123456789",
    "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "AKIA" + "IOSFODNN7EXAMPLE",
    "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKl",
    "glpat-" + "xxxxxxxxxxxxxxxxxxxx",
    "https://user:" + "hunter2@github.com/acme/gpu-platform.git",
    "-----BEGIN RSA PRIVATE KEY-----",
    "Zm9vYmFyYmF6cXV4" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODk",
]


@pytest.mark.parametrize("token", TOKENS, ids=[t[:6] for t in TOKENS])
def test_credentials_in_any_string_are_refused(demo_repo: Path, token: str) -> None:
    before = _tree(demo_repo)
    path = demo_repo / TEAMS / "vision.yaml"
    text = path.read_text()
    path.write_text(text.replace("  groups: [", f"  groups: [{json.dumps(token)}, ", 1))
    r = run_cli("build", cwd=demo_repo)
    assert r.returncode == 1, r.stderr
    assert re.search(rf"policies/teams/vision\.yaml:{_line(path, 'groups:')}:\d+: error\[LOAD010\]", r.stderr), r.stderr
    assert token not in r.stderr + r.stdout and token[6:] not in r.stderr  # never echoed
    assert "Secret" in r.stderr
    assert _tree(demo_repo) == before


def test_ordinary_values_are_not_credentials() -> None:
    for ok in ("ssh://git@github.com/acme/repo.git", "https://github.com/acme/gpu-platform.git",
               "meta-llama/Llama-3.1-8B-Instruct", "vllm/vllm-openai@sha256:" + "0123456789abcdef" * 4,
               "a100-80gb-mig-3g.40gb", "acme:vision", "nvidia.com/mig-3g.40gb"):
        assert find_secret(ok) is None, ok


def test_no_credentials_in_rendered_output() -> None:
    roots = [REPO / "out", *(REPO / "tests" / "golden").glob("*/expected")]
    scanned = 0
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file():
                for line in p.read_text(errors="replace").splitlines():
                    assert find_secret(line) is None, (p, line[:80])
                scanned += 1
    assert scanned > 100


def test_codeowners_over_githubs_limit_is_a_located_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GITOPS403: GitHub ignores a CODEOWNERS of 3 MB or more, and with it every team's required
    review. The demo's file is far under the limit; with the limit set below its size the build
    warns on the platform's owners in fleet.yaml, naming the size and the limit, and still writes
    the file (a warning: the rest of the output is right)."""
    import compiler.report.codeowners as codeowners
    from compiler.pipeline.options import Options
    from compiler.pipeline.run import compile_policies

    shutil.copytree(REPO / "policies", tmp_path / "policies")
    opts = Options(root=tmp_path, policy_dir=tmp_path / "policies", out_dir=tmp_path / "out", verify=False)
    res = compile_policies(opts)
    size = len(res.repo_files[".github/CODEOWNERS"])
    assert res.ok and "GITOPS403" not in [d.code for d in res.diagnostics] and size < codeowners.GITHUB_MAX_BYTES
    monkeypatch.setattr(codeowners, "GITHUB_MAX_BYTES", size)
    res = compile_policies(opts)
    [d] = [d for d in res.diagnostics if d.code == "GITOPS403"]
    assert d.severity.value == "warning" and res.ok
    assert d.location is not None and d.location.file == "policies/fleet.yaml"
    assert d.location.line == _line(tmp_path / "policies" / "fleet.yaml", "owners:")
    assert f"{size:,} bytes" in d.message and f"limit of {size:,}" in d.message and "5 teams" in d.message
    assert d.hint and "repository" in d.hint
    monkeypatch.setattr(codeowners, "GITHUB_MAX_BYTES", size + 1)
    assert "GITOPS403" not in [d.code for d in compile_policies(opts).diagnostics]
