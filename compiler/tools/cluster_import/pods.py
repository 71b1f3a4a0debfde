"""GPU pods (``kubectl get pods -A -o json``): who runs what on which node.

A pod is a GPU pod when a container (or init container) requests or limits an ``nvidia.com/*`` or
``gpupolicy.dev/*`` resource, or when it holds DRA ResourceClaims. Its role is *serving* when it
is labelled so, runs a known inference server image or is a replica of a Deployment, *training* when a Job-like owner or a Kueue queue label says so, else *other*.
Only the labels the policy needs are kept (team, model, data class, queue): never environment
variables, secret references or annotations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_PURPOSE, LABEL_QUEUE, LABEL_TEAM
from compiler.tools.cluster_import.quantities import whole_gpus

SERVING_IMAGES = ("vllm", "tritonserver", "text-generation-inference", "tgi", "sglang", "llm-d")
SERVING_OWNERS = ("ReplicaSet", "Deployment", "LeaderWorkerSet")  # StatefulSets are as often notebooks
TRAINING_OWNERS = ("Job", "PyTorchJob", "TFJob", "MPIJob", "JAXJob", "RayJob", "RayCluster", "JobSet", "TrainJob",
                   "Workload")
KEPT_LABELS = (LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS, LABEL_QUEUE, LABEL_PURPOSE)


@dataclass(frozen=True)
class GpuPod:
    namespace: str
    name: str
    node: str | None
    phase: str
    role: str  # serving | training | other
    gpus: dict[str, int]  # resource -> units requested by the pod
    claims: int  # DRA ResourceClaims
    labels: dict[str, str]  # only KEPT_LABELS
    owner_kind: str | None
    owner_uid: str | None

    @property
    def active(self) -> bool:
        return self.phase in ("Running", "Pending", "")


def _gpus(spec: dict[str, Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(kind) or []):
            res = c.get("resources") or {}
            for part in ("limits", "requests"):
                for k, v in (res.get(part) or {}).items():
                    if not str(k).startswith(("nvidia.com/", "gpupolicy.dev/")):
                        continue
                    n = whole_gpus(v, f"spec.{kind}[{i}].resources.{part}[{k}]")
                    if n > 0 and (part == "requests" or k not in (res.get("requests") or {})):
                        total[str(k)] = total.get(str(k), 0) + n
    return total


def _role(labels: dict[str, str], owner: str | None, spec: dict[str, Any]) -> str:
    purpose = labels.get(LABEL_PURPOSE)
    if purpose in ("serving", "training"):
        return purpose
    images = " ".join(str(c.get("image", "")) for c in spec.get("containers") or []).lower()
    if any(s in images for s in SERVING_IMAGES):
        return "serving"
    if owner in TRAINING_OWNERS or LABEL_QUEUE in labels:
        return "training"
    if owner in SERVING_OWNERS:
        return "serving"
    return "other"


def gpu_pod(pod: dict[str, Any]) -> GpuPod | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    gpus = _gpus(spec)
    claims = len(spec.get("resourceClaims") or [])
    if not gpus and not claims:
        return None
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    owner_kind = str(owner.get("kind")) if owner else None
    return GpuPod(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        node=spec.get("nodeName"),
        phase=str((pod.get("status") or {}).get("phase") or ""),
        role=_role(labels, owner_kind, spec),
        gpus=gpus,
        claims=claims,
        labels={k: labels[k] for k in KEPT_LABELS if k in labels},
        owner_kind=owner_kind,
        owner_uid=str(owner.get("uid")) if owner and owner.get("uid") else None,
    )


def gpu_pods(pods: list[dict[str, Any]]) -> list[GpuPod]:
    return [p for p in (gpu_pod(x) for x in pods) if p is not None]
