"""Builders for the GPU Operator / node-contract tests: small inline fleets, policies without
running the other lowering passes, the chart defaults and CRDs from ../shared."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CRDS, REPO
from helpers import policy_at

from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy

FLEET_HEAD = """\
apiVersion: gpupolicy.dev/v1alpha1
kind: Fleet
metadata: {name: t}
spec:
  platform: {owners: ["@t/platform"]}
  gitops: {repoUrl: "https://example.com/t.git"}
  departments: [{name: d}]
  dataClasses: [{name: public}]
  clusters:
    - name: c1
      kubernetesVersion: "%(kube)s"
      apiServer: https://c1.example:6443
      region: r1
      residency: eu
      provisioner: %(provisioner)s
      dra: %(dra)s
      pools:
"""


def write_fleet(root: Path, pools: str, *, kube: str = "1.33", provisioner: str = "none", dra: bool = False) -> Path:
    """A one-cluster fleet (cluster ``c1``) with the given pools YAML (list items, any indent)."""
    text = FLEET_HEAD % {"kube": kube, "provisioner": provisioner, "dra": str(dra).lower()}
    text += textwrap.indent(textwrap.dedent(pools).strip("\n"), " " * 8) + "\n"
    (root / "policies").mkdir(parents=True, exist_ok=True)
    (root / "policies" / "fleet.yaml").write_text(text)
    return root


def build(root: Path) -> Policy:
    policy, diags = policy_at(root)
    errors = [d for d in diags if d.severity.value == "error"]
    assert policy is not None and not errors, errors
    return policy


def demo() -> Policy:
    return build(REPO)


def chart_defaults() -> dict[str, Any]:
    path = CRDS / "gpu-operator" / "helm" / "values.yaml"
    if not path.is_file():
        pytest.skip(f"GPU Operator chart values not found at {path}")
    return yaml.safe_load(path.read_text())


def verify_ok(manifests: list[Manifest], versions: dict[str, str]) -> None:
    """Every manifest passes the project's verify stage (schemas + CEL, unknown fields rejected)."""
    if not CRDS.is_dir():
        pytest.skip(f"CRDs not found at {CRDS}")
    from compiler.verify import CrdRegistry, verify

    result = verify(manifests, kube_versions=versions, crds=CrdRegistry.load(CRDS), strict=True)
    assert not result.diagnostics, [d.message for d in result.diagnostics]
