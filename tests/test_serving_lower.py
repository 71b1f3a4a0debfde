"""Lowering of serving deployments: vLLM objects on reserved pools, outside Kueue, and no Kueue
ResourceFlavor able to reach a reserved node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import copy_demo, mutate, policy_at

from compiler.lower.kueue import lower_flavors, lower_priorities
from compiler.lower.serving import PRIORITY_CLASS, lower_serving, lower_serving_priority
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.policy.labels import (
    LABEL_CLASS,
    LABEL_DATA_CLASS,
    LABEL_MODEL,
    LABEL_POOL,
    LABEL_QUEUE,
    LABEL_TEAM,
    SERVING_NODE_LABEL,
    SERVING_TAINT_KEY,
)


def build(root: Path = REPO) -> Policy:
    policy, diags = policy_at(root)
    assert policy is not None, diags
    return policy


def serving(policy: Policy) -> list[Manifest]:
    out: list[Manifest] = []
    for cluster in sorted(policy.clusters):
        out.extend(lower_serving_priority(policy, cluster))
        for team in policy.teams:
            out.extend(lower_serving(policy, team, cluster))
    return out


def one(ms: list[Manifest], kind: str, name: str, cluster: str | None = None) -> dict[str, Any]:
    found = [m.obj for m in ms if m.kind == kind and m.name == name and (cluster is None or m.cluster == cluster)]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


@pytest.fixture(scope="module")
def demo() -> tuple[Policy, list[Manifest]]:
    policy = build()
    return policy, serving(policy)


def container(dep: dict[str, Any]) -> dict[str, Any]:
    return dep["spec"]["template"]["spec"]["containers"][0]


def arg(dep: dict[str, Any], flag: str) -> str:
    args = container(dep)["args"]
    return args[args.index(flag) + 1]


def test_paths_and_components(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    paths = {m.relpath for m in ms}
    assert "onprem/serving/deployment.nlp-serving.chat.yaml" in paths
    assert "cloud/serving/scaledobject.search-serving.query-rewrite.yaml" in paths
    assert {"onprem/serving/priorityclass._.gpupolicy-serving.yaml",
            "cloud/serving/priorityclass._.gpupolicy-serving.yaml"} <= paths
    assert all(m.component == "serving" for m in ms)


def test_vllm_args(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    chat = one(ms, "Deployment", "chat")
    assert arg(chat, "--model") == "meta-llama/Llama-3.1-70B-Instruct"
    assert arg(chat, "--tensor-parallel-size") == "4"
    assert arg(chat, "--max-model-len") == "8192"
    assert arg(chat, "--gpu-memory-utilization") == "0.9"
    assert arg(chat, "--max-num-seqs") == "32"  # = sla.concurrentSequences
    assert arg(chat, "--served-model-name") == "chat"
    assert arg(chat, "--dtype") == "bfloat16"
    assert container(chat)["ports"][0]["containerPort"] == 8000
    assert container(chat)["image"] == "vllm/vllm-openai:v0.11.0"
    assert all(isinstance(a, str) for a in container(chat)["args"])


def test_dra_cluster_claims_gpus(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    rct = one(ms, "ResourceClaimTemplate", "chat-gpus")
    assert rct["apiVersion"] == "resource.k8s.io/v1"
    req = rct["spec"]["spec"]["devices"]["requests"][0]
    assert req["exactly"] == {"deviceClassName": "h200", "allocationMode": "ExactCount", "count": 4}
    chat = one(ms, "Deployment", "chat")
    pod = chat["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "chat-gpus"}]
    res = container(chat)["resources"]
    assert res["claims"] == [{"name": "gpus"}]
    assert not any(k.startswith("nvidia.com/") for k in res.get("requests", {}) | res.get("limits", {}))


def test_device_plugin_cluster_requests_gpus(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    qr = one(ms, "Deployment", "query-rewrite")
    res = container(qr)["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == 1
    assert "claims" not in res and "resourceClaims" not in qr["spec"]["template"]["spec"]
    assert not [m for m in ms if m.kind == "ResourceClaimTemplate" and m.cluster == "cloud"]


def test_placement_on_the_reserved_pool(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    for name, pool in (("chat", "h200-serve"), ("query-rewrite", "l40s-serve")):
        pod = one(ms, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {LABEL_POOL: pool, SERVING_NODE_LABEL: pool}
        taint = {"key": SERVING_TAINT_KEY, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
        assert taint in pod["tolerations"]
        assert pod["priorityClassName"] == PRIORITY_CLASS


def test_labels_for_audit_and_never_a_queue(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    chat = one(ms, "Deployment", "chat")
    labels = chat["spec"]["template"]["metadata"]["labels"]
    assert labels[LABEL_TEAM] == "nlp" and labels[LABEL_DATA_CLASS] == "pii"
    assert labels[LABEL_MODEL] == "meta-llama--Llama-3.1-70B-Instruct"
    for m in ms:
        assert LABEL_QUEUE not in m.obj["metadata"].get("labels", {})
        if m.kind == "Deployment":
            assert LABEL_QUEUE not in m.obj["spec"]["template"]["metadata"]["labels"]


def test_secrets_are_references(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    env = {e["name"]: e for e in container(one(ms, "Deployment", "chat"))["env"]}
    assert env["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}
    assert env["HF_HOME"]["value"] == "/data"
    assert not [m for m in ms if m.kind == "Secret"]


def test_volumes_probes_and_shm(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    chat, qr = one(ms, "Deployment", "chat"), one(ms, "Deployment", "query-rewrite")
    chat_vols = {v["name"]: v for v in chat["spec"]["template"]["spec"]["volumes"]}
    assert chat_vols["shm"]["emptyDir"]["medium"] == "Memory"  # TP 4
    assert chat_vols["model-cache"]["persistentVolumeClaim"]["claimName"] == "chat-model-cache"
    assert "shm" not in {v["name"] for v in qr["spec"]["template"]["spec"]["volumes"]}  # TP 1
    pvc = one(ms, "PersistentVolumeClaim", "chat-model-cache")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "400Gi"
    assert pvc["spec"]["storageClassName"] == "fast-nvme"
    big = container(chat)["startupProbe"]
    small = container(qr)["startupProbe"]
    assert big["httpGet"]["path"] == "/health"
    assert big["periodSeconds"] * big["failureThreshold"] > small["periodSeconds"] * small["failureThreshold"]
    # a replica may use its whole startup budget, plus scheduling and the image pull, before the
    # Deployment counts as stuck: the default 600 s would mark a cold 70B rollout failed (Degraded)
    for dep, probe in ((chat, big), (qr, small)):
        budget = probe["periodSeconds"] * probe["failureThreshold"]
        assert dep["spec"]["progressDeadlineSeconds"] == budget + 900 > 600
        # replicas spread over nodes when the pool allows: one node's loss never takes them all
        [term] = dep["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]


def test_service_pdb_and_autoscaling(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    svc = one(ms, "Service", "chat")
    assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert svc["spec"]["type"] == "ClusterIP"
    pdb = one(ms, "PodDisruptionBudget", "chat")
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]
    # chat has no autoscaler: replicas = min; query-rewrite's replicas belong to KEDA
    assert one(ms, "Deployment", "chat")["spec"]["replicas"] == 2
    assert "replicas" not in one(ms, "Deployment", "query-rewrite")["spec"]
    so = one(ms, "ScaledObject", "query-rewrite")
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (2, 6)
    trig = so["spec"]["triggers"][0]
    assert trig["type"] == "prometheus" and "vllm:num_requests_waiting" in trig["metadata"]["query"]
    assert trig["metadata"]["threshold"] == "5"


def test_hpa_variant(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/search.yaml", "kind: keda", "kind: hpa")
    ms = serving(build(root))
    hpa = one(ms, "HorizontalPodAutoscaler", "query-rewrite")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "query-rewrite"}
    assert not [m for m in ms if m.kind == "ScaledObject"]


def test_inference_pool_and_route(demo: tuple[Policy, list[Manifest]]) -> None:
    _, ms = demo
    pool = one(ms, "InferencePool", "chat")
    pod_labels = one(ms, "Deployment", "chat")["spec"]["template"]["metadata"]["labels"]
    assert pool["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    assert "endpointPickerRef" not in pool["spec"]
    route = one(ms, "HTTPRoute", "chat")
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                           "name": "inference-gateway", "namespace": "gateway-system"}]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "chat"}]
    assert not [m for m in ms if m.kind in ("InferencePool", "HTTPRoute") and m.cluster == "cloud"]


def test_endpoint_picker_and_image_override(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/nlp.yaml", "gatewayNamespace: gateway-system",
           "gatewayNamespace: gateway-system\n        endpointPicker: {name: chat-epp, failureMode: FailOpen}")
    mutate(root, "fleet.yaml", "      provisioner: none\n",
           "      provisioner: none\n      versions:\n        vllmImage: vllm/vllm-openai:v0.10.2\n")
    ms = serving(build(root))
    ref = one(ms, "InferencePool", "chat")["spec"]["endpointPickerRef"]
    assert ref == {"group": "", "kind": "Service", "name": "chat-epp", "port": {"number": 9002},
                   "failureMode": "FailOpen"}
    assert container(one(ms, "Deployment", "chat"))["image"] == "vllm/vllm-openai:v0.10.2"
    assert container(one(ms, "Deployment", "query-rewrite"))["image"] == "vllm/vllm-openai:v0.11.0"


def test_priority_class_above_every_tier(demo: tuple[Policy, list[Manifest]]) -> None:
    policy, ms = demo
    pc = one(ms, "PriorityClass", PRIORITY_CLASS, "onprem")
    tiers = [m.obj["value"] for m in lower_priorities(policy, "onprem")]
    assert pc["value"] == 1_000_000 > max(tiers)
    assert pc["globalDefault"] is False and pc["preemptionPolicy"] == "PreemptLowerPriority"


# --- Kueue never reaches reserved nodes: selectors and tolerations, not names -----------------

def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    """Kubernetes toleration matching (v1.Toleration.ToleratesTaint)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        op = t.get("operator", "Equal")
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def reaches(node_selector: dict[str, str], tolerations: list[dict[str, Any]], node: dict[str, Any]) -> bool:
    labels, taints = node["labels"], node["taints"]
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    return all(tolerates(tolerations, t) for t in taints if t["effect"] in ("NoSchedule", "NoExecute"))


def pool_nodes(policy: Policy, cluster: str) -> dict[str, dict[str, Any]]:
    """Each pool's node as the node contract describes it. The SPEC §9 labels are always present;
    serving nodes are assumed to carry the class label too (the worst case for a class-selecting
    flavor); the nodecontract module's labels and taints are merged in when it exists."""
    c = policy.clusters[cluster]
    nodes: dict[str, dict[str, Any]] = {}
    for p in c.pools:
        classes = [cid for cid, cls in policy.classes[cluster].items() if p.name in cls.pools]
        labels = {**p.node_labels, LABEL_POOL: p.name}
        if len(classes) == 1:
            labels[LABEL_CLASS] = classes[0]
        taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        if p.serving:
            labels[SERVING_NODE_LABEL] = p.name
            taints.append({"key": SERVING_TAINT_KEY, "value": p.name, "effect": "NoSchedule"})
        nodes[p.name] = {"labels": labels, "taints": taints, "serving": p.serving}
    try:
        from compiler.policy.node_contract import pool_contracts
    except ImportError:
        return nodes
    for pc in pool_contracts(policy, cluster):
        node = nodes[pc.pool]
        node["labels"].update(pc.labels)
        node["taints"].extend(t.as_dict() for t in pc.taints if t.as_dict() not in node["taints"])
    return nodes


@pytest.mark.parametrize("cluster", ["onprem", "cloud"])
def test_no_flavor_reaches_a_reserved_node(demo: tuple[Policy, list[Manifest]], cluster: str) -> None:
    policy, ms = demo
    nodes = pool_nodes(policy, cluster)
    flavors = lower_flavors(policy, cluster)
    assert flavors
    reached_training = set()
    for f in flavors:
        spec = f.obj["spec"]
        for pool, node in nodes.items():
            if reaches(spec.get("nodeLabels", {}), spec.get("tolerations", []), node):
                assert not node["serving"], f"flavor {f.name} reaches reserved pool {pool}"
                reached_training.add(pool)
    # not vacuous: every training pool with a class is reachable by some flavor
    assert reached_training == {p for p, n in nodes.items() if not n["serving"]}
    # and the serving pods reach exactly their own reserved pool
    for m in ms:
        if m.kind == "Deployment" and m.cluster == cluster:
            pod = m.obj["spec"]["template"]["spec"]
            hit = {p for p, n in nodes.items() if reaches(pod["nodeSelector"], pod["tolerations"], n)}
            assert hit == {pod["nodeSelector"][LABEL_POOL]}


def test_manifests_verify(crds_dir: Path, demo: tuple[Policy, list[Manifest]]) -> None:
    verify = pytest.importorskip("compiler.verify")
    policy, ms = demo
    registry = verify.CrdRegistry.load(crds_dir)
    versions = {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters}
    res = verify.verify(ms, kube_versions=versions, crds=registry, strict=True)
    assert not res.diagnostics, [(d.code, d.message) for d in res.diagnostics]
    kinds = {k for (_, k) in res.stats.objects}
    assert {"Deployment", "InferencePool", "HTTPRoute", "ScaledObject", "ResourceClaimTemplate"} <= kinds
