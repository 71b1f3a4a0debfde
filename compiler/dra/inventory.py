"""The devices a DRA cluster's nodes will publish, modelled on the NVIDIA DRA driver.

Source read: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 and main (cmd/gpu-kubelet-plugin
``deviceinfo.go`` ``GpuInfo.Attributes``/``GetDevice``, ``mig.go`` ``CommonAttributesMig``/
``CommonCapacitiesMig``/``ToCanonicalName``, ``nvlib.go`` ``GetPerGpuAllocatableDevices``):

* driver ``gpu.nvidia.com``, one pool (ResourceSlice) per node;
* full GPU ``gpu-<minor>``: attributes ``type``="gpu", ``uuid``, ``productName``, ``brand``,
  ``architecture`` (strings), ``cudaComputeCapability``, ``driverVersion``,
  ``cudaDriverVersion`` (versions), ``resource.kubernetes.io/{pciBusID,pcieRoot}`` (strings),
  ``resource.kubernetes.io/numaNode`` (int), ``addressingMode`` when available; capacity
  ``memory`` (NVML total, binary bytes). There is no ``index`` attribute.
* static MIG device ``gpu-<minor>-mig-<profile, dots dropped>-<GI profile id>-<placement>``:
  the parent's attributes with ``type``="mig", ``profile``, ``parentUUID`` and its own
  ``uuid``; capacity ``memory`` (GI profile size), ``multiprocessors``, ``copyEngines``,
  ``decoders``, ``encoders``, ``jpegEngines``, ``ofaEngines`` and ``memorySlice<i>``=1 per
  occupied memory slice.
* a MIG-enabled GPU itself is *not* listed by the static path of the source, but
  dra-driver-nvidia-gpu#719 (open) reports nodes that list it beside its MIG devices. Such
  "MIG parents" are kept in the inventory, marked, so the proof can tell which classes
  would reach them.

What a compiler cannot know offline (serials, PCI addresses, CUDA driver version, per-profile
SM and engine counts) is filled with placeholders and listed in ``Device.unknown``: a selector
that reads those names cannot be proven. Values known only within bounds are listed in
``Device.alternatives`` (the SXM and PCIe product names of a model; MIG memory, which is
estimated as the profile's share of memory slices times 0.95 to 1.0 of the GPU's total).
MIG placements are one valid packing (``compiler.mig.pack``), not necessarily the one mig-parted
picks; only device names and ``memorySlice<i>`` capacities depend on it.
"""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.model import MigProfile
from compiler.mig import lookup_profile, pack
from compiler.mig.check import ProfileMatch
from compiler.model.fleet import Cluster, NodePool
from compiler.policy.cuts import cut_mode
from compiler.policy.memo import per_policy
from compiler.policy.partition import pool_mig_devices

DRIVER = "gpu.nvidia.com"
STD = "resource.kubernetes.io/"
# Differ from device to device; selectors that read them pin hardware, which a policy cannot.
PER_INSTANCE = frozenset({"uuid", "parentUUID", STD + "pciBusID", STD + "pcieRoot", STD + "numaNode"})
ALWAYS_UNKNOWN = PER_INSTANCE | {"cudaDriverVersion", "addressingMode", "brand"}
MIG_UNKNOWN_CAPACITY = frozenset({"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines",
                                  "ofaEngines"})
_NS = uuidlib.UUID("6f1c1c1e-5d0c-4a3e-9d59-6770757f6c69")  # fixed: placeholders are deterministic
_NS_BYTES = _NS.bytes


def placeholder_uuid(name: str) -> str:
    """``str(uuid.uuid5(_NS, name))`` without the ``UUID`` object (a tenth of the time; 600 per
    inventory at 1,000 teams): SHA-1 of namespace + name, its first 16 bytes with the RFC 4122
    version (5) and variant bits set (tests/test_whole_policy_dra.py compares the two)."""
    b = bytearray(hashlib.sha1(_NS_BYTES + name.encode()).digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x50
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _s(v: str) -> dict[str, Any]:
    return {"string": v}


def _q(v: str) -> dict[str, Any]:
    return {"value": v}


def semver_of(text: str) -> str:
    """How the driver prints a version (Masterminds semver): ``550.90.07`` -> ``550.90.7``."""
    parts = [str(int(p)) for p in text.split(".")[:3] if p.isdigit()]
    return ".".join(parts + ["0"] * (3 - len(parts)))


@dataclass(frozen=True)
class Device:
    """One entry of a node's ResourceSlice ``spec.devices`` (attributes in ResourceSlice form)."""

    name: str
    pool: str
    node: int
    kind: str  # "gpu" | "mig"
    owner: str | None  # GPU class whose budget the device backs; None for MIG parents
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]
    mig_parent: bool = False  # a MIG-enabled GPU listed whole (dra-driver-nvidia-gpu#719)
    unknown: frozenset[str] = frozenset()  # names whose value is a placeholder
    alternatives: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # name -> possible values

    def as_slice_entry(self) -> dict[str, Any]:
        return {"name": self.name, "attributes": dict(sorted(self.attributes.items())),
                "capacity": dict(sorted(self.capacity.items()))}

    def signature(self) -> tuple[Any, ...]:
        """What a selector can tell apart, per-instance attributes aside."""
        attrs = tuple(sorted((k, str(v)) for k, v in self.attributes.items() if k not in PER_INSTANCE))
        return (self.pool, self.kind, self.owner, self.mig_parent, attrs, tuple(sorted(map(str, self.capacity.items()))))


@dataclass(frozen=True)
class DeviceGroup:
    """Devices that look the same to any selector not pinning hardware: one example and a count."""

    device: Device
    count: int


@dataclass(frozen=True)
class PoolInventory:
    pool: str
    serving: bool
    nodes: int
    groups: tuple[DeviceGroup, ...]
    problem: str | None = None  # why the pool could not be modelled (broken layout, unknown model)


@dataclass(frozen=True)
class Inventory:
    cluster: str
    pools: tuple[PoolInventory, ...]

    @property
    def groups(self) -> Iterator[DeviceGroup]:
        for p in self.pools:
            yield from p.groups

    def total(self, *, parents: bool = False) -> int:
        return sum(g.count for g in self.groups if parents or not g.device.mig_parent)


def _gpu_attributes(model: GpuModel, pool: NodePool, ids: tuple[str, str, int]) -> tuple[dict[str, Any], set[str]]:
    uuid, bus, numa = ids
    unknown = set(ALWAYS_UNKNOWN)
    if pool.driver and pool.driver.count(".") >= 1:
        driver = semver_of(pool.driver)
    else:  # only a branch (or nothing) is declared: the exact version is up to the node
        driver = semver_of(pool.driver or "580")
        unknown.add("driverVersion")
    attrs: dict[str, Any] = {
        "type": _s("gpu"),
        "uuid": _s(uuid),
        "productName": _s(model.product_names[0] if model.product_names else model.display_name),
        "brand": _s("Nvidia"),
        "architecture": _s(model.architecture),
        "cudaComputeCapability": {"version": semver_of(model.compute_capability)},
        "driverVersion": {"version": driver},
        "cudaDriverVersion": {"version": "13.0.0"},
        STD + "pciBusID": _s(bus),
        STD + "pcieRoot": _s("pci0000:" + bus[5:7]),
        STD + "numaNode": {"int": numa},
    }
    if not model.product_names:
        unknown.add("productName")
    return attrs, unknown


def _gpu_memory(model: GpuModel) -> tuple[str, tuple[str, ...]]:
    if model.memory_mib is not None:
        return f"{model.memory_mib}Mi", ()
    nominal = int(model.memory_gib * 1024)
    return f"{nominal}Mi", (f"{nominal}Mi", f"{int(nominal * 0.95)}Mi")


def _node_devices(cluster: str, pool: NodePool, model: GpuModel, node: int,
                  mig: list[dict[str, int]] | None, owners: dict[str | None, str]) -> list[Device]:
    """Every device one node of the pool lists, in the driver's naming."""
    out: list[Device] = []
    memory, memory_alts = _gpu_memory(model)
    names = model.product_names
    for minor in range(pool.gpus_per_node):
        gpu_uuid = "GPU-" + placeholder_uuid(f"{cluster}/{pool.name}/{node}/{minor}")
        bus = f"0000:{0x18 + 0x10 * minor:02x}:00.0"
        numa = minor * 2 // pool.gpus_per_node
        attrs, unknown = _gpu_attributes(model, pool, (gpu_uuid, bus, numa))
        alts: dict[str, tuple[Any, ...]] = {}
        if len(names) > 1:  # the fleet file does not say which board (SXM, PCIe) the pool has
            alts["productName"] = tuple(_s(n) for n in names)
        if memory_alts:
            alts["memory"] = tuple(_q(m) for m in memory_alts)
        counts = mig[minor] if mig is not None else None
        out.append(Device(f"gpu-{minor}", pool.name, node, "gpu", None if counts is not None else owners[None],
                          attrs, {"memory": _q(memory)}, mig_parent=counts is not None,
                          unknown=frozenset(unknown), alternatives=alts))
        if counts is None:
            continue
        out.extend(_mig_devices(cluster, pool, model, node, minor, counts, attrs, unknown, alts, owners))
    return out


def _mig_devices(cluster: str, pool: NodePool, model: GpuModel, node: int, minor: int, counts: dict[str, int],
                 parent: dict[str, Any], unknown: set[str], alts: dict[str, tuple[Any, ...]],
                 owners: dict[str | None, str]) -> list[Device]:
    assert model.mig is not None
    written: dict[str, str] = {}  # canonical -> as written (= as the driver branch reports it)
    canonical: dict[str, int] = {}
    for name, n in counts.items():
        match = lookup_profile(model, name, driver=pool.driver)
        assert isinstance(match, ProfileMatch), match  # layouts are checked before (MIG rules)
        written[match.profile.name] = name
        canonical[match.profile.name] = canonical.get(match.profile.name, 0) + n
    placed = pack(model.mig, canonical).placements or ()
    total_mib = model.usable_memory_mib
    out = []
    for k, pl in enumerate(placed):
        profile = model.mig.profile(pl.profile)
        assert isinstance(profile, MigProfile)
        shown = written[pl.profile]
        pid = profile.profile_id if profile.profile_id is not None else 0
        name = f"gpu-{minor}-mig-{shown.replace('.', '').replace('+', '-')}-{pid}-{pl.start}"
        mig_uuid = "MIG-" + placeholder_uuid(f"{cluster}/{pool.name}/{node}/{minor}/{k}")
        attrs = {**{a: v for a, v in parent.items() if a != "uuid"}, "type": _s("mig"), "profile": _s(shown),
                 "parentUUID": parent["uuid"], "uuid": _s(mig_uuid)}
        ideal = total_mib * profile.memory_slices // model.mig.memory_slices
        cap = {"memory": _q(f"{ideal}Mi"), "multiprocessors": _q(str(14 * profile.compute_slices)),
               "copyEngines": _q(str(profile.compute_slices)), "decoders": _q("0"), "encoders": _q("0"),
               "jpegEngines": _q("0"), "ofaEngines": _q("0")}
        for s in range(pl.start, pl.start + pl.size):
            cap[f"memorySlice{s}"] = _q("1")
        mig_alts = {"memory": (_q(f"{ideal}Mi"), _q(f"{ideal * 95 // 100}Mi"))}
        if "productName" in alts:
            mig_alts["productName"] = alts["productName"]
        out.append(Device(name, pool.name, node, "mig", owners[shown], attrs, cap,
                          unknown=frozenset(unknown | MIG_UNKNOWN_CAPACITY), alternatives=mig_alts))
    return out


def pool_devices(cluster: Cluster, pool: NodePool, catalog: Catalog, node: int = 0) -> tuple[list[Device], str | None]:
    """Devices of one node of ``pool`` (same for every node of the pool), or why there are none."""
    model = catalog.get(pool.model)
    if model is None:
        return [], f"unknown GPU model {pool.model!r}"
    mig: list[dict[str, int]] | None = None
    owners: dict[str | None, str] = {}
    mode = cut_mode(pool.cut)
    if mode.mig(pool.cut) is not None:
        devices, problems, _ = pool_mig_devices(pool, catalog)
        if devices is None or any(p.fatal for p in problems):
            return [], "its MIG layout does not resolve (see the MIG diagnostics)"
        mig = devices
        for profiles in devices:
            for p in profiles:
                owners[p] = mode.class_id(pool.model, p, None)
    else:
        (unit,) = mode.units(pool, None)
        owners[None] = mode.class_id(pool.model, unit.profile, unit.replicas)
    return _node_devices(cluster.name, pool, model, node, mig, owners), None


def cluster_inventory(cluster: Cluster, catalog: Catalog) -> Inventory:
    """Every pool's devices, grouped: nodes of a pool are identical, so one node is enumerated."""
    pools = []
    for pool in cluster.pools:
        devices, problem = pool_devices(cluster, pool, catalog)
        groups: dict[tuple[Any, ...], list[Device]] = {}
        for d in devices:
            groups.setdefault(d.signature(), []).append(d)
        pools.append(PoolInventory(pool.name, pool.serving, pool.nodes,
                                   tuple(DeviceGroup(ds[0], len(ds) * pool.nodes) for ds in groups.values()),
                                   problem))
    return Inventory(cluster.name, tuple(pools))


def resource_slice(cluster: Cluster, pool: NodePool, catalog: Catalog, node: int = 0,
                   *, parents: bool = False) -> dict[str, Any]:
    """The ResourceSlice (resource.k8s.io/v1) node ``node`` of the pool would publish; node names
    are placeholders ``<pool>-<n>``. ``parents`` lists MIG-enabled GPUs too (#719 behaviour)."""
    devices, _ = pool_devices(cluster, pool, catalog, node)
    node_name = f"{pool.name}-{node}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [d.as_slice_entry() for d in devices if parents or not d.mig_parent],
        },
    }


@per_policy
def policy_inventory(policy: Any, cluster: str) -> Inventory:
    """``cluster_inventory`` once per policy: semantic checks, REPORT.md and allocation.json all
    prove DeviceClasses against it (and ``evaluate_class`` memoises on it)."""
    return cluster_inventory(policy.clusters[cluster], policy.catalog)
