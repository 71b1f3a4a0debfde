"""MultiKueue topology: which cluster dispatches to which, and the rules that keep it sound.

A cluster with ``multikueue: {role: manager, workers: [...]}`` admits workloads against its own
ClusterQueues and dispatches each admitted workload to one of its workers, which admits it again
in the same namespace and LocalQueue (Kueue ``site/.../concepts/multikueue.md``). So:

- the manager's queues admit what the workers can run: each manager GPU class is the union of
  its workers' training capacity (``with_worker_classes``; used by the capacity check);
- the manager's own training pools never run a job of a queue with a MultiKueue check;
- every training namespace with a queue on the manager must exist, with a queue of the same
  name, on every worker (teams list the manager *and* the workers in ``namespaces[].clusters``
  and budget on both);
- a worker's kubeconfig lives in a Secret in the manager's ``kueue-system`` namespace, key
  ``kubeconfig``; the policy only names it (``kubeconfigSecret`` on the worker's entry, default
  ``multikueue-<worker>``), the Secret itself is created out of band, never committed.

Lowering of the manager's objects is ``compiler.lower.multikueue``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Sequence

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, checks, define
from compiler.model.fleet import Cluster
from compiler.model.inventory import Inventory
from compiler.policy.classes import GpuClass
from compiler.policy.graph import Policy, Team

CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = "multikueue"  # AdmissionCheck and MultiKueueConfig name on the manager
MAX_WORKERS = 20  # MultiKueueConfig.spec.clusters maxItems (CRD v1beta2)

WORKERS = define(
    "GITOPS001",
    "A MultiKueue manager lists 1-20 distinct workers, each another declared cluster that is not a "
    "manager itself (MultiKueueConfig holds at most 20 clusters).",
    "- name: hub\n  multikueue: {role: manager, workers: [gpu-a, gpu-b]}",
    "- name: hub\n  multikueue: {role: manager, workers: [hub]}   # itself",
    scope=Scope.FLEET,
)
WORKER_ROLE = define(
    "GITOPS002",
    "A cluster listed as a MultiKueue worker declares `multikueue: {role: worker}`, and a worker is "
    "listed by some manager.",
    "- name: gpu-a\n  multikueue: {role: worker, kubeconfigSecret: gpu-a-kubeconfig}",
    "- name: gpu-a   # listed in hub's workers but declares no multikueue role",
    scope=Scope.FLEET,
)
SAME_RESOURCES = define(
    "GITOPS003",
    "A MultiKueue manager and its workers agree on `dra`: the manager counts a job's GPU requests under "
    "the resource names its workers use.",
    "hub: {dra: false}; gpu-a: {dra: false}",
    "hub: {dra: false}; gpu-a: {dra: true}   # the manager counts nvidia.com/gpu, the worker DRA claims",
    scope=Scope.FLEET,
)
MIRROR = define(
    "GITOPS004",
    "Every training namespace with a queue on a MultiKueue manager exists, with the team's queue, on each "
    "of its workers (MultiKueue creates the workload copy in the same namespace and LocalQueue).",
    "namespaces:\n- {name: ml-train, clusters: [hub, gpu-a]}\nbudgets:\n- {cluster: hub, ...}\n- {cluster: gpu-a, ...}",
    "namespaces:\n- {name: ml-train, clusters: [hub]}   # worker gpu-a lacks ml-train",
    scope=Scope.TEAM,
)
UNRUNNABLE = define(
    "GITOPS005",
    "A GPU class a team budgets on a MultiKueue manager is budgeted for that team on at least one worker, "
    "or its workloads are admitted on the manager and never run.",
    "budgets:\n- {cluster: hub, class: h100-80gb}\n- {cluster: gpu-a, class: h100-80gb}",
    "budgets:\n- {cluster: hub, class: h100-80gb}   # no worker budget for h100-80gb",
    Severity.WARNING,
    scope=Scope.TEAM,
)
ONE_CHECK = define(
    "GITOPS006",
    "A ClusterQueue has at most one MultiKueue admission check and no ProvisioningRequest check beside it "
    "(Kueue marks such a queue inactive).",
    "admissionChecksStrategy:\n  admissionChecks: [{name: multikueue}]",
    "admissionChecksStrategy:\n  admissionChecks: [{name: multikueue}, {name: multikueue-eu}]",
    scope=Scope.OUTPUT,
)
IDLE_POOLS = define(
    "GITOPS007",
    "A MultiKueue manager's own training pools are idle: every workload of its queues is dispatched to a worker.",
    "- name: hub\n  multikueue: {role: manager, workers: [gpu-a]}\n  pools: []",
    "- name: hub\n  multikueue: {role: manager, workers: [gpu-a]}\n  pools: [{name: h100, ...}]   # never used",
    Severity.WARNING,
    scope=Scope.FLEET,
)


RULES: tuple[Rule, ...] = (
    WORKERS, WORKER_ROLE, SAME_RESOURCES, MIRROR, UNRUNNABLE, ONE_CHECK, IDLE_POOLS,
)


def is_manager(cluster: Cluster) -> bool:
    return cluster.multikueue is not None and cluster.multikueue.role == "manager"


def workers_of(cluster: Cluster) -> list[str]:
    """The manager's workers in preference order, duplicates dropped."""
    if not is_manager(cluster):
        return []
    assert cluster.multikueue is not None
    return list(dict.fromkeys(w for w in cluster.multikueue.workers if w != cluster.name))


def kubeconfig_secret(clusters: dict[str, Cluster], worker: str) -> str:
    """Secret in the manager's Kueue namespace holding the worker's kubeconfig (key ``kubeconfig``)."""
    c = clusters.get(worker)
    if c is not None and c.multikueue is not None and c.multikueue.kubeconfig_secret:
        return c.multikueue.kubeconfig_secret
    return f"multikueue-{worker}"


def admission_check_for(policy: Policy, cluster: str) -> str | None:
    """Name of the MultiKueue AdmissionCheck the cluster's ClusterQueues carry, if it is a manager."""
    c = policy.clusters.get(cluster)
    if c is None or not workers_of(c):
        return None
    return ADMISSION_CHECK


def with_worker_classes(
    clusters: Sequence[Cluster], classes: dict[str, dict[str, GpuClass]]
) -> dict[str, dict[str, GpuClass]]:
    """Give each manager the GPU classes of its workers, with their training capacity summed.

    The manager keeps its own serving slices (vLLM pools are outside Kueue); its own training
    slices are dropped because a queue with a MultiKueue check never runs a job locally."""
    out = dict(classes)
    for c in clusters:
        if not is_manager(c):
            continue
        merged: dict[str, GpuClass] = {}
        for cid, cls in classes.get(c.name, {}).items():
            serving = tuple(s for s in cls.slices if s.serving)
            if serving:
                merged[cid] = replace(cls, slices=serving)
        for w in workers_of(c):
            for cid, cls in classes.get(w, {}).items():
                training = tuple(s for s in cls.slices if not s.serving)
                if not training:
                    continue
                prev = merged.get(cid)
                base = prev if prev is not None else replace(cls, cluster=c.name, slices=())
                merged[cid] = replace(base, slices=base.slices + training)
        out[c.name] = dict(sorted(merged.items()))
    return out


@checks(WORKERS, WORKER_ROLE, SAME_RESOURCES, IDLE_POOLS)  # one pass over the managers' worker lists
def check_multikueue(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    spec = policy.fleet.spec
    clusters = policy.clusters
    listed: dict[str, str] = {}  # worker -> first manager listing it
    for ci, c in enumerate(spec.clusters):
        mk = c.multikueue
        if mk is None:
            continue
        base = ("spec", "clusters", ci, "multikueue")
        if mk.role == "worker":
            if mk.workers:
                yield WORKERS.diag(f"cluster {c.name!r} is a MultiKueue worker but lists workers",
                                   src.locate(base + ("workers",)),
                                   hint="only a manager lists workers; drop the list or set role: manager")
            continue
        if not mk.workers:
            yield WORKERS.diag(f"MultiKueue manager {c.name!r} lists no workers", src.locate(base + ("workers",)),
                               hint="list the worker clusters it dispatches to")
        if len(set(mk.workers)) > MAX_WORKERS:
            yield WORKERS.diag(f"MultiKueue manager {c.name!r} lists {len(set(mk.workers))} workers; a "
                               f"MultiKueueConfig holds at most {MAX_WORKERS}", src.locate(base + ("workers",)),
                               hint="split the fleet across several managers")
        if own := [p.name for p in c.pools if not p.serving]:
            yield IDLE_POOLS.diag(f"MultiKueue manager {c.name!r} has training pools ({', '.join(own)}) its "
                                  "queues never use", src.locate(("spec", "clusters", ci, "pools")),
                                  hint="move them to a worker cluster, or keep only serving pools on the manager")
        seen: set[str] = set()
        for wi, w in enumerate(mk.workers):
            loc = src.locate(base + ("workers", wi))
            if w in seen:
                yield WORKERS.diag(f"worker {w!r} is listed twice", loc, hint="list each worker once")
                continue
            seen.add(w)
            if w == c.name:
                yield WORKERS.diag(f"MultiKueue manager {c.name!r} lists itself as a worker", loc,
                                   hint="a manager dispatches to other clusters")
                continue
            wc = clusters.get(w)
            if wc is None:
                continue  # unknown cluster: FLEET002
            listed.setdefault(w, c.name)
            if wc.multikueue is None or wc.multikueue.role != "worker":
                what = "is a MultiKueue manager itself" if is_manager(wc) else "declares no multikueue role"
                yield WORKER_ROLE.diag(f"worker {w!r} of manager {c.name!r} {what}", loc,
                                       hint=f"set multikueue: {{role: worker}} on cluster {w!r}")
            if wc.dra != c.dra:
                yield SAME_RESOURCES.diag(
                    f"manager {c.name!r} has dra: {str(c.dra).lower()} but worker {w!r} has dra: "
                    f"{str(wc.dra).lower()}", loc,
                    hint="a job carries one set of GPU requests; put DRA and device-plugin clusters under "
                    "different managers")
    for ci, c in enumerate(spec.clusters):
        if c.multikueue is not None and c.multikueue.role == "worker" and c.name not in listed:
            yield WORKER_ROLE.diag(f"cluster {c.name!r} is a MultiKueue worker but no manager lists it",
                                   src.locate(("spec", "clusters", ci, "multikueue", "role")),
                                   severity=Severity.WARNING, hint="add it to a manager's workers")


@checks(MIRROR, UNRUNNABLE)  # one team against each manager's workers: kept with the team's unit
def check_mirror(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    t = team.model.spec
    own = {(b.cluster, b.class_) for b in t.budgets}
    for manager in policy.fleet.spec.clusters:
        if not any(c == manager.name for c, _ in own):
            continue  # no queue on the manager, nothing to mirror
        workers = [w for w in workers_of(manager) if w in policy.clusters]
        if not workers:
            continue
        for i, ns in enumerate(t.namespaces):
            if manager.name not in ns.clusters:
                continue
            # located for a diagnostic only: a file's positions may be a store read (pipeline.front)
            at = ("spec", "namespaces", i, "clusters")
            for w in workers:
                if w not in ns.clusters:
                    yield MIRROR.diag(
                        f"namespace {ns.name!r} has a queue on MultiKueue manager {manager.name!r} but does "
                        f"not exist on its worker {w!r}", team.src.locate(at),
                        hint=f"add {w} to the namespace's clusters (and a budget there) so the worker "
                        "can admit the dispatched workloads")
                elif not any(c == w for c, _ in own):
                    yield MIRROR.diag(
                        f"namespace {ns.name!r} exists on worker {w!r} but team {team.name!r} has no budget "
                        f"there, so the worker has no LocalQueue {team.name!r} for dispatched workloads",
                        team.src.locate(at),
                        hint=f"add a budget on {w} for the classes the team uses on {manager.name}")
        worker_classes = {cls for c, cls in own if c in workers}
        for i, b in enumerate(t.budgets):
            if b.cluster == manager.name and b.class_ not in worker_classes:
                yield UNRUNNABLE.diag(
                    f"team {team.name!r} budgets {b.class_} on manager {manager.name!r} but on none of its "
                    f"workers ({', '.join(workers)})", team.src.locate(("spec", "budgets", i, "class")),
                    hint="budget the class on a worker that has it")


def check_manifests(policy: Policy, inventory: Inventory) -> list[Diagnostic]:
    """GITOPS006 over the lowered objects: at most one MultiKueue check per ClusterQueue and no
    ProvisioningRequest check beside it (``pkg/cache/scheduler/clusterqueue.go`` inactivates it)."""
    out = []
    for cluster, queue, names, source in sorted(inventory.queue_checks):
        kinds = [inventory.admission_checks.get((cluster, n), "") for n in names]
        mk = [n for n, k in zip(names, kinds) if k == CONTROLLER]
        prov = [n for n, k in zip(names, kinds) if k == "kueue.x-k8s.io/provisioning-request"]
        if len(mk) > 1 or (mk and prov):
            out.append(ONE_CHECK.diag(
                f"ClusterQueue {queue!r} on {cluster!r} carries admission checks {', '.join(names)}; Kueue "
                "allows one MultiKueue check and no ProvisioningRequest check beside it",
                Location(source or policy.fleet_src.path),
                hint="put ProvisioningRequest checks on the worker ClusterQueues"))
    return out
