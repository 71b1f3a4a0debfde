"""Report texts kept by the teams they list.

A whole-policy report is mostly rows that each read the fleet and one team (a team's budget in a
cluster's table, its serving deployments, its priority tier). ``Fragments`` is where such a text
may come from instead of being rendered: ``compiler.pipeline.units.StoredFragments`` keeps them in
the store by those teams' units' keys, ``Rendered`` renders every one (no store). The rows are
kept a block of teams at a time (``in_blocks``), so that a one-team edit renders one block and
reads the others.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Protocol, Sequence, TypeVar

from compiler.policy.graph import Team

_T = TypeVar("_T")


class Fragments(Protocol):
    """Where a report's text that reads the fleet and some teams' files alone may come from
    instead of being rendered (``compiler.pipeline.units.StoredFragments`` keeps them by those
    teams' units' keys: after a one-team edit at 5,000 teams the teams of ~100 classes were most
    of both reports' rendering). ``what`` names the text among those of the same teams."""

    def text(self, what: str, teams: Sequence[str], render: Callable[[], str | None]) -> str | None: ...

    def of_fleet(self, what: str, compute: Callable[[], Any]) -> Any:
        """A value (``marshal``-able) that reads the fleet file alone, kept by it."""


class Rendered:
    """No fragments kept: every text rendered (``policy_reports`` without a store)."""

    def text(self, what: str, teams: Sequence[str], render: Callable[[], str | None]) -> str | None:
        return render()

    def of_fleet(self, what: str, compute: Callable[[], Any]) -> Any:
        return compute()


def in_blocks(items: Sequence[_T], every: int, name: Callable[[_T], str]) -> list[list[_T]]:
    """``items`` in order, cut into consecutive blocks after each item whose team's ``name`` says
    so (content-defined, ``every`` teams per block on average): a team added or removed changes
    its own block only."""
    blocks: list[list[_T]] = []
    block: list[_T] = []
    for item in items:
        block.append(item)
        if zlib.crc32(name(item).encode()) % every == 0:
            blocks.append(block)
            block = []
    return [*blocks, block] if block else blocks


def team_name(team: Team) -> str:
    return team.name
