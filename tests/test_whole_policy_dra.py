"""The DRA proofs shared across clusters (compiler.dra.proof: outcomes by selectors and device
content, for selectors that read the device by name only) give what each cluster's own devices
give, and the placeholder UUIDs are uuid5's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import copy_demo, policy_at

import compiler.dra.proof as proof
from compiler.dra.accounting import dra_active
from compiler.dra.inventory import _NS, Inventory, cluster_inventory, placeholder_uuid
from compiler.dra.selectors import DRIVER_CLASSES
from compiler.policy.dra_classes import device_classes
from compiler.policy.graph import Policy

# read by name only: shared
BY_NAME = [
    "device.driver == 'gpu.nvidia.com'",
    "device.attributes['gpu.nvidia.com'].productName in ['a', 'b'] && "
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('72Gi')) >= 0",
    "device.attributes[\"gpu.nvidia.com\"]['uuid'] == 'x'",  # a per-instance name: unknown, never evaluated
    "has(device.attributes['d'].x) && device.attributes['d'].y == 'all(device)'",  # words inside literals
    *DRIVER_CLASSES.values(),
]
# anything else: evaluated per device
DYNAMIC = [
    "device.attributes['gpu.nvidia.com'].exists(k, k == 'uuid')",
    "device.attributes['gpu.nvidia.com'] == {}",
    "device.attributes['gpu.nvidia.com'][k]",
    "device.attributes['gpu.nvidia.com']['uu' + 'id'] == 'x'",
    "string(device) != ''",
    "device.attributes.size() > 0",
    "device.attributes['d'].?x.hasValue()",
    "[1].all(x, x > 0) && device.driver == 'a'",
    # literals whose text ``referenced`` may misread (a per-instance name it would not see)
    "device.attributes['resource.kubernetes.io'][r'pciBusID'] == 'x'",
    "device.attributes['gpu.nvidia.com']['uu\\x69d'] == 'x'",
    "device.attributes['gpu.nvidia.com']['''uuid'''] == 'x'",
    "device.attributes['d'].x == '''it's device'''",
]


@pytest.mark.parametrize("expr", BY_NAME)
def test_reads_by_name(expr: str) -> None:
    assert proof.reads_by_name(expr)


@pytest.mark.parametrize("expr", DYNAMIC)
def test_reads_otherwise(expr: str) -> None:
    assert not proof.reads_by_name(expr)


@pytest.mark.parametrize("name", ["", "a", "eu-1/h100-train/0/7", "eu-1/a100-mig/3/1/6", "ünï/😀"])
def test_placeholder_uuid_is_uuid5(name: str) -> None:
    assert placeholder_uuid(name) == str(uuid.uuid5(_NS, name))


def _policies(tmp_path: Path) -> list[Policy]:
    from bench.generate import generate

    generate(30, 12, tmp_path / "org")  # several DRA clusters with the same pool layouts
    out = []
    for root in (copy_demo(tmp_path), tmp_path / "org"):
        policy, _diags = policy_at(root)
        assert policy is not None
        out.append(policy)
    return out


def _shown(m: proof.ClassMatch) -> Any:
    return (m.name, dict(m.matched), m.parents, sorted(m.parent_pools), sorted(m.pools),
            [(d.name, d.pool, i, msg) for d, i, msg in m.errors],
            [(d.name, d.pool, i, msg) for d, i, msg in m.unproven], m.compile_errors)


def _every_proof(policies: list[Policy]) -> list[Any]:
    """Every generated, driver and dynamic class against every DRA cluster, on fresh inventories."""
    out = []
    for policy in policies:
        for c in policy.fleet.spec.clusters:
            if not dra_active(c):
                continue
            inventory: Inventory = cluster_inventory(c, policy.catalog)
            classes = [(dc.name, list(dc.selectors)) for dc in device_classes(policy, c.name)]
            classes += [(name, [expr]) for name, expr in DRIVER_CLASSES.items()]
            classes += [(f"dynamic-{i}", [expr]) for i, expr in enumerate(DYNAMIC[:2])]
            classes += [("uuid-prefix", ["device.attributes['gpu.nvidia.com'].exists(k, k == 'uuid' && "
                                         "device.attributes['gpu.nvidia.com'][k].startsWith('GPU-0'))"])]
            out += [(c.name, _shown(proof.evaluate_class(name, sel, inventory))) for name, sel in classes]
    return out


def test_shared_outcomes_equal_per_device_outcomes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policies = _policies(tmp_path)
    proof._OUTCOMES.clear()
    proof._ACTIVATIONS.clear()
    shared = _every_proof(policies)
    assert len(proof._OUTCOMES) > 0
    kinds = len(proof._OUTCOMES)
    again = _every_proof(policies)  # from the memo, filled by other inventories and policies
    assert len(proof._OUTCOMES) == kinds
    monkeypatch.setattr(proof, "reads_by_name", lambda expr: False)  # every device evaluated
    proof._OUTCOMES.clear()
    proof._ACTIVATIONS.clear()
    alone = _every_proof(policies)
    assert not proof._OUTCOMES and not proof._ACTIVATIONS
    assert shared == alone == again
    assert any(matched for _c, (_n, matched, *_rest) in alone)  # the proofs match devices at all


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(proof, "_OUTCOMES_MAX", 3)
    proof._OUTCOMES.clear()
    proof._ACTIVATIONS.clear()
    _every_proof(_policies(tmp_path)[:1])
    assert 0 < len(proof._OUTCOMES) <= 3 and len(proof._ACTIVATIONS) <= 3 + 4  # + one outcome's selectors
