"""Priority rules (ADM): no team can raise its own priority above what the platform grants it.

A team's file is owned by the team (CODEOWNERS), so its ``priority`` and ``allowedPriorities`` are
claims; the fleet file (the platform's) decides which tiers are protected (``reservedFor``).
Admission then enforces the resolved tiers (``compiler.policy.priorities``,
``compiler.lower.admission_priority``). SERVE013 keeps every tier's value below the serving
PriorityClass; these rules close the other ways a team could outrank serving or another team.
One check per rule.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, closest, define
from compiler.policy.graph import Policy, Team
from compiler.policy.priorities import (
    SERVING_PRIORITY_CLASS,
    SYSTEM_PRIORITY_CLASSES,
    may_use,
    ordered_tiers,
    team_priorities,
    tiers_by_name,
)

RESERVED_TIER = define(
    "ADM007", "A team uses a protected priority tier only if the fleet reserves it for that team "
    "(reservedFor), so no team outranks another team's protected tier by editing its own file.",
    "# fleet: priorities: [{name: production, value: 1000, reservedFor: [nlp]}]\n"
    "# teams/nlp.yaml\npriority: production",
    "# fleet: priorities: [{name: production, value: 1000, reservedFor: [nlp]}]\n"
    "# teams/recsys.yaml\npriority: production   # or allowedPriorities: [production, standard]",
    scope=Scope.TEAM)
TIER_NAME = define(
    "ADM008", "No priority tier is named after the serving PriorityClass or a system PriorityClass: a tier "
    "name is also accepted as a pod priorityClassName, and those classes outrank serving at the scheduler.",
    "priorities: [{name: production, value: 1000}]",
    "priorities: [{name: system-node-critical, value: 1000}]   # or gpupolicy-serving",
    scope=Scope.FLEET)
TIER_NOT_ALLOWED = define(
    "ADM009", "A team with namespaces has a tier its GPU jobs may name, and its priority is one of its "
    "allowedPriorities (its jobs are told to use it).",
    "priority: standard\nallowedPriorities: [standard, preemptible]",
    "priority: production\nallowedPriorities: [standard, preemptible]", scope=Scope.TEAM)

RESERVED_UNKNOWN = define(
    "ADM010", "Every team a protected tier is reserved for has a team file: a misspelt name protects the "
    "tier from everyone, its intended team included.",
    "# teams/nlp.yaml exists\npriorities: [{name: production, value: 1000, reservedFor: [nlp]}]",
    "priorities: [{name: production, value: 1000, reservedFor: [nlpp]}]   # no teams/nlpp.yaml",
    scope=Scope.POLICY)
DEFAULT_TIERS = define(
    "ADM011", "The default tier is stated once: a tier marked `default: true` and a different "
    "`defaults.priority` leave the marked tier with no effect (defaults.priority wins).",
    "priorities: [{name: standard, value: 100, default: true}]\ndefaults: {priority: standard}",
    "priorities: [{name: standard, value: 100, default: true}]\ndefaults: {priority: preemptible}",
    Severity.WARNING, scope=Scope.FLEET)

RULES: tuple[Rule, ...] = (RESERVED_TIER, TIER_NAME, TIER_NOT_ALLOWED, RESERVED_UNKNOWN, DEFAULT_TIERS)


@checks(RESERVED_TIER)
def check_reserved_tiers(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    """Only what the team file names: the default expansion ("its tier and below") skips tiers
    reserved for others by construction (``compiler.policy.priorities``)."""
    spec = team.model.spec
    tiers = tiers_by_name(policy)
    claims: list[tuple[str, tuple[str | int, ...]]] = []
    if spec.priority is not None:
        claims.append((spec.priority, ("spec", "priority")))
    claims += [(p, ("spec", "allowedPriorities", i)) for i, p in enumerate(spec.allowed_priorities or [])]
    fleet_index = {p.name: i for i, p in enumerate(policy.fleet.spec.priorities)}
    for name, path in claims:
        tier = tiers.get(name)  # unknown names are FLEET002
        if tier is None or may_use(tier, team.name):
            continue
        yield RESERVED_TIER.diag(
            f"team {team.name!r} claims priority tier {name!r} (value {tier.value}), which the fleet reserves for "
            f"{', '.join(tier.reserved_for or [])} (spec.priorities[{fleet_index[name]}].reservedFor)",
            team.src.locate(path),
            hint=f"use a tier you may use ({', '.join(_open_tiers(policy, team))}), or ask the platform team "
                 f"to add {team.name} to reservedFor of {name!r} in fleet.yaml")


def _open_tiers(policy: Policy, team: Team) -> list[str]:
    return [t.name for t in ordered_tiers(policy) if may_use(t, team.name)] or ["none"]


@checks(TIER_NAME)
def check_tier_names(policy: Policy) -> Iterator[Diagnostic]:
    above = (SERVING_PRIORITY_CLASS, *SYSTEM_PRIORITY_CLASSES)
    for i, p in enumerate(policy.fleet.spec.priorities):
        if p.name in above:
            yield TIER_NAME.diag(
                f"priority tier {p.name!r} shares its name with a pod PriorityClass above every tier; teams allowed "
                "this tier could set it as priorityClassName and preempt serving pods at the scheduler",
                policy.fleet_src.locate(("spec", "priorities", i, "name")),
                hint="rename the tier (its WorkloadPriorityClass is renamed with it)")


@checks(TIER_NOT_ALLOWED)
def check_tier_allowed(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    spec = team.model.spec
    if spec.namespaces and policy.fleet.spec.priorities and not team_priorities(policy, team).allowed:
        yield TIER_NOT_ALLOWED.diag(
            f"team {team.name!r} may use no priority tier (every tier at or below its own is reserved for other "
            "teams): admission would deny all its GPU jobs", team.src.locate(("spec", "namespaces")),
            hint="ask the platform team for a tier (reservedFor in fleet.yaml) or set allowedPriorities")
    if spec.priority is None or spec.allowed_priorities is None or spec.priority in spec.allowed_priorities:
        return
    yield TIER_NOT_ALLOWED.diag(
        f"team {team.name!r} has priority {spec.priority!r}, which its allowedPriorities "
        f"({', '.join(spec.allowed_priorities)}) leave out: admission would deny the tier its jobs are told to use",
        team.src.locate(("spec", "priority")),
        hint=f"add {spec.priority} to allowedPriorities or set priority to one of them")


@checks(RESERVED_UNKNOWN)
def check_reserved_for_known_teams(policy: Policy) -> Iterator[Diagnostic]:
    known = {t.name for t in policy.teams}
    for i, tier in enumerate(policy.fleet.spec.priorities):
        for j, name in enumerate(tier.reserved_for or []):
            if name not in known:
                near = closest(name, known)
                yield RESERVED_UNKNOWN.diag(
                    f"priority tier {tier.name!r} is reserved for {name!r}, which has no team file",
                    policy.fleet_src.locate(("spec", "priorities", i, "reservedFor", j)),
                    hint=f"did you mean {near!r}?" if near else "name a team of policies/teams/, or drop the entry")


@checks(DEFAULT_TIERS)
def check_one_default_tier(policy: Policy) -> Iterator[Diagnostic]:
    spec = policy.fleet.spec
    chosen = spec.defaults.priority if spec.defaults is not None else None
    for i, tier in enumerate(spec.priorities):
        if tier.default and chosen is not None and chosen != tier.name:
            yield DEFAULT_TIERS.diag(
                f"tier {tier.name!r} is marked default, but defaults.priority is {chosen!r}: teams without a "
                f"priority get {chosen!r}", policy.fleet_src.locate(("spec", "priorities", i, "default")),
                hint=f"drop default: true from {tier.name!r}, or set defaults.priority: {tier.name}")
