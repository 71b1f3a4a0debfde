"""The teams' summaries kept a block of teams at a time (``compiler.policy.summaries``).

A block is a team units' block (``compiler.pipeline.units.unit_blocks``): its key is its units' keys, each
the fleet's and one team file's bytes with the compiler's fingerprint, and every summary reads the
fleet and one team, so a block's fold is a function of its key and the summary's name. After a
one-team edit one block is folded again from its teams; the others are read (kind ``summary``).
"""

from __future__ import annotations

from typing import TypeVar

from compiler.cache.store import Store, digest
from compiler.pipeline.units import block_key, unit_blocks
from compiler.policy.graph import Policy, Team
from compiler.policy.summaries import SUMMARIES, Summary

T = TypeVar("T")


class StoredSummaries:
    """``compiler.policy.summaries.Blocks`` over a store: a summary's fold of a block is an entry
    of its own, so a process reads the summaries it asks for only (the run's lowering asks for
    the departments, the rules for the rest). The entries are marked used at once by the process
    that builds this (the one that prunes): the rules run in a forked process whose reads it
    does not see."""

    def __init__(self, store: Store, blocks: list[tuple[str, list[Team]]]) -> None:
        self.store = store
        self.blocks = blocks
        store.used.update(("summary", self.key(name, bkey)) for name in SUMMARIES for bkey, _ in blocks)

    @classmethod
    def of(cls, store: Store, policy: Policy, keys: dict[str, str]) -> StoredSummaries | None:
        """The blocks of ``policy``'s teams by their units' keys (team file -> key); None when a
        team has none (then summaries are folded over the teams)."""
        if any(t.path not in keys for t in policy.teams):
            return None
        units = [(t, keys[t.path]) for t in policy.teams]
        return cls(store, [(block_key(b), [t for t, _ in b]) for b in unit_blocks(units)])

    @staticmethod
    def key(name: str, bkey: str) -> str:
        return digest("summary", name, bkey)

    def gather(self, policy: Policy, s: Summary[T]) -> T:
        acc = s.empty()
        for bkey, teams in self.blocks:
            key = self.key(s.name, bkey)
            part = self.store.get("summary", key)
            if not isinstance(part, type(acc)):  # missing (or not the summary's type): folded again
                part = s.over(policy, teams)
                self.store.put("summary", key, part)
            acc = s.fold(acc, part)
        return acc
