"""The policy facts the audit checks evidence against, for one cluster, read once from the
compiled policy of the same revision."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.model.fleet import Admission
from compiler.policy.graph import Policy, serving_namespace


@dataclass(frozen=True)
class Budget:
    guaranteed: int
    borrow: int | None  # None: unlimited


@dataclass
class PolicyView:
    cluster: str
    residency: str | None
    required_labels: tuple[str, ...]
    ns_team: dict[str, str] = field(default_factory=dict)  # training namespaces on the cluster
    serving_ns: dict[str, str] = field(default_factory=dict)
    budgets: dict[tuple[str, str], Budget] = field(default_factory=dict)  # (team, class)
    class_cut: dict[str, str] = field(default_factory=dict)
    training_pools: set[str] = field(default_factory=set)
    serving_pools: set[str] = field(default_factory=set)
    data_residency: dict[str, list[str] | None] = field(default_factory=dict)
    team_data_classes: dict[str, set[str]] = field(default_factory=dict)
    residencies: dict[str, str] = field(default_factory=dict)  # every cluster (MultiKueue workers)
    loaded: bool = True

    def residency_of(self, cluster: str) -> str:
        return self.residencies.get(cluster) or self.residency or ""

    def team_of(self, namespace: str, label: str | None) -> str | None:
        return self.ns_team.get(namespace) or self.serving_ns.get(namespace) or label


def empty_view(cluster: str) -> PolicyView:
    return PolicyView(cluster, None, tuple(Admission().required_labels), loaded=False)


def policy_view(policy: Policy, cluster: str) -> PolicyView:
    c = policy.clusters[cluster]
    fleet = policy.fleet.spec
    view = PolicyView(cluster, c.residency, tuple(fleet.admission.required_labels))
    for team in policy.teams:
        spec = team.model.spec
        view.team_data_classes[team.name] = set(spec.data_classes)
        for ns in spec.namespaces:
            if cluster in ns.clusters:
                view.ns_team.setdefault(ns.name, team.name)
        if any(s.cluster == cluster for s in spec.serving):
            view.serving_ns[serving_namespace(team.name, spec.serving_namespace)] = team.name
    for e in policy.allocation.entries:
        if e.cluster == cluster:
            view.budgets[(e.team, e.gpu_class)] = Budget(e.guaranteed.value or 0, e.borrow.value)
    for cid, cls in policy.classes.get(cluster, {}).items():
        view.class_cut[cid] = cls.cut
    for p in c.pools:
        (view.serving_pools if p.serving else view.training_pools).add(p.name)
    view.residencies = {x.name: x.residency for x in fleet.clusters}
    for dc in fleet.data_classes:
        view.data_residency[dc.name] = list(dc.residency) if dc.residency is not None else None
    return view
