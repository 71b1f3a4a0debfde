"""Typed GPU catalog entries: a model, its PCI variants and its MIG geometry.

Everything here is a frozen value so catalogs can be shared between stages and cached.
Profile names are the canonical ones current drivers report; older names some driver
branches used are kept as ``DriverName`` aliases so the compiler can emit what the node's
driver expects (mig-parted rejects any other spelling, gpu-operator#351, mig-parted#31).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
PROFILE_NAME = re.compile(r"^(\d+)g\.(\d+)gb([+-][a-z]+(\.[a-z]+)*)?$")
_PCI_FULL = re.compile(r"^(?:0x)?([0-9a-f]{4})(10de)$")
_PCI_PAIR = re.compile(r"^(?:0x)?10de:(?:0x)?([0-9a-f]{4})$")
_PCI_SHORT = re.compile(r"^(?:0x)?([0-9a-f]{4})$")
_DRIVER = re.compile(r"^[rR]?(\d{3})(?:\.\d+)*$")


def normalize_pci_id(value: str) -> str:
    """Canonical ``0xDDDD10DE`` (device id then NVIDIA's vendor id), as mig-parted filters use.

    Accepts ``0x20B210DE``, ``20b2``, ``0x20B2`` and ``10de:20b2``.
    """
    text = value.strip().lower()
    for pattern in (_PCI_FULL, _PCI_PAIR, _PCI_SHORT):
        m = pattern.match(text)
        if m:
            return "0x" + m.group(1).upper() + "10DE"
    raise ValueError(f"not an NVIDIA PCI device id: {value!r}")


def driver_branch(driver: str | None) -> int | None:
    """Driver branch (major version) of ``"535"``, ``"R535"`` or ``"535.129.03"``."""
    if driver is None:
        return None
    m = _DRIVER.match(driver.strip())
    if not m:
        raise ValueError(f"not an NVIDIA driver version: {driver!r} (expected e.g. 535 or 550.90.07)")
    return int(m.group(1))


def gfd_product_label(product_name: str) -> str:
    """``nvidia.com/gpu.product`` value GPU Feature Discovery derives from the NVML name:
    characters outside ``[A-Za-z0-9-_. ]`` dropped, whitespace runs become one dash."""
    kept = re.sub(r"[^A-Za-z0-9\-_. ]", "", product_name)
    return re.sub(r"\s+", "-", kept.strip())


@dataclass(frozen=True)
class DriverName:
    """Another name a driver branch reports for a profile (``3g.39gb`` for ``3g.40gb``).

    ``branches`` empty means the source does not say which branches; such a name is never
    produced, only recognised to give a precise hint."""

    name: str
    branches: tuple[int, ...]
    source: str


@dataclass(frozen=True)
class MigProfile:
    """A GPU-instance profile. ``starts`` are the allowed first memory slices (NVML placement
    ``start``); each instance then occupies ``memory_slices`` consecutive memory slices."""

    name: str
    compute_slices: int
    memory_slices: int
    max_instances: int
    starts: tuple[int, ...]
    profile_id: int | None = None  # nvidia-smi "ID" column
    min_driver: int | None = None  # first driver branch that offers it
    driver_names: tuple[DriverName, ...] = ()
    note: str = ""

    @property
    def base(self) -> str:
        """Name without attribute suffix: ``1g.10gb+me`` -> ``1g.10gb``."""
        m = PROFILE_NAME.match(self.name)
        return self.name if m is None else f"{m.group(1)}g.{m.group(2)}gb"

    @property
    def attribute(self) -> str:
        """``""``, ``"+me"``, ``"+me.all"``, ``"-me"`` or ``"+gfx"``."""
        return self.name[len(self.base) :]

    @property
    def holds_media_engines(self) -> bool:
        # +me / +me.all take the GPU's only set of media extensions (one such instance per GPU)
        return self.attribute.startswith("+me")

    @property
    def nominal_memory_gb(self) -> int:
        m = PROFILE_NAME.match(self.name)
        return int(m.group(2)) if m else 0

    def name_for(self, branch: int | None) -> str:
        """The name the given driver branch reports (canonical when unknown)."""
        if branch is not None:
            for alt in self.driver_names:
                if branch in alt.branches:
                    return alt.name
        return self.name


def config_name(profile_name: str) -> str:
    """mig-parted's generated config name: ``all-`` + profile with ``+`` turned into ``.``."""
    return "all-" + profile_name.replace("+", ".")


@dataclass(frozen=True)
class MigGeometry:
    compute_slices: int  # 7 on A100/H100/H200/B200..., 4 on A30 and RTX PRO 6000
    memory_slices: int  # 8 or 4; NVML placements index these
    max_instances: int  # GPU instances per GPU
    profiles: tuple[MigProfile, ...]
    source: str
    placements_inferred: bool = False  # True: placements by analogy with a sourced GPU

    def profile(self, name: str) -> MigProfile | None:
        for p in self.profiles:
            if p.name == name:
                return p
        return None

    def names(self, branch: int | None = None) -> tuple[str, ...]:
        return tuple(p.name_for(branch) for p in self.profiles)


@dataclass(frozen=True)
class GpuVariant:
    """One PCI device id of a model (SXM vs PCIe boards, export variants) and the name NVML
    reports for it (DRA ``productName``); ``None`` when no source gives the string."""

    pci_device_id: str | None  # None: a fleet-declared model whose PCI id was not given
    form_factor: str
    product_name: str | None
    memory_bandwidth_gbps: float | None = None  # only when it differs from the model's figure
    bandwidth_source: str | None = None
    note: str = ""

    @property
    def gfd_product(self) -> str | None:
        return None if self.product_name is None else gfd_product_label(self.product_name)


@dataclass(frozen=True)
class GpuModel:
    """A catalogued GPU model; ``id`` is the DNS-1123 label used in GPU class IDs."""

    id: str
    display_name: str
    architecture: str  # as the DRA driver publishes it: Ampere, Hopper, Blackwell, Ada Lovelace
    compute_capability: str
    memory_gib: float  # nominal capacity as the product name states it
    memory_mib: int | None  # total NVML reports (nvidia-smi memory.total), when a source shows it
    memory_bandwidth_gbps: float | None  # of the primary form factor (first variant)
    bandwidth_source: str | None  # None: the figure is unsourced; later checks only warn
    variants: tuple[GpuVariant, ...]
    mig: MigGeometry | None
    source: str
    uncertain: tuple[str, ...] = ()  # what in this entry is not confirmed by a source

    @property
    def mig_capable(self) -> bool:
        return self.mig is not None

    @property
    def bandwidth_sourced(self) -> bool:
        return self.memory_bandwidth_gbps is not None and self.bandwidth_source is not None

    @property
    def pci_device_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.pci_device_id for v in self.variants if v.pci_device_id))

    @property
    def product_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.product_name for v in self.variants if v.product_name))

    @property
    def gfd_products(self) -> tuple[str, ...]:
        return tuple(gfd_product_label(n) for n in self.product_names)

    @property
    def form_factors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.form_factor for v in self.variants))

    @property
    def gfd_family(self) -> str:
        return self.architecture.lower().replace(" ", "-")

    @property
    def usable_memory_mib(self) -> int:
        """What a selector may rely on: NVML's total when known, else the nominal GiB."""
        return self.memory_mib if self.memory_mib is not None else int(self.memory_gib * 1024)

    def bandwidth_for(self, pci_device_id: str) -> tuple[float | None, str | None]:
        """(GB/s, source) for one variant; falls back to the model's figure."""
        pci = normalize_pci_id(pci_device_id)
        for v in self.variants:
            if v.pci_device_id == pci and v.memory_bandwidth_gbps is not None:
                return v.memory_bandwidth_gbps, v.bandwidth_source
        return self.memory_bandwidth_gbps, self.bandwidth_source


@dataclass(frozen=True)
class Catalog:
    """GPU models by id. ``with_models`` layers fleet-file additions/overrides on top; PCI id
    and product lookups try those fleet models first."""

    _models: Mapping[str, GpuModel] = field(default_factory=dict)
    _first: tuple[str, ...] = ()  # ids consulted first by by_pci_id/by_product

    @classmethod
    def of(cls, models: Iterable[GpuModel], *, first: Iterable[str] = ()) -> Catalog:
        table: dict[str, GpuModel] = {}
        for m in models:
            if not DNS1123_LABEL.match(m.id) or len(m.id) > 63:
                raise ValueError(f"GPU model id {m.id!r} is not a DNS-1123 label")
            table[m.id] = m
        return cls(MappingProxyType(dict(sorted(table.items()))), tuple(first))

    def get(self, model_id: str) -> GpuModel | None:
        return self._models.get(model_id)

    def ids(self) -> tuple[str, ...]:
        return tuple(self._models)

    def _lookup_order(self) -> Iterator[GpuModel]:
        yield from (self._models[i] for i in self._first)
        yield from (m for i, m in self._models.items() if i not in self._first)

    def by_pci_id(self, pci_device_id: str) -> GpuModel | None:
        pci = normalize_pci_id(pci_device_id)
        return next((m for m in self._lookup_order() if pci in m.pci_device_ids), None)

    def by_product(self, name: str) -> GpuModel | None:
        """Model whose NVML name or GFD label equals ``name`` (for node drift reports)."""
        return next((m for m in self._lookup_order() if name in m.product_names or name in m.gfd_products), None)

    def with_models(self, extra: Iterable[GpuModel]) -> Catalog:
        """A new catalog where ``extra`` adds models or replaces those with the same id."""
        extra = list(extra)
        first = [m.id for m in extra] + [i for i in self._first if i not in {m.id for m in extra}]
        return Catalog.of([*self._models.values(), *extra], first=first)

    def __iter__(self) -> Iterator[GpuModel]:
        return iter(self._models.values())

    def __len__(self) -> int:
        return len(self._models)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._models
