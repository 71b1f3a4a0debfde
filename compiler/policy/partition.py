"""A pool's cut resolved against the GPU catalog: the MIG devices of one node of a pool.

The MIG geometry itself (profiles, packing, strategies) lives in ``compiler.mig``; this module
only connects a ``NodePool`` of the fleet file to it. ``compiler.validate.mig`` reports the
problems (MIG001-MIG011) where the layout was written.
"""

from __future__ import annotations

from compiler.catalog import Catalog
from compiler.mig import MigProblem, check_pool_layout, resolve_layout
from compiler.model.fleet import NodePool
from compiler.policy.cuts import mig_cut


def shape_problem(pool: NodePool) -> str | None:
    """Why a MIG cut has no per-GPU layout at all (MIG010), or None."""
    cut = mig_cut(pool.cut)
    assert cut is not None
    if (cut.layout is None) == (cut.devices is None):
        return "give exactly one of cut.layout and cut.devices"
    if cut.devices is not None:
        total = sum(g.gpus for g in cut.devices)
        if total != pool.gpus_per_node:
            return f"cut.devices describe {total} GPUs but a node has {pool.gpus_per_node}"
    return None


def pool_mig_devices(pool: NodePool, catalog: Catalog) -> tuple[list[dict[str, int]] | None, list[MigProblem], str]:
    """Per-GPU profile counts for one node of a MIG pool, the problems, and the key they concern."""
    cut = mig_cut(pool.cut)
    assert cut is not None
    model = catalog.get(pool.model)
    if model is None:
        return None, [], "model"  # reported as an unknown reference by the semantic checks
    if shape_problem(pool) is not None:
        return None, [], "cut"  # MIG010, reported by pool_mig_instances; no per-GPU layout exists
    if cut.layout is not None:
        resolved = resolve_layout(model, cut.layout, driver=pool.driver, gpus=pool.gpus_per_node)
        if isinstance(resolved, MigProblem):
            return None, [resolved], "layout"
        devices = resolved
        where = "layout"
    else:
        devices = []
        for group in cut.devices or []:
            devices += [dict(group.profiles) for _ in range(group.gpus)]
        where = "devices"
    problems = check_pool_layout(model, devices, cut.strategy, driver=pool.driver)
    return devices, problems, where
