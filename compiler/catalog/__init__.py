"""GPU catalog: built-in NVIDIA models (memory, bandwidth, PCI ids, NVML/GFD names, MIG geometry)
plus the ``GpuModelSpec`` a fleet file uses to add or replace models."""

from __future__ import annotations

from compiler.catalog.builtin import builtin_catalog
from compiler.catalog.model import (
    Catalog,
    DriverName,
    GpuModel,
    GpuVariant,
    MigGeometry,
    MigProfile,
    config_name,
    driver_branch,
    gfd_product_label,
    normalize_pci_id,
)
from compiler.catalog.spec import DriverNameSpec, GpuModelSpec, GpuVariantSpec, MigProfileSpec, MigSpec

__all__ = [
    "Catalog",
    "DriverName",
    "DriverNameSpec",
    "GpuModel",
    "GpuModelSpec",
    "GpuVariant",
    "GpuVariantSpec",
    "MigGeometry",
    "MigProfile",
    "MigProfileSpec",
    "MigSpec",
    "builtin_catalog",
    "config_name",
    "driver_branch",
    "gfd_product_label",
    "normalize_pci_id",
]
