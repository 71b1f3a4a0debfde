"""Versions and pins, each defined once: what gpupolicy installs by default (SPEC §9, overridable in
the fleet's ``spec.versions`` and per cluster in ``clusters[].versions``), the API versions of the
Kueue and DRA objects it writes, and how one cluster's version is chosen (the cluster's own, else
the fleet's, else the pin).

Versions come back as declared (``0.19.2`` and ``v0.19.2`` are both valid); ``with_v`` / ``plain``
normalise them where a consumer needs one form (Kueue's image tag carries the ``v``, its chart
version does not), ``version_tuple`` compares them.
"""

from __future__ import annotations

import re

from compiler.model.fleet import Cluster
from compiler.policy.graph import Policy

KUEUE_API = "kueue.x-k8s.io/v1beta2"
DRA_API = "resource.k8s.io/v1"

DEFAULT_KUEUE = "v0.19.2"
DEFAULT_GPU_OPERATOR = "v26.7.0"
# The driver each GPU Operator chart version installs by default (deployments/gpu-operator/values.yaml).
CHART_DRIVER: dict[str, str] = {"v26.7.0": "595.91.07"}
DEFAULT_DRA_DRIVER = "0.4.1"  # the last tag of kubernetes-sigs/dra-driver-nvidia-gpu in the snapshot
DEFAULT_VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, int, int] | None:
    m = _VERSION.match(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def plain(version: str) -> str:
    """``v0.19.2`` → ``0.19.2`` (chart versions of OCI charts, strict semver)."""
    return version[1:] if version.startswith("v") else version


def with_v(version: str) -> str:
    """``0.19.2`` → ``v0.19.2`` (image tags, the GPU Operator's chart versions)."""
    return version if version.startswith("v") else f"v{version}"


def kueue_version(policy: Policy, cluster: Cluster) -> str:
    return cluster.versions.kueue or policy.fleet.spec.versions.kueue or DEFAULT_KUEUE


def gpu_operator_version(policy: Policy, cluster: Cluster) -> str:
    return cluster.versions.gpu_operator or policy.fleet.spec.versions.gpu_operator or DEFAULT_GPU_OPERATOR


def declared_dra_driver(policy: Policy, cluster: Cluster) -> str | None:
    """The DRA driver version the fleet pins for the cluster; None when it keeps the default."""
    return cluster.versions.dra_driver or policy.fleet.spec.versions.dra_driver


def dra_driver_version(policy: Policy, cluster: Cluster) -> str:
    return declared_dra_driver(policy, cluster) or DEFAULT_DRA_DRIVER


def vllm_image(policy: Policy, cluster: Cluster) -> str:
    return cluster.versions.vllm_image or policy.fleet.spec.versions.vllm_image or DEFAULT_VLLM_IMAGE
