"""Kueue v1beta2 objects: ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses, and the manager Configuration (Helm values, not a manifest)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compiler.policy.allocation import TeamAllocation
from compiler.policy.classes import GpuClass
from compiler.lower.common import LABEL_CLASS, LABEL_POOL, LABEL_PURPOSE, LABEL_TEAM, obj, quantity
from compiler.model.manifest import Manifest
from compiler.policy.multikueue_topology import admission_check_for
from compiler.policy.graph import Policy, Team

KUEUE_API = "kueue.x-k8s.io/v1beta2"
# GPU nodes are commonly tainted nvidia.com/gpu:NoSchedule (GKE does it automatically; the
# ExtendedResourceToleration plugin only helps device-plugin pods, not DRA claims).
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def flavor_node_labels(cls: GpuClass) -> dict[str, str]:
    """Select the class's training pools by compiler-owned labels (never gpu.product)."""
    pools = cls.training_pools
    if len(pools) == 1:
        return {LABEL_POOL: pools[0]}
    return {LABEL_CLASS: cls.id}


def lower_flavors(policy: Policy, cluster: str) -> list[Manifest]:
    out = []
    for cls in policy.classes.get(cluster, {}).values():
        if not cls.training_pools:
            continue  # serving-only classes never get a flavor: Kueue must not reach them
        rf = obj(KUEUE_API, "ResourceFlavor", cls.id, labels={LABEL_CLASS: cls.id})
        rf["spec"] = {"nodeLabels": flavor_node_labels(cls), "tolerations": [dict(GPU_TOLERATION)]}
        out.append(Manifest(cluster, "kueue", rf, (policy.fleet_src.path,)))
    return out


def used_departments(policy: Policy, cluster: str) -> list[str]:
    """Departments with a queue on the cluster, plus their ancestors (parents must exist)."""
    depts = policy.departments
    need: set[str] = set()
    for dept in sorted(policy.team_departments.get(cluster, ())):
        cur: str | None = dept
        while cur is not None and cur in depts and cur not in need:
            need.add(cur)
            cur = depts[cur].parent
    return sorted(need)


def spare_capacity(policy: Policy, cluster: str) -> dict[str, int]:
    """Class id -> GPUs of its training pools that no team is guaranteed, for the classes some
    team queues on (only those classes are flavors of a ClusterQueue, so only they can borrow)."""
    out: dict[str, int] = {}
    for cid, cls in policy.classes.get(cluster, {}).items():
        entries = policy.allocation.for_class(cluster, cid)
        if not cls.training_pools or not entries:
            continue
        free = cls.capacity - sum(e.guaranteed.value or 0 for e in entries)
        if free > 0:
            out[cid] = free
    return out


def root_departments(policy: Policy, cluster: str) -> list[str]:
    """The roots of the cluster's cohort forest (Kueue lends only within one tree)."""
    return [d for d in used_departments(policy, cluster) if policy.departments[d].parent is None]


def spare_cohort(policy: Policy, cluster: str) -> str | None:
    """The Cohort that holds the cluster's spare capacity: the root of its department tree, when
    the cluster's queues sit under exactly one root."""
    roots = root_departments(policy, cluster)
    return roots[0] if len(roots) == 1 else None


def borrowable_spare(policy: Policy, cluster: str) -> dict[str, int]:
    """``spare_capacity`` when a Cohort holds it (queues may borrow it), else nothing."""
    return spare_capacity(policy, cluster) if spare_cohort(policy, cluster) else {}


def spare_cohort_files(policy: Policy) -> list[str]:
    """``out/``-relative paths of the Cohorts that hold unguaranteed GPUs (CODEOWNERS shares them:
    their quota changes with any team's guarantee)."""
    out = []
    for cluster in sorted(policy.clusters):
        holder = spare_cohort(policy, cluster)
        if holder and spare_capacity(policy, cluster):
            out.append(Manifest(cluster, "kueue", obj(KUEUE_API, "Cohort", holder)).relpath)
    return out


def lower_cohorts(policy: Policy, cluster: str) -> list[Manifest]:
    """One Cohort per department with a queue on the cluster (and its ancestors).

    GPUs no team is guaranteed are the root Cohort's nominal quota: Kueue only lends quota
    someone holds, so without this they could never be admitted to (a cohort's ``nominalQuota``
    is a shared pool on top of its members', borrowable by every queue of the tree within its
    borrowing limit, and reclaimable by nobody)."""
    out = []
    depts = policy.departments
    holder = spare_cohort(policy, cluster)
    for name in used_departments(policy, cluster):
        d = depts[name]
        co = obj(KUEUE_API, "Cohort", name)
        spec: dict[str, Any] = {}
        if d.parent is not None:
            spec["parentName"] = d.parent
        spec["fairSharing"] = {"weight": quantity(d.weight)}
        if name == holder and (groups := _spare_groups(policy, cluster)):
            spec["resourceGroups"] = groups
        co["spec"] = spec
        out.append(Manifest(cluster, "kueue", co, (policy.fleet_src.path,)))
    return out


def _spare_groups(policy: Policy, cluster: str) -> list[dict[str, Any]]:
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


def _resource_entry(e: TeamAllocation, resource: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": e.guaranteed.value or 0}
    # unset/unlimited -> field absent (Kueue: null = unlimited); 0 and N are written out.
    if e.borrow.value is not None:
        entry["borrowingLimit"] = e.borrow.value
    if e.lend.value is not None:
        entry["lendingLimit"] = min(e.lend.value, e.guaranteed.value or 0)
    return entry


def resource_groups(policy: Policy, cluster: str, entries: list[TeamAllocation]) -> list[dict[str, Any]]:
    """One group per resource name; its flavors are the team's classes that use it.

    Kueue requires each flavor to list every covered resource in order and forbids a flavor
    or resource in two groups; grouping by resource satisfies both by construction."""
    classes = policy.classes.get(cluster, {})
    by_resource: dict[str, list[tuple[str, TeamAllocation]]] = defaultdict(list)
    for e in entries:
        cls = classes.get(e.gpu_class)
        if cls is not None and cls.training_pools:
            by_resource[cls.resource].append((cls.id, e))
    groups = []
    for resource in sorted(by_resource):
        flavors = [
            {"name": cid, "resources": [_resource_entry(e, resource)]}
            for cid, e in sorted(by_resource[resource], key=lambda x: x[0])
        ]
        groups.append({"coveredResources": [resource], "flavors": flavors})
    return groups


def training_namespaces(team: Team, cluster: str) -> list[str]:
    return sorted({ns.name for ns in team.model.spec.namespaces if cluster in ns.clusters})


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


# Resources Kueue does not account (quota is about GPUs); prefixes, as Kueue matches them.
EXCLUDED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "hugepages-", "pods")
AUDIT_LABELS = ("gpupolicy.dev/team", "gpupolicy.dev/model", "gpupolicy.dev/data-class")


def manager_config(policy: Policy, cluster: str) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2), delivered as Helm values."""
    c = policy.clusters[cluster]
    system = sorted({"kube-system", "kueue-system", *c.system_namespaces})
    cfg: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "manageJobsWithoutQueueName": True,
        # Only gpupolicy's training namespaces; serving and system namespaces are never managed.
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {"key": LABEL_PURPOSE, "operator": "In", "values": ["training"]},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": system},
            ]
        },
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        "integrations": {
            "frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob"],
            "labelKeysToCopy": sorted(set(AUDIT_LABELS) | set(policy.fleet.spec.admission.required_labels)),
        },
        # Queues cover only GPU resources. CPU, memory and storage are excluded from quota, and
        # every other undeclared resource blocks admission: a job asking for a GPU resource its
        # team has no budget for is never admitted (IgnoreUndeclared would admit it unaccounted).
        "resources": {"quotaCheckStrategy": "BlockUndeclared", "excludeResourcePrefixes": list(EXCLUDED_RESOURCES)},
    }
    # DRA clusters: claims on each class's DeviceClasses count as gpupolicy.dev/<class>.
    from compiler.lower.dra import device_class_mappings  # late: compiler.lower.dra imports this module

    if mappings := device_class_mappings(policy, cluster):
        cfg["resources"]["deviceClassMappings"] = mappings
    return cfg
