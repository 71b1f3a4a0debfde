"""One ``build`` at a time per repository, and no ``check`` during it: an advisory lock on the
repository root directory.

Two builds at once would race on the swap of ``out/`` (one renaming the tree the other is
replacing) and on the staging and backup directories. The lock is ``flock`` on a descriptor of
the root directory itself, so it creates no file, works when the cache is read-only or broken,
and is released by the kernel when the process dies (``kill -9`` included). The second build
says that it waits, then runs; after ``GPUPOLICY_LOCK_TIMEOUT`` seconds (default 600) it gives up
with a clear usage error (exit 2).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from compiler.diagnostics import UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock (one build at a time is then on the user)
    fcntl = None  # type: ignore[assignment]


def _timeout() -> float:
    try:
        return float(os.environ.get("GPUPOLICY_LOCK_TIMEOUT", "600"))
    except ValueError:
        return 600.0


@contextmanager
def build_lock(root: Path, *, shared: bool = False) -> Iterator[None]:
    """Exclusive for ``build``; shared for ``check``, which reads ``out/`` and must not see a tree
    halfway through its swap (several checks run together, a build waits for them)."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise UsageError(f"cannot open the repository root {root} to lock it: {exc.strerror}") from exc
    try:
        deadline = time.monotonic() + _timeout()
        told = False
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    print(f"gpupolicy: {'a build' if shared else 'another build or check'} is running in this "
                          "repository; waiting for it to finish", file=sys.stderr)
                    told = True
                if time.monotonic() > deadline:
                    raise UsageError("another gpupolicy build or check is still running in this repository "
                                     f"after {_timeout():.0f} s (GPUPOLICY_LOCK_TIMEOUT); try again when it has "
                                     "finished") from None
                time.sleep(0.05)
            except OSError as exc:  # a file system without locks: proceed unlocked
                print(f"gpupolicy: notice: cannot lock the repository ({exc.strerror}); building unlocked",
                      file=sys.stderr)
                break
        yield
    finally:
        os.close(fd)
