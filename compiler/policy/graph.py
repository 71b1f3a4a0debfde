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

# The namespaces gpupolicy installs its add-ons into (compiler.lower.charts), each named here once:
# the charts install there, Kueue never manages them, the GPU backstop exempts them (the GPU
# Operator's validators request GPUs), the AppProjects deny them to team components, and no team
# may claim one (FLEET004): a team namespace gets a LocalQueue, a Role and the reserved-priority
# ResourceQuota, which would reject the add-on's own system-node-critical pods.
KUEUE_NAMESPACE = "kueue-system"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
DRA_DRIVER_NAMESPACE = "dra-driver-nvidia-gpu"
ADDON_NAMESPACES = {KUEUE_NAMESPACE: "Kueue", GPU_OPERATOR_NAMESPACE: "the NVIDIA GPU Operator",
                    DRA_DRIVER_NAMESPACE: "the NVIDIA DRA driver"}


def reserved_namespace(fleet: FleetFile, cluster: Cluster, ns: str) -> str | None:
    """Why no team may claim namespace ``ns`` on ``cluster`` (FLEET004), or None when one may:
    Kubernetes creates it, gpupolicy installs an add-on there (on every cluster, whether or not it
    installs that add-on there today), ArgoCD runs there, or the cluster lists it as a system
    namespace."""
    if ns in BUILTIN_NAMESPACES:
        return "Kubernetes creates it"
    addon = ADDON_NAMESPACES.get(ns)
    if addon is not None:
        return f"gpupolicy installs {addon} there"
    if ns == fleet.spec.gitops.argocd_namespace:
        return "ArgoCD runs there (gitops.argocdNamespace)"
    if ns in cluster.system_namespaces:
        return "the cluster lists it in systemNamespaces"
    return None


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
