"""Serving deployments resolved against the fleet (cluster, pool, GPU, architecture), and the
per-deployment sizing as report data."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from compiler.catalog import GpuModel
from compiler.model.fleet import Cluster, NodePool
from compiler.model.team import ServingDeployment
from compiler.policy.graph import Policy, Team, serving_namespace
from compiler.policy.memo import per_policy
from compiler.serving.architectures import Architecture, resolve_architecture
from compiler.serving.sizing import Sizing, pool_gpus, size


def model_label(model: str) -> str:
    """``org/name`` hub id as a label value: ``org--name`` (the hub's own cache-directory form)."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", model.replace("/", "--"))[:63]
    return value.strip("-_.") or "model"


@dataclass(frozen=True)
class Resolved:
    team: Team
    index: int  # position in spec.serving, for locating diagnostics
    dep: ServingDeployment
    cluster: Cluster | None
    pool: NodePool | None
    gpu: GpuModel | None
    arch: Architecture | None

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("spec", "serving", self.index)

    @property
    def namespace(self) -> str:
        """The team's serving namespace (outside Kueue)."""
        return serving_namespace(self.team.name, self.team.model.spec.serving_namespace)

    @property
    def sizing(self) -> Sizing | None:
        if self.arch is None or self.gpu is None:
            return None
        return size(self.dep, self.arch, self.gpu)


def resolve(policy: Policy, team: Team, index: int, dep: ServingDeployment) -> Resolved:
    cluster = policy.clusters.get(dep.cluster)
    pool = None if cluster is None else next((p for p in cluster.pools if p.name == dep.pool), None)
    gpu = None if pool is None else policy.catalog.get(pool.model)
    return Resolved(team, index, dep, cluster, pool, gpu, resolve_architecture(dep))


def deployments(policy: Policy, cluster: str | None = None) -> Iterator[Resolved]:
    """Every serving deployment of every team (team order, then file order), or those of one
    cluster. Resolved once per policy: REPORT.md, the rules and the serving passes ask per
    cluster, and each question scanned every team (1,000 teams: a third of the reports' time)."""
    yield from (_resolved(policy) if cluster is None else _by_cluster(policy).get(cluster, ()))


@per_policy
def _resolved(policy: Policy) -> list[Resolved]:
    return [resolve(policy, team, i, dep) for team in policy.teams for i, dep in enumerate(team.model.spec.serving)]


@per_policy
def _by_cluster(policy: Policy) -> dict[str, list[Resolved]]:
    out: dict[str, list[Resolved]] = {}
    for r in _resolved(policy):
        out.setdefault(r.dep.cluster, []).append(r)
    return out


def serving_report(policy: Policy) -> list[dict[str, Any]]:
    """Per deployment: where it runs and its sizing arithmetic (weights, KV, budget, bandwidth
    bound), for REPORT.md and allocation.json. Deployments that cannot be resolved carry
    ``sizing: None`` (their diagnostics say why)."""
    return [_row(r) for r in deployments(policy)]


def serving_rows(policy: Policy, team: Team) -> list[dict[str, Any]]:
    """``serving_report``'s rows of one team: they read the fleet and that team alone
    (``resolve``), so the reports keep them by the team's unit."""
    return [_row(resolve(policy, team, i, dep)) for i, dep in enumerate(team.model.spec.serving)]


def _row(r: Resolved) -> dict[str, Any]:
    d = r.dep
    sizing = r.sizing
    return {
        "team": r.team.name,
        "name": d.name,
        "cluster": d.cluster,
        "pool": d.pool,
        "model": d.model,
        "replicas": {"min": d.replicas.min, "max": d.replicas.max},
        "gpusPerReplica": d.tensor_parallel,
        "gpusAtMin": d.replicas.min * d.tensor_parallel,
        "gpusAtMax": d.replicas.max * d.tensor_parallel,
        "poolGpus": None if r.pool is None else pool_gpus(r.pool),
        "sizing": None if sizing is None else sizing.as_dict(),
    }
