"""Team-scope rules of stage 2b (SPEC §6): one team file against the fleet, nothing of other teams,
so a team's verdict changes only with its file or the fleet. Each check is called as
``check(policy, team)`` by ``compiler.validate.driver``; cross-team rules live in
``compiler.validate.semantic``.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.dra.accounting import dra_active
from compiler.model.fleet import DataClass
from compiler.model.team import Budget
from compiler.policy.classes import GpuClass
from compiler.policy.cuts import ISOLATION_TABLE
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.validate.cascade import names_unknown_cluster

RESIDENCY = define(
    "FLEET006", "A data class is only handled on clusters whose residency it allows.",
    "# pii allows [eu]; budget on cluster with residency eu",
    "# pii allows [eu]; team with pii budgets on cluster with residency us", scope=Scope.TEAM)
ISOLATION = define(
    "FLEET009", "A team's budgets use only cuts its isolation allows (shared: any; isolated: MIG or "
    "full; exclusive: full cards).",
    "isolation: isolated\nbudgets:\n- {cluster: onprem, class: a100-80gb-mig-3g.40gb}",
    "isolation: exclusive\nbudgets:\n- {cluster: cloud, class: l4-ts4}", scope=Scope.TEAM)
IDLE_NAMESPACE = define(
    "FLEET011", "A team namespace on a cluster where the team has no budget gets no queue.",
    "namespaces:\n- {name: ml-train, clusters: [onprem]}\nbudgets:\n- {cluster: onprem, class: h100, guaranteed: 2}",
    "namespaces:\n- {name: ml-train, clusters: [cloud]}   # no budget on cloud",
    Severity.WARNING, scope=Scope.TEAM)
SERVING_ONLY = define(
    "FLEET012", "Training budgets name classes Kueue can reach: a class whose pools are all reserved "
    "for serving cannot be budgeted, nor a time-sliced or MPS class on a DRA cluster (it gets no DeviceClass).",
    "budgets:\n- {cluster: onprem, class: h100, guaranteed: 4}",
    "budgets:\n- {cluster: onprem, class: h200, guaranteed: 4}   # h200 pool is serving: true", scope=Scope.TEAM)
BUDGET_TWICE = define(
    "KUEUE005", "A team lists each (cluster, class) budget once.",
    "- {cluster: onprem, class: h100}\n- {cluster: cloud, class: h100}",
    "- {cluster: onprem, class: h100}\n- {cluster: onprem, class: h100}", scope=Scope.TEAM)
SERVE_POOL = define(
    "SERVE001", "A serving deployment runs on a pool of its cluster that is reserved for serving.",
    "serving:\n- {cluster: onprem, pool: h200-serve}   # serving: true",
    "serving:\n- {cluster: onprem, pool: h100-train}   # not reserved", scope=Scope.TEAM)


RULES: tuple[Rule, ...] = (
    RESIDENCY, ISOLATION, IDLE_NAMESPACE, SERVING_ONLY, BUDGET_TWICE, SERVE_POOL,
)


def _budget_classes(policy: Policy, team: Team) -> list[tuple[int, Budget, GpuClass]]:
    """The team's budgets whose cluster and class exist (the others are FLEET002), with the class."""
    classes, clusters = policy.classes, policy.clusters
    out = []
    for i, b in enumerate(team.model.spec.budgets):
        if b.cluster in clusters and (cls := classes.get(b.cluster, {}).get(b.class_)) is not None:
            out.append((i, b, cls))
    return out


@checks(BUDGET_TWICE)
def check_budget_twice(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    seen_budget: dict[tuple[str, str], int] = {}
    for i, b in enumerate(team.model.spec.budgets):
        if b.cluster not in policy.clusters:
            continue
        key = (b.cluster, b.class_)
        if key in seen_budget:
            yield BUDGET_TWICE.diag(f"budget for {b.class_!r} on {b.cluster!r} is listed twice "
                                    f"(first at entry {seen_budget[key]})", team.src.locate(("spec", "budgets", i)),
                                    hint="merge the two entries")
        seen_budget.setdefault(key, i)


@checks(SERVING_ONLY)
def check_training_class(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    for i, b, cls in _budget_classes(policy, team):
        if dra_active(policy.clusters[b.cluster]) and cls.mode.dra_device_type is None:
            yield SERVING_ONLY.diag(f"class {b.class_!r} on {b.cluster!r} is a {cls.cut} cut, which gets no DeviceClass "
                                    "on a DRA cluster (DRA011): no job can claim it, so this budget can never be used",
                                    team.src.locate(("spec", "budgets", i, "class")),
                                    hint="budget a full-card or MIG class of this cluster (the fleet's warning DRA011 "
                                         "names the pool)")
        elif not cls.training_pools:
            yield SERVING_ONLY.diag(f"class {b.class_!r} on {b.cluster!r} exists only on serving-reserved pools "
                                    f"({', '.join(cls.serving_pools)})",
                                    team.src.locate(("spec", "budgets", i, "class")),
                                    hint="serving pools are outside Kueue; budget a training class instead")


@checks(ISOLATION)
def check_isolation(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    t = team.model
    for i, b, cls in _budget_classes(policy, team):
        if not cls.mode.satisfies(t.spec.isolation):
            yield ISOLATION.diag(f"team isolation is {t.spec.isolation!r} but {b.class_!r} is a {cls.cut} cut",
                                 team.src.locate(("spec", "budgets", i, "class")), hint=ISOLATION_TABLE)


@per_policy
def data_classes_by_name(policy: Policy) -> dict[str, DataClass]:
    """The fleet's data classes by name (one dict per policy; callers only read it)."""
    return {d.name: d for d in policy.fleet.spec.data_classes}


@checks(RESIDENCY)
def check_residency(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    t = team.model
    if not t.spec.data_classes:
        return
    dclasses = data_classes_by_name(policy)
    allowed_by = [dclasses[dc].residency for dc in t.spec.data_classes if dc in dclasses]
    fine: dict[str, bool] = {}  # residency -> every data class allows it (a team budgets ~10 times)
    for i, b, _cls in _budget_classes(policy, team):
        residency = policy.clusters[b.cluster].residency
        if residency not in fine:
            fine[residency] = all(allowed is None or residency in allowed for allowed in allowed_by)
        if fine[residency]:
            continue
        for dc in t.spec.data_classes:
            allowed = dclasses[dc].residency if dc in dclasses else None
            if allowed is not None and residency not in allowed:
                yield RESIDENCY.diag(f"team handles data class {dc!r} (allowed in {', '.join(allowed)}) but "
                                     f"budgets GPUs on {b.cluster!r} (residency {residency!r})",
                                     team.src.locate(("spec", "budgets", i, "cluster")),
                                     hint="budget on a cluster in an allowed residency, or drop the data class")


@checks(IDLE_NAMESPACE)
def check_idle_namespaces(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    t = team.model
    if names_unknown_cluster(policy, team):
        return  # the budget meant for the cluster names one that does not exist: FLEET002's
    budget_clusters = {b.cluster for b in t.spec.budgets if b.cluster in policy.clusters}
    for i, ns in enumerate(t.spec.namespaces):
        for j, c in enumerate(ns.clusters):
            if c in policy.clusters and c not in budget_clusters:
                yield IDLE_NAMESPACE.diag(f"namespace {ns.name!r} on {c!r}: team has no budget there, so no "
                                          "queue is created", team.src.locate(("spec", "namespaces", i, "clusters", j)),
                                          hint="add a budget on that cluster or drop it")


@checks(SERVE_POOL)
def check_serving_pool(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    for i, s in enumerate(team.model.spec.serving):
        cluster = policy.clusters.get(s.cluster)
        pool = next((p for p in cluster.pools if p.name == s.pool), None) if cluster is not None else None
        if pool is not None and not pool.serving:
            yield SERVE_POOL.diag(f"serving {s.name!r} targets pool {s.pool!r}, which is not reserved for serving",
                                  team.src.locate(("spec", "serving", i, "pool")),
                                  hint="set serving: true on the pool in fleet.yaml or choose a serving pool")
