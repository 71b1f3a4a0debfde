"""A pool's cut resolved against the GPU catalog: MIG layouts → instances per node, checked.

The MIG geometry itself (profiles, packing, strategies) lives in ``compiler.mig``; this module
only connects a ``NodePool`` of the fleet file to it and places the problems in the file.
"""

from __future__ import annotations

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, Rule, Scope, define
from compiler.load.source import SourceFile, YamlPath
from compiler.mig import MigProblem, check_pool_layout, instances, resolve_layout
from compiler.model.fleet import NodePool
from compiler.policy.cuts import mig_cut

MIG_SHAPE = define(
    "MIG010",
    "A MIG cut names either a layout or per-device profiles, and the devices add up to the node's GPUs.",
    "cut: {mode: mig, devices: [{gpus: 8, profiles: {3g.40gb: 2}}]}   # gpusPerNode: 8",
    "cut: {mode: mig, devices: [{gpus: 4, profiles: {3g.40gb: 2}}]}   # gpusPerNode: 8",
    scope=Scope.FLEET,
)

MIG_MIXED_ONLY = define(
    "MIG011",
    "MIG pools use the mixed strategy: gpupolicy advertises every slice as nvidia.com/mig-<profile> "
    "cluster-wide (SPEC §9), so a pool cannot ask for single.",
    "cut: {mode: mig, layout: all-1g.10gb, strategy: mixed}",
    "cut: {mode: mig, layout: all-1g.10gb, strategy: single}",
    scope=Scope.FLEET,
)


RULES: tuple[Rule, ...] = (MIG_SHAPE, MIG_MIXED_ONLY)


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


def pool_mig_instances(
    pool: NodePool, catalog: Catalog, src: SourceFile, base: YamlPath
) -> tuple[dict[str, int] | None, list[Diagnostic]]:
    """MIG instances per node by profile (None for non-MIG pools or broken layouts)."""
    cut = mig_cut(pool.cut)
    if cut is None:
        return None, []
    cut_path = base + ("cut",)
    problem = shape_problem(pool)
    if problem is not None:
        where = cut_path + ("devices",) if cut.devices is not None and cut.layout is None else cut_path
        hint = ("list every GPU of the node: MIG Manager leaves unlisted GPUs as they were"
                if where[-1] == "devices" else "e.g. layout: all-balanced")
        return None, [MIG_SHAPE.diag(f"pool {pool.name!r}: {problem}", src.locate(where, key=where == cut_path),
                                     hint=hint)]
    if cut.strategy != "mixed":
        strategy_diag = [MIG_MIXED_ONLY.diag(
            f"pool {pool.name!r} asks for the {cut.strategy} MIG strategy; the GPU Operator runs one strategy per "
            "cluster and gpupolicy uses mixed", src.locate(cut_path + ("strategy",)),
            hint="remove strategy (mixed is the default); class resources are nvidia.com/mig-<profile>")]
    else:
        strategy_diag = []
    devices, problems, key = pool_mig_devices(pool, catalog)
    loc = src.locate(cut_path + (key,) if key != "model" else base + ("model",))
    diags = strategy_diag + [p.diagnostic(loc, path=".".join(str(p) for p in cut_path)) for p in problems]
    if devices is None or strategy_diag or any(p.severity.value == "error" for p in problems):
        return None, diags
    return instances(devices), diags
