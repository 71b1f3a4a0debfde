"""DRA: the demo's DRA cluster (onprem) gets capability-selecting DeviceClasses, claim templates and
Kueue mappings, all proven against the devices its pools publish; the device-plugin cluster
(cloud, 1.33) gets none."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from helpers import compile_dir, copy_demo

from compiler.policy.kueue_manager import manager_config
from compiler.report.dra import dra_report
from compiler.verify import verify

H100 = ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu' && "
        "device.attributes['gpu.nvidia.com'].productName in ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe'] && "
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('72Gi')) >= 0")
MIG_3G = ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
          "device.attributes['gpu.nvidia.com'].productName in ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe'] && "
          "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'")


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    res = compile_dir(REPO, verify=False)
    assert res.policy is not None, [d.message for d in res.diagnostics]
    return res


def _dra(res, cluster: str) -> dict[tuple[str, str | None, str], dict]:  # type: ignore[no-untyped-def]
    return {(m.kind, m.namespace, m.name): m.obj for m in res.manifests
            if m.cluster == cluster and m.component == "dra"}


def test_onprem_device_classes(demo) -> None:  # type: ignore[no-untyped-def]
    objs = _dra(demo, "onprem")
    classes = {n: o for (k, _, n), o in objs.items() if k == "DeviceClass"}
    assert sorted(classes) == ["a100-80gb-mig-1g.10gb", "a100-80gb-mig-2g.20gb", "a100-80gb-mig-3g.40gb",
                               "h100-80gb", "h200"]
    assert classes["h100-80gb"]["spec"] == {"selectors": [{"cel": {"expression": H100}}]}
    assert classes["a100-80gb-mig-3g.40gb"]["spec"]["selectors"][0]["cel"]["expression"] == MIG_3G
    assert classes["h200"]["metadata"]["labels"]["gpupolicy.dev/class"] == "h200"
    for o in classes.values():  # capability, never placement; extendedResourceName off on 1.34
        expr = o["spec"]["selectors"][0]["cel"]["expression"]
        assert "node" not in expr and "extendedResourceName" not in o["spec"]


def test_onprem_claim_templates(demo) -> None:  # type: ignore[no-untyped-def]
    objs = _dra(demo, "onprem")
    rcts = sorted((ns, n) for (k, ns, n) in objs if k == "ResourceClaimTemplate")
    assert rcts == [
        ("nlp-train", "h100-80gb-1"), ("nlp-train", "h100-80gb-2"), ("nlp-train", "h100-80gb-4"),
        ("nlp-train", "h100-80gb-8"),
        ("recsys-train", "a100-80gb-mig-3g.40gb-1"), ("recsys-train", "h100-80gb-1"), ("recsys-train", "h100-80gb-2"),
        ("recsys-train", "h100-80gb-4"), ("recsys-train", "h100-80gb-8"),
        ("search-train", "a100-80gb-mig-1g.10gb-1"),
        ("vision-train", "a100-80gb-mig-1g.10gb-1"), ("vision-train", "a100-80gb-mig-2g.20gb-1"),
        ("vision-train", "a100-80gb-mig-3g.40gb-1"),
    ]
    h100_4 = objs[("ResourceClaimTemplate", "nlp-train", "h100-80gb-4")]
    assert h100_4["spec"]["spec"] == {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "h100-80gb", "allocationMode": "ExactCount", "count": 4}}]}}
    assert h100_4["metadata"]["labels"]["gpupolicy.dev/team"] == "nlp"


def test_serving_claims_name_a_generated_class(demo) -> None:  # type: ignore[no-untyped-def]
    classes = {m.name for m in demo.manifests if m.cluster == "onprem" and m.kind == "DeviceClass"}
    serving = [m.obj for m in demo.manifests if m.kind == "ResourceClaimTemplate" and m.component != "dra"]
    assert serving, "the serving pass claims its GPUs through DRA on onprem"
    for o in serving:
        for r in o["spec"]["spec"]["devices"]["requests"]:
            assert r["exactly"]["deviceClassName"] in classes


def test_kueue_mappings_and_report(demo) -> None:  # type: ignore[no-untyped-def]
    onprem = manager_config(demo.policy, "onprem")["resources"]["deviceClassMappings"]
    assert onprem == [
        {"name": "gpupolicy.dev/a100-80gb-mig-1g.10gb", "deviceClassNames": ["a100-80gb-mig-1g.10gb"]},
        {"name": "gpupolicy.dev/a100-80gb-mig-2g.20gb", "deviceClassNames": ["a100-80gb-mig-2g.20gb"]},
        {"name": "gpupolicy.dev/a100-80gb-mig-3g.40gb", "deviceClassNames": ["a100-80gb-mig-3g.40gb"]},
        {"name": "gpupolicy.dev/h100-80gb", "deviceClassNames": ["h100-80gb"]},
    ]  # h200 only serves: unmapped, so Kueue rejects claims on it (2g.20gb is budgeted since OPS005)
    assert "deviceClassMappings" not in manager_config(demo.policy, "cloud")["resources"]
    rep = dra_report(demo.policy)
    assert rep["onprem"]["path"] == "claim-template" and not rep["onprem"]["extendedResource"]
    assert not rep["onprem"]["counterEligible"]
    assert any("1.34 < 1.35" in w for w in rep["onprem"]["why"])
    assert rep["onprem"]["deviceClasses"]["h100-80gb"]["matches"] == 64
    assert rep["onprem"]["deviceClasses"]["a100-80gb-mig-1g.10gb"]["matches"] == 64
    assert rep["onprem"]["driverClasses"]["gpu.nvidia.com"]["classes"] == {"h100-80gb": 64, "h200": 16}
    assert rep["onprem"]["driverClasses"]["gpu.nvidia.com"]["migParents"] == 32
    assert rep["onprem"]["driverClasses"]["mig.nvidia.com"]["matches"] == 128
    assert rep["cloud"]["path"] == "device-plugin" and "devices" not in rep["cloud"]


def test_cloud_has_no_dra_objects(demo) -> None:  # type: ignore[no-untyped-def]
    assert _dra(demo, "cloud") == {}
    assert not [m for m in demo.manifests if m.cluster == "cloud" and m.api_version.startswith("resource.k8s.io/")]
    assert not [m for m in demo.manifests if m.cluster == "cloud" and m.component == "dra"]
    assert not [d for d in demo.diagnostics if d.code.startswith("DRA")]


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_dra_objects_pass_kubernetes_validate(demo, version: str) -> None:  # type: ignore[no-untyped-def]
    dra = [m for m in demo.manifests if m.component == "dra"]
    assert len(dra) == 18
    result = verify(dra, kube_versions={"onprem": version}, crds=None, strict=True)
    assert result.diagnostics == []


def test_extended_resource_when_the_gate_allows(tmp_path: Path) -> None:
    from helpers import mutate

    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", 'kubernetesVersion: "1.34"', 'kubernetesVersion: "1.36"')
    res = compile_dir(root)
    classes = {m.name: m.obj for m in res.manifests if m.kind == "DeviceClass"}
    assert classes["h100-80gb"]["spec"]["extendedResourceName"] == "gpupolicy.dev/h100-80gb"
    assert dra_report(res.policy)["onprem"]["extendedResource"] is True  # type: ignore[arg-type]
    dra = [m for m in res.manifests if m.component == "dra"]
    assert verify(dra, kube_versions={"onprem": "1.36"}, crds=None, strict=True).diagnostics == []
