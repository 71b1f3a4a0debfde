"""One cluster's exports read together: its pools, their GPU classes, and the existing quotas mapped
onto those classes (ResourceFlavor -> the pools its ``nodeLabels`` select -> the class whose
resource the quota covers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.catalog import Catalog
from compiler.tools.cluster_import.kueue import KueueState, Queue, read_kueue
from compiler.tools.cluster_import.nodes import (
    CAPI_ANNOTATION,
    KARPENTER_POOL,
    REGION,
    NodeFacts,
    group_nodes,
    node_facts,
)
from compiler.tools.cluster_import.pods import GpuPod, gpu_pods
from compiler.tools.cluster_import.pools import GpuClassInfo, PoolDraft, dns_label, draft_pool, pool_classes

DEFAULT_MINOR = 34


@dataclass(frozen=True)
class ClusterExport:
    """What ``kubectl`` exported from one cluster (parsed JSON objects)."""

    name: str
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]] = field(default_factory=list)
    kueue: list[dict[str, Any]] = field(default_factory=list)
    cluster_policy: dict[str, Any] | None = None


@dataclass(frozen=True)
class BudgetDraft:
    team: str
    cluster: str
    cls: str
    guaranteed: int
    borrow: int | None  # None = unlimited
    lend: int | None
    cut: str
    note: str | None = None


@dataclass
class ClusterDraft:
    name: str
    pools: list[PoolDraft]
    unknown: list[PoolDraft]  # GPU products the catalog does not know: not written, reported
    dra: bool
    kube_minor: int
    provisioner: str
    region: str
    residency: str
    kueue: KueueState
    pods: list[GpuPod]
    facts: list[NodeFacts]
    budgets: list[BudgetDraft] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # field -> why guessed
    multikueue: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    # what quotas map onto: the cluster's classes, a MultiKueue manager's also its workers' (``link``)
    quota_classes: dict[str, tuple[GpuClassInfo, list[PoolDraft]]] = field(default_factory=dict)
    worker_capacity: dict[str, int] = field(default_factory=dict)  # a manager: its workers' training GPUs per class

    def classes(self) -> dict[str, tuple[GpuClassInfo, list[PoolDraft]]]:
        out: dict[str, tuple[GpuClassInfo, list[PoolDraft]]] = {}
        for p in self.pools:
            for c in p.classes:
                out.setdefault(c.id, (c, []))[1].append(p)
        return out

    def capacity(self, cls: str) -> int:
        info = self.classes().get(cls)
        if info is None:
            return 0
        return sum(c.per_node * p.nodes for p in info[1] if not p.serving for c in p.classes if c.id == cls)

    def queue_capacity(self, cls: str) -> int:
        """The GPUs of a class the cluster's queues admit to: its training pools', a MultiKueue
        manager's its workers' (``compiler.policy.multikueue_topology.with_worker_classes``)."""
        if self.multikueue and self.multikueue.get("role") == "manager":
            return self.worker_capacity.get(cls, 0)
        return self.capacity(cls)

    def node_pool(self) -> dict[str, PoolDraft]:
        return {n: p for p in self.pools + self.unknown for n in p.node_names}


def _dra(export: ClusterExport, facts: list[NodeFacts], state: KueueState, minor: int,
         notes: dict[str, str]) -> bool:
    cp = (export.cluster_policy or {}).get("spec") or {}
    plugin = (cp.get("devicePlugin") or {}).get("enabled")
    if plugin is False:
        return True
    if any(q.resource.startswith("gpupolicy.dev/") for cq in state.queues.values() for q in cq.quotas):
        return True
    gpu = [f for f in facts if f.is_gpu]
    if gpu and minor >= 34 and plugin is None and not any(f.capacity for f in gpu):
        notes["dra"] = "GPU nodes advertise no nvidia.com/* resources (DRA driver?); check the ClusterPolicy"
        return True
    return False


def flavor_class(cd: ClusterDraft, flavor: str, resource: str,
                  classes: dict[str, tuple[GpuClassInfo, list[PoolDraft]]]) -> str | None:
    if resource.startswith("gpupolicy.dev/"):
        cid = resource.removeprefix("gpupolicy.dev/")
        return cid if cid in classes else None
    labels = cd.kueue.flavors.get(flavor)
    if labels is None or not cd.pools:
        return flavor if flavor in classes and classes[flavor][0].resource == resource else None
    facts = {f.name: f for f in cd.facts}
    matched = [p for p in cd.pools
               if p.node_names and all(all(facts[n].labels.get(k) == v for k, v in labels.items())
                                       for n in p.node_names)]
    ids = sorted({c.id for p in matched for c in p.classes if c.resource == resource})
    if len(ids) == 1:
        return ids[0]
    return flavor if flavor in ids else None


def _budgets(cd: ClusterDraft, q: Queue, team: str,
             classes: dict[str, tuple[GpuClassInfo, list[PoolDraft]]]) -> None:
    seen: dict[str, BudgetDraft] = {}
    for quota in q.quotas:
        cid = flavor_class(cd, quota.flavor, quota.resource, classes)
        if cid is None:
            cd.kueue.unexpressed.append(f"ClusterQueue {q.name}: quota {quota.nominal} of {quota.resource} on flavor "
                                        f"{quota.flavor} matches no GPU class of the imported pools; not imported")
            continue
        if cid in seen:
            cd.kueue.unexpressed.append(f"ClusterQueue {q.name}: flavor {quota.flavor} repeats class {cid}; "
                                        "only the first quota imported")
            continue
        note = None if cid == quota.flavor else f"ResourceFlavor {quota.flavor} becomes class {cid}"
        borrow, lend = quota.borrow, quota.lend
        if q.cohort is None:  # no cohort: nothing borrowed or lent today; keep it so under a department
            borrow, lend = 0, 0
            note = "the ClusterQueue had no cohort: borrow and lend 0 keep it from sharing"
        seen[cid] = BudgetDraft(team, cd.name, cid, quota.nominal, borrow, lend, classes[cid][0].cut, note)
    cd.budgets.extend(seen.values())


def analyse(export: ClusterExport, catalog: Catalog) -> ClusterDraft:
    facts = [node_facts(n) for n in export.nodes]
    state = read_kueue(export.kueue)
    notes: dict[str, str] = {}
    minors = [f.kubelet_minor for f in facts if f.kubelet_minor is not None]
    minor = min(minors) if minors else DEFAULT_MINOR
    if not minors:
        notes["kubernetesVersion"] = f"no kubeletVersion in the node export; 1.{DEFAULT_MINOR} guessed"
    dra = _dra(export, facts, state, minor, notes)
    pools: list[PoolDraft] = []
    unknown: list[PoolDraft] = []
    taken: set[str] = set()
    for group in group_nodes(facts):
        pool = draft_pool(group, catalog, taken)
        taken.add(pool.name)
        if pool.model is None:
            unknown.append(pool)
            continue
        pool.classes = pool_classes(pool, dra, catalog)
        pools.append(pool)
    provisioner = "none"
    if any(KARPENTER_POOL in f.labels for f in facts):
        provisioner = "karpenter"
    elif any(CAPI_ANNOTATION in f.annotations for f in facts):
        provisioner = "cluster-api"
    regions = {f.labels[REGION] for f in facts if REGION in f.labels}
    region = dns_label(regions.pop(), "unknown") if len(regions) == 1 else "unknown"
    if region == "unknown":
        notes["region"] = f"no single {REGION} label on the nodes"
    residency = region.split("-")[0] if region != "unknown" else "unknown"
    notes["residency"] = "guessed from the region: set the data residency zone this cluster is in"
    cd = ClusterDraft(export.name, pools, unknown, dra, minor, provisioner, region, residency, state,
                      gpu_pods(export.pods), facts, notes=notes)
    if dra and minor < 34:
        cd.problems.append(f"DRA in use but the kubelets are 1.{minor}; gpupolicy needs 1.34 for resource.k8s.io/v1")
    return cd


def link(drafts: list[ClusterDraft]) -> None:
    """Across clusters: MultiKueue roles (a manager's MultiKueueConfig names its workers) and the
    budgets, a manager's quotas mapped onto its workers' GPU classes (it has no GPU nodes itself)."""
    by_name = {cd.name: cd for cd in drafts}
    for cd in drafts:
        if not cd.kueue.workers:
            continue
        cd.multikueue = {"role": "manager", "workers": list(cd.kueue.workers)}
        for w in cd.kueue.workers:
            worker = by_name.get(w)
            if worker is None:
                cd.problems.append(f"MultiKueue worker {w} has no export; import it too so its pools are known")
                continue
            worker.multikueue = {"role": "worker"}
            secret = cd.kueue.worker_secrets.get(w)
            if secret and secret != f"multikueue-{w}":
                worker.multikueue["kubeconfigSecret"] = secret
    for cd in drafts:
        classes = cd.classes()
        for w in (cd.multikueue or {}).get("workers", []):
            if w in by_name:
                for cid, info in by_name[w].classes().items():
                    classes.setdefault(cid, info)
                    cd.worker_capacity[cid] = cd.worker_capacity.get(cid, 0) + by_name[w].capacity(cid)
        cd.quota_classes = classes
        for q in cd.kueue.queues.values():
            _budgets(cd, q, dns_label(q.name, "team"), classes)
