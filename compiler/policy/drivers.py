"""Which GPU driver each pool's nodes run: the GPU Operator's, or their own.

A pool may declare the driver its nodes run (``driver``: a branch such as ``"580"`` or a full
version such as ``"580.95.05"``); it decides MIG profile names. The GPU Operator installs one
driver per cluster (its ClusterPolicy's driver DaemonSet):

- of the chart's default driver (``versions.CHART_DRIVER``) and the full versions pools declare,
  the one that meets the most pools (the chart's on a tie with it, else the newest);
- a pool that declares nothing, or a driver the Operator's meets (the same full version, or a
  branch equal to its branch), takes the Operator's driver;
- any other pool *brings its own* (pre-installed images, as on-premises and on EKS GPU AMIs).
  Its nodes carry ``nvidia.com/gpu.deploy.driver=false`` (node contract): the Operator never
  overwrites a deploy label a node already has with a value (``addGPUStateLabels``,
  ``controllers/state_manager.go``), its driver DaemonSet selects ``nvidia.com/gpu.deploy.driver=true``
  (``controllers/transforms_test.go``), and its validator finds a host driver per node
  (``validateHostDriver``, ``cmd/nvidia-validator/main.go``; NVIDIA/gpu-operator v26.7.0). So
  the other pools keep the Operator's driver: before, one pool's declaration turned the
  Operator's driver off for every pool of the cluster.
- When no pool takes the Operator's driver, its driver is off (``driver.enabled: false``).

DRA clusters cannot mix: the NVIDIA DRA driver's kubelet plugin reads the GPU driver from one
root on every node (chart value ``nvidiaDriverRoot``, mounted from the host:
``templates/kubeletplugin.yaml``, kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1), ``/`` for a
host driver and ``/run/nvidia/driver`` for the Operator's. A DRA cluster whose pools would need
both is OPS011.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from compiler.catalog import driver_branch
from compiler.policy.graph import Policy
from compiler.policy.memo import per_policy
from compiler.policy.versions import CHART_DRIVER, gpu_operator_version

_FULL_DRIVER = re.compile(r"^\d{3}\.\d+\.\d+$")
DEPLOY_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"  # "false": the GPU Operator installs no driver there


@dataclass(frozen=True)
class DriverPlan:
    """One cluster's drivers: the GPU Operator chart's ``driver`` values, and its pools by who
    installs their driver."""

    values: dict[str, Any]  # {} = the chart's default driver
    operator: str | None  # the Operator's driver (a full version), None when unknown or off
    operator_pools: tuple[str, ...]
    host_pools: tuple[str, ...]  # nodes bring their own driver

    @property
    def mixed(self) -> bool:
        return bool(self.operator_pools and self.host_pools)


def _meets(offered: str | None, declared: str) -> bool:
    if offered is None:
        return False
    if _FULL_DRIVER.match(declared):
        return declared == offered
    return driver_branch(declared) == driver_branch(offered)


@per_policy
def driver_plan(policy: Policy, cluster: str) -> DriverPlan:
    c = policy.clusters[cluster]
    chart = CHART_DRIVER.get(gpu_operator_version(policy, c))
    full = sorted({p.driver for p in c.pools if p.driver is not None and _FULL_DRIVER.match(p.driver)})

    def met(offered: str | None) -> int:
        return sum(p.driver is None or _meets(offered, p.driver) for p in c.pools)

    best = max(full, key=lambda d: (met(d), tuple(int(x) for x in d.split("."))), default=None)  # the newest on a tie
    chosen: str | None = chart
    if best is not None and best != chart and met(best) > met(chart):
        chosen = best
    values: dict[str, Any] = {"version": chosen} if chosen in full else {}  # a pinned version stays pinned
    operator = tuple(p.name for p in c.pools if p.driver is None or _meets(chosen, p.driver))
    host = tuple(p.name for p in c.pools if p.name not in operator)
    if c.pools and not operator:
        return DriverPlan({"enabled": False}, None, (), host)
    return DriverPlan(values, chosen, operator, host)
