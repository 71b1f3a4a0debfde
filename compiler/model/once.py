"""``once``: ``functools.cached_property`` without its lock, for objects made by the hundred thousand.

Python 3.11's ``cached_property`` takes a lock on each first access of each instance (dropped in
3.12); a one-team edit at 5,000 teams reads ~70,000 such properties of manifests and teams for the
first time (~1 us each). This descriptor computes the value and puts it in the instance's
``__dict__``, where later reads find it before the descriptor (it defines no ``__set__``). Two
threads may compute a value twice; the compiler reads them from one thread.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar, overload

T = TypeVar("T")
R = TypeVar("R")


class once(Generic[T, R]):  # noqa: N801 (named like the decorator it replaces)
    def __init__(self, fn: Callable[[T], R]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, inst: None, owner: type | None = None) -> once[T, R]: ...

    @overload
    def __get__(self, inst: T, owner: type | None = None) -> R: ...

    def __get__(self, inst: Any, owner: type | None = None) -> Any:
        if inst is None:
            return self
        value = inst.__dict__[self.name] = self.fn(inst)
        return value
