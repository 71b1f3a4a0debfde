"""How much the incremental cache holds, and when to weigh it (``Store.pressure``).

A prune by count (``Store.prune``) let a store of many small entries and a few large ones grow by
gigabytes: at 5,000 teams ~50,000 live entries, and each ``validate`` writes ~40 more and ~3 MB
(its run's record 1.5 MB), so the unused ones outnumbered the used twice only after ~2,500 runs,
and ``validate`` and ``check`` never pruned. So every process counts the bytes it writes into a
store (``wrote``); a forked child (``compiler.cache.forked``) adds its own to the store's count
before it exits (``child_done``), the parent its own at the end of its run (``heavy``), in
``<store>/.pruned`` beside the weight of what a run used at the last weighing: two integers as
text, so that a file a pull request commits can only make a weighing come sooner or later. Once
the bytes written outweigh twice that weight, the run weighs the store: its unused entries go,
oldest first, until they weigh at most twice what it used (``oldest_over``).
"""

from __future__ import annotations

import os
from typing import Iterable

_PRUNED_FILE = ".pruned"
PRUNE_FLOOR = 32 << 20  # a small organisation's store may grow this far before its first weighing
_written: dict[str, int] = {}  # store directory -> bytes this process wrote there, not yet counted


def wrote(base: str, n: int) -> None:
    """``n`` bytes of an entry written into the store at ``base``."""
    _written[base] = _written.get(base, 0) + n


def child_started() -> None:
    """In a forked child: the parent's writes are the parent's to count."""
    _written.clear()


def child_done() -> None:
    """In a forked child about to exit: its writes added to each store's count."""
    for base, n in list(_written.items()):
        _add(base, n)
    _written.clear()


def heavy(base: str, keep_factor: int) -> bool:
    """Whether the store at ``base`` should be weighed: what runs wrote since it last was, this
    process's included (counted now), outweighs ``keep_factor`` times what a run used then."""
    live, since = _add(base, _written.pop(base, 0))
    return since > keep_factor * max(live, PRUNE_FLOOR)


def weighed(base: str, live: int) -> None:
    """The store weighed: what the run used weighs ``live`` bytes; nothing written since."""
    _write(base, live, 0)


def _read(base: str) -> tuple[int, int]:
    """(bytes the used entries weighed at the last weighing, bytes written since)."""
    try:
        with open(f"{base}/{_PRUNED_FILE}") as fh:
            live, since = (int(x) for x in fh.read().split())
        return max(live, 0), max(since, 0)
    except (OSError, ValueError):
        return 0, 0


def _write(base: str, live: int, since: int) -> None:
    tmp = f"{base}/{_PRUNED_FILE}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as fh:
            fh.write(f"{live} {since}\n")
        os.replace(tmp, f"{base}/{_PRUNED_FILE}")
    except OSError:
        pass


def _add(base: str, n: int) -> tuple[int, int]:
    live, since = _read(base)
    if n:
        since += n
        _write(base, live, since)
    return live, since


def of_entries(base: str, kinds: Iterable[str], live: set[str]) -> int:
    """The bytes the entries of these kinds with these keys take (a stat each: only when the
    store is weighed)."""
    total = 0
    for kind in kinds:
        try:
            names = [n for n in os.listdir(f"{base}/{kind}") if n in live]
        except OSError:
            continue
        for n in names:
            try:
                total += os.stat(f"{base}/{kind}/{n}").st_size
            except OSError:
                pass
    return total


def oldest_over(stale: list[str], budget: int) -> list[str]:
    """The unused entries to drop, oldest first, so that the rest weigh at most ``budget``."""
    aged: list[tuple[int, int, str]] = []
    for path in stale:
        try:
            st = os.stat(path)
        except OSError:
            continue
        aged.append((st.st_mtime_ns, st.st_size, path))
    total = sum(size for _, size, _ in aged)
    drop = []
    for _, size, path in sorted(aged):
        if total <= budget:
            break
        drop.append(path)
        total -= size
    return drop
