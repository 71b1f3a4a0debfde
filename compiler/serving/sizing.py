"""Sizing arithmetic for a vLLM deployment, as data (fact sheet gitops-serving §3.5).

Units: bytes everywhere; memory figures are shown in GiB (1 GiB = 2^30 bytes) and KV per token
in KiB (2^10). Weights are also shown in GB (10^9) because that is how model sizes are quoted.
Bandwidth is the catalog's GB/s (10^9 bytes per second).

GPU memory is the total NVML reports (catalog ``memory_mib``) when the catalog has it, else the
nominal ``memory_gib``: vLLM's ``--gpu-memory-utilization`` is a fraction of the total the driver
reports, and the nominal figure overstates it (L40S: 48 nominal, 44.99 GiB reported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from compiler.catalog import GpuModel
from compiler.model.fleet import NodePool
from compiler.model.team import ServingDeployment
from compiler.serving.architectures import Architecture

GIB = 1 << 30
KIB = 1 << 10
GB = 10**9

# Bytes per weight element by the deployment's dtype.
WEIGHT_BYTES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
# vLLM's default --kv-cache-dtype auto stores K/V in the activation dtype, which stays 16-bit
# for fp8/int8/int4 weight quantization; so KV elements are 2 bytes whatever the weight dtype.
KV_ELEMENT_BYTES = 2


def weight_bytes(parameters: int, dtype: str) -> float:
    """params × bytes per parameter (bf16/fp16 2, fp8/int8 1, int4 0.5)."""
    return parameters * WEIGHT_BYTES[dtype]


def kv_heads_stored(kv_heads: int, tp: int) -> int:
    """KV heads held across all TP ranks: vLLM splits them when kv_heads >= TP and replicates
    them (one per rank) when TP > kv_heads, so replication costs memory."""
    return tp * max(1, kv_heads // tp)


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, element_bytes: int = KV_ELEMENT_BYTES) -> int:
    """2 (K and V) × layers × KV heads × head dim × bytes per element."""
    return 2 * layers * kv_heads * head_dim * element_bytes


def kv_needed(per_token: int, max_model_len: int, sequences: int) -> int:
    """KV for ``sequences`` concurrent sequences, each at the full context length."""
    return per_token * max_model_len * sequences


def memory_budget(gpu_memory_bytes: int, tp: int, utilization: float) -> float:
    """What one replica may use: GPU memory × TP × gpu-memory-utilization."""
    return gpu_memory_bytes * tp * utilization


def tpot_bound_ms(bytes_read: float, tp: int, bandwidth_gbps: float) -> float:
    """Memory-bandwidth floor on time per output token: every decode step reads the bytes
    (weights, optionally KV) once, split over TP GPUs reading in parallel."""
    return bytes_read / tp / (bandwidth_gbps * GB) * 1000


def gpu_memory(gpu: GpuModel) -> tuple[int, str]:
    """(bytes, source) of one GPU's memory as vLLM sees it."""
    if gpu.memory_mib is not None:
        return gpu.memory_mib * (1 << 20), f"NVML total {gpu.memory_mib} MiB"
    return int(gpu.memory_gib * GIB), f"nominal {gpu.memory_gib:g} GiB (NVML total not catalogued)"


COLD_DOWNLOAD_SECONDS_PER_GIB = 20  # ~50 MiB/s: a model-hub download the first replica pays, uncached
STARTUP_CAP_SECONDS = 7200


def startup_budget_seconds(weights: float) -> int:
    """Startup probe budget: 5 minutes of engine start (CUDA graphs, KV profiling) plus a cold
    download of the weights at ~50 MiB/s (20 s per GiB: the first replica on an empty model cache
    pulls from the hub, often far below the NIC's rate), rounded up to a minute, capped at two
    hours. A failing startup probe kills vLLM mid-download and the next try starts over (vLLM
    docs/deployment/k8s.md; issue 15: 6 s/GiB was too tight for a cold 70B download)."""
    seconds = 300 + COLD_DOWNLOAD_SECONDS_PER_GIB * weights / GIB
    return int(min(STARTUP_CAP_SECONDS, math.ceil(seconds / 60) * 60))


@dataclass(frozen=True)
class Sizing:
    """The arithmetic of one deployment (one replica), all in bytes / ms."""

    arch: Architecture
    gpu: GpuModel
    dtype: str
    tp: int
    max_model_len: int
    sequences: int
    utilization: float
    gpu_memory_bytes: int
    gpu_memory_source: str
    weight_bytes: float
    kv_per_token: int  # across all TP ranks (replicated heads included)
    kv_needed: int
    budget: float
    tpot_sla_ms: float

    @property
    def need(self) -> float:
        return self.weight_bytes + self.kv_needed

    @property
    def fits(self) -> bool:
        return self.need <= self.budget

    @property
    def kv_room(self) -> float:
        """Budget left for KV after the weights (may be negative)."""
        return self.budget - self.weight_bytes

    @property
    def kv_tokens(self) -> int:
        return max(0, int(self.kv_room // self.kv_per_token))

    @property
    def max_sequences(self) -> int:
        """Full-length sequences the budget holds concurrently."""
        return self.kv_tokens // self.max_model_len

    @property
    def bandwidth_gbps(self) -> float | None:
        return self.gpu.memory_bandwidth_gbps

    @property
    def bandwidth_sourced(self) -> bool:
        return self.gpu.bandwidth_sourced

    @property
    def tpot_bound_ms(self) -> float | None:
        bw = self.bandwidth_gbps
        return None if bw is None else tpot_bound_ms(self.weight_bytes, self.tp, bw)

    @property
    def tpot_full_kv_ms(self) -> float | None:
        """Informational: the floor when every step also reads the full KV of all sequences."""
        bw = self.bandwidth_gbps
        return None if bw is None else tpot_bound_ms(self.need, self.tp, bw)

    def tp_needed(self, gpus_per_node: int) -> int | None:
        """Smallest TP (dividing the heads) whose budget holds weights and KV, or None."""
        for tp in range(1, gpus_per_node + 1):
            if tp_problem(self.arch, tp) is not None:
                continue
            per_token = kv_bytes_per_token(self.arch.layers, kv_heads_stored(self.arch.kv_heads, tp),
                                           self.arch.head_dim)
            need = self.weight_bytes + kv_needed(per_token, self.max_model_len, self.sequences)
            if need <= memory_budget(self.gpu_memory_bytes, tp, self.utilization):
                return tp
        return None

    def as_dict(self) -> dict[str, Any]:
        def gib(v: float) -> float:
            return round(v / GIB, 2)

        bound, full = self.tpot_bound_ms, self.tpot_full_kv_ms
        return {
            "architecture": self.arch.key,
            "parameters": self.arch.parameters,
            "dtype": self.dtype,
            "tensorParallel": self.tp,
            "gpuModel": self.gpu.id,
            "gpuMemoryGiB": gib(self.gpu_memory_bytes),
            "gpuMemorySource": self.gpu_memory_source,
            "gpuMemoryUtilization": self.utilization,
            "weightsGB": round(self.weight_bytes / GB, 2),
            "weightsGiB": gib(self.weight_bytes),
            "kvPerTokenKiB": round(self.kv_per_token / KIB, 2),
            "maxModelLen": self.max_model_len,
            "concurrentSequences": self.sequences,
            "kvNeededGiB": gib(self.kv_needed),
            "budgetGiB": gib(self.budget),
            "headroomGiB": gib(self.budget - self.need),
            "fits": self.fits,
            "kvCapacityTokens": self.kv_tokens,
            "maxConcurrentSequences": self.max_sequences,
            "bandwidthGBps": self.bandwidth_gbps,
            "bandwidthSourced": self.bandwidth_sourced,
            "tpotBoundMs": None if bound is None else round(bound, 2),
            "tpotFullKvMs": None if full is None else round(full, 2),
            "tpotSlaMs": self.tpot_sla_ms,
        }


def tp_problem(arch: Architecture, tp: int) -> str | None:
    """Why vLLM rejects this TP for the model, or None. vLLM asserts heads % TP == 0, and for KV
    heads either kv_heads % TP == 0 (split) or TP % kv_heads == 0 (replicated)."""
    if arch.attention_heads % tp:
        return f"{arch.attention_heads} attention heads are not divisible by {tp}"
    if arch.kv_heads >= tp and arch.kv_heads % tp:
        return f"{arch.kv_heads} KV heads are not divisible by {tp}"
    if arch.kv_heads < tp and tp % arch.kv_heads:
        return f"{tp} is not a multiple of the {arch.kv_heads} KV heads (vLLM replicates them evenly)"
    return None


def size(dep: ServingDeployment, arch: Architecture, gpu: GpuModel) -> Sizing:
    mem, mem_source = gpu_memory(gpu)
    tp = dep.tensor_parallel
    per_token = kv_bytes_per_token(arch.layers, kv_heads_stored(arch.kv_heads, tp), arch.head_dim)
    return Sizing(
        arch=arch,
        gpu=gpu,
        dtype=dep.dtype,
        tp=tp,
        max_model_len=dep.max_model_len,
        sequences=dep.sla.concurrent_sequences,
        utilization=dep.gpu_memory_utilization,
        gpu_memory_bytes=mem,
        gpu_memory_source=mem_source,
        weight_bytes=weight_bytes(arch.parameters, dep.dtype),
        kv_per_token=per_token,
        kv_needed=kv_needed(per_token, dep.max_model_len, dep.sla.concurrent_sequences),
        budget=memory_budget(mem, tp, dep.gpu_memory_utilization),
        tpot_sla_ms=dep.sla.tpot_p95_ms,
    )


def pool_gpus(pool: NodePool) -> int:
    return pool.nodes * pool.gpus_per_node
