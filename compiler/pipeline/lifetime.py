"""Large structures a command drops only when it exits.

A run builds millions of small objects (1,000 team units' records, the merged inventory, the
parsed policy); freeing them one by one when a function returns costs ~0.05 s per million on the
1,000-team benchmark (bench/README.md), more than an incremental ``validate`` spends on most of its
stages. The CLI ends with ``os._exit`` (``compiler.cli.main.entrypoint``), which frees nothing, so
it asks for them to be kept until then (``keep_until_exit``). A library caller (tests, benchmarks
running several builds in one process) has not asked: its runs free as usual.
"""

from __future__ import annotations

_kept: list[object] | None = None


def keep_until_exit() -> None:
    """From now on ``hold`` keeps what it is given until the process exits."""
    global _kept
    if _kept is None:
        _kept = []


def hold(*objects: object) -> None:
    """Keep ``objects`` alive until exit when the process asked for it, else nothing."""
    if _kept is not None:
        _kept.append(objects)
