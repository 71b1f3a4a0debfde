"""Issue 18, faults: the cache can make things faster, never different; no fault changes a result.

Through the installed CLI: every kind of damage to ``.gpupolicy-cache/`` (flipped bytes, truncation,
swapped entries, garbage behind a valid prefix, the directory replaced by a file, entries that
cannot be read) gives the result of ``--no-cache`` with a one-line notice, never exit 2; an
``out/`` file edited in place at the same size with its mtime restored is stale for ``check``;
concurrent builds are serialised; a build killed at any moment leaves a tree the next build and
``check`` handle.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import gpupolicy_exe, run_cli

CACHE = ".gpupolicy-cache"


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in (root / CACHE).rglob("*") if p.is_file() and not p.name.startswith("."))


def _flip(root: Path) -> None:
    for p in _entries(root):
        data = bytearray(p.read_bytes())
        i = len(data) // 2
        data[i] ^= 0x55
        p.write_bytes(bytes(data))


def _truncate(root: Path) -> None:
    for p in _entries(root):
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2])


def _swap(root: Path) -> None:
    """Every entry gets another entry's bytes: one of its own kind where the kind has several,
    else one of another kind (a run answered from the store reads single entries: the result,
    the digests of out/)."""
    by_kind: dict[str, list[Path]] = {}
    for p in _entries(root):
        by_kind.setdefault(p.parent.name, []).append(p)
    singles = [paths[0] for paths in by_kind.values() if len(paths) == 1]
    for paths in [*(p for p in by_kind.values() if len(p) > 1), singles]:
        datas = [p.read_bytes() for p in paths]
        for p, data in zip(paths, datas[1:] + datas[:1]):
            p.write_bytes(data)


def _garbage(root: Path) -> None:
    for p in _entries(root):
        data = p.read_bytes()
        p.write_bytes(data[:24] + os.urandom(64) + data[24:])


def _file(root: Path) -> None:
    import shutil

    shutil.rmtree(root / CACHE)
    (root / CACHE).write_text("not a directory\n")


def _unreadable(root: Path) -> None:
    for p in _entries(root):  # a directory where an entry should be: open() fails (even as root)
        p.unlink()
        p.mkdir()


def _fifo(root: Path) -> None:
    for p in _entries(root):  # a FIFO nobody writes to: opening it must not wait for a writer
        p.unlink()
        os.mkfifo(p)


def _link(root: Path) -> None:
    for p in _entries(root):  # a link to the entry's own bytes moved aside: never followed
        aside = p.with_name(f".{p.name}.aside")
        p.rename(aside)
        p.symlink_to(aside.name)


FAULTS: dict[str, Callable[[Path], None]] = {
    "flip": _flip, "truncate": _truncate, "swap": _swap, "garbage": _garbage, "file": _file,
    "unreadable": _unreadable, "fifo": _fifo, "link": _link,
}


def _edit(root: Path, old: str, new: str) -> None:
    path = root / "policies" / "teams" / "vision.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _stale_lines(stderr: str) -> list[str]:
    return sorted(line for line in stderr.splitlines() if line.startswith("stale:"))


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_damaged_cache_changes_nothing(demo_repo: Path, fault: str) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0  # fills the cache
    assert run_cli("check", cwd=demo_repo).returncode == 0
    FAULTS[fault](demo_repo)
    r = run_cli("check", cwd=demo_repo)
    assert r.returncode == 0, (fault, r.stderr)  # no phantom stale files
    assert "internal error" not in r.stderr and "Errno" not in r.stderr
    if fault != "swap" or len(_entries(demo_repo)) > 1:
        assert "gpupolicy: notice: cache" in r.stderr or fault == "file", r.stderr
    _edit(demo_repo, "guaranteed: 8", "guaranteed: 9")
    if fault != "file":
        FAULTS[fault](demo_repo)  # damage the entries of the run after the edit too
    r = run_cli("check", cwd=demo_repo)
    ref = run_cli("check", "--no-cache", cwd=demo_repo)
    assert (r.returncode, _stale_lines(r.stderr)) == (ref.returncode, _stale_lines(ref.stderr)) == (1, _stale_lines(ref.stderr))
    assert "error[" not in r.stderr  # no diagnostics that are not in the files
    b = run_cli("build", cwd=demo_repo)
    assert b.returncode == 0 and "(updated)" in b.stderr, (fault, b.stderr)
    assert run_cli("check", cwd=demo_repo).returncode == 0


def test_edit_in_place_with_restored_mtime_is_stale(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    assert run_cli("check", cwd=demo_repo).returncode == 0
    target = next(p for p in sorted((demo_repo / "out").rglob("localqueue.*.yaml")))
    time.sleep(0.25)  # out of the racy window of the recorded state
    assert run_cli("check", cwd=demo_repo).returncode == 0
    st = target.stat()
    data = target.read_bytes()
    target.write_bytes(data.replace(b"name:", b"nAme:", 1))  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    r = run_cli("check", cwd=demo_repo)
    assert r.returncode == 1 and f"changed  {target.relative_to(demo_repo).as_posix()}" in r.stderr, r.stderr


def _popen(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.Popen([gpupolicy_exe(), *args], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_concurrent_builds_are_serialised(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    for n in range(9, 12):
        _edit(demo_repo, f"guaranteed: {n - 1}", f"guaranteed: {n}")
        procs = [_popen(demo_repo, "build") for _ in range(2)]
        results = [(p.communicate(timeout=300)[1], p.returncode) for p in procs]
        for err, code in results:
            assert code == 0, err
            assert "Errno" not in err and "internal error" not in err
        assert run_cli("check", cwd=demo_repo).returncode == 0
    assert not [p for p in demo_repo.iterdir() if p.name.startswith((".out.new-", ".out.old"))]


def test_kill_9_at_random_moments_leaves_a_tree_the_next_build_fixes(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    rng = random.Random(18)
    for n in range(9, 14):
        _edit(demo_repo, f"guaranteed: {n - 1}", f"guaranteed: {n}")
        p = _popen(demo_repo, "build")
        time.sleep(rng.uniform(0.05, 1.2))
        p.send_signal(signal.SIGKILL)  # a no-op when it already finished
        p.communicate(timeout=60)
        r = run_cli("build", cwd=demo_repo)
        assert r.returncode == 0, r.stderr
        assert "internal error" not in r.stderr and "Errno" not in r.stderr
        c = run_cli("check", cwd=demo_repo)
        assert c.returncode == 0, c.stderr
    assert not [p for p in demo_repo.iterdir() if p.name.startswith((".out.new-", ".out.old"))]


def test_a_read_only_cache_is_a_notice_not_an_error(demo_repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A cache on a read-only file system (simulated: root may write anywhere) is used for reading
    and never written; the build succeeds with one notice."""
    import builtins
    import errno

    from compiler.cli.main import main

    def read_only(file: str | os.PathLike[str], mode: str = "r", *args: object, **kwargs: object) -> object:
        if CACHE in str(file) and any(m in mode for m in "wax+"):
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return builtins.open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("compiler.cache.store.open", read_only, raising=False)
    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")
    _edit(demo_repo, "guaranteed: 8", "guaranteed: 9")
    assert main(["build", "--root", str(demo_repo)]) == 0
    err = capsys.readouterr().err
    assert "gpupolicy: notice: cache .gpupolicy-cache/: unwritable (Read-only file system)" in err, err
    assert main(["check", "--root", str(demo_repo), "--no-cache"]) == 0


def test_a_build_waits_for_the_lock_and_says_so(demo_repo: Path) -> None:
    import fcntl

    fd = os.open(demo_repo, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as if another build were running
        r = run_cli("build", cwd=demo_repo, env={"GPUPOLICY_LOCK_TIMEOUT": "1"})
        assert r.returncode == 2, r.stderr
        assert "another build or check is running in this repository; waiting" in r.stderr
        assert "still running" in r.stderr and "Errno" not in r.stderr
        c = run_cli("check", cwd=demo_repo, env={"GPUPOLICY_LOCK_TIMEOUT": "1"})
        assert c.returncode == 2 and "a build is running" in c.stderr
    finally:
        os.close(fd)
    assert run_cli("build", cwd=demo_repo).returncode == 0


def test_check_during_builds_never_sees_half_a_swap(demo_repo: Path) -> None:
    assert run_cli("build", cwd=demo_repo).returncode == 0
    for n in range(9, 11):
        _edit(demo_repo, f"guaranteed: {n - 1}", f"guaranteed: {n}")
        procs = [_popen(demo_repo, "build"), _popen(demo_repo, "check")]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode in (0, 1), err
            assert "Errno" not in err and "internal error" not in err, err


def test_a_foreign_cache_is_ignored(demo_repo: Path, tmp_path: Path) -> None:
    """A cache made on another machine (or committed in a pull request) has entries keyed with
    another machine's secret: none is trusted, and the result is that of a full compile."""
    mine, theirs = {"XDG_CACHE_HOME": str(tmp_path / "a")}, {"XDG_CACHE_HOME": str(tmp_path / "b")}
    assert run_cli("build", cwd=demo_repo, env=theirs).returncode == 0
    _edit(demo_repo, "guaranteed: 8", "guaranteed: 9")
    r = run_cli("check", cwd=demo_repo, env=mine)
    ref = run_cli("check", "--no-cache", cwd=demo_repo, env=mine)
    assert (r.returncode, _stale_lines(r.stderr)) == (ref.returncode, _stale_lines(ref.stderr))
    assert "corrupt or foreign entries ignored" in r.stderr, r.stderr
    assert (tmp_path / "a" / "gpupolicy" / "cache-key").stat().st_mode & 0o077 == 0


def test_no_place_for_the_cache_key_means_no_cache(demo_repo: Path, tmp_path: Path) -> None:
    (tmp_path / "not-a-dir").write_text("x")
    env = {"XDG_CACHE_HOME": str(tmp_path / "not-a-dir")}
    r = run_cli("build", cwd=demo_repo, env=env)
    assert r.returncode == 0 and "notice: cache .gpupolicy-cache/: not used: no writable" in r.stderr, r.stderr
    assert run_cli("check", cwd=demo_repo, env=env).returncode == 0


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_damaged_cache_changes_no_diff_or_explain(demo_repo: Path, fault: str) -> None:
    """Issue 21: ``diff --base`` (the base's units from the store, with their outlines) and
    ``explain`` (the rules' findings from the store) over a damaged cache say what ``--no-cache``
    says, with no traceback."""
    _git(demo_repo, "init", "-q", "-b", "main")
    _git(demo_repo, "add", "-A")
    _git(demo_repo, "commit", "-qm", "demo")
    _edit(demo_repo, "guaranteed: 8", "guaranteed: 9")
    commands = (("diff", "--base", "HEAD", "--format", "json"), ("explain", "vision"))
    for args in commands:  # fill the cache
        assert run_cli(*args, cwd=demo_repo).returncode == 0
    FAULTS[fault](demo_repo)
    for args in commands:
        got = run_cli(*args, cwd=demo_repo)
        ref = run_cli(*args, "--no-cache", cwd=demo_repo)
        assert (got.returncode, got.stdout) == (ref.returncode, ref.stdout) == (0, ref.stdout), (fault, got.stderr)
        assert "internal error" not in got.stderr and "Traceback" not in got.stderr
