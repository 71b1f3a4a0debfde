"""Declared hardware against what the provisioner can launch (docs/misconfigurations.md, family
"hardware"): a Karpenter pool's instance types carry the pool's GPU model and GPUs per node, and a
serving pool does not sit on capacity the cloud takes back with two minutes' notice.

The instance-type table is AWS's published GPU configuration (Karpenter's instance-types reference,
karpenter.sh/docs/reference/instance-types); unknown types are not checked.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.policy.graph import Policy

INSTANCE_MISMATCH = define(
    "FLEET302", "A Karpenter pool's instance types carry the pool's GPU model and exactly gpusPerNode GPUs (else "
    "Karpenter launches nodes the quota does not describe, or finds no instance type at all).",
    "model: l4\ngpusPerNode: 4\nkarpenter: {instanceTypes: [g6.12xlarge]}",
    "model: l4\ngpusPerNode: 8\nkarpenter: {instanceTypes: [g6.12xlarge]}   # 4 L4", scope=Scope.FLEET)
SERVING_ON_SPOT = define(
    "FLEET303", "A serving pool is not provisioned on spot capacity: an interruption gives two minutes, less than a "
    "large model takes to load on the replacement node.",
    "serving: true\nkarpenter: {capacityType: on-demand}", "serving: true\nkarpenter: {capacityType: spot}",
    Severity.WARNING, scope=Scope.FLEET)

RULES: tuple[Rule, ...] = (INSTANCE_MISMATCH, SERVING_ON_SPOT)

# instance type -> (GPU model id of the catalog, GPUs per instance)
AWS_GPU_INSTANCES: dict[str, tuple[str, int]] = {
    **{f"g6.{s}": ("l4", 1) for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "g6.12xlarge": ("l4", 4), "g6.24xlarge": ("l4", 4), "g6.48xlarge": ("l4", 8),
    **{f"g6e.{s}": ("l40s", 1) for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "g6e.12xlarge": ("l40s", 4), "g6e.24xlarge": ("l40s", 4), "g6e.48xlarge": ("l40s", 8),
    **{f"g5.{s}": ("a10g", 1) for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "g5.12xlarge": ("a10g", 4), "g5.24xlarge": ("a10g", 4), "g5.48xlarge": ("a10g", 8),
    **{f"g4dn.{s}": ("t4", 1) for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "g4dn.12xlarge": ("t4", 4), "g4dn.metal": ("t4", 8),
    "p4d.24xlarge": ("a100-40gb", 8), "p4de.24xlarge": ("a100-80gb", 8),
    "p5.4xlarge": ("h100-80gb", 1), "p5.48xlarge": ("h100-80gb", 8),
    "p5e.48xlarge": ("h200", 8), "p5en.48xlarge": ("h200", 8),
    "p6-b200.48xlarge": ("b200", 8),
}


@checks(INSTANCE_MISMATCH)
def check_instance_types(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        if c.provisioner != "karpenter":
            continue
        for pi, p in enumerate(c.pools):
            if p.karpenter is None:
                continue
            for k, itype in enumerate(p.karpenter.instance_types):
                known = AWS_GPU_INSTANCES.get(itype)
                if known is None:
                    continue
                model, gpus = known
                path = ("spec", "clusters", ci, "pools", pi, "karpenter", "instanceTypes", k)
                if model != p.model:
                    yield INSTANCE_MISMATCH.diag(
                        f"pool {p.name!r} on {c.name!r} declares {p.model} GPUs but instance type {itype} carries "
                        f"{gpus} x {model}: Karpenter launches {model} nodes that match no GPU class, and jobs "
                        f"asking for {p.model} stay pending", policy.fleet_src.locate(path),
                        hint=_suggest(p.model, p.gpus_per_node))
                elif gpus != p.gpus_per_node:
                    yield INSTANCE_MISMATCH.diag(
                        f"pool {p.name!r} on {c.name!r} declares {p.gpus_per_node} GPUs per node but {itype} has "
                        f"{gpus}: the quota counts {p.nodes * p.gpus_per_node} GPUs while {p.nodes} such nodes hold "
                        f"{p.nodes * gpus}", policy.fleet_src.locate(path),
                        hint=_suggest(p.model, p.gpus_per_node) + f", or set gpusPerNode: {gpus}")


def _suggest(model: str, gpus: int) -> str:
    fits = sorted(t for t, (m, n) in AWS_GPU_INSTANCES.items() if m == model and n == gpus)
    if fits:
        return f"instance types with {gpus} x {model}: {', '.join(fits)}"
    return f"no instance type in gpupolicy's table carries {gpus} x {model}"


@checks(SERVING_ON_SPOT)
def check_serving_spot(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        for pi, p in enumerate(c.pools):
            if p.serving and p.karpenter is not None and p.karpenter.capacity_type == "spot":
                yield SERVING_ON_SPOT.diag(
                    f"serving pool {p.name!r} on {c.name!r} runs on spot capacity: a reclaimed node gives two "
                    "minutes' notice, while the replacement replica downloads and loads its model for many more, "
                    "so every interruption takes replicas out of service",
                    policy.fleet_src.locate(("spec", "clusters", ci, "pools", pi, "karpenter", "capacityType")),
                    hint="use capacityType: on-demand (or reserved) for serving pools; keep spot for training, "
                         "which Kueue requeues")
