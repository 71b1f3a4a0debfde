"""``scan_tree`` and ``record_tree``: the digests of ``out/`` from a stat per file, compared a
directory at a time, and the same guarantees as reading every file."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from compiler.cache import tree_state as store
from compiler.cache.store import content_digest
from compiler.cache.tree_state import NOT_REGULAR, record_tree, scan_tree
from compiler.emit.tree import read_tree, write_tree

FILES = {"a/x.yaml": b"1\n", "a/y.yaml": b"2\n", "b/z.yaml": b"3\n", "b/c/w.yaml": b"4\n", "top.md": b"5\n"}


def _settled(state: dict[str, Any] | None) -> dict[str, Any]:
    """The state as if recorded long after the files were written: none is inside the racy window."""
    assert state is not None
    return {**state, "at": time.time_ns() + 10**9}


def _truth(out: Path) -> dict[str, str]:
    return {rel: content_digest(data) for rel, data in read_tree(out).items()}


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"read {args[0]}")

    monkeypatch.setattr(store, "open", refuse, raising=False)  # the module's open, before the builtin


def test_an_unchanged_tree_is_answered_from_the_state_without_reading(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    digests, state = scan_tree(out, None)
    assert digests == _truth(out) and len(digests) == len(FILES)
    known = _settled(state)
    _no_reads(monkeypatch)
    assert scan_tree(out, known) == (digests, None)


def test_an_edit_in_place_at_the_same_size_and_mtime_is_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    known = _settled(scan_tree(out, None)[1])
    target = out / "b/c/w.yaml"
    before = target.stat()
    target.write_bytes(b"9\n")  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back: only ctime tells
    time.sleep(0.01)
    digests, state = scan_tree(out, known)
    assert digests["b/c/w.yaml"] == content_digest(b"9\n") and state is not None
    assert digests == _truth(out)


def test_links_special_files_and_kind_changes_are_reported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    known = _settled(scan_tree(out, None)[1])
    (out / "a/x.yaml").unlink()
    (out / "a/x.yaml").symlink_to(tmp_path / "elsewhere.yaml")  # dangling: never followed
    os.mkfifo(out / "a/pipe")
    (out / "top.md").unlink()
    (out / "top.md").mkdir()  # a file turned directory
    (out / "top.md" / "inner.yaml").write_bytes(b"6\n")
    for rel in ("b/c/w.yaml",):
        (out / rel).unlink()
    (out / "b/c").rmdir()
    (out / "b/c").write_bytes(b"a directory turned file\n")
    digests, state = scan_tree(out, known)
    assert digests["a/x.yaml"] == digests["a/pipe"] == NOT_REGULAR
    assert digests["top.md/inner.yaml"] == content_digest(b"6\n") and "top.md" not in digests
    assert digests["b/c"] == content_digest(b"a directory turned file\n") and "b/c/w.yaml" not in digests
    assert digests["a/y.yaml"] == content_digest(b"2\n")
    again, _ = scan_tree(out, _settled(state))  # the links stay reported from the recorded state
    assert again == digests


def test_a_state_of_another_format_is_ignored(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    old = {"at": time.time_ns() + 10**9, "dirs": {"a/": {"x.yaml": b"\0" * 32 + b"f" * 32}}}  # format 1
    digests, state = scan_tree(out, old)
    assert digests == _truth(out) and state is not None and state["format"] == store.STATE_FORMAT


def test_record_tree_trusts_what_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    written = {rel: content_digest(data) for rel, data in FILES.items()}
    _no_reads(monkeypatch)
    state, exact = record_tree(out, written)
    assert exact and scan_tree(out, _settled(state)) == (written, None)


def test_record_tree_reads_what_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    (out / "a/x.yaml").write_bytes(b"edited after the write\n")
    written = {rel: content_digest(data) for rel, data in FILES.items() if rel != "a/x.yaml"}
    state, exact = record_tree(out, written)
    assert not exact
    digests, _ = scan_tree(out, _settled(state))
    assert digests == _truth(out) and digests["a/x.yaml"] == content_digest(b"edited after the write\n")


def test_a_name_that_vanishes_after_the_listing_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(out, FILES)
    listdir = os.listdir
    monkeypatch.setattr(store.os, "listdir", lambda p: [*listdir(p), "gone.yaml"])
    digests, _ = scan_tree(out, None)
    assert digests == _truth(out)


def test_random_edits_give_what_reading_every_file_gives(tmp_path: Path) -> None:
    """Same-size edits, mtimes put back, swaps, deletions, new files and directories, links:
    after each round the scan, from the previous round's state, equals hashing every file."""
    rng = random.Random(7)
    out = tmp_path / "out"
    files = {f"d{i % 4}/f{i}.yaml": f"{i:04d}\n".encode() for i in range(40)}
    write_tree(out, files)
    state = scan_tree(out, None)[1]
    for _ in range(30):
        known = _settled(state)
        paths = sorted(p for p in out.rglob("*") if p.is_file() and not p.is_symlink())
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(["same-size", "grow", "swap", "delete", "add", "mkdir", "link"])
            p = rng.choice(paths)
            if not p.exists() or p.is_symlink():
                continue
            if op == "same-size":
                st = p.stat()
                p.write_bytes(bytes(reversed(p.read_bytes()[:-1])) + b"\n")
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
            elif op == "grow":
                with p.open("ab") as fh:
                    fh.write(b"# more\n")
            elif op == "swap":
                q = rng.choice(paths)
                if q.exists() and q != p and not q.is_symlink():
                    tmp = p.with_name(".swap")
                    p.rename(tmp)
                    q.rename(p)
                    tmp.rename(q)
            elif op == "delete":
                p.unlink()
            elif op == "add":
                (p.parent / f"new{rng.randint(0, 999)}.yaml").write_bytes(b"new\n")
            elif op == "mkdir":
                d = p.parent / f"sub{rng.randint(0, 9)}"
                d.mkdir(exist_ok=True)
                (d / "n.yaml").write_bytes(rng.randbytes(5))
            else:
                link = p.parent / f"link{rng.randint(0, 9)}.yaml"
                if not os.path.lexists(link):
                    link.symlink_to(p.name)
        digests, new = scan_tree(out, known)
        expected = _truth(out)
        expected.update({rel: NOT_REGULAR for rel in (p.relative_to(out).as_posix() for p in out.rglob("*"))
                         if (out / rel).is_symlink()})
        assert digests == expected
        state = new if new is not None else known


def test_the_scan_after_a_recorded_write_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``record_tree`` takes its stats once the racy window has passed, so the ``check`` right after
    a build trusts every file (no state left to record); a file changed between the write and the
    recording is read, not given the digest it was written with."""
    out = tmp_path / "out"
    write_tree(out, FILES)
    digests = {rel: content_digest(data) for rel, data in FILES.items()}
    state, _ = record_tree(out, digests)
    with monkeypatch.context() as m:
        _no_reads(m)
        found, new = scan_tree(out, state)
    assert found == digests and new is None

    write_tree(out, {**FILES, "a/x.yaml": b"9\n"})
    changed = {**digests, "a/x.yaml": content_digest(b"9\n")}
    real_sleep = time.sleep

    def edit_meanwhile(seconds: float) -> None:  # someone edits a file while the build records
        real_sleep(0.02)  # past the kernel's coarse clock tick (file times lag time_ns by up to one)
        (out / "b/z.yaml").write_bytes(b"7\n")
        real_sleep(seconds)

    monkeypatch.setattr(store.time, "sleep", edit_meanwhile)
    state, exact = record_tree(out, changed)
    monkeypatch.undo()
    assert not exact
    found, _ = scan_tree(out, state)
    assert found == _truth(out) and found["b/z.yaml"] == content_digest(b"7\n")


def _shared(out: Path, known: dict[str, Any] | None, split: list[int]) -> Any:
    """``scan_tree`` as two processes share it: the first share walks the root and the subtrees
    whose indexes ``split`` lists, the second the others (both take from one queue, in order)."""
    from compiler.cache.tree_state import joined_shares, scan_share, top_dirs

    tops = top_dirs(out)
    first = [i for i in range(len(tops)) if i in split]
    second = [i for i in range(len(tops)) if i not in split]
    a, _ = scan_share(out, known, tops, lambda: first.pop(0) if first else None, with_root=True)
    b, _ = scan_share(out, known, tops, lambda: second.pop(0) if second else None, with_root=False)
    return joined_shares(known, [a, b], tops)


@pytest.mark.parametrize("split", [[], [0], [1], [0, 1], [0, 2]])
def test_a_scan_shared_by_two_processes_is_the_scan(tmp_path: Path, split: list[int]) -> None:
    """However the subtrees are shared, the joined shares are ``scan_tree``'s answer: unchanged
    (no new state), after an edit in place, after a file added and one removed, after a subtree
    added and one removed."""
    out = tmp_path / "out"
    write_tree(out, {**FILES, "d/v.yaml": b"6\n"})
    assert _shared(out, None, split)[0] == scan_tree(out, None)[0]
    known = _settled(scan_tree(out, None)[1])
    assert _shared(out, known, split) == scan_tree(out, known) == (_truth(out), None)
    (out / "b/c/w.yaml").write_bytes(b"7\n")
    (out / "a/new.yaml").write_bytes(b"8\n")
    (out / "a/x.yaml").unlink()
    time.sleep(0.01)
    got, want = _shared(out, known, split), scan_tree(out, known)
    assert got[0] == want[0] == _truth(out) and got[1] is not None and want[1] is not None
    assert got[1]["dirs"] == want[1]["dirs"]
    known = _settled(want[1])
    (out / "e").mkdir()
    (out / "e/u.yaml").write_bytes(b"9\n")
    for rel in ("d/v.yaml",):
        (out / rel).unlink()
    (out / "d").rmdir()
    time.sleep(0.01)
    got, want = _shared(out, known, split), scan_tree(out, known)
    assert got[0] == want[0] == _truth(out) and got[1]["dirs"] == want[1]["dirs"]


def test_a_share_lost_or_a_tree_moved_is_scanned_whole(tmp_path: Path) -> None:
    """A subtree in no share (a child that failed after taking it), or a root whose subdirectories
    are no longer those the shares were planned with, gives no joined answer: the caller scans
    the tree whole."""
    from compiler.cache.tree_state import joined_shares, scan_share, top_dirs

    out = tmp_path / "out"
    write_tree(out, FILES)
    tops = top_dirs(out)
    root, _ = scan_share(out, None, tops, lambda: None, with_root=True)  # the subtrees' share lost
    assert joined_shares(None, [root], tops) is None
    (out / "f").mkdir()  # a subdirectory the plan does not know
    moved, _ = scan_share(out, None, tops, lambda: None, with_root=True)
    assert moved[3] is True


@pytest.mark.parametrize("fork", [True, False])
def test_check_and_build_through_the_shared_scan(demo_repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                 fork: bool) -> None:
    """``check`` and ``build`` with the scan forked (the child usually takes every subtree) and in
    one process (this process takes them all before the scan's own share runs): an edit in place
    in ``out/`` is found, and the build repairs it."""
    import subprocess

    from conftest import gpupolicy_exe

    env = {**os.environ}
    if not fork:
        env["GPUPOLICY_NO_FORK"] = "1"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([gpupolicy_exe(), *args, "--root", str(demo_repo)], capture_output=True, text=True,
                              env=env, cwd=demo_repo)

    assert run("build").returncode == 0
    assert run("check").returncode == 0
    target = next(p for p in sorted((demo_repo / "out").rglob("*.yaml")))
    target.write_text(target.read_text() + "# edited\n")
    done = run("check")
    assert done.returncode == 1 and str(target.relative_to(demo_repo)) in done.stderr
    assert run("build").returncode == 0 and run("check").returncode == 0


def _parts(st: Any, key: str) -> dict[str, str]:
    index = st.get("outstate", key)
    assert isinstance(index, dict)
    parts: dict[str, str] = index["parts"]
    return parts


def test_the_state_is_kept_a_top_directory_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded state is an index and one entry per top directory (``_Parts``): a process
    that scans some subtrees reads their parts and no other; a part as recorded is not written
    again and a part no longer named is discarded; a part gone from the store only costs reading
    its files again, never a wrong digest."""
    from compiler.cache.store import Store, digest
    from compiler.cache.tree_state import scan_share, top_dirs
    from compiler.cli import out_tree

    out, st = tmp_path / "out", Store(tmp_path)
    write_tree(out, {**FILES, "d/v.yaml": b"6\n"})
    key = out_tree._state_key(out)
    legacy = digest("outstate", str(store.STATE_FORMAT), str(out.resolve()))  # the whole state, as kept before
    st.put("outstate", legacy, {"format": store.STATE_FORMAT, "at": 0, "dirs": {}})
    out_tree._put_state(st, out, _settled(scan_tree(out, None)[1]))
    assert legacy != key and st.get("outstate", legacy) is None
    parts = _parts(st, key)
    assert sorted(parts) == ["", "a", "b", "d"] and st.keys("outpart") == set(parts.values())

    read: list[str] = []
    get = Store.get

    def reading(self: Store, kind: str, k: str) -> Any:
        if kind == "outpart":
            read.append(k)
        return get(self, kind, k)

    monkeypatch.setattr(Store, "get", reading)
    known = out_tree._known(out, st)
    tops = top_dirs(out)
    given = [tops.index("b")]
    share, _ = scan_share(out, known, tops, lambda: given.pop() if given else None, with_root=False)
    assert share[1] and sorted(share[2]) == ["b/", "b/c/"] and read == [parts["b"]]  # b's part alone
    monkeypatch.setattr(Store, "get", get)

    written: list[str] = []
    put = Store.put

    def writing(self: Store, kind: str, k: str, v: Any, **kw: Any) -> None:
        written.append(kind)
        put(self, kind, k, v, **kw)

    monkeypatch.setattr(Store, "put", writing)
    (out / "a/x.yaml").write_bytes(b"changed\n")
    time.sleep(0.01)
    digests, state = scan_tree(out, out_tree._known(out, st))
    assert digests == _truth(out) and state is not None
    out_tree._put_state(st, out, _settled(state))
    assert sorted(written) == ["outpart", "outstate"]  # a's part alone, and the index
    now = _parts(st, key)
    assert now["b"] == parts["b"] and now["a"] != parts["a"] and st.keys("outpart") == set(now.values())

    st.discard("outpart", now["b"])  # gone: b's files are read again, the digests stay true
    assert scan_tree(out, out_tree._known(out, st))[0] == _truth(out)


def test_a_summary_needs_no_digest_when_every_share_is_as_recorded(tmp_path: Path) -> None:
    """``_as_written``: a tree a build recorded as its output, found as recorded by every share,
    is answered as the build's output; a share that found a change, moved, or a directory the
    shares did not cover gives no answer (the digests are compared)."""
    from compiler.cache.store import Store
    from compiler.cli import out_tree

    out, st = tmp_path / "out", Store(tmp_path)
    write_tree(out, FILES)
    key = out_tree._state_key(out)
    state = _settled(scan_tree(out, None)[1])
    out_tree._put_state(st, out, state)
    st.put("written", key, ("run", 5))
    known = out_tree._known(out, st)
    every = list(state["dirs"])
    assert out_tree._as_written(out, st, True, known, [(True, False, every)]) == ("written", ("run", 5))
    assert out_tree._as_written(out, st, True, known, [(True, False, every[:1]), (True, False, every[1:])]) \
        == ("written", ("run", 5))
    assert out_tree._as_written(out, st, False, known, [(True, False, every)]) is None  # digests asked
    assert out_tree._as_written(out, st, True, known, [(False, False, every)]) is None
    assert out_tree._as_written(out, st, True, known, [(True, True, every)]) is None
    assert out_tree._as_written(out, st, True, known, [(True, False, every[1:])]) is None
    assert out_tree._as_written(out, st, True, None, [(True, False, every)]) is None
    st.discard("written", key)
    assert out_tree._as_written(out, st, True, known, [(True, False, every)]) is None


def test_states_of_output_directories_gone_are_forgotten(tmp_path: Path) -> None:
    """Keeping a state drops the states of output directories that no longer exist (the repository
    or its out/ moved): their index, parts and "written" mark; another output directory that
    still exists keeps its own, and an index that names no directory (an earlier version's)
    goes."""
    from compiler.cache.store import Store
    from compiler.cli import out_tree

    st = Store(tmp_path)
    out, other, gone = tmp_path / "out", tmp_path / "other", tmp_path / "gone"
    for d in (out, other, gone):
        write_tree(d, FILES)
        out_tree._put_state(st, d, _settled(scan_tree(d, None)[1]))
        st.put("written", out_tree._state_key(d), ("run", 1))
    kept_parts = set(_parts(st, out_tree._state_key(other)).values())
    gone_parts = set(_parts(st, out_tree._state_key(gone)).values())
    nameless = "0" * 32
    st.put("outstate", nameless, {"format": store.STATE_FORMAT, "at": 0, "parts": {}, "dirs": []})
    for path in sorted(gone.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    gone.rmdir()

    out_tree._put_state(st, out, _settled(scan_tree(out, None)[1]))
    keys = {out_tree._state_key(d) for d in (out, other)}
    assert st.keys("outstate") == keys and st.keys("written") == keys
    assert kept_parts <= st.keys("outpart") and not gone_parts & st.keys("outpart")
    assert st.keys("outpart") == {p for k in keys for p in _parts(st, k).values()}
