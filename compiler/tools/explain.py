"""``gpupolicy explain <team>``: the allocation model read from one team's point of view."""

from __future__ import annotations

from compiler.policy.allocation import TeamAllocation
from compiler.policy.cohorts import borrowable_spare, spare_cohort
from compiler.policy.graph import Policy
from compiler.policy.labels import LABEL_PRIORITY_CLASS, LABEL_QUEUE
from compiler.policy.priorities import SERVING_PRIORITY_CLASS, team_priorities
from compiler.policy.queues import training_namespaces
from compiler.policy.summaries import gather
from compiler.policy.team_facts import CAPPED, ancestors


def explain_team(policy: Policy, name: str) -> str:
    team = policy.team(name)
    assert team is not None
    spec = team.model.spec
    lines = [f"team {name} (department {spec.department}, isolation {spec.isolation}, file {team.path})", ""]
    tiers = sorted(policy.fleet.spec.priorities, key=lambda p: -p.value)
    prio = team_priorities(policy, team)
    default_tier = prio.tier
    for cluster in sorted({e.cluster for e in policy.allocation.for_team(name)}):
        lines.append(f"cluster {cluster}: ClusterQueue {name} in cohort {spec.department}; "
                     f"LocalQueue {name} in {', '.join(training_namespaces(team, cluster)) or '(no namespace)'}")
        for e in [e for e in policy.allocation.for_team(name) if e.cluster == cluster]:
            lines += _class_lines(policy, name, spec.department, cluster, e)
        lines.append("")
    if tiers:
        lines.append("priorities (higher preempts lower inside the queue; any queue reclaims what it lent):")
        for p in tiers:
            mark = " (default for this team)" if p.name == default_tier else ""
            use = "may use" if p.name in prio.allowed else (
                f"reserved for {', '.join(p.reserved_for)}" if p.reserved_for is not None else "above its tier")
            lines.append(f"  {p.name:<16} {p.value:>10}  {use}{mark}")
        lines.append(f"  allowed tiers ({prio.allowed_origin}): {', '.join(prio.allowed) or 'none'}; its tier "
                     f"{default_tier} comes from the {prio.tier_origin}")
        lines.append(f"  priorityClassName on its pods: empty or an allowed tier; {SERVING_PRIORITY_CLASS} only in "
                     "serving namespaces")
        lines.append("")
    labels = [f"{LABEL_QUEUE}={name}"] + [f"{k}=<value>" for k in policy.fleet.spec.admission.required_labels]
    if prio.tier is not None:
        labels.append(f"{LABEL_PRIORITY_CLASS}=<{'|'.join(prio.allowed)}> (e.g. {prio.tier})")
    lines.append("a job is admitted only with the labels:")
    lines += [f"  {label}" for label in labels]
    lines.append(f"  gpupolicy.dev/data-class one of: {', '.join(sorted(spec.data_classes))}")
    return "\n".join(lines) + "\n"


def _class_lines(policy: Policy, name: str, department: str, cluster: str, e: TeamAllocation) -> list[str]:
    """One budget of the team: its amounts and their origins, the department caps over it, who
    lends it GPUs and who may take them back."""
    cls = policy.classes.get(cluster, {}).get(e.gpu_class)
    lines = [f"  {e.gpu_class} ({cls.resource if cls else '?'}; capacity {cls.capacity if cls else 0}):",
             f"    guaranteed {e.guaranteed.show():>9}  from {e.guaranteed.origin}",
             f"    borrow     {e.borrow.show():>9}  from {e.borrow.origin}",
             f"    lend       {e.lend.show():>9}  from {e.lend.origin} (lendable now: {e.lendable})"]
    capped = gather(policy, CAPPED)
    for dept in ancestors(policy, department):
        for dcap in policy.departments[dept].caps:
            if (dcap.cluster, dcap.class_) == (cluster, e.gpu_class):
                # KUEUE003 bounds guarantees; nothing in the rendered Cohorts bounds use
                lines.append(f"    department {dept} caps what its teams guarantee here at {dcap.max} (they "
                             f"guarantee {capped.get((dept, cluster, e.gpu_class), 0)}); borrowing can take "
                             "them above it")
    if e.borrow.value == 0:
        return lines + ["    may borrow from: nobody (borrow limit 0): it runs within its guarantee, which no other "
                        "queue reclaims"]
    others = [o for o in policy.allocation.for_class(cluster, e.gpu_class) if o.team != name]
    lenders = [f"{o.team} ({o.lendable})" for o in others if o.lendable > 0]
    if free := borrowable_spare(policy, cluster).get(e.gpu_class):
        lenders.append(f"the unguaranteed GPUs of Cohort {spare_cohort(policy, cluster)} ({free})")
    # only a queue that lends can take back what it lent: one with nothing lendable never lends,
    # so it reclaims nothing from this team
    reclaimers = [o.team for o in others if o.lendable > 0]
    lines.append(f"    may borrow from: {', '.join(lenders) or 'nobody (no one lends this class)'}")
    # Fair sharing is on (compiler.policy.kueue_manager, preemptionStrategies
    # LessThanOrEqualToFinalShare/LessThanInitialShare): besides the queues that lent them, any
    # queue of the cohort tree below its fair share may preempt a borrower above it, so GPUs
    # borrowed from the unguaranteed root pool are not safe either (issue 15).
    lines.append(f"    borrowed GPUs can be reclaimed by: {', '.join(reclaimers) or 'no lender'}; and by "
                 "fair-sharing preemption from any queue of the cohort tree below its fair share")
    return lines
