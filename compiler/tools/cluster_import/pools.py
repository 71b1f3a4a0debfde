"""Draft node pools from node groups: GPU model (catalog lookup of the GFD product), cut, size,
serving reservation and Karpenter settings, each with a note when it was guessed; and the GPU
classes each pool provides (through the compiler's own cut-mode table), so quotas can be mapped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from compiler.catalog import Catalog
from compiler.mig import instances
from compiler.model.fleet import NodePool
from compiler.policy.cuts import cut_mode
from compiler.policy.labels import LABEL_POOL
from compiler.policy.node_contract import CUSTOM_LAYOUT_PREFIX
from compiler.policy.partition import pool_mig_devices
from compiler.tools.cluster_import.nodes import (
    GFD_MEMORY,
    INSTANCE_TYPE,
    KARPENTER_CAPACITY,
    KARPENTER_NODE_CLASS,
    KARPENTER_POOL,
    NodeGroup,
)

DRIVER_MAJOR = "nvidia.com/cuda.driver-version.major"
DRIVER_MAJOR_OLD = "nvidia.com/cuda.driver.major"
_NAME_BAD = re.compile(r"[^a-z0-9-]+")


def dns_label(text: str, fallback: str = "pool") -> str:
    name = _NAME_BAD.sub("-", text.lower()).strip("-")[:63].strip("-")
    return name or fallback


@dataclass(frozen=True)
class GpuClassInfo:
    id: str
    resource: str  # what a ClusterQueue covers on this cluster
    cut: str
    per_node: int


@dataclass
class PoolDraft:
    name: str
    model: str | None  # None: product unknown to the catalog (not written; reported)
    product: str | None
    memory_mib: str | None
    node_names: list[str]
    gpus_per_node: int
    cut: dict[str, Any]
    serving: bool
    karpenter: dict[str, Any] | None
    driver: str | None = None
    notes: dict[str, str] = field(default_factory=dict)  # field -> why it was guessed
    problems: list[str] = field(default_factory=list)
    classes: list[GpuClassInfo] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return len(self.node_names)

    def policy_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "model": self.model, "nodes": self.nodes,
                               "gpusPerNode": self.gpus_per_node}
        if self.serving:
            out["serving"] = True
        if self.driver:
            out["driver"] = self.driver
        out["cut"] = self.cut
        if self.karpenter:
            out["karpenter"] = self.karpenter
        return out


def _model(catalog: Catalog, product: str | None) -> str | None:
    if product is None:
        return None
    base = product.removesuffix("-SHARED")
    base = re.sub(r"-MIG-\d+g\.\d+gb.*$", "", base)  # single MIG strategy renames the board
    found = catalog.by_product(base)
    return found.id if found is not None else None


def _cut(group: NodeGroup, catalog: Catalog, model: str | None, notes: dict[str, str]) -> dict[str, Any]:
    n = group.first
    layout = n.mig_config
    if n.mig_counts or (layout and layout != "all-disabled"):
        if layout and not layout.startswith(CUSTOM_LAYOUT_PREFIX):
            return {"mode": "mig", "layout": layout}
        gpus = n.gpu_count or 1
        per_gpu = {p: c // gpus for p, c in n.mig_counts.items()}
        if all(c % gpus == 0 for c in n.mig_counts.values()) and per_gpu:
            notes["cut"] = (f"MIG layout {layout!r} is not a mig-parted name; rebuilt from the GFD instance counts "
                            f"({', '.join(f'{p}={c}' for p, c in sorted(n.mig_counts.items()))}) spread evenly")
            return {"mode": "mig", "devices": [{"gpus": gpus, "profiles": dict(sorted(per_gpu.items()))}]}
        notes["cut"] = (f"MIG layout {layout!r} and instance counts {dict(sorted(n.mig_counts.items()))} do not split "
                        "evenly over the GPUs; each GPU's profiles are a guess: check the mig-parted config")
        return {"mode": "mig", "devices": _spread(n.mig_counts, gpus, _slices(catalog, model))}
    if n.sharing is not None:
        mode = "mps" if n.sharing == "mps" else "timeslicing"
        replicas = n.replicas
        if replicas is None or replicas < 2:
            notes["cut"] = f"{n.sharing} without nvidia.com/gpu.replicas; 4 replicas guessed"
            replicas = 4
        cut: dict[str, Any] = {"mode": mode, "replicas": replicas}
        if "nvidia.com/gpu.shared" not in n.capacity and n.capacity.get("nvidia.com/gpu"):
            cut["renameByDefault"] = False  # shares advertised as nvidia.com/gpu
        return cut
    return {"mode": "full"}


def _slices(catalog: Catalog, model: str | None) -> tuple[int, dict[str, int]]:
    """Compute slices per GPU and per profile (7 and an estimate from the name when unknown)."""
    gm = catalog.get(model) if model else None
    geometry = gm.mig if gm is not None else None
    if geometry is None:
        return 7, {}
    return geometry.compute_slices, {p.name: p.compute_slices for p in geometry.profiles}


def _spread(counts: dict[str, int], gpus: int, slices: tuple[int, dict[str, int]]) -> list[dict[str, Any]]:
    """Instances spread over the GPUs, largest first, each onto the GPU with most compute slices
    free; identical GPUs grouped into one ``devices`` entry."""
    per_gpu, sizes = slices
    size = {p: sizes.get(p) or int(p.split("g.")[0]) for p in counts}
    free = [per_gpu] * gpus
    devices: list[dict[str, int]] = [{} for _ in range(gpus)]
    for profile in sorted(counts, key=lambda p: (-size[p], p)):
        for _ in range(counts[profile]):
            i = max(range(gpus), key=lambda g: (free[g], -g))
            free[i] -= size[profile]
            devices[i][profile] = devices[i].get(profile, 0) + 1
    merged: dict[tuple[tuple[str, int], ...], int] = {}
    for d in devices:
        key = tuple(sorted(d.items()))
        merged[key] = merged.get(key, 0) + 1
    return [{"gpus": g, "profiles": dict(k)} for k, g in merged.items() if k]


def _karpenter(group: NodeGroup, notes: dict[str, str]) -> dict[str, Any] | None:
    if group.common(KARPENTER_POOL) is None and not any(KARPENTER_POOL in n.labels for n in group.nodes):
        return None
    node_class = group.common(KARPENTER_NODE_CLASS)
    if node_class is None:
        notes["karpenter"] = f"no common {KARPENTER_NODE_CLASS} label; nodeClass 'default' guessed"
        node_class = "default"
    out: dict[str, Any] = {"nodeClass": dns_label(node_class, "default")}
    types = sorted({n.labels[INSTANCE_TYPE] for n in group.nodes if INSTANCE_TYPE in n.labels})
    if types:
        out["instanceTypes"] = types
    capacity = group.common(KARPENTER_CAPACITY)
    if capacity in ("spot", "reserved"):
        out["capacityType"] = capacity
    return out


def _driver(group: NodeGroup) -> str | None:
    """Driver branch (GFD ``cuda.driver-version.major``): MIG profile names depend on it."""
    for label in (DRIVER_MAJOR, DRIVER_MAJOR_OLD):
        value = group.common(label)
        if value and re.fullmatch(r"\d{3}", value):
            return value
    return None


def draft_pool(group: NodeGroup, catalog: Catalog, taken: set[str]) -> PoolDraft:
    n = group.first
    notes: dict[str, str] = {}
    model = _model(catalog, n.product)
    kind, value = group.key
    if kind == "pool":
        name = value
    elif kind == "karpenter":
        name = dns_label(value)
        notes["name"] = f"named after Karpenter NodePool {value!r}; label the nodes {LABEL_POOL}={name}"
    else:
        gpu = model or dns_label((n.product or "gpu").lower().removeprefix("nvidia-"), "gpu")
        base = dns_label(f"{gpu}-{'serve' if n.serving else 'pool'}")
        name, i = base, 2
        while name in taken:
            name, i = f"{base}-{i}", i + 1
        notes["name"] = f"no {LABEL_POOL} label: named after its GPUs; label the nodes {LABEL_POOL}={name}"
    count = n.gpu_count
    if count is None:
        count = 1
        notes["gpusPerNode"] = "no nvidia.com/gpu.count label or nvidia.com/gpu capacity; 1 guessed"
    pool = PoolDraft(name=name, model=model, product=n.product, memory_mib=n.labels.get(GFD_MEMORY),
                     node_names=[x.name for x in group.nodes], gpus_per_node=min(max(count, 1), 16),
                     cut=_cut(group, catalog, model, notes), serving=n.serving,
                     karpenter=_karpenter(group, notes), driver=_driver(group), notes=notes,
                     problems=group.varies())
    if kind == "karpenter":
        notes["nodes"] = f"{pool.nodes} node(s) running at export time; Karpenter scales this pool"
    return pool


def pool_classes(pool: PoolDraft, dra: bool, catalog: Catalog) -> list[GpuClassInfo]:
    """The GPU classes the compiler will derive for the pool (class ID, covered resource)."""
    if pool.model is None:
        return []
    try:
        np = NodePool.model_validate({**pool.policy_dict(), "serving": pool.serving})
    except ValueError as exc:
        pool.problems.append(f"pool does not validate: {exc}")
        return []
    mode = cut_mode(np.cut)
    shares = mode.shares(np.cut)
    mig: dict[str, int] = {}
    if mode.name == "mig":
        devices, problems, _ = pool_mig_devices(np, catalog)
        if devices is None:
            pool.problems += [f"MIG cut does not resolve: {p}" for p in problems] or ["MIG cut does not resolve"]
            return []
        mig = instances(devices)
    out = []
    for unit in mode.units(np, mig):
        cid = mode.class_id(np.model, unit.profile, unit.replicas)
        resource = f"gpupolicy.dev/{cid}" if dra else mode.resource(unit.profile, shares.renamed if shares else False)
        out.append(GpuClassInfo(cid, resource, mode.name, unit.per_node))
    return out
