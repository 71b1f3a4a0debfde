"""One root cause, one error (issue 20): a pool whose cut is rejected (a MIG layout that does not
exist for its GPU, profiles that do not fit) provides no GPU classes, and every budget, cap and
serving reference to those classes would otherwise be reported as "no GPU class" in files nobody
touched. The policy records such pools (``Policy.unresolved``); reference rules skip classes they
would have provided, and the pipeline still runs the semantic rules when the only errors are these
(so an unrelated over-capacity error is not hidden either).

A budget that names a cluster the fleet does not declare (a typo: FLEET002) is missing from the
cluster it meant; what follows from its absence there is the same typo, not news: its class idle
there (OPS005), its team's namespace without a queue (FLEET011), and above all its ClusterQueue
"removed" (GITOPS302, whose hint would have the team drain a production queue to fix a typo).
"""

from __future__ import annotations

from typing import Iterable

from compiler.diagnostics import Diagnostic, Severity
from compiler.model.fleet import Cluster
from compiler.policy.cuts import cut_mode
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.policy.summaries import gather
from compiler.policy.team_facts import BUDGETED

# Rules whose errors reject a pool's cut and leave the rest of the policy whole.
CUT_AREAS = ("MIG",)


def cut_mode_prefix(model: str, mode: str) -> str:
    """What every class ID of a pool of ``model`` cut by ``mode`` starts with (SPEC §9)."""
    return {"mig": f"{model}-mig-", "timeslicing": f"{model}-ts", "mps": f"{model}-mps"}.get(mode, model)


def unresolved_pools(cluster: Cluster, rejected: Iterable[str]) -> frozenset[tuple[str, str]]:
    """(cluster, class-ID prefix) of the named pools of ``cluster``."""
    names = set(rejected)
    return frozenset((cluster.name, cut_mode_prefix(p.model, cut_mode(p.cut).name)) for p in cluster.pools
                     if p.name in names)


def unresolved(policy: Policy, cluster: str, class_id: str) -> bool:
    """Whether ``class_id`` may be a class of a pool whose cut was rejected (so its absence is not news)."""
    return any(c == cluster and class_id.startswith(prefix) for c, prefix in policy.unresolved)


def recoverable(diags: Iterable[Diagnostic]) -> bool:
    """True when every error rejects a pool's cut only: the semantic rules can still run."""
    errors = [d for d in diags if d.severity is Severity.ERROR]
    return bool(errors) and all(d.code.startswith(CUT_AREAS) for d in errors)


def names_unknown_cluster(policy: Policy, team: Team) -> bool:
    """Whether a budget of ``team`` names a cluster the fleet does not declare (FLEET002)."""
    return any(b.cluster not in policy.clusters for b in team.model.spec.budgets)


@per_policy
def misplaced_classes(policy: Policy) -> frozenset[str]:
    """The GPU classes some budget names on a cluster the fleet does not declare (FLEET002), from
    the kept budgets (``team_facts.BUDGETED``)."""
    return frozenset(cid for cluster, cid in gather(policy, BUDGETED) if cluster not in policy.clusters)
