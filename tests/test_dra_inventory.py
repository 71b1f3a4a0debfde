"""The device inventory a DRA cluster publishes, modelled on the NVIDIA DRA driver, and the
selector proof over it."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.catalog import builtin_catalog
from compiler.dra.inventory import cluster_inventory, resource_slice
from compiler.dra.proof import evaluate_class
from compiler.dra.selectors import DRIVER_CLASSES, class_selector
from compiler.model.fleet import Cluster
from compiler.model.manifest import Manifest
from compiler.policy.classes import derive_classes
from compiler.verify import verify

CATALOG = builtin_catalog()


def cluster(*pools: dict[str, Any], version: str = "1.34") -> Cluster:
    return Cluster.model_validate({"name": "lab", "kubernetesVersion": version, "apiServer": "https://lab:6443",
                                   "region": "eu", "residency": "eu", "dra": True, "pools": list(pools)})


MIG = {"name": "a100-mig", "model": "a100-80gb", "nodes": 4, "gpusPerNode": 8, "driver": "580",
       "cut": {"mode": "mig", "layout": "all-balanced"}}
H100 = {"name": "h100-train", "model": "h100-80gb", "nodes": 8, "gpusPerNode": 8, "cut": {"mode": "full"}}


def test_full_gpu_devices_follow_the_driver() -> None:
    c = cluster(H100)
    devices = resource_slice(c, c.pools[0], CATALOG)["spec"]["devices"]
    assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)]
    attrs, cap = devices[0]["attributes"], devices[0]["capacity"]
    assert attrs["type"] == {"string": "gpu"} and attrs["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert attrs["architecture"] == {"string": "Hopper"}
    assert attrs["cudaComputeCapability"] == {"version": "9.0.0"}  # a version, not a string
    assert "version" in attrs["driverVersion"] and attrs["uuid"]["string"].startswith("GPU-")
    assert "index" not in attrs and "profile" not in attrs  # the driver publishes neither on GPUs
    assert cap == {"memory": {"value": "81559Mi"}}


def test_static_mig_devices_and_parents() -> None:
    c = cluster(MIG)
    devices = resource_slice(c, c.pools[0], CATALOG)["spec"]["devices"]
    assert len(devices) == 8 * 4  # all-balanced on A100-80GB: 2x 1g.10gb + 2g.20gb + 3g.40gb per GPU
    names = {d["name"] for d in devices}
    assert {"gpu-0-mig-3g40gb-9-4", "gpu-0-mig-2g20gb-14-0", "gpu-7-mig-1g10gb-19-2"} <= names
    three_g = next(d for d in devices if d["name"] == "gpu-0-mig-3g40gb-9-4")
    assert three_g["attributes"]["profile"] == {"string": "3g.40gb"}
    assert three_g["attributes"]["parentUUID"]["string"].startswith("GPU-")
    assert three_g["attributes"]["productName"] == {"string": "NVIDIA A100-SXM4-80GB"}
    assert {k for k in three_g["capacity"] if k.startswith("memorySlice")} == {f"memorySlice{i}" for i in range(4, 8)}
    with_parents = resource_slice(c, c.pools[0], CATALOG, parents=True)["spec"]["devices"]
    assert len(with_parents) == 8 * 5  # dra-driver-nvidia-gpu#719: the whole GPUs listed too


def test_driver_branch_names_the_profile() -> None:
    old = {**MIG, "driver": "535", "cut": {"mode": "mig", "devices": [{"gpus": 8, "profiles": {"3g.39gb": 2}}]}}
    c = cluster(old)
    devices = resource_slice(c, c.pools[0], CATALOG)["spec"]["devices"]
    assert {d["attributes"]["profile"]["string"] for d in devices} == {"3g.39gb"}
    cls = derive_classes(c, {"a100-mig": {"3g.39gb": 16}})["a100-80gb-mig-3g.39gb"]
    expr = class_selector(cls, c, CATALOG)
    assert expr is not None and "profile == '3g.39gb'" in expr
    assert evaluate_class(cls.id, [expr], cluster_inventory(c, CATALOG)).total == 4 * 16


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_resource_slices_pass_kubernetes_validate(version: str) -> None:
    c = cluster(MIG, H100)
    slices = [Manifest("lab", "dra", resource_slice(c, p, CATALOG, parents=True)) for p in c.pools]
    assert verify(slices, kube_versions={"lab": version}, crds=None, strict=True).diagnostics == []


def test_generated_classes_select_exactly_their_devices() -> None:
    c = cluster(MIG, H100)
    classes = derive_classes(c, {"a100-mig": {"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8}})
    inv = cluster_inventory(c, CATALOG)
    assert inv.total() == 4 * 32 + 64 and inv.total(parents=True) == 4 * 40 + 64
    for cls in classes.values():
        expr = class_selector(cls, c, CATALOG)
        assert expr is not None
        m = evaluate_class(cls.id, [expr], inv)
        assert dict(m.matched) == {cls.id: cls.capacity}, cls.id
        assert not (m.errors or m.unproven or m.parents or m.compile_errors)


def test_driver_chart_classes_overlap_everything() -> None:
    c = cluster(MIG, H100)
    inv = cluster_inventory(c, CATALOG)
    gpu = evaluate_class("gpu.nvidia.com", [DRIVER_CLASSES["gpu.nvidia.com"]], inv)
    assert dict(gpu.matched) == {"h100-80gb": 64} and gpu.parents == 32
    mig = evaluate_class("mig.nvidia.com", [DRIVER_CLASSES["mig.nvidia.com"]], inv)
    assert mig.total == 128 and len(mig.matched) == 3


def test_memory_bounds_and_unknowns() -> None:
    inv = cluster_inventory(cluster(MIG), CATALOG)
    a = "device.attributes['gpu.nvidia.com']"
    cap = "device.capacity['gpu.nvidia.com']"
    mig = f"device.driver == 'gpu.nvidia.com' && {a}.type == 'mig'"
    # MIG memory is known within 95-100 % of the slice's share: a far floor is provable, a tight one not
    far = evaluate_class("x", [f"{mig} && {cap}.memory.compareTo(quantity('30Gi')) > 0"], inv)
    assert far.total == 32 and not far.unproven
    tight = evaluate_class("y", [f"{mig} && {cap}.memory.compareTo(quantity('9900Mi')) > 0"], inv)
    assert tight.unproven and "memory" in tight.unproven[0][2]
    sms = evaluate_class("z", [f"{mig} && {cap}.multiprocessors.compareTo(quantity('20')) > 0"], inv)
    assert sms.unproven and "multiprocessors" in sms.unproven[0][2]
