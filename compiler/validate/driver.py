"""Stage 2b's driver: runs the semantic rules (SPEC §6) over the assembled ``Policy``, by scope.

``RULES`` is every rule of the modules whose checks this stage runs, module by module; each rule
carries its check (``@checks(rule)`` beside it in its module). Fleet-scope checks run once with the
policy, team-scope checks once per team with ``(policy, team)`` (with them, the per-team parts of
policy-scope rules: ``Rule.team_part``), policy-scope checks once with the policy. A check shared
by several rules (not split yet) runs once. Rules of these modules without a check (GITOPS006,
over the rendered objects) are emitted by a later stage.

The order of diagnostics within one rule is the order of its check; across rules it follows the
scopes. Everything that shows diagnostics sorts them (``sort_diagnostics``), so that order is
never visible.
"""

from __future__ import annotations

from typing import Protocol

import compiler.validate.acknowledgements as acknowledgements
import compiler.validate.admission as admission
import compiler.validate.capacity as capacity
import compiler.validate.cel_types as cel_types
import compiler.validate.dra as dra
import compiler.validate.multikueue_relations as multikueue_relations
import compiler.validate.ops as ops
import compiler.validate.priorities as priorities
import compiler.validate.provisioning as provisioning
import compiler.validate.relations as relations
import compiler.validate.semantic as semantic
import compiler.validate.serving as serving
import compiler.validate.serving_storage as serving_storage
import compiler.validate.sharing as sharing
import compiler.validate.sync_safety as sync_safety
import compiler.validate.teams as teams
import compiler.validate.versions as versions
import compiler.validate.yaml_surprises as yaml_surprises
from compiler.diagnostics import Check, Diagnostic, Rule, Scope
from compiler.policy import gitops_names, multikueue_topology
from compiler.policy.graph import Policy, Team

RULES: tuple[Rule, ...] = (
    *semantic.RULES,
    *teams.RULES,
    *capacity.RULES,
    *serving.RULES,
    *multikueue_topology.RULES,
    *gitops_names.RULES,
    *admission.RULES,
    *priorities.RULES,
    *dra.RULES,
    *ops.RULES,  # OPS over the policy; those over rendered objects: compiler.verify.ops
    # the issue-20 families (docs/misconfigurations.md)
    *versions.RULES,
    *provisioning.RULES,
    *serving_storage.RULES,
    *sharing.RULES,
    *cel_types.RULES,
    *yaml_surprises.RULES,
    *sync_safety.RULES,
    *relations.RULES,  # the way back of relations checked from one side (issue 22, docs/relations.md)
    *multikueue_relations.RULES,  # the same across a MultiKueue manager and its workers
    *acknowledgements.RULES,  # acknowledged removals that match none (the way back of GITOPS302)
)

RUN_SCOPES = (Scope.FLEET, Scope.TEAM, Scope.POLICY)


def checks_of(scope: Scope, rules: tuple[Rule, ...] = RULES) -> list[Check]:
    """The distinct checks of ``rules`` with that scope, in declaration order; for the team scope,
    then the per-team parts of policy-scope rules (``Rule.team_part``), which run as team-scope
    checks do."""
    found = [r.check for r in rules if r.scope is scope and r.check is not None]
    if scope is Scope.TEAM:
        found += [r.team_part for r in rules if r.team_part is not None]
    return list(dict.fromkeys(found))


class Verdicts(Protocol):
    """Where findings may come from instead of their checks. A team's team-scope findings read the
    fleet and that team only (``Scope.TEAM``), so a store keys them like the team's lowering unit;
    the fleet-scope findings read the fleet file only (``Scope.FLEET``), so a store keys them by
    its bytes (``compiler.pipeline.units.StoredVerdicts``; ``tests/test_rule_scopes.py`` holds both
    scopes to what they read)."""

    def get(self, team: Team) -> list[Diagnostic] | None: ...

    def put(self, team: Team, found: list[Diagnostic]) -> None: ...

    def fleet(self) -> list[Diagnostic] | None: ...

    def put_fleet(self, found: list[Diagnostic]) -> None: ...

    def done(self) -> None:
        """Every team's findings have been asked for (or put)."""


def run_checks(policy: Policy, verdicts: Verdicts | None = None) -> list[Diagnostic]:
    out = None if verdicts is None else verdicts.fleet()
    if out is None:
        out = [d for check in checks_of(Scope.FLEET) for d in check(policy)]
        if verdicts is not None:
            verdicts.put_fleet(out)
    team_checks = checks_of(Scope.TEAM)
    for team in policy.teams:
        found = None if verdicts is None else verdicts.get(team)
        if found is None:
            found = [d for check in team_checks for d in check(policy, team)]
            if verdicts is not None:
                verdicts.put(team, found)
        out.extend(found)
    if verdicts is not None:
        verdicts.done()
    for check in checks_of(Scope.POLICY):
        out.extend(check(policy))
    return out
