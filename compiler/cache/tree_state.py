"""The state of ``out/`` on disk: every file's digest from a stat per file (``scan_tree``),
compared a directory at a time with the state the previous run recorded (``record_tree`` after a
write). ``compiler.cli.out_tree`` keeps the state in the store.
"""

from __future__ import annotations

import marshal
import operator
import os
import stat
import time
from pathlib import Path
from typing import Any, Callable, cast

from compiler.cache.store import RACY_NS, content_digest

NOT_REGULAR = "not-a-regular-file"  # the digest of a link or special file found in out/
# What a directory's state keeps of each entry: mode, size, mtime, ctime (ns), inode. ctime cannot
# be set back (touch -d restores an mtime, not a ctime), so an edit in place at the same size is
# re-read; the mode tells a file replaced by a link or a directory.
_STAT = operator.attrgetter("st_mode", "st_size", "st_mtime_ns", "st_ctime_ns", "st_ino")
_MODE, _MTIME, _CTIME = (operator.itemgetter(i) for i in (0, 2, 3))
_SUBDIR = ""  # a subdirectory's slot in its parent's digests
_EARLIEST = -(1 << 63)

# A directory's state: its names in listing order, the marshalled list of their ``_STAT`` tuples
# (version 2 writes no references, so equal stats are equal bytes), each name's digest
# (``_SUBDIR``, ``NOT_REGULAR`` or a content digest), and the newest mtime or ctime among them.
DirState = tuple[list[str], bytes, list[str], int]
STATE_FORMAT = 2


def _lstat_all(path: str, names: list[str]) -> tuple[list[str], list[tuple[int, ...]]]:
    """Every name's ``_STAT``, in C loops (map over os.lstat: no Python frame per file); names
    that vanished since the listing are dropped."""
    try:
        return names, list(map(_STAT, map(os.lstat, map(f"{path}/".__add__, names))))
    except FileNotFoundError:
        kept = []
        for name in names:
            try:
                kept.append((name, _STAT(os.lstat(f"{path}/{name}"))))
            except FileNotFoundError:
                continue
        return [n for n, _ in kept], [s for _, s in kept]


class _Walk:
    """One walk of a tree: the digest of every file and the state (one ``DirState`` per
    directory) to compare the next walk with."""

    def __init__(self, known: dict[str, Any] | None, written: dict[str, str] | None,
                 written_by: int = _EARLIEST) -> None:
        if known is not None and known.get("format") != STATE_FORMAT:
            known = None  # recorded by an earlier version, in another shape: read everything once
        self.old: dict[str, DirState] = (known or {}).get("dirs") or {}
        self.cutoff = (known.get("at", 0) if known else 0) - RACY_NS  # newer than this: not trusted
        self.written = written or {}  # digests a writer just wrote, trusted without reading...
        self.written_by = written_by  # ... in files changed no later than this (ctime, ns)
        self.digests: dict[str, str] = {}
        self.dirs: dict[str, DirState] = {}
        self.same = True  # every directory as recorded

    def walk(self, path: str, prefix: str, defer: list[str] | None = None) -> None:
        """The directory at ``path`` and, unless ``defer`` takes their names, its subdirectories."""
        names, stats = _lstat_all(path, os.listdir(path))
        keys = marshal.dumps(stats, 2)
        old = self.old.get(prefix)
        if old is not None and old[1] == keys and old[0] == names and old[3] < self.cutoff:
            # the whole directory as recorded, by one comparison of its stats: nothing to read
            self.dirs[prefix] = old
            if _SUBDIR not in old[2]:
                self.digests.update(zip(map(prefix.__add__, names), old[2]))
                return
            for name, d in zip(names, old[2]):
                if d != _SUBDIR:
                    self.digests[prefix + name] = d
                else:
                    self.subdir(path, prefix, name, defer)
            return
        self.same = False
        rels = list(map(prefix.__add__, names)) if self.written else []
        given = list(map(self.written.get, rels))
        if (self.written and None not in given and all(map(stat.S_ISREG, map(_MODE, stats)))
                and max(map(_CTIME, stats), default=_EARLIEST) <= self.written_by):
            found = cast("list[str]", given)  # files just written (record_tree): in C loops
            self.digests.update(zip(rels, found))
        else:
            found = self.each(path, prefix, names, stats, old, defer)  # file by file
        newest = max(max(map(_MTIME, stats), default=_EARLIEST), max(map(_CTIME, stats), default=_EARLIEST))
        self.dirs[prefix] = (names, keys, found, newest)

    def subdir(self, path: str, prefix: str, name: str, defer: list[str] | None) -> None:
        """A subdirectory: walked now, or its name left to ``defer`` (``scan_share``)."""
        if defer is not None:
            defer.append(name)
        else:
            self.walk(f"{path}/{name}", f"{prefix}{name}/")

    def each(self, path: str, prefix: str, names: list[str], stats: list[tuple[int, ...]],
             old: DirState | None, defer: list[str] | None = None) -> list[str]:
        """A directory that differs from its state, file by file: a file whose stat is as recorded
        (and not too recent) keeps its digest, a file just written has the writer's, the others
        are read."""
        before = dict(zip(old[0], zip(marshal.loads(old[1]), old[2]))) if old is not None else {}
        found: list[str] = []
        for name, st in zip(names, stats):
            if stat.S_ISDIR(st[0]):
                self.subdir(path, prefix, name, defer)
                found.append(_SUBDIR)
                continue
            rel = prefix + name
            prev = before.get(name)
            if not stat.S_ISREG(st[0]):
                # a symbolic link or special file is never something a build wrote: stale,
                # whatever it points to (never followed, never read)
                d = NOT_REGULAR
            elif rel in self.written and st[3] <= self.written_by:
                d = self.written[rel]
            elif prev is not None and prev[0] == st and max(st[2], st[3]) < self.cutoff:
                d = prev[1]
            else:
                with open(f"{path}/{name}", "rb") as fh:
                    d = content_digest(fh.read())
            self.digests[rel] = d
            found.append(d)
        return found

    def state(self, at: int) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "at": at, "dirs": self.dirs}


def scan_tree(root: Path, known: dict[str, Any] | None) -> tuple[dict[str, str], dict[str, Any] | None]:
    """Digest of every file under ``root`` (relative posix path → digest), reading only files
    whose stat (``_STAT``) changed since ``known`` was recorded, or that were modified too close
    to that moment to trust their mtime. Returns the digests and the new state, or None for the
    state when ``known`` still holds (nothing read, nothing gone).

    The state is kept per directory (``DirState``), as git's index keeps a stat per file, but
    compared a directory at a time: its names and their stats, gathered in C loops, against the
    recorded ones in two comparisons, then its digests taken whole. Only a directory that differs
    (or whose newest change is too recent) is looked at file by file. 82,000 files: ~0.3 s of
    CPU, ~80% of it listing the directories and the lstat calls (bench/README.md)."""
    at = time.time_ns()
    walk = _Walk(known, None)
    if root.is_dir():
        walk.walk(str(root), "")
    if walk.old and walk.same and walk.dirs.keys() == walk.old.keys():
        return walk.digests, None
    return walk.digests, walk.state(at)


def top_dirs(root: Path) -> list[str]:
    """The names of ``root``'s subdirectories (not links), sorted: the parts of a shared scan."""
    try:
        with os.scandir(root) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


# One process's share of a scan (``scan_share``): when it began, whether every directory it walked
# was as recorded, those directories' states, and whether the root's subdirectories were not the
# ones the share was planned with (the tree changed meanwhile: scan it whole instead).
Share = tuple[int, bool, dict[str, DirState], bool]


def scan_share(root: Path, known: dict[str, Any] | None, tops: list[str], take: Callable[[], int | None],
               with_root: bool) -> tuple[Share, int]:
    """``scan_tree``'s walk shared between processes: ``root`` itself (``with_root``), its
    subdirectories left to the shares, then each subtree ``tops[i]`` for the ``i`` that ``take``
    gives, until none is left. Returns the share and how many subtrees it took."""
    at = time.time_ns()
    walk = _Walk(known, None)
    moved = False
    if with_root and root.is_dir():
        deferred: list[str] = []
        walk.walk(str(root), "", deferred)
        moved = sorted(deferred) != tops
    taken = 0
    while (i := take()) is not None:
        taken += 1
        path = f"{root}/{tops[i]}"
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                moved = True
                continue
            walk.walk(path, f"{tops[i]}/")
        except OSError:
            moved = True
    return (at, walk.same, walk.dirs, moved), taken


def joined_shares(known: dict[str, Any] | None, shares: list[Share], tops: list[str]
                  ) -> tuple[dict[str, str], dict[str, Any] | None] | None:
    """``scan_tree``'s answer from the shares of one scan, or None when the tree moved under them
    or a subtree is in no share (a share lost with a failed child): every file's digest is in its
    directory's state, and the state is new unless every directory is as recorded and none is
    gone."""
    if any(moved for _, _, _, moved in shares):
        return None
    dirs: dict[str, DirState] = {}
    for _, _, part, _ in shares:
        dirs.update(part)
    if "" not in dirs and tops or any(f"{top}/" not in dirs for top in tops):
        return None
    digests: dict[str, str] = {}
    for prefix, (names, _, found, _) in dirs.items():
        digests.update((prefix + name, d) for name, d in zip(names, found) if d != _SUBDIR)
    old = (known or {}).get("dirs") if (known or {}).get("format") == STATE_FORMAT else None
    if old and all(same for _, same, _, _ in shares) and dirs.keys() == old.keys():
        return digests, None
    return digests, {"format": STATE_FORMAT, "at": min(at for at, _, _, _ in shares), "dirs": dirs}


def record_tree(root: Path, written: dict[str, str]) -> tuple[dict[str, Any], bool]:
    """The state (as ``scan_tree``) of a tree this process just wrote: stat each file and trust
    the digest it was written with, unless the file changed after the write (its ctime; file
    times come from the kernel's coarse clock, so a change within one tick of the write's end may
    pass: only another process writing into ``out/`` during a build could make one).

    The stats are taken once the racy window has passed since the last write: a file written
    within ``RACY_NS`` of the state's moment would be re-read by the next scan (its mtime may
    not have ticked since). Waiting 0.1 s here saves the ``check`` after a build re-reading the
    last-written files (~0.25 s at 1,000 teams: bench/README.md).

    Also returns whether the tree holds exactly ``written`` (no file changed since, none besides):
    then a later scan that finds the state unchanged knows the tree is the writer's output without
    listing its digests (``compiler.cli.out_tree``)."""
    written_by = time.time_ns()
    time.sleep(RACY_NS / 1e9)
    at = time.time_ns()
    walk = _Walk(None, written, written_by)
    if root.is_dir():
        walk.walk(str(root), "")
    return walk.state(at), walk.digests == written
