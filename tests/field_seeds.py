"""The policies the field-effect test mutates (tests/test_field_effects.py): the demo, the golden
cases, and seeded variants of the demo that set fields no case sets, in a context where they act
(a catalog restated on a DRA cluster, a team inheriting every budget amount, MIG by devices, an
MPS pool, serving with an explicit architecture and an endpoint picker, a waived finding, a team's acknowledged removal). A new field that no case
sets fails the test with "no case sets ...": set it in a golden case or add it to a seed here."""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from conftest import REPO

from compiler.catalog import builtin_catalog
from compiler.catalog.model import GpuModel

Files = dict[str, Any]  # policies/-relative path -> parsed YAML


def load_tree(policies: Path) -> Files:
    return {str(p.relative_to(policies)): yaml.safe_load(p.read_text()) for p in sorted(policies.rglob("*.yaml"))}


# -- seeds: demo variants that set fields no case sets -------------------------------------------------
def _spec_of(m: GpuModel, *, variants: bool) -> dict[str, Any]:
    """A catalog entry (fleet ``spec.catalog``) with exactly the facts of a built-in model."""
    out: dict[str, Any] = {"displayName": m.display_name, "architecture": m.architecture,
                           "computeCapability": m.compute_capability, "memoryGiB": m.memory_gib}
    if m.memory_mib is not None:
        out["memoryMiB"] = m.memory_mib
    if m.memory_bandwidth_gbps is not None:
        out["memoryBandwidthGBps"] = m.memory_bandwidth_gbps
    if m.bandwidth_source is not None:
        out["bandwidthSource"] = m.bandwidth_source
    if variants:
        out["variants"] = [{k: v for k, v in {"pciDeviceId": x.pci_device_id, "formFactor": x.form_factor,
                                              "productName": x.product_name,
                                              "memoryBandwidthGBps": x.memory_bandwidth_gbps,
                                              "bandwidthSource": x.bandwidth_source}.items() if v is not None}
                           for x in m.variants if x.pci_device_id]
    else:
        first = m.variants[0]
        out.update({"productName": first.product_name, "pciDeviceIds": [first.pci_device_id],
                    "formFactor": first.form_factor})
    if m.mig is not None:
        out["mig"] = {"computeSlices": m.mig.compute_slices, "memorySlices": m.mig.memory_slices,
                      "maxInstances": m.mig.max_instances, "source": m.mig.source, "profiles": [
                          {k: v for k, v in {
                              "name": p.name, "computeSlices": p.compute_slices, "memorySlices": p.memory_slices,
                              "maxInstances": p.max_instances, "placementStarts": list(p.starts),
                              "profileId": p.profile_id, "minDriver": p.min_driver,
                              "driverNames": [{"name": d.name, "branches": list(d.branches), "source": d.source}
                                              for d in p.driver_names] or None}.items() if v is not None}
                          for p in m.mig.profiles]}
    out["source"] = m.source
    return out


def _pools(files: Files, cluster: str) -> list[dict[str, Any]]:
    return next(c["pools"] for c in files["fleet.yaml"]["spec"]["clusters"] if c["name"] == cluster)


def _serving(files: Files, team: str) -> dict[str, Any]:
    return typing.cast(dict[str, Any], files[f"teams/{team}.yaml"]["spec"]["serving"][0])


def seed_catalog(files: Files) -> None:
    """Built-in models restated in the fleet file, on a DRA cluster (selectors read their facts), a
    serving pool (sizing reads memory and bandwidth) and a driver-pinned MIG pool."""
    cat = builtin_catalog()
    a100, h100, l40s = cat.get("a100-80gb"), cat.get("h100-80gb"), cat.get("l40s")
    assert a100 is not None and h100 is not None and l40s is not None
    files["fleet.yaml"]["spec"]["catalog"] = {"a100-80gb": _spec_of(a100, variants=True),
                                              "h100-80gb": _spec_of(h100, variants=False),
                                              "l40s": _spec_of(l40s, variants=True)}
    files["fleet.yaml"]["spec"]["clusters"][0]["deviceClasses"] = [{
        "name": "hopper", "class": "h100-80gb", "selectors": [
            "device.attributes['gpu.nvidia.com'].architecture == 'Hopper' && "
            "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"]}]
    _serving(files, "search")["dtype"] = "fp8"  # compute capability decides how vLLM runs fp8


def seed_inherit(files: Files) -> None:
    """A team in the root department whose budget sets no amount: every default level is read."""
    files["teams/labs.yaml"] = {"apiVersion": "gpupolicy.dev/v1alpha1", "kind": "Team", "metadata": {"name": "labs"},
                                "spec": {"owners": ["@acme/labs"], "department": "ai", "isolation": "isolated",
                                         "dataClasses": ["public"],
                                         "namespaces": [{"name": "labs-train", "clusters": ["cloud"]}],
                                         "budgets": [{"cluster": "cloud", "class": "h100-80gb"}]}}
    for dep in files["fleet.yaml"]["spec"]["departments"]:  # labs (in ai) inherits every amount from the fleet
        if dep["name"] == "product":
            dep["defaults"]["guaranteed"] = 4
    del files["teams/search.yaml"]["spec"]["budgets"][1]["guaranteed"]  # product's default


def seed_cuts(files: Files) -> None:
    """MIG by explicit devices, an MPS pool, custom DeviceClasses and feature gates."""
    onprem = _pools(files, "onprem")
    onprem[0]["cut"] = {"mode": "mig", "devices": [{"gpus": 8, "profiles": {"1g.10gb": 2, "2g.20gb": 1,
                                                                             "3g.40gb": 1}}]}
    _pools(files, "cloud").append({"name": "l4-mps", "model": "l4", "nodes": 1, "gpusPerNode": 4,
                                   "cut": {"mode": "mps", "replicas": 4},
                                   "karpenter": {"nodeClass": "gpu-default", "instanceTypes": ["g6.12xlarge"]}})
    cluster = files["fleet.yaml"]["spec"]["clusters"][0]
    cluster["featureGates"] = {"kubernetes": {"DRAExtendedResource": True}, "draDriver": {"DynamicMIG": False}}
    cluster["deviceClasses"] = [{"name": "h100-any", "class": "h100-80gb", "description": "any H100", "selectors": [
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"]}]


def seed_serving(files: Files) -> None:
    """Serving with an explicit architecture, an endpoint picker, a cache claim and pull secrets."""
    chat = _serving(files, "nlp")
    chat["expose"]["endpointPicker"] = {"name": "chat-epp", "port": 9002, "failureMode": "FailOpen"}
    chat["secrets"]["imagePullSecrets"] = ["registry"]
    chat["cache"].update({"accessMode": "ReadWriteMany"})
    rewrite = _serving(files, "search")
    rewrite["architecture"] = {"parametersB": 8, "layers": 32, "attentionHeads": 32, "kvHeads": 8, "headDim": 128}
    rewrite.update({"tensorParallel": 2, "replicas": {"min": 2, "max": 4}})  # heads must divide by TP
    rewrite["cache"] = {"existingClaim": "model-cache"}
    rewrite["expose"] = {"gateway": "inference-gateway", "inferencePool": True}


def seed_waivers(files: Files) -> None:
    """A finding waived: the interns' sandbox namespace also on onprem, where they have no budget (FLEET011)."""
    files["teams/interns.yaml"]["spec"]["namespaces"][0]["clusters"] = ["cloud", "onprem"]
    files["fleet.yaml"]["spec"]["waivers"] = [{
        "rule": "FLEET011", "team": "interns", "cluster": "onprem", "owner": "@acme/ml-platform",
        "reason": "the onprem sandbox gets its budget next quarter", "expires": "2099-12-31"}]


def seed_acknowledgement(files: Files) -> None:
    """A team acknowledging the removal of its own ClusterQueue on a cluster it left (vision budgets
    on onprem only: its queue on cloud is gone)."""
    files["teams/vision.yaml"]["spec"]["acknowledgedRemovals"] = [
        {"cluster": "cloud", "kind": "ClusterQueue", "name": "vision", "reason": "vision trains on onprem only now"}]


SEEDS: dict[str, Callable[[Files], None]] = {"inherit": seed_inherit, "catalog": seed_catalog, "cuts": seed_cuts,
                                             "serving": seed_serving, "waivers": seed_waivers,
                                             "acknowledgement": seed_acknowledgement}


@dataclass
class Scenario:
    name: str
    files: Files

    @staticmethod
    def all() -> list[Scenario]:
        demo = load_tree(REPO / "policies")
        out = [Scenario("demo", demo)]
        out += [Scenario(f"golden/{d.name}", load_tree(d / "policies"))
                for d in sorted((REPO / "tests/golden").iterdir()) if (d / "policies").is_dir()]
        for name, seed in SEEDS.items():
            files = copy.deepcopy(demo)
            seed(files)
            out.append(Scenario(f"demo+{name}", files))
        return out
