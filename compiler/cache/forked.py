"""Run a pure function in a forked child while the parent carries on (Linux, two or more cores).

An incremental check spends most of its time in passes over the whole policy that do not depend
on each other (REPORT.md and allocation.json read only the policy; CODEOWNERS reads the lowered
objects). A child forked after their inputs exist shares them copy-on-write and returns only
the result, so on a 2-core machine they cost nothing on the critical path. The function must be
pure and its result ``marshal``-able. Where fork is unavailable or unsafe (not Linux, threads
running, one core) or the child fails, the function runs in the parent, so errors surface as
they would without this module.
"""

from __future__ import annotations

import marshal
import os
import sys
import tempfile
import threading
from typing import Any, Callable

from compiler.cache.weight import child_done, child_started


def _usable() -> bool:
    return (sys.platform == "linux" and threading.active_count() == 1 and (os.cpu_count() or 1) > 1
            and not os.environ.get("GPUPOLICY_NO_FORK"))


class Pending:
    """A started computation; calling it waits for the result (once; later calls return it)."""

    def __init__(self, get: Callable[[], Any]) -> None:
        self._get: Callable[[], Any] | None = get
        self._value: Any = None

    def __call__(self) -> Any:
        if self._get is not None:
            get, self._get = self._get, None
            self._value = get()
        return self._value


def in_child(fn: Callable[..., Any], *args: Any, nice: int = 5) -> Pending:
    """Start ``fn(*args)``; the returned ``Pending`` waits for and returns its result. The child
    runs ``nice`` steps below the parent (the parent is usually the critical path; 0 for a child
    that is: ``compiler.pipeline.stages.compile_run``)."""
    if not _usable():
        return Pending(lambda: fn(*args))
    # An unlinked file rather than a pipe: the child writes its result and exits without
    # waiting for the parent to read (a pipe holds 64 KiB; results are megabytes).
    try:
        channel = tempfile.TemporaryFile()
        pid = os.fork()
    except OSError:  # no temporary directory, no processes left: do it here
        return Pending(lambda: fn(*args))
    if pid == 0:
        status = 1
        try:
            child_started()
            if nice:
                os.nice(nice)
            channel.write(marshal.dumps(fn(*args)))
            channel.flush()
            child_done()  # before the parent can wait: it weighs the store after its children
            status = 0
        finally:
            os._exit(status)  # no exit handlers, no flushing the parent's buffers twice

    def result() -> Any:
        _, status = os.waitpid(pid, 0)
        with channel:
            channel.seek(0)
            data = channel.read()
        if status == 0:
            try:
                return marshal.loads(data)
            except (EOFError, ValueError, TypeError):
                pass
        return fn(*args)  # the child failed: run it here, where an error is reported normally

    return Pending(result)


class Tasks:
    """``n`` tasks that the processes of one fork share, each taken once, by whichever process asks
    first (``take``): a byte per task in a pipe that nobody writes to any more, made before the
    fork. A read of one byte from a pipe is atomic, and an empty pipe without a writer reads as its
    end, so no process ever waits. Without a usable fork, one process takes them all in order."""

    def __init__(self, n: int) -> None:
        self._fd: int | None = None
        self._left = list(range(n - 1, -1, -1))
        if n and _usable():
            r, w = os.pipe()
            try:
                os.write(w, bytes(range(n)))  # n < 256: far below a pipe's capacity
            finally:
                os.close(w)
            self._fd = r
            self._left = []

    def take(self) -> int | None:
        """The next task nobody has taken, or None when none is left."""
        if self._fd is None:
            return self._left.pop() if self._left else None
        data = os.read(self._fd, 1)
        return data[0] if data else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # a run that stops early (a failed compile) never asks again
        self.close()

