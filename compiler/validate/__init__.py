"""Stage 2, validate: schema per file, then the policy graph as a whole."""

from __future__ import annotations

from compiler.catalog import Catalog, builtin_catalog
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load.source import PolicySources
from compiler.load.yaml_faults import LOAD_LIMIT
from compiler.policy.allocation import build_allocation
from compiler.policy.classes import derive_classes
from compiler.policy.graph import Policy, Team
from compiler.policy.multikueue_topology import with_worker_classes
from compiler.validate.cascade import unresolved_pools
from compiler.validate.driver import run_checks
from compiler.validate.mig import pool_mig_instances
from compiler.validate.schema import parse_fleet, parse_team

# A guard against a runaway policy directory, above the largest organisation the compiler is
# measured at (issue 21: 10,000 teams x 50 clusters, bench/README.md).
MAX_TEAMS = 20_000


__all__ = ["assemble_policy", "build_policy", "run_checks"]


def build_policy(sources: PolicySources) -> tuple[Policy | None, list[Diagnostic]]:
    """The whole validate stage: ``assemble_policy``, then the semantic rules (``run_checks``).
    For commands and tests that want a validated policy without lowering it; the pipeline runs
    the two steps itself, the rules beside lowering."""
    policy, diags = assemble_policy(sources)
    if policy is None:
        return None, diags
    return policy, diags + run_checks(policy)


def assemble_policy(sources: PolicySources) -> tuple[Policy | None, list[Diagnostic]]:
    """Schema-check every file and assemble the ``Policy`` with its derived facts (classes,
    capacity, allocation).

    Returns ``None`` when the files are too broken to assemble a policy; all diagnostics found
    so far are returned either way (one bad team file never hides another's problems)."""
    diags: list[Diagnostic] = []
    fleet = None
    if sources.fleet is not None:
        fleet, d = parse_fleet(sources.fleet)
        diags.extend(d)
    teams: list[Team] = []
    for src in sources.teams:
        model, d = parse_team(src)
        diags.extend(d)
        if model is not None:
            teams.append(Team(model, src))
    if fleet is None or sources.fleet is None or has_errors(diags):
        return None, diags
    if len(teams) > MAX_TEAMS:
        diags.append(LOAD_LIMIT.diag(f"{len(teams)} team files, over the limit of {MAX_TEAMS}",
                                     sources.fleet.locate(())))
        return None, diags
    teams.sort(key=lambda t: (t.name, t.path))

    catalog: Catalog = builtin_catalog().with_models(
        spec.to_model(model_id) for model_id, spec in sorted(fleet.spec.catalog.items())
    )
    classes = {}
    unresolved: set[tuple[str, str]] = set()
    for ci, cluster in enumerate(fleet.spec.clusters):
        mig: dict[str, dict[str, int]] = {}
        rejected: list[str] = []
        for pi, pool in enumerate(cluster.pools):
            per_node, d = pool_mig_instances(pool, catalog, sources.fleet, ("spec", "clusters", ci, "pools", pi))
            diags.extend(d)
            if per_node is not None:
                mig[pool.name] = per_node
            elif has_errors(d):
                rejected.append(pool.name)
        classes[cluster.name] = derive_classes(cluster, mig)
        unresolved |= unresolved_pools(cluster, rejected)
    classes = with_worker_classes(fleet.spec.clusters, classes)  # MultiKueue managers admit for workers
    capacity = {(c, cid): cls.capacity for c, by_id in classes.items() for cid, cls in by_id.items()}
    allocation = build_allocation(
        [(t.name, t.model.spec.department, t.path, t.model.spec.budgets) for t in teams],
        {d.name: d for d in fleet.spec.departments},
        fleet.spec.defaults.budget,
        capacity,
    )
    return Policy(fleet, sources.fleet, tuple(teams), catalog, classes, allocation, frozenset(unresolved)), diags
