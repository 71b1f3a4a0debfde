"""The teams' facts that passes and rules over the whole policy read, as summaries kept a block
of teams at a time (``compiler.policy.summaries``): each reads the fleet and one team.

- ``BUDGETED``: (cluster, class) of every budget: the classes no team budgets (OPS005, REPORT.md's
  runtime section).
- ``DEPARTMENTS``: (cluster, department) of every budget: which departments queue on a cluster
  (the cohort forest).
- ``CAPPED``: (department, cluster, class) of each department cap -> the GPUs the teams below the
  department (its own included) guarantee there, a key as soon as one of them budgets the class:
  what the cap bounds (KUEUE003), whether it bounds anything (FLEET404).
- ``LENDABLE`` and ``WORST_BORROW``: per (cluster, class) the GPUs the queues can lend, and the
  largest borrowing limit plus its own team's lendable GPUs (KUEUE004: a limit no cohort can
  lend shows there).
- ``CLAIMS``: (cluster, namespace) -> the team and purpose that claim it, and the namespaces of the
  Gateways serving routes through (``GATEWAY``), with ``CONFLICT`` when one is claimed twice, is a
  system namespace or hosts a Gateway (FLEET004).
"""

from __future__ import annotations

from typing import Any

from compiler.model.team import Budget
from compiler.policy.allocation import Field, Resolved, TeamAllocation, resolve, team_entries
from compiler.policy.graph import Policy, Team, reserved_namespace, serving_namespace
from compiler.policy.memo import per_policy
from compiler.policy.summaries import gather, maxima, summary, sums, union

CONFLICT = ("", "")  # a CLAIMS key no cluster has (names are DNS labels): some claim needs a finding


def entries(policy: Policy, team: Team) -> list[TeamAllocation]:
    """The team file's allocation entries, once per team and policy (three summaries ask). Folded
    over every team (no store), from the allocation's index by team: one pass shared by all; a
    few blocks' teams (a store), resolved as ``build_allocation`` resolves them, without that
    index's pass over every team. ``tests/test_team_facts.py`` holds the two equal."""
    # by the team's path on the policy, as ``per_policy`` keeps its memos: it keys on its
    # arguments, and a Team (its pydantic model) is not hashable
    memo: dict[str, list[TeamAllocation]] | None = policy.__dict__.get("_team_entries")
    if memo is None:
        memo = {}
        object.__setattr__(policy, "_team_entries", memo)  # Policy is a frozen dataclass
    found = memo.get(team.path)
    if found is None:
        m = team.model
        if policy.summaries is None:
            found = [e for e in policy.allocation.for_team(m.metadata.name) if e.source == team.path]
        else:
            spec = policy.fleet.spec

            def resolved(field: Field, b: Budget, dept: str) -> Resolved:
                return resolve(field, b, dept, policy.departments, spec.defaults.budget)

            found = list(team_entries(m.metadata.name, m.spec.department, team.path, m.spec.budgets, resolved))
        memo[team.path] = found
    return found


def _budgeted(policy: Policy, team: Team) -> set[tuple[str, str]]:
    return {(b.cluster, b.class_) for b in team.model.spec.budgets}


def _departments(policy: Policy, team: Team) -> set[tuple[str, str]]:
    dept = team.model.spec.department
    return {(b.cluster, dept) for b in team.model.spec.budgets}


def ancestors(policy: Policy, dept: str) -> list[str]:
    """A department and the departments above it, nearest first (a cycle, FLEET005, ends it)."""
    out = []
    depts = policy.departments
    cur: str | None = dept
    while cur is not None and cur in depts and cur not in out:
        out.append(cur)
        cur = depts[cur].parent
    return out


@per_policy
def _caps(policy: Policy) -> frozenset[tuple[str, str, str]]:
    return frozenset((d.name, cap.cluster, cap.class_) for d in policy.fleet.spec.departments for cap in d.caps)


def _capped(policy: Policy, team: Team) -> dict[tuple[str, str, str], int]:
    caps = _caps(policy)
    if not caps:
        return {}
    chain = ancestors(policy, team.model.spec.department)
    out: dict[tuple[str, str, str], int] = {}
    for e in entries(policy, team):
        for above in chain:
            key = (above, e.cluster, e.gpu_class)
            if key in caps:  # a budget of 0 too: the class is budgeted below the cap (FLEET404)
                out[key] = out.get(key, 0) + (e.guaranteed.value or 0)
    return out


def _lendable(policy: Policy, team: Team) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for e in entries(policy, team):
        out[(e.cluster, e.gpu_class)] = out.get((e.cluster, e.gpu_class), 0) + e.lendable
    return out


def _worst_borrow(policy: Policy, team: Team) -> dict[tuple[str, str], int]:
    own = _lendable(policy, team)
    out: dict[tuple[str, str], int] = {}
    for e in entries(policy, team):
        if e.borrow.value:  # None (unlimited) and 0 cannot be out of reach
            key = (e.cluster, e.gpu_class)
            out[key] = max(out.get(key, 0), e.borrow.value + own[key])
    return out


def _claims(policy: Policy, team: Team) -> dict[tuple[str, str], tuple[str, str]]:
    """In the order ``check_namespace_claims`` claims them: training namespaces, then serving."""
    clusters = policy.clusters
    spec, name = team.model.spec, team.model.metadata.name
    out: dict[tuple[str, str], tuple[str, str]] = {}

    def claim(cluster: str, ns: str, purpose: str) -> None:
        if reserved_namespace(policy.fleet, clusters[cluster], ns) is not None:
            out[CONFLICT] = (name, purpose)
        elif out.setdefault((cluster, ns), (name, purpose)) != (name, purpose):
            out[CONFLICT] = (name, purpose)

    for ns in spec.namespaces:
        for c in ns.clusters:
            if c in clusters:  # else FLEET002
                claim(c, ns.name, "training")
    for s in spec.serving:
        if s.cluster in clusters:
            claim(s.cluster, serving_namespace(name, spec.serving_namespace), "serving")
    for hosted in gateway_namespaces(policy, team):  # no team's: equal among the teams routing there
        if out.setdefault(hosted, GATEWAY) != GATEWAY:
            out[CONFLICT] = GATEWAY
    return out


GATEWAY = ("", "gateway")  # a CLAIMS value: a namespace some team's serving routes through a Gateway in


def gateway_namespaces(policy: Policy, team: Team) -> dict[tuple[str, str], str]:
    """(cluster, namespace) of each Gateway the team's serving names a namespace for
    (``expose.gatewayNamespace``) -> the deployment's name: the platform's namespace, which no team
    may claim, not even the team that routes through it as its serving namespace (FLEET004). A
    Gateway with no namespace named is in the deployment's own serving namespace, the team's."""
    return {(s.cluster, s.expose.gateway_namespace): s.name for s in team.model.spec.serving
            if s.cluster in policy.clusters and s.expose is not None and s.expose.gateway_namespace is not None}


def _claimed(into: dict[Any, tuple[str, str]], part: dict[Any, tuple[str, str]]) -> dict[Any, tuple[str, str]]:
    common = into.keys() & part.keys()  # none, unless a namespace is claimed twice
    if common:
        if CONFLICT not in into and any(into[k] != part[k] for k in common):
            into[CONFLICT] = ("", "")
        part = {k: v for k, v in part.items() if k not in common}  # the first claim stays
    into.update(part)
    return into


BUDGETED = summary("budgeted", _budgeted, union, set)
DEPARTMENTS = summary("departments", _departments, union, set)
CAPPED = summary("capped", _capped, sums, dict)
LENDABLE = summary("lendable", _lendable, sums, dict)
WORST_BORROW = summary("worst-borrow", _worst_borrow, maxima, dict)
CLAIMS = summary("claims", _claims, _claimed, dict)


@per_policy
def team_departments(policy: Policy) -> dict[str, frozenset[str]]:
    """cluster -> the departments of the teams with a budget on it."""
    out: dict[str, set[str]] = {}
    for cluster, dept in gather(policy, DEPARTMENTS):
        out.setdefault(cluster, set()).add(dept)
    return {c: frozenset(ds) for c, ds in out.items()}
