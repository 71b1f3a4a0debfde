"""The node contract (report file, Karpenter NodePools) and `gpupolicy nodes` drift detection."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SHARED
from gpu_helpers import build, demo, verify_ok, write_fleet

from compiler.cli.main import main
from compiler.lower.nodes import lower_node_pools
from compiler.policy.graph import Policy
from compiler.policy.node_contract import GFD_PRODUCT, PoolContract, pool_contracts
from compiler.report.node_contract import contract_files, node_contract
from compiler.tools.node_drift import DRIFT, INFO, Finding, check_nodes, render_json, render_text


def good_node(pc: PoolContract, name: str, product: str | None = None) -> dict[str, Any]:
    """A node exactly as the contract says (labels, taints, GFD labels, device-plugin capacity)."""
    product = product or pc.products[0]
    labels = {**pc.labels, **pc.gfd_labels, GFD_PRODUCT: product, **pc.mig_products(product),
              "kubernetes.io/hostname": name}
    capacity = {"cpu": "96", **{r: str(n) for r, n in pc.resources.items() if n}}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": [t.as_dict() for t in pc.taints]},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def full_cluster(policy: Policy, cluster: str) -> list[dict[str, Any]]:
    return [good_node(pc, f"{pc.pool}-{i}") for pc in pool_contracts(policy, cluster) for i in range(pc.nodes)]


def contract(policy: Policy, cluster: str, pool: str) -> PoolContract:
    return next(pc for pc in pool_contracts(policy, cluster) if pc.pool == pool)


def drift(findings: list[Finding]) -> list[tuple[str | None, str, str]]:
    return [(f.node, f.kind, f.message) for f in findings if f.severity == DRIFT]


# --- the contract --------------------------------------------------------------------------

def test_demo_contracts() -> None:
    p = demo()
    l4 = contract(p, "cloud", "l4-dev")
    assert l4.labels == {"gpupolicy.dev/class": "l4-ts4", "gpupolicy.dev/pool": "l4-dev",
                         "nvidia.com/device-plugin.config": "l4-dev"}  # L4 is not MIG-capable
    assert l4.products == ("NVIDIA-L4",)  # renamed shares keep the board name (no -SHARED)
    assert l4.resources == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 16}
    assert l4.gfd_labels == {"nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "4",
                             "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    serve = contract(p, "onprem", "h200-serve")
    assert serve.labels == {"gpupolicy.dev/class": "h200", "gpupolicy.dev/pool": "h200-serve",
                            "node-restriction.kubernetes.io/gpupolicy-serving": "h200-serve",
                            "nvidia.com/mig.config": "all-disabled"}  # DRA: no device-plugin.config
    assert [t.as_dict() for t in serve.taints] == [
        {"key": "gpupolicy.dev/serving", "value": "h200-serve", "effect": "NoSchedule"}]
    assert serve.resources == {}  # DRA: GPUs are ResourceSlice devices, not node capacity
    mig = contract(p, "onprem", "a100-mig")
    assert "gpupolicy.dev/class" not in mig.labels  # three classes on one node
    assert mig.mig_devices == {"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8}
    assert mig.mig_products("NVIDIA-A100-SXM4-80GB")["nvidia.com/mig-3g.40gb.product"] == \
        "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"


def test_contract_report_only_for_clusters_without_karpenter() -> None:
    p = demo()
    files = contract_files(p)
    assert list(files) == ["reports/onprem-node-contract.json"]
    doc = json.loads(files["reports/onprem-node-contract.json"])
    assert doc == node_contract(p, "onprem")
    assert [pool["pool"] for pool in doc["pools"]] == ["a100-mig", "h100-train", "h200-serve"]
    assert files == contract_files(demo())  # deterministic


def test_unrenamed_shares_read_shared(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, """
        - name: t4
          model: l4
          nodes: 1
          gpusPerNode: 2
          nodeLabels: {example.com/rack: r1}
          cut: {mode: timeslicing, replicas: 3, renameByDefault: false}
    """))
    pc = contract(p, "c1", "t4")
    assert pc.products == ("NVIDIA-L4-SHARED",)
    assert pc.resources == {"nvidia.com/gpu": 6}
    assert pc.labels["example.com/rack"] == "r1"


# --- Karpenter NodePools ---------------------------------------------------------------------

def test_demo_node_pools() -> None:
    p = demo()
    pools = {m.name: m for m in lower_node_pools(p, "cloud")}
    assert sorted(pools) == ["h100-burst", "l4-dev", "l40s-serve"]
    assert lower_node_pools(p, "onprem") == []  # not provisioned by Karpenter
    serve = pools["l40s-serve"].obj["spec"]
    assert serve["template"]["metadata"]["labels"] == contract(p, "cloud", "l40s-serve").labels
    assert serve["template"]["spec"]["taints"] == [
        {"key": "gpupolicy.dev/serving", "value": "l40s-serve", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    # every GPU NodePool keeps pods without GPUs off its nodes (they would launch or pin them);
    # everything meant to run there tolerates it: Kueue's flavors, serving pods, the node agents
    assert pools["h100-burst"].obj["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert contract(p, "onprem", "h100-train").taints == ()  # nodes gpupolicy does not provision: as they are
    assert serve["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                         "name": "gpu-default"}
    assert serve["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6e.12xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]
    assert serve["limits"] == {"nvidia.com/gpu": 8} and "replicas" not in serve  # full cards: on demand
    # time-sliced: Karpenter cannot launch for nvidia.com/gpu.shared (karpenter#729), so static (OPS003)
    l4 = pools["l4-dev"].obj["spec"]
    assert l4["replicas"] == 6 and l4["limits"] == {"nodes": 6}
    for np in pools.values():  # never expired, drift-replaced or repacked while running work (OPS007)
        assert np.obj["spec"]["template"]["spec"]["expireAfter"] == "Never"
        assert {"nodes": "0", "reasons": ["Drifted", "Underutilized"]} in np.obj["spec"]["disruption"]["budgets"]
    assert pools["l4-dev"].obj["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]  # no serving taint: the GPU one
    assert {m.component for m in pools.values()} == {"nodes"}
    assert pools["l4-dev"].relpath == "cloud/nodes/nodepool._.l4-dev.yaml"
    verify_ok(list(pools.values()), {"cloud": "1.33"})


def test_node_pool_without_instance_types(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, """
        - name: spot-mig
          model: a100-80gb
          nodes: 2
          gpusPerNode: 8
          cut: {mode: mig, layout: all-3g.40gb}
          nodeLabels: {topology.kubernetes.io/zone: us-east-1a, example.com/team: ml}
          karpenter: {nodeClass: gpu, capacityType: spot}
    """, provisioner="karpenter"))
    (np,) = lower_node_pools(p, "c1")
    spec = np.obj["spec"]
    assert spec["replicas"] == 2 and spec["limits"] == {"nodes": 2}  # MIG: static (OPS003)
    reqs = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    assert reqs == {"karpenter.k8s.aws/instance-gpu-manufacturer": ["nvidia"],
                    "karpenter.k8s.aws/instance-gpu-count": ["8"],
                    "karpenter.sh/capacity-type": ["spot"],
                    "topology.kubernetes.io/zone": ["us-east-1a"]}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-3g.40gb" and labels["example.com/team"] == "ml"
    assert "topology.kubernetes.io/zone" not in labels  # well-known: a requirement, not a label
    verify_ok([np], {"c1": "1.33"})


# --- drift ---------------------------------------------------------------------------------

def test_a_cluster_as_contracted_has_no_drift() -> None:
    p = demo()
    for cluster in ("onprem", "cloud"):
        report = check_nodes(p, cluster, full_cluster(p, cluster))
        assert not report.drift, drift(report.findings)
        assert report.findings == []
        assert all(pc.found == pc.declared for pc in report.pools)


def _mutated(p: Policy, cluster: str, node: str, fn: Any) -> list[Finding]:
    nodes = full_cluster(p, cluster)
    target = next(n for n in nodes if n["metadata"]["name"] == node)
    fn(target)
    return check_nodes(p, cluster, nodes).findings


DRIFT_CASES = [
    ("missing device-plugin label", "cloud", "l4-dev-0",
     lambda n: n["metadata"]["labels"].pop("nvidia.com/device-plugin.config"),
     ("l4-dev-0", "label", "missing label nvidia.com/device-plugin.config=l4-dev")),
    ("wrong MIG layout", "onprem", "a100-mig-1",
     lambda n: n["metadata"]["labels"].update({"nvidia.com/mig.config": "all-1g.10gb"}),
     ("a100-mig-1", "label", "label nvidia.com/mig.config is 'all-1g.10gb', the contract says 'all-balanced'")),
    ("serving taint missing", "onprem", "h200-serve-0", lambda n: n["spec"].update({"taints": []}),
     ("h200-serve-0", "taint", "taint gpupolicy.dev/serving=h200-serve:NoSchedule missing")),
    ("serving taint on a training node", "onprem", "h100-train-3",
     lambda n: n["spec"].update({"taints": [{"key": "gpupolicy.dev/serving", "value": "x", "effect": "NoSchedule"}]}),
     ("h100-train-3", "taint",
      "training pool node is tainted gpupolicy.dev/serving=x; Kueue flavors do not tolerate it")),
    ("wrong GPU model", "onprem", "h100-train-0",
     lambda n: n["metadata"]["labels"].update({GFD_PRODUCT: "NVIDIA-A100-SXM4-80GB"}),
     ("h100-train-0", "product",
      "GPU product 'NVIDIA-A100-SXM4-80GB', the pool's h100-80gb reads as NVIDIA-H100-80GB-HBM3 or "
      "NVIDIA-H100-PCIe (that is a a100-80gb)")),
    ("wrong GPU count", "onprem", "h100-train-0",
     lambda n: n["metadata"]["labels"].update({"nvidia.com/gpu.count": "4"}),
     ("h100-train-0", "gfd", "nvidia.com/gpu.count is '4', expected '8'")),
    ("shares not renamed", "cloud", "l4-dev-2",
     lambda n: n["status"].update({"capacity": {"nvidia.com/gpu": "16"}, "allocatable": {"nvidia.com/gpu": "16"}}),
     ("l4-dev-2", "resource",
      "capacity nvidia.com/gpu is 16, expected 0 (full-card requests could land on shared or MIG GPUs)")),
    ("unhealthy GPU", "cloud", "h100-burst-1",
     lambda n: n["status"]["allocatable"].update({"nvidia.com/gpu": "7"}),
     ("h100-burst-1", "resource", "allocatable nvidia.com/gpu is 7 of 8 (unhealthy devices?)")),
    ("MIG reconfiguration failed", "onprem", "a100-mig-0",
     lambda n: n["metadata"]["labels"].update({"nvidia.com/mig.config.state": "failed"}),
     ("a100-mig-0", "gfd", "nvidia.com/mig.config.state is 'failed', expected 'success'")),
    ("unknown pool", "cloud", "h100-burst-0",
     lambda n: n["metadata"]["labels"].update({"gpupolicy.dev/pool": "h100-brust"}),
     ("h100-burst-0", "unknown-pool",
      "gpupolicy.dev/pool=h100-brust names no pool of cluster cloud (pools: h100-burst, l4-dev, l40s-serve)")),
]


@pytest.mark.parametrize(("case", "cluster", "node", "fn", "expected"), DRIFT_CASES, ids=[c[0] for c in DRIFT_CASES])
def test_drift(case: str, cluster: str, node: str, fn: Any, expected: tuple[str, str, str]) -> None:
    findings = drift(_mutated(demo(), cluster, node, fn))
    assert expected in findings, findings


STATIC_SHORT = ("(a static NodePool, replicas: 6, that Karpenter has not filled: is its StaticCapacity feature "
                "gate on?)")


def test_pool_size() -> None:
    p = demo()
    onprem = [n for n in full_cluster(p, "onprem") if n["metadata"]["name"] != "h100-train-7"]
    report = check_nodes(p, "onprem", onprem)
    assert drift(report.findings) == [(None, "pool-size", "7 of 8 declared nodes")]
    # Karpenter pools launched on demand shrink with demand: fewer nodes is information, more is drift
    cloud = [n for n in full_cluster(p, "cloud") if n["metadata"]["name"] != "l40s-serve-1"]
    extra = copy.deepcopy(cloud[0])
    extra["metadata"]["name"] = "h100-burst-9"
    report = check_nodes(p, "cloud", cloud + [extra])
    assert [(f.pool, f.severity, f.message) for f in report.findings] == [
        ("h100-burst", DRIFT, "3 nodes, 2 declared: quotas count only the declared ones"),
        ("l40s-serve", INFO, "1 of 2 declared nodes"),
    ]


def test_a_static_karpenter_pool_short_of_nodes_is_drift() -> None:
    """l4-dev is time-sliced, so a static NodePool (``replicas: 6``, OPS003): Karpenter holds six
    nodes and Kueue's quota counts 6 x 4 x 4 shares; fewer is drift, as on a cluster without
    Karpenter. The full-card pools are launched on demand and stay information."""
    p = demo()
    assert [(pc.pool, pc.on_demand) for pc in pool_contracts(p, "cloud")] == [
        ("h100-burst", True), ("l4-dev", False), ("l40s-serve", True)]
    assert not any(pc.on_demand for pc in pool_contracts(p, "onprem"))  # not provisioned by Karpenter
    cloud = [n for n in full_cluster(p, "cloud") if n["metadata"]["name"] != "l4-dev-5"]
    assert [(f.pool, f.severity, f.message) for f in check_nodes(p, "cloud", cloud).findings] == [
        ("l4-dev", DRIFT, f"5 of 6 declared nodes {STATIC_SHORT}")]
    report = check_nodes(p, "cloud", [])
    assert report.drift
    assert [(f.pool, f.severity, f.message) for f in report.findings] == [
        ("h100-burst", INFO, "0 of 2 declared nodes"),
        ("l4-dev", DRIFT, f"0 of 6 declared nodes {STATIC_SHORT}"),
        ("l40s-serve", INFO, "0 of 2 declared nodes"),
    ]


def test_every_pool_of_a_dra_karpenter_cluster_is_static(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, """
        - name: full
          model: h100-80gb
          nodes: 2
          gpusPerNode: 8
          cut: {mode: full}
          karpenter: {nodeClass: gpu}
    """, kube="1.34", provisioner="karpenter", dra=True))
    (pc,) = pool_contracts(p, "c1")
    assert not pc.on_demand  # Karpenter cannot simulate ResourceClaims
    ((_, severity, message),) = [(f.pool, f.severity, f.message) for f in check_nodes(p, "c1", []).findings]
    assert severity == DRIFT and message.startswith("0 of 2 declared nodes (a static NodePool, replicas: 2")


def test_in_progress_and_unlabelled_nodes_are_info(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, """
        - name: rack7
          model: h100-80gb
          nodes: 1
          gpusPerNode: 8
          nodeLabels: {example.com/rack: "7"}
          cut: {mode: mig, layout: all-balanced}
    """))
    (pc,) = pool_contracts(p, "c1")
    node = good_node(pc, "n1")
    node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    stray = {"metadata": {"name": "cpu-or-gpu", "labels": {"nvidia.com/gpu.present": "true"}}}
    unlabelled = {"metadata": {"name": "n2", "labels": {"example.com/rack": "7"}}}
    findings = check_nodes(p, "c1", [node, stray, unlabelled]).findings
    assert [(f.node, f.severity, f.message) for f in findings] == [
        ("cpu-or-gpu", INFO, "GPU node outside every pool (no gpupolicy.dev/pool label)"),
        ("n1", INFO, "MIG reconfiguration pending"),
        ("n2", DRIFT, "matches the nodeLabels of pool rack7 but has no gpupolicy.dev/pool label"),
    ]


# --- nodes without the pool label, on both GPU paths -------------------------------------------

NODE_FIXTURES = Path(__file__).parent / "fixtures" / "nodes"


def dra_node(name: str = "gpu-h100-07") -> dict[str, Any]:
    """An H100 node of onprem's h100-train pool as ``kubectl get nodes -o json`` shows it on a DRA
    cluster: GFD's labels and the node contract, no ``nvidia.com/*`` capacity (fixtures/nodes/SOURCES.md)."""
    (node,) = json.loads((NODE_FIXTURES / "onprem-h100-dra.json").read_text())["items"]
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    return node


def onprem_with(p: Policy, node: dict[str, Any]) -> list[dict[str, Any]]:
    """onprem as contracted, h100-train-7 replaced by ``node``."""
    return [n for n in full_cluster(p, "onprem") if n["metadata"]["name"] != "h100-train-7"] + [node]


def stray(node: dict[str, Any]) -> dict[str, Any]:
    """The node without anything gpupolicy or its labelling set: a GPU node nobody put in a pool."""
    labels = node["metadata"]["labels"]
    for key in [k for k in labels if k.startswith("gpupolicy.dev/") or k == "nvidia.com/mig.config"]:
        del labels[key]
    return node


LOST_POOL = "carries the node contract of pool {} but no gpupolicy.dev/pool label: no flavor or serving deployment selects it"
OUTSIDE = "GPU node outside every pool (no gpupolicy.dev/pool label)"


def test_a_dra_node_export_satisfies_the_contract() -> None:
    p = demo()
    node = dra_node()
    assert not any(k.startswith("nvidia.com/") for k in node["status"]["capacity"])  # GPUs are ResourceSlices
    report = check_nodes(p, "onprem", onprem_with(p, node))
    assert report.findings == [] and next(pc for pc in report.pools if pc.pool == "h100-train").found == 8


def test_a_dra_node_that_lost_its_pool_label_is_named() -> None:
    p = demo()
    node = dra_node()
    del node["metadata"]["labels"]["gpupolicy.dev/pool"]
    report = check_nodes(p, "onprem", onprem_with(p, node))
    assert [(f.pool, f.node, f.severity, f.message) for f in report.findings] == [
        ("h100-train", "gpu-h100-07", DRIFT, LOST_POOL.format("h100-train")),
        ("h100-train", None, DRIFT, "7 of 8 declared nodes"),
    ]
    text = render_text(report)
    assert ("pool h100-train: 7 of 8 nodes\n"
            f"  DRIFT gpu-h100-07: {LOST_POOL.format('h100-train')}\n"
            "  DRIFT -: 7 of 8 declared nodes\n") in text


def test_a_device_plugin_node_that_lost_its_pool_label_is_named_alike() -> None:
    p = demo()
    nodes = full_cluster(p, "cloud")
    del next(n for n in nodes if n["metadata"]["name"] == "h100-burst-1")["metadata"]["labels"]["gpupolicy.dev/pool"]
    assert [(f.pool, f.node, f.severity, f.message) for f in check_nodes(p, "cloud", nodes).findings] == [
        ("h100-burst", "h100-burst-1", DRIFT, LOST_POOL.format("h100-burst")),
        ("h100-burst", None, INFO, "1 of 2 declared nodes"),  # launched on demand
    ]


# What makes a node without the pool label a GPU node: each piece of evidence alone.
EVIDENCE = [
    ("GFD product and count", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"}, {}),
    ("GFD product", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, {}),
    ("GFD count", {"nvidia.com/gpu.count": "8"}, {}),
    ("GPU Operator gpu.present", {"nvidia.com/gpu.present": "true"}, {}),
    ("device-plugin allocatable", {}, {"nvidia.com/gpu": "8"}),
    ("allocatable MIG devices", {}, {"nvidia.com/mig-3g.40gb": "16"}),
]


def _bare(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"capacity": {"cpu": "96", **allocatable}, "allocatable": {"cpu": "95", **allocatable}}}


@pytest.mark.parametrize(("labels", "allocatable"), [e[1:] for e in EVIDENCE], ids=[e[0] for e in EVIDENCE])
@pytest.mark.parametrize("cluster", ["onprem", "cloud"])  # DRA, device plugin
def test_a_stray_gpu_node_is_named_on_both_paths(cluster: str, labels: dict[str, str],
                                                 allocatable: dict[str, str]) -> None:
    p = demo()
    report = check_nodes(p, cluster, full_cluster(p, cluster) + [_bare("stray-0", labels, allocatable)])
    assert [(f.pool, f.node, f.severity, f.message) for f in report.findings] == [
        (None, "stray-0", INFO, OUTSIDE)]
    assert "outside the contract:\n  INFO  stray-0: " + OUTSIDE in render_text(report)


def test_the_stray_dra_node_from_the_export() -> None:
    p = demo()
    report = check_nodes(p, "onprem", full_cluster(p, "onprem") + [stray(dra_node("gpu-h100-99"))])
    assert [(f.node, f.severity, f.message) for f in report.findings] == [("gpu-h100-99", INFO, OUTSIDE)]


@pytest.mark.parametrize("labels", [{}, {"nvidia.com/gpu.present": "false"}, {"nvidia.com/gpu.count": "0"},
                                    {"nvidia.com/gpu.product": ""}, {"feature.node.kubernetes.io/pci-8086.present": "true"}],
                         ids=["none", "present false", "count 0", "empty product", "other PCI"])
def test_a_cpu_node_is_not_a_gpu_node(labels: dict[str, str]) -> None:
    p = demo()
    cpu = _bare("cpu-0", labels, {"nvidia.com/gpu": "0"})
    assert check_nodes(p, "onprem", full_cluster(p, "onprem") + [cpu]).findings == []


def test_a_lost_pool_label_shared_by_two_pools_names_both(tmp_path: Path) -> None:
    """Two full-card H100 pools on a DRA cluster carry the same contract but for the pool label
    (one class, no device-plugin config): the node is named with both candidates."""
    p = build(write_fleet(tmp_path, """
        - name: rack-a
          model: h100-80gb
          nodes: 1
          gpusPerNode: 8
          cut: {mode: full}
        - name: rack-b
          model: h100-80gb
          nodes: 1
          gpusPerNode: 8
          cut: {mode: full}
    """, kube="1.34", dra=True))
    a, b = pool_contracts(p, "c1")
    assert {k: v for k, v in a.labels.items() if k != "gpupolicy.dev/pool"} == \
        {k: v for k, v in b.labels.items() if k != "gpupolicy.dev/pool"}
    node = good_node(a, "n1")
    del node["metadata"]["labels"]["gpupolicy.dev/pool"]
    findings = check_nodes(p, "c1", [node, good_node(b, "n2")]).findings
    assert [(f.pool, f.node, f.severity, f.message, f.expected) for f in findings] == [
        (None, "n1", DRIFT, LOST_POOL.format("rack-a or rack-b"), ["rack-a", "rack-b"]),
        ("rack-a", None, DRIFT, "0 of 1 declared nodes", 1),
    ]


def test_mig_config_alone_does_not_place_a_node_in_a_pool() -> None:
    """The GPU Operator labels every MIG-capable node ``nvidia.com/mig.config=all-disabled``: a
    stray H100 that carries only that is outside every pool, not h100-train's."""
    p = demo()
    node = stray(dra_node("gpu-h100-99"))
    node["metadata"]["labels"]["nvidia.com/mig.config"] = "all-disabled"
    findings = check_nodes(p, "onprem", full_cluster(p, "onprem") + [node]).findings
    assert [(f.node, f.severity, f.message) for f in findings] == [("gpu-h100-99", INFO, OUTSIDE)]


def test_real_gfd_labels_match_the_contract(tmp_path: Path) -> None:
    """Labels GFD wrote on real H100 nodes (GPU Operator docs) satisfy our contract once the
    compiler-owned labels are added: MIG mixed all-balanced, and MIG disabled."""
    samples = SHARED / "crds" / "gpu-operator" / "docs-samples"
    if not samples.is_dir():
        pytest.skip(f"docs samples not found at {samples}")
    p = build(write_fleet(tmp_path, """
        - name: h100-bal
          model: h100-80gb
          nodes: 1
          gpusPerNode: 1
          cut: {mode: mig, layout: all-balanced}
        - name: h100-full
          model: h100-80gb
          nodes: 1
          gpusPerNode: 1
          cut: {mode: full}
    """))
    mixed = json.loads((samples / "mig-mixed-node-labels.json").read_text())
    single = json.loads((samples / "mig-node-labels.json").read_text())
    nodes = []
    for name, labels, pool, capacity in (
        ("mixed", mixed, "h100-bal", {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-2g.20gb": "1",
                                      "nvidia.com/mig-3g.40gb": "1"}),
        ("disabled", single, "h100-full", {"nvidia.com/gpu": "1"}),
    ):
        labels = {**labels, "gpupolicy.dev/pool": pool, "gpupolicy.dev/class": "h100-80gb",
                  "nvidia.com/device-plugin.config": pool}
        if pool == "h100-bal":
            labels.pop("gpupolicy.dev/class")
        nodes.append({"metadata": {"name": name, "labels": labels},
                      "status": {"capacity": capacity, "allocatable": capacity}})
    report = check_nodes(p, "c1", nodes)
    assert report.findings == [], report.findings


# --- the command -----------------------------------------------------------------------------

def _write(tmp_path: Path, nodes: list[dict[str, Any]]) -> Path:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return path


def test_cli_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = demo()
    nodes = full_cluster(p, "cloud")
    ok = _write(tmp_path, nodes)
    assert main(["nodes", str(ok), "--root", str(REPO)]) == 0  # cluster guessed from the pool labels
    out = capsys.readouterr().out
    assert out.startswith("cluster cloud: 10 nodes, 3 pools\n") and out.endswith("no drift\n")
    nodes[0]["metadata"]["labels"].pop("gpupolicy.dev/class")
    bad = _write(tmp_path, nodes)
    assert main(["nodes", str(bad), "--root", str(REPO), "--cluster", "cloud", "--output", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["drift"] is True and doc["cluster"] == "cloud"
    assert doc["findings"] == [{"severity": "drift", "kind": "label", "pool": "h100-burst", "node": "h100-burst-0",
                                "key": "gpupolicy.dev/class", "expected": "h100-80gb",
                                "message": "missing label gpupolicy.dev/class=h100-80gb"}]


def test_cli_nodes_on_a_dra_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reviewer's two onprem cases through the command: exit 1 naming the node that lost its
    pool label; a stray GPU node is named too, as on a device-plugin cluster (information)."""
    p = demo()
    node = dra_node()
    del node["metadata"]["labels"]["gpupolicy.dev/pool"]
    path = _write(tmp_path, onprem_with(p, node))
    assert main(["nodes", str(path), "--root", str(REPO), "--cluster", "onprem", "--output", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {"severity": "drift", "kind": "label", "pool": "h100-train", "node": "gpu-h100-07",
            "key": "gpupolicy.dev/pool", "expected": "h100-train",
            "message": LOST_POOL.format("h100-train")} in doc["findings"]
    path = _write(tmp_path, full_cluster(p, "onprem") + [stray(dra_node("gpu-h100-99"))])
    assert main(["nodes", str(path), "--root", str(REPO)]) == 0  # cluster guessed from the pool labels
    out = capsys.readouterr().out
    assert f"outside the contract:\n  INFO  gpu-h100-99: {OUTSIDE}\nno drift\n" in out


def test_cli_nodes_static_pool_without_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [])
    assert main(["nodes", str(path), "--root", str(REPO), "--cluster", "cloud"]) == 1
    out = capsys.readouterr().out
    assert f"pool l4-dev: 0 of 6 nodes\n  DRIFT -: 0 of 6 declared nodes {STATIC_SHORT}\n" in out
    assert "pool h100-burst: 0 of 2 nodes\n  INFO  -: 0 of 2 declared nodes\n" in out
    assert out.endswith("1 drift finding(s)\n")


@pytest.mark.parametrize(("content", "args", "message"), [
    ("not json", [], "cannot read nodes"),
    ('{"items": [{"kind": "Node", "metadata": {}}]}', [], "no metadata.name"),
    ('[{"kind": "Pod", "metadata": {"name": "p"}}]', [], "cannot read nodes"),
    ('{"items": []}', [], "cannot tell which cluster"),
    ('{"items": []}', ["--cluster", "nowhere"], "no cluster 'nowhere'"),
])
def test_cli_nodes_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                args: list[str], message: str) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(content)
    assert main(["nodes", str(path), "--root", str(REPO), *args]) == 2
    assert message in capsys.readouterr().err


def test_parse_and_render() -> None:
    p = demo()
    one = good_node(contract(p, "cloud", "h100-burst"), "x")
    report = check_nodes(p, "cloud", [one])
    text = render_text(report)
    assert "pool h100-burst: 1 of 2 nodes\n  INFO  -: 1 of 2 declared nodes\n" in text
    assert f"pool l4-dev: 0 of 6 nodes\n  DRIFT -: 0 of 6 declared nodes {STATIC_SHORT}\n" in text
    assert json.loads(render_json(report))["drift"] is True
