"""The cut-mode table (compiler.policy.cuts): one record per member of the fleet model's Cut
union, and every field of every record pinned here, so a new mode or a new field cannot go
untested."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from pydantic import TypeAdapter

from compiler.model.fleet import Cut, NodePool
from compiler.policy import cuts
from compiler.policy.classes import class_id, device_plugin_resource, pool_units
from compiler.policy.cuts import (
    CUT_MODES,
    ISOLATION_ALLOWS,
    ISOLATION_TABLE,
    CutMode,
    Shares,
    Unit,
    cut_mode,
    mig_cut,
)

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
MIG_PER_NODE = {"1g.10gb+me": 1, "2g.20gb": 0, "3g.40gb": 2}


def pool(cut: dict[str, Any], gpus: int = 8) -> NodePool:
    return NodePool.model_validate({"name": "p", "model": "h100", "nodes": 3, "gpusPerNode": gpus, "cut": cut})


def example(mode: CutMode, **extra: Any) -> Cut:
    return TypeAdapter(Cut).validate_python({**mode.example, **extra})


# Per mode, per field of CutMode: the expected value, or for a function field a list of
# (arguments, result). Every field of every mode must be listed (test_every_field_is_pinned).
EXPECTED: dict[str, dict[str, Any]] = {
    "full": {
        "name": "full", "model": "FullCut", "example": {"mode": "full"}, "wording": "full cards",
        "class_id": [(("h100", None, None), "h100")],
        "units": [((pool({"mode": "full"}), None), [Unit(None, None, 8)])],
        "resource": [((None, True), "nvidia.com/gpu"), ((None, False), "nvidia.com/gpu")],
        "isolation": "exclusive", "mig": None, "sharing": None,
        "dra_device_type": "gpu", "max_devices_per_claim": None, "serves": True, "per_pod_metrics": True,
        "attribution": "one pod per GPU: DCGM maps each device to the pod holding it",
    },
    "mig": {
        "name": "mig", "model": "MigCut", "example": {"mode": "mig", "layout": "all-balanced"},
        "wording": "MIG slices",
        "class_id": [(("h100", "3g.40gb", None), "h100-mig-3g.40gb"), (("h100", "1g.10gb+me", None), "h100-mig-1g.10gb.me")],
        "units": [((pool({"mode": "mig", "layout": "all-balanced"}), MIG_PER_NODE),
                   [Unit("1g.10gb+me", None, 1), Unit("3g.40gb", None, 2)]),
                  ((pool({"mode": "mig", "layout": "all-balanced"}), None), [])],
        "resource": [(("1g.10gb+me", True), "nvidia.com/mig-1g.10gb.me"), (("3g.40gb", False), "nvidia.com/mig-3g.40gb")],
        "isolation": "isolated", "mig": "self", "sharing": None,
        "dra_device_type": "mig", "max_devices_per_claim": 1, "serves": False, "per_pod_metrics": True,
        "attribution": "one pod per MIG instance: DCGM reports per GPU instance, mapped to its pod",
    },
    "timeslicing": {
        "name": "timeslicing", "model": "TimeSlicingCut", "example": {"mode": "timeslicing", "replicas": 4},
        "wording": "time-sliced shares",
        "class_id": [(("l4", None, 4), "l4-ts4")],
        "units": [((pool({"mode": "timeslicing", "replicas": 4}), None), [Unit(None, 4, 32)])],
        "resource": [((None, True), "nvidia.com/gpu.shared"), ((None, False), "nvidia.com/gpu")],
        "isolation": "shared", "mig": None,
        "sharing": ("timeSlicing", "time-slicing", "TimeSlicingSettings",
                    [({}, Shares(4, True, True)),
                     ({"renameByDefault": False, "failRequestsGreaterThanOne": False}, Shares(4, False, False))]),
        "dra_device_type": None, "max_devices_per_claim": None, "serves": False, "per_pod_metrics": False,
        "attribution": "time-slicing: pods share one physical GPU and DCGM cannot attribute its metrics per pod or "
                       "container; only Kueue Workloads (labelKeysToCopy) say who was admitted",
    },
    "mps": {
        "name": "mps", "model": "MpsCut", "example": {"mode": "mps", "replicas": 4}, "wording": "MPS shares",
        "class_id": [(("l4", None, 4), "l4-mps4")],
        "units": [((pool({"mode": "mps", "replicas": 3}, gpus=4), None), [Unit(None, 3, 12)])],
        "resource": [((None, True), "nvidia.com/gpu.shared"), ((None, False), "nvidia.com/gpu")],
        "isolation": "shared", "mig": None,
        # MPS: failRequestsGreaterThanOne is always written as true (the plugin's MPS default).
        "sharing": ("mps", "mps", "MPSSupport",
                    [({}, Shares(4, True, True)), ({"renameByDefault": False}, Shares(4, False, True))]),
        "dra_device_type": None, "max_devices_per_claim": None, "serves": False, "per_pod_metrics": False,
        "attribution": "MPS: clients share one physical GPU; DCGM metrics are per device, not per pod",
    },
}


def test_every_cut_class_has_one_record() -> None:
    members = cuts.cut_union_members()
    assert [m.model for m in CUT_MODES.values()] == list(members)
    for m in CUT_MODES.values():
        assert m.model.model_fields["mode"].annotation.__args__ == (m.name,)


def test_a_table_out_of_step_with_the_union_fails_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuts, "_MODES", cuts._MODES[:-1])
    with pytest.raises(TypeError, match="missing"):
        cuts._check_table()
    monkeypatch.setattr(cuts, "_MODES", cuts._MODES + cuts._MODES[:1])
    with pytest.raises(TypeError):
        cuts._check_table()


def test_every_field_is_pinned() -> None:
    fields = {f.name for f in dataclasses.fields(CutMode)}
    assert set(EXPECTED) == set(CUT_MODES), "add the new mode's expectations to EXPECTED"
    for name, expected in EXPECTED.items():
        assert set(expected) == fields, f"{name}: pin {sorted(fields - set(expected))}"


@pytest.mark.parametrize("name", list(CUT_MODES))
def test_record(name: str) -> None:
    mode, want = CUT_MODES[name], EXPECTED[name]
    cut = example(mode)
    assert type(cut) is mode.model and cut_mode(cut) is mode
    assert (mode.name, mode.model.__name__, dict(mode.example), mode.wording) == (
        want["name"], want["model"], want["example"], want["wording"])
    for args, result in want["class_id"]:
        assert mode.class_id(*args) == result
        assert DNS1123.match(result)
    for args, result in want["units"]:
        assert mode.units(*args) == result
    for args, result in want["resource"]:
        assert mode.resource(*args) == result
    assert mode.isolation == want["isolation"]
    assert mode.mig(cut) is (cut if want["mig"] == "self" else None)
    assert mig_cut(cut) is mode.mig(cut)
    if want["sharing"] is None:
        assert mode.sharing is None and mode.shares(cut) is None
    else:
        key, label, gate, settings = want["sharing"]
        assert mode.sharing is not None
        assert (mode.sharing.config_key, mode.sharing.strategy_label, mode.sharing.dra_feature_gate) == (key, label, gate)
        for extra, shares in settings:
            assert mode.shares(example(mode, **extra)) == shares
    assert mode.dra_device_type == want["dra_device_type"]
    assert mode.max_devices_per_claim == want["max_devices_per_claim"]
    assert mode.serves is want["serves"]
    assert mode.per_pod_metrics is want["per_pod_metrics"]
    assert mode.attribution == want["attribution"]


def test_class_ids_differ_between_modes() -> None:
    ids = [m.class_id("h100", "3g.40gb" if m.mig(example(m)) else None, 4) for m in CUT_MODES.values()]
    assert len(set(ids)) == len(ids)


def test_classes_module_reads_the_table() -> None:
    assert class_id("h100", "mig", profile="3g.40gb") == "h100-mig-3g.40gb"
    assert class_id("l4", "timeslicing", replicas=4) == "l4-ts4"
    assert device_plugin_resource("mps", profile=None, rename=True) == "nvidia.com/gpu.shared"
    assert pool_units(pool({"mode": "timeslicing", "replicas": 2}, gpus=4), None) == [("timeslicing", None, 2, 8)]
    assert pool_units(pool({"mode": "mig", "layout": "all-balanced"}), MIG_PER_NODE) == [
        ("mig", "1g.10gb+me", None, 1), ("mig", "3g.40gb", None, 2)]


def test_isolation_table() -> None:
    assert ISOLATION_ALLOWS == {
        "shared": frozenset({"full", "mig", "mps", "timeslicing"}),
        "isolated": frozenset({"full", "mig"}),
        "exclusive": frozenset({"full"}),
    }
    # The hint of isolation diagnostics (FLEET rules), shown to users: unchanged wording.
    assert ISOLATION_TABLE == (
        "isolation -> allowed cuts: shared: full, mig, mps, timeslicing (no memory/fault isolation); "
        "isolated: full, mig (hardware-isolated memory and faults); exclusive: full cards only")


def test_admission_backstop_sees_every_resource() -> None:
    """Every device-plugin resource a mode advertises counts as a GPU request for the admission
    policies (compiler.lower.admission_cel): a mode with a new resource family must extend it."""
    from compiler.cel import compile_expr
    from compiler.lower.admission_cel import GPU_RESOURCE

    for mode in CUT_MODES.values():
        for unit in mode.units(pool(dict(mode.example)), MIG_PER_NODE):
            for renamed in (True, False):
                resource = mode.resource(unit.profile, renamed)
                assert compile_expr(f"['{resource}'].exists(r, {GPU_RESOURCE})").evaluate({}), (mode.name, resource)
