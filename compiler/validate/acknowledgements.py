"""Acknowledged removals that acknowledge nothing (issue 22, the way back of GITOPS302).

GITOPS302 (``compiler.validate.sync_safety``) asks a removal to be acknowledged in the policy; an
acknowledgement left in place after its removal is done is silent, and it stays in force: when the
object comes back (the team budgets on that cluster again, the class returns) its next removal is
accepted without anyone seeing it. GITOPS402 reports an ``acknowledgedRemovals`` entry that

- names an object this policy renders (so it matches no removal, and would match the next one);
- can never match: a cluster the fleet no longer declares (a cluster's removal takes its
  Applications with it, GITOPS302 does not ask), or, in a team file, anything but the team's own
  ClusterQueue (GITOPS302 reads only those there).

Whether the object is still in the previous ``out/`` is not asked: right after ``gpupolicy build``
the working tree's ``out/`` no longer holds it, while the change that removes it is still in review.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.load.source import SourceFile
from compiler.model.acknowledge import AcknowledgedRemoval
from compiler.policy.graph import Policy, Team

# GITOPS302's own notion of what the policy renders, so the two rules cannot disagree.
from compiler.validate.sync_safety import _renders_flavor, _renders_queue

STALE = define(
    "GITOPS402", "An acknowledgedRemovals entry matches a removal this policy makes: one naming an object the policy "
    "still renders, a cluster the fleet does not declare, or (in a team file) anything but the team's own "
    "ClusterQueue acknowledges nothing now and would accept a later removal unseen.",
    "# team vision has no budget on onprem any more\nacknowledgedRemovals:\n- {cluster: onprem, kind: ClusterQueue, "
    "name: vision, reason: moved to cloud}",
    "# team vision budgets on onprem again\nacknowledgedRemovals:\n- {cluster: onprem, kind: ClusterQueue, "
    "name: vision, reason: moved to cloud}", Severity.WARNING, scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (STALE,)


def _why_stale(policy: Policy, a: AcknowledgedRemoval, team: Team | None) -> str | None:
    if a.cluster not in policy.clusters:
        return f"the fleet declares no cluster {a.cluster!r} (a cluster's removal needs no acknowledgement)"
    if team is not None and (a.kind != "ClusterQueue" or a.name != team.name):
        return (f"a team file acknowledges only the removal of its own ClusterQueue ({team.name!r}); GITOPS302 "
                "reads this one nowhere")
    if a.kind == "ClusterQueue" and _renders_queue(policy, a.cluster, a.name):
        return f"team {a.name!r} still has a budget on {a.cluster!r}, so the ClusterQueue is rendered"
    if a.kind == "ResourceFlavor" and policy.classes.get(a.cluster, {}).get(a.name) is not None \
            and _renders_flavor(policy, a.cluster, a.name):
        return f"GPU class {a.name!r} still has training capacity on {a.cluster!r}, so the ResourceFlavor is rendered"
    return None


def _entries(policy: Policy) -> Iterator[tuple[SourceFile, Team | None, int, AcknowledgedRemoval]]:
    for i, a in enumerate(policy.fleet.spec.acknowledged_removals):
        yield policy.fleet_src, None, i, a
    for t in policy.teams:
        for i, a in enumerate(t.model.spec.acknowledged_removals):
            yield t.src, t, i, a


@checks(STALE)
def check_stale_acknowledgements(policy: Policy) -> Iterator[Diagnostic]:
    for src, team, i, a in _entries(policy):
        why = _why_stale(policy, a, team)
        if why is not None:
            yield STALE.diag(
                f"acknowledged removal of {a.kind} {a.name!r} on {a.cluster!r} matches no removal: {why}",
                src.locate(("spec", "acknowledgedRemovals", i)),
                hint="drop the entry (its removal is done, or it never applied); a later removal is then "
                "reported again (GITOPS302)")
