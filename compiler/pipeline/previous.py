"""What the clusters hold before this change, for the rules on changes a sync cannot undo
(GITOPS302, ``compiler.validate.sync_safety``): the out/ paths of the Kueue objects whose removal
does not apply cleanly (ClusterQueues, ResourceFlavors).

The base is ``$GPUPOLICY_BASE`` (a git ref; CI sets it to the pull request's base) read with
``git ls-tree``; else the working tree's out/, which is what was last rendered and committed:
``build`` and ``validate`` before re-rendering see the removal, so it must be acknowledged before
out/ can be regenerated. Unknown (no out/, not a git repository) means the rule stays silent.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

from compiler.cache.store import RACY_NS, Store, digest
from compiler.pipeline.options import Options

PATTERNS = ("*/kueue/clusterqueue.*.yaml", "*/kueue/resourceflavor.*.yaml")


_KINDS = ("clusterqueue.", "resourceflavor.")  # the file names of PATTERNS' kinds


def _wanted(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) == 3 and parts[1] == "kueue" and parts[2].startswith(_KINDS)


def previous_outputs(opts: Options, store: Store | None = None) -> frozenset[str] | None:
    out: Path = opts.out_dir
    base = os.environ.get("GPUPOLICY_BASE")
    if base:
        try:
            rel = out.resolve().relative_to(opts.root.resolve()).as_posix()
            done = subprocess.run(["git", "-C", str(opts.root), "ls-tree", "-r", "--name-only", base, "--", rel],
                                  capture_output=True, text=True, timeout=60, check=True)
        except (ValueError, OSError, subprocess.SubprocessError):
            return None
        found = (line[len(rel) + 1:] for line in done.stdout.splitlines() if line.startswith(rel + "/"))
        return frozenset(p for p in found if _wanted(p))
    if not out.is_dir():
        return None
    return frozenset(_listed(out, store))


def _listed(out: Path, store: Store | None) -> list[str]:
    """The out/-relative paths ``PATTERNS`` match, by listing only ``<cluster>/kueue/`` (a glob of
    out/ stats every one of its ~70,000 files at 1,000 teams: 0.26 s against 0.08 s). With a store,
    the listing is kept by every listed directory's stat (kind ``listed``): a directory's mtime and
    ctime move whenever an entry is added, removed or renamed in it, which is all a listing reads
    (~0.05 s less per command at 1,000 teams). A directory changed within ``RACY_NS`` of now may
    change again without its mtime ticking, so such a listing is not kept."""
    dirs: list[tuple[str, str]] = []
    with os.scandir(out) as clusters:
        for c in clusters:
            if c.is_dir(follow_symlinks=False):
                dirs.append((c.name, os.path.join(c.path, "kueue")))
    dirs.sort()
    stamps: list[str] = []
    cutoff = time.time_ns() - RACY_NS
    settled = True
    for name, path in dirs:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            stamps.append(f"{name}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0{st.st_dev}")
            settled = settled and max(st.st_mtime_ns, st.st_ctime_ns) < cutoff
    key = digest(str(out.resolve()), *stamps)
    if store is not None:
        hit = store.get("listed", key)
        if isinstance(hit, list):
            return hit
    found: list[str] = []
    for name, path in dirs:
        found += (f"{name}/kueue/{n}" for n in _kueue_files(path))
    if store is not None and settled:
        store.put("listed", key, found)
    return found


def _kueue_files(path: str) -> list[str]:
    """The names of the files ``PATTERNS`` match in a cluster's ``kueue/``, sorted; judged by name
    before anything else: the folder also holds a LocalQueue per team namespace (~100,000 files at
    5,000 teams, listed on the first command after each build: 0.22 -> 0.13 s there)."""
    try:
        with os.scandir(path) as files:
            return sorted(f.name for f in files
                          if f.name.startswith(_KINDS) and f.name.endswith(".yaml") and f.is_file(follow_symlinks=False))
    except (NotADirectoryError, FileNotFoundError):
        return []


def base_ref() -> str | None:
    """The git base of this change: ``$GPUPOLICY_BASE``, else the pull request's base in GitHub Actions."""
    if os.environ.get("GPUPOLICY_BASE"):
        return os.environ["GPUPOLICY_BASE"]
    if os.environ.get("GITHUB_BASE_REF"):
        return f"origin/{os.environ['GITHUB_BASE_REF']}"
    return None


def touched_files(root: Path) -> frozenset[str]:
    """Repository-relative paths the change touched since the merge base with ``base_ref()``
    (committed or not); empty when no base is known or git cannot tell."""
    base = base_ref()
    if base is None:
        return frozenset()
    try:
        done = subprocess.run(["git", "-C", str(root), "diff", "--name-only", f"{base}...", "--"],
                              capture_output=True, text=True, timeout=60, check=True)
        local = subprocess.run(["git", "-C", str(root), "diff", "--name-only", "HEAD", "--"],
                               capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line for line in (done.stdout + local.stdout).splitlines() if line)
