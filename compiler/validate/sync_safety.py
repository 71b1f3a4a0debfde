"""Changes a sync cannot undo (docs/misconfigurations.md, family "sync"), caught at validate and
accepted only by an acknowledgement written in the policy (``acknowledgedRemovals``), not only in
the pull request comment.

GITOPS302 compares the Kueue objects the clusters hold before the change (``Policy.previous``,
filled by ``compiler.pipeline.previous``) with what the policy now asks for:

- a ClusterQueue no longer rendered (the team dropped its budgets on the cluster, or was renamed or
  deleted): ArgoCD prunes it, Kueue keeps it terminating behind its ``resource-in-use`` finalizer
  until the admitted workloads finish, and the pending ones are never admitted;
- a ResourceFlavor no longer rendered (a GPU class gone: a MIG layout or a cut changed, a pool
  removed): its deletion hangs while a ClusterQueue still names it, and workloads admitted on it
  lose the flavor their quota was counted against.

Removals the output makes safe by construction are not flagged: Namespaces and model-cache PVCs
carry ``Prune=false`` (kept, never deleted by a sync), a LocalQueue never changes its immutable
``clusterQueue`` (both are named after the team), serving objects moved to another namespace are
pruned last (``PruneLast``).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, checks, define
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy
from compiler.validate.cascade import names_unknown_cluster, unresolved

REMOVAL = define(
    "GITOPS302", "A change that removes a ClusterQueue or a ResourceFlavor from a cluster is acknowledged in the "
    "policy (acknowledgedRemovals): Kueue's resource-in-use finalizer holds such objects while workloads use them, "
    "and their pending workloads are never admitted.",
    "# team vision drops its budgets on onprem\nacknowledgedRemovals:\n"
    "- {cluster: onprem, kind: ClusterQueue, name: vision, reason: moved to cloud, queue drained}",
    "# team vision drops its budgets on onprem, no acknowledgement", scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (REMOVAL,)


def _removed(policy: Policy) -> Iterator[tuple[str, str, str]]:
    """(cluster, kind, name) of the Kueue objects the previous output holds and the policy no longer
    renders, on clusters the fleet still declares, in the order of their paths. The paths of the
    rendered ClusterQueues are taken away in one set difference first (34,000 at 5,000 teams,
    each asked of its team's budgets: 0.20 -> 0.07 s of the rules' process)."""
    assert policy.previous is not None
    queues = _rendered_queues(policy)
    removed: list[tuple[str, str, str, str]] = []
    for rel in policy.previous - {f"{cluster}/kueue/clusterqueue._.{team}.yaml" for cluster, team in queues}:
        cluster, _, file = rel.split("/", 2)
        if cluster not in policy.clusters:
            continue  # a cluster taken out of the fleet: its Applications go with it
        kind, _, rest = file.partition(".")
        name = rest.removeprefix("_.").removesuffix(".yaml")
        if kind == "clusterqueue" and (cluster, name) not in queues:
            removed.append((rel, cluster, "ClusterQueue", name))
        elif kind == "resourceflavor" and not _renders_flavor(policy, cluster, name):
            removed.append((rel, cluster, "ResourceFlavor", name))
    for _, cluster, kind, name in sorted(removed):
        yield cluster, kind, name


def _renders_queue(policy: Policy, cluster: str, team: str) -> bool:
    return (cluster, team) in _rendered_queues(policy)


@per_policy  # GITOPS302 and GITOPS402 (the acknowledgements) ask it
def _rendered_queues(policy: Policy) -> frozenset[tuple[str, str]]:
    """The (cluster, team) of every ClusterQueue the policy renders, in one pass over the
    allocation (a budget each): one per team, of the first file of a name (as ``Policy.team``
    finds it), and cluster it has a budget on."""
    first = {t.name: t.path for t in reversed(policy.teams)}
    return frozenset((e.cluster, e.team) for e in policy.allocation.entries if first.get(e.team) == e.source)


def _renders_flavor(policy: Policy, cluster: str, class_id: str) -> bool:
    cls = policy.classes.get(cluster, {}).get(class_id)
    if cls is None:
        return unresolved(policy, cluster, class_id)  # a rejected cut is its own error, not a removal
    return any(not s.serving for s in cls.slices) or not cls.slices


def _acknowledged(policy: Policy, cluster: str, kind: str, name: str) -> bool:
    acks = [a for a in policy.fleet.spec.acknowledged_removals]
    team = policy.team(name) if kind == "ClusterQueue" else None
    if team is not None:
        acks += team.model.spec.acknowledged_removals  # a team may accept the removal of its own queue
    return any(a.cluster == cluster and a.kind == kind and a.name == name for a in acks)


def _where(policy: Policy, cluster: str, kind: str, name: str) -> Location:
    """The team file that dropped its queue; else the fleet's cluster (a class gone, a team deleted)."""
    team: Team | None = policy.team(name) if kind == "ClusterQueue" else None
    if team is not None:
        return team.src.locate(("spec", "budgets"), key=True)
    ci = next(i for i, c in enumerate(policy.fleet.spec.clusters) if c.name == cluster)
    return policy.fleet_src.locate(("spec", "clusters", ci, "name"))


@checks(REMOVAL)
def check_removals(policy: Policy) -> Iterator[Diagnostic]:
    if policy.previous is None:
        return
    for cluster, kind, name in _removed(policy):
        if _acknowledged(policy, cluster, kind, name):
            continue
        team = policy.team(name) if kind == "ClusterQueue" else None
        if team is not None and names_unknown_cluster(policy, team):
            continue  # its budgets name a cluster that does not exist (FLEET002): a typo, not a removal
        if kind == "ClusterQueue":
            why = (f"team {name!r} no longer has a budget on {cluster!r}" if policy.team(name) is not None
                   else f"no team {name!r} exists any more (renamed or deleted)")
            effect = ("ArgoCD prunes it; Kueue keeps it terminating behind its resource-in-use finalizer until its "
                      "admitted workloads finish, and its pending workloads are never admitted")
            where_ack = "the team file (or fleet.yaml)" if policy.team(name) is not None else "fleet.yaml"
        else:
            why = f"GPU class {name!r} no longer has training capacity on {cluster!r}"
            effect = ("its deletion hangs behind Kueue's resource-in-use finalizer while a ClusterQueue names it, "
                      "and workloads admitted on it lose the flavor their quota was counted against")
            where_ack = "fleet.yaml"
        yield REMOVAL.diag(
            f"this change removes {kind} {name!r} from cluster {cluster!r} ({why}): {effect}",
            _where(policy, cluster, kind, name),
            hint=f"drain it first (ClusterQueue stopPolicy: HoldAndDrain), then acknowledge in {where_ack}: "
                 f"acknowledgedRemovals: [{{cluster: {cluster}, kind: {kind}, name: {name}, reason: ...}}]")
