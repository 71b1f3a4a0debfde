"""MIG rules (MIG001-MIG011): a pool's MIG cut against the GPU catalog, placed in the fleet file.

The geometry and what can be wrong with it are domain knowledge (``compiler.mig``, which returns
``MigProblem``s with a ``MigFault``); this module gives each fault its rule ID and location.
"""

from __future__ import annotations

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, define
from compiler.load.source import SourceFile, YamlPath
from compiler.mig import instances
from compiler.mig.problems import MigFault, MigProblem
from compiler.model.fleet import NodePool
from compiler.policy.cuts import mig_cut
from compiler.policy.partition import pool_mig_devices, shape_problem

UNKNOWN_PROFILE = define(
    "MIG001",
    "MIG profile does not exist for this GPU model (or has another name on the declared driver)",
    "gpu: a100-80gb\nmig: {devices: [{1g.10gb: 7}]}",
    "gpu: a100-80gb\nmig: {devices: [{1g.5gb: 7}]}   # 1g.5gb is an A100-40GB profile",
    scope=Scope.FLEET,
)
COUNT_OVER_MAX = define(
    "MIG002",
    "More instances of a MIG profile than one GPU can hold",
    "gpu: h100-80gb\nmig: {devices: [{1g.10gb: 7}]}",
    "gpu: h100-80gb\nmig: {devices: [{1g.10gb: 8}]}   # at most 7 per GPU",
    scope=Scope.FLEET,
)
NO_PLACEMENT = define(
    "MIG003",
    "MIG profiles do not fit one GPU: too many compute or memory slices, or no valid placement",
    "gpu: a100-80gb\nmig: {devices: [{3g.40gb: 1, 4g.40gb: 1}]}   # 4g at slices 0-3, 3g at 4-7",
    "gpu: a100-80gb\nmig: {devices: [{3g.40gb: 2, 1g.10gb: 1}]}   # needs 9 of 8 memory slices",
    scope=Scope.FLEET,
)
STRATEGY_MISMATCH = define(
    "MIG004",
    "MIG strategy does not match the layout (single needs one identical profile on every GPU)",
    "mig: {strategy: mixed, layout: all-balanced}",
    "mig: {strategy: single, layout: all-balanced}   # 3 profiles per GPU need mixed",
    scope=Scope.FLEET,
)
UNKNOWN_LAYOUT = define(
    "MIG005",
    "Named MIG layout does not exist for this GPU model",
    "gpu: a100-80gb\nmig: {layout: all-1g.10gb}",
    "gpu: a100-80gb\nmig: {layout: all-1g.5gb}   # a 40GB layout; the node ends up MIG-INVALID",
    scope=Scope.FLEET,
)
NOT_MIG_CAPABLE = define(
    "MIG006",
    "GPU model is not MIG-capable",
    "gpu: l4\ncut: {timeSlicing: {replicas: 4}}",
    "gpu: l4\nmig: {layout: all-1g.6gb}",
    scope=Scope.FLEET,
)
DRIVER_TOO_OLD = define(
    "MIG007",
    "MIG profile needs a newer driver branch than the one declared",
    "gpu: a30\ndriver: '535'\nmig: {devices: [{2g.12gb+me: 1}]}",
    "gpu: a30\ndriver: '470'\nmig: {devices: [{2g.12gb+me: 1}]}   # R525 and later",
    scope=Scope.FLEET,
)
BAD_DRIVER = define(
    "MIG008",
    "Driver version is not understood (expected a branch such as 535 or a full version 550.90.07)",
    "driver: '550.90.07'",
    "driver: latest",
    scope=Scope.FLEET,
)
EMPTY_DEVICE = define(
    "MIG009",
    "MIG is enabled on a GPU with no MIG devices, so the GPU offers no capacity",
    "mig: {devices: [{1g.10gb: 7}]}",
    "mig: {layout: all-enabled}",
    severity=Severity.WARNING,
    scope=Scope.FLEET,
)
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

RULE_OF: dict[MigFault, Rule] = {
    MigFault.UNKNOWN_PROFILE: UNKNOWN_PROFILE,
    MigFault.COUNT_OVER_MAX: COUNT_OVER_MAX,
    MigFault.NO_PLACEMENT: NO_PLACEMENT,
    MigFault.STRATEGY_MISMATCH: STRATEGY_MISMATCH,
    MigFault.UNKNOWN_LAYOUT: UNKNOWN_LAYOUT,
    MigFault.NOT_MIG_CAPABLE: NOT_MIG_CAPABLE,
    MigFault.DRIVER_TOO_OLD: DRIVER_TOO_OLD,
    MigFault.BAD_DRIVER: BAD_DRIVER,
    MigFault.EMPTY_DEVICE: EMPTY_DEVICE,
}
RULES: tuple[Rule, ...] = (*RULE_OF.values(), MIG_SHAPE, MIG_MIXED_ONLY)


def diagnostic(problem: MigProblem, location: Location | None, *, path: str | None = None) -> Diagnostic:
    return RULE_OF[problem.fault].diag(problem.message, location, hint=problem.hint, path=path)


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
    diags = strategy_diag + [diagnostic(p, loc, path=".".join(str(x) for x in cut_path)) for p in problems]
    if devices is None or strategy_diag or any(p.fatal for p in problems):
        return None, diags
    return instances(devices), diags
