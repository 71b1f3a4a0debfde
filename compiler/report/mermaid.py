"""Mermaid blocks in REPORT.md: generated node IDs and the size limits a chart must stay under.

GitHub renders a ```` ```mermaid ```` block with mermaid's defaults, and mermaid refuses a
diagram above them (mermaid-js/mermaid ``packages/mermaid/src/schemas/config.schema.yaml``):
``maxTextSize`` 50,000 characters of diagram text ("Maximum text size in diagram exceeded") and
``maxEdges`` 500 edges in a flowchart. Renderers here size their diagrams to stay below both;
``tests/test_report.py`` checks it on a 1,000-team organisation.

Node IDs are never made from names: a department named ``end``, ``graph`` or ``subgraph`` is a
mermaid keyword, and mapping characters (``team-ml`` -> ``team_ml``) makes distinct names collide.
IDs are a kind letter and an index; names appear only in labels, through ``escape.mermaid``.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_TEXT = 50_000  # mermaid's default maxTextSize (characters)
MAX_EDGES = 500  # mermaid's default maxEdges


class NodeIds:
    """Stable IDs per kind: ``d0``, ``d1``... in the order names are first asked for."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._ids: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        return self._ids.setdefault(name, f"{self._prefix}{len(self._ids)}")


def block(lines: Iterable[str]) -> list[str]:
    """A mermaid code block for markdown. Labels are escaped (no backtick), so no line closes it."""
    return ["```mermaid", *lines, "```"]


def text_size(chart: list[str]) -> int:
    """The diagram text mermaid measures against ``MAX_TEXT``: what lies between the fences."""
    return len("\n".join(chart[1:-1]))
