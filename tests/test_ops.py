"""OPS: the runtime model of the rendered fleet and the rules over it (compiler.verify.runtime, compiler.verify.ops, compiler.validate.ops).

Each rule passes on the demo and fails when the rendered objects (or the policy) bring back the
defect of issue 15 it guards against."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
from gpu_helpers import demo
from helpers import codes, copy_demo, find, line_of, mutate, policy_at

from compiler.diagnostics import Diagnostic, Severity
from compiler.lower import lower_all
from compiler.lower.charts import dra_driver_values
from compiler.lower.gpu_operator import gpu_operator_values
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.policy.labels import SERVING_TAINT_KEY
from compiler.policy.node_agents import tolerates
from compiler.verify.ops import check_runtime
from compiler.verify.runtime import cluster_runtime


@pytest.fixture(scope="module")
def rendered() -> tuple[Policy, list[Manifest], Inventory]:
    policy = demo()
    manifests, inventory = lower_all(policy)
    return policy, manifests, inventory


def _changed(manifests: list[Manifest], match: Callable[[Manifest], bool],
             edit: Callable[[dict[str, Any]], None]) -> list[Manifest]:
    out = []
    hit = False
    for m in manifests:
        if match(m):
            obj = copy.deepcopy(m.obj)
            edit(obj)
            m = Manifest(m.cluster, m.component, obj, m.sources)
            hit = True
        out.append(m)
    assert hit, "nothing matched"
    return out


def _app(cluster: str, component: str) -> Callable[[Manifest], bool]:
    return lambda m: m.kind == "Application" and m.name == f"gpupolicy-{cluster}-{component}"


def _values(obj: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = obj["spec"]["source"]["helm"]["valuesObject"]
    return values


def _ops(policy: Policy, manifests: list[Manifest], inventory: Inventory | None = None) -> list[Diagnostic]:
    return check_runtime(policy, manifests, inventory or Inventory.of(manifests))


def test_demo_runs(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, inventory = rendered
    assert _ops(policy, manifests, inventory) == []


def test_model_reads_rendered_objects(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, inventory = rendered
    onprem = cluster_runtime(policy, "onprem", manifests, inventory)
    assert onprem.pools["h200-serve"].taints == ((SERVING_TAINT_KEY, "h200-serve", "NoSchedule"),)
    assert set(onprem.agents) == {"gpu-operator-operands", "nfd-worker", "dra-kubelet-plugin"}
    cloud = cluster_runtime(policy, "cloud", manifests, inventory)
    assert cloud.pools["l4-dev"].provisioning == "static"
    assert cloud.pools["l4-dev"].admitted == ("nvidia.com/gpu.shared",)
    assert cloud.pools["h100-burst"].provisioning == "dynamic"
    assert ("search-serving", "query-rewrite") in cloud.scaled & cloud.scrapers
    assert cloud.waves["namespaces"] < cloud.waves["admission"]


# -- blocker 1: node agents and the serving taint (OPS001) -----------------------------------------

def test_agents_tolerate_serving_taint_in_values() -> None:
    policy = demo()
    for cluster in ("onprem", "cloud"):
        values = gpu_operator_values(policy, cluster)
        for tol in (values["daemonsets"]["tolerations"], values["node-feature-discovery"]["worker"]["tolerations"]):
            assert tolerates(tol, SERVING_TAINT_KEY, "any-pool", "NoSchedule")
            assert tolerates(tol, "nvidia.com/gpu", "", "NoSchedule")  # the chart default is kept
    assert tolerates(dra_driver_values(policy, "onprem")["kubeletPlugin"]["tolerations"], SERVING_TAINT_KEY, "x",
                     "NoSchedule")


@pytest.mark.parametrize(("cluster", "app", "path"), [
    ("onprem", "gpu-operator-chart", ("daemonsets",)),
    ("cloud", "gpu-operator-chart", ("node-feature-discovery",)),
    ("onprem", "dra-driver-chart", ("kubeletPlugin", "tolerations")),
])
def test_ops001_untolerated_serving_taint(rendered: tuple[Policy, list[Manifest], Inventory], cluster: str,
                                          app: str, path: tuple[str, ...]) -> None:
    policy, manifests, _ = rendered

    def drop(obj: dict[str, Any]) -> None:
        parent = _values(obj)
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]

    diags = _ops(policy, _changed(manifests, _app(cluster, app), drop))
    assert set(codes(diags)) == {"OPS001"}
    assert "serve" in find(diags, "OPS001").message


# -- blocker 2: the DCGM exporter's DRA mode without RBAC (OPS002) ---------------------------------

def test_dcgm_exporter_dra_mode_off() -> None:
    values = gpu_operator_values(demo(), "onprem")
    assert "env" not in values["dcgmExporter"] and values["dcgmExporter"]["enablePodLabels"] is True


def test_ops002_dra_mode_needs_resourceslices(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered

    def dra_mode(obj: dict[str, Any]) -> None:
        _values(obj)["dcgmExporter"]["env"] = [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]

    broken = _changed(manifests, _app("onprem", "gpu-operator-chart"), dra_mode)
    assert "resourceslices" in find(_ops(policy, broken), "OPS002").message
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "slices"},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "slices"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "slices"},
               "subjects": [{"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}]}
    granted = broken + [Manifest("onprem", "gpu-operator", role), Manifest("onprem", "gpu-operator", binding)]
    assert "OPS002" not in codes(_ops(policy, granted))
    elsewhere = copy.deepcopy(binding)  # the same name in another namespace is another ServiceAccount
    elsewhere["subjects"][0]["namespace"] = "monitoring"
    wrong = broken + [Manifest("onprem", "gpu-operator", role), Manifest("onprem", "gpu-operator", elsewhere)]
    assert "OPS002" in codes(_ops(policy, wrong))


# -- blocker 3 and major 7: Karpenter (OPS003, OPS007) ---------------------------------------------

def _nodepool(name: str) -> Callable[[Manifest], bool]:
    return lambda m: m.kind == "NodePool" and m.name == name


def test_ops003_dynamic_pool_for_shared_gpus(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered

    def dynamic(obj: dict[str, Any]) -> None:
        del obj["spec"]["replicas"]
        obj["spec"]["limits"] = {"nvidia.com/gpu": 24, "nvidia.com/gpu.shared": 96}

    diag = find(_ops(policy, _changed(manifests, _nodepool("l4-dev"), dynamic)), "OPS003")
    assert "nvidia.com/gpu.shared" in diag.message and "l4-dev" in diag.message


def test_ops003_missing_nodepool(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered
    kept = [m for m in manifests if not _nodepool("h100-burst")(m)]
    assert "no NodePool" in find(_ops(policy, kept), "OPS003").message


@pytest.mark.parametrize("edit", ["expire", "budgets"])
def test_ops007_karpenter_disrupts_training(rendered: tuple[Policy, list[Manifest], Inventory], edit: str) -> None:
    policy, manifests, _ = rendered

    def change(obj: dict[str, Any]) -> None:
        if edit == "expire":
            del obj["spec"]["template"]["spec"]["expireAfter"]
        else:
            del obj["spec"]["disruption"]["budgets"]

    diags = _ops(policy, _changed(manifests, _nodepool("h100-burst"), change))
    assert codes(diags) == ["OPS007"]


# -- blocker 4: MIG + DRA ordering (OPS010) --------------------------------------------------------

def test_kubelet_plugin_waits_for_mig_manager() -> None:
    values = dra_driver_values(demo(), "onprem")
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = [{e["key"] for e in t["matchExpressions"]} for t in terms["nodeSelectorTerms"]]
    assert {"nvidia.com/mig.config.state"} <= keys[1] and {"nvidia.com/mig.config"} <= keys[0]


def test_ops010_plugin_with_default_affinity(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered
    diags = _ops(policy, _changed(manifests, _app("onprem", "dra-driver-chart"),
                                  lambda o: _values(o)["kubeletPlugin"].pop("affinity")))
    assert codes(diags) == ["OPS010"]


# -- OPS004: namespaces before the objects in them -------------------------------------------------

def test_ops004_namespaces_in_the_same_wave(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, inventory = rendered

    def same_wave(obj: dict[str, Any]) -> None:
        obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "-3"

    diags = _ops(policy, _changed(manifests, _app("onprem", "namespaces"), same_wave), inventory)
    assert set(codes(diags)) == {"OPS004"}
    assert any("rolebinding.nlp-train" in d.message for d in diags)
    assert any("resourceclaimtemplate.nlp-train" in d.message for d in diags)


# -- major 9: a scraper for the autoscaler's metric (OPS009) ---------------------------------------

def test_ops009_autoscaled_without_scraper(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered
    kept = [m for m in manifests if m.kind != "PodMonitor"]
    diag = find(_ops(policy, kept), "OPS009")
    assert "search-serving/query-rewrite" in diag.message


def test_keda_reports_empty_queries(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    _, manifests, _ = rendered
    so = next(m for m in manifests if m.kind == "ScaledObject")
    assert so.obj["spec"]["triggers"][0]["metadata"]["ignoreNullValues"] == "false"


# -- policy-scope OPS rules (compiler.validate.ops) ------------------------------------------------

def test_ops005_idle_mig_class(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "class: a100-80gb-mig-2g.20gb", "class: a100-80gb-mig-1g.10gb")
    mutate(root, "teams/vision.yaml", "    - cluster: onprem\n      class: a100-80gb-mig-1g.10gb\n      guaranteed: 32\n"
           "      lend: 24\n", "")
    _, diags = policy_at(root)
    d = find(diags, "OPS005")
    assert d.severity is Severity.WARNING and "a100-80gb-mig-2g.20gb" in d.message and "32" in d.message


def test_ops006_backstop_warn(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "backstop: Deny", "backstop: Warn")
    _, diags = policy_at(root)
    assert find(diags, "OPS006").severity is Severity.WARNING


def test_ops006_the_labels_the_backstop_trusts_only_warn(tmp_path: Path) -> None:
    """The backstop exempts namespaces by their gpupolicy.dev/team label; with the label guard in
    Warn (its default) anyone who may label a namespace can set one and take GPUs outside every
    queue: OPS006 says so, on the admission block, until namespaceLabels is Deny (the demo's)."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "      namespaceLabels: Deny", "      namespaceLabels: Warn")
    _, diags = policy_at(root)
    d = find(diags, "OPS006")
    assert d.severity is Severity.WARNING and "namespaceLabels is 'Warn'" in d.message and "onprem, cloud" in d.message
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "  admission:")
    mutate(root, "fleet.yaml", "      namespaceLabels: Warn", "      namespaceLabels: Deny")
    assert "OPS006" not in codes(policy_at(root)[1])


def test_ops008_rwx_cache_without_storage_class(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/search.yaml", "        storageClass: efs-sc  #", "        #")
    _, diags = policy_at(root)
    d = find(diags, "OPS008")
    assert d.severity is Severity.ERROR and "query-rewrite" in d.message
    mutate(root, "teams/search.yaml", "size: 200Gi", "size: 200Gi\n        accessMode: ReadWriteOnce")
    mutate(root, "teams/search.yaml", "replicas: {min: 2, max: 6}", "replicas: {min: 1, max: 1}")
    assert "OPS008" not in codes(policy_at(root)[1])


def test_ops011_a_dra_cluster_gets_its_driver_one_way(tmp_path: Path) -> None:
    """On onprem (DRA) a100-mig declares 580, which is not the GPU Operator's driver: with
    h100-train declaring nothing the Operator's driver would run there and not on a100-mig, and
    the DRA kubelet plugin has one driver root for both (compiler.policy.drivers). The error is
    located on the first pool that brings its own; declaring it on every pool is clean, and the
    plugin then reads the host's driver at /."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", '          driver: "580"  # the nodes\' image brings it', "          # no driver")
    policy, diags = policy_at(root)
    d = find(diags, "OPS011")
    assert d.severity is Severity.ERROR and d.location is not None
    assert (d.location.file, d.location.line) == ("policies/fleet.yaml", line_of(root, "fleet.yaml", 'driver: "580"', 1))
    assert "pools a100-mig, h200-serve bring their own driver" in d.message and "pools h100-train take" in d.message
    assert codes(policy_at(copy_demo(tmp_path / "demo"))[1]) == []
    assert dra_driver_values(demo(), "onprem")["nvidiaDriverRoot"] == "/"


def test_ops011_a_device_plugin_cluster_may_mix(tmp_path: Path) -> None:
    """The same mix on a device-plugin cluster is fine: the pool that brings its own driver is
    labelled nvidia.com/gpu.deploy.driver=false (the Operator's driver DaemonSet skips it), the
    others keep the Operator's driver, and the report lists the host driver as a prerequisite."""
    from compiler.policy.node_contract import pool_contracts
    from compiler.report.runtime import prerequisites

    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "      dra: true\n", "      dra: false\n")
    mutate(root, "fleet.yaml", '          driver: "580"  # the nodes\' image brings it', "          # no driver")
    mutate(root, "fleet.yaml", '          driver: "580"\n          serving: true', "          serving: true")
    policy, diags = policy_at(root)
    assert policy is not None and "OPS011" not in codes(diags)
    labels = {pc.pool: pc.labels.get("nvidia.com/gpu.deploy.driver") for pc in pool_contracts(policy, "onprem")}
    assert labels == {"a100-mig": "false", "h100-train": None, "h200-serve": None}
    assert "driver" not in gpu_operator_values(policy, "onprem")  # the chart's driver, on for the others
    pre = prerequisites(policy, "onprem")
    assert pre[0] == "the GPU driver (`580`) on the nodes of pools `a100-mig`: the GPU Operator installs none there"


# -- minors ------------------------------------------------------------------------------------------

def test_namespaces_and_caches_are_never_pruned(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    _, manifests, _ = rendered
    kept = [m for m in manifests if m.kind in ("Namespace", "PersistentVolumeClaim")]
    assert kept and all(m.obj["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false"
                        for m in kept)


def test_training_role_reads_claim_templates_on_dra(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    _, manifests, _ = rendered
    roles = {m.cluster: m.obj for m in manifests if m.kind == "Role" and m.name == "gpupolicy-training"}
    dra = [r for r in roles["onprem"]["rules"] if r["apiGroups"] == ["resource.k8s.io"]]
    assert dra and "resourceclaimtemplates" in dra[0]["resources"] and "list" in dra[0]["verbs"]
    assert not [r for r in roles["cloud"]["rules"] if r["apiGroups"] == ["resource.k8s.io"]]


def test_report_states_what_runs(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    from compiler.report.runtime import prerequisites, runtime_section

    policy = rendered[0]
    text = "\n".join(runtime_section(policy))
    assert "static pools (fixed `replicas`) `l4-dev`" in text and "mig.config.state=success" in text
    cloud = " ".join(prerequisites(policy, "cloud"))
    assert "EC2NodeClass" in cloud and "StaticCapacity=true" in cloud and "PodMonitor" in cloud
    onprem = prerequisites(policy, "onprem")
    assert "Body-Based Routing" in " ".join(onprem)
    # what the serving objects name and nothing renders: the hub token's Secret, the cache's class
    assert "Secret `hf-token` in `nlp-serving` (`nlp/chat`'s hub token, key `token`): gpupolicy references it, " \
        "never its value" in onprem
    assert "StorageClass `fast-nvme` (model cache of `nlp/chat`)" in onprem
    assert onprem[0].startswith("the GPU driver (`580`) on the nodes of pools `a100-mig`, `h100-train`, `h200-serve`")
    assert "StorageClass `efs-sc` (model cache of `search/query-rewrite`)" in prerequisites(policy, "cloud")


def test_ops001_flavor_without_the_pool_toleration(rendered: tuple[Policy, list[Manifest], Inventory]) -> None:
    policy, manifests, _ = rendered

    def to_serving(obj: dict[str, Any]) -> None:  # a flavor reaching a tainted (serving) pool
        obj["spec"]["nodeLabels"]["gpupolicy.dev/pool"] = "l40s-serve"

    diag = find(_ops(policy, _changed(manifests, lambda m: m.kind == "ResourceFlavor" and m.name == "h100-80gb"
                                      and m.cluster == "cloud", to_serving)), "OPS001")
    assert "ResourceFlavor h100-80gb" in diag.message
