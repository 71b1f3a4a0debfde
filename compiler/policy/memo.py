"""Memoise fleet-derived questions on the ``Policy`` they were asked of.

Team passes run once per (team, cluster) and several ask the same per-cluster question (which
DeviceClasses exist, which kinds Kueue manages); answering it once per policy keeps lowering
linear in teams. The cache lives on the policy object, so it dies with it and a new policy never
sees an old answer. Only for functions of (policy, hashable args) whose result callers do not
mutate; lists come back as shallow copies.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def per_policy(fn: F) -> F:
    slot = f"_memo_{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(policy: Any, *args: Any) -> Any:
        cache = policy.__dict__.get(slot)
        if cache is None:
            cache = {}
            object.__setattr__(policy, slot, cache)  # Policy is a frozen dataclass
        try:
            value = cache[args]
        except KeyError:
            value = cache[args] = fn(policy, *args)
        return list(value) if isinstance(value, list) else value

    return wrapper  # type: ignore[return-value]
