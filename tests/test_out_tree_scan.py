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
