"""Placement solver: can a multiset of MIG profiles be created together on one GPU?

NVML places each GPU instance at one of its profile's allowed start positions, where it takes
``memory_slices`` consecutive memory slices; instances may not overlap. Compute slices are
not positional in NVML's table, so they only have to add up. Summing slices is not enough in
general (a fleet-declared table may make sums fit while no placement exists), so we search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from compiler.catalog.model import MigGeometry, MigProfile


@dataclass(frozen=True)
class Placement:
    profile: str
    start: int
    size: int

    @property
    def slices(self) -> str:
        return f"{self.start}-{self.start + self.size - 1}" if self.size > 1 else str(self.start)


@dataclass(frozen=True)
class PackResult:
    placements: tuple[Placement, ...] | None  # None when nothing fits
    reason: str | None = None  # why not, with the numbers

    @property
    def ok(self) -> bool:
        return self.placements is not None


def _label(items: list[tuple[MigProfile, int]]) -> str:
    return " + ".join(p.name if n == 1 else f"{n}x {p.name}" for p, n in items)


def _sum(items: list[tuple[MigProfile, int]], attr: str) -> tuple[int, str]:
    parts = [getattr(p, attr) * n for p, n in items]
    return sum(parts), "+".join(str(x) for x in parts)


def pack(geometry: MigGeometry, counts: Mapping[str, int]) -> PackResult:
    """Find a placement for ``counts`` (canonical profile name -> instances) or say why none exists.

    Unknown names raise ``KeyError``: resolve names (and driver aliases) before packing.
    """
    items: list[tuple[MigProfile, int]] = []
    for name, n in counts.items():
        if n <= 0:
            continue
        profile = geometry.profile(name)
        if profile is None:
            raise KeyError(name)
        items.append((profile, n))
    if not items:
        return PackResult(())
    label = _label(items)

    total_instances = sum(n for _, n in items)
    if total_instances > geometry.max_instances:
        return PackResult(
            None, f"{label}: {total_instances} GPU instances, a GPU holds at most {geometry.max_instances}"
        )
    compute, compute_terms = _sum(items, "compute_slices")
    if compute > geometry.compute_slices:
        return PackResult(
            None,
            f"{label}: needs {compute} compute slices ({compute_terms}), the GPU has {geometry.compute_slices}",
        )
    memory, memory_terms = _sum(items, "memory_slices")
    if memory > geometry.memory_slices:
        return PackResult(
            None, f"{label}: needs {memory} memory slices ({memory_terms}), the GPU has {geometry.memory_slices}"
        )

    found = _search(geometry.memory_slices, items)
    if found is not None:
        return PackResult(tuple(sorted(found, key=lambda p: p.start)))
    options = "; ".join(
        f"{p.name} can occupy memory slices "
        + ", ".join(Placement(p.name, s, p.memory_slices).slices for s in p.starts)
        for p, _ in items
    )
    return PackResult(None, f"{label}: no valid placement in {geometry.memory_slices} memory slices ({options})")


def _search(memory_slices: int, items: list[tuple[MigProfile, int]]) -> list[Placement] | None:
    # Most constrained profiles first; copies of one profile take increasing starts so the
    # search never tries the same set of positions in another order.
    order = sorted(items, key=lambda item: (len(item[0].starts), -item[0].memory_slices, item[0].name))
    flat: list[MigProfile] = [p for p, n in order for _ in range(n)]
    full = (1 << memory_slices) - 1
    dead: set[tuple[int, int, int]] = set()
    chosen: list[Placement] = []

    def place(i: int, used: int, min_start: int) -> bool:
        if i == len(flat):
            return True
        key = (i, used, min_start)
        if key in dead:
            return False
        p = flat[i]
        same_as_next = i + 1 < len(flat) and flat[i + 1] is p
        for s in p.starts:
            if s < min_start:
                continue
            mask = ((1 << p.memory_slices) - 1) << s
            if mask & ~full or mask & used:
                continue
            chosen.append(Placement(p.name, s, p.memory_slices))
            if place(i + 1, used | mask, s + 1 if same_as_next else 0):
                return True
            chosen.pop()
        dead.add(key)
        return False

    return list(chosen) if place(0, 0, 0) else None
