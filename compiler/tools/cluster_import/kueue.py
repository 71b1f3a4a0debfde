"""Existing Kueue objects (``kubectl get resourceflavors,cohorts,clusterqueues,localqueues,
workloadpriorityclasses -A -o json``): what they say about departments, teams, budgets and tiers.

Quotas are kept exactly: ``nominalQuota`` becomes ``guaranteed``, an absent ``borrowingLimit`` /
``lendingLimit`` becomes ``unlimited``, a present one its number. Every quantity (quotas, limits,
fair-sharing weights, which the API server writes back as ``500m``) is read with the compiler's
quantity parser (``quantities``); one that is no quantity is a malformed export. What the policy
language cannot say (CPU and memory quotas, fractional GPU quantities, flavors that match no GPU
pool, a Cohort's own quota and limits) is listed, never dropped silently; the queue settings and
LocalQueue names gpupolicy replaces are kept here so ``changes`` can list them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from compiler.tools.cluster_import.quantities import MAX_GPUS, MalformedExport, quantity, shown

KUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "AdmissionCheck",
               "MultiKueueConfig", "MultiKueueCluster")
_GPU_PREFIXES = ("nvidia.com/", "gpupolicy.dev/", "amd.com/")
MAX_WEIGHT = 1_000_000  # the policy's bound on fair-share weights (compiler.model.fleet.Department)


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
    settings: dict[str, Any] = field(default_factory=dict)  # the spec fields gpupolicy sets its own way


@dataclass(frozen=True)
class CohortInfo:
    name: str
    parent: str | None
    weight: float | None
    quotas: tuple[Quota, ...] = ()  # GPU quotas and limits of the Cohort itself (whole GPUs)


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
    check_controllers: dict[str, str] = field(default_factory=dict)  # AdmissionCheck -> controllerName
    statuses: int = 0  # ClusterQueues and Cohorts exported with a status
    fair_sharing_status: bool = False  # one of them carries status.fairSharing (fair sharing is on)

    def queue_of_namespace(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for q in self.queues.values():
            for ns in q.namespaces:
                out.setdefault(ns, q.name)
        return out


def _weight(kind: str, name: str, spec: dict[str, Any], state: KueueState) -> float | None:
    fs = spec.get("fairSharing") or {}
    if not isinstance(fs, dict) or fs.get("weight") is None:
        return None
    w = quantity(fs["weight"], "spec.fairSharing.weight")
    if w < 0:
        raise MalformedExport(f"spec.fairSharing.weight is {fs['weight']!r}: a weight cannot be negative")
    if w > MAX_WEIGHT:
        state.unexpressed.append(f"{kind} {name}: fairSharing.weight {fs['weight']} is above the {MAX_WEIGHT:,} a "
                                 "policy weight may be; not imported (the draft keeps weight 1)")
        return None
    return float(w)


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


def _limit(r: dict[str, Any], key: str, at: str) -> Fraction | None:
    if r.get(key) is None:
        return None
    q = quantity(r[key], f"{at}.{key}")
    if q < 0:
        raise MalformedExport(f"{at}.{key} is {r[key]!r}: a quota cannot be negative")
    return q


def _quotas(kind: str, name: str, spec: dict[str, Any], state: KueueState) -> list[Quota]:
    """The GPU quotas of a ClusterQueue's or Cohort's resource groups, in whole GPUs; the rest listed."""
    out = []
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for i, r in enumerate(flavor.get("resources") or []):
                rname = str(r.get("name"))
                at = f"spec.resourceGroups[{g}].flavors[{f}].resources[{i}]"
                nominal = _limit(r, "nominalQuota", at) or Fraction(0)
                borrow, lend = _limit(r, "borrowingLimit", at), _limit(r, "lendingLimit", at)
                where = f"{kind} {name} flavor {flavor.get('name')} resource {rname}"
                if not is_gpu_resource(rname):
                    state.unexpressed.append(f"{where}: nominalQuota {r.get('nominalQuota')} (gpupolicy budgets GPUs "
                                             "only; add CPU/memory quotas outside gpupolicy if you need them)")
                    continue
                values = {"nominalQuota": nominal, "borrowingLimit": borrow, "lendingLimit": lend}
                odd = [f"{k} {r[k]}" + (f" ({shown(v)})" if v.denominator != 1 and str(r[k]) != shown(v) else "")
                       for k, v in values.items() if v is not None and (v.denominator != 1 or v > MAX_GPUS)]
                if odd:
                    why = ("a budget counts whole GPUs" if any(v is not None and v.denominator != 1
                                                               for v in values.values())
                           else f"a budget states at most {MAX_GPUS:,} GPUs")
                    state.unexpressed.append(f"{where}: {', '.join(odd)}: {why}; not imported")
                    continue
                out.append(Quota(str(flavor.get("name")), rname, int(nominal),
                                 None if borrow is None else int(borrow), None if lend is None else int(lend)))
    return out


# What gpupolicy's ClusterQueues set (compiler.lower.kueue.lower_team_queues), read to list what a
# draft changes (``changes``); a test proves these against a rendered ClusterQueue.
SETTINGS = ("queueingStrategy", "preemption", "flavorFungibility", "stopPolicy", "admissionScope")


def _queue(obj: dict[str, Any], state: KueueState) -> Queue:
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    namespaces, note = _selector_namespaces(name, spec.get("namespaceSelector"))
    cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta1 spelling
    q = Queue(name, str(cohort) if cohort else None, namespaces, _weight("ClusterQueue", name, spec, state),
              selector_note=note)
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    q.admission_checks = [str(c.get("name")) for c in checks if isinstance(c, dict)] + \
        [str(c) for c in spec.get("admissionChecks") or []]
    q.settings = {k: spec[k] for k in SETTINGS if spec.get(k) is not None}
    q.quotas = _quotas("ClusterQueue", name, spec, state)
    return q


def _status(obj: dict[str, Any], state: KueueState) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status:
        state.statuses += 1
        if status.get("fairSharing") is not None:  # recorded only when fair sharing is on (the CRD says so)
            state.fair_sharing_status = True


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
            state.cohorts[name] = CohortInfo(name, str(parent) if parent else None,
                                             _weight("Cohort", name, spec, state),
                                             tuple(_quotas("Cohort", name, spec, state)))
            _status(obj, state)
        elif kind == "ClusterQueue":
            state.queues[name] = _queue(obj, state)
            _status(obj, state)
        elif kind == "LocalQueue":
            cq = spec.get("clusterQueue")
            if cq:
                state.local_queues.append((str(obj["metadata"].get("namespace") or ""), name, str(cq)))
        elif kind == "AdmissionCheck":
            state.check_controllers[name] = str(spec.get("controllerName") or "")
        elif kind == "MultiKueueConfig":
            state.workers += [str(c) for c in spec.get("clusters") or [] if str(c) not in state.workers]
        elif kind == "MultiKueueCluster":
            source = spec.get("clusterSource") or spec
            location = (source.get("kubeConfig") or {}).get("location")
            if location:
                state.worker_secrets[name] = str(location)
        elif kind == "WorkloadPriorityClass":
            value = obj.get("value", 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise MalformedExport(f"value is {value!r}, not an integer priority")
            tier: dict[str, Any] = {"name": name, "value": value}
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
