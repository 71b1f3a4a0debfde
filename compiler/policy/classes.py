"""GPU classes: what teams budget against, derived from each pool's model and cut (SPEC §9).

``<model>`` full cards, ``<model>-mig-<profile>`` MIG slices, ``<model>-ts<replicas>``
time-sliced shares, ``<model>-mps<replicas>`` MPS shares. The class ID is the budget key, the
ResourceFlavor name and the DeviceClass name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from compiler.model.fleet import Cluster, NodePool
from compiler.policy.cuts import CUT_MODES, CutMode, cut_mode


def class_id(model: str, cut: str, *, profile: str | None = None, replicas: int | None = None) -> str:
    """SPEC §9 class ID of a class of mode ``cut`` (the cut-mode table's ``class_id``)."""
    return CUT_MODES[cut].class_id(model, profile, replicas)


def device_plugin_resource(cut: str, *, profile: str | None, rename: bool) -> str:
    """Extended-resource name the NVIDIA device plugin advertises for a class (SPEC §9)."""
    return CUT_MODES[cut].resource(profile, rename)


def dra_resource(cid: str) -> str:
    """Logical resource Kueue counts DRA claims under (``deviceClassMappings``)."""
    return f"gpupolicy.dev/{cid}"


@dataclass(frozen=True)
class PoolSlice:
    """One pool's contribution to a class."""

    pool: str
    nodes: int
    per_node: int  # units of the class per node
    serving: bool

    @property
    def units(self) -> int:
        return self.nodes * self.per_node


@dataclass(frozen=True)
class GpuClass:
    id: str
    cluster: str
    model: str
    cut: str  # a CUT_MODES name: full | mig | timeslicing | mps
    resource: str
    profile: str | None
    replicas: int | None
    slices: tuple[PoolSlice, ...]

    @property
    def mode(self) -> CutMode:
        return CUT_MODES[self.cut]

    @property
    def pools(self) -> tuple[str, ...]:
        return tuple(s.pool for s in self.slices)

    # cached: read per team and budget by rules, lowering and reports (a frozen class's slices
    # never change; dataclasses.replace makes a new object)
    @cached_property
    def capacity(self) -> int:
        """Units Kueue may hand out: serving-reserved pools excluded."""
        return sum(s.units for s in self.slices if not s.serving)

    @property
    def serving_capacity(self) -> int:
        return sum(s.units for s in self.slices if s.serving)

    @cached_property
    def training_pools(self) -> tuple[str, ...]:
        return tuple(s.pool for s in self.slices if not s.serving)

    @property
    def serving_pools(self) -> tuple[str, ...]:
        return tuple(s.pool for s in self.slices if s.serving)


def pool_units(pool: NodePool, mig_per_node: dict[str, int] | None) -> list[tuple[str, str | None, int | None, int]]:
    """(cut, profile, replicas, units per node) for each class a pool provides (the cut-mode
    table's capacity rule)."""
    mode = cut_mode(pool.cut)
    return [(mode.name, u.profile, u.replicas, u.per_node) for u in mode.units(pool, mig_per_node)]


def derive_classes(
    cluster: Cluster, mig_per_node: dict[str, dict[str, int]]
) -> dict[str, GpuClass]:
    """Classes of one cluster. ``mig_per_node`` maps a MIG pool's name to its profile counts per
    node (already resolved and checked against the catalog)."""
    acc: dict[str, dict[str, object]] = {}
    for pool in cluster.pools:
        shares = cut_mode(pool.cut).shares(pool.cut)
        rename = shares.renamed if shares is not None else True
        for cut, profile, replicas, per_node in pool_units(pool, mig_per_node.get(pool.name)):
            cid = class_id(pool.model, cut, profile=profile, replicas=replicas)
            resource = dra_resource(cid) if cluster.dra else device_plugin_resource(cut, profile=profile, rename=rename)
            entry = acc.setdefault(
                cid,
                {"model": pool.model, "cut": cut, "resource": resource, "profile": profile,
                 "replicas": replicas, "slices": []},
            )
            slices = entry["slices"]
            assert isinstance(slices, list)
            slices.append(PoolSlice(pool.name, pool.nodes, per_node, pool.serving))
    out: dict[str, GpuClass] = {}
    for cid in sorted(acc):
        e = acc[cid]
        out[cid] = GpuClass(
            id=cid,
            cluster=cluster.name,
            model=str(e["model"]),
            cut=str(e["cut"]),
            resource=str(e["resource"]),
            profile=e["profile"] if isinstance(e["profile"], str) else None,
            replicas=e["replicas"] if isinstance(e["replicas"], int) else None,
            slices=tuple(e["slices"]),  # type: ignore[arg-type]
        )
    return out
