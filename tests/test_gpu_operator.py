"""GPU Operator lowering: device-plugin configs per cut, the custom mig-parted config, the chart
values rendered into the ClusterPolicy the chart would create, and the CRD check of all of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gpu_helpers import build, chart_defaults, demo, verify_ok, write_fleet
from helpers import copy_demo, mutate, policy_at

from compiler.catalog import builtin_catalog
from compiler.lower.gpu_operator import (
    DEVICE_PLUGIN_CONFIGMAP,
    MIG_PARTED_CONFIGMAP,
    SHARING_DIGEST_ENV,
    gpu_operator_values,
    lower_gpu_operator,
    mig_parted_config,
    sharing_digest,
)
from compiler.lower.gpu_operator_chart import ChartValuesError, render_cluster_policy
from compiler.mig import check_pool_layout
from compiler.model.manifest import Manifest
from compiler.policy.classes import device_plugin_resource
from compiler.policy.drivers import driver_plan
from compiler.policy.graph import Policy
from compiler.policy.node_contract import pool_contracts

FULL = "version: v1\nflags:\n  migStrategy: none\n"
MIG = "version: v1\nflags:\n  migStrategy: mixed\n"


def configmaps(policy: Policy, cluster: str) -> dict[str, dict[str, Any]]:
    return {m.name: m.obj for m in lower_gpu_operator(policy, cluster)}


def plugin_data(policy: Policy, cluster: str) -> dict[str, str]:
    cms = configmaps(policy, cluster)
    return cms[DEVICE_PLUGIN_CONFIGMAP]["data"] if DEVICE_PLUGIN_CONFIGMAP in cms else {}


def cluster_policy(policy: Policy, cluster: str) -> dict[str, Any]:
    cp = render_cluster_policy(chart_defaults(), gpu_operator_values(policy, cluster))
    assert cp is not None
    return cp


def check_everything(policy: Policy) -> None:
    """ConfigMaps and the ClusterPolicy the chart renders from our values pass verify (CRD + CEL)."""
    manifests: list[Manifest] = []
    for c in policy.clusters:
        manifests += lower_gpu_operator(policy, c)
        manifests.append(Manifest(c, "gpu-operator", cluster_policy(policy, c)))
    verify_ok(manifests, {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters})


# --- the demo: full cards and time-slicing on cloud (device plugin), MIG on onprem (DRA) --------

def test_demo_cloud_device_plugin_configmap() -> None:
    p = demo()
    cm = configmaps(p, "cloud")[DEVICE_PLUGIN_CONFIGMAP]
    assert cm["metadata"]["namespace"] == "gpu-operator"
    assert cm["data"] == {
        "h100-burst": FULL,
        "l4-dev": (
            "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
            "    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
        ),
        "l40s-serve": FULL,
    }
    assert MIG_PARTED_CONFIGMAP not in configmaps(p, "cloud")  # no per-device MIG layout


def test_demo_values() -> None:
    p = demo()
    regex = ["^gpupolicy\\.dev/data-class$", "^gpupolicy\\.dev/model$", "^gpupolicy\\.dev/team$",
             "^kueue\\.x-k8s\\.io/cluster-queue-name$", "^kueue\\.x-k8s\\.io/local-queue-name$",
             "^kueue\\.x-k8s\\.io/queue-name$"]
    # node agents: the chart defaults plus the serving taint (both clusters have serving pools)
    serving = {"key": "gpupolicy.dev/serving", "operator": "Exists", "effect": "NoSchedule"}
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    control_plane = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                     "effect": "NoSchedule"}
    agents, nfd = [gpu, serving], [control_plane, gpu, serving]
    assert gpu_operator_values(p, "cloud") == {
        "devicePlugin": {"config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": ""},
                         "env": [{"name": SHARING_DIGEST_ENV, "value": sharing_digest(p, "cloud")}]},
        "dcgmExporter": {"enablePodLabels": True, "podLabelAllowlistRegex": regex},
        "daemonsets": {"tolerations": agents},
        "node-feature-discovery": {"worker": {"tolerations": nfd}},
    }
    # DRA cluster: no device plugin; MIG Manager keeps the MIG geometry (named layout: generated
    # config); the declared 580 branch differs from the chart's 595 driver -> host drivers.
    assert gpu_operator_values(p, "onprem") == {
        "devicePlugin": {"enabled": False},
        "mig": {"strategy": "mixed"},
        # the exporter's DRA mode stays off: its ServiceAccount cannot list ResourceSlices (OPS002)
        "dcgmExporter": {"enablePodLabels": True, "podLabelAllowlistRegex": regex},
        "driver": {"enabled": False},
        "daemonsets": {"tolerations": agents},
        "node-feature-discovery": {"worker": {"tolerations": nfd}},
    }
    assert configmaps(p, "onprem") == {}  # sharing on DRA is per claim; named layout needs no config


def test_demo_cluster_policies_pass_crd() -> None:
    p = demo()
    check_everything(p)
    spec = cluster_policy(p, "cloud")["spec"]
    assert spec["devicePlugin"]["config"] == {"name": DEVICE_PLUGIN_CONFIGMAP, "default": ""}
    assert {"name": SHARING_DIGEST_ENV, "value": sharing_digest(p, "cloud")} in spec["devicePlugin"]["env"]
    assert spec["dcgmExporter"]["enablePodLabels"] is True
    onprem = cluster_policy(p, "onprem")["spec"]
    assert onprem["devicePlugin"]["enabled"] is False and onprem["mig"] == {"strategy": "mixed"}
    assert onprem["migManager"]["enabled"] is True and onprem["driver"]["enabled"] is False


def test_changed_sharing_rolls_the_device_plugin(tmp_path: Path) -> None:
    """The Operator does not watch the ConfigMap: its digest in the device plugin's env changes
    the DaemonSet's pod template, so Kubernetes restarts the plugin with the new config."""
    before = sharing_digest(demo(), "cloud")
    assert len(before) == 16 and before == sharing_digest(demo(), "cloud")
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "guaranteed: 8", "guaranteed: 4")  # not a sharing setting
    p, _ = policy_at(root)
    assert p is not None and sharing_digest(p, "cloud") == before
    mutate(root, "fleet.yaml", "replicas: 4", "replicas: 8")
    p, _ = policy_at(root)
    assert p is not None and sharing_digest(p, "cloud") != before
    check_everything(p)


# --- small inline fleets, one cut each -------------------------------------------------------

MIG_NAMED = """
- name: a100
  model: a100-80gb
  nodes: 2
  gpusPerNode: 8
  cut: {mode: mig, layout: all-1g.10gb}
- name: h100
  model: h100-80gb
  nodes: 1
  gpusPerNode: 8
  cut: {mode: full}
"""

MIG_DEVICES = """
- name: a100-mixed
  model: a100-80gb
  nodes: 2
  gpusPerNode: 8
  cut:
    mode: mig
    devices:
      - {gpus: 4, profiles: {3g.40gb: 2}}
      - {gpus: 4, profiles: {1g.10gb: 3, 1g.10gb+me: 1, 2g.20gb: 1}}
- name: h100-bal
  model: h100-80gb
  nodes: 1
  gpusPerNode: 4
  cut: {mode: mig, layout: all-balanced}
- name: a100-bal
  model: a100-40gb
  nodes: 1
  gpusPerNode: 8
  cut: {mode: mig, layout: all-balanced}
- name: h100-full
  model: h100-80gb
  nodes: 1
  gpusPerNode: 8
  cut: {mode: full}
- name: l4
  model: l4
  nodes: 1
  gpusPerNode: 4
  cut: {mode: full}
"""

MPS = """
- name: l40s-mps
  model: l40s
  nodes: 3
  gpusPerNode: 4
  cut: {mode: mps, replicas: 4}
- name: l4-ts
  model: l4
  nodes: 1
  gpusPerNode: 2
  cut: {mode: timeslicing, replicas: 8, renameByDefault: false, failRequestsGreaterThanOne: false}
"""


def test_mig_named_layout(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, MIG_NAMED))
    assert plugin_data(p, "c1") == {"a100": MIG, "h100": FULL}
    assert mig_parted_config(p, "c1") is None  # MIG Manager generates all-1g.10gb per node
    values = gpu_operator_values(p, "c1")
    assert values["mig"] == {"strategy": "mixed"} and "migManager" not in values
    assert p.classes["c1"]["a100-80gb-mig-1g.10gb"].resource == "nvidia.com/mig-1g.10gb"
    assert p.classes["c1"]["a100-80gb-mig-1g.10gb"].capacity == 2 * 8 * 7
    check_everything(p)


def test_mig_devices_custom_config(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, MIG_DEVICES, provisioner="none"))
    values = gpu_operator_values(p, "c1")
    assert values["migManager"] == {"config": {"name": MIG_PARTED_CONFIGMAP, "default": "all-disabled"}}
    cm = configmaps(p, "c1")[MIG_PARTED_CONFIGMAP]
    assert list(cm["data"]) == ["config.yaml"]
    config = yaml.safe_load(cm["data"]["config.yaml"])
    assert config["version"] == "v1"
    configs = config["mig-configs"]
    assert list(configs) == ["all-disabled", "all-balanced", "gpupolicy-a100-mixed"]
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    a100_ids = list(builtin_catalog().get("a100-80gb").pci_device_ids)  # type: ignore[union-attr]
    assert configs["gpupolicy-a100-mixed"] == [
        {"device-filter": a100_ids, "devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"device-filter": a100_ids, "devices": [4, 5, 6, 7], "mig-enabled": True,
         "mig-devices": {"1g.10gb": 3, "1g.10gb+me": 1, "2g.20gb": 1}},
    ]
    # all-balanced is written out for both models, told apart by device-filter
    assert [e["device-filter"][0] for e in configs["all-balanced"]] == ["0x20B010DE", "0x233010DE"]
    assert plugin_data(p, "c1")["a100-mixed"] == MIG
    assert p.classes["c1"]["a100-80gb-mig-1g.10gb.me"].resource == "nvidia.com/mig-1g.10gb.me"
    check_everything(p)


def test_custom_config_layouts_are_valid(tmp_path: Path) -> None:
    """Re-parse the emitted config and check every layout in it with the MIG geometry."""
    p = build(write_fleet(tmp_path, MIG_DEVICES))
    text = configmaps(p, "c1")[MIG_PARTED_CONFIGMAP]["data"]["config.yaml"]
    catalog = builtin_catalog()
    checked = 0
    for name, entries in yaml.safe_load(text)["mig-configs"].items():
        per_model: dict[str, dict[int, dict[str, int]]] = {}
        for e in entries:
            assert set(e) <= {"device-filter", "devices", "mig-enabled", "mig-devices"}
            assert e["devices"] == "all" or all(isinstance(i, int) for i in e["devices"])
            if not e["mig-enabled"]:
                assert "mig-devices" not in e and "device-filter" not in e
                continue
            model = catalog.by_pci_id(e["device-filter"][0])
            assert model is not None and all(catalog.by_pci_id(i) is model for i in e["device-filter"])
            indices = range(8) if e["devices"] == "all" else e["devices"]
            for i in indices:
                per_model.setdefault(model.id, {})[i] = e["mig-devices"]
        for model_id, devices in per_model.items():
            layout = [devices[i] for i in sorted(devices)]
            assert check_pool_layout(catalog.get(model_id), layout, "mixed") == [], (name, model_id)  # type: ignore[arg-type]
            checked += 1
    assert checked == 3  # gpupolicy-a100-mixed, all-balanced x 2 models


def test_every_labelled_layout_is_in_custom_config(tmp_path: Path) -> None:
    from compiler.policy.node_contract import pool_contracts

    p = build(write_fleet(tmp_path, MIG_DEVICES))
    configs = mig_parted_config(p, "c1")
    assert configs is not None
    layouts = {pc.mig_layout for pc in pool_contracts(p, "c1")} - {None}
    assert layouts == {"all-disabled", "all-balanced", "gpupolicy-a100-mixed"}  # l4 is not MIG-capable
    assert layouts <= set(configs["mig-configs"])


def test_mps_and_unrenamed_time_slicing(tmp_path: Path) -> None:
    p = build(write_fleet(tmp_path, MPS))
    data = {k: yaml.safe_load(v) for k, v in plugin_data(p, "c1").items()}
    assert data["l40s-mps"] == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {"mps": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }
    assert data["l4-ts"]["sharing"] == {"timeSlicing": {
        "renameByDefault": False, "failRequestsGreaterThanOne": False,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 8}]}}
    cls = p.classes["c1"]
    assert (cls["l40s-mps4"].resource, cls["l40s-mps4"].capacity) == ("nvidia.com/gpu.shared", 3 * 4 * 4)
    assert (cls["l4-ts8"].resource, cls["l4-ts8"].capacity) == ("nvidia.com/gpu", 16)
    assert "mig" not in gpu_operator_values(p, "c1")
    check_everything(p)


def test_device_plugin_configs_follow_the_plugin_rules(tmp_path: Path) -> None:
    """api/config/v1: version v1, sharing is timeSlicing xor mps, resources non-empty, replicas >= 2."""
    for pools in (MIG_NAMED, MIG_DEVICES, MPS):
        p = build(write_fleet(tmp_path / str(hash(pools)), pools))
        for key, text in plugin_data(p, "c1").items():
            cfg = yaml.safe_load(text)
            assert cfg["version"] == "v1" and cfg["flags"]["migStrategy"] in ("none", "mixed")
            sharing = cfg.get("sharing", {})
            assert len(sharing) <= 1
            for body in sharing.values():
                assert body["resources"] and all(r["replicas"] >= 2 for r in body["resources"])


# --- driver settings ------------------------------------------------------------------------

@pytest.mark.parametrize(("drivers", "expected", "host"), [
    ((None, None), None, ()),
    (("580.95.05", None), {"version": "580.95.05"}, ()),
    (("580.95.05", "580"), {"version": "580.95.05"}, ()),
    (("595", None), None, ()),  # the chart's own branch
    (("595.91.07", None), {"version": "595.91.07"}, ()),  # the chart's own version, pinned: stays pinned
    (("580", None), None, ("p0",)),  # p0's nodes bring 580; p1 keeps the Operator's driver
    (("580", "580"), {"enabled": False}, ("p0", "p1")),
    (("580.95.05", "570.1.2"), {"version": "580.95.05"}, ("p1",)),  # one each: the newest
    (("580.95.05", "580.95.05", "570.1.2"), {"version": "580.95.05"}, ("p2",)),
    (("570.1.2", "570.1.2", "580.95.05"), {"version": "570.1.2"}, ("p2",)),  # the one more pools declare
])
def test_driver_values(tmp_path: Path, drivers: tuple[str | None, ...], expected: Any, host: tuple[str, ...]) -> None:
    """compiler.policy.drivers: the Operator's one driver meets as many pools as it can; a pool it
    does not meet brings its own, labelled nvidia.com/gpu.deploy.driver=false in the node contract
    while another pool takes the Operator's (which the Operator honours), and the Operator's
    driver is off only when no pool takes it. Before, one pool's '580' turned it off for all."""
    pools = ""
    for i, d in enumerate(drivers):
        pools += f"- name: p{i}\n  model: h100-80gb\n  nodes: 1\n  gpusPerNode: 8\n  cut: {{mode: full}}\n"
        if d is not None:
            pools += f"  driver: '{d}'\n"
    p = build(write_fleet(tmp_path, pools))
    assert gpu_operator_values(p, "c1").get("driver") == expected
    plan = driver_plan(p, "c1")
    assert plan.host_pools == host
    labelled = tuple(pc.pool for pc in pool_contracts(p, "c1") if pc.labels.get("nvidia.com/gpu.deploy.driver") == "false")
    assert labelled == (host if plan.operator_pools else ())
    check_everything(p)


def test_karpenter_mig_reboots(tmp_path: Path) -> None:
    pools = MIG_NAMED.replace("cut: {mode: mig, layout: all-1g.10gb}",
                              "cut: {mode: mig, layout: all-1g.10gb}\n  karpenter: {nodeClass: gpu}")
    pools = pools.replace("cut: {mode: full}", "cut: {mode: full}\n  karpenter: {nodeClass: gpu}")
    p = build(write_fleet(tmp_path, pools, provisioner="karpenter"))
    assert gpu_operator_values(p, "c1")["migManager"] == {"env": [{"name": "WITH_REBOOT", "value": "true"}]}
    check_everything(p)


# --- the chart model is strict ------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    {"devicePlugin": {"confg": {"name": "x"}}},  # typo
    {"devicePlugin": {"config": {"default": "x"}}},  # default without name: the template ignores it
    {"driver": {"nvidiaDriverCRD": {"enabled": True}, "version": "580.95.05"}},  # version unused with the CRD
    {"vgpuManager": {"enabled": True}},  # an operand this model does not cover
    {"mig": {"strategy": "mixed", "extra": 1}},
])
def test_chart_model_rejects_unread_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ChartValuesError):
        render_cluster_policy(chart_defaults(), bad)


def test_chart_model_renders_defaults() -> None:
    cp = render_cluster_policy(chart_defaults(), {})
    assert cp is not None and cp["metadata"]["name"] == "cluster-policy"
    assert cp["spec"]["mig"] == {"strategy": "single"}  # the chart's default
    assert cp["spec"]["driver"]["version"] == "595.91.07"
    assert render_cluster_policy(chart_defaults(), {"clusterPolicy": {"deployCR": False}}) is None


def test_mig_resource_names_follow_the_device_plugin() -> None:
    # k8s-device-plugin internal/rm/rm.go: "mig-" + profile, "+" -> "."
    assert device_plugin_resource("mig", profile="1g.10gb+me", rename=True) == "nvidia.com/mig-1g.10gb.me"
    assert device_plugin_resource("mig", profile="3g.40gb", rename=True) == "nvidia.com/mig-3g.40gb"
    assert device_plugin_resource("timeslicing", profile=None, rename=True) == "nvidia.com/gpu.shared"
    assert device_plugin_resource("mps", profile=None, rename=False) == "nvidia.com/gpu"


def test_dra_cluster(tmp_path: Path) -> None:
    """DRA: no device plugin (and no config for it); MIG Manager still owns the MIG layout."""
    from compiler.policy.node_contract import pool_contracts

    pools = MIG_DEVICES + MPS.split("- name: l4-ts")[0]
    p = build(write_fleet(tmp_path, pools, kube="1.34", dra=True))
    values = gpu_operator_values(p, "c1")
    assert values["devicePlugin"] == {"enabled": False} and values["mig"] == {"strategy": "mixed"}
    assert values["migManager"]["config"]["name"] == MIG_PARTED_CONFIGMAP
    assert sorted(configmaps(p, "c1")) == [MIG_PARTED_CONFIGMAP]
    for pc in pool_contracts(p, "c1"):
        assert "nvidia.com/device-plugin.config" not in pc.labels and pc.resources == {}
        assert "nvidia.com/gpu.sharing-strategy" not in pc.gfd_labels
    check_everything(p)


def test_custom_layout_names_fit_a_label_value() -> None:
    from compiler.policy.node_contract import custom_layout_name

    assert custom_layout_name("a100-mixed") == "gpupolicy-a100-mixed"
    long_a, long_b = "a" * 60 + "-x1", "a" * 60 + "-x2"
    assert len(custom_layout_name(long_a)) <= 63 and custom_layout_name(long_a) != custom_layout_name(long_b)
