"""OPS rules over the policy: what the synced fleet needs at run time that the policy alone decides
(the rules over rendered objects are ``compiler.verify.ops``). Run by ``compiler.validate.driver``.

- OPS005 (policy): every GPU class with capacity for Kueue is budgeted by some team, or it is
  idle: no ClusterQueue covers its resource, so Kueue never admits a workload for it, and nothing
  else may use it (the backstop). Reported as a warning and listed in REPORT.md
  (``idle_classes``).
- OPS006 (fleet): the GPU backstop (``admission.modes.backstop``) is ``Deny``, and so is the
  namespace-label guard (``namespaceLabels``) whose labels decide which namespaces it exempts. In ``Warn`` a
  namespace gpupolicy does not manage can take GPUs Kueue counts as free (on DRA clusters by a
  ResourceClaim no quota sees; on device-plugin clusters by ``nvidia.com/gpu``): a
  ValidatingAdmissionPolicyBinding with ``validationActions: [Warn]`` admits the request
  (kubernetes ``admissionregistration/v1`` ValidationAction: "Warn ... the request is not
  rejected"). Warning: a staged rollout may keep ``Warn`` for a while; ``--strict`` fails it.
- OPS008 (team): a model cache that several replicas share (``ReadWriteMany``: the access mode
  set, or unset with ``replicas.max > 1``) names its ``storageClass``. Without one the PVC takes
  the cluster's default class, which on managed clouds is block storage that cannot do RWX (EKS:
  the EBS CSI driver's ``gp2``/``gp3`` support only ReadWriteOnce, kubernetes-sigs/aws-ebs-csi-driver
  README "Features"): the PVC stays Pending and so do the vLLM pods. Which class can do RWX
  (EFS, Filestore, CephFS, NFS) depends on the cluster, so the policy must say it.
- OPS011 (fleet): every pool of a DRA cluster gets its GPU driver the same way, from the GPU
  Operator or from the node itself: the DRA kubelet plugin reads the driver from one root on
  every node (``compiler.policy.drivers``, which says who installs each pool's driver).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.policy.drivers import driver_plan
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.policy.summaries import gather
from compiler.policy.team_facts import BUDGETED
from compiler.validate.cascade import misplaced_classes

IDLE_CLASS = define(
    "OPS005", "Every GPU class with capacity outside serving pools is budgeted by some team on its cluster, "
    "or is reported idle (no queue can admit it).",
    "# a100-80gb-mig-2g.20gb: 32 slices\nbudgets:\n- {cluster: onprem, class: a100-80gb-mig-2g.20gb, guaranteed: 8}",
    "# a100-80gb-mig-2g.20gb: 32 slices, no team budgets it", Severity.WARNING, scope=Scope.POLICY)
BACKSTOP = define(
    "OPS006", "The GPU backstop denies: namespaces gpupolicy does not manage cannot take GPUs Kueue counts as free; "
    "so does the namespace-label guard it trusts (a namespace's gpupolicy.dev labels exempt it from the backstop).",
    "admission:\n  modes: {backstop: Deny}", "admission:\n  modes: {backstop: Warn}",
    Severity.WARNING, scope=Scope.FLEET)
DRIVER_ROOT = define(
    "OPS011", "On a DRA cluster every pool takes the GPU Operator's driver or every pool brings its own: the DRA "
    "kubelet plugin reads the driver from one root (nvidiaDriverRoot) on every node.",
    "# dra: true\n- {name: a100-mig, driver: '580'}\n- {name: h100-train, driver: '580'}",
    "# dra: true\n- {name: a100-mig, driver: '580'}   # not the Operator's 595\n- {name: h100-train}", scope=Scope.FLEET)
RWX_CACHE = define(
    "OPS008", "A model cache shared by several replicas (ReadWriteMany) names a storageClass that can do RWX.",
    "replicas: {min: 2, max: 6}\ncache: {size: 200Gi, storageClass: efs-sc}",
    "replicas: {min: 2, max: 6}\ncache: {size: 200Gi}   # default class: EBS, RWO only", scope=Scope.TEAM)

RULES: tuple[Rule, ...] = (IDLE_CLASS, BACKSTOP, RWX_CACHE, DRIVER_ROOT)


@per_policy  # the rule and REPORT.md's runtime section (callers only read it)
def idle_classes(policy: Policy) -> dict[str, dict[str, int]]:
    """cluster -> class -> units Kueue could admit but no team budgets (OPS005)."""
    budgeted = gather(policy, BUDGETED)  # kept a block of teams at a time
    out: dict[str, dict[str, int]] = {}
    for cluster in sorted(policy.clusters):
        for cid, cls in sorted(policy.classes.get(cluster, {}).items()):
            if cls.capacity > 0 and (cluster, cid) not in budgeted:
                out.setdefault(cluster, {})[cid] = cls.capacity
    return out


@checks(IDLE_CLASS)
def check_idle_classes(policy: Policy) -> Iterator[Diagnostic]:
    clusters = policy.fleet.spec.clusters
    for cluster, classes in idle_classes(policy).items():
        ci = next(i for i, c in enumerate(clusters) if c.name == cluster)
        for cid, units in classes.items():
            if cid in misplaced_classes(policy):
                continue  # a budget of it names a cluster that does not exist: FLEET002's, not news
            pools = policy.classes[cluster][cid].pools
            pi = next((i for i, p in enumerate(clusters[ci].pools) if p.name in pools), 0)
            yield IDLE_CLASS.diag(
                f"class {cid!r} on {cluster!r} has {units} units outside serving pools, but no team budgets it: "
                "no ClusterQueue covers it, so these GPUs stay idle",
                policy.fleet_src.locate(("spec", "clusters", ci, "pools", pi, "cut")),
                hint="budget the class in a team file, or change the pool's cut to classes teams use")


@checks(DRIVER_ROOT)
def check_driver_root(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        plan = driver_plan(policy, c.name)
        if not (c.dra and plan.mixed):
            continue
        host = next(pi for pi, p in enumerate(c.pools) if p.name == plan.host_pools[0])
        offered = f"the GPU Operator's driver ({plan.operator})" if plan.operator else "the GPU Operator's driver"
        yield DRIVER_ROOT.diag(
            f"on DRA cluster {c.name!r}, pools {', '.join(plan.host_pools)} bring their own driver (their declared "
            f"driver is not {offered}) while pools {', '.join(plan.operator_pools)} take the Operator's: the DRA "
            "kubelet plugin reads one driver root on every node, so one of the two finds no driver",
            policy.fleet_src.locate(("spec", "clusters", ci, "pools", host, "driver")),
            hint=f"declare the same driver on every pool of {c.name!r} (their nodes bring it), or declare one the "
                 "Operator installs (versions.gpuOperator's default driver, or one full version on every pool)")


@checks(BACKSTOP)
def check_backstop(policy: Policy) -> Iterator[Diagnostic]:
    mode = policy.fleet.spec.admission.modes.backstop
    gpu_clusters = [c.name for c in policy.fleet.spec.clusters if c.pools]
    if mode != "Deny" and gpu_clusters:
        yield BACKSTOP.diag(
            f"backstop is {mode!r}: on {', '.join(gpu_clusters)} a namespace gpupolicy does not manage can still "
            "take GPUs that Kueue counts as free",
            policy.fleet_src.locate(("spec", "admission", "modes", "backstop")),
            hint="set admission.modes.backstop: Deny once the Warn/Audit rollout is over")
    elif gpu_clusters and policy.fleet.spec.admission.modes.namespace_labels != "Deny":
        mode = policy.fleet.spec.admission.modes.namespace_labels
        yield BACKSTOP.diag(
            f"namespaceLabels is {mode!r}: on {', '.join(gpu_clusters)} the backstop exempts a namespace by its "
            "gpupolicy.dev/team label, which anyone who may label a namespace can set to take GPUs outside every queue",
            policy.fleet_src.locate(("spec", "admission"), key=True),
            hint="set admission.modes.namespaceLabels: Deny once ArgoCD's service account and admission.labelWriters "
                 "are confirmed (its Warn findings name who changed a label)")


@checks(RWX_CACHE)
def check_rwx_cache(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    for i, d in enumerate(team.model.spec.serving):
        cache = d.cache
        if cache.existing_claim is not None or cache.storage_class is not None:
            continue
        mode = cache.access_mode or ("ReadWriteMany" if d.replicas.max > 1 else "ReadWriteOnce")
        if mode == "ReadWriteMany":
            yield RWX_CACHE.diag(
                f"serving {d.name!r}: its model cache is ReadWriteMany (shared by up to {d.replicas.max} replicas) "
                "but names no storageClass; the cluster's default class (EBS on EKS) cannot do RWX, so the PVC "
                "and every replica stay Pending",
                team.src.locate(("spec", "serving", i, "cache") if "cache" in d.model_fields_set
                                else ("spec", "serving", i)),
                hint="set cache.storageClass to an RWX class (EFS, Filestore, CephFS, NFS), or cache.existingClaim, "
                     "or cache.accessMode: ReadWriteOnce with replicas.max: 1")
