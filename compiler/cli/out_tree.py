"""``check`` and ``build`` against the files on disk, for a pipeline ``Result``.

``out/`` is compared by digest. The digests of the tree on disk come from ``scan_tree`` with
the state recorded by the previous run (mode, size, mtime, ctime, inode per file, as git's index
keeps, compared a directory at a time), so an unchanged 82,000-file tree costs a stat per file
rather than a read; files whose stat changed, or whose mtime is too recent to trust, are read.
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from compiler.cache.forked import Tasks, in_child
from compiler.cache.records import RunRecord
from compiler.cache.store import Store, content_digest, digest
from compiler.cache.tree_state import (
    STATE_FORMAT,
    DirState,
    Share,
    joined_shares,
    record_tree,
    scan_share,
    scan_tree,
    top_dirs,
)
from compiler.diagnostics import UsageError
from compiler.emit.tree import write_file_atomic, write_tree
from compiler.pipeline.run import Result
from compiler.pipeline.units import CacheEntryMissing


def _state_key(out_dir: Path) -> str:
    # the state's format in its key: another version of gpupolicy never reads this one's state
    return digest("outstate", "parts", str(STATE_FORMAT), str(out_dir.resolve()))


def _top(prefix: str) -> str:
    """The part of the state a directory is kept in: its top directory's ("" for out/ itself)."""
    return prefix.split("/", 1)[0]


class _Parts(Mapping[str, DirState]):
    """A recorded state's directories (``DirState`` by path prefix), each top directory's read
    from the store the first time one of them is asked for. At 5,000 teams the state is 56 MB
    for 416,000 files: ``check`` shares the scan of out/ between its processes a top directory at
    a time (``TreeScan``), so each process reads the part it scans instead of the whole state
    (~0.2 s each). A part gone from the store reads as directories never recorded: read again."""

    def __init__(self, store: Store, parts: dict[str, str], prefixes: list[str]) -> None:
        self._store = store
        self._parts = parts
        self._prefixes = prefixes
        self._known = frozenset(prefixes)
        self._dirs: dict[str, DirState] = {}
        self._read: set[str] = set()

    def __getitem__(self, prefix: str) -> DirState:
        top = _top(prefix)
        if prefix in self._known and top not in self._read:
            self._read.add(top)
            part = self._store.get("outpart", self._parts.get(top, ""))
            if isinstance(part, dict):
                self._dirs.update(part)
        return self._dirs[prefix]

    def __contains__(self, prefix: object) -> bool:
        return prefix in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._prefixes)

    def __len__(self) -> int:
        return len(self._prefixes)


def _known(out_dir: Path, store: Store | None) -> dict[str, Any] | None:
    if store is None:
        return None
    index = store.get("outstate", _state_key(out_dir))
    if not isinstance(index, dict) or index.get("format") != STATE_FORMAT:
        return None
    return {"format": STATE_FORMAT, "at": index["at"], "dirs": _Parts(store, index["parts"], index["dirs"])}


def _put_state(store: Store, out_dir: Path, state: dict[str, Any]) -> None:
    """Keep ``state`` as ``_Parts`` reads it: an index (kind ``outstate``) naming one entry per top
    directory (kind ``outpart``, keyed by its content: a part as recorded is not written again),
    and the parts the previous index named and this one does not, discarded; so are the states of
    output directories that no longer exist (``_forget_gone``)."""
    key = _state_key(out_dir)
    parts: dict[str, dict[str, DirState]] = {}
    for prefix, d in sorted(state["dirs"].items()):  # walks record directories in different orders
        parts.setdefault(_top(prefix), {})[prefix] = d
    keys = {top: digest("outpart", key, top, content_digest(marshal.dumps(part, 2))) for top, part in parts.items()}
    before = store.get("outstate", key)
    for top, part in parts.items():
        if not store.has("outpart", keys[top]):
            store.put("outpart", keys[top], part)
    store.put("outstate", key, {"format": state["format"], "at": state["at"], "parts": keys,
                                "dirs": list(state["dirs"]), "dir": str(out_dir.resolve())})
    if isinstance(before, dict) and isinstance(before.get("parts"), dict):
        for old in set(before["parts"].values()) - set(keys.values()):
            store.discard("outpart", old)
    _forget_gone(store, key)


def _forget_gone(store: Store, key: str) -> None:
    """The recorded states of output directories that are gone (the repository or its ``out/``
    moved, an ``--out`` directory deleted): each index with its parts and its "written" mark,
    which no run would read again and the store's pruning does not weigh. Another output
    directory that still exists keeps its state; an index that does not name its directory
    (kept by an earlier version, or the whole state kept before parts) goes too: at worst its
    directory's next scan reads every file once."""
    for other in store.keys("outstate") - {key}:
        index = store.get("outstate", other)
        where = index.get("dir") if isinstance(index, dict) else None
        if isinstance(where, str) and os.path.isdir(where):
            continue
        if isinstance(index, dict) and isinstance(index.get("parts"), dict):
            for part in index["parts"].values():
                store.discard("outpart", part)
        store.discard("outstate", other)
        store.discard("written", other)


def _as_written(out_dir: Path, store: Store | None, summary: bool, known: dict[str, Any] | None,
                shares: list[tuple[bool, bool, list[str]]]) -> tuple[str, Any] | None:
    """``("written", what the build wrote)`` when a summary is asked and every share (as recorded,
    not moved, the paths of its directories) found the tree as the state recorded it, which a
    build recorded as its output; else None. Neither the digests of 416,000 files nor the parts of
    the state the other process scanned are needed for that answer."""
    if not summary or store is None or known is None:
        return None
    if not all(same and not moved for same, moved, _ in shares):
        return None
    seen: set[str] = set()
    for _, _, prefixes in shares:
        seen.update(prefixes)
    if seen != set(known["dirs"]):
        return None
    written = store.get("written", _state_key(out_dir))
    return None if written is None else ("written", written)


def _finish(out_dir: Path, store: Store | None, summary: bool, known: dict[str, Any] | None,
            digests: dict[str, str], state: dict[str, Any] | None) -> dict[str, str] | tuple[str, Any]:
    """A scan's answer: the digests of the tree; the new state goes straight to the cache (it is
    large). ``summary``: a tree unchanged since a build recorded it as that build's output (kind
    ``written``, beside the state it holds for) is answered as ``("written", what the build
    wrote)``, without its 82,000 digests (``stale``)."""
    key = _state_key(out_dir)
    if store is not None and state is not None:
        _put_state(store, out_dir, state)
        store.discard("written", key)  # the tree is no longer known to be a build's output
    elif summary and store is not None and known is not None:
        written = store.get("written", key)
        if written is not None:
            return "written", written
    return digests


def _scan(out_dir: Path, store: Store | None, summary: bool, tops: list[str], tasks: Tasks) -> Any:
    """The forked scan: the root and the subtrees it takes (``scan_share``). Having taken them all,
    it answers as one process would (``_finish``); else it returns its share for the parent to
    join, the directories as recorded by name only (the parent holds the recorded state too)."""
    known = _known(out_dir, store)
    share, taken = scan_share(out_dir, known, tops, tasks.take, with_root=True)
    if taken == len(tops):
        written = _as_written(out_dir, store, summary, known, [(share[1], share[3], list(share[2]))])
        if written is not None:
            return "done", written
        joined = joined_shares(known, [share], tops)
        digests, state = joined if joined is not None else scan_tree(out_dir, known)
        return "done", _finish(out_dir, store, summary, known, digests, state)
    old = (known or {}).get("dirs") or {}
    at, same, dirs, moved = share
    kept = [p for p, d in dirs.items() if old.get(p) is d]
    return "share", (at, same, kept, {p: d for p, d in dirs.items() if old.get(p) is not d}, moved,
                     (known or {}).get("at"))


class TreeScan:
    """The digests of ``out/`` as it is on disk. The scan (a stat per file, a read for the
    changed ones) runs in a forked child while the parent compiles; the subtrees it has not
    reached when the parent asks for the result are the parent's to scan (``Tasks``: an
    unchanged 416,000-file tree at 5,000 teams is two seconds of stat calls)."""

    def __init__(self, out_dir: Path, store: Store | None, summary: bool = False) -> None:
        self.out_dir = out_dir
        self.store = store
        self.summary_only = summary
        self.tops = top_dirs(out_dir)
        self.tasks = Tasks(len(self.tops))
        self._child = in_child(_scan, out_dir, store, summary, self.tops, self.tasks)
        self._answer: dict[str, str] | tuple[str, Any] | None = None

    def _joined(self) -> dict[str, str] | tuple[str, Any]:
        if self._answer is None:
            known: dict[str, Any] | None = None
            mine: list[Share] = []
            first = self.tasks.take()
            if first is not None:  # the child has not reached every subtree: scan the rest here
                known = _known(self.out_dir, self.store)
                given = [first]
                share, _ = scan_share(self.out_dir, known, self.tops,
                                      lambda: given.pop() if given else self.tasks.take(), with_root=False)
                mine.append(share)
            how, got = self._child()
            self.tasks.close()
            if how == "done":
                self._answer = got
            else:
                if not mine:
                    known = _known(self.out_dir, self.store)
                old = (known or {}).get("dirs") or {}
                at, same, kept, changed, moved, recorded = got
                moved = moved or recorded != (known or {}).get("at")  # another run recorded a state meanwhile
                self._answer = _as_written(self.out_dir, self.store, self.summary_only, known,
                                           [(same and not changed, moved, kept),
                                            *((s[1], s[3], list(s[2])) for s in mine)])
                if self._answer is None:
                    theirs: Share = (at, same, {**{p: d for p in kept if (d := old.get(p)) is not None}, **changed},
                                     moved)
                    joined = joined_shares(known, [theirs, *mine], self.tops)
                    digests, state = joined if joined is not None else scan_tree(self.out_dir, known)
                    self._answer = _finish(self.out_dir, self.store, self.summary_only, known, digests, state)
        return self._answer

    def result(self) -> dict[str, str]:
        """Every file's digest. After a summary (the tree is a build's output, unchanged since
        the state was recorded) whose build ``stale`` cannot compare with (its record is gone, or
        a new compiler shares no unit with it), from that state: a stat per file, none read (at
        5,000 teams ~2 s instead of ~7 s of reading 416,000 files)."""
        got = self._joined()
        return got if isinstance(got, dict) else scan_tree(self.out_dir, _known(self.out_dir, self.store))[0]

    def summary(self) -> dict[str, str] | tuple[str, Any]:
        return self._joined()


def stale(scan: TreeScan, root: Path, shown_out: str, out: Result, store: Store | None
          ) -> tuple[list[tuple[str, str]], int]:
    """(status, path) of every generated file that differs from what the policies render, and
    how many files ``out/`` should hold. When the tree is a build's output, unchanged since
    (``TreeScan.summary``), only the units that differ between that build's run and this one are
    compared (``_since``); else every file, by digest."""
    got = scan.summary()
    found: list[tuple[str, str]] | None = None
    if isinstance(got, tuple) and store is not None:
        since = _since(got[1], out, store)
        if since is not None:
            changes, n = since
            found = [(status, f"{shown_out}/{rel}") for rel, status in changes]
    if found is None:
        current = scan.result()
        expected = out.out_digests or out.all_digests()
        if expected is None:
            raise CacheEntryMissing("digests")
        n = len(expected)
        differ = [] if current == expected else [rel for rel, d in expected.items() if current.get(rel) != d]
        differ += [rel for rel in current.keys() - expected.keys()] if differ or current != expected else []
        found = []
        for rel in sorted(differ):
            if rel not in current:
                found.append(("missing", f"{shown_out}/{rel}"))
            elif rel not in expected:
                found.append(("extra", f"{shown_out}/{rel}"))
            else:
                found.append(("changed", f"{shown_out}/{rel}"))
    for rel, want in sorted(out.repo_digests.items()):  # by digest: the bytes stay in the store
        path = root / rel
        if not path.is_file():
            found.append(("missing", rel))
        elif content_digest(path.read_bytes()) != want:
            found.append(("changed", rel))
    return found, n


def _since(written: Any, out: Result, store: Store) -> tuple[list[tuple[str, str]], int] | None:
    """(path, status) of the files that differ between the tree, run ``written``'s output, and
    this run's, in path order, and how many files this run renders; None when an entry it needs
    is gone. The two runs share every unit but those that came and went (a one-team edit: two),
    and a path of a shared unit is nowhere else in either run (paths are unique in a run), so
    only the changed units' files and the files rendered outside units can differ."""
    try:
        key, n_before = written
        prev = store.get("result", key) if key != out.key else out.record and out.record.plain()
    except (TypeError, ValueError):
        return None
    if prev is None or out.record is None:
        return None
    before, now = RunRecord.of(prev), out.record
    old: dict[str, str] = {}
    new: dict[str, str] = {}
    for units, other, into in ((before.units, now.units, old), (now.units, before.units, new)):
        for unit in set(units) - set(other):
            files = out.unit_files(unit)  # this run's, or the store's (kind ``files``)
            if files is None:
                return None
            into.update(files)
    old.update(before.inline)
    new.update(now.inline)
    differ = [(rel, "missing" if rel not in old else "extra" if rel not in new else "changed")
              for rel in sorted(old.keys() | new.keys()) if old.get(rel) != new.get(rel)]
    return differ, n_before - len(old) + len(new)


def write(scan: TreeScan, root: Path, out: Result, store: Store | None) -> bool:
    """Write ``out/`` (atomically, hard-linking unchanged files) and the repository files."""
    out_dir = scan.out_dir
    current = scan.result()
    changed = write_tree(out_dir, out.out_files, digests=out.out_digests, current=current)
    if store is not None:
        key = _state_key(out_dir)
        tag = (out.key, len(out.out_digests))  # what the tree now is: this run's output (``stale``)
        exact = current == out.out_digests  # as scanned, already this run's output
        if changed:
            state, exact = record_tree(out_dir, out.out_digests)
            _put_state(store, out_dir, state)
        if not exact:
            store.discard("written", key)
        elif changed or store.get("written", key) != tag:
            store.put("written", key, tag)
    for rel, data in sorted(out.repo_files.items()):
        changed |= write_file_atomic(inside(root, rel), data)
    return changed


def inside(root: Path, rel: str) -> Path:
    """``root / rel``, refusing a path whose directory a symbolic link takes outside the repository
    (a pull request controls the tree: ``.github -> ~/.ssh`` must not make a build write there)."""
    path = root / rel
    try:
        path.parent.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        raise UsageError(f"refusing to write {rel}: its directory resolves outside the repository "
                         "(a symbolic link)") from None
    return path
