"""The rendered Kueue objects of one cluster, as the simulator needs them.

Input is a mapping of ``out/``-relative paths to YAML bytes: ``Result.out_files`` of an in-memory
compile, or the files of an ``out/`` directory (``read_out_dir``). Fields follow
kueue.x-k8s.io/v1beta2 (kubernetes-sigs/kueue v0.19.2, apis/kueue/v1beta2/*_types.go); the manager
Configuration (fair sharing on or off, its preemption strategies) is read from the Kueue chart's
ArgoCD Application (``helm.valuesObject.managerConfig.controllerManagerConfigYaml``).

A job without a priority: Kueue v0.19.2 would give it 0 (no ``kueue.x-k8s.io/priority-class``
label, no pod PriorityClass: ``pkg/util/priority/priority.go``; defaulting a WorkloadPriorityClass
needs the alpha gate ``WorkloadPriorityClassDefaulting``, off, and a LocalQueue has no default
priority: ``apis/kueue/v1beta2/localqueue_types.go``). But gpupolicy's admission rejects a GPU job
without a tier and names the team's default, the Namespace label ``gpupolicy.dev/priority``
(``compiler.lower.admission_priority``), so such a job runs at that tier once resubmitted: the
simulator reads the label from the rendered Namespaces and gives untiered trace rows that tier.

Quantities are held as integers in thousandths of a unit (``1`` -> 1000, ``500m`` -> 500), so CPU
and GPU counts compare exactly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from math import ceil
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from compiler.cel.quantity import QuantityError, parse_quantity
from compiler.policy.labels import LABEL_DEFAULT_PRIORITY, PRIORITY_PREFIX

# libyaml's safe loader where PyYAML has it: the same objects as ``yaml.safe_load_all``, ~10x
# faster (the Kueue objects of one cluster of 1,000 teams, ~1,800 files, took ~3.5 s to read with
# the pure-Python one, more than replaying 5,000 jobs; bench/README.md)
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

FR = tuple[str, str]  # (flavor, resource)
SCALE = 1000


class ObjectsError(ValueError):
    """Rendered objects the simulator cannot read (a located message)."""


def milli(value: object) -> int:
    """A Kubernetes quantity (int, float or string) in thousandths, rounded up."""
    try:
        q = parse_quantity(str(value)).value
    except QuantityError as exc:
        raise ObjectsError(f"quantity {value!r}: {exc}") from exc
    return int(ceil(q * SCALE))


def shown(v: int) -> str:
    """A quantity in thousandths as a person reads it (``8000`` -> ``8``, ``500`` -> ``0.5``)."""
    return f"{v // SCALE}" if v % SCALE == 0 else f"{v / SCALE:g}"


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None  # None = unlimited
    lending_limit: int | None = None  # None = everything lendable


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass
class ClusterQueueSpec:
    name: str
    cohort: str | None = None
    groups: tuple[ResourceGroup, ...] = ()
    quotas: dict[FR, Quota] = field(default_factory=dict)
    queueing: str = "BestEffortFIFO"
    within_cq: str = "Never"
    reclaim: str = "Never"
    borrow_within: str = "Never"
    borrow_threshold: int | None = None
    weight: float = 1.0
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None
    namespaces: tuple[str, ...] = ()


@dataclass
class CohortSpec:
    name: str
    parent: str | None = None
    quotas: dict[FR, Quota] = field(default_factory=dict)
    weight: float = 1.0


@dataclass
class KueueSetup:
    cluster: str
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> nodeLabels
    cohorts: dict[str, CohortSpec] = field(default_factory=dict)
    queues: dict[str, ClusterQueueSpec] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> CQ
    priorities: dict[str, int] = field(default_factory=dict)
    fair_sharing: bool = False
    strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    excluded_prefixes: tuple[str, ...] = ()
    default_tiers: dict[str, str] = field(default_factory=dict)  # namespace -> its team's default tier
    # namespace -> the tiers its jobs may name (``priority.gpupolicy.dev/<tier>`` labels, which the
    # gpupolicy-priority admission policy reads: compiler.lower.admission_priority)
    allowed_tiers: dict[str, frozenset[str]] = field(default_factory=dict)

    def default_tier(self, cq: str, namespace: str = "") -> str:
        """The tier a job without one would carry: its namespace's ``gpupolicy.dev/priority``, else
        that of the first namespace with a LocalQueue to ``cq`` ("" when none is rendered)."""
        if namespace in self.default_tiers:
            return self.default_tiers[namespace]
        for (ns, _), q in sorted(self.local_queues.items()):
            if q == cq and ns in self.default_tiers:
                return self.default_tiers[ns]
        return ""

    def job_namespace(self, cq: str, namespace: str = "") -> str:
        """The namespace a job of ``cq`` runs in: its own, else the first with a LocalQueue to ``cq``."""
        if namespace:
            return namespace
        return next((ns for (ns, _), q in sorted(self.local_queues.items()) if q == cq), "")

    def resource_of_flavor(self, cq: str, flavor: str) -> list[str]:
        spec = self.queues[cq]
        return [r for g in spec.groups if flavor in g.flavors for r in g.covered]


def _quota_of(res: Mapping[str, Any]) -> Quota:
    bl, ll = res.get("borrowingLimit"), res.get("lendingLimit")
    return Quota(milli(res.get("nominalQuota", 0)), None if bl is None else milli(bl),
                 None if ll is None else milli(ll))


def _groups(spec: Mapping[str, Any]) -> tuple[tuple[ResourceGroup, ...], dict[FR, Quota]]:
    groups: list[ResourceGroup] = []
    quotas: dict[FR, Quota] = {}
    for g in spec.get("resourceGroups") or []:
        flavors = []
        for f in g.get("flavors") or []:
            flavors.append(str(f["name"]))
            for r in f.get("resources") or []:
                quotas[(str(f["name"]), str(r["name"]))] = _quota_of(r)
        groups.append(ResourceGroup(tuple(str(r) for r in g.get("coveredResources") or []), tuple(flavors)))
    return tuple(groups), quotas


def _weight(spec: Mapping[str, Any]) -> float:
    w = (spec.get("fairSharing") or {}).get("weight")
    return 1.0 if w is None else milli(w) / SCALE


def _namespaces(spec: Mapping[str, Any]) -> tuple[str, ...]:
    sel = spec.get("namespaceSelector") or {}
    out: list[str] = []
    for expr in sel.get("matchExpressions") or []:
        if expr.get("key") == "kubernetes.io/metadata.name" and expr.get("operator") == "In":
            out.extend(str(v) for v in expr.get("values") or [])
    return tuple(out)


def cluster_queue(obj: Mapping[str, Any]) -> ClusterQueueSpec:
    spec = obj.get("spec") or {}
    groups, quotas = _groups(spec)
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    fung = spec.get("flavorFungibility") or {}
    return ClusterQueueSpec(
        name=str(obj["metadata"]["name"]), cohort=spec.get("cohortName"), groups=groups, quotas=quotas,
        queueing=spec.get("queueingStrategy", "BestEffortFIFO"),
        within_cq=pre.get("withinClusterQueue", "Never"), reclaim=pre.get("reclaimWithinCohort", "Never"),
        borrow_within=bwc.get("policy", "Never"), borrow_threshold=bwc.get("maxPriorityThreshold"),
        weight=_weight(spec), when_can_borrow=fung.get("whenCanBorrow", "MayStopSearch"),
        when_can_preempt=fung.get("whenCanPreempt", "TryNextFlavor"), preference=fung.get("preference"),
        namespaces=_namespaces(spec))


def cohort(obj: Mapping[str, Any]) -> CohortSpec:
    spec = obj.get("spec") or {}
    _, quotas = _groups(spec)
    return CohortSpec(str(obj["metadata"]["name"]), spec.get("parentName"), quotas, _weight(spec))


def _manager_config(setup: KueueSetup, app: Mapping[str, Any]) -> None:
    values = (((app.get("spec") or {}).get("source") or {}).get("helm") or {}).get("valuesObject") or {}
    text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
    if not text:
        return
    cfg = yaml.safe_load(text) or {}
    fs = cfg.get("fairSharing")
    setup.fair_sharing = fs is not None
    if fs and fs.get("preemptionStrategies"):
        setup.strategies = tuple(fs["preemptionStrategies"])
    setup.excluded_prefixes = tuple((cfg.get("resources") or {}).get("excludeResourcePrefixes") or ())


def add_object(setup: KueueSetup, obj: Mapping[str, Any]) -> None:
    """Add one Kueue object (a dict as rendered) to ``setup``; other kinds are ignored."""
    kind, meta = obj.get("kind"), obj.get("metadata") or {}
    if kind == "ResourceFlavor":
        setup.flavors[str(meta["name"])] = dict((obj.get("spec") or {}).get("nodeLabels") or {})
    elif kind == "Cohort":
        c = cohort(obj)
        setup.cohorts[c.name] = c
    elif kind == "ClusterQueue":
        q = cluster_queue(obj)
        setup.queues[q.name] = q
    elif kind == "LocalQueue":
        setup.local_queues[(str(meta.get("namespace", "")), str(meta["name"]))] = str(obj["spec"]["clusterQueue"])
    elif kind == "WorkloadPriorityClass":
        setup.priorities[str(meta["name"])] = int(obj["value"])
    elif kind == "Namespace":
        labels = meta.get("labels") or {}
        if labels.get(LABEL_DEFAULT_PRIORITY):
            setup.default_tiers[str(meta["name"])] = str(labels[LABEL_DEFAULT_PRIORITY])
        tiers = frozenset(str(k)[len(PRIORITY_PREFIX):] for k, v in labels.items()
                          if str(k).startswith(PRIORITY_PREFIX) and str(v) == "true")
        if tiers:
            setup.allowed_tiers[str(meta["name"])] = tiers
    elif kind == "Application" and str(meta.get("name", "")).endswith("-kueue-chart"):
        _manager_config(setup, obj)


def clusters_in(files: Mapping[str, bytes]) -> list[str]:
    return sorted({p.split("/")[0] for p in files if p.count("/") >= 2 and p.split("/")[1] == "kueue"})


def setup_paths(files: Iterable[str], cluster: str) -> list[str]:
    """The out/-relative paths ``load_setup`` reads for ``cluster``, sorted: all a replay knows of
    the rendered objects (``compiler.tools.simulate.kept`` keys a replay by their digests)."""
    out = []
    for path in sorted(files):
        parts = path.split("/")
        ours = parts[:2] in ([cluster, "kueue"], [cluster, "namespaces"]) or (
            parts[:2] == ["argocd", cluster] and "kueue-chart" in path)
        if ours and path.endswith(".yaml"):
            out.append(path)
    return out


def load_setup(files: Mapping[str, bytes], cluster: str) -> KueueSetup:
    """The Kueue objects of ``cluster`` from out/-relative files (``<cluster>/kueue/*.yaml``, the
    ``argocd/<cluster>/`` Kueue chart Application, and the team default tiers of
    ``<cluster>/namespaces/``)."""
    setup = KueueSetup(cluster)
    for path in setup_paths(files, cluster):
        try:
            for obj in yaml.load_all(files[path], Loader=_LOADER):
                if isinstance(obj, dict):
                    add_object(setup, obj)
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:  # OSError: an out/ file gone
            raise ObjectsError(f"out/{path}: cannot read Kueue object: {exc}") from exc
    if not setup.queues:
        raise ObjectsError(f"no ClusterQueue rendered for cluster {cluster!r} under out/{cluster}/kueue/")
    for c in list(setup.cohorts.values()):  # a parent named but not rendered is an implicit Cohort
        if c.parent and c.parent not in setup.cohorts:
            setup.cohorts[c.parent] = CohortSpec(c.parent)
    for q in setup.queues.values():
        if q.cohort and q.cohort not in setup.cohorts:
            setup.cohorts[q.cohort] = CohortSpec(q.cohort)
    return setup


def read_out_dir(out_dir: Path) -> Mapping[str, bytes]:
    """The YAML files of an out/ directory, keyed like ``Result.out_files``, each read when asked
    for: a replay reads one cluster's Kueue objects (~1,800 of 82,000 files at 1,000 teams)."""
    return OutFiles(out_dir, sorted(_yaml_paths(out_dir)))


def _yaml_paths(out_dir: Path) -> Iterator[str]:
    """The paths ``out_dir.rglob("*.yaml")`` gives, relative (directories so named too; linked
    directories not entered), from ``os.walk``: pathlib took ~1.4 s for 82,000 files."""
    for dirpath, dirnames, filenames in os.walk(out_dir):
        rel = os.path.relpath(dirpath, out_dir)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        yield from (prefix + name for name in (*dirnames, *filenames) if name.endswith(".yaml"))


class OutFiles(Mapping[str, bytes]):
    """``read_out_dir``'s files: their paths listed, their bytes read on access."""

    def __init__(self, out_dir: Path, paths: list[str]) -> None:
        self.out_dir = out_dir
        self.paths = dict.fromkeys(paths)

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self.paths:
            raise KeyError(rel)
        return (self.out_dir / rel).read_bytes()

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)
