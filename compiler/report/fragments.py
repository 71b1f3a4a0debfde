"""Report texts kept by the teams they list.

A whole-policy report is mostly rows that each read the fleet and one team (a team's budget in a
cluster's table, its serving deployments, its priority tier). ``Fragments`` is where such a text
may come from instead of being rendered: ``compiler.pipeline.units.StoredFragments`` keeps them in
the store by those teams' units' keys, ``Rendered`` renders every one (no store). The rows are
kept a block of teams at a time (``in_blocks``), so that a one-team edit renders one block and
reads the others.

A report is written in pieces (``Pieces``), the kept texts among them as they came from the store
(``Kept``, with their key): the store keeps the report as its ``recipe``, the other pieces and the
kept texts' keys, rather than compressing its bytes again on every run (allocation.json is 23 MB
at 5,000 teams, 20 MB of them kept texts).
"""

from __future__ import annotations

import functools
import zlib
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeVar

if TYPE_CHECKING:  # the store's path imports this module; the graph's import is not needed there
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


class Kept(str):
    """A text kept in the store as a fragment (kind ``fragment``) under ``key``."""

    key: str


def kept_piece(text: str, key: str) -> Kept:
    piece = Kept(text)
    piece.key = key
    return piece


Pieces = list[str]  # a file's text in order, some pieces ``Kept``
Recipe = list["str | tuple[str]"]  # the literal text between kept pieces, and (key,) for each of those


def recipe(pieces: Sequence[str]) -> Recipe:
    """``pieces`` as the store keeps them: runs of other pieces joined, a kept one as its key."""
    out: Recipe = []
    run: list[str] = []
    for piece in pieces:
        if type(piece) is Kept:
            if run:
                out.append("".join(run))
                run = []
            out.append((piece.key,))
        else:
            run.append(piece)
    if run:
        out.append("".join(run))
    return out


def joined(parts: Sequence[str], sep: str) -> Pieces:
    """``sep.join(parts)`` in pieces, each part one of them."""
    out: Pieces = []
    for i, part in enumerate(parts):
        if i:
            out.append(sep)
        out.append(part)
    return out


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


def kept_blocks(fragments: Fragments, what: str, items: Sequence[_T], every: int, name: Callable[[_T], str],
                render: Callable[[list[_T]], str | None]) -> list[str] | None:
    """The text of ``items`` a block at a time (``in_blocks``), each block's kept by its teams
    (``Fragments.text``) or rendered; None when a block cannot be (its writer declined)."""
    texts: list[str] = []
    for block in in_blocks(items, every, name):
        text = fragments.text(what, [name(item) for item in block], functools.partial(render, block))
        if text is None:
            return None
        texts.append(text)
    return texts


def team_name(team: Team) -> str:
    return team.name
