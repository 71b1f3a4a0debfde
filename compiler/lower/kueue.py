"""Kueue v1beta2 objects: ResourceFlavors, Cohorts, ClusterQueues, LocalQueues and
WorkloadPriorityClasses. What they hold is decided in ``compiler.policy.cohorts`` (cohort forest,
spare capacity) and ``compiler.policy.queues`` (quota groups); the manager Configuration is
``compiler.policy.kueue_manager``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compiler.lower.common import obj, quantity
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.classes import GpuClass
from compiler.policy.cohorts import spare_capacity, spare_cohort, used_departments
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import LABEL_CLASS, LABEL_POOL, LABEL_PURPOSE, LABEL_TEAM
from compiler.policy.multikueue_topology import admission_check_for
from compiler.policy.node_contract import pool_classes
from compiler.policy.queues import resource_groups, training_namespaces
from compiler.policy.versions import KUEUE_API

# GPU nodes are commonly tainted nvidia.com/gpu:NoSchedule (GKE does it automatically; the
# ExtendedResourceToleration plugin only helps device-plugin pods, not DRA claims).
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def flavor_node_labels(policy: Policy, cluster: str, cls: GpuClass) -> dict[str, str]:
    """Select the class's training pools by compiler-owned labels (never gpu.product): its pool,
    and its class whenever the nodes carry one (a pool of one class: the node contract), so a
    job's ``gpupolicy.dev/class`` selector decides its flavor. Kueue's flavor assignment compares
    a job's node selector with a flavor's ``nodeLabels`` only on the keys the flavor has
    (``flavorSelector``, pkg/scheduler/flavorassigner/flavorassigner.go, kubernetes-sigs/kueue
    v0.19.2): with the pool alone, a job selecting class l40s was assigned the flavor of another
    full-card class on the same ``nvidia.com/gpu`` (listed first), then pinned to that class's
    pool, where it can never schedule."""
    pools = cls.training_pools
    if len(pools) != 1:
        return {LABEL_CLASS: cls.id}  # several pools: each carries this one class (FLEET010)
    if pool_classes(policy, cluster, pools[0]) == [cls.id]:
        return {LABEL_CLASS: cls.id, LABEL_POOL: pools[0]}
    return {LABEL_POOL: pools[0]}  # a pool of several classes (MIG): each has a resource of its own


def lower_flavors(policy: Policy, cluster: str) -> list[Manifest]:
    out = []
    for cls in policy.classes.get(cluster, {}).values():
        if not cls.training_pools:
            continue  # serving-only classes never get a flavor: Kueue must not reach them
        rf = obj(KUEUE_API, "ResourceFlavor", cls.id, labels={LABEL_CLASS: cls.id})
        rf["spec"] = {"nodeLabels": flavor_node_labels(policy, cluster, cls), "tolerations": [dict(GPU_TOLERATION)]}
        out.append(Manifest(cluster, "kueue", rf, (policy.fleet_src.path,)))
    return out


def lower_cohorts(policy: Policy, cluster: str) -> list[Manifest]:
    """One Cohort per department with a queue on the cluster (and its ancestors).

    GPUs no team is guaranteed are the root Cohort's nominal quota: Kueue only lends quota
    someone holds, so without this they could never be admitted to (a cohort's ``nominalQuota``
    is a shared pool on top of its members', borrowable by every queue of the tree within its
    borrowing limit, and reclaimable by nobody)."""
    used, holder = cohort_plan(policy, cluster)
    return [cohort(policy, cluster, name, spare_groups(policy, cluster) if name == holder else None) for name in used]


def cohort_plan(policy: Policy, cluster: str) -> tuple[list[str], str | None]:
    """The departments whose Cohorts the cluster gets (``used_departments``), and the one that
    holds its spare capacity, if any (``spare_cohort``): what the Cohorts read of the teams."""
    return used_departments(policy, cluster), spare_cohort(policy, cluster)


def cohort(policy: Policy, cluster: str, name: str, groups: list[dict[str, Any]] | None = None) -> Manifest:
    """A department's Cohort on a cluster. Reads the fleet alone (the department, the fleet file's
    path): ``groups``, the spare quota of the holder, is given (``compiler.pipeline.cohorts``
    keeps the others a cluster at a time)."""
    d = policy.departments[name]
    co = obj(KUEUE_API, "Cohort", name)
    spec: dict[str, Any] = {}
    if d.parent is not None:
        spec["parentName"] = d.parent
    spec["fairSharing"] = {"weight": quantity(d.weight)}
    if groups:
        spec["resourceGroups"] = groups
    co["spec"] = spec
    return Manifest(cluster, "kueue", co, (policy.fleet_src.path,))


def spare_groups(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    """Resource groups as the ClusterQueues' (one per resource name, flavors = classes)."""
    classes = policy.classes.get(cluster, {})
    by_resource: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cid, free in sorted(spare_capacity(policy, cluster).items()):
        resource = classes[cid].resource
        by_resource[resource].append({"name": cid, "resources": [{"name": resource, "nominalQuota": free}]})
    return [{"coveredResources": [r], "flavors": flavors} for r, flavors in sorted(by_resource.items())]


def lower_priorities(policy: Policy, cluster: str) -> list[Manifest]:
    out = []
    for tier in sorted(policy.fleet.spec.priorities, key=lambda p: p.name):
        wpc = obj(KUEUE_API, "WorkloadPriorityClass", tier.name)
        wpc["value"] = tier.value
        if tier.description:
            wpc["description"] = tier.description
        out.append(Manifest(cluster, "kueue", wpc, (policy.fleet_src.path,)))
    return out


def lower_team_queues(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    entries = [e for e in policy.allocation.for_team(team.name) if e.cluster == cluster]
    namespaces = training_namespaces(team, cluster)
    groups = resource_groups(policy, cluster, entries)
    if not groups or not namespaces:
        return []
    sources = (policy.fleet_src.path, team.path)
    spec = team.model.spec
    cq = obj(KUEUE_API, "ClusterQueue", team.name, labels={LABEL_TEAM: team.name})
    weight = spec.fair_share_weight if spec.fair_share_weight is not None else 1
    cq["spec"] = {
        "cohortName": spec.department,
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}
            ]
        },
        "queueingStrategy": "BestEffortFIFO",
        # Reclaim lent quota from any borrower; inside the queue, higher priority preempts lower.
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
        "fairSharing": {"weight": quantity(weight)},
        "resourceGroups": groups,
    }
    # MultiKueue manager: admitted workloads are dispatched to a worker (compiler.policy.multikueue_topology).
    check = admission_check_for(policy, cluster)
    if check is not None:
        cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    out = [Manifest(cluster, "kueue", cq, sources)]
    for ns in namespaces:
        lq = obj(KUEUE_API, "LocalQueue", team.name, namespace=ns,
                 labels={LABEL_TEAM: team.name, LABEL_PURPOSE: "training"})
        lq["spec"] = {"clusterQueue": team.name}
        out.append(Manifest(cluster, "kueue", lq, sources))
    return out


TARGETS = (
    Target("kueue", "kueue", "cluster", passes=(lower_flavors, lower_cohorts, lower_priorities), kinds=(
        Kind(KUEUE_API, "ResourceFlavor", "cluster"),
        Kind(KUEUE_API, "Cohort", "cluster"),
        Kind(KUEUE_API, "WorkloadPriorityClass", "cluster"),
        # Not rendered; allowed since the first GitOps release, so a Topology once applied by hand or
        # a future pass stays prunable. Drop it only together with that promise.
        Kind(KUEUE_API, "Topology", "cluster"),
    )),
    Target("kueue-queues", "kueue", "team", passes=(lower_team_queues,), kinds=(
        Kind(KUEUE_API, "ClusterQueue", "cluster"),
        Kind(KUEUE_API, "LocalQueue"),
    )),
)
