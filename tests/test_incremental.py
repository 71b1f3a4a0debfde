"""The pipeline with the on-disk store (.gpupolicy-cache/) == the pipeline with an empty store: after
an edit of one team, of the fleet, after adding and removing a team, after deleting the cache,
on the demo and on every golden case; and the CLI around it."""

from __future__ import annotations

import marshal
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CRDS, REPO, run_cli
from helpers import copy_demo, mutate, policy_at

from compiler.cache.store import CACHE_DIRNAME, Store, content_digest
from compiler.cache.tree_state import scan_tree
from compiler.diagnostics import sort_diagnostics
from compiler.emit.tree import read_tree, write_tree
from compiler.pipeline.options import Options
from compiler.pipeline.run import Result, compile_policies

GOLDEN = REPO / "tests" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "policies").is_dir())


def _opts(root: Path, verify: bool = True) -> Options:
    return Options(root=root, policy_dir=root / "policies", out_dir=root / "out",
                   crds=CRDS if verify else None, strict=False, verify=verify)


def _same(inc: Result, full: Result) -> None:
    assert [str(d) for d in sort_diagnostics(inc.diagnostics)] == [str(d) for d in sort_diagnostics(full.diagnostics)]
    assert inc.failed == full.failed
    assert inc.out_digests == full.out_digests
    assert inc.repo_files == full.repo_files
    assert (inc.n_objects, inc.verify_stats) == (full.n_objects, full.verify_stats)
    for rel in inc.out_digests:  # the bytes behind the digests, from the cache's blobs
        assert content_digest(inc.out_files[rel]) == inc.out_digests[rel], rel
    for rel in full.out_digests:  # and from the empty store's, held compressed (Run.keep)
        assert content_digest(full.out_files[rel]) == full.out_digests[rel], rel


def _check(root: Path, expect: str, verify: bool = True) -> Result:
    inc = compile_policies(_opts(root, verify), Store(root))
    _same(inc, compile_policies(_opts(root, verify)))
    assert inc.cached == expect, inc.cached
    return inc


def _rendered_again(root: Path, seen: list[Any]) -> tuple[Result, list[Any]]:
    """A run through the store with ``seen`` (a test's record of what is rendered) emptied first:
    its result, checked against an empty store's, and what it recorded."""
    seen.clear()
    inc = compile_policies(_opts(root), Store(root))
    found = list(seen)
    _same(inc, compile_policies(_opts(root)))
    return inc, found


@pytest.fixture
def demo(tmp_path: Path, crds_dir: Path) -> Path:
    return copy_demo(tmp_path)


def test_demo_edits(demo: Path) -> None:
    _check(demo, "none")  # cold
    _check(demo, "result")  # nothing changed: no compilation at all
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")  # one team
    _check(demo, "partial")
    mutate(demo, "teams/search.yaml", "tpotP95Ms: 40", "tpotP95Ms: 45")  # one team's serving
    _check(demo, "partial")
    mutate(demo, "fleet.yaml", "nodes: 8", "nodes: 9")  # the fleet: every unit is recompiled
    _check(demo, "none")
    shutil.copy(demo / "policies/teams/interns.yaml", demo / "policies/teams/juniors.yaml")  # a new team
    mutate(demo, "teams/juniors.yaml", "name: interns", "name: juniors")
    mutate(demo, "teams/juniors.yaml", "interns-sandbox", "juniors-sandbox")
    _check(demo, "partial")
    (demo / "policies/teams/recsys.yaml").unlink()  # a team leaves
    _check(demo, "partial")
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 8")
    _check(demo, "partial")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")  # a revert: the old result
    _check(demo, "result")
    shutil.rmtree(demo / CACHE_DIRNAME)  # safe to delete
    _check(demo, "none")


def test_edits_that_change_whole_output_passes(demo: Path) -> None:
    """Edits whose effect reaches ArgoCD objects, CODEOWNERS and GITOPS checks through the
    merged inventories: a cluster's only serving deployment leaves (its serving Application,
    the scaler's ignoreDifferences and AppProject kinds go), then comes back."""
    _check(demo, "none")
    nlp = demo / "policies/teams/nlp.yaml"
    text = nlp.read_text()
    nlp.write_text(text[:text.index("  serving:\n")])
    inc = _check(demo, "partial")
    assert not any(rel.startswith("onprem/serving/deployment.") for rel in inc.out_digests)
    nlp.write_text(text)
    _check(demo, "result")
    mutate(demo, "teams/nlp.yaml", "servingNamespace: nlp-serving", "servingNamespace: nlp-inference")
    _check(demo, "partial")


def test_policy_errors_and_no_verify(demo: Path) -> None:
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 800")  # KUEUE001
    inc = _check(demo, "none")
    assert inc.failed and any(d.code == "KUEUE001" for d in inc.diagnostics)
    mutate(demo, "teams/vision.yaml", "guaranteed: 800", "guaranteed: 8")
    _check(demo, "none", verify=False)  # units are keyed by the options too
    _check(demo, "result", verify=False)


@pytest.mark.parametrize("block", [64, 5])
def test_cached_files_are_located_lazily(demo: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A diagnostic in a file loaded from the cache is located from its stored (or, once pruned,
    re-parsed) position table, at the same line as a full compile. With blocks of 5 files on
    average the demo's parses are two blocks, [fleet, interns, nlp] and [recsys, search, vision]:
    after nlp's edit the second is read whole (kind ``parses``)."""
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 800")  # KUEUE001 in vision.yaml
    _check(demo, "none")
    read: list[str] = []
    real = Store.get

    def get(self: Store, kind: str, key: str) -> Any:
        found = real(self, kind, key)
        if found is not None:
            read.append(kind)
        return found

    monkeypatch.setattr(Store, "get", get)
    nlp = demo / "policies/teams/nlp.yaml"
    nlp.write_text(nlp.read_text() + "# edited\n")  # another team's edit: vision.yaml from the cache
    inc = _check(demo, "partial")
    assert read.count("parses") == (1 if block == 5 else 0) and read.count("load") == (2 if block == 5 else 5)
    d = next(d for d in inc.diagnostics if d.code == "KUEUE001")
    assert d.location is not None and d.location.file.endswith("vision.yaml") and d.location.line > 1
    shutil.rmtree(demo / CACHE_DIRNAME / "pos")
    nlp.write_text(nlp.read_text() + "# edited again\n")
    _check(demo, "partial")


@pytest.mark.parametrize("case", CASES)
def test_golden_cases(case: str, tmp_path: Path, crds_dir: Path) -> None:
    root = tmp_path / case
    shutil.copytree(GOLDEN / case / "policies", root / "policies")
    _check(root, "none")
    teams = sorted((root / "policies" / "teams").glob("*.yaml"))
    if len(teams) > 1:  # other teams' units come from the cache: global passes see cached objects
        with teams[0].open("a") as fh:
            fh.write("# edited\n")
        _check(root, "partial")


def test_write_tree_links_unchanged_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a/x.yaml": b"1\n", "a/y.yaml": b"2\n"})
    before = (out / "a/x.yaml").stat().st_ino
    current = scan_tree(out, None)[0]
    new = {"a/x.yaml": b"1\n", "a/y.yaml": b"3\n", "z.yaml": b"4\n"}
    assert write_tree(out, new, digests={k: content_digest(v) for k, v in new.items()}, current=current)
    assert read_tree(out) == new
    assert (out / "a/x.yaml").stat().st_ino == before  # hard-linked from the old tree, not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_scan_tree_rereads_changed_and_racy_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a.yaml": b"1\n", "b.yaml": b"2\n"})
    digests, state = scan_tree(out, None)
    (out / "a.yaml").write_bytes(b"9\n")  # same size, written within the racy window
    again, _ = scan_tree(out, state)
    assert again["a.yaml"] == content_digest(b"9\n") and again["b.yaml"] == digests["b.yaml"]


def test_cli_check_and_build_use_the_cache(tmp_path: Path, crds_dir: Path) -> None:
    root = copy_demo(tmp_path)
    assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
    assert (root / CACHE_DIRNAME / ".gitignore").is_file() and not (root / "out" / CACHE_DIRNAME).exists()
    assert run_cli("check", "--root", str(root), cwd=root).returncode == 0
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    res = run_cli("check", "--root", str(root), cwd=root)
    assert res.returncode == 1 and "clusterqueue._.vision.yaml" in res.stderr
    (root / "out" / "REPORT.md").write_text("tampered\n")
    shutil.rmtree(root / CACHE_DIRNAME / "blob")  # rendered bytes gone (pruned by another run)
    assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
    assert run_cli("check", "--root", str(root), "--no-cache", cwd=root).returncode == 0
    cached = read_tree(root / "out")
    shutil.rmtree(root / CACHE_DIRNAME)
    shutil.rmtree(root / "out")
    assert run_cli("build", "--root", str(root), "--no-cache", cwd=root).returncode == 0
    assert read_tree(root / "out") == cached
    assert not (root / CACHE_DIRNAME).exists()


def test_repository_files_kept_by_digest(tmp_path: Path, crds_dir: Path) -> None:
    """CODEOWNERS and schemas/ are kept in the store by digest, out of the run's record: check
    compares them by digest (a hand edit of CODEOWNERS is stale), and a build answered from the
    record whose bytes are gone from the store renders again and writes the same file."""
    root = copy_demo(tmp_path)
    assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
    owners = (root / ".github" / "CODEOWNERS").read_bytes()
    assert len(list((root / CACHE_DIRNAME / "repo").iterdir())) == 3  # CODEOWNERS and two schemas
    (root / ".github" / "CODEOWNERS").write_bytes(owners + b"* @someone-else\n")
    res = run_cli("check", "--root", str(root), cwd=root)
    assert res.returncode == 1 and ".github/CODEOWNERS" in res.stderr, res.stderr
    shutil.rmtree(root / CACHE_DIRNAME / "repo")  # pruned by another run meanwhile
    assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
    assert (root / ".github" / "CODEOWNERS").read_bytes() == owners
    assert run_cli("check", "--root", str(root), cwd=root).returncode == 0


def _stale_lines(root: Path, *extra: str) -> tuple[int, list[str], str]:
    res = run_cli("check", "--root", str(root), *extra, cwd=root)
    return res.returncode, sorted(line for line in res.stderr.splitlines() if line.startswith("stale:")), res.stderr


def test_check_compares_only_what_changed_since_the_build(tmp_path: Path, crds_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``check`` on a tree a build wrote, unchanged since, compares only the units that differ
    between that build's run and this one (``out_tree._since``): it finds exactly what comparing
    every file finds (``--no-cache``), for changed, removed and added teams, a hand-edited tree
    (every file compared) and a store that lost the build's record."""
    root = copy_demo(tmp_path)
    assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
    n = sum(1 for p in (root / "out").rglob("*") if p.is_file())
    code, lines, err = _stale_lines(root)
    assert code == 0 and not lines and f"out/ is up to date ({n} files)" in err, err
    teams = root / "policies" / "teams"
    vision = (teams / "vision.yaml").read_text()
    vision2 = vision.replace("vision", "vision2").split("  budgets:")[0]  # no budget: no capacity taken
    cases = [
        lambda: mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4"),  # changed files
        lambda: mutate(root, "teams/vision.yaml", "vision-train", "vision-training"),  # extra and missing
        lambda: (teams / "vision2.yaml").write_text(vision2),  # a new team: its files missing
        lambda: (root / "out" / "REPORT.md").write_text("hand edit\n"),  # the tree itself changed
        lambda: shutil.rmtree(root / CACHE_DIRNAME / "result"),  # the build's record gone
    ]
    # in this process, to see which comparison ran: the changed units' alone
    import compiler.cli.out_tree as out_tree
    from compiler.cli.main import main

    seen: list[object] = []
    real = out_tree._since
    monkeypatch.setattr(out_tree, "_since", lambda *a: seen.append(real(*a)) or seen[-1])
    monkeypatch.setenv("GPUPOLICY_CRDS", str(crds_dir))
    assert main(["build", "--root", str(root)]) == 0  # this process's fingerprint (its sys.path)
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert main(["check", "--root", str(root)]) == 1
    assert len(seen) == 1 and seen[0] is not None and 0 < len(seen[0][0]) < 10, seen  # type: ignore[index, arg-type]
    (teams / "vision.yaml").write_text(vision)
    monkeypatch.undo()
    for i, change in enumerate(cases):
        (teams / "vision.yaml").write_text(vision)
        (teams / "vision2.yaml").unlink(missing_ok=True)
        assert run_cli("build", "--root", str(root), cwd=root).returncode == 0
        if i == 4:
            mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
        change()
        cached, uncached = _stale_lines(root), _stale_lines(root, "--no-cache")
        assert cached[:2] == uncached[:2] and cached[0] == 1 and cached[1], (i, cached, uncached)


def test_check_without_the_build_s_record_reads_no_file_of_an_unchanged_tree(
        tmp_path: Path, crds_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When ``check`` cannot compare with the build that wrote an unchanged tree (its record gone,
    or a new compiler sharing no unit with it), every file is compared by digest, and the digests
    come from the state the build recorded: a stat per file, no file of ``out/`` read."""
    import compiler.cache.tree_state as tree_state
    import compiler.cli.out_tree as out_tree
    from compiler.cli.main import main

    root = copy_demo(tmp_path)
    monkeypatch.setenv("GPUPOLICY_CRDS", str(crds_dir))
    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the scan in this process, to see what it reads
    assert main(["build", "--root", str(root)]) == 0
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    read: list[str] = []
    real_open = open

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(out_tree, "_since", lambda *a: None)  # the build's run cannot be compared
    monkeypatch.setattr(tree_state, "open", counted, raising=False)
    assert main(["check", "--root", str(root)]) == 1
    assert not [p for p in read if "/out/" in p], read[:5]


def test_store_survives_corrupt_entries(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put("unit", "k", {"a": [1, (2, 3)]}, compress=True)
    assert Store(tmp_path).get("unit", "k") == {"a": [1, (2, 3)]}
    (tmp_path / CACHE_DIRNAME / "unit" / "k").write_bytes(b"xgarbage")
    assert Store(tmp_path).get("unit", "k") is None


def test_inventories_merge_to_the_whole() -> None:
    """A unit's stored inventory, merged with the others', says what the whole output's does."""
    from compiler.load.source import load_policy_dir
    from compiler.lower import lower_all
    from compiler.model.inventory import Inventory
    from compiler.validate import build_policy

    sources, _ = load_policy_dir(REPO / "policies", REPO)
    policy, _ = build_policy(sources)
    assert policy is not None
    manifests, whole = lower_all(policy)
    parts: dict[tuple[str, ...], list[Any]] = {}
    for m in manifests:
        parts.setdefault(m.sources, []).append(m)
    merged = Inventory()
    for ms in parts.values():
        inv = Inventory.of(ms)
        rows = marshal.loads(marshal.dumps(inv.files))
        merged.merge(Inventory.from_record(marshal.loads(marshal.dumps(inv.to_record())), lambda rows=rows: rows))
    assert merged.count == whole.count == len(manifests)
    assert merged.folders == whole.folders and merged.admission_checks == whole.admission_checks
    assert sorted(merged.files) == sorted(whole.files) and len(merged.files) == len(manifests) - sum(
        m.cluster == "argocd" for m in manifests)
    assert any(f.scaled for f in whole.folders.values()) and any(f.deployments for f in whole.folders.values())


def test_scan_tree_notices_every_kind_of_change(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a/x.yaml": b"1\n", "a/y.yaml": b"2\n", "b/z.yaml": b"3\n"})
    digests, state = scan_tree(out, None)
    assert state is not None
    state["at"] = time.time_ns() + 10**9  # as if recorded long after the writes: every file trusted
    assert scan_tree(out, state) == (digests, None)  # nothing read, nothing gone
    (out / "b/z.yaml").unlink()
    gone, new_state = scan_tree(out, state)
    assert "b/z.yaml" not in gone and new_state is not None
    (out / "a/w.yaml").write_bytes(b"4\n")
    assert scan_tree(out, state)[0]["a/w.yaml"] == content_digest(b"4\n")


# -- issue 21: the commands that stop after validate, and diff, through the store ----------------


def test_explain_reads_the_rules_verdict_a_check_left(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``explain``/``report``/``nodes`` (``validated_policy``) take the semantic rules' findings
    from the store when a run over the same inputs computed them, and give what an empty store
    gives; a changed input is a new key, so they are computed again."""
    import compiler.validate as validate
    from compiler.pipeline.run import validated_policy

    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    compile_policies(_opts(demo), Store(demo))  # check: its child keeps the findings
    full_policy, full = validated_policy(_opts(demo))
    real = validate.run_checks
    monkeypatch.setattr(validate, "run_checks", lambda policy, verdicts=None: pytest.fail("the rules ran again"))
    policy, diags = validated_policy(_opts(demo), Store(demo))
    assert [str(d) for d in diags] == [str(d) for d in full]
    assert policy is not None and full_policy is not None
    assert policy.allocation.entries == full_policy.allocation.entries
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 5")
    calls: list[int] = []
    monkeypatch.setattr(validate, "run_checks", lambda policy, verdicts=None: calls.append(1) or real(policy, verdicts))
    _, diags = validated_policy(_opts(demo), Store(demo))
    assert calls == [1]
    monkeypatch.setattr(validate, "run_checks", real)
    assert [str(d) for d in diags] == [str(d) for d in validated_policy(_opts(demo))[1]]


def test_cli_explain_cached_equals_uncached(demo: Path) -> None:
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    for args in (("explain", "vision"), ("explain", "vision", "--job", "a100-80gb-mig-3g.40gb=2"), ("report",)):
        ref = run_cli(*args, "--no-cache", cwd=demo)
        assert ref.returncode == 0, ref.stderr
        for _ in range(2):  # cold, then from the store
            got = run_cli(*args, cwd=demo)
            assert (got.returncode, got.stdout, got.stderr) == (ref.returncode, ref.stdout, ref.stderr)


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}


def _git(root: Path, *args: str) -> None:
    import os
    import subprocess

    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def _reference_diff(opts: Options, ref: str) -> Any:
    """``diff`` as it was before the store: both sides compiled in full, every object real."""
    import tempfile
    from dataclasses import replace

    from compiler.tools.diff import Side, build_report, compile_side, side_options
    from compiler.tools.diff_base import extract_base

    head = compile_side(replace(opts, cache=False))
    assert head.ok
    with tempfile.TemporaryDirectory() as tmp:
        root, policy_dir, existed = extract_base(opts.root, opts.policy_dir, ref, Path(tmp))
        base = compile_side(side_options(opts, root, policy_dir)) if existed else Side(False)
        note = None if base.ok else "no base"
        return build_report(ref, base, head, note, "out/")


def _diff_cases(demo: Path) -> list[str]:
    """Commits for a diff to compare: a raised budget and a team retired (its namespaces and
    queues removed); the work tree then changes the budget again."""
    _git(demo, "init", "-q", "-b", "main")
    _git(demo, "add", "-A")
    _git(demo, "commit", "-qm", "demo")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 12")
    (demo / "policies" / "teams" / "interns.yaml").unlink()
    _git(demo, "commit", "-qam", "raise vision, retire interns")
    mutate(demo, "teams/vision.yaml", "guaranteed: 12", "guaranteed: 10")
    return ["HEAD", "HEAD~1"]


def test_diff_from_the_store_equals_the_full_diff(demo: Path) -> None:
    """``diff --base`` takes the units both sides share from the store (their outlines for the
    flags, their digests for the files) and lowers the rest: the report equals the one built
    from every object compiled, with a cold store, a warm one, after ``check`` filled it, after
    outlines went missing, and with ``--no-cache``."""
    from dataclasses import asdict, replace

    from compiler.tools.diff import run_diff

    refs = _diff_cases(demo)
    opts = _opts(demo)
    expected = {ref: asdict(_reference_diff(opts, ref)) for ref in refs}
    assert expected["HEAD~1"]["teams"] and expected["HEAD~1"]["removed"] and expected["HEAD"]["modified"]

    def same() -> None:
        for ref in refs:
            report, diags = run_diff(opts, ref)
            assert report is not None and not any(d.severity.value == "error" for d in diags)
            assert asdict(report) == expected[ref], ref

    same()  # cold
    assert any((demo / CACHE_DIRNAME / "outline").iterdir())
    same()  # warm
    shutil.rmtree(demo / CACHE_DIRNAME)
    compile_policies(opts, Store(demo))  # check fills the store: its units carry outlines
    same()
    for entry in (demo / CACHE_DIRNAME / "outline").iterdir():  # a unit without its outline is lowered
        entry.unlink()
    same()
    shutil.rmtree(demo / CACHE_DIRNAME / "outline")
    for ref in refs:
        report, _ = run_diff(replace(opts, cache=False), ref)
        assert report is not None and asdict(report) == expected[ref]
    assert not (demo / CACHE_DIRNAME / "outline").exists()  # --no-cache kept nothing


def test_diff_outlines_stand_for_shared_units_in_the_flags() -> None:
    """An outline keeps what the flags read of an object that did not change (its identity and
    the objects it names), so the flags over outlines equal those over the objects."""
    from compiler.cache.records import OUTLINED_KINDS, outline_in, outline_out
    from compiler.tools.diff_flags import find_flags, references

    opts = _opts(REPO, verify=False)
    res = compile_policies(opts)
    assert res.manifests
    for m in res.manifests:
        o = outline_out(m)
        if m.kind not in OUTLINED_KINDS:
            assert o is None
            continue
        assert o is not None
        path, back = outline_in(marshal.loads(marshal.dumps(o)))
        assert path == m.relpath and back.relpath == m.relpath
        assert list(references(back)) == list(references(m))
    # removing every ClusterQueue flags the LocalQueues that named them, outlines or not
    head = {m.relpath: m for m in res.manifests if m.kind != "ClusterQueue"}
    base_real = {m.relpath: m for m in res.manifests}
    base_outlined = {p: (outline_in(o)[1] if (o := outline_out(m)) is not None and m.kind != "ClusterQueue" else m)
                     for p, m in base_real.items()}
    head_outlined = {p: base_outlined[p] for p in head}
    assert find_flags(base_real, head) == find_flags(base_outlined, head_outlined)
    assert any(f.kind == "in-use" for f in find_flags(base_real, head))


def _codeowners_cases(tmp_path: Path) -> list[Path]:
    """The demo, a generated organisation and the golden cases, copied (a store is written)."""
    from bench.generate import generate

    generate(40, 4, tmp_path / "org")
    roots = [copy_demo(tmp_path), tmp_path / "org"]
    named = copy_demo(tmp_path / "named")  # namespaces named like a class and like an ArgoCD Application
    vision = named / "policies" / "teams" / "vision.yaml"
    vision.write_text(vision.read_text().replace("  namespaces:\n", "  namespaces:\n    - {name: a100-80gb-mig-3g, "
                                                 "clusters: [onprem]}\n    - {name: gpupolicy-onprem-kueue, clusters: [onprem]}\n", 1))
    roots.append(named)
    for case in CASES:
        shutil.copytree(GOLDEN / case / "policies", tmp_path / case / "policies")
        roots.append(tmp_path / case)
    return roots


def test_codeowners_from_unit_parts_equals_the_whole_inventory(tmp_path: Path, crds_dir: Path) -> None:
    """CODEOWNERS merged from the parts stored with each team unit (each computed from its
    team's files alone) == CODEOWNERS over the merged inventory with every team known; and a
    team unit's objects derive from the fleet and that team's file only (what makes its part a
    function of the unit's key)."""
    from compiler.load.paths import display_path
    from compiler.lower import lower_team
    from compiler.model.inventory import Inventory
    from compiler.report.codeowners import delivery_rows, merged_outputs, owned_part, render_codeowners, team_outputs

    for root in _codeowners_cases(tmp_path):
        opts = _opts(root, verify=False)
        res = compile_policies(opts, Store(root))  # a cold store: every unit's part computed, merged
        policy = res.policy
        assert policy is not None and not res.failed, root
        whole = render_codeowners(policy, Inventory.of(res.manifests), display_path(opts.policy_dir, root),
                                  display_path(opts.out_dir, root), delivery_rows(res.manifests))
        assert res.repo_files[".github/CODEOWNERS"] == whole, root
        for team in policy.teams:
            for c in sorted(policy.clusters):
                for m in lower_team(policy, team, c):
                    assert set(m.sources) <= {policy.fleet_src.path, team.path}, (root, m.relpath, m.sources)
        # any split of the files into parts merges to the same patterns
        inv = Inventory.of(res.manifests)
        team_of = {t.path: t.name for t in policy.teams}
        chunks = [inv.files[i::3] for i in range(3)]
        parts = [marshal.loads(marshal.dumps(owned_part(ch, team_of))) for ch in chunks]
        assert merged_outputs(parts, "out") == team_outputs(policy, inv, "out"), root
        assert any(team_outputs(policy, inv, "out").values()), root


def test_one_team_edit_recomputes_one_codeowners_part(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a one-team edit only that team's unit computes its CODEOWNERS part (the fleet-scope
    files' part is computed on every run); the file equals the uncached one (``_check``)."""
    import compiler.pipeline.owners as owners
    import compiler.pipeline.stages as stages

    _check(demo, "none")
    calls: list[int] = []
    real = stages.owned_part
    for module in (stages, owners):
        monkeypatch.setattr(module, "owned_part",
                            lambda files, team_of: calls.append(len(team_of)) or real(files, team_of))
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    assert inc.cached == "partial"
    n_teams = len(list((demo / "policies/teams").glob("*.yaml")))
    assert calls == [1, n_teams], calls  # vision's unit (computed before the others are read), then the fleet's
    monkeypatch.undo()
    _same(inc, compile_policies(_opts(demo)))


def test_codeowners_parts_missing_from_the_store_are_computed(demo: Path) -> None:
    """The CODEOWNERS child reads the units' parts from the store; a part gone from it (pruned,
    deleted, corrupt) is computed from the team's objects: the file is the uncached one."""
    _check(demo, "none")
    entries = demo / CACHE_DIRNAME / "owners"
    names = sorted(os.listdir(entries))
    assert len(names) == len(list((demo / "policies/teams").glob("*.yaml")))
    for name in names[::2]:
        (entries / name).unlink()
    (entries / names[1]).write_bytes(b"garbage")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    assert inc.cached == "partial"
    _same(inc, compile_policies(_opts(demo)))


def test_ops_model_from_parts_gives_the_findings_of_the_whole_inventory(tmp_path: Path, crds_dir: Path) -> None:
    """OPS findings from the file facts of consecutive runs of files (any cut, merged in any
    grouping) == those read from every inventory row, and the parts are not changed by merging;
    an OPS004 finding names its namespace's creators in file order either way. Cut as the
    pipeline cuts (the fleet's files, then each team unit's), the facts prove every object in
    time without reading a row (issue 21: a one-team edit reads no stored unit's rows for OPS004)."""
    from compiler.lower import lower_team_unit
    from compiler.model.inventory import Inventory
    from compiler.verify.ops import check_runtime
    from compiler.verify.runtime import file_facts, fleet_runtime, merge_facts

    for root in _codeowners_cases(tmp_path):
        res = compile_policies(_opts(root, verify=False))
        policy = res.policy
        assert policy is not None, root
        whole = Inventory.of(res.manifests)
        first = sorted(policy.clusters)[0]  # without its Namespace files: OPS004 on that cluster
        cut = Inventory(whole.count, whole.folders, whole.admission_checks, whole.queue_checks,
                        [r for r in whole.files if not (r[1] == first and "/namespace._." in r[0])])
        for inv in (whole, cut):
            rows = inv.files
            cuts = sorted({0, len(rows), *range(0, len(rows), max(1, len(rows) // 7))})
            parts = [marshal.loads(marshal.dumps(file_facts(rows[a:b]))) for a, b in zip(cuts, cuts[1:])]
            before = marshal.loads(marshal.dumps(parts))  # a copy
            merged = merge_facts(parts)
            assert merged == merge_facts([merge_facts(parts[:3]), merge_facts(parts[3:])]), root
            assert parts == before, root  # the parts were not changed by merging
            found = [str(d) for d in check_runtime(policy, res.manifests, inv, merged)]
            assert found == [str(d) for d in check_runtime(policy, res.manifests, inv)], root
            assert (inv is whole) == ("OPS004" not in " ".join(found)), root

        units = [Inventory.of(lower_team_unit(policy, team)).files for team in policy.teams]
        in_units = {r[0] for rows in units for r in rows}
        fleet = [r for r in whole.files if r[0] not in in_units]
        facts = merge_facts([file_facts(fleet), *map(file_facts, units)])
        unread = Inventory(whole.count, whole.folders, whole.admission_checks, whole.queue_checks, [])
        models = fleet_runtime(policy, res.manifests, unread, facts)
        assert all(rt.in_time() for rt in models.values()), root
        assert [str(d) for d in check_runtime(policy, res.manifests, unread, facts)] == [
            str(d) for d in check_runtime(policy, res.manifests, whole)], root


def test_out_digests_from_the_last_run_read_only_the_changed_units(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a one-team edit the digests of out/ come from the last run's, patched with the units
    that left and came: two ``files`` entries read, not one per team; one run's digests kept."""
    _check(demo, "none")
    reads: list[tuple[str, str]] = []
    real_get = Store.get

    def get(self: Store, kind: str, key: str) -> Any:
        if not self.off:
            reads.append((kind, key))
        return real_get(self, kind, key)

    monkeypatch.setattr(Store, "get", get)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    assert inc.cached == "partial"
    assert sum(kind == "files" for kind, _ in reads) == 1  # the unit that left (the new one is in memory)
    assert inc.out_digests == compile_policies(_opts(demo)).out_digests
    assert len(list((demo / CACHE_DIRNAME / "digests").iterdir())) == 1
    reads.clear()
    again = compile_policies(_opts(demo), Store(demo))
    assert again.cached == "result" and again.out_digests == inc.out_digests
    assert not any(kind == "files" for kind, _ in reads)  # its own digests, no unit's files
    _check(demo, "result")  # the bytes behind them too


@pytest.mark.parametrize("gone", ["digests", "last", "files"])
def test_out_digests_without_the_last_runs_entries(demo: Path, gone: str) -> None:
    """A pruned or deleted entry of the last run only costs time: every unit's files are read."""
    _check(demo, "none")
    shutil.rmtree(demo / CACHE_DIRNAME / gone)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    _check(demo, "none" if gone == "files" else "partial")  # no unit's files: compiled without the store
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 2")
    _check(demo, "none" if gone == "files" else "partial")  # ... and those units computed again, once
    mutate(demo, "teams/vision.yaml", "guaranteed: 2", "guaranteed: 1")
    _check(demo, "partial")


def test_validate_leaves_the_digests_to_the_check_after_it(demo: Path) -> None:
    """``validate`` (digests=False) compares no file and computes no digest; the ``check`` after it
    is answered from the run validate stored, its digests patched from the last run's."""
    _check(demo, "none")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    first = compile_policies(_opts(demo), Store(demo), objects=False, digests=False)
    assert first.cached == "partial" and first.out_digests == {} and not first.out_files
    _check(demo, "result")


def test_crds_are_parsed_once_then_read_from_the_store(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process (an emptied registry) verifying a changed ClusterQueue takes the CRD's parse
    from the store, not from YAML; the result is the same."""
    import compiler.verify.registry as registry
    from compiler.verify.run import _registry

    _registry.cache_clear()
    _check(demo, "none")
    assert list((demo / CACHE_DIRNAME / "crd").iterdir())
    _registry.cache_clear()

    def no_yaml(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a CRD parsed again")

    monkeypatch.setattr(registry.yaml, "load", no_yaml)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    assert inc.cached == "partial"
    monkeypatch.undo()
    _registry.cache_clear()
    _same(inc, compile_policies(_opts(demo)))


def test_the_front_stages_import_no_lowering() -> None:
    """``explain``, ``report`` and ``nodes`` import load and validate alone (``pipeline.front``):
    not the lowering, verify or report modules a compile needs."""
    import subprocess
    import sys

    code = ("import sys, compiler.pipeline.front, compiler.pipeline.run\n"
            "print(sorted(m for m in sys.modules if m.startswith(('compiler.lower', 'compiler.verify.run', "
            "'compiler.report.policy_report', 'compiler.pipeline.stages'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_a_validate_answered_by_the_store_imports_no_yaml_library(demo: Path, crds_dir: Path) -> None:
    """A ``validate`` whose inputs the store has seen reads the files and answers from the store:
    it imports neither ruamel nor PyYAML (~25 ms of start-up, ``compiler.load.files``), which an
    edited file's parse does."""
    import subprocess
    import sys

    code = ("import sys\nfrom compiler.cli.main import main\ncode = main(['validate', '--root', sys.argv[1]])\n"
            "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'ruamel', 'yaml', '_ruamel_yaml'}))")

    def run() -> str:
        env = {**os.environ, "GPUPOLICY_CRDS": str(crds_dir)}
        return subprocess.run([sys.executable, "-c", code, str(demo)], capture_output=True, text=True, check=True,
                              cwd=REPO, env=env).stdout.strip()

    assert run() == "0 ['ruamel', 'yaml']"  # a cold store: every file parsed
    assert run() == "0 []"
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert run() == "0 ['ruamel', 'yaml']"


def test_a_one_team_edit_renders_only_what_changed(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fleet-scope objects are lowered again on every run but rendered only when they changed
    (``tables.render_fleet``), and a team's objects are verified only when they changed
    (``tables.verify_objects``): after one budget edit, a few renders and verifications."""
    import compiler.pipeline.stages as stages
    import compiler.pipeline.tables as tables

    _check(demo, "none")
    rendered: list[str] = []
    verified: list[str] = []
    real_render, real_verify = stages.render_manifest, stages.Verifier.__call__
    for module in (stages, tables):  # a unit's objects, then the fleet's through the table
        monkeypatch.setattr(module, "render_manifest", lambda m: rendered.append(m.kind) or real_render(m))
    monkeypatch.setattr(stages.Verifier, "__call__",
                        lambda self, ms, get: verified.extend(m.kind for m in ms) or real_verify(self, ms, get))
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    monkeypatch.undo()
    assert inc.cached == "partial"
    # vision's ClusterQueue, the Cohorts whose totals moved, vision's unit rendered whole: not the fleet's 60-odd
    assert 0 < rendered.count("Cohort") <= 3 and "ClusterQueue" in rendered
    assert "WorkloadPriorityClass" not in rendered and "ResourceFlavor" not in rendered
    assert "ClusterQueue" in verified and "LocalQueue" not in verified and "Namespace" not in verified
    _same(inc, compile_policies(_opts(demo)))


def test_findings_verify_makes_once_per_call_are_the_same_cached(demo: Path) -> None:
    """A cluster on a Kubernetes version without bundled schemas (NEAREST_SCHEMAS, once per verify
    call): team objects verified one by one through the store, or a unit at a time without it,
    give the same diagnostics and statistics."""
    mutate(demo, "fleet.yaml", 'kubernetesVersion: "1.34"', 'kubernetesVersion: "1.38"')
    inc = _check(demo, "none")
    assert any("no bundled schemas for Kubernetes 1.38" in d.message for d in inc.diagnostics)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    _check(demo, "partial")


def test_tree_fingerprints_are_memoised_by_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tree_fingerprint`` answers an unchanged tree from the user's memo without reading a file,
    and hashes again a tree whose file changed, even at the same size with the mtime put back
    (the ctime moves), or one changed too recently to trust."""
    import os

    import compiler.cache.store as store

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    tree = tmp_path / "crds"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "x.yaml").write_bytes(b"kind: A\n")
    (tree / "y.yaml").write_bytes(b"kind: B\n")
    old = time.time_ns() - 10**9
    for p in (tree / "a" / "x.yaml", tree / "y.yaml"):
        os.utime(p, ns=(old, old))
    time.sleep(store.RACY_NS / 1e9)  # the ctimes too must be older than the racy window
    first = store.tree_fingerprint(tree)
    assert first == store._hashed(store._files(tree))
    real = store._hashed
    monkeypatch.setattr(store, "_hashed", lambda files: pytest.fail("hashed again"))
    assert store.tree_fingerprint(tree) == first  # from the memo
    monkeypatch.setattr(store, "_hashed", real)
    (tree / "y.yaml").write_bytes(b"kind: C\n")  # same size
    os.utime(tree / "y.yaml", ns=(old, old))  # mtime put back: the ctime still moves
    changed = store.tree_fingerprint(tree)
    assert changed != first and changed == real(store._files(tree))


def test_compiler_fingerprint_is_the_same_from_any_working_directory(tmp_path: Path) -> None:
    """``python -m compiler`` puts the working directory on ``sys.path``; a checkout's
    ``*.egg-info`` there must not change every key (it made a run from the repository root
    recompute every unit a run from elsewhere had stored)."""
    import subprocess
    import sys

    (tmp_path / "elsewhere.egg-info").mkdir()
    code = "import sys; sys.path.insert(0, ''); from compiler.cache.store import compiler_fingerprint as f; print(f())"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    prints = {subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                             check=True).stdout for cwd in (tmp_path, tmp_path.parent)}
    assert len(prints) == 1, prints


@pytest.mark.parametrize("block", [64, 2])
def test_codeowners_sections_are_kept_and_checked(demo: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Each team's CODEOWNERS section is kept with its unit (kind ``ownsec``): a one-team edit
    renders that team's section alone; a section whose fleet share changed, or whose namespace
    another unit's files share, is not used; the file is the one over every part either way.
    With blocks of 2 on average, the blocks kept whole (kind ``ownblock``) are held to the same."""
    import compiler.pipeline.owners as owners
    from compiler.load.paths import display_path
    from compiler.pipeline import units
    from compiler.pipeline.units import fleet_key, unit_key
    from compiler.report.codeowners import render_codeowners

    monkeypatch.setattr(units, "BLOCK", block)

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the child's work in this process, where it is counted
    _check(demo, "none")
    rendered: list[str] = []
    real = owners.team_section
    monkeypatch.setattr(owners, "team_section", lambda p, t, pats: rendered.append(t.name) or real(p, t, pats))
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = _check(demo, "partial")
    assert rendered == ["vision"], rendered
    policy = inc.policy
    assert policy is not None
    opts, store = _opts(demo), Store(demo)
    raw = {p.relative_to(demo).as_posix(): p.read_bytes() for p in (demo / "policies").rglob("*.yaml")}
    fleet = fleet_key(compile_fingerprint(opts), policy.fleet_src.path, content_digest(raw[policy.fleet_src.path]))
    keys = [(t, unit_key(fleet, t.path, content_digest(raw[t.path]))) for t in policy.teams]
    parts = {k: owners.stored_part(store, k) for _, k in keys}
    assert all(parts.values())
    fleet_part = _fleet_part(inc, policy)
    shown = display_path(opts.policy_dir, demo), display_path(opts.out_dir, demo)

    def whole(fleet_part: Any, parts: dict[str, Any]) -> bytes:
        return render_codeowners(policy, [fleet_part, *(parts[k] for _, k in keys)], *shown)

    assert owners.codeowners_of(store, policy, fleet_part, {}, keys, *shown) == whole(fleet_part, parts)
    # the fleet's part gives a team one more file: that team's section is rendered again
    team, key = keys[0]
    by_ns, kinds, single, others, dotted = fleet_part
    extra = {**single, ("x", None): [("x/kueue/clusterqueue._.extra.yaml", team.name, "x/kueue/clusterqueue._.extra.yaml")]}
    rendered.clear()
    got = owners.codeowners_of(store, policy, (by_ns, kinds, extra, others, dotted), {}, keys, *shown)
    assert got == whole((by_ns, kinds, extra, others, dotted), parts) and rendered == [team.name]
    assert b"/out/*/kueue/clusterqueue._.extra.yaml" in got  # no other file there: one line, every cluster
    # ... and a fleet file of no one team at that path on another cluster: the team's line names its cluster
    rendered.clear()
    fleet3 = (by_ns, kinds, extra, {**others, "kueue/clusterqueue._.extra.yaml": "kueue/clusterqueue._.extra.yaml"},
              dotted)
    got = owners.codeowners_of(store, policy, fleet3, {}, keys, *shown)
    assert got == whole(fleet3, parts) and rendered == [team.name]
    assert b"/out/x/kueue/clusterqueue._.extra.yaml" in got and b"/out/*/kueue/clusterqueue._.extra" not in got
    # another unit's files in a team's namespace: no section holds, every part is merged
    (_, k0), (_, k1) = keys[0], keys[1]
    ns_key = sorted(parts[k0][0])[0]
    u_ns, u_kinds, u_single, u_others, u_dotted = parts[k1]
    parts[k1] = ({**u_ns, ns_key: {None}}, u_kinds, u_single, u_others, u_dotted)
    assert owners.codeowners_of(store, policy, fleet_part, {k1: parts[k1]}, keys, *shown) == whole(fleet_part, parts)
    # ... or in a namespace of that name on another cluster (FLEET004 allows it): the same, and
    # neither team's line stands for every cluster
    elsewhere = ("elsewhere", ns_key[1])
    folder = {("kueue", "localqueue", f"elsewhere/kueue/localqueue.{ns_key[1]}.")}
    parts[k1] = ({**u_ns, elsewhere: {keys[1][0].name}}, {**u_kinds, elsewhere: folder}, u_single, u_others, u_dotted)
    got = owners.codeowners_of(store, policy, fleet_part, {k1: parts[k1]}, keys, *shown)
    assert got == whole(fleet_part, parts) and f"/out/elsewhere/kueue/localqueue.{ns_key[1]}.*.yaml".encode() in got
    assert f"/out/*/kueue/localqueue.{ns_key[1]}.".encode() not in got
    # another unit's files in a namespace the fleet's files give a team: that team's section, kept
    # (with blocks of 2, its block whole), does not hold either; only the team's side sees it
    given = ("onprem", "given-ns")
    folder = {("kueue", "localqueue", "onprem/kueue/localqueue.given-ns.")}
    fleet2 = ({**by_ns, given: {team.name}}, {**kinds, given: folder}, single, others, {**dotted, "given-ns": team.name})
    parts[k1] = (u_ns, u_kinds, u_single, u_others, u_dotted)
    assert owners.codeowners_of(store, policy, fleet2, {}, keys, *shown) == whole(fleet2, parts)
    parts[k1] = ({**u_ns, given: {keys[1][0].name}}, {**u_kinds, given: folder}, u_single, u_others, u_dotted)
    got = owners.codeowners_of(store, policy, fleet2, {k1: parts[k1]}, keys, *shown)
    assert got == whole(fleet2, parts) and b"localqueue.given-ns.*.yaml" not in got and b".given-ns." not in got
    # another unit's object named with a team's namespace name as a dotted part: that namespace's line
    # for every kind would match it, so no section holds, and the namespace has a line per kind
    parts[k1] = (u_ns, u_kinds, u_single, u_others, {**u_dotted, ns_key[1]: keys[1][0].name})
    got = owners.codeowners_of(store, policy, fleet_part, {k1: parts[k1]}, keys, *shown)
    assert got == whole(fleet_part, parts)
    assert f"/*/*.{ns_key[1]}.*yaml".encode() not in got and f".{ns_key[1]}.*.yaml".encode() in got
    # ... and the same name borne by a fleet file alone: the team's section is rendered again
    parts[k1] = (u_ns, u_kinds, u_single, u_others, u_dotted)
    fleet4 = (by_ns, kinds, single, others, {**dotted, ns_key[1]: None})
    rendered.clear()
    got = owners.codeowners_of(store, policy, fleet4, {}, keys, *shown)
    assert got == whole(fleet4, parts) and f"/*/*.{ns_key[1]}.*yaml".encode() not in got
    assert rendered == [keys[0][0].name], rendered
    # a name starting with a team's (its line for every such name, ``*.<team>*yaml``) borne by a
    # fleet file of no one team, or another unit's namespace with no file three folders deep: either
    # way the team's line goes, as over every part
    first = keys[0][0].name
    assert f"/out/*/*/*.{first}*yaml".encode() in whole(fleet_part, parts)
    fleet5 = (by_ns, kinds, single, others, {**dotted, f"{first}-fleet": None})
    got = owners.codeowners_of(store, policy, fleet5, {}, keys, *shown)
    assert got == whole(fleet5, parts) and f"/out/*/*/*.{first}*yaml".encode() not in got
    parts[k1] = ({**u_ns, ("onprem", f"{first}-odd"): {keys[1][0].name}}, u_kinds, u_single, u_others, u_dotted)
    got = owners.codeowners_of(store, policy, fleet_part, {k1: parts[k1]}, keys, *shown)
    assert got == whole(fleet_part, parts) and f"/out/*/*/*.{first}*yaml".encode() not in got
    # ... but a path below a cluster's folder starting with it is no such name (no file name bears it)
    parts[k1] = (u_ns, u_kinds, u_single, {**u_others, f"{first}/x.yaml": f"{first}/x.yaml"}, u_dotted)
    got = owners.codeowners_of(store, policy, fleet_part, {k1: parts[k1]}, keys, *shown)
    assert got == whole(fleet_part, parts) and f"/out/*/*/*.{first}*yaml".encode() in got


def test_a_namespace_name_two_teams_use_through_the_store(demo: Path) -> None:
    """CODEOWNERS through the store (kept sections, blocks and parts) equals an empty store's as a
    team takes another team's namespace name on another cluster (FLEET004 allows it: both teams'
    lines for it name their clusters and kinds), edits its budget meanwhile, and gives the name back
    (one line for every cluster and kind again); ``_check`` compares every file with an empty store's."""
    _check(demo, "none")
    owners = demo / ".github" / "CODEOWNERS"

    def codeowners(res: Result) -> str:
        return res.repo_files[".github/CODEOWNERS"].decode()

    mutate(demo, "teams/vision.yaml", "  namespaces:\n", "  namespaces:\n    - {name: interns-sandbox, clusters: [onprem]}\n")
    text = codeowners(_check(demo, "partial"))
    assert "/out/onprem/kueue/localqueue.interns-sandbox.*.yaml @acme/vision" in text
    assert "/out/cloud/kueue/localqueue.interns-sandbox.*.yaml @acme/ml-interns" in text
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert codeowners(_check(demo, "partial")) == text
    mutate(demo, "teams/vision.yaml", "    - {name: interns-sandbox, clusters: [onprem]}\n", "")
    text = codeowners(_check(demo, "partial"))
    assert "/out/*/*/*.interns*yaml @acme/ml-interns" in text and "@acme/vision" not in [
        ln.split(" ")[1] for ln in text.splitlines() if "interns-sandbox" in ln]
    assert not owners.exists()  # compile_policies writes nothing: the files compared are the results'


@pytest.mark.parametrize("block", [64, 2])
def test_a_namespace_starting_with_another_teams_name_through_the_store(
        demo: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """A team's line for every name starting with its own (``/out/*/*/*.nlp*yaml``) through the
    store: it goes when another team's unit bears such a name (vision's namespace ``nlp-vision``),
    stays gone while that team edits its budget, and comes back when the name goes; with blocks of
    2 on average nlp's block is kept whole meanwhile, so the kept answer to whether another unit
    bears such a name is what brings the line back. ``_check`` compares every file with an empty
    store's."""
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)
    _check(demo, "none")

    def codeowners(res: Result) -> str:
        return res.repo_files[".github/CODEOWNERS"].decode()

    prefix = "/out/*/*/*.nlp*yaml @acme/nlp"
    assert prefix in codeowners(_check(demo, "result"))
    mutate(demo, "teams/vision.yaml", "  namespaces:\n", "  namespaces:\n    - {name: nlp-vision, clusters: [onprem]}\n")
    text = codeowners(_check(demo, "partial"))
    assert prefix not in text and "/out/*/*/*.nlp-train.*yaml @acme/nlp" in text
    assert "/out/*/*/*.nlp-vision.*yaml @acme/vision" in text
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert codeowners(_check(demo, "partial")) == text
    mutate(demo, "teams/vision.yaml", "    - {name: nlp-vision, clusters: [onprem]}\n", "")
    text = codeowners(_check(demo, "partial"))
    assert prefix in text and "nlp-train" not in text and "nlp-vision" not in text


def compile_fingerprint(opts: Options) -> str:
    from compiler.pipeline.run import Run

    run = Run(opts, Store(opts.root))
    run.fingerprint()
    return run.fp


def _fleet_part(res: Result, policy: Any) -> Any:
    """The fleet-scope files' part of CODEOWNERS, as the pipeline computes it."""
    from compiler.lower import lower_cluster
    from compiler.model.inventory import Inventory
    from compiler.report.codeowners import delivery_rows, owned_part

    fresh = [m for c in sorted(policy.clusters) for m in lower_cluster(policy, c)]
    return owned_part([*Inventory.of(fresh).files, *delivery_rows(res.manifests)], {t.path: t.name for t in policy.teams})


def test_fleet_scope_verdict_is_kept_by_the_fleet_file(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fleet-scope findings (the DeviceClass proofs among them) are kept under the fleet
    file's key: a team's edit proves nothing again, a fleet edit does; the findings are the
    uncached run's either way."""
    import compiler.validate.dra as dra

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the rules in this process, where they are counted
    proved: list[str] = []
    real = dra._prove
    monkeypatch.setattr(dra, "_prove", lambda policy, c, *a: proved.append(c.name) or real(policy, c, *a))
    _check(demo, "none")
    assert proved == ["onprem", "onprem"]  # the stored run's, then the uncached one's
    proved.clear()
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = compile_policies(_opts(demo), Store(demo))
    assert inc.cached == "partial" and proved == []
    _same(inc, compile_policies(_opts(demo)))
    proved.clear()
    mutate(demo, "fleet.yaml", "nodes: 8", "nodes: 9")
    inc = compile_policies(_opts(demo), Store(demo))
    assert proved == ["onprem"]
    _same(inc, compile_policies(_opts(demo)))


@pytest.mark.parametrize("block", [64, 3])
def test_a_sequence_of_edits_stays_the_uncached_result(tmp_path: Path, crds_dir: Path, block: int,
                                                       monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """A generated organisation through a seeded sequence of edits (a guarantee lowered, a
    namespace renamed, a team added, that team removed), each followed by ``check`` then ``build``
    in this process, the store carried along: after each edit the stored run equals the uncached
    one (CODEOWNERS from kept sections among it) and ``check`` lists what ``check --no-cache``
    lists (the comparison since the last build among it). With blocks of 3 units on average the
    24 teams make several blocks, most read whole after each edit (``pipeline.blocks``)."""
    import random

    import yaml

    from bench.generate import generate
    from compiler.cli.main import main
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)
    whole: list[str] = []  # the blocks read whole from the store
    real = Store.get

    def get(self: Store, kind: str, key: str) -> Any:
        found = real(self, kind, key)
        if kind == "block" and found is not None:
            whole.append(key)
        return found

    monkeypatch.setattr(Store, "get", get)

    root = tmp_path / "org"
    generate(24, 4, root, seed=3)
    monkeypatch.setenv("GPUPOLICY_CRDS", str(crds_dir))
    assert main(["build", "--root", str(root)]) == 0
    teams = root / "policies" / "teams"
    rng = random.Random(5)
    added: list[Path] = []

    def stale(*extra: str) -> tuple[int, list[str]]:
        capsys.readouterr()
        code = main(["check", "--root", str(root), *extra])
        return code, sorted(line for line in capsys.readouterr().err.splitlines() if line.startswith("stale:"))

    compared = 0
    for step in range(8):
        path = rng.choice(sorted(p for p in teams.glob("*.yaml") if p not in added))
        team = yaml.safe_load(path.read_text())
        name = team["metadata"]["name"]
        if step % 4 == 0:  # a guarantee lowered
            for budget in team["spec"].get("budgets", []):
                if budget.get("guaranteed", 0) >= 2 and "lend" not in budget:
                    budget["guaranteed"] -= 1
                    break
            path.write_text(yaml.safe_dump(team, sort_keys=False))
        elif step % 4 == 1:  # a namespace renamed, with what names it
            old = team["spec"]["namespaces"][0]["name"]
            path.write_text(path.read_text().replace(f" {old}\n", f" {old}-x\n"))
        elif step % 4 == 2:  # a team added: a copy under another name, with no budget (no capacity taken)
            spec = team["spec"]
            spec.pop("budgets", None)
            spec.pop("serving", None)
            text = yaml.safe_dump(team, sort_keys=False).replace(name, f"{name}-new")
            added.append(teams / f"{name}-new.yaml")
            added[-1].write_text(text)
        else:  # that team removed
            added.pop().unlink()
        inc = compile_policies(_opts(root), Store(root))
        _same(inc, compile_policies(_opts(root)))
        assert inc.ok, (step, [str(d) for d in inc.diagnostics if d.severity.value == "error"][:3])
        got = stale()
        assert got == stale("--no-cache") and got[0] == 1 and got[1], (step, got)
        compared += 1
        assert main(["build", "--root", str(root)]) == 0
        assert stale() == (0, [])
    assert compared == 8
    assert len(whole) > 8 * 3 or block == 64  # with blocks of 3: several read whole per run


@pytest.mark.parametrize("block", [64, 2])
def test_team_verdicts_are_kept_a_block_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """The team-scope rules' findings are kept per team (kind ``rules``) and a block of teams at a
    time (kind ``verdicts``, the units' blocks over the team files in path order): after a one-team
    edit the blocks without that team are read whole, its own block's other teams one by one, and
    the findings (here FLEET011 in vision, ADM001 in search) are the uncached ones. With blocks of
    2 on average the demo's teams make 4 blocks ([interns] [nlp] [recsys, search] [vision]); a
    block of one team is kept only per team."""
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)
    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the rules run in this process: their reads are counted
    mutate(demo, "teams/vision.yaml", "clusters: [onprem]", "clusters: [onprem, cloud]")  # FLEET011: no budget there
    mutate(demo, "teams/search.yaml", '  groups: ["acme:search"]\n', "")  # ADM001: nobody may submit
    _check(demo, "none")
    read: list[str] = []
    real = Store.get

    def get(self: Store, kind: str, key: str) -> Any:
        found = real(self, kind, key)
        if kind in ("verdicts", "rules") and found is not None:
            read.append(kind)
        return found

    monkeypatch.setattr(Store, "get", get)
    mutate(demo, "teams/nlp.yaml", "guaranteed: 32", "guaranteed: 24")
    inc = _check(demo, "partial")
    assert sorted({(d.code, d.location.file if d.location else "") for d in inc.diagnostics if d.code in ("FLEET011", "ADM001")}) == [
        ("ADM001", "policies/teams/search.yaml"), ("FLEET011", "policies/teams/vision.yaml")]
    # 64: the one block changed (nlp is in it), so the other 4 teams and the fleet one by one;
    # 2: [recsys, search] whole, interns, vision and the fleet one by one
    assert sorted(read) == (["rules"] * 5 if block == 64 else ["rules"] * 3 + ["verdicts"])
    read.clear()
    mutate(demo, "teams/nlp.yaml", "guaranteed: 24", "guaranteed: 16")
    _check(demo, "partial")
    assert sorted(read) == (["rules"] * 5 if block == 64 else ["rules"] * 3 + ["verdicts"])


@pytest.mark.parametrize("block", [64, 2])
def test_stored_units_rows_are_read_only_when_needed(demo: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """A stored unit's inventory rows are an entry of their own (kind ``rows``), read only when
    something needs them: not after a one-team edit; when OPS004 names the files of namespaces
    created too late (the namespaces' wave moved after every component's), they are read, and an
    entry gone or corrupt is computed again from the team: the findings are the uncached ones.
    With blocks of 2 units on average the demo's teams make 4 blocks ([interns] [nlp] [recsys,
    search] [vision]): the OPS facts and rows of the blocks read whole give the same findings."""
    from compiler.model import targets
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)

    _check(demo, "none")
    read: list[str] = []
    real = Store.get

    def get(self: Store, kind: str, key: str) -> Any:
        read.append(kind)
        return real(self, kind, key)

    monkeypatch.setattr(Store, "get", get)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    _check(demo, "partial")
    assert "unit" in read and "rows" not in read
    monkeypatch.setitem(targets.COMPONENT_WAVES, "namespaces", 50)
    entries = demo / CACHE_DIRNAME / "rows"
    names = sorted(os.listdir(entries))
    assert len(names) > len(list((demo / "policies/teams").glob("*.yaml")))  # vision's before the edit too
    for name in names[::2]:
        (entries / name).unlink()
    (entries / names[1]).write_bytes(b"garbage")
    nlp = demo / "policies/teams/nlp.yaml"
    nlp.write_text(nlp.read_text() + "# edited\n")  # no stored result: the late waves are this run's
    read.clear()
    inc = _check(demo, "partial")
    late = [d for d in inc.diagnostics if d.code == "OPS004"]
    assert "rows" in read and any("vision" in d.message for d in late) and any("recsys" in d.message for d in late)
    assert read.count("block") == (3 if block == 2 else 0)  # all but nlp's block, read whole


@pytest.mark.parametrize("block", [64, 2])
def test_codeowners_kept_a_block_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """CODEOWNERS is kept a block of teams at a time (kind ``ownblock``, the text apart: kind
    ``ownchunk``) and whole, by the header and the blocks' texts (kind ``ownfile``). An edit that
    changes no owner neither reads a block's text nor joins the file again; one that does reads the
    other blocks' texts; with those entries gone, or the kept file's bytes gone, the file is made
    from the teams' sections again. The file is the uncached one throughout (``_check``). With
    blocks of 2 on average the demo's teams make 4 blocks ([interns] [nlp] [recsys, search] [vision])."""
    import compiler.pipeline.owners as owners
    from compiler.pipeline import units

    monkeypatch.setattr(units, "BLOCK", block)
    _check(demo, "none")
    read: list[str] = []
    joined: list[int] = []
    real_get, real_file = Store.get, owners.repo_file

    def get(self: Store, kind: str, key: str) -> Any:
        found = real_get(self, kind, key)
        if kind.startswith("own") and found is not None:
            read.append(kind)
        return found

    monkeypatch.setattr(Store, "get", get)
    monkeypatch.setattr(owners, "repo_file", lambda store, data: joined.append(len(data)) or real_file(store, data))
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")  # no owner changes
    _check(demo, "partial")
    assert "ownfile" in read and "ownchunk" not in read and not joined, (read, joined)
    # 64: one block, vision's: its other teams' sections; 2: the three blocks without vision whole
    assert read.count("ownblock") == (0 if block == 64 else 3) and read.count("ownsec") == (4 if block == 64 else 0)
    read.clear()
    mutate(demo, "teams/vision.yaml", '["@acme/vision"]', '["@acme/vision", "@acme/vision-leads"]')
    inc = _check(demo, "partial")
    assert b"@acme/vision-leads" in inc.repo_files[".github/CODEOWNERS"]
    assert len(joined) == 1 and "ownfile" not in read and read.count("ownchunk") == (0 if block == 64 else 3)
    # the blocks' texts gone and an owner changed: the other blocks' texts from their teams' sections
    shutil.rmtree(demo / CACHE_DIRNAME / "ownchunk")
    joined.clear()
    mutate(demo, "teams/vision.yaml", '"@acme/vision-leads"]', '"@acme/vision-oncall"]')
    _check(demo, "partial")
    assert len(joined) == 1
    # the kept file's bytes gone, no owner changed: the file joined again
    shutil.rmtree(demo / CACHE_DIRNAME / "repo")
    joined.clear()
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 3")
    _check(demo, "partial")
    assert len(joined) == 1
    # the header alone changes (a spare cohort's file shared or not; here patched): joined again
    real_header = owners.codeowners_header
    monkeypatch.setattr(owners, "codeowners_header", lambda *args: real_header(*args) + "\n# changed")
    joined.clear()
    mutate(demo, "teams/vision.yaml", "guaranteed: 3", "guaranteed: 5")
    inc = compile_policies(_opts(demo), Store(demo))
    assert len(joined) == 1 and b"\n# changed\n" in inc.repo_files[".github/CODEOWNERS"]


def test_report_fragments_are_kept_by_their_teams_units(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """REPORT.md's table of each cluster and allocation.json's teams of each class are kept by the
    units of the teams they list (kind ``fragment``): after vision's edit only the texts listing
    vision are rendered again; with every entry corrupt, all of them; the reports are the uncached
    ones throughout."""
    import compiler.report.policy_report as policy_report

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the reports rendered in this process, where they are counted
    _check(demo, "none")
    rendered: list[tuple[str, ...]] = []
    rows, teams = policy_report._entry_rows, policy_report._team_entries
    monkeypatch.setattr(policy_report, "_entry_rows", lambda p, c, es: rendered.append(("md", c)) or rows(p, c, es))
    monkeypatch.setattr(policy_report, "_team_entries",
                        lambda es, nl, seen: rendered.append(("json", es[0].cluster, es[0].gpu_class)) or teams(es, nl, seen))

    def counted() -> set[tuple[str, ...]]:
        return set(_rendered_again(demo, rendered)[1])

    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    policy, _ = policy_at(demo)
    assert policy is not None
    mine = {(e.cluster, e.gpu_class) for e in policy.allocation.for_team("vision")}
    every = {(e.cluster, e.gpu_class) for e in policy.allocation.entries}
    assert mine and mine != every
    assert counted() == {("md", c) for c, _ in mine} | {("json", c, k) for c, k in mine}
    for entry in (demo / CACHE_DIRNAME / "fragment").iterdir():
        entry.write_bytes(entry.read_bytes()[:-1] + b"x")
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 3")
    assert counted() == {("md", c) for c, _ in every} | {("json", c, k) for c, k in every}


def test_stored_fragments_are_keyed_by_what_and_by_teams_in_order(tmp_path: Path) -> None:
    from compiler.pipeline.units import StoredFragments, team_names
    from compiler.policy.graph import Team

    store = Store(tmp_path)
    frags = StoredFragments(store, {"a": "1" * 32, "b": "2" * 32})
    assert [frags.text("x", ["a"], lambda: "one"), frags.text("y", ["a"], lambda: "two")] == ["one", "two"]
    assert frags.text("x", ["a"], lambda: "three") == "one"  # kept
    assert frags.text("x", ["a", "b"], lambda: "four") == "four"
    assert frags.text("x", ["b", "a"], lambda: "five") == "five"
    assert frags.text("x", ["c"], lambda: "six") == "six"  # a team without a unit: rendered
    assert frags.text("z", ["a"], lambda: None) is None and frags.text("z", ["a"], lambda: "seven") == "seven"
    assert StoredFragments(store, None).text("x", ["a"], lambda: "eight") == "eight"
    assert len(frags.used) == 6 and (tmp_path / CACHE_DIRNAME / "fragment").is_dir()

    class Named:  # a team file's name and path, as team_names reads them
        def __init__(self, name: str, path: str) -> None:
            self.name, self.path = name, path

    def named(*teams: tuple[str, str]) -> list[Team]:
        return [Named(n, p) for n, p in teams]  # type: ignore[misc]

    keys = {"t/a.yaml": "ka", "t/b.yaml": "kb"}
    assert team_names(keys, named(("a", "t/a.yaml"), ("b", "t/b.yaml"))) == {"a": "ka", "b": "kb"}
    assert team_names(keys, named(("a", "t/a.yaml"), ("a", "t/b.yaml"))) is None  # two files name one team


def test_cohorts_kept_a_cluster_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For the commands that use the rendered files only (validate, check, build: ``objects=False``)
    the Cohorts of every department but the spare quota's holder are kept a cluster at a time
    (kind ``cohorts``), by the departments that get one: a budget edit lowers none of them, a team
    that leaves the only department of its kind on a cluster lowers that cluster's, a fleet edit
    every cluster's; with the entries corrupt they are lowered again. The files, findings and
    statistics are the uncached run's throughout."""
    from compiler.pipeline import cohorts

    lowered: list[str] = []
    real = cohorts._lowered
    monkeypatch.setattr(cohorts, "_lowered",
                        lambda run, p, c, names, key: lowered.append(c) or real(run, p, c, names, key))

    def kept() -> list[str]:
        lowered.clear()
        store = Store(demo)
        inc = compile_policies(_opts(demo), store, objects=False)
        _same(inc, compile_policies(_opts(demo), objects=False))  # the bytes, from the Cohorts' own blobs
        assert not inc.failed and any(rel.startswith(("cloud/kueue/cohort.", "onprem/kueue/cohort.")) for rel in inc.out_digests)
        assert inc.record is not None
        homed = {rel: key for rel, key in inc.record.homes.items() if "/kueue/cohort." in rel}
        assert homed and not set(homed) & set(store.get("blob", inc.record.glob))  # not in the run's blob
        assert {("blob", key) for key in homed.values()} <= store.used
        return sorted(lowered)

    assert kept() == ["cloud", "onprem"]
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert kept() == []
    mutate(demo, "teams/interns.yaml", "department: research", "department: product")  # cloud's last research team
    assert kept() == ["cloud"]
    mutate(demo, "fleet.yaml", "      weight: 2\n", "      weight: 3\n")
    assert kept() == ["cloud", "onprem"]
    for entry in (demo / CACHE_DIRNAME / "cohorts").iterdir():
        entry.write_bytes(entry.read_bytes()[:-1] + b"x")
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 5")
    assert kept() == ["cloud", "onprem"]


@pytest.mark.parametrize("fork", [True, False])
def test_report_parts_are_stored_by_the_process_that_renders_them(demo: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   fork: bool) -> None:
    """REPORT.md (with the node contracts) and allocation.json are each stored as a blob of their
    own by the process that rendered them (``policy_unit.stored_part``), so their bytes never cross
    from the rules' process: a run that writes nothing (``validate``) keeps only their digests and
    where they are; the two reports as their recipes, the fragments they are made of named; a run
    answered from its record reads them from those blobs; with a blob or a fragment gone, the CLI
    renders again."""
    if not fork:
        monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")
    _check(demo, "none")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    store = Store(demo)
    first = compile_policies(_opts(demo), store, objects=False, digests=False)
    rec = first.record
    assert rec is not None and not first.out_files
    reports = {rel: key for rel, key in rec.homes.items() if "/kueue/cohort." not in rel}  # kept Cohorts' apart
    assert {"REPORT.md", "allocation.json"} <= set(reports) and set(rec.homes) <= set(rec.inline)
    assert rec.glob not in rec.homes.values() and len(set(reports.values())) == 2  # one blob a part
    main_blob = store.get("blob", rec.glob)
    assert isinstance(main_blob, dict) and not set(main_blob) & set(rec.homes)
    for rel, key in rec.homes.items():  # each blob holds its files, as the record's digests say
        part = store.get("blob", key)
        assert isinstance(part, dict)
        data = part[rel]
        if rel in ("REPORT.md", "allocation.json"):  # their recipe: literal text and kept fragments
            assert isinstance(data, list) and {p[0] for p in data if isinstance(p, tuple)} <= set(rec.pieces)
            assert sum(isinstance(p, tuple) for p in data) >= 2
            data = "".join(p if isinstance(p, str) else store.get("fragment", p[0]) for p in data).encode()
        assert content_digest(data) == rec.inline[rel]
    assert rec.pieces and {("fragment", k) for k in rec.pieces} <= store.used
    assert ("blob", rec.glob) in store.used and {("blob", k) for k in rec.homes.values()} <= store.used
    inc = _check(demo, "result")  # the bytes behind the digests, from the parts' blobs (``_same``)
    assert inc.record is not None and inc.record.homes == rec.homes
    import compiler.pipeline.run as pipeline_run
    from compiler.cli.main import main

    monkeypatch.setenv("GPUPOLICY_CRDS", str(CRDS))
    assert main(["validate", "--root", str(demo)]) == 0  # this process's fingerprint (its sys.path)
    (demo / CACHE_DIRNAME / "blob" / reports["allocation.json"]).unlink()  # pruned by another run
    stores: list[object] = []
    real = pipeline_run.compile_policies
    monkeypatch.setattr(pipeline_run, "compile_policies",
                        lambda opts, store=None, **kw: stores.append(store) or real(opts, store, **kw))
    assert main(["build", "--root", str(demo)]) == 0
    assert len(stores) == 2 and stores[1] is None  # answered from the record, then rendered whole
    full = real(_opts(demo))
    assert (demo / "out" / "allocation.json").read_bytes() == full.out_files["allocation.json"]
    assert (demo / "out" / "REPORT.md").read_bytes() == full.out_files["REPORT.md"]
    # a fragment a recipe names gone: the same
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 6")
    assert main(["validate", "--root", str(demo)]) == 0
    again = real(_opts(demo), Store(demo), objects=False, digests=False).record
    assert again is not None and again.pieces
    (demo / CACHE_DIRNAME / "fragment" / again.pieces[0]).unlink()
    stores.clear()
    assert main(["build", "--root", str(demo)]) == 0
    assert len(stores) == 2 and stores[1] is None
    full = real(_opts(demo))
    assert (demo / "out" / "allocation.json").read_bytes() == full.out_files["allocation.json"]
    assert (demo / "out" / "REPORT.md").read_bytes() == full.out_files["REPORT.md"]


def test_the_dra_section_is_kept_by_the_fleet_file(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both reports' DRA section reads the fleet alone (tests/test_rule_scopes.py): a team edit
    reads it from the store, a fleet edit or a lost entry computes it again; the reports are the
    uncached ones throughout."""
    import compiler.report.policy_report as policy_report

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the reports rendered in this process, where they are counted
    calls: list[int] = []
    real = policy_report.dra_report
    monkeypatch.setattr(policy_report, "dra_report", lambda p: calls.append(1) or real(p))

    def computed() -> int:
        inc, found = _rendered_again(demo, calls)
        assert inc.record is not None and inc.record.homes
        return len(found)

    assert computed() == 1
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert computed() == 0
    mutate(demo, "fleet.yaml", "onprem.k8s.acme.internal", "onprem2.k8s.acme.internal")
    assert computed() == 1
    for entry in (demo / CACHE_DIRNAME / "fragment").iterdir():
        entry.write_bytes(entry.read_bytes()[:-1] + b"x")
    mutate(demo, "teams/vision.yaml", "guaranteed: 4", "guaranteed: 6")
    assert computed() == 1


def test_serving_rows_are_kept_a_block_of_teams_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both reports' serving rows are kept by the units of the teams of each block
    (``serving_rows._serving_teams`` in blocks; here a block per team): after nlp's edit only nlp's rows
    are rendered again, by each report; after an edit of a team without deployments, none; the
    reports are the uncached ones throughout."""
    import compiler.report.serving_rows as serving_rows

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the reports rendered in this process, where they are counted
    monkeypatch.setattr(serving_rows, "_SERVING_BLOCK", 1)
    rendered: list[tuple[str, ...]] = []
    real = serving_rows._rows_of
    monkeypatch.setattr(serving_rows, "_rows_of",
                        lambda p, teams: rendered.append(tuple(t.name for t in teams)) or real(p, teams))

    def counted() -> list[tuple[str, ...]]:
        return sorted(_rendered_again(demo, rendered)[1])

    assert counted() == [("nlp",), ("nlp",), ("search",), ("search",)]
    mutate(demo, "teams/nlp.yaml", "replicas: {min: 2, max: 4}", "replicas: {min: 1, max: 4}")
    assert counted() == [("nlp",), ("nlp",)]
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert counted() == []


def test_priority_rows_are_kept_a_block_of_teams_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """REPORT.md's priority rows are kept by the units of the teams of each block (here a block per
    team): after vision's edit only vision's row is rendered again, after a fleet edit every row;
    the reports are the uncached ones throughout."""
    import compiler.report.priorities as priorities

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the reports rendered in this process, where they are counted
    monkeypatch.setattr(priorities, "_BLOCK", 1)
    rendered: list[str] = []
    real = priorities._team_row
    monkeypatch.setattr(priorities, "_team_row", lambda p, team: rendered.append(team.name) or real(p, team))

    def counted() -> list[str]:
        return sorted(_rendered_again(demo, rendered)[1])

    every = counted()
    assert len(every) == 5 and "vision" in every
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    assert counted() == ["vision"]
    mutate(demo, "fleet.yaml", "onprem.k8s.acme.internal", "onprem2.k8s.acme.internal")
    assert counted() == every


def test_report_tables_are_kept_a_block_of_rows_at_a_time(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster's table in REPORT.md and a class's teams in allocation.json are kept a block of
    teams at a time (``policy_report._ROWS_BLOCK``; here about two teams a block): after vision's
    edit only the blocks listing vision are rendered again; the reports are the uncached ones."""
    import compiler.report.policy_report as policy_report

    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")  # the reports rendered in this process, where they are counted
    monkeypatch.setattr(policy_report, "_ROWS_BLOCK", 2)
    rendered: list[tuple[str, ...]] = []
    rows, teams = policy_report._entry_rows, policy_report._team_entries
    monkeypatch.setattr(policy_report, "_entry_rows",
                        lambda p, c, es: rendered.append(("md", c, *sorted({e.team for e in es}))) or rows(p, c, es))
    monkeypatch.setattr(policy_report, "_team_entries",
                        lambda es, nl, seen: rendered.append(("json", *sorted({e.team for e in es}))) or teams(es, nl, seen))

    def counted() -> list[tuple[str, ...]]:
        return _rendered_again(demo, rendered)[1]

    every = counted()
    assert any(len(r) > 3 for r in every if r[0] == "md")  # a block of several teams
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    again = counted()
    assert again and all("vision" in r for r in again), again
    assert len(again) < len(every) and len({r for r in again if r[0] == "md"}) < len({r for r in every if r[0] == "md"})


def test_a_build_prunes_what_no_run_uses_and_keeps_every_unit_it_took(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build drops the entries no run used once they are many (``Store.prune``), and keeps every
    entry of the team units it took whole from the store, though it read none of them (a block of
    one unit each here: its block's entry is read instead; marked only when the run prunes:
    ``units.unit_entries``)."""
    from compiler.pipeline import units
    from compiler.pipeline.run import Run, unit_keys
    from compiler.pipeline.units import unit_entries

    monkeypatch.setattr(units, "BLOCK", 1)
    cache = demo / CACHE_DIRNAME
    first = compile_policies(_opts(demo), Store(demo), objects=False)
    assert first.record is not None and len(first.record.units) == 5
    run = Run(_opts(demo), Store(demo))
    run.fingerprint()
    paths = {key: "/".join(shown.split("/")[-2:]) for key, shown in unit_keys(_opts(demo)).items()}

    def kinds_of(key: str) -> set[str]:  # the unit's entries, its table of verified objects among them
        return {kind for kind, entry in unit_entries(run.fp, f"policies/{paths[key]}", key)
                if (cache / kind / entry).exists()}

    before = {key: kinds_of(key) for key in first.record.units}
    assert all({"unit", "files", "blob", "rules", "verified"} <= kinds for kinds in before.values()), before
    for i in range(300):  # stale entries enough to prune
        (cache / "unit" / f"{i:032x}").write_bytes(b"stale")
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    second = compile_policies(_opts(demo), Store(demo), objects=False)
    assert second.cached == "partial" and second.record is not None
    assert not (cache / "unit" / f"{0:032x}").exists()  # pruned
    taken = [key for key in second.record.units if key in before]
    assert len(taken) == 4  # every team but vision, taken whole
    assert {key: kinds_of(key) for key in taken} == {key: before[key] for key in taken}


def test_the_store_is_weighed_and_the_oldest_unused_entries_go(tmp_path: Path) -> None:
    """``Store.prune(by_bytes=True)``: the unused entries go oldest first until they weigh at most
    twice the used ones (their count alone would keep them: 3 against 2 used); the weight of the
    used ones is noted and the count of bytes written since restarts. The count rule is as it was."""
    store = Store(tmp_path)
    for key in ("a" * 32, "b" * 32):
        store.put("unit", key, b"x" * 1000)  # used by this run: ~1 KB each
    stale = [f"{i:032x}" for i in range(3)]
    for i, key in enumerate(stale):  # unused, 3 KB each, the first the oldest
        (tmp_path / CACHE_DIRNAME / "unit" / key).write_bytes(b"y" * 3000)
        os.utime(tmp_path / CACHE_DIRNAME / "unit" / key, ns=(10**18 + i, 10**18 + i))
    store.prune(["unit"])  # 3 unused against 2 used: the count keeps them
    assert all((tmp_path / CACHE_DIRNAME / "unit" / k).exists() for k in stale)
    assert store.pressure() is False  # 2 KB written, far under the floor
    store.prune(["unit"], by_bytes=True)  # 9 KB unused against ~2 KB used: down to ~4 KB, oldest first
    assert [(tmp_path / CACHE_DIRNAME / "unit" / k).exists() for k in stale] == [False, False, True]
    live, since = (int(x) for x in (tmp_path / CACHE_DIRNAME / ".pruned").read_text().split())
    assert 2000 < live < 2200 and since == 0


def test_validate_weighs_a_heavy_store(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``validate`` (which never prunes by count, so that ``check`` finds the last build's units)
    prunes by weight once what runs wrote, its forked children's entries included, outweighs
    twice what a run uses: the store stops growing, and every result equals an empty store's."""
    import compiler.cache.weight as weighing

    _check(demo, "none")
    cache = demo / CACHE_DIRNAME

    def weight() -> int:
        return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())

    def validate() -> Result:
        inc = compile_policies(_opts(demo), Store(demo), objects=False, digests=False)
        full = compile_policies(_opts(demo), objects=False, digests=False)
        assert [str(d) for d in inc.diagnostics] == [str(d) for d in full.diagnostics]
        assert inc.repo_files == full.repo_files
        return inc

    sizes = []
    for i in range(6):  # edits that leave unused entries behind, the store under the floor
        mutate(demo, "teams/vision.yaml", f"guaranteed: {8 + i}", f"guaranteed: {9 + i}")
        validate()
        sizes.append(weight())
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # it only grows
    live, since = (int(x) for x in (cache / ".pruned").read_text().split())
    assert live == 0 and since > 0  # never weighed; the children's writes counted too (checked below)
    monkeypatch.setattr(weighing, "PRUNE_FLOOR", 1)
    mutate(demo, "teams/vision.yaml", "guaranteed: 14", "guaranteed: 15")
    validate()
    live, since = (int(x) for x in (cache / ".pruned").read_text().split())
    assert live > 0 and since == 0
    assert weight() < sizes[-1]  # weighed: the oldest unused entries went
    for i in range(15, 19):
        mutate(demo, "teams/vision.yaml", f"guaranteed: {i}", f"guaranteed: {i + 1}")
        validate()
        live, _ = (int(x) for x in (cache / ".pruned").read_text().split())
        assert weight() <= 3 * live + 64 * 1024, (weight(), live)  # ~3x what a run uses (and small files)
    _same(compile_policies(_opts(demo), Store(demo)), compile_policies(_opts(demo)))  # a build after it: right


def test_a_forked_childs_writes_are_weighed(tmp_path: Path) -> None:
    """Entries a forked child writes (the rules' process, the report parts) count towards the store's
    weight: the child adds them before it exits, the parent's own are counted once."""
    from compiler.cache.forked import _usable, in_child

    if not _usable():
        pytest.skip("no fork here: the child's work runs in this process")
    store = Store(tmp_path)
    store.put("unit", "p" * 32, b"p" * 1000)  # the parent's, before the fork

    def child() -> int:
        Store(tmp_path).put("blob", "c" * 32, os.urandom(50_000))  # incompressible: ~50 KB
        return 1

    assert in_child(child)() == 1
    store.pressure()
    _, since = (int(x) for x in (tmp_path / CACHE_DIRNAME / ".pruned").read_text().split())
    assert 51_000 < since < 52_000, since


def test_validate_weighs_then_check_through_the_cli(demo_repo: Path) -> None:
    """Through the console script: a `validate` that finds the store heavy (a `.pruned` file saying
    so, as a committed one could) weighs it, and the `check` after it still names exactly what the
    edit made stale; after a build it passes."""
    assert run_cli("build", cwd=demo_repo).returncode == 0
    mutate(demo_repo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    (demo_repo / CACHE_DIRNAME / ".pruned").write_text(f"1 {10**12}\n")
    assert run_cli("validate", cwd=demo_repo).returncode == 0
    live, since = (int(x) for x in (demo_repo / CACHE_DIRNAME / ".pruned").read_text().split())
    assert live > 1 and since == 0  # weighed
    r = run_cli("check", cwd=demo_repo)
    assert r.returncode == 1 and "out/onprem/kueue/clusterqueue._.vision.yaml" in r.stderr, r.stderr
    assert run_cli("build", cwd=demo_repo).returncode == 0
    assert run_cli("check", cwd=demo_repo).returncode == 0


def test_a_report_part_held_by_a_rules_process_that_dies_is_rendered_here(
        demo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The rules' process takes a report part and dies (killed for memory, say): ``in_child`` runs
    its work again in this process, where that part's task is gone, so this process renders every
    part itself instead of writing out/ without REPORT.md or allocation.json; the result is the
    uncached run's (``_check``)."""
    import compiler.pipeline.stages as stages
    from compiler.cache import forked

    if not forked._usable():
        pytest.skip("no usable fork here: the rules run in this process")
    _check(demo, "none")
    real, parent, died = stages.policy_unit, os.getpid(), tmp_path / "died"

    def dying(policy: Any, run: Any, tasks: Any, fragments: Any) -> Any:
        if os.getpid() != parent:
            if tasks.take() is not None:
                died.write_text("took a part")
            os._exit(1)
        return real(policy, run, tasks, fragments)

    monkeypatch.setattr(stages, "policy_unit", dying)
    mutate(demo, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")
    inc = _check(demo, "partial")
    assert died.exists() and {"REPORT.md", "allocation.json"} <= set(inc.out_digests)
