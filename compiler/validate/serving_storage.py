"""Storage consequences of serving settings (docs/misconfigurations.md, family "serving"): the model
cache a deployment's replicas mount must be attachable wherever the scheduler puts them.

- SERVE304: a ReadWriteOnce cache (declared, or an existing claim shared by several deployments)
  with more than one replica: the second pod on another node waits forever on a Multi-Attach error,
  and a rolling update deadlocks (vllm-project/production-stack#107).
- SERVE305: a ReadWriteMany cache on a storage class whose provisioner is block storage (EBS, GCE
  PD, Azure Disk, local-path): the PVC never binds. (A cache without a class is OPS008.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, checks, define
from compiler.policy.graph import Policy
from compiler.serving.plan import Resolved, deployments

RWO_SHARED = define(
    "SERVE304", "A ReadWriteOnce model cache serves one replica: with replicas.max above 1 (or a claim shared by "
    "several deployments) the pods on other nodes never start (Multi-Attach error) and rollouts deadlock.",
    "replicas: {min: 2, max: 4}\ncache: {accessMode: ReadWriteMany, storageClass: efs-sc}",
    "replicas: {min: 2, max: 4}\ncache: {accessMode: ReadWriteOnce}", scope=Scope.POLICY)
RWX_ON_BLOCK = define(
    "SERVE305", "A ReadWriteMany model cache names a storage class that can share a volume across nodes, not a block "
    "storage class (gp2/gp3/io2 EBS, pd-*/*-rwo GCE PD, managed-csi/managed-premium Azure Disk, local-path).",
    "cache: {accessMode: ReadWriteMany, storageClass: efs-sc}",
    "cache: {accessMode: ReadWriteMany, storageClass: gp3}   # EBS: ReadWriteOnce only", scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (RWO_SHARED, RWX_ON_BLOCK)

# Default class names of block-storage CSI drivers (EKS, GKE, AKS, k3s/kind); RWO only.
BLOCK_CLASSES = re.compile(
    r"^(gp2|gp3|io1|io2|st1|sc1|ebs(-.*)?|.*-ebs|standard|standard-rwo|premium-rwo|balanced-rwo|pd-.*|"
    r"hyperdisk-.*|managed|managed-csi|managed-csi-premium|managed-premium|default|local-path|local-storage)$")


def _mode(r: Resolved) -> str:
    return r.dep.cache.access_mode or ("ReadWriteMany" if r.dep.replicas.max > 1 else "ReadWriteOnce")


@checks(RWO_SHARED)
def check_rwo_shared(policy: Policy) -> Iterator[Diagnostic]:
    resolved = list(deployments(policy))
    claims: dict[tuple[str, str, str], list[Resolved]] = defaultdict(list)
    for r in resolved:
        if r.dep.cache.existing_claim is not None:
            claims[(r.dep.cluster, r.namespace, r.dep.cache.existing_claim)].append(r)
    for r in resolved:
        if _mode(r) != "ReadWriteOnce":
            continue
        cache = r.path + ("cache",)
        shared = claims.get((r.dep.cluster, r.namespace, r.dep.cache.existing_claim or ""), [])
        if r.dep.replicas.max > 1:
            where = cache + ("accessMode",) if r.dep.cache.access_mode else r.path + ("replicas", "max")
            yield RWO_SHARED.diag(
                f"serving {r.dep.name!r} scales to {r.dep.replicas.max} replicas but its model cache is "
                "ReadWriteOnce: a volume attaches to one node, so replicas scheduled elsewhere stay in "
                "ContainerCreating (Multi-Attach error) and a rolling update never finishes",
                r.team.src.locate(where),
                hint="use accessMode: ReadWriteMany with a class that supports it (EFS, Filestore, CephFS, NFS), "
                     "or keep replicas.max: 1")
        elif len(shared) > 1:
            others = ", ".join(o.dep.name for o in shared if o is not r)
            yield RWO_SHARED.diag(
                f"serving {r.dep.name!r} mounts claim {r.dep.cache.existing_claim!r} ReadWriteOnce, which "
                f"{others} mount too: only the pods on the node that attached it first can start",
                r.team.src.locate(cache + ("existingClaim",)),
                hint="give each deployment its own claim, or make the shared claim ReadWriteMany")


@checks(RWX_ON_BLOCK)
def check_rwx_block(policy: Policy) -> Iterator[Diagnostic]:
    for r in deployments(policy):
        sc = r.dep.cache.storage_class
        if r.dep.cache.existing_claim is not None or sc is None or _mode(r) != "ReadWriteMany":
            continue
        if BLOCK_CLASSES.match(sc):
            why = "declared" if r.dep.cache.access_mode else f"chosen because replicas.max is {r.dep.replicas.max}"
            yield RWX_ON_BLOCK.diag(
                f"serving {r.dep.name!r} needs a ReadWriteMany model cache ({why}) but storage class {sc!r} is "
                "block storage, which attaches to one node: the PVC stays Pending and so do the vLLM pods",
                r.team.src.locate(r.path + ("cache", "storageClass")),
                hint="name a class backed by a shared file system (e.g. efs-sc, filestore, cephfs, nfs), or point "
                     "existingClaim at a pre-provisioned RWX volume")
