"""The validated policy as one typed object: files, models, derived GPU classes, allocation.

Built once after schema validation; semantic checks, lowering and reports all read it and
never touch files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from compiler.catalog import Catalog
from compiler.load.source import SourceFile
from compiler.model.fleet import Cluster, Department, FleetFile
from compiler.model.once import once
from compiler.model.team import TeamFile
from compiler.policy.allocation import Allocation
from compiler.policy.classes import GpuClass

if TYPE_CHECKING:
    from compiler.policy.summaries import Blocks


# The namespaces every cluster has before anything syncs (kube-apiserver creates them): no team
# may claim one (FLEET004), and OPS004 counts them as existing.
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def serving_namespace(team: str, declared: str | None) -> str:
    """Where a team's serving deployments live: declared, else ``<team>-serving``."""
    return declared or f"{team}-serving"


@dataclass(frozen=True)
class Team:
    model: TeamFile
    src: SourceFile

    @once  # ~100,000 questions at 5,000 teams, past two pydantic attributes
    def name(self) -> str:
        return self.model.metadata.name

    @property
    def path(self) -> str:
        return self.src.path


@dataclass(frozen=True)
class Policy:
    fleet: FleetFile
    fleet_src: SourceFile
    teams: tuple[Team, ...]
    catalog: Catalog
    # cluster name -> class id -> class, both in sorted order
    classes: dict[str, dict[str, GpuClass]] = field(default_factory=dict)
    allocation: Allocation = field(default_factory=Allocation)
    # (cluster, class-ID prefix) of pools whose cut was rejected (a MIG layout that does not exist):
    # their classes are unknown, not absent, so references to them are not errors of their own
    # (compiler.validate.cascade).
    unresolved: frozenset[tuple[str, str]] = frozenset()
    # out/-relative paths of the Kueue objects the clusters hold before this change (the base's out/,
    # else the working tree's); None when unknown. Read by GITOPS302 (compiler.pipeline.previous).
    previous: frozenset[str] | None = None
    # where the teams' summaries are kept a block at a time (compiler.policy.summaries); None: folded
    # over the teams (no store)
    summaries: Blocks | None = field(default=None, compare=False, repr=False)

    # Computed once (the fleet is not modified after validation): passes ask per object.
    @cached_property
    def clusters(self) -> dict[str, Cluster]:
        return {c.name: c for c in self.fleet.spec.clusters}

    @cached_property
    def departments(self) -> dict[str, Department]:
        return {d.name: d for d in self.fleet.spec.departments}

    @cached_property
    def _teams_by_name(self) -> dict[str, Team]:
        by_name: dict[str, Team] = {}
        for t in self.teams:  # the first of two files claiming one name, as a scan would find
            by_name.setdefault(t.name, t)
        return by_name

    def team(self, name: str) -> Team | None:
        """By name, in constant time: rules ask once per queue (a scan made them quadratic)."""
        return self._teams_by_name.get(name)

    @property
    def source_paths(self) -> tuple[str, ...]:
        return (self.fleet_src.path, *(t.path for t in self.teams))
