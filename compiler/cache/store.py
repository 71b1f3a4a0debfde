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
import os
import sys
import time
import zlib
from pathlib import Path
from typing import Any, Iterable

from compiler.cache import weight

PACKAGE = Path(__file__).resolve().parent.parent  # compiler/
CACHE_DIRNAME = ".gpupolicy-cache"
FORMAT = "gpupolicy-cache-3"


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


# Files modified this close to when a state was recorded are not trusted by their stat: their
# mtime may not have ticked since (the "racy git" problem; ext4 mtimes move in jiffies).
RACY_NS = 100_000_000
_MEMO_FILE = "fingerprints"  # in the user's cache directory, beside the key
_MEMO_KEEP = 32


def tree_fingerprint(root: Path | None) -> str:
    """Hash of every file's path and bytes under ``root`` (the compiler's package, the CRD
    directory). Every command computes two (~5 MB hashed, 0.03 s at load 1); a memo in the user's
    cache directory keyed by every file's path and stat (size, mtime, ctime, inode) answers when
    nothing changed, as ``scan_tree`` does for ``out/`` (a stat per file: ~3 ms). A tree changed
    within ``RACY_NS`` of being hashed is not memoised."""
    if root is None:
        return "none"
    files = _files(root)
    at = time.time_ns()
    stats: list[str] = []
    newest = 0
    try:
        for rel, p in files:
            st = os.stat(p)
            stats.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return _hashed(files)
    key = digest(str(root.resolve()), *stats)
    memo = _read_memo()
    found = memo.get(key)
    if isinstance(found, str):
        return found
    fp = _hashed(files)
    if newest < at - RACY_NS:
        memo.pop(key, None)
        memo[key] = fp
        _write_memo(dict(list(memo.items())[-_MEMO_KEEP:]))
    return fp


def _hashed(files: list[tuple[str, Path]]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for rel, p in files:
        data = p.read_bytes()
        h.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _user_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpupolicy"


def _read_memo() -> dict[str, Any]:
    try:
        memo = marshal.loads((_user_dir() / _MEMO_FILE).read_bytes())
    except (OSError, RuntimeError, EOFError, ValueError, TypeError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _write_memo(memo: dict[str, str]) -> None:
    """Best effort, atomically (a concurrent writer's memo may win: both are right)."""
    try:
        base = _user_dir()
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f".{_MEMO_FILE}.{os.getpid()}"
        tmp.write_bytes(marshal.dumps(memo))
        os.replace(tmp, base / _MEMO_FILE)
    except (OSError, RuntimeError):
        pass


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """The compiler's own files, the Python version and every installed distribution: a new
    compiler, a changed rule or an upgraded validator invalidates every entry."""
    h = hashlib.blake2b(digest_size=16)
    h.update(FORMAT.encode() + sys.version.encode())
    h.update(tree_fingerprint(PACKAGE).encode())
    dists: set[str] = set()
    for entry in sys.path:
        if not entry:  # the working directory (``python -m``): where a command runs, not what it runs
            continue
        try:
            with os.scandir(entry) as it:
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
    base = _user_dir()
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


def _mac(kind: str, key: str, payload: bytes | memoryview) -> bytes:
    h = hashlib.blake2b(digest_size=16, key=machine_key()[0])
    for part in (kind.encode(), key.encode(), payload):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _seal(kind: str, key: str, payload: bytes) -> bytes:
    """An entry: magic, a keyed digest of (kind, key, payload), the payload. The digest names its
    own kind and key, so an entry copied or swapped to another key fails like a flipped byte."""
    return _MAGIC + _mac(kind, key, payload) + payload


def _verified(kind: str, key: str, raw: bytes) -> memoryview | None:
    """The payload of an entry whose digest holds, else None (corrupt, swapped or foreign); a view,
    not a copy (an entry may be megabytes)."""
    if raw[:4] != _MAGIC or len(raw) < 21:
        return None
    payload = memoryview(raw)[20:]
    return payload if hmac.compare_digest(raw[4:20], _mac(kind, key, payload)) else None


def _read(path: str) -> bytes:
    """A whole file, with the file descriptor's calls alone: ``open()`` adds a buffered file
    object and an ``ioctl``, an ``lseek`` and an ``fstat`` more per file (~20,000 entries are read
    after a one-team edit at 5,000 teams, bench/README.md). Never following a link, never blocking
    on a FIFO: a cache directory committed by a pull request reads as corrupt, not as a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        want = os.fstat(fd).st_size + 1  # one read in the common case, one more to see the end
        chunks = []
        while chunk := os.read(fd, max(want, 1 << 16)):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


class Store:
    """``kind/key`` → marshal-encoded value, written atomically."""

    def __init__(self, root: Path) -> None:
        self.dir = root / CACHE_DIRNAME
        self._base = str(self.dir)  # entries' paths as strings: a Path per entry cost ~6 us (20,000 at 5,000 teams)
        self.used: set[tuple[str, str]] = set()
        self.problems: list[str] = []  # why entries were not used (corrupt, unreadable, unwritable)
        self.off = not machine_key()[1]
        if self.off:
            self.trouble("not used: no writable ~/.cache (or $XDG_CACHE_HOME) to keep its key in")

    def get(self, kind: str, key: str) -> Any | None:
        if self.off:
            return None
        try:
            raw = _read(f"{self._base}/{kind}/{key}")
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError):
                self.trouble(f"unreadable ({exc.strerror})")
            return None
        payload = _verified(kind, key, raw)
        if payload is None:  # flipped, truncated, swapped, foreign or garbage: a miss, and gone
            self.trouble("corrupt or foreign entries ignored")
            try:
                os.unlink(f"{self._base}/{kind}/{key}")
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

    def has(self, kind: str, key: str) -> bool:
        """Whether an entry exists (it may yet prove corrupt, or vanish, when read)."""
        return not self.off and os.path.exists(f"{self._base}/{kind}/{key}")

    def keys(self, kind: str) -> set[str]:
        """The keys of a kind's entries, in one listing (a stat each costs ~20x more at 1,000)."""
        if self.off:
            return set()
        try:
            return {n for n in os.listdir(f"{self._base}/{kind}") if not n.startswith(".")}
        except OSError:
            return set()

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
            weight.wrote(self._base, len(data))
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

    def pressure(self, keep_factor: int = 2) -> bool:
        """Whether the store should be weighed (``prune(by_bytes=True)``, ``compiler.cache.weight``)."""
        if self.off:
            return False
        return weight.heavy(self._base, keep_factor)

    def prune(self, kinds: Iterable[str], keep_factor: int = 2, by_bytes: bool = False) -> None:
        """Drop entries this run did not use (read, wrote or marked in ``used``) once they
        outnumber the used ones ``keep_factor`` times over (edits leave old entries behind; a
        revert may still want the last few). Kinds that share keys (a unit's record, digests
        and rendered files) are judged together, so they go together. ``by_bytes`` (when
        ``pressure`` says so) weighs them too: the unused ones, oldest first, until they weigh at
        most ``keep_factor`` times the used ones, so the store stays within ~3x what a run uses."""
        if self.off:
            return
        kinds = tuple(kinds)
        live = {k for kd, k in self.used if kd in kinds}
        stale: list[str] = []
        for kind in kinds:
            try:
                stale += [f"{self._base}/{kind}/{n}" for n in os.listdir(f"{self._base}/{kind}")
                          if not n.startswith(".") and n not in live]
            except OSError:
                continue
        if len(stale) > keep_factor * max(len(live), 16):
            drop, held = stale, weight.of_entries(self._base, kinds, live)
        elif by_bytes:
            held = weight.of_entries(self._base, kinds, live)
            drop = weight.oldest_over(stale, keep_factor * held)
        else:
            return
        for path in drop:
            try:
                os.unlink(path)
            except OSError:
                pass
        weight.weighed(self._base, held)


class NullStore(Store):
    """The empty store: nothing is found, nothing is kept (``--no-cache``, ``diff``, the in-memory
    builds of tests and benchmarks). A store that is ``off`` answers every ``get`` with a miss and
    keeps nothing, so the pipeline computes every unit."""

    def __init__(self) -> None:
        self.used = set()
        self.problems = []
        self.off = True
