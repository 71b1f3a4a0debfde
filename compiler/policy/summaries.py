"""Facts of every team, gathered a block of teams at a time and kept (issue 21: a one-team edit
should cost what the team costs, not what the organisation does).

A ``Summary`` is a fact of one team that reads the fleet and that team alone (``of_team``), and
an associative, commutative way to fold such facts together (``fold``): a set of tuples, sums
or maxima by key. ``gather(policy, summary)`` is the fold over every team. A run with a store
hands the policy its teams' blocks (``Policy.summaries``: the team units' blocks,
``compiler.pipeline.units.unit_blocks``), and each block's fold is kept under the block's key,
which the fleet's and the block's team files' bytes decide (``compiler.pipeline.summaries``); so
after a one-team edit one block is folded again and the others are read, a few dozen entries at
any size.
Without a store (``--no-cache``, tests) the fold runs over the teams: the same value.

The rules that read a summary use it to prove they have nothing to say (a cap no department
reaches, a borrowing limit every cohort can lend, a namespace claimed once); when the proof
fails they run as before over the whole policy, so their findings never depend on the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Protocol, TypeVar

from compiler.policy.memo import per_policy

if TYPE_CHECKING:
    from compiler.policy.graph import Policy, Team

T = TypeVar("T")


@dataclass(frozen=True)
class Summary(Generic[T]):
    """A fact per team and its fold. ``fold(into, part)`` adds ``part`` to ``into`` (mutating
    ``into`` only) and returns it; ``empty`` makes the fold's unit. Values are what ``marshal``
    keeps (sets, dicts, tuples, ints, strings): a block's is stored as it is."""

    name: str  # part of the stored key: unique among summaries
    of_team: Callable[[Policy, Team], T]
    fold: Callable[[T, T], T]
    empty: Callable[[], T]

    def over(self, policy: Policy, teams: Iterable[Team]) -> T:
        acc = self.empty()
        for team in teams:
            acc = self.fold(acc, self.of_team(policy, team))
        return acc


SUMMARIES: dict[str, Summary[Any]] = {}  # every summary, by name: a run marks their entries used


def summary(name: str, of_team: Callable[[Policy, Team], T], fold: Callable[[T, T], T],
            empty: Callable[[], T]) -> Summary[T]:
    """Declare a summary (once, at import)."""
    if name in SUMMARIES:
        raise ValueError(f"summary {name!r} declared twice")
    s = Summary(name, of_team, fold, empty)
    SUMMARIES[name] = s
    return s


class Blocks(Protocol):
    """Where a run keeps its blocks' folds (``compiler.pipeline.summaries.StoredSummaries``)."""

    def gather(self, policy: Policy, s: Summary[T]) -> T: ...


@per_policy
def gather(policy: Policy, s: Summary[T]) -> T:
    """``s`` folded over every team of ``policy``: from the kept blocks when the run has them.
    Asked once per policy (the caller must not mutate the value)."""
    return s.over(policy, policy.teams) if policy.summaries is None else policy.summaries.gather(policy, s)


# -- folds ---------------------------------------------------------------------------------------

def union(into: set[Any], part: set[Any]) -> set[Any]:
    into |= part
    return into


def sums(into: dict[Any, int], part: dict[Any, int]) -> dict[Any, int]:
    for k, v in part.items():
        into[k] = into.get(k, 0) + v
    return into


def maxima(into: dict[Any, int], part: dict[Any, int]) -> dict[Any, int]:
    for k, v in part.items():
        if k not in into or v > into[k]:
            into[k] = v
    return into
