"""``gpupolicy diff --base`` at the cost of the change (issue 21): the base tree written from git's
objects, the base compiled in a child process, the units both sides share left out of the
comparison. Each shortcut gives the report computed from every object."""

from __future__ import annotations

import io
import marshal
import os
import subprocess
import tarfile
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from conftest import CRDS, REPO
from helpers import copy_demo, mutate
from test_incremental import _reference_diff

from compiler.cache.store import Store
from compiler.diagnostics import UsageError
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.tools.diff import Side, compile_side, run_diff
from compiler.tools.diff_base import extract_base
from compiler.tools.diff_flags import find_flags

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENV}).stdout


def _opts(root: Path) -> Options:
    return Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=CRDS, strict=False, verify=True)


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every file under ``root`` by relative path: its bytes, or ``-> target`` for a link."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = f"-> {os.readlink(p)}"
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


def test_extract_base_writes_what_git_archive_holds(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    pol = root / "policies"
    (pol / "teams" / "nested dir").mkdir(parents=True)
    (pol / "fleet.yaml").write_text("kind: Fleet\n")
    (pol / "teams" / "a.yaml").write_text("a: 1\n")
    (pol / "teams" / "nested dir" / "b ü.yaml").write_text("b: 2\n")
    (pol / "teams" / "run.sh").write_text("#!/bin/sh\n")
    (pol / "teams" / "run.sh").chmod(0o755)
    os.symlink("a.yaml", pol / "teams" / "link.yaml")
    (root / "README").write_text("outside the policy directory\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (pol / "teams" / "a.yaml").write_text("a: changed in the work tree\n")
    (pol / "teams" / "new.yaml").write_text("new: 1\n")

    base_root, base_policy, existed = extract_base(root, pol, "HEAD", tmp_path / "mine")
    assert existed and base_root == tmp_path / "mine" and base_policy == tmp_path / "mine" / "policies"
    archive = git(root, "archive", "--format=tar", "HEAD", "--", "policies")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp_path / "archive", filter="data")
    assert _tree(tmp_path / "mine") == _tree(tmp_path / "archive")
    assert _tree(tmp_path / "mine")["policies/teams/a.yaml"] == b"a: 1\n"  # the commit's, not the work tree's
    assert "README" not in _tree(tmp_path / "mine")

    git(root, "mv", "policies", "rules")
    git(root, "commit", "-qm", "moved")
    _, _, existed = extract_base(root, root / "rules", "HEAD~1", tmp_path / "none")
    assert not existed
    with pytest.raises(UsageError, match="unknown git revision"):
        extract_base(root, root / "rules", "no-such-ref", tmp_path / "bad")


def test_flags_with_a_common_part_equal_flags_with_it_on_both_sides() -> None:
    """``find_flags(base, head, common)`` == ``find_flags(base | common, head | common)``, over
    the demo's objects with queues removed and repointed and flavors gone."""
    from compiler.cache.records import outline_in, outline_out

    res = compile_policies(replace(_opts(REPO), crds=None, verify=False))
    objects = {m.relpath: m for m in res.manifests}
    kueue = [p for p, m in objects.items() if m.kind in ("ClusterQueue", "LocalQueue", "ResourceFlavor")]
    assert len(kueue) > 6
    # the common part: every other object (as outlines, which is what diff passes); the rest differ
    common = {}
    for p in sorted(objects)[::2]:
        o = outline_out(objects[p])
        common[p] = objects[p] if o is None else outline_in(o)[1]
    base = {p: m for p, m in objects.items() if p not in common}
    head = {p: m for p, m in base.items() if m.kind != "ResourceFlavor" and p not in kueue[:3]}
    flags = find_flags(base, head, common)
    assert flags == find_flags({**base, **common}, {**head, **common})
    assert {f.kind for f in flags} >= {"in-use", "dangling"}
    assert find_flags(base, base, common) == find_flags({**base, **common}, {**base, **common}) == []


def _repo(tmp_path: Path) -> Path:
    root = copy_demo(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "demo")
    return root


def test_side_crosses_the_process_boundary_whole(tmp_path: Path) -> None:
    """The base side is computed in a child and sent as marshal data: nothing the report reads
    is lost on the way."""
    root = _repo(tmp_path)
    side = compile_side(_opts(root), Store(root))
    assert side.ok and side.objects and side.digests
    back = Side.of(marshal.loads(marshal.dumps(side.plain())))
    assert back.ok
    assert {p: (m.cluster, m.component, m.obj, m.sources) for p, m in back.objects.items()} == \
        {p: (m.cluster, m.component, m.obj, m.sources) for p, m in side.objects.items()}
    assert back.digests == side.digests
    assert dict(back.files) == {p: side.files[p] for p in side.digests}
    assert back.facts == side.facts and side.facts is not None and side.facts.detail


def _cases(root: Path) -> list[str]:
    """HEAD~2: the demo (its fleet differs: no unit shared); HEAD~1: the fleet's defaults and one
    team changed; HEAD: that team's budget again; the work tree: another team's serving."""
    mutate(root, "fleet.yaml", "      guaranteed: 0\n      lend: unlimited", "      guaranteed: 0\n      lend: 0")
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 12")
    git(root, "commit", "-qam", "fleet and vision")
    mutate(root, "teams/vision.yaml", "guaranteed: 12", "guaranteed: 10")
    git(root, "commit", "-qam", "vision again")
    mutate(root, "teams/search.yaml", "tpotP95Ms: 40", "tpotP95Ms: 45")
    return ["HEAD", "HEAD~1", "HEAD~2"]


def test_diff_equals_the_full_diff_with_and_without_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a base that shares every unit but one, and against one whose fleet differs (it
    shares none): the report equals the one built from every object of both sides, whether the
    base compiles in a child process, here after the work tree (a base that differs in many
    units: ``SMALL_BASE``), or here because fork is not to be used."""
    import compiler.tools.diff as diff

    root = _repo(tmp_path)
    refs = _cases(root)
    opts = _opts(root)
    expected = {ref: asdict(_reference_diff(opts, ref)) for ref in refs}
    assert expected["HEAD~2"]["fleet"] and expected["HEAD"]["teams"] and expected["HEAD~1"]["teams"]
    compile_policies(opts, Store(root))  # check fills the store
    for how in ("child", "large base", "no fork"):
        if how == "large base":
            monkeypatch.setattr(diff, "SMALL_BASE", 0)
        if how == "no fork":
            monkeypatch.setattr(diff, "SMALL_BASE", 64)
            monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")
        for ref in refs:
            report, _ = run_diff(opts, ref)
            assert report is not None and asdict(report) == expected[ref], (ref, how)


def test_base_that_does_not_compile_shows_every_file_added(tmp_path: Path) -> None:
    """Units the two trees share are left out of the comparison only when the base compiled:
    against a broken base every file of the work tree is new, theirs included."""
    root = _repo(tmp_path)
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: [8]")  # a schema error
    git(root, "commit", "-qam", "broken")
    mutate(root, "teams/vision.yaml", "guaranteed: [8]", "guaranteed: 8")
    opts = _opts(root)
    full = compile_policies(opts, reports=False)  # what diff compares: no REPORT.md or allocation.json
    assert full.ok
    compile_policies(opts, Store(root))
    report, _ = run_diff(opts, "HEAD")
    assert report is not None and report.base_note and "do not compile" in report.base_note
    assert report.added == ["out/" + p for p in sorted(full.out_digests)]
    assert not report.removed and not report.modified
    assert full.policy is not None
    assert [t.team for t in report.teams] == sorted(t.name for t in full.policy.teams)
    assert {t.status for t in report.teams} == {"added"}


def test_a_second_diff_against_the_same_base_reads_it_from_the_store(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The base side is kept by everything it was computed from: the next diff against the same
    commit (the work tree changed again in the same team file) does not compile it, and gives the
    same report; a corrupt entry, another date or another shared set compiles it again."""
    import compiler.tools.diff as diff
    from compiler.cache.store import CACHE_DIRNAME

    root = _repo(tmp_path)
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 9")
    opts = _opts(root)
    first, _ = run_diff(opts, "HEAD")
    assert first is not None and first.teams
    entries = list((root / CACHE_DIRNAME / "diffbase").iterdir())
    assert len(entries) == 1
    mutate(root, "teams/vision.yaml", "guaranteed: 9", "guaranteed: 10")  # the same team file again
    expected = asdict(_reference_diff(opts, "HEAD"))
    real_base_side = diff.base_side

    def not_compiled(*args: object) -> tuple[object, ...]:
        raise AssertionError("the base was compiled again")

    monkeypatch.setattr(diff, "base_side", not_compiled)
    report, _ = run_diff(opts, "HEAD")
    assert report is not None and asdict(report) == expected
    monkeypatch.setattr(diff, "base_side", real_base_side)
    entries[0].write_bytes(entries[0].read_bytes()[:-7] + b"garbage")  # a corrupt entry: computed again
    report, _ = run_diff(opts, "HEAD")
    assert report is not None and asdict(report) == expected
    monkeypatch.setenv("GPUPOLICY_TODAY", "2031-01-01")  # waivers may have expired: computed again
    monkeypatch.setattr(diff, "base_side", not_compiled)
    with pytest.raises(AssertionError, match="compiled again"):
        run_diff(opts, "HEAD")
    monkeypatch.delenv("GPUPOLICY_TODAY")
    mutate(root, "teams/search.yaml", "tpotP95Ms: 40", "tpotP95Ms: 45")  # one unit fewer shared
    with pytest.raises(AssertionError, match="compiled again"):
        run_diff(opts, "HEAD")


def test_the_base_is_written_to_memory_only_with_room_and_no_tmpdir(monkeypatch: pytest.MonkeyPatch) -> None:
    import compiler.tools.diff_base as diff

    monkeypatch.delenv("TMPDIR", raising=False)
    if diff.scratch_dir() is None:
        pytest.skip("no writable /dev/shm with room here")
    monkeypatch.setattr(diff, "SCRATCH_FREE", 1 << 60)  # a small /dev/shm (a container's 64 MiB)
    assert diff.scratch_dir() is None
    monkeypatch.setattr(diff, "SCRATCH_FREE", 0)
    monkeypatch.setenv("TMPDIR", "/somewhere")  # the user's choice wins
    assert diff.scratch_dir() is None
