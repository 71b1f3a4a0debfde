"""The built-in GPU catalog, checked against its own invariants and against the shared
gpu-data table (``../shared/gpu-data/mig-profiles.yaml``, or ``$GPUPOLICY_GPU_DATA``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import gpu_data_dir
from pydantic import ValidationError

from compiler.catalog import (
    Catalog,
    GpuModel,
    GpuModelSpec,
    builtin_catalog,
    driver_branch,
    gfd_product_label,
    normalize_pci_id,
)
from compiler.catalog.model import DNS1123_LABEL, PROFILE_NAME

REQUIRED = ("a30", "a100-40gb", "a100-80gb", "h100-80gb", "h100-nvl", "h200", "gh200", "b200", "l4", "l40s")
ARCHITECTURES = {"Ampere", "Hopper", "Blackwell", "Ada Lovelace"}


def test_required_models_present_with_dns1123_ids() -> None:
    catalog = builtin_catalog()
    for model_id in REQUIRED:
        assert model_id in catalog, model_id
    for model_id in catalog.ids():
        assert DNS1123_LABEL.match(model_id) and len(model_id) <= 63


@pytest.mark.parametrize("model", list(builtin_catalog()), ids=lambda m: m.id)
def test_entry_is_complete(model: GpuModel) -> None:
    assert model.source, "every entry names its source"
    assert model.architecture in ARCHITECTURES
    assert model.compute_capability.replace(".", "").isdigit()
    assert model.memory_gib > 0 and model.variants
    assert model.product_names, "DRA selectors need at least one NVML product name"
    for pci in model.pci_device_ids:
        assert normalize_pci_id(pci) == pci
    if model.memory_mib is not None:  # NVML totals sit within a few percent of the nominal size
        assert 0.9 < model.memory_mib / (model.memory_gib * 1024) <= 1.0
    if model.memory_bandwidth_gbps is None or model.bandwidth_source is None:
        assert not model.bandwidth_sourced


@pytest.mark.parametrize("model", [m for m in builtin_catalog() if m.mig], ids=lambda m: m.id)
def test_mig_geometry_is_consistent(model: GpuModel) -> None:
    g = model.mig
    assert g is not None
    assert (g.compute_slices, g.memory_slices) in {(7, 8), (4, 4)}
    assert g.max_instances == g.compute_slices
    names = [p.name for p in g.profiles]
    assert len(names) == len(set(names))
    for p in g.profiles:
        m = PROFILE_NAME.match(p.name)
        assert m and int(m.group(1)) == p.compute_slices
        assert p.starts and all(0 <= s and s + p.memory_slices <= g.memory_slices for s in p.starts)
        assert 1 <= p.max_instances <= len(p.starts) or p.holds_media_engines
        if p.holds_media_engines:
            assert p.max_instances == 1


def test_figures_of_the_brief() -> None:
    c = builtin_catalog()
    l4, l40s = c.get("l4"), c.get("l40s")
    assert l4 and l4.mig is None and l4.memory_gib == 24 and l4.memory_bandwidth_gbps == 300
    assert l4.pci_device_ids == ("0x27B810DE",) and l4.product_names == ("NVIDIA L4",)
    assert l40s and l40s.mig is None and l40s.memory_gib == 48 and l40s.memory_bandwidth_gbps == 864
    assert l40s.pci_device_ids == ("0x26B910DE",) and l40s.product_names == ("NVIDIA L40S",)
    gh200 = c.get("gh200")
    assert gh200 and gh200.memory_gib == 96
    a30 = c.get("a30")
    assert a30 and a30.mig and (a30.mig.compute_slices, a30.mig.memory_slices) == (4, 4)
    assert not a30.bandwidth_sourced  # 933 GB/s is marked unsourced
    h100 = c.get("h100-80gb")
    assert h100 and h100.bandwidth_sourced and h100.bandwidth_for("0x2331") == (
        2000,
        h100.variants[1].bandwidth_source,
    )
    a80 = c.get("a100-80gb")
    assert a80 and a80.bandwidth_for("20b5")[1] is None  # PCIe figure unsourced


def test_names_and_labels() -> None:
    assert gfd_product_label("NVIDIA A100 80GB PCIe") == "NVIDIA-A100-80GB-PCIe"
    assert gfd_product_label("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    assert gfd_product_label("NVIDIA  RTX (tm) 6000") == "NVIDIA-RTX-tm-6000"
    c = builtin_catalog()
    assert "NVIDIA-A100-80GB-PCIe" in (c.get("a100-80gb") or pytest.fail()).gfd_products
    assert (c.by_product("NVIDIA-H100-PCIe") or pytest.fail()).id == "h100-80gb"
    assert (c.by_product("NVIDIA H200 NVL") or pytest.fail()).id == "h200"
    assert c.get("h100-nvl") is not None and (c.get("h100-nvl") or pytest.fail()).gfd_family == "hopper"


@pytest.mark.parametrize(
    "raw, model_id",
    [("0x20B510DE", "a100-80gb"), ("20b5", "a100-80gb"), ("10de:2330", "h100-80gb"), ("0x233b", "h200")],
)
def test_by_pci_id(raw: str, model_id: str) -> None:
    found = builtin_catalog().by_pci_id(raw)
    assert found is not None and found.id == model_id


def test_pci_and_driver_parsing() -> None:
    assert builtin_catalog().by_pci_id("0x1DB6") is None  # V100: not catalogued
    with pytest.raises(ValueError):
        normalize_pci_id("1002:740f")  # AMD vendor id
    assert driver_branch("535.129.03") == 535 and driver_branch("R550") == 550 and driver_branch(None) is None
    with pytest.raises(ValueError):
        driver_branch("latest")


SPEC: dict[str, Any] = {
    "displayName": "Lab A100 80GB PCIe",
    "architecture": "Ampere",
    "computeCapability": "8.0",
    "memoryGiB": 80,
    "memoryMiB": 81920,
    "memoryBandwidthGBps": 1935,
    "bandwidthSource": "our measurement",
    "productName": "NVIDIA A100 80GB PCIe",
    "pciDeviceIds": ["0x20B510DE"],
    "formFactor": "PCIe",
    "mig": {
        "computeSlices": 7,
        "memorySlices": 8,
        "maxInstances": 7,
        "profiles": [
            {"name": "1g.10gb", "computeSlices": 1, "memorySlices": 1, "maxInstances": 7,
             "placementStarts": [0, 1, 2, 3, 4, 5, 6]},
            {"name": "3g.40gb", "computeSlices": 3, "memorySlices": 4, "maxInstances": 2, "placementStarts": [0, 4],
             "driverNames": [{"name": "3g.39gb", "branches": [535]}]},
        ],
    },
    "source": "nvidia-smi on node gpu-17",
}


def test_spec_to_model_and_override() -> None:
    model = GpuModelSpec.model_validate(SPEC).to_model("a100-80gb-pcie")
    assert model.id == "a100-80gb-pcie" and model.bandwidth_sourced and model.mig is not None
    assert model.mig.profile("3g.40gb") is not None
    assert (model.mig.profile("3g.40gb") or pytest.fail()).name_for(535) == "3g.39gb"
    merged = builtin_catalog().with_models([model])
    assert "a100-80gb-pcie" in merged and "a100-80gb" in merged
    assert (merged.by_pci_id("0x20B5") or pytest.fail()).id == "a100-80gb-pcie"  # fleet entry wins
    assert merged.ids() == tuple(sorted(merged.ids()))
    replaced = builtin_catalog().with_models([GpuModelSpec.model_validate(SPEC).to_model("a100-80gb")])
    assert len(replaced) == len(builtin_catalog())
    assert (replaced.get("a100-80gb") or pytest.fail()).source == "nvidia-smi on node gpu-17"
    assert isinstance(replaced, Catalog)


def test_spec_without_mig_or_pci() -> None:
    spec = GpuModelSpec.model_validate(
        {"architecture": "Ada Lovelace", "computeCapability": "8.9", "memoryGiB": 48, "productName": "NVIDIA L40"}
    )
    model = spec.to_model("l40")
    assert model.mig is None and model.pci_device_ids == () and not model.bandwidth_sourced


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"memoryGiBs": 80}, "Extra inputs are not permitted"),
        ({"productName": None}, "productName"),
        ({"pciDeviceIds": ["0xZZZZ"]}, "PCI device id"),
        ({"computeCapability": "eight"}, "pattern"),
    ],
)
def test_spec_rejects(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GpuModelSpec.model_validate({**SPEC, **patch})


def test_spec_rejects_placement_outside_the_gpu() -> None:
    bad = {**SPEC, "mig": {**SPEC["mig"], "profiles": [
        {"name": "4g.40gb", "computeSlices": 4, "memorySlices": 4, "maxInstances": 1, "placementStarts": [6]}
    ]}}
    with pytest.raises(ValidationError, match="exceeds 8 memory slices"):
        GpuModelSpec.model_validate(bad)
    with pytest.raises(ValueError, match="DNS-1123"):
        GpuModelSpec.model_validate(SPEC).to_model("A100_PCIe")


# --- against the shared data table -------------------------------------------------------


def _data_gpus() -> list[dict[str, Any]]:
    data = yaml.safe_load((gpu_data_dir() / "mig-profiles.yaml").read_text())
    gpus: list[dict[str, Any]] = []
    for key, entry in data["gpus"].items():
        pcis = list(entry.get("pci_device_ids") or [])
        pcis += [v["pci_device_id"] for v in entry.get("variants") or []]
        gpus.append({"key": key, "pcis": [normalize_pci_id(p) for p in pcis], **entry})
    return gpus


def test_catalog_matches_mig_profiles_table() -> None:
    catalog = builtin_catalog()
    matched = 0
    for gpu in _data_gpus():
        models = {m.id for p in gpu["pcis"] if (m := catalog.by_pci_id(p))}
        if not models:
            continue  # e.g. B300/GB300, not catalogued
        assert len(models) == 1, gpu["key"]
        model = catalog.get(models.pop())
        assert model is not None and model.mig is not None, gpu["key"]
        matched += 1
        assert model.architecture == gpu["architecture"]
        if "compute_capability" in gpu:
            assert model.compute_capability == gpu["compute_capability"]
        assert (model.mig.compute_slices, model.mig.memory_slices) == (gpu["compute_slices"], gpu["memory_slices"])
        assert model.mig.max_instances == gpu["max_gpu_instances"]
        assert {p.name for p in model.mig.profiles} == {p["name"] for p in gpu["profiles"]}, gpu["key"]
        for row in gpu["profiles"]:
            p = model.mig.profile(row["name"])
            assert p is not None
            assert (p.compute_slices, p.memory_slices, p.max_instances) == (
                row["compute_slices"], row["memory_slices"], row["max_instances"]
            ), (gpu["key"], row["name"])
            if "placements" in row:
                assert p.starts == tuple(row["placements"]["starts"]) and p.memory_slices == row["placements"]["size"]
            if "id" in row:
                assert p.profile_id == row["id"], (gpu["key"], row["name"])
    mig_models = [m for m in catalog if m.mig]
    assert matched == len(mig_models), "every catalogued MIG model is in the shared table"
