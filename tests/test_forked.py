"""The tasks two processes of one fork share (``compiler.cache.forked.Tasks``): each task is taken
once, by whichever process asks first, and nobody waits for a task nobody has left."""

from __future__ import annotations

import os

import pytest

from compiler.cache import forked
from compiler.cache.forked import Tasks, in_child


def _take_all(tasks: Tasks) -> list[int]:
    taken = []
    while (task := tasks.take()) is not None:
        taken.append(task)
    return taken


@pytest.mark.skipif(not forked._usable(), reason="needs a fork (Linux, two cores, no threads)")
def test_each_task_is_taken_once_across_a_fork() -> None:
    tasks = Tasks(200)
    theirs = in_child(_take_all, tasks)
    mine = _take_all(tasks)
    got = theirs()
    tasks.close()
    assert sorted(mine + got) == list(range(200))  # every task, none twice
    assert mine == sorted(mine) and got == sorted(got)  # each process takes them in order


def test_without_a_fork_one_process_takes_them_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPOLICY_NO_FORK", "1")
    tasks = Tasks(3)
    assert _take_all(tasks) == [0, 1, 2]
    assert tasks.take() is None
    assert _take_all(Tasks(0)) == []


def test_no_task_left_is_an_answer_not_a_wait() -> None:
    tasks = Tasks(1)
    assert tasks.take() == 0
    assert tasks.take() is None and tasks.take() is None
    tasks.close()
    tasks.close()  # twice is fine
    assert tasks.take() is None  # and none after closing


def test_tasks_forgotten_close_their_pipe() -> None:
    """A run that stops before it asks for its tasks (a failed compile) leaks no descriptor."""
    if not forked._usable():
        pytest.skip("needs a fork (Linux, two cores, no threads)")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        Tasks(3)
    assert len(os.listdir("/proc/self/fd")) == before
