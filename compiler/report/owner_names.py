"""The names an ``out/`` file bears, as CODEOWNERS' patterns may match them (``compiler.report.codeowners``).

A line for every cluster matches a file by its path below the cluster's folder (its *rest*); a
namespace's line for every kind, ``/out/*/*/*.<ns>.*yaml``, by a dot-separated part of its file
name (a *dotted* name); a team's line for every name starting with its own,
``/out/*/*/*.<team>*yaml``, by a dotted name starting with the team's. Each name's owner is
agreed over every file bearing it (``agreed``): a team's when every such file is that team's.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterator, Mapping


def dotted_names(relpath: str) -> list[str]:
    """The names a namespace's line for every cluster (``/out/*/*/*.<ns>.*yaml``) may match in this
    file's path: the dot-separated parts of its file name between the first (the kind) and the last
    (``yaml``), for a file three folders deep (``<cluster>/<component>/<file>``, or ArgoCD's
    ``argocd/<cluster>/<file>``); none deeper or shallower, which that line cannot match."""
    parts = relpath.split("/")
    return parts[2].split(".")[1:-1] if len(parts) == 3 else []


def agreed(dotted: dict[str, str | None], name: str, team: str | None) -> None:
    """Record that a file bearing ``name`` is ``team``'s (None: not one team's)."""
    dotted[name] = team if dotted.get(name, team) == team else None


def rest_of(relpath: str) -> str | None:
    """A file's path below its first folder (``<cluster>/``), when it is one a line for every
    cluster (``/out/*/<rest>``) may name: at least a folder deep, since ``out/reports/`` holds files
    no inventory row lists, but no subfolder."""
    parts = relpath.split("/", 1)
    return parts[1] if len(parts) == 2 and "/" in parts[1] else None


def name_of(namespace: str | None, relpath: str) -> str | None:
    """What a file's CODEOWNERS line depends on beyond its own team: its namespace (a DNS label,
    no '/'), or for a cluster-scoped file its rest (``rest_of``, always with a '/')."""
    return namespace or rest_of(relpath)


def starting_with(ordered: list[str], prefix: str) -> Iterator[str]:
    """The names of a sorted list that start with ``prefix`` (from its place, no copy of the rest)."""
    for i in range(bisect_left(ordered, prefix), len(ordered)):
        if not ordered[i].startswith(prefix):
            return
        yield ordered[i]


def prefixed_teams(dotted: Mapping[str, str | None], everywhere: Mapping[str, str | None],
                   whole: Mapping[str, set[str]], taken: frozenset[str]) -> set[str]:
    """The teams that get a line for every name starting with theirs (``/out/*/*/*.<team>*yaml``,
    ``compiler.report.codeowners.merged_outputs``): one of their namespaces with a line of its own
    starts with the team's name, and every dotted name and namespace starting with it is the
    team's alone (``everywhere``: a namespace's team on every cluster, None if not one team's),
    unless files outside the parts merged bear one (``taken``, from ``compiler.pipeline.owners``
    when it renders one team's section). A team ``nlp-eu`` beside ``nlp``, or another team's
    namespace ``nlp-shared``, keeps ``nlp`` on its lines per namespace."""
    owner: dict[str, str | None] = dict(dotted)
    for name, team in everywhere.items():
        agreed(owner, name, team)
    ordered: list[str] | None = None
    found = set()
    for team, spaces in whole.items():
        if team in taken or not any(ns.startswith(team) for ns in spaces):
            continue
        ordered = sorted(owner) if ordered is None else ordered
        if all(owner[name] == team for name in starting_with(ordered, team)):
            found.add(team)
    return found
