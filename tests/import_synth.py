"""Synthetic ``kubectl`` exports of a compiled policy, for the import round trip: the nodes each pool's
node contract describes (labels, GFD labels, taints, advertised resources, Karpenter labels), the
rendered Kueue objects, and one labelled GPU pod per training namespace and serving deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic, has_errors
from compiler.pipeline.options import Options
from compiler.pipeline.run import Result, compile_policies
from compiler.policy.graph import Policy
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_PURPOSE, LABEL_QUEUE, LABEL_TEAM
from compiler.policy.node_contract import GFD_PRODUCT, pool_contracts
from compiler.tools.cluster_import.cluster import ClusterExport
from compiler.tools.cluster_import.kueue import KUEUE_KINDS
from compiler.tools.cluster_import.nodes import (
    INSTANCE_TYPE,
    KARPENTER_CAPACITY,
    KARPENTER_NODE_CLASS,
    KARPENTER_POOL,
    REGION,
)
from compiler.tools.cluster_import.pools import DRIVER_MAJOR


def compile_dir(root: Path, policy_dir: Path) -> Result:
    return compile_policies(Options(root=root, policy_dir=policy_dir, out_dir=root / "out", verify=False))


def errors(res: Result) -> list[Diagnostic]:
    return [d for d in res.diagnostics if has_errors([d])]


def _node(name: str, labels: dict[str, str], taints: list[dict[str, str]], capacity: dict[str, int],
          minor: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": {k: str(v) for k, v in capacity.items()},
                       "allocatable": {k: str(v) for k, v in capacity.items()},
                       "nodeInfo": {"kubeletVersion": f"v{minor}.2"}}}


def synth_nodes(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    c = policy.clusters[cluster]
    pools = {p.name: p for p in c.pools}
    out = []
    for pc in pool_contracts(policy, cluster):
        pool = pools[pc.pool]
        labels = {**pc.labels, **pc.gfd_labels, REGION: c.region}
        if pc.products:
            labels[GFD_PRODUCT] = pc.products[0]
            labels.update(pc.mig_products(pc.products[0]))
        if pool.driver:
            labels[DRIVER_MAJOR] = pool.driver.split(".")[0]
        if c.provisioner == "karpenter" and pool.karpenter is not None:
            labels[KARPENTER_POOL] = pool.name
            labels[KARPENTER_NODE_CLASS] = pool.karpenter.node_class
            labels[KARPENTER_CAPACITY] = pool.karpenter.capacity_type
            if pool.karpenter.instance_types:
                labels[INSTANCE_TYPE] = pool.karpenter.instance_types[0]
        for i in range(pc.nodes):
            out.append(_node(f"{pc.pool}-{i}", labels, [t.as_dict() for t in pc.taints], pc.resources,
                             c.kubernetes_version))
    return out


def _pod(ns: str, name: str, labels: dict[str, str], node: str | None, gpus: dict[str, int],
         owner: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "ownerReferences": [{"kind": owner, "name": name, "uid": f"uid-{ns}-{name}",
                                              "controller": True, "apiVersion": "v1"}]},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "example/trainer:1",
                                                       "resources": {"limits": {k: str(v) for k, v in gpus.items()}}}]},
            "status": {"phase": "Running"}}


def synth_pods(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    out = []
    for team in policy.teams:
        spec = team.model.spec
        for ns in spec.namespaces:
            if cluster in ns.clusters:
                labels = {LABEL_TEAM: team.name, LABEL_MODEL: "demo", LABEL_DATA_CLASS: spec.data_classes[0],
                          LABEL_QUEUE: team.name}
                out.append(_pod(ns.name, "train-0", labels, None, {"nvidia.com/gpu": 1}, "Job"))
        for s in spec.serving:
            if s.cluster == cluster:
                ns = spec.serving_namespace or f"{team.name}-serving"
                labels = {LABEL_TEAM: team.name, LABEL_MODEL: s.name, LABEL_DATA_CLASS: s.data_class,
                          LABEL_PURPOSE: "serving"}
                out.append(_pod(ns, f"{s.name}-0", labels, f"{s.pool}-0", {"nvidia.com/gpu": s.tensor_parallel},
                                "ReplicaSet"))
    return out


def synth_exports(res: Result) -> list[ClusterExport]:
    policy = res.policy
    assert policy is not None
    out = []
    for c in policy.fleet.spec.clusters:
        kueue = [m.obj for m in res.manifests if m.cluster == c.name and m.kind in KUEUE_KINDS]
        out.append(ClusterExport(c.name, synth_nodes(policy, c.name), synth_pods(policy, c.name), kueue))
    return out


def kueue_view(res: Result) -> dict[tuple[str, str, str], Any]:
    """What the round trip compares: quotas and the cohort tree, order-insensitive."""
    out: dict[tuple[str, str, str], Any] = {}
    for m in res.manifests:
        if m.kind not in ("ClusterQueue", "Cohort", "ResourceFlavor"):
            continue
        spec = m.obj.get("spec") or {}
        groups = sorted(
            (f["name"], r["name"], str(r.get("nominalQuota")), str(r.get("borrowingLimit")), str(r.get("lendingLimit")))
            for g in spec.get("resourceGroups") or [] for f in g["flavors"] for r in f["resources"])
        if m.kind == "ResourceFlavor":
            view: Any = (spec.get("nodeLabels"), spec.get("tolerations"), spec.get("nodeTaints"))
        elif m.kind == "Cohort":
            view = (spec.get("parentName"), str((spec.get("fairSharing") or {}).get("weight")), groups)
        else:
            sel = spec.get("namespaceSelector")
            view = (spec.get("cohortName"), str((spec.get("fairSharing") or {}).get("weight")), groups, sel)
        out[(m.cluster, m.kind, m.name)] = view
    return out
