"""Fuzzing through the installed CLI, the cache and the file system (issue 18).

Each example takes a fresh copy of the demo repository after a build (so the cache is warm), then
applies one to three random faults: a policy file replaced by a symbolic link, FIFO or directory,
bytes of a policy file mutated, a boolean, a deep nesting or a credential injected, a hostile file
name; cache entries flipped, truncated, swapped or replaced; ``out/`` given a link, an edit at the
same size with its mtime restored, a killed build's staging tree, a missing file. Then ``build``
and ``check`` run through the console script. Properties:

- exit 0 or 1, never 2, never a traceback, an internal error or a raw errno;
- a failed build leaves ``out/`` exactly as it was;
- the cached run and the ``--no-cache`` run agree (exit code and stale files);
- after a successful build, ``check`` passes.

``make test`` runs a handful of examples; ``make fuzz`` runs GPUPOLICY_FUZZ_EXAMPLES (default
10,000) — at a few seconds per example, hours: the documented number, run when there is time.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LARGE = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "0"))
EXAMPLES = LARGE or 4

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"


def _policy_fault(root: Path, rnd: random.Random) -> None:
    teams = sorted(p for p in (root / "policies" / "teams").glob("*.yaml") if p.is_file() and not p.is_symlink())
    if not teams:  # an earlier fault replaced them all
        return
    target = rnd.choice(teams)
    op = rnd.randrange(9)
    if op == 0:
        target.unlink()
        target.symlink_to(rnd.choice(["/etc/passwd", "/nonexistent", teams[0].name]))
    elif op == 1:
        target.unlink()
        os.mkfifo(target)
    elif op == 2:
        (root / "policies" / "teams" / f"d{rnd.randrange(9)}.yaml").mkdir(exist_ok=True)
    elif op == 3:
        raw = bytearray(target.read_bytes())
        for _ in range(rnd.randrange(1, 4)):
            pos = rnd.randrange(len(raw))
            raw[pos:pos + rnd.randrange(1, 4)] = rnd.choice([b"\t", b":", b"- ", b"\n  ", b"&a", b"*a", b"\xff",
                                                             b"{", b"'", b"---\n", b"[" * 200, b"true", b""])
        target.write_bytes(bytes(raw))
    elif op == 4:
        text = target.read_text()
        target.write_text(text.replace("guaranteed: ", "guaranteed: true #", 1))
    elif op == 5:
        text = target.read_text()
        target.write_text(text.replace("  groups: [", f'  groups: ["{TOKEN}", ', 1))
    elif op == 6:
        (root / "policies" / "teams" / "x\n::add-mask::y\x1b.yaml").write_text("kind: Team\n")
    elif op == 7:
        shutil.copy(target, root / "policies" / "teams" / "copy.yaml")  # a team file defining another team
    else:
        text = target.read_text()
        target.write_text(text.replace("guaranteed: 8", "guaranteed: 9", 1).replace("guaranteed: 16", "guaranteed: 12", 1))


def _cache_fault(root: Path, rnd: random.Random) -> None:
    cache = root / ".gpupolicy-cache"
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and not p.name.startswith("."))
    if not entries:
        return
    op = rnd.randrange(5)
    picked = rnd.sample(entries, min(len(entries), rnd.randrange(1, 6)))
    for p in picked:
        data = p.read_bytes()
        if op == 0 and data:
            b = bytearray(data)
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            p.write_bytes(bytes(b))
        elif op == 1:
            p.write_bytes(data[: rnd.randrange(len(data) + 1)])
        elif op == 2:
            p.write_bytes(rnd.choice(entries).read_bytes())
        elif op == 3:
            p.write_bytes(data[:20] + os.urandom(rnd.randrange(1, 64)))
    if op == 4:
        shutil.rmtree(cache)
        cache.write_text("x")


def _out_fault(root: Path, rnd: random.Random) -> None:
    out = root / "out"
    files = sorted(p for p in out.rglob("*.yaml") if p.is_file())
    op = rnd.randrange(4)
    if op == 0:
        (out / f"link{rnd.randrange(10**9)}.yaml").symlink_to(rnd.choice(files))
    elif op == 1:
        p = rnd.choice(files)
        st_ = p.stat()
        data = p.read_bytes()
        p.write_bytes(data[:-2] + b"x\n")
        os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    elif op == 2:
        (root / f".out.new-{rnd.randrange(10**8, 10**9)}-zz" / "a").mkdir(parents=True, exist_ok=True)
    else:
        rnd.choice(files).unlink()


def _tree(root: Path) -> dict[str, bytes]:
    out = root / "out"
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and not p.is_symlink()}


def _sane(r: object) -> None:
    code, err = getattr(r, "returncode"), getattr(r, "stderr")
    assert code in (0, 1), err
    assert "Traceback" not in err and "internal error" not in err and "Errno" not in err, err


def _stale(err: str) -> list[str]:
    return sorted(line for line in err.splitlines() if line.startswith("stale:"))


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository, built once, with its cache."""
    root = tmp_path_factory.mktemp("fuzzcli") / "repo"
    root.mkdir()
    shutil.copytree(REPO / "policies", root / "policies")
    r = run_cli("build", cwd=root)
    assert r.returncode == 0, r.stderr
    return root


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LARGE)
@given(seed=st.integers(0, 2**32 - 1), faults=st.lists(st.sampled_from(["policy", "cache", "out"]), min_size=1,
                                                         max_size=3))
def test_faults_through_the_cli(warm: Path, tmp_path_factory: pytest.TempPathFactory, seed: int,
                                faults: list[str]) -> None:
    rnd = random.Random(seed)
    root = tmp_path_factory.mktemp("ex") / "repo"
    shutil.copytree(warm, root, symlinks=True)
    for fault in faults:
        {"policy": _policy_fault, "cache": _cache_fault, "out": _out_fault}[fault](root, rnd)
    cached = run_cli("check", cwd=root)
    fresh = run_cli("check", "--no-cache", cwd=root)
    _sane(cached)
    _sane(fresh)
    assert (cached.returncode, _stale(cached.stderr)) == (fresh.returncode, _stale(fresh.stderr)), (faults, seed)
    before = _tree(root)
    b = run_cli("build", cwd=root)
    _sane(b)
    if b.returncode == 0:
        c = run_cli("check", cwd=root)
        assert c.returncode == 0, (faults, seed, c.stderr)
        assert not [p for p in root.iterdir() if p.name.startswith((".out.new-", ".out.old"))]
    else:
        assert _tree(root) == before
    shutil.rmtree(root.parent, ignore_errors=True)
