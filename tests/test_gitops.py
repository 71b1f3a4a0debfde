"""ArgoCD delivery: app-of-apps per cluster, projects, waves, sync options, chart values, reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import compile_dir, copy_demo, find, line_of, mutate

from compiler.lower.argocd import lower_argocd
from compiler.lower.charts import dra_driver_values
from compiler.lower.common import obj
from compiler.lower.gpu_operator import gpu_operator_values
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.pipeline.run import Result
from compiler.policy.kueue_manager import manager_config


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Result:
    res = compile_dir(copy_demo(tmp_path_factory.mktemp("gitops")))
    assert res.ok, res.diagnostics
    return res


def argo(res: Result, kind: str | None = None) -> dict[str, Manifest]:
    return {m.name: m for m in res.manifests if m.cluster == "argocd" and kind in (None, m.kind)}


def spec(res: Result, name: str, kind: str = "Application") -> dict[str, Any]:
    return argo(res, kind)[name].obj["spec"]


def wave(m: Manifest) -> int:
    return int(m.obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])


def test_one_application_per_cluster_and_component_with_files(demo: Result) -> None:
    components = {(m.cluster, m.component) for m in demo.manifests if m.cluster != "argocd"}
    apps = {(m.obj["metadata"]["labels"]["gpupolicy.dev/cluster"], m.obj["metadata"]["labels"]["gpupolicy.dev/component"])
            for m in argo(demo, "Application").values() if m.component != "bootstrap"
            and not m.name.endswith("-chart")}
    assert apps == components
    for cluster, component in components:
        s = spec(demo, f"gpupolicy-{cluster}-{component}")
        assert s["source"]["path"] == f"out/{cluster}/{component}"
        assert s["project"] == f"gpupolicy-{cluster}"
    assert {m.relpath for m in demo.manifests if m.cluster == "argocd" and m.component == "bootstrap"} == {
        "argocd/bootstrap/appproject.argocd.gpupolicy.yaml",
        "argocd/bootstrap/application.argocd.gpupolicy-cloud.yaml",
        "argocd/bootstrap/application.argocd.gpupolicy-onprem.yaml",
    }


def test_roots_sync_their_cluster_folder_without_server_side_apply(demo: Result) -> None:
    for cluster in ("onprem", "cloud"):
        s = spec(demo, f"gpupolicy-{cluster}")
        assert s["source"]["path"] == f"out/argocd/{cluster}"
        assert s["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
        assert s["project"] == "gpupolicy"
        assert "ServerSideApply=true" not in s["syncPolicy"]["syncOptions"]  # argo-cd #13320: waves ignored
    root = spec(demo, "gpupolicy", "AppProject")
    assert root["namespaceResourceWhitelist"] == [{"group": "argoproj.io", "kind": "AppProject"},
                                                  {"group": "argoproj.io", "kind": "Application"}]
    assert root["clusterResourceWhitelist"] == []


def test_waves_order_charts_config_queues_workloads(demo: Result) -> None:
    projects = [m for m in argo(demo, "AppProject").values() if m.component == "onprem"]
    assert sorted(wave(m) for m in projects) == [-5, -5]
    a = argo(demo, "Application")
    w = {name: wave(m) for name, m in a.items() if m.component == "onprem"}
    assert w["gpupolicy-onprem-kueue-chart"] <= w["gpupolicy-onprem-namespaces"] < w["gpupolicy-onprem-kueue"]
    # Namespaces before every Application with objects in them (OPS004)
    assert w["gpupolicy-onprem-namespaces"] < min(w["gpupolicy-onprem-admission"], w["gpupolicy-onprem-dra"])
    assert w["gpupolicy-onprem-dra-driver-chart"] < w["gpupolicy-onprem-dra"]
    assert w["gpupolicy-onprem-kueue"] < w["gpupolicy-onprem-serving"]
    assert wave(a["gpupolicy-cloud-gpu-operator-chart"]) < wave(a["gpupolicy-cloud-gpu-operator"])


def test_sync_options(demo: Result) -> None:
    for name, m in argo(demo, "Application").items():
        if m.component == "bootstrap":
            continue
        s = m.obj["spec"]
        opts = s["syncPolicy"]["syncOptions"]
        assert s["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
        assert "ServerSideApply=true" in opts
        if name.endswith("-chart"):
            assert "CreateNamespace=true" in opts and "finalizers" not in m.obj["metadata"]
        else:
            assert "CreateNamespace=false" in opts and "PruneLast=true" in opts
    assert "SkipDryRunOnMissingResource=true" in spec(demo, "gpupolicy-onprem-kueue")["syncPolicy"]["syncOptions"]
    assert "SkipDryRunOnMissingResource=true" not in spec(demo, "gpupolicy-onprem-namespaces")["syncPolicy"]["syncOptions"]
    assert "finalizers" not in argo(demo)["gpupolicy-onprem-namespaces"].obj["metadata"]
    assert argo(demo)["gpupolicy-onprem-kueue"].obj["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]


def test_autoscaled_deployments_ignore_replicas(demo: Result) -> None:
    s = spec(demo, "gpupolicy-cloud-serving")
    assert s["ignoreDifferences"] == [{"group": "apps", "kind": "Deployment", "namespace": "search-serving",
                                       "name": "query-rewrite", "jsonPointers": ["/spec/replicas"]}]
    assert "RespectIgnoreDifferences=true" in s["syncPolicy"]["syncOptions"]
    assert "ignoreDifferences" not in spec(demo, "gpupolicy-onprem-serving")  # chat has no autoscaler


def test_projects_keep_apps_in_their_lane(demo: Result) -> None:
    p = spec(demo, "gpupolicy-cloud", "AppProject")
    servers = {d["server"] for d in p["destinations"]}
    assert servers == {"https://cloud.k8s.acme.example:443"}  # as written, default port kept
    denied = {d["namespace"][1:] for d in p["destinations"] if d["namespace"].startswith("!")}
    assert {"kube-system", "argocd", "karpenter", "kueue-system"} <= denied
    assert "gpu-operator" not in denied  # gpupolicy renders the device-plugin ConfigMap there
    cluster_kinds = {(k["group"], k["kind"]) for k in p["clusterResourceWhitelist"]}
    assert {("", "Namespace"), ("kueue.x-k8s.io", "ClusterQueue"), ("karpenter.sh", "NodePool")} <= cluster_kinds
    assert ("rbac.authorization.k8s.io", "ClusterRoleBinding") not in cluster_kinds
    for m in demo.manifests:
        if m.cluster == "cloud":
            gk = (m.api_version.rsplit("/", 1)[0] if "/" in m.api_version else "", m.kind)
            lst = p["clusterResourceWhitelist"] if m.namespace is None else p["namespaceResourceWhitelist"]
            assert {"group": gk[0], "kind": gk[1]} in lst, m.relpath
    addons = spec(demo, "gpupolicy-onprem-addons", "AppProject")
    assert set(addons["sourceRepos"]) == {"https://helm.ngc.nvidia.com/nvidia", "oci://registry.k8s.io/kueue/charts/kueue",
                                          "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"}


def test_charts_at_pinned_versions_with_generated_values(demo: Result) -> None:
    policy = demo.policy
    assert policy is not None
    kueue = spec(demo, "gpupolicy-onprem-kueue-chart")
    assert kueue["source"]["repoURL"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert kueue["source"]["targetRevision"] == "0.19.2" and kueue["source"]["path"] == "."
    values = kueue["source"]["helm"]["valuesObject"]
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]) == manager_config(policy, "onprem")
    assert values["controllerManager"]["manager"]["image"]["tag"] == "v0.19.2"
    gpu = spec(demo, "gpupolicy-cloud-gpu-operator-chart")
    assert (gpu["source"]["repoURL"], gpu["source"]["chart"], gpu["source"]["targetRevision"]) == (
        "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0")
    assert gpu["source"]["helm"]["valuesObject"] == gpu_operator_values(policy, "cloud")
    assert gpu["syncPolicy"]["managedNamespaceMetadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    dra = spec(demo, "gpupolicy-onprem-dra-driver-chart")
    assert dra["source"]["targetRevision"] == "0.4.1"
    assert dra["source"]["helm"]["valuesObject"] == dra_driver_values(policy, "onprem")
    assert "gpupolicy-cloud-dra-driver-chart" not in argo(demo)  # cloud has dra: false


def test_dra_driver_feature_gates(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "      dra: true\n", "      dra: true\n      featureGates:\n        draDriver: {IMEXDaemonsWithDNSNames: false}\n")
    res = compile_dir(root)
    assert res.policy is not None, res.diagnostics
    values = dra_driver_values(res.policy, "onprem")
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert values["featureGates"] == {"IMEXDaemonsWithDNSNames": False}
    # the onprem pools declare driver 580 (no full version): nodes bring their driver, installed at /
    assert values["nvidiaDriverRoot"] == "/"


def test_components_are_derived_from_the_manifests(demo: Result) -> None:
    policy = demo.policy
    assert policy is not None
    extra = obj("example.com/v1", "Widget", "w", namespace="vision-train")
    out = lower_argocd(policy, Inventory.of([*(m for m in demo.manifests if m.cluster != "argocd"),
                                              Manifest("onprem", "future", extra)]))
    app = next(m for m in out if m.name == "gpupolicy-onprem-future")
    assert wave(app) == 0 and app.obj["spec"]["source"]["path"] == "out/onprem/future"
    project = next(m for m in out if m.name == "gpupolicy-onprem" and m.kind == "AppProject")
    assert {"group": "example.com", "kind": "Widget"} in project.obj["spec"]["namespaceResourceWhitelist"]


def test_reports(demo: Result) -> None:
    patch = yaml.safe_load(demo.out_files["reports/argocd-cm.patch.yaml"])
    lua = patch["data"]["resource.customizations.health.argoproj.io_Application"]
    assert "obj.status.health.status" in lua and "Progressing" in lua
    doc = demo.out_files["reports/argocd-bootstrap.md"].decode()
    for cluster in ("onprem", "cloud"):
        assert f"-f out/argocd/bootstrap/application.argocd.gpupolicy-{cluster}.yaml" in doc
    assert "`keda.sh`" in doc and "`karpenter.sh`" in doc


def test_argocd_objects_verify_against_crds(tmp_path: Path, crds_dir: Path) -> None:
    res = compile_dir(copy_demo(tmp_path), verify=True)
    bad = [d for d in res.diagnostics if d.location and "/argocd/" in d.location.file]
    assert not bad, bad
    assert res.ok, [d for d in res.diagnostics if d.severity.value == "error"]


@pytest.mark.parametrize(("name", "rule"), [("argocd", "GITOPS010"), ("reports", "GITOPS010"),
                                            ("onprem-kueue", "GITOPS010")])
def test_cluster_names_keep_folders_apart(tmp_path: Path, name: str, rule: str) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: cloud\n", f"    - name: {name}\n")
    d = find(compile_dir(root).diagnostics, rule)
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", f"- name: {name}")


def test_long_application_names_warn(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "project: gpupolicy", "project: " + "p" * 50)
    d = find(compile_dir(root).diagnostics, "GITOPS011")
    assert d.severity.value == "warning"
