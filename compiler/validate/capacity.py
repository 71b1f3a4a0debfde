"""Capacity rules (KUEUE001-004, 006, 007): guarantees against the hardware, lending, department
caps, borrowing that can be met, each with its one check. They read the allocation model
(``compiler.policy.allocation``) and the policy only."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, checks, define
from compiler.policy.allocation import TeamAllocation
from compiler.policy.classes import GpuClass
from compiler.policy.cohorts import borrowable_spare, root_departments, spare_capacity, spare_cohort
from compiler.policy.graph import Policy, Team
from compiler.policy.multikueue_topology import is_manager
from compiler.policy.summaries import gather
from compiler.policy.team_facts import CAPPED, LENDABLE, WORST_BORROW, ancestors
from compiler.validate.related import related

OVER_CAPACITY = define(
    "KUEUE001", "Guaranteed GPUs of a class on a cluster fit the physical capacity of the pools behind "
    "it (serving-reserved pools excluded).",
    "# 4 nodes x 8 H100 = 32; teams guarantee 16 + 16", "# 4 nodes x 8 H100 = 32; teams guarantee 24 + 16",
    scope=Scope.POLICY)
LEND_OVER = define(
    "KUEUE002", "A team lends at most what it is guaranteed (Kueue: lendingLimit <= nominalQuota).",
    "guaranteed: 8\nlend: 4", "guaranteed: 4\nlend: 8", scope=Scope.TEAM)
DEPT_CAP = define(
    "KUEUE003", "The teams of a department (and its sub-departments) guarantee no more than the "
    "department's cap for that cluster and class.",
    "caps: [{cluster: onprem, class: h100, max: 16}]   # teams: 8 + 8",
    "caps: [{cluster: onprem, class: h100, max: 16}]   # teams: 12 + 8", scope=Scope.POLICY)
BORROW_NEVER = define(
    "KUEUE004", "A borrowing limit can be met: it does not exceed what the rest of the cohort tree can "
    "ever lend of that class (other teams' lendable guarantees plus the GPUs no team is guaranteed).",
    "# others lend 16 of h100\nborrow: 8", "# others lend 0 of h100, all 32 guaranteed\nborrow: 8",
    Severity.WARNING, scope=Scope.POLICY)
SPARE_STRANDED = define(
    "KUEUE007", "GPUs no team is guaranteed can be borrowed: the cluster's queues sit under one root "
    "department, whose Cohort holds them (Kueue lends only within a cohort tree).",
    "# departments research and product under ai; 16 of 64 H100 unguaranteed",
    "# root departments research and product; 16 of 64 H100 unguaranteed", Severity.WARNING, scope=Scope.POLICY)
CHILD_OVER_PARENT = define(
    "KUEUE006", "A sub-department's cap does not exceed its parent department's cap.",
    "# parent cap 32, child cap 16", "# parent cap 16, child cap 32", scope=Scope.FLEET)


RULES: tuple[Rule, ...] = (
    OVER_CAPACITY, LEND_OVER, DEPT_CAP, BORROW_NEVER, SPARE_STRANDED, CHILD_OVER_PARENT,
)



def _by_class(policy: Policy) -> list[tuple[tuple[str, str], list[TeamAllocation]]]:
    """Allocation entries per (cluster, class) whose class exists, in (cluster, class) order."""
    return [(key, entries) for key, entries in policy.allocation.by_class()
            if policy.classes.get(key[0], {}).get(key[1]) is not None]


@checks(OVER_CAPACITY)
def check_over_capacity(policy: Policy) -> Iterator[Diagnostic]:
    teams = {t.name: t for t in policy.teams}  # the last file of a name, as before (not policy.team's first)
    for (cluster, cid), entries in _by_class(policy):
        cls = policy.classes[cluster][cid]
        total = policy.allocation.guaranteed_total(cluster, cid)
        if total > cls.capacity:
            parts = ", ".join(f"{e.team} {e.guaranteed.value or 0}" for e in entries)
            pools = ", ".join(f"{s.pool} {s.nodes}x{s.per_node}" for s in cls.slices if not s.serving)
            last = max(entries, key=lambda e: e.guaranteed.value or 0)
            # A MultiKueue manager's capacity is its workers' (compiler.multikueue.with_worker_classes).
            held = "its MultiKueue workers' pools hold" if is_manager(policy.clusters[cluster]) else "the pools hold"
            error_file = teams[last.team].path
            yield OVER_CAPACITY.diag(
                f"{cid} on {cluster}: teams guarantee {total} ({parts}) but {held} {cls.capacity} "
                f"({pools or 'none'})", teams[last.team].src.locate(last.path + ("guaranteed",)),
                hint=f"reduce guarantees by {total - cls.capacity} or add nodes; serving-reserved pools do not count")
            for e in entries:  # every other file that contributes: the teams' guarantees, the fleet's pools
                if e is not last and (e.guaranteed.value or 0) > 0 and teams[e.team].path != error_file:
                    yield related(OVER_CAPACITY, f"{e.team} guarantees {e.guaranteed.value} of {cid} on {cluster}, "
                                  f"part of {total} against a capacity of {cls.capacity}",
                                  teams[e.team].src.locate(e.path + ("guaranteed",)), error_file)
            for where, text in _pool_sites(policy, cluster, cls):
                yield related(OVER_CAPACITY, f"{text}: {cid} on {cluster} holds {cls.capacity}, teams guarantee "
                              f"{total}", where, error_file)


def _pool_sites(policy: Policy, cluster: str, cls: GpuClass) -> Iterator[tuple[Location, str]]:
    """Where the fleet file sizes the training pools behind ``cls`` (their ``nodes``)."""
    c = policy.clusters.get(cluster)
    if c is None or is_manager(c):  # a MultiKueue manager's capacity is its workers' pools
        return
    ci = policy.fleet.spec.clusters.index(c)
    index = {p.name: i for i, p in enumerate(c.pools)}
    for s in cls.slices:
        if not s.serving and s.pool in index:
            yield (policy.fleet_src.locate(("spec", "clusters", ci, "pools", index[s.pool], "nodes")),
                   f"pool {s.pool!r} ({s.nodes} nodes x {s.per_node})")


@checks(LEND_OVER)
def check_lending(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    """A team's budgets, resolved from its file and the fleet's defaults alone (a team-scope check,
    kept with the team's unit: no pass over the 52,000 budgets of 5,000 teams after a one-team
    edit); located in the team's own file, even when another file reuses its name (FLEET003)."""
    src = team.src
    for e in policy.allocation.for_team(team.name):
        g = e.guaranteed.value or 0
        if e.source == team.path and e.lend.value is not None and e.lend.value > g:
            yield LEND_OVER.diag(f"{e.team} lends {e.lend.value} of {e.gpu_class} on {e.cluster} but is guaranteed {g}"
                                 f" (lend from {e.lend.origin})", src.locate(e.path + ("lend",)),
                                 hint="lend at most the guaranteed amount (Kueue rejects lendingLimit > nominalQuota)")


@checks(BORROW_NEVER)
def check_borrowing(policy: Policy) -> Iterator[Diagnostic]:
    if _borrowing_met(policy):
        return
    teams = {t.name: t for t in policy.teams}
    lent_spare = {c: borrowable_spare(policy, c) for c in policy.clusters}
    for (cluster, cid), entries in _by_class(policy):
        limited = [e for e in entries if e.borrow.value]  # None (unlimited) and 0 cannot be out of reach
        if not limited:
            continue
        lendable: dict[str, int] = defaultdict(int)  # per team, so "the others" is linear, not quadratic
        for o in entries:
            lendable[o.team] += o.lendable
        all_lendable = sum(lendable.values()) + lent_spare[cluster].get(cid, 0)
        for e in limited:
            others = all_lendable - lendable[e.team]
            if (limit := e.borrow.value or 0) > others:
                yield BORROW_NEVER.diag(
                    f"{e.team} may borrow {limit} of {cid} on {cluster} but the other queues and the "
                    f"unguaranteed GPUs can lend at most {others}", teams[e.team].src.locate(e.path + ("borrow",)),
                    hint="lower the borrowing limit, or have other teams guarantee and lend this class")


def _borrowing_met(policy: Policy) -> bool:
    """Whether every borrowing limit can be met (KUEUE004 finds nothing), read from the teams'
    kept summaries (``compiler.policy.team_facts``): a limit plus its team's lendable GPUs of the
    class is at most what the class's queues lend plus the spare GPUs. Teams sharing a name
    (FLEET001) pool their lendable GPUs in the check: then it decides."""
    if len({t.name for t in policy.teams}) != len(policy.teams):
        return False
    lendable, worst = gather(policy, LENDABLE), gather(policy, WORST_BORROW)
    spare: dict[str, dict[str, int]] = {}
    for (cluster, cid), most in worst.items():
        if policy.classes.get(cluster, {}).get(cid) is None:
            continue  # not a class: not checked
        if cluster not in spare:
            spare[cluster] = borrowable_spare(policy, cluster)
        if most > lendable.get((cluster, cid), 0) + spare[cluster].get(cid, 0):
            return False
    return True


@checks(SPARE_STRANDED)
def check_stranded_spare(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        spare = spare_capacity(policy, c.name)
        if not spare or spare_cohort(policy, c.name):
            continue
        roots = root_departments(policy, c.name)
        free = ", ".join(f"{n} of {cid}" for cid, n in sorted(spare.items()))
        yield SPARE_STRANDED.diag(
            f"cluster {c.name!r}: {free} are guaranteed to no team, and its queues sit under {len(roots)} root "
            f"departments ({', '.join(roots)}), so no queue can borrow them",
            policy.fleet_src.locate(("spec", "clusters", ci, "name")),
            hint="give the root departments a common parent department, or guarantee those GPUs to teams")


@checks(DEPT_CAP)
def check_department_caps(policy: Policy) -> Iterator[Diagnostic]:
    if _caps_met(policy):
        return
    src = policy.fleet_src
    teams = {t.name: t for t in policy.teams}
    chains: dict[str, frozenset[str]] = {}  # a department's ancestors, once (not once per team and cap)

    def under(team: str, dept: str) -> bool:
        own = teams[team].model.spec.department
        if own not in chains:
            chains[own] = frozenset(ancestors(policy, own))
        return dept in chains[own]

    for i, d in enumerate(policy.fleet.spec.departments):
        for k, cap in enumerate(d.caps):
            entries = [e for e in policy.allocation.for_class(cap.cluster, cap.class_)
                       if e.team in teams and under(e.team, d.name)]
            total = sum(e.guaranteed.value or 0 for e in entries)
            if total > cap.max:
                parts = ", ".join(f"{e.team} {e.guaranteed.value or 0}" for e in entries)
                yield DEPT_CAP.diag(f"department {d.name!r} caps {cap.class_} on {cap.cluster} at {cap.max} but its "
                                    f"teams guarantee {total} ({parts})",
                                    src.locate(("spec", "departments", i, "caps", k, "max")),
                                    hint=f"raise the cap or lower the teams' guarantees by {total - cap.max}")
                for e in entries:
                    if (e.guaranteed.value or 0) > 0:
                        yield related(DEPT_CAP, f"{e.team} guarantees {e.guaranteed.value} of {cap.class_} on "
                                      f"{cap.cluster}, part of department {d.name!r}'s {total} against its cap of "
                                      f"{cap.max}", teams[e.team].src.locate(e.path + ("guaranteed",)), src.path)


def _caps_met(policy: Policy) -> bool:
    """Whether no department's teams guarantee more than its caps (KUEUE003 finds nothing), read
    from the teams' kept summaries (``team_facts.CAPPED``: what the teams below each capped
    department guarantee, as ``check_department_caps`` counts them)."""
    totals = gather(policy, CAPPED)
    return all(totals.get((d.name, cap.cluster, cap.class_), 0) <= cap.max
               for d in policy.fleet.spec.departments for cap in d.caps)


@checks(CHILD_OVER_PARENT)
def check_child_caps(policy: Policy) -> Iterator[Diagnostic]:
    for i, d in enumerate(policy.fleet.spec.departments):
        if d.parent is None:
            continue
        parent = policy.departments.get(d.parent)
        for k, cap in enumerate(d.caps):
            pcap = next((c for c in (parent.caps if parent else [])
                         if c.cluster == cap.cluster and c.class_ == cap.class_), None)
            if pcap is not None and cap.max > pcap.max:
                yield CHILD_OVER_PARENT.diag(
                    f"department {d.name!r} caps {cap.class_} on {cap.cluster} at {cap.max}, above its parent "
                    f"{d.parent!r} ({pcap.max})", policy.fleet_src.locate(("spec", "departments", i, "caps", k, "max")),
                    hint="a sub-department cannot hold more than its parent")
