"""``check`` and ``build`` against the files on disk, for a pipeline ``Result``.

``out/`` is compared by digest. The digests of the tree on disk come from ``scan_tree`` with
the state recorded by the previous run (mode, size, mtime, ctime, inode per file, as git's index
keeps, compared a directory at a time), so an unchanged 82,000-file tree costs a stat per file
rather than a read; files whose stat changed, or whose mtime is too recent to trust, are read.
"""

from __future__ import annotations

from pathlib import Path

from compiler.cache.forked import in_child
from compiler.cache.store import Store, content_digest, digest
from compiler.cache.tree_state import STATE_FORMAT, record_tree, scan_tree
from compiler.diagnostics import UsageError
from compiler.emit.tree import write_file_atomic, write_tree
from compiler.pipeline.run import Result


def _state_key(out_dir: Path) -> str:
    # the state's format in its key: another version of gpupolicy never reads this one's state
    return digest("outstate", str(STATE_FORMAT), str(out_dir.resolve()))


def _scan(out_dir: Path, store: Store | None) -> dict[str, str]:
    """Digests of the tree; the new state goes straight to the cache (it is large)."""
    known = store.get("outstate", _state_key(out_dir)) if store is not None else None
    digests, state = scan_tree(out_dir, known)
    if store is not None and state is not None:
        store.put("outstate", _state_key(out_dir), state)
    return digests


class TreeScan:
    """The digests of ``out/`` as it is on disk. The scan (a stat per file, a read for the
    changed ones) runs in a forked child while the parent compiles (``compiler.cache.forked``)."""

    def __init__(self, out_dir: Path, store: Store | None) -> None:
        self.out_dir = out_dir
        self.store = store
        self._result = in_child(_scan, out_dir, store)

    def result(self) -> dict[str, str]:
        return self._result()


def stale(scan: TreeScan, root: Path, shown_out: str, out: Result, store: Store | None) -> list[tuple[str, str]]:
    """(status, path) of every generated file that differs from what the policies render."""
    current = scan.result()
    expected = out.out_digests
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
    return found


def write(scan: TreeScan, root: Path, out: Result, store: Store | None) -> bool:
    """Write ``out/`` (atomically, hard-linking unchanged files) and the repository files."""
    out_dir = scan.out_dir
    current = scan.result()
    changed = write_tree(out_dir, out.out_files, digests=out.out_digests, current=current)
    if store is not None and changed:
        store.put("outstate", _state_key(out_dir), record_tree(out_dir, out.out_digests))
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
