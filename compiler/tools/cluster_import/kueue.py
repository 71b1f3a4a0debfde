"""Existing Kueue objects (``kubectl get resourceflavors,cohorts,clusterqueues,localqueues,
workloadpriorityclasses -A -o json``): what they say about departments, teams, budgets and tiers.

Quotas are kept exactly: ``nominalQuota`` becomes ``guaranteed``, an absent ``borrowingLimit`` /
``lendingLimit`` becomes ``unlimited``, a present one its number. What the policy language cannot
say (CPU and memory quotas, fractional GPU quantities, flavors that match no GPU pool) is listed,
never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

KUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "AdmissionCheck",
               "MultiKueueConfig", "MultiKueueCluster")
_INT = re.compile(r"^\d+$")
_GPU_PREFIXES = ("nvidia.com/", "gpupolicy.dev/", "amd.com/")


def is_gpu_resource(name: str) -> bool:
    return name.startswith(_GPU_PREFIXES)


@dataclass(frozen=True)
class Quota:
    flavor: str
    resource: str
    nominal: int
    borrow: int | None  # None: no limit
    lend: int | None


@dataclass
class Queue:
    name: str
    cohort: str | None
    namespaces: list[str]
    weight: float | None
    quotas: list[Quota] = field(default_factory=list)
    admission_checks: list[str] = field(default_factory=list)
    selector_note: str | None = None


@dataclass(frozen=True)
class CohortInfo:
    name: str
    parent: str | None
    weight: float | None
    has_quota: bool


@dataclass
class KueueState:
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> nodeLabels
    cohorts: dict[str, CohortInfo] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    local_queues: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace, name, cluster queue)
    priorities: list[dict[str, Any]] = field(default_factory=list)
    unexpressed: list[str] = field(default_factory=list)  # what the policy cannot say
    workers: list[str] = field(default_factory=list)  # MultiKueueConfig clusters: this is a manager
    worker_secrets: dict[str, str] = field(default_factory=dict)  # MultiKueueCluster -> kubeconfig Secret

    def queue_of_namespace(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for q in self.queues.values():
            for ns in q.namespaces:
                out.setdefault(ns, q.name)
        return out


def quantity_int(value: Any) -> int | None:
    text = str(value)
    return int(text) if _INT.match(text) else None


def _weight(spec: dict[str, Any]) -> float | None:
    fs = spec.get("fairSharing") or {}
    if "weight" not in fs:
        return None
    try:
        return float(str(fs["weight"]))
    except ValueError:
        return None


def _selector_namespaces(name: str, selector: Any) -> tuple[list[str], str | None]:
    if selector is None:
        return [], f"ClusterQueue {name}: no namespaceSelector (admits no namespace); namespaces from its LocalQueues"
    if selector == {}:
        return [], f"ClusterQueue {name}: namespaceSelector {{}} admits every namespace; namespaces from its LocalQueues"
    out: list[str] = []
    other = False
    for expr in selector.get("matchExpressions") or []:
        if expr.get("key") == "kubernetes.io/metadata.name" and expr.get("operator") == "In":
            out += [str(v) for v in expr.get("values") or []]
        else:
            other = True
    ml = selector.get("matchLabels") or {}
    if "kubernetes.io/metadata.name" in ml:
        out.append(str(ml["kubernetes.io/metadata.name"]))
    if other or any(k != "kubernetes.io/metadata.name" for k in ml):
        return out, (f"ClusterQueue {name}: namespaceSelector uses labels; namespaces taken from its LocalQueues "
                     "(gpupolicy selects namespaces by name)")
    return out, None


def _queue(obj: dict[str, Any], state: KueueState) -> Queue:
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    namespaces, note = _selector_namespaces(name, spec.get("namespaceSelector"))
    cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta1 spelling
    q = Queue(name, str(cohort) if cohort else None, namespaces, _weight(spec), selector_note=note)
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    q.admission_checks = [str(c.get("name")) for c in checks if isinstance(c, dict)] + \
        [str(c) for c in spec.get("admissionChecks") or []]
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                rname = str(r.get("name"))
                where = f"ClusterQueue {name} flavor {flavor.get('name')} resource {rname}"
                if not is_gpu_resource(rname):
                    state.unexpressed.append(f"{where}: nominalQuota {r.get('nominalQuota')} (gpupolicy budgets GPUs "
                                             "only; add CPU/memory quotas outside gpupolicy if you need them)")
                    continue
                nominal = quantity_int(r.get("nominalQuota", 0))
                borrow = None if r.get("borrowingLimit") is None else quantity_int(r["borrowingLimit"])
                lend = None if r.get("lendingLimit") is None else quantity_int(r["lendingLimit"])
                if nominal is None or (r.get("borrowingLimit") is not None and borrow is None) or \
                        (r.get("lendingLimit") is not None and lend is None):
                    state.unexpressed.append(f"{where}: quantities {r.get('nominalQuota')}/{r.get('borrowingLimit')}/"
                                             f"{r.get('lendingLimit')} are not whole GPUs; not imported")
                    continue
                q.quotas.append(Quota(str(flavor.get("name")), rname, nominal, borrow, lend))
    return q


def read_kueue(objects: list[dict[str, Any]]) -> KueueState:
    state = KueueState()
    for obj in objects:
        kind, name = obj.get("kind"), obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        if kind == "ResourceFlavor":
            state.flavors[name] = {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()}
            if spec.get("nodeTaints"):
                state.unexpressed.append(f"ResourceFlavor {name}: nodeTaints {spec['nodeTaints']} (gpupolicy flavors "
                                         "tolerate nvidia.com/gpu only; serving pools are tainted by gpupolicy)")
        elif kind == "Cohort":
            parent = spec.get("parentName") or spec.get("parent")
            state.cohorts[name] = CohortInfo(name, str(parent) if parent else None, _weight(spec),
                                             bool(spec.get("resourceGroups")))
        elif kind == "ClusterQueue":
            state.queues[name] = _queue(obj, state)
        elif kind == "LocalQueue":
            cq = spec.get("clusterQueue")
            if cq:
                state.local_queues.append((str(obj["metadata"].get("namespace") or ""), name, str(cq)))
        elif kind == "MultiKueueConfig":
            state.workers += [str(c) for c in spec.get("clusters") or [] if str(c) not in state.workers]
        elif kind == "MultiKueueCluster":
            source = spec.get("clusterSource") or spec
            location = (source.get("kubeConfig") or {}).get("location")
            if location:
                state.worker_secrets[name] = str(location)
        elif kind == "WorkloadPriorityClass":
            tier: dict[str, Any] = {"name": name, "value": int(obj.get("value", 0))}
            if obj.get("description"):
                tier["description"] = str(obj["description"])
            state.priorities.append(tier)
    for ns, lq, cq in state.local_queues:
        q = state.queues.get(cq)
        if q is None:
            state.unexpressed.append(f"LocalQueue {ns}/{lq} points at ClusterQueue {cq}, which does not exist")
        elif ns and ns not in q.namespaces:
            q.namespaces.append(ns)
    for q in state.queues.values():
        if q.selector_note:
            state.unexpressed.append(q.selector_note)
        q.namespaces = sorted(set(q.namespaces))
    state.priorities.sort(key=lambda t: (-t["value"], t["name"]))
    return state
