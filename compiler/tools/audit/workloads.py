"""One exported Kueue Workload reduced to what the evidence needs.

Read (``kueue.x-k8s.io/v1beta2``, also the deprecated ``v1beta1`` Kueue 0.19 still serves): name,
namespace, UID, creation time, the audit labels Kueue copies from the job (``labelKeysToCopy``:
team, model, data class), the owner's UID, ``spec.queueName``, ``status.admission`` (ClusterQueue,
flavor per resource, resource usage), ``status.clusterName`` (MultiKueue), the conditions
(QuotaReserved, Admitted, Finished, Evicted, Preempted, Requeued), ``status.requeueState`` and the
eviction counts of ``status.schedulingStats``. Nothing else is copied: no pod templates, environment
variables, Secret references or annotations.

GPU amounts are quantities read as ``import`` reads them (``compiler.tools.cluster_import.quantities``):
``"500m"`` is half a GPU, kept, with a located warning (Kueue counts devices whole); one that is no
quantity, is negative or above any real count (``"1e30"``) is an ``ExportError`` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any

from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_TEAM
from compiler.tools.cluster_import.quantities import MAX_GPUS, MalformedExport, count, gpus, shown
from compiler.tools.kube_export import ExportError, describe

API_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
GPU_PREFIXES = ("nvidia.com/", "gpupolicy.dev/", "amd.com/")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class Condition:
    status: bool
    reason: str
    message: str
    at: datetime | None


@dataclass(frozen=True, slots=True)
class GpuUse:
    resource: str
    flavor: str | None  # None: not admitted (requested only)
    count: int | Fraction  # a Fraction only for a fraction of a GPU (warned about)


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    namespace: str
    name: str
    uid: str
    created: datetime | None
    team: str | None
    model: str | None
    data_class: str | None
    labels: tuple[str, ...]  # which required-label keys it carries
    owner_uid: str | None
    queue: str | None
    cluster_queue: str | None
    cluster_name: str | None  # MultiKueue: the worker that runs it
    gpus: tuple[GpuUse, ...]
    conditions: dict[str, Condition]
    requeue_at: datetime | None
    evictions: tuple[tuple[str, int], ...]  # (reason, count) from schedulingStats
    warnings: tuple[str, ...] = ()  # located: what the export says that the ledger keeps with a doubt

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def cond(self, kind: str) -> Condition | None:
        return self.conditions.get(kind)

    def true(self, kind: str) -> Condition | None:
        c = self.conditions.get(kind)
        return c if c is not None and c.status else None


def _add(out: dict[tuple[str, str | None], int | Fraction], key: tuple[str, str | None], n: int | Fraction) -> None:
    out[key] = out.get(key, 0) + n


def _gpus(status: dict[str, Any], spec: dict[str, Any], warnings: list[str]) -> tuple[GpuUse, ...]:
    """GPUs by resource and flavor: what the admission holds, else what the Workload asks for. Every
    amount is a quantity (``compiler.tools.cluster_import.quantities``, as ``import`` reads them); a
    fraction of a GPU is kept and warned about (Kueue counts devices whole), one that is no quantity,
    negative or above any real count is a ``MalformedExport`` naming the field."""
    admission = status.get("admission") or {}
    out: dict[tuple[str, str | None], int | Fraction] = {}
    fields: dict[tuple[str, str | None], str] = {}
    for i, psa in enumerate(admission.get("podSetAssignments") or []):
        flavors = psa.get("flavors") or {}
        for resource, qty in (psa.get("resourceUsage") or {}).items():
            if str(resource).startswith(GPU_PREFIXES):
                key = (str(resource), str(flavors[resource]) if resource in flavors else None)
                where = f"status.admission.podSetAssignments[{i}].resourceUsage[{resource}]"
                _add(out, key, _amount(qty, where, warnings))
                fields.setdefault(key, where)
    if out:
        return tuple(GpuUse(r, f, n) for (r, f), n in sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")))
    for i, rr in enumerate(status.get("resourceRequests") or []):  # not admitted: what it asks for
        for resource, qty in (rr.get("resources") or {}).items():
            if str(resource).startswith(GPU_PREFIXES):
                where = f"status.resourceRequests[{i}].resources[{resource}]"
                _add(out, (str(resource), None), _amount(qty, where, warnings))
    if not out:
        for i, ps in enumerate(spec.get("podSets") or []):
            n_pods = count(ps.get("count", 1), f"spec.podSets[{i}].count")
            pod = (ps.get("template") or {}).get("spec") or {}
            for j, c in enumerate(pod.get("containers") or []):
                res = c.get("resources") or {}
                requests = res.get("requests") or {}
                for part, values in (("limits", res.get("limits") or {}), ("requests", requests)):
                    for resource, qty in values.items():
                        if not str(resource).startswith(GPU_PREFIXES) or (part == "limits" and resource in requests):
                            continue
                        where = f"spec.podSets[{i}].template.spec.containers[{j}].resources.{part}[{resource}]"
                        _add(out, (str(resource), None), _amount(qty, where, warnings) * n_pods)
    for (resource, _), n in out.items():
        if n > MAX_GPUS:
            raise MalformedExport(f"the Workload asks for {shown(n)} {resource} in all: more than {MAX_GPUS:,} "
                                  "GPUs is not a real count")
    return tuple(GpuUse(r, f, n) for (r, f), n in sorted(out.items(), key=lambda kv: kv[0][0]))


def _amount(qty: Any, where: str, warnings: list[str]) -> int | Fraction:
    n = gpus(qty, where)
    if not isinstance(n, int):
        warnings.append(f"{where} is {qty!r}, {shown(n)} GPUs: not a whole number (Kueue counts devices whole; "
                        f"an edited export, or not a device count?); kept as {shown(n)}")
    return n


def workload_facts(obj: dict[str, Any], path: str, index: int, required: tuple[str, ...]) -> WorkloadFacts:
    api = obj.get("apiVersion")
    if obj.get("kind") not in (None, "Workload"):
        raise ExportError(f"{path}: {describe(obj, index)} is a {obj.get('kind')}, not a Kueue Workload")
    if api is not None and api not in API_VERSIONS:
        raise ExportError(f"{path}: {describe(obj, index)} has apiVersion {api}; gpupolicy reads Kueue Workloads of "
                          f"{' or '.join(API_VERSIONS)} (export them with kubectl from a Kueue 0.15+ cluster)")
    meta = obj.get("metadata")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not isinstance(meta, dict) or not isinstance(spec, dict) or not isinstance(status, dict):
        raise ExportError(f"{path}: {describe(obj, index)}: metadata, spec or status is not an object")
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        raise ExportError(f"{path}: {describe(obj, index)}: metadata.labels is not an object")
    conds: dict[str, Condition] = {}
    raw = status.get("conditions") or []
    if not isinstance(raw, list):
        raise ExportError(f"{path}: {describe(obj, index)}: status.conditions is not a list")
    for c in raw:
        if isinstance(c, dict) and c.get("type"):
            conds[str(c["type"])] = Condition(str(c.get("status")) == "True", str(c.get("reason") or ""),
                                              str(c.get("message") or ""), parse_time(c.get("lastTransitionTime")))
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    stats = (status.get("schedulingStats") or {}).get("evictions") or []
    warnings: list[str] = []
    try:
        used = _gpus(status, spec, warnings)
        evictions = tuple((str(e.get("reason")), count(e.get("count", 0), f"status.schedulingStats.evictions[{i}].count"))
                          for i, e in enumerate(stats) if isinstance(e, dict))
    except MalformedExport as exc:
        raise ExportError(f"{path}: {describe(obj, index)}: {exc}") from None
    except (AttributeError, TypeError) as exc:
        raise ExportError(f"{path}: {describe(obj, index)}: malformed admission or pod sets ({exc})") from None
    return WorkloadFacts(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        created=parse_time(meta.get("creationTimestamp")),
        team=_label(labels, LABEL_TEAM),
        model=_label(labels, LABEL_MODEL),
        data_class=_label(labels, LABEL_DATA_CLASS),
        labels=tuple(k for k in required if k in labels),
        owner_uid=str(owner.get("uid")) if owner and owner.get("uid") else None,
        queue=str(spec["queueName"]) if spec.get("queueName") else None,
        cluster_queue=str((status.get("admission") or {}).get("clusterQueue") or "") or None,
        cluster_name=str(status["clusterName"]) if status.get("clusterName") else None,
        gpus=used,
        conditions=conds,
        requeue_at=parse_time((status.get("requeueState") or {}).get("requeueAt")),
        evictions=evictions,
        warnings=tuple(f"{path}: {describe(obj, index)}: {w}" for w in warnings),
    )


def _label(labels: dict[str, Any], key: str) -> str | None:
    v = labels.get(key)
    return str(v) if v not in (None, "") else None
