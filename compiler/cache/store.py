"""The on-disk cache behind incremental ``check`` and ``build``: ``<root>/.gpupolicy-cache/``.

Entries are addressed by a hash of exactly the inputs they were computed from (policy file
bytes, the compiler's own source and installed dependencies, the CRD directory's contents,
the options), so a changed input is a different key, never a stale hit. Every entry carries a
digest of its kind, key and bytes, keyed with a per-machine secret (``machine_key``), so a flipped,
truncated, swapped, foreign or forged entry (a cache committed by a pull request) is detected
before it is decoded. The cache is best effort: unreadable, corrupt or missing entries are misses,
write failures are ignored (``Store.problems`` says why, in one notice line of the CLI), and
deleting the directory is always safe. Nothing here ever writes into ``out/``.

Values are ``marshal``-encoded plain data (dicts, lists, tuples, str, int, bytes): ~10x faster
to read than pickle for these shapes and unable to execute code on load. A version tag in every
key keeps entries of another Python or cache format apart.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import marshal
import operator
import os
import stat
import sys
import time
import zlib
from pathlib import Path
from typing import Any, Iterable, cast

PACKAGE = Path(__file__).resolve().parent.parent  # compiler/
CACHE_DIRNAME = ".gpupolicy-cache"
FORMAT = "gpupolicy-cache-3"
# Files modified this close to when the out/ state was recorded are re-read: their mtime may not
# have ticked since (the "racy git" problem; ext4 mtimes move in jiffies).
RACY_NS = 100_000_000


def digest(*parts: bytes | str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _files(root: Path) -> list[tuple[str, Path]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in filenames:
            if not name.endswith((".pyc", ".pyo")) and not name.startswith("."):
                p = Path(dirpath) / name
                out.append((p.relative_to(root).as_posix(), p))
    return sorted(out)


def tree_fingerprint(root: Path | None) -> str:
    """Hash of every file's path and bytes under ``root`` (e.g. the CRD directory)."""
    if root is None:
        return "none"
    h = hashlib.blake2b(digest_size=16)
    for rel, p in _files(root):
        data = p.read_bytes()
        h.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """The compiler's own files, the Python version and every installed distribution: a new
    compiler, a changed rule or an upgraded validator invalidates every entry."""
    h = hashlib.blake2b(digest_size=16)
    h.update(FORMAT.encode() + sys.version.encode())
    h.update(tree_fingerprint(PACKAGE).encode())
    dists: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                dists.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info", ".egg-link")))
        except OSError:
            continue
    h.update("\n".join(sorted(dists)).encode())
    return h.hexdigest()


_MAGIC = b"GPC3"


@functools.lru_cache(maxsize=1)
def machine_key() -> tuple[bytes, bool]:
    """A random key kept outside the repository (``$XDG_CACHE_HOME/gpupolicy/cache-key``, mode
    0600), which every entry's digest is keyed with, and whether it is kept. A cache directory
    committed by a pull request, or copied from another machine, cannot forge an entry (the digest
    is not computable without the key): it is foreign, ignored and recomputed. Without a writable
    home the key would live for one process only, so the store is not used at all."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpupolicy"
    path = base / "cache-key"
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key, True
    except (OSError, RuntimeError):
        pass
    key = os.urandom(32)
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f".cache-key.{os.getpid()}.{key[:4].hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        try:
            os.link(tmp, path)  # the first process to create it wins; the others read its key
        finally:
            tmp.unlink()
        return key, True
    except FileExistsError:
        try:
            key = path.read_bytes()
        except OSError:
            return key, False
        return (key, True) if len(key) == 32 else (key, False)
    except (OSError, RuntimeError):
        return key, False


def _mac(kind: str, key: str, payload: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16, key=machine_key()[0])
    for part in (kind.encode(), key.encode(), payload):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _seal(kind: str, key: str, payload: bytes) -> bytes:
    """An entry: magic, a keyed digest of (kind, key, payload), the payload. The digest names its
    own kind and key, so an entry copied or swapped to another key fails like a flipped byte."""
    return _MAGIC + _mac(kind, key, payload) + payload


def _verified(kind: str, key: str, raw: bytes) -> bytes | None:
    """The payload of an entry whose digest holds, else None (corrupt, swapped or foreign)."""
    if raw[:4] != _MAGIC or len(raw) < 21:
        return None
    payload = raw[20:]
    return payload if hmac.compare_digest(raw[4:20], _mac(kind, key, payload)) else None


class Store:
    """``kind/key`` → marshal-encoded value, written atomically."""

    def __init__(self, root: Path) -> None:
        self.dir = root / CACHE_DIRNAME
        self.used: set[tuple[str, str]] = set()
        self.problems: list[str] = []  # why entries were not used (corrupt, unreadable, unwritable)
        self.off = not machine_key()[1]
        if self.off:
            self.trouble("not used: no writable ~/.cache (or $XDG_CACHE_HOME) to keep its key in")

    def get(self, kind: str, key: str) -> Any | None:
        if self.off:
            return None
        try:
            with open(self.dir / kind / key, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError):
                self.trouble(f"unreadable ({exc.strerror})")
            return None
        payload = _verified(kind, key, raw)
        if payload is None:  # flipped, truncated, swapped, foreign or garbage: a miss, and gone
            self.trouble("corrupt or foreign entries ignored")
            try:
                os.unlink(self.dir / kind / key)
            except OSError:
                pass
            return None
        try:
            value = marshal.loads(zlib.decompress(payload) if payload[:1] == b"x" else payload[1:])
        except (EOFError, ValueError, TypeError, zlib.error):  # hash matched: written by another format
            self.trouble("corrupt or foreign entries ignored")
            return None
        self.used.add((kind, key))
        return value

    def trouble(self, what: str) -> None:
        """Remember, once, why the cache was not used as it should (printed as one line)."""
        if what not in self.problems:
            self.problems.append(what)

    def put(self, kind: str, key: str, value: Any, *, compress: bool = False) -> None:
        if self.off:
            return
        data = marshal.dumps(value)
        data = zlib.compress(data, 1) if compress else b"m" + data  # zlib streams start with "x"
        data = _seal(kind, key, data)
        target = self.dir / kind / key
        tmp = target.with_name(f".{key}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            ignore = self.dir / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# gpupolicy's incremental cache; safe to delete\n*\n")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            self.trouble(f"unwritable ({exc.strerror})")
            return
        self.used.add((kind, key))

    def discard(self, kind: str, key: str) -> None:
        """Remove one entry (a large one a later run replaces); gone already is fine."""
        if self.off:
            return
        self.used.discard((kind, key))
        try:
            os.unlink(self.dir / kind / key)
        except OSError:
            pass

    def prune(self, kinds: Iterable[str], keep_factor: int = 2) -> None:
        """Drop entries this run did not use (read, wrote or marked in ``used``) once they
        outnumber the used ones ``keep_factor`` times over (edits leave old entries behind; a
        revert may still want the last few). Kinds that share keys (a unit's record, digests
        and rendered files) are judged together, so they go together."""
        if self.off:
            return
        kinds = tuple(kinds)
        live = {k for kd, k in self.used if kd in kinds}
        stale: list[Path] = []
        for kind in kinds:
            try:
                stale += [self.dir / kind / n for n in os.listdir(self.dir / kind)
                          if not n.startswith(".") and n not in live]
            except OSError:
                continue
        if len(stale) > keep_factor * max(len(live), 16):
            for path in stale:
                try:
                    os.unlink(path)
                except OSError:
                    pass


class NullStore(Store):
    """The empty store: nothing is found, nothing is kept (``--no-cache``, ``diff``, the in-memory
    builds of tests and benchmarks). A store that is ``off`` answers every ``get`` with a miss and
    keeps nothing, so the pipeline computes every unit."""

    def __init__(self) -> None:
        self.used = set()
        self.problems = []
        self.off = True


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

    def walk(self, path: str, prefix: str) -> None:
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
                if d == _SUBDIR:
                    self.walk(f"{path}/{name}", f"{prefix}{name}/")
                else:
                    self.digests[prefix + name] = d
            return
        self.same = False
        rels = list(map(prefix.__add__, names)) if self.written else []
        given = list(map(self.written.get, rels))
        if (self.written and None not in given and all(map(stat.S_ISREG, map(_MODE, stats)))
                and max(map(_CTIME, stats), default=_EARLIEST) <= self.written_by):
            found = cast("list[str]", given)  # files just written (record_tree): in C loops
            self.digests.update(zip(rels, found))
        else:
            found = self.each(path, prefix, names, stats, old)  # file by file
        newest = max(max(map(_MTIME, stats), default=_EARLIEST), max(map(_CTIME, stats), default=_EARLIEST))
        self.dirs[prefix] = (names, keys, found, newest)

    def each(self, path: str, prefix: str, names: list[str], stats: list[tuple[int, ...]],
             old: DirState | None) -> list[str]:
        """A directory that differs from its state, file by file: a file whose stat is as recorded
        (and not too recent) keeps its digest, a file just written has the writer's, the others
        are read."""
        before = dict(zip(old[0], zip(marshal.loads(old[1]), old[2]))) if old is not None else {}
        found: list[str] = []
        for name, st in zip(names, stats):
            if stat.S_ISDIR(st[0]):
                self.walk(f"{path}/{name}", f"{prefix}{name}/")
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


def record_tree(root: Path, written: dict[str, str]) -> dict[str, Any]:
    """The state (as ``scan_tree``) of a tree this process just wrote: stat each file and trust
    the digest it was written with, unless the file changed after the write (its ctime; file
    times come from the kernel's coarse clock, so a change within one tick of the write's end may
    pass: only another process writing into ``out/`` during a build could make one).

    The stats are taken once the racy window has passed since the last write: a file written
    within ``RACY_NS`` of the state's moment would be re-read by the next scan (its mtime may
    not have ticked since). Waiting 0.1 s here saves the ``check`` after a build re-reading the
    last-written files (~0.25 s at 1,000 teams: bench/README.md)."""
    written_by = time.time_ns()
    time.sleep(RACY_NS / 1e9)
    at = time.time_ns()
    walk = _Walk(None, written, written_by)
    if root.is_dir():
        walk.walk(str(root), "")
    return walk.state(at)
