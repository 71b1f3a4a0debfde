"""The cut-mode table: everything gpupolicy decides by how a pool's GPUs are cut.

A pool's cut (``compiler.model.fleet``: ``FullCut``, ``MigCut``, ``TimeSlicingCut``,
``MpsCut``, told apart by ``cut.mode``) decides its GPU class IDs, the resources the device
plugin advertises, how many units a node provides, which team isolation it satisfies, the
device-plugin ``sharing`` stanza, the node labels GPU Feature Discovery writes, the DRA device
type, whether serving may use it and whether GPU metrics can be attributed to pods. Those
decisions live here, one frozen ``CutMode`` record per mode; classes, validation, lowering,
DRA and reports read the record (``cut_mode(cut)`` or ``CUT_MODES[class.cut]``) instead of
branching on the mode. ``GpuClass.cut``, the node contract's ``cut`` and the reports use the
record's ``name`` (= ``cut.mode`` in the fleet file).

Adding a mode: its pydantic class in the ``Cut`` union of ``compiler.model.fleet`` and its
record here. Importing this module fails when the union and the table disagree, and
``tests/test_cuts.py`` exercises every field of every record through its ``example``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from compiler.model.common import Strict
from compiler.model.fleet import Cut, FullCut, MigCut, MpsCut, NodePool, TimeSlicingCut
from compiler.model.team import Isolation

# A team's isolation need (SPEC §4), weakest first: a cut satisfies its own level and those before.
ISOLATION_LEVELS: tuple[Isolation, ...] = ("shared", "isolated", "exclusive")

# SPEC §9 resource names.
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"  # renameByDefault: a share never satisfies a full-card request


def mig_profile_slug(profile: str) -> str:
    """``1g.10gb+me`` -> ``1g.10gb.me``: the form mig-parted uses in layout names, DNS-safe."""
    return profile.replace("+", ".")


@dataclass(frozen=True)
class Shares:
    """One shared pool's settings, read from its cut."""

    replicas: int
    renamed: bool  # advertised as nvidia.com/gpu.shared (renameByDefault)
    fail_requests_greater_than_one: bool


@dataclass(frozen=True)
class Sharing:
    """A cut that shares each GPU between pods through the device plugin (k8s-device-plugin
    api/config/v1 ``sharing``)."""

    config_key: str  # key under ``sharing:`` in the device-plugin config file
    strategy_label: str  # value of ``nvidia.com/gpu.sharing-strategy`` on the pool's nodes
    dra_feature_gate: str  # NVIDIA DRA driver chart gate for user-mediated sharing of this kind
    settings: Callable[[Cut], Shares]


@dataclass(frozen=True)
class Unit:
    """One GPU class a pool provides: its MIG profile or replicas, and units per node."""

    profile: str | None
    replicas: int | None
    per_node: int


@dataclass(frozen=True)
class CutMode:
    """What gpupolicy decides by one cut mode (one record per member of the fleet's ``Cut`` union)."""

    name: str  # cut.mode in the fleet file; GpuClass.cut, the node contract's and reports' "cut"
    model: type[Strict]  # its member of the fleet model's Cut union
    example: Mapping[str, Any]  # a valid cut in fleet-file form (tests, documentation)
    wording: str  # what a unit is called in prose ("full cards")
    # SPEC §9 class ID: (model, MIG profile, replicas) -> "<model>", "<model>-mig-<profile>", ...
    class_id: Callable[[str, str | None, int | None], str]
    # Capacity rule: the classes a pool provides and units per node (given the MIG instances per
    # node by profile, resolved against the catalog, for MIG cuts).
    units: Callable[[NodePool, Mapping[str, int] | None], list[Unit]]
    # Device-plugin extended resource of a class: (MIG profile, renamed) -> resource name.
    resource: Callable[[str | None, bool], str]
    isolation: Isolation  # the strictest team isolation the cut satisfies (SPEC §4)
    mig: Callable[[Cut], MigCut | None]  # the MIG geometry the cut asks MIG Manager for, if any
    sharing: Sharing | None  # device-plugin time-slicing / MPS; None: one pod per device
    dra_device_type: str | None  # ResourceSlice device ``type`` a DeviceClass selects; None: no DeviceClass
    max_devices_per_claim: int | None  # DRA claim templates: devices one claim may ask for (None: a node's)
    serves: bool  # serving pools may use it (vLLM needs whole cards)
    per_pod_metrics: bool  # DCGM can attribute GPU metrics to the pod holding the device
    attribution: str  # why (the attribution report's reason)

    def shares(self, cut: Cut) -> Shares | None:
        return self.sharing.settings(cut) if self.sharing is not None else None

    def satisfies(self, isolation: Isolation) -> bool:
        return ISOLATION_LEVELS.index(self.isolation) >= ISOLATION_LEVELS.index(isolation)


# -- per-mode pieces -----------------------------------------------------------------------------


def _no_mig(cut: Cut) -> MigCut | None:
    return None


def _own_mig(cut: Cut) -> MigCut | None:
    assert isinstance(cut, MigCut)
    return cut


def _per_gpu(pool: NodePool, mig_per_node: Mapping[str, int] | None) -> list[Unit]:
    """One unit per GPU, or ``replicas`` per GPU for shared cuts."""
    shares = cut_mode(pool.cut).shares(pool.cut)
    if shares is None:
        return [Unit(None, None, pool.gpus_per_node)]
    return [Unit(None, shares.replicas, pool.gpus_per_node * shares.replicas)]


def _per_mig_instance(pool: NodePool, mig_per_node: Mapping[str, int] | None) -> list[Unit]:
    """One class per MIG profile, one unit per instance."""
    return [Unit(p, None, n) for p, n in sorted((mig_per_node or {}).items()) if n > 0]


def _whole_gpu(profile: str | None, renamed: bool) -> str:
    return GPU_RESOURCE


def _shared_gpu(profile: str | None, renamed: bool) -> str:
    return SHARED_RESOURCE if renamed else GPU_RESOURCE


def _mig_resource(profile: str | None, renamed: bool) -> str:
    # k8s-device-plugin internal/rm/rm.go: "mig-" + profile with "+" replaced by "."
    # (1g.10gb+me -> nvidia.com/mig-1g.10gb.me).
    assert profile is not None
    return f"nvidia.com/mig-{mig_profile_slug(profile)}"


def _time_slicing(cut: Cut) -> Shares:
    assert isinstance(cut, TimeSlicingCut)
    return Shares(cut.replicas, cut.rename_by_default, cut.fail_requests_greater_than_one)


def _mps(cut: Cut) -> Shares:
    assert isinstance(cut, MpsCut)
    # MPS defaults failRequestsGreaterThanOne to true; written out so the config file says so.
    return Shares(cut.replicas, cut.rename_by_default, True)


def _mig_class(model: str, profile: str | None, replicas: int | None) -> str:
    assert profile is not None
    return f"{model}-mig-{mig_profile_slug(profile)}"


_MODES = (
    CutMode(
        name="full", model=FullCut, example={"mode": "full"}, wording="full cards",
        class_id=lambda model, profile, replicas: model,
        units=_per_gpu, resource=_whole_gpu, isolation="exclusive", mig=_no_mig, sharing=None,
        dra_device_type="gpu", max_devices_per_claim=None, serves=True, per_pod_metrics=True,
        attribution="one pod per GPU: DCGM maps each device to the pod holding it",
    ),
    CutMode(
        name="mig", model=MigCut, example={"mode": "mig", "layout": "all-balanced"}, wording="MIG slices",
        class_id=_mig_class,
        units=_per_mig_instance, resource=_mig_resource, isolation="isolated", mig=_own_mig, sharing=None,
        # A CUDA process sees a single MIG device: one slice per claim.
        dra_device_type="mig", max_devices_per_claim=1, serves=False, per_pod_metrics=True,
        attribution="one pod per MIG instance: DCGM reports per GPU instance, mapped to its pod",
    ),
    CutMode(
        name="timeslicing", model=TimeSlicingCut, example={"mode": "timeslicing", "replicas": 4},
        wording="time-sliced shares",
        class_id=lambda model, profile, replicas: f"{model}-ts{replicas}",
        units=_per_gpu, resource=_shared_gpu, isolation="shared", mig=_no_mig,
        sharing=Sharing("timeSlicing", "time-slicing", "TimeSlicingSettings", _time_slicing),
        dra_device_type=None, max_devices_per_claim=None, serves=False, per_pod_metrics=False,
        attribution="time-slicing: pods share one physical GPU and DCGM cannot attribute its metrics per "
                    "pod or container; only Kueue Workloads (labelKeysToCopy) say who was admitted",
    ),
    CutMode(
        name="mps", model=MpsCut, example={"mode": "mps", "replicas": 4}, wording="MPS shares",
        class_id=lambda model, profile, replicas: f"{model}-mps{replicas}",
        units=_per_gpu, resource=_shared_gpu, isolation="shared", mig=_no_mig,
        sharing=Sharing("mps", "mps", "MPSSupport", _mps),
        dra_device_type=None, max_devices_per_claim=None, serves=False, per_pod_metrics=False,
        attribution="MPS: clients share one physical GPU; DCGM metrics are per device, not per pod",
    ),
)

CUT_MODES: Mapping[str, CutMode] = {m.name: m for m in _MODES}


def cut_mode(cut: Cut) -> CutMode:
    """The record of a pool's cut."""
    return CUT_MODES[cut.mode]


def mig_cut(cut: Cut) -> MigCut | None:
    """The MIG geometry a cut asks for (None: the pool's GPUs are not partitioned)."""
    return cut_mode(cut).mig(cut)


def cut_union_members() -> tuple[type[Strict], ...]:
    """The pydantic classes of the fleet model's ``Cut`` union."""
    union = get_args(Cut)[0]  # Annotated[Union[...], Field(discriminator="mode")]
    return tuple(get_args(union))


def _check_table() -> None:
    """Every member of the ``Cut`` union has exactly one record, under its ``mode`` literal."""
    members = cut_union_members()
    models = [m.model for m in _MODES]
    missing = [c.__name__ for c in members if c not in models]
    extra = [c.__name__ for c in models if c not in members]
    if missing or extra or len(set(models)) != len(models) or len(CUT_MODES) != len(_MODES):
        raise TypeError(f"cut-mode table out of step with compiler.model.fleet.Cut: missing {missing}, "
                        f"not in the union {extra}")
    if set(ISOLATION_LEVELS) != set(get_args(Isolation)) or len(ISOLATION_LEVELS) != len(get_args(Isolation)):
        raise TypeError(f"ISOLATION_LEVELS {ISOLATION_LEVELS} do not order the team model's {get_args(Isolation)}")
    for m in _MODES:
        literal = get_args(m.model.model_fields["mode"].annotation)
        if literal != (m.name,):
            raise TypeError(f"cut mode {m.name!r} is recorded for {m.model.__name__}, whose mode is {literal}")


_check_table()


# -- derived tables --------------------------------------------------------------------------------

# What each team isolation level admits (SPEC §4): the decision table of isolation diagnostics.
ISOLATION_ALLOWS: dict[Isolation, frozenset[str]] = {
    level: frozenset(m.name for m in _MODES if m.satisfies(level)) for level in ISOLATION_LEVELS
}
_ISOLATION_NOTES: dict[Isolation, str] = {
    "shared": "no memory/fault isolation",
    "isolated": "hardware-isolated memory and faults",
    "exclusive": "",  # one mode only: "<wording> only"
}


def _isolation_entry(level: Isolation) -> str:
    allowed = [m for m in _MODES if m.satisfies(level)]
    if len(allowed) == 1:
        return f"{level}: {allowed[0].wording} only"
    return f"{level}: {', '.join(sorted(m.name for m in allowed))} ({_ISOLATION_NOTES[level]})"


ISOLATION_TABLE = "isolation -> allowed cuts: " + "; ".join(_isolation_entry(lv) for lv in ISOLATION_LEVELS)
