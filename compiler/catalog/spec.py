"""``GpuModelSpec``: how a fleet file adds a GPU model or replaces a built-in one.

The fleet model embeds it as ``catalog: dict[str, GpuModelSpec]`` (key = model id) and calls
``spec.to_model(model_id)``. A spec replaces a built-in model of the same id as a whole, so
every fact the compiler uses is visible in the fleet file.

Example (YAML)::

    catalog:
      a100-80gb-pcie:
        displayName: NVIDIA A100 80GB PCIe
        architecture: Ampere
        computeCapability: "8.0"
        memoryGiB: 80
        memoryMiB: 81920
        memoryBandwidthGBps: 1935
        bandwidthSource: NVIDIA A100 datasheet
        productName: NVIDIA A100 80GB PCIe
        pciDeviceIds: ["0x20B510DE"]
        formFactor: PCIe
        mig: {computeSlices: 7, memorySlices: 8, maxInstances: 7, profiles: [...]}
        source: our own nvidia-smi, 2026-08
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from compiler.catalog.model import (
    DNS1123_LABEL,
    PROFILE_NAME,
    DriverName,
    GpuModel,
    GpuVariant,
    MigGeometry,
    MigProfile,
    normalize_pci_id,
)

_CONFIG = ConfigDict(extra="forbid", populate_by_name=False, frozen=True, defer_build=True)


def _pci(value: str) -> str:
    return normalize_pci_id(value)


class DriverNameSpec(BaseModel):
    model_config = _CONFIG
    name: str
    branches: list[int] = Field(default_factory=list, description="driver branches (e.g. 535) reporting it")
    source: str = "fleet file"


class MigProfileSpec(BaseModel):
    model_config = _CONFIG
    name: str = Field(description="canonical profile name, e.g. 3g.40gb or 1g.10gb+me")
    compute_slices: int = Field(alias="computeSlices", ge=1)
    memory_slices: int = Field(alias="memorySlices", ge=1, description="= NVML placement size")
    max_instances: int = Field(alias="maxInstances", ge=1)
    placement_starts: list[int] = Field(alias="placementStarts", min_length=1)
    profile_id: int | None = Field(default=None, alias="profileId", ge=0)
    min_driver: int | None = Field(default=None, alias="minDriver", ge=1)
    driver_names: list[DriverNameSpec] = Field(default_factory=list, alias="driverNames")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not PROFILE_NAME.match(v):
            raise ValueError(f"{v!r} is not a MIG profile name like 3g.40gb or 1g.10gb+me")
        return v


class MigSpec(BaseModel):
    model_config = _CONFIG
    compute_slices: int = Field(alias="computeSlices", ge=1)
    memory_slices: int = Field(alias="memorySlices", ge=1)
    max_instances: int = Field(alias="maxInstances", ge=1, description="GPU instances per GPU")
    profiles: list[MigProfileSpec] = Field(min_length=1)
    source: str = "fleet file"

    @model_validator(mode="after")
    def _fits(self) -> MigSpec:
        seen: set[str] = set()
        for p in self.profiles:
            if p.name in seen:
                raise ValueError(f"profile {p.name} listed twice")
            seen.add(p.name)
            if p.compute_slices > self.compute_slices:
                raise ValueError(f"{p.name}: {p.compute_slices} compute slices > GPU's {self.compute_slices}")
            for s in p.placement_starts:
                if s < 0 or s + p.memory_slices > self.memory_slices:
                    raise ValueError(
                        f"{p.name}: placement start {s} + size {p.memory_slices} exceeds "
                        f"{self.memory_slices} memory slices"
                    )
        return self


class GpuVariantSpec(BaseModel):
    model_config = _CONFIG
    pci_device_id: str = Field(alias="pciDeviceId")
    form_factor: str = Field(alias="formFactor")
    product_name: str | None = Field(default=None, alias="productName")
    memory_bandwidth_gbps: float | None = Field(default=None, alias="memoryBandwidthGBps", gt=0)
    bandwidth_source: str | None = Field(default=None, alias="bandwidthSource")

    @field_validator("pci_device_id")
    @classmethod
    def _pci_id(cls, v: str) -> str:
        return _pci(v)


class GpuModelSpec(BaseModel):
    """A GPU model declared in the fleet file (adds to or replaces the built-in catalog)."""

    model_config = _CONFIG
    display_name: str | None = Field(default=None, alias="displayName")
    architecture: str
    compute_capability: str = Field(alias="computeCapability", pattern=r"^\d+\.\d+$")
    memory_gib: float = Field(alias="memoryGiB", gt=0)
    memory_mib: int | None = Field(default=None, alias="memoryMiB", gt=0)
    memory_bandwidth_gbps: float | None = Field(default=None, alias="memoryBandwidthGBps", gt=0)
    bandwidth_source: str | None = Field(
        default=None, alias="bandwidthSource", description="where the bandwidth figure comes from; unset = unsourced"
    )
    product_name: str | None = Field(default=None, alias="productName", description="NVML name, e.g. NVIDIA L4")
    pci_device_ids: list[str] = Field(default_factory=list, alias="pciDeviceIds")
    form_factor: str = Field(default="PCIe", alias="formFactor")
    variants: list[GpuVariantSpec] = Field(default_factory=list)
    mig: MigSpec | None = None
    source: str = Field(default="fleet file", description="where these facts come from")

    @field_validator("pci_device_ids")
    @classmethod
    def _pcis(cls, v: list[str]) -> list[str]:
        return [_pci(x) for x in v]

    @model_validator(mode="after")
    def _identity(self) -> GpuModelSpec:
        if self.variants and (self.product_name or self.pci_device_ids):
            raise ValueError("give either variants or productName/pciDeviceIds, not both")
        if not self.variants and self.product_name is None:
            raise ValueError("productName (or variants) is required: DRA selectors match on it")
        return self

    def to_model(self, model_id: str) -> GpuModel:
        if not DNS1123_LABEL.match(model_id) or len(model_id) > 63:
            raise ValueError(f"GPU model id {model_id!r} is not a DNS-1123 label")
        if self.variants:
            variants = tuple(
                GpuVariant(v.pci_device_id, v.form_factor, v.product_name, v.memory_bandwidth_gbps, v.bandwidth_source)
                for v in self.variants
            )
        else:
            ids: list[str | None] = list(self.pci_device_ids) or [None]
            variants = tuple(GpuVariant(pci, self.form_factor, self.product_name) for pci in ids)
        return GpuModel(
            id=model_id,
            display_name=self.display_name or model_id,
            architecture=self.architecture,
            compute_capability=self.compute_capability,
            memory_gib=self.memory_gib,
            memory_mib=self.memory_mib,
            memory_bandwidth_gbps=self.memory_bandwidth_gbps,
            bandwidth_source=self.bandwidth_source,
            variants=variants,
            mig=None if self.mig is None else _geometry(self.mig),
            source=self.source,
        )


def _geometry(spec: MigSpec) -> MigGeometry:
    return MigGeometry(
        compute_slices=spec.compute_slices,
        memory_slices=spec.memory_slices,
        max_instances=spec.max_instances,
        profiles=tuple(
            MigProfile(
                name=p.name,
                compute_slices=p.compute_slices,
                memory_slices=p.memory_slices,
                max_instances=p.max_instances,
                starts=tuple(sorted(set(p.placement_starts))),
                profile_id=p.profile_id,
                min_driver=p.min_driver,
                driver_names=tuple(DriverName(d.name, tuple(d.branches), d.source) for d in p.driver_names),
            )
            for p in spec.profiles
        ),
        source=spec.source,
    )
