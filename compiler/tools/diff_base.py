"""The base revision of ``gpupolicy diff --base REF``: its policy directory written from git's
objects (``git ls-tree`` and one ``git cat-file --batch``), in RAM when the system has room.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

from compiler.cache.store import digest
from compiler.diagnostics import UsageError
from compiler.load.paths import display_path
from compiler.pipeline.options import Options

__all__ = ["SCRATCH_FREE", "extract_base", "scratch_dir", "side_options", "write_base"]


def _git(repo: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, timeout=120)


SCRATCH_FREE = 512 << 20  # bytes free on /dev/shm to write there (Docker gives containers 64 MiB)


def scratch_dir() -> str | None:
    """Where the base tree is written: a RAM-backed directory when the system has one with room
    and ``TMPDIR`` names none (writing 1,000 team files took 0.44 s on this VM's ext4 ``/tmp``,
    0.025 s on tmpfs ``/dev/shm``), else the default temporary directory."""
    shm = "/dev/shm"
    if os.environ.get("TMPDIR") or not os.path.isdir(shm) or not os.access(shm, os.W_OK | os.X_OK):
        return None
    try:
        free = os.statvfs(shm)
    except OSError:
        return None
    return shm if free.f_bavail * free.f_frsize >= SCRATCH_FREE else None


def side_options(opts: Options, root: Path, policy_dir: Path) -> Options:
    """The command's options for a tree at ``root``: the same keys as ``check`` there, so the
    units it stored serve both sides."""
    out = Path(display_path(opts.out_dir, opts.root))
    return replace(opts, root=root, policy_dir=policy_dir, out_dir=root / out)


def _blobs(top: Path, shas: list[bytes]) -> list[bytes]:
    """The contents of ``shas``, in order, from one ``git cat-file --batch``: each answer is
    ``<oid> SP <type> SP <size> LF <contents> LF``, or ``<object> SP missing LF`` (git/git
    v2.39.5, Documentation/git-cat-file.txt, "BATCH OUTPUT")."""
    if not shas:
        return []
    done = _git(top, "cat-file", "--batch", data=b"".join(s + b"\n" for s in shas))
    if done.returncode != 0:
        raise UsageError(f"git cat-file failed: {done.stderr.decode(errors='replace').strip()}")
    out, pos, found = done.stdout, 0, []
    for sha in shas:
        eol = out.find(b"\n", pos)
        header = out[pos:eol].split(b" ")
        if eol < 0 or len(header) != 3:
            raise UsageError(f"git cat-file: no object {sha.decode()}")
        size = int(header[2])
        found.append(out[eol + 1:eol + 1 + size])
        pos = eol + 2 + size
    return found


def extract_base(root: Path, policy_dir: Path, ref: str, dest: Path) -> tuple[Path, Path, bool]:
    """Write ``policy_dir`` as of ``ref`` under ``dest``; returns (root, policy dir, existed)."""
    base_root, base_policy, tree = write_base(root, policy_dir, ref, dest)
    return base_root, base_policy, tree is not None


def write_base(root: Path, policy_dir: Path, ref: str, dest: Path) -> tuple[Path, Path, str | None]:
    """``extract_base``, with the identity of what was written (a digest of git's listing of
    the directory: every path, mode and blob id), None when ``ref`` has no policy directory.

    The files come from ``git ls-tree -r -z`` (``<mode> SP <type> SP <object> TAB <file>``, NUL
    after each: git/git v2.39.5, Documentation/git-ls-tree.txt, "OUTPUT FORMAT") and one ``git
    cat-file --batch`` (Python's ``tarfile`` took ~0.6 s to unpack a ``git archive`` of 1,000
    team files); a symbolic link is written as one, for the loader to judge (LOAD009) as it
    would in the work tree; submodules (type ``commit``) are skipped, as are attributes
    (``export-ignore``): the base is the commit's bytes."""
    top_p = _git(root, "rev-parse", "--show-toplevel")
    if top_p.returncode != 0:
        raise UsageError(f"{root} is not inside a git repository: {top_p.stderr.decode().strip()}")
    top = Path(top_p.stdout.decode().strip()).resolve()
    commit_p = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit_p.returncode != 0:
        raise UsageError(f"unknown git revision {ref!r}")
    commit = commit_p.stdout.decode().strip()
    try:
        rel_policy = policy_dir.resolve().relative_to(top).as_posix()
        rel_root = root.resolve().relative_to(top).as_posix()
    except ValueError as exc:
        raise UsageError(f"{policy_dir} is not inside the git repository {top}") from exc
    base_root = dest / rel_root if rel_root != "." else dest
    base_policy = dest / rel_policy
    listing = _git(top, "ls-tree", "-r", "-z", commit, "--", rel_policy)
    if listing.returncode != 0:
        raise UsageError(f"git ls-tree failed: {listing.stderr.decode(errors='replace').strip()}")
    if not listing.stdout:  # git keeps no empty directories: nothing listed, no directory
        return base_root, base_policy, None
    entries: list[tuple[bytes, bytes, str]] = []  # (mode, blob id, path relative to the top)
    for record in listing.stdout.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        mode, kind, sha = (meta.split(b" ") + [b"", b""])[:3]
        if kind == b"blob":
            entries.append((mode, sha, os.fsdecode(name)))
    made: set[Path] = set()
    for (mode, _, rel), data in zip(entries, _blobs(top, [e[1] for e in entries])):
        target = dest / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        if mode == b"120000":
            os.symlink(os.fsdecode(data), target)
        else:
            target.write_bytes(data)
    if not base_policy.exists():  # only submodules below it
        base_policy.mkdir(parents=True)
    return base_root, base_policy, digest(rel_policy, listing.stdout)
