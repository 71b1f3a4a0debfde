"""What the draft does differently from the cluster it was imported from, for INVENTORY.md.

The draft reproduces each team's quotas exactly, but gpupolicy renders Kueue its own way, and some of
what a cluster's Kueue objects say has no place in the policy language. Both are listed, with the
numbers, never dropped silently:

- ``not-imported``: a Cohort's own quota and limits. The policy gives departments no quota: the one
  Cohort that holds GPUs in gpupolicy's output is the root department's, and it holds exactly the
  GPUs of the cluster's training pools that no team is guaranteed (``compiler.policy.cohorts``,
  ``compiler.lower.kueue.lower_cohorts``). A root Cohort's ``nominalQuota`` is therefore imported
  when the draft's pools leave exactly that many GPUs unguaranteed, and listed otherwise; a nested
  Cohort's quota, any Cohort's ``borrowingLimit`` / ``lendingLimit`` always are (department
  ``caps`` only check the guarantees of the teams below, and ``defaults`` are per team: neither
  limits what a subtree borrows or lends).
- ``behaviour-change``: ClusterQueue settings gpupolicy sets its own way (preemption, queueing
  strategy, flavor fungibility, stop policy, admission fair sharing, admission checks), fair
  sharing (gpupolicy's Kueue configuration turns it on; ``status.fairSharing`` on a ClusterQueue or
  Cohort says whether the cluster runs it), the GPUs no team is guaranteed becoming borrowable, and
  LocalQueues renamed after their team (gpupolicy's queue-name admission policy refuses any other
  queue name, and Kueue no longer finds ``default`` for jobs without a queue label).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.policy.labels import LABEL_QUEUE
from compiler.tools.cluster_import.cluster import ClusterDraft, flavor_class
from compiler.tools.cluster_import.kueue import CohortInfo, Quota
from compiler.tools.cluster_import.pools import dns_label

if TYPE_CHECKING:  # draft.py calls draft_changes
    from compiler.tools.cluster_import.draft import Draft

# gpupolicy's ClusterQueue (compiler.lower.kueue.lower_team_queues) and Kueue's defaults for what
# it sets; tests/test_cluster_import.py proves the first against a rendered ClusterQueue.
GPUPOLICY = {"queueingStrategy": "BestEffortFIFO", "preemption.withinClusterQueue": "LowerPriority",
             "preemption.reclaimWithinCohort": "Any", "preemption.borrowWithinCohort.policy": "Never",
             "flavorFungibility.whenCanBorrow": "MayStopSearch", "flavorFungibility.whenCanPreempt": "TryNextFlavor",
             "stopPolicy": "None", "admissionScope.admissionMode": "NoAdmissionFairSharing"}
KUEUE_DEFAULTS = {"queueingStrategy": "BestEffortFIFO", "preemption.withinClusterQueue": "Never",
                  "preemption.reclaimWithinCohort": "Never", "preemption.borrowWithinCohort.policy": "Never",
                  "flavorFungibility.whenCanBorrow": "MayStopSearch",
                  "flavorFungibility.whenCanPreempt": "TryNextFlavor", "stopPolicy": "None",
                  "admissionScope.admissionMode": "NoAdmissionFairSharing"}
FAIR_SHARING = "LessThanOrEqualToFinalShare, LessThanInitialShare"  # compiler.policy.kueue_manager
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"

# what each change does to running work: (setting, old, new) -> consequence; (setting, None, None) any
_EFFECT: dict[tuple[str, str | None, str | None], str] = {
    ("queueingStrategy", "StrictFIFO", "BestEffortFIFO"): "a job that does not fit no longer holds back the jobs "
    "behind it: smaller, later jobs of the queue may start first",
    ("preemption.withinClusterQueue", None, "LowerPriority"): "a pending job preempts lower-priority running jobs "
    "of its own queue",
    ("preemption.reclaimWithinCohort", "Never", "Any"): "a queue below its guarantee preempts borrowers of any "
    "priority in the cohort tree; before, lent GPUs came back only as borrowers finished",
    ("preemption.reclaimWithinCohort", "LowerPriority", "Any"): "a queue below its guarantee preempts borrowers of "
    "any priority, not only lower ones",
    ("preemption.borrowWithinCohort.policy", None, "Never"): "a job no longer preempts lower-priority jobs of other "
    "queues to borrow (under fair sharing Kueue ignores this setting anyway)",
    ("flavorFungibility.whenCanBorrow", None, None): "which flavor a job is tried on first (borrowing versus the "
    "next flavor) follows Kueue's default",
    ("flavorFungibility.whenCanPreempt", None, None): "whether a job preempts or tries the next flavor follows "
    "Kueue's default",
    ("stopPolicy", None, "None"): "the stopped queue admits jobs again",
    ("admissionScope.admissionMode", None, None): "the queue's LocalQueues are no longer ordered by their past "
    "usage (admission fair sharing)",
}


@dataclass(frozen=True)
class Change:
    cluster: str
    kind: str  # not-imported | behaviour-change
    message: str
    hint: str = ""


def _obj(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _flat(settings: dict[str, Any]) -> dict[str, str]:
    """A ClusterQueue's settings as ``KUEUE_DEFAULTS`` keys, Kueue's default where unset."""
    pre, fung, scope = (_obj(settings, k) for k in ("preemption", "flavorFungibility", "admissionScope"))
    bwc = _obj(pre, "borrowWithinCohort")
    got = {"queueingStrategy": settings.get("queueingStrategy"),
           "preemption.withinClusterQueue": pre.get("withinClusterQueue"),
           "preemption.reclaimWithinCohort": pre.get("reclaimWithinCohort"),
           "preemption.borrowWithinCohort.policy": bwc.get("policy"),
           "flavorFungibility.whenCanBorrow": fung.get("whenCanBorrow"),
           "flavorFungibility.whenCanPreempt": fung.get("whenCanPreempt"),
           "stopPolicy": settings.get("stopPolicy"),
           "admissionScope.admissionMode": scope.get("admissionMode")}
    out = {k: str(v) if v is not None else KUEUE_DEFAULTS[k] for k, v in got.items()}
    if bwc.get("maxPriorityThreshold") is not None and out["preemption.borrowWithinCohort.policy"] != "Never":
        out["preemption.borrowWithinCohort.policy"] += f" (maxPriorityThreshold {bwc['maxPriorityThreshold']})"
    return out


def _effect(key: str, old: str, new: str) -> str:
    for k in ((key, old, new), (key, None, new), (key, None, None)):
        if k in _EFFECT:
            return _EFFECT[k]
    return ""


def _names(names: list[str]) -> str:
    return ", ".join(sorted(names))


def queue_settings(cd: ClusterDraft) -> list[Change]:
    """Each setting gpupolicy's ClusterQueues give differently, once per (setting, old value), with the queues."""
    changed: dict[tuple[str, str], list[str]] = defaultdict(list)
    checks: dict[str, list[str]] = defaultdict(list)
    manager = bool(cd.kueue.workers)
    for q in cd.kueue.queues.values():
        for key, old in _flat(q.settings).items():
            if old != GPUPOLICY[key]:
                changed[(key, old)].append(q.name)
        for check in q.admission_checks:
            controller = cd.kueue.check_controllers.get(check, "")
            if not (manager and controller == MULTIKUEUE_CONTROLLER):
                checks[f"{check} (controller {controller or 'unknown: no AdmissionCheck in the export'})"].append(q.name)
    out = []
    for (key, old), queues in sorted(changed.items()):
        new = GPUPOLICY[key]
        out.append(Change(cd.name, "behaviour-change", f"ClusterQueue {_names(queues)}: {key} {old} → {new} "
                          f"(gpupolicy's queues)", _effect(key, old, new)))
    for check, queues in sorted(checks.items()):
        out.append(Change(cd.name, "behaviour-change", f"ClusterQueue {_names(queues)}: admission check {check} "
                          "is dropped (gpupolicy's queues carry only its own MultiKueue check)",
                          "jobs are admitted without it; add the check outside gpupolicy if it must stay"))
    return out


def fair_sharing(cd: ClusterDraft) -> list[Change]:
    """gpupolicy's Kueue configuration turns fair sharing on; whether the cluster runs it shows in status."""
    k = cd.kueue
    if not k.queues or k.fair_sharing_status:
        return []
    effect = ("queues then take unused GPUs by weighted share, not in submission order, preemption follows the "
              "shares, and borrowWithinCohort is ignored")
    if k.statuses:
        return [Change(cd.name, "behaviour-change", "fair sharing off → on: no ClusterQueue or Cohort status in "
                       "the export carries fairSharing (Kueue records it only with fair sharing on), so the cluster "
                       f"runs without it; gpupolicy's Kueue configuration turns it on ({FAIR_SHARING})", effect)]
    return [Change(cd.name, "behaviour-change", "fair sharing → on: the export carries no ClusterQueue status, so "
                   "whether the cluster runs fair sharing is unknown; gpupolicy's Kueue configuration turns it on "
                   f"({FAIR_SHARING})", "if the cluster runs without it, " + effect)]


def _owner(draft: Draft, cluster: str, namespace: str) -> str | None:
    for t in draft.team_drafts.values():
        if cluster in t.namespaces.get(namespace, ()):
            return str(t.name)
    return None


def local_queues(draft: Draft, cd: ClusterDraft) -> list[Change]:
    """Each LocalQueue the draft renames or drops: jobs name it in their queue label."""
    out = []
    for cq in sorted(cd.kueue.queues):
        if dns_label(cq, "team") != cq:
            out.append(Change(cd.name, "behaviour-change", f"ClusterQueue {cq} becomes {dns_label(cq, 'team')} "
                              "(gpupolicy names each ClusterQueue after its team)"))
    for ns, lq, cq in sorted(cd.kueue.local_queues):
        if cq not in cd.kueue.queues:
            continue  # listed as not imported
        owner = _owner(draft, cd.name, ns)
        team = draft.team_drafts.get(owner) if owner else None
        queued = team is not None and any(b.cluster == cd.name for b in team.budgets)
        if queued and owner == lq:
            continue
        was = f"LocalQueue {ns}/{lq} (ClusterQueue {cq})"
        if lq == "default":
            who = (f"jobs in {ns} without a {LABEL_QUEUE} label, which Kueue sends to LocalQueue default "
                   "(LocalQueueDefaulting), are suspended by Kueue (manageJobsWithoutQueueName) and refused by "
                   "the gpupolicy-queue-name admission policy")
        else:
            who = f"jobs labelled {LABEL_QUEUE}: {lq} are refused by the gpupolicy-queue-name admission policy"
        if not queued:
            out.append(Change(cd.name, "behaviour-change", f"{was} is not in the draft: "
                              f"{'team ' + owner if owner else 'no team'} has no budget on {cd.name}, so {ns} gets "
                              f"no LocalQueue; {who} and Kueue admits nothing there",
                              "import a GPU quota for the team, or move its jobs"))
            continue
        moved = "" if owner == dns_label(cq, "team") else f", on ClusterQueue {owner} (the draft gives {ns} to it)"
        out.append(Change(cd.name, "behaviour-change", f"{was} becomes LocalQueue {ns}/{owner}{moved}: gpupolicy "
                          f"names each LocalQueue after its team; {who}",
                          f"relabel the jobs {LABEL_QUEUE}: {owner} when the draft goes live"))
    return out


def _departments(draft: Draft) -> dict[str, str | None]:
    return {str(d["name"]): (str(d["parent"]) if d.get("parent") else None)
            for d in draft.fleet["spec"]["departments"]}


def _root(parents: dict[str, str | None], name: str) -> str:
    seen = {name}
    while parents.get(name) is not None and parents[name] not in seen:
        name = str(parents[name])
        seen.add(name)
    return name


@dataclass(frozen=True)
class Spare:
    """The draft's root Cohort and the GPUs per class it holds (``compiler.policy.cohorts``)."""

    holder: str | None  # None: the queues sit under several roots (KUEUE007), no Cohort holds spare GPUs
    roots: tuple[str, ...]
    capacity: dict[str, int]
    guaranteed: dict[str, int]

    def free(self, cls: str) -> int:
        return max(self.capacity.get(cls, 0) - self.guaranteed.get(cls, 0), 0) if self.holder else 0

    def why(self, cls: str) -> str:
        return f"capacity {self.capacity.get(cls, 0)} − guaranteed {self.guaranteed.get(cls, 0)}"


def draft_spare(draft: Draft, cd: ClusterDraft) -> Spare:
    """What ``compiler.policy.cohorts.spare_capacity`` / ``spare_cohort`` will give the draft: the
    departments of the teams budgeting on the cluster, their roots, and per budgeted class the
    training GPUs (a manager: its workers') minus the guarantees."""
    parents = _departments(draft)
    budgets = [(t, b) for t in draft.team_drafts.values() for b in t.budgets if b.cluster == cd.name]
    roots = sorted({_root(parents, t.department) for t, _ in budgets if t.department})
    guaranteed: dict[str, int] = defaultdict(int)
    for _, b in budgets:
        guaranteed[b.cls] += b.guaranteed
    capacity = {cls: cd.queue_capacity(cls) for cls in guaranteed}
    return Spare(roots[0] if len(roots) == 1 else None, tuple(roots), capacity, dict(guaranteed))


def _limits(q: Quota) -> list[str]:
    out = []
    if q.nominal:
        out.append(f"nominalQuota {q.nominal}")
    if q.borrow is not None:
        out.append(f"borrowingLimit {q.borrow}")
    if q.lend is not None:
        out.append(f"lendingLimit {q.lend}")
    return out


def _nested_effect(co: CohortInfo, q: Quota) -> str:
    parts = []
    if q.nominal:
        parts.append(f"the queues below {co.name} can no longer borrow its {q.nominal}")
    if q.borrow is not None:
        parts.append(f"they borrowed at most {q.borrow} from outside {co.name}, now up to their own limits")
    if q.lend is not None:
        parts.append(f"{'none' if q.lend == 0 else f'at most {q.lend}'} of the quota below {co.name} was lent "
                     "outside it, now all of it may be")
    return "; ".join(parts)


def cohort_quotas(draft: Draft, cd: ClusterDraft) -> tuple[list[Change], list[str]]:
    """The Cohorts' own GPU quotas against the draft's: (changes, notes on what was kept exactly)."""
    spare = draft_spare(draft, cd)
    out: list[Change] = []
    kept: list[str] = []
    held: dict[str, int] = {}
    holder_src = None
    for name in sorted(cd.kueue.cohorts):
        co = cd.kueue.cohorts[name]
        dept = dns_label(co.name, "cohort")
        for q in co.quotas:
            cls = flavor_class(cd, q.flavor, q.resource, cd.quota_classes)
            what = f"Cohort {co.name}" + (f" (parent {co.parent})" if co.parent else "")
            if cls is None:
                out.append(Change(cd.name, "not-imported", f"{what}: {', '.join(_limits(q)) or 'nominalQuota 0'} of "
                                  f"{q.resource} on flavor {q.flavor} matches no GPU class of the imported pools; "
                                  "not imported"))
                continue
            on = f"{cls}" + (f" (flavor {q.flavor})" if q.flavor != cls else "")
            if spare.holder is not None and dept == spare.holder and co.parent is None and \
                    q.borrow is None and q.lend is None:
                holder_src = co.name
                held[cls] = q.nominal
                free = spare.free(cls)
                if free == q.nominal:
                    kept.append(f"Cohort {co.name}: nominalQuota {q.nominal} of {on} imported as the GPUs no team "
                                f"is guaranteed, which the draft's Cohort {dept} holds ({spare.why(cls)})")
                    continue
                gap = (f"queues could borrow {q.nominal - free} of {cls} more on the cluster than in the draft"
                       if q.nominal > free else f"the draft lends {free - q.nominal} of {cls} more than the cluster")
                out.append(Change(cd.name, "not-imported", f"{what}: nominalQuota {q.nominal} of {on}, a pool every "
                                  f"queue below {co.name} may borrow, is not imported: a policy cannot state a "
                                  f"Cohort's quota; the draft's Cohort {dept} holds the GPUs no team is guaranteed, "
                                  f"{free} ({spare.why(cls)}): {gap}",
                                  "make capacity minus guarantees match, or accept the difference: queues that "
                                  "borrowed from the pool wait instead (KUEUE004 on the draft names a team whose "
                                  "borrowing limit it can no longer meet)"))
                continue
            place = (f"only the root department's Cohort holds GPUs in a policy: {spare.holder}, {spare.free(cls)} "
                     f"of {cls} ({spare.why(cls)})" if spare.holder else
                     f"no Cohort of the draft holds GPUs (its queues sit under {len(spare.roots)} roots: "
                     f"{', '.join(spare.roots) or 'none'})")
            out.append(Change(cd.name, "not-imported", f"{what}: {', '.join(_limits(q))} of {on} not imported: a "
                              f"policy gives departments no quota or limits of their own ({place}); "
                              f"{_nested_effect(co, q)}",
                              "department caps only check the guarantees of the teams below; give the GPUs to "
                              "teams as guarantees, or leave them unguaranteed for the root to lend"))
    if spare.holder is not None and cd.kueue.queues:
        for cls in sorted(spare.capacity):
            free = spare.free(cls)
            if free > 0 and cls not in held:
                src = f"Cohort {holder_src} held none of them" if holder_src else "no Cohort held them"
                out.append(Change(cd.name, "behaviour-change", f"the draft's Cohort {spare.holder} holds {free} of "
                                  f"{cls}, the GPUs no team is guaranteed ({spare.why(cls)}); on the cluster "
                                  f"{src}, so no queue could borrow them",
                                  "queues may now borrow them up to their borrowing limits"))
    return out, kept


def draft_changes(draft: Draft) -> tuple[list[Change], list[str]]:
    """Every change of every cluster, and the notes on Cohort quotas imported exactly."""
    out: list[Change] = []
    kept: list[str] = []
    for cd in draft.clusters:
        changes, notes = cohort_quotas(draft, cd)
        out += changes
        kept += [f"{cd.name}: {n}" for n in notes]
        out += queue_settings(cd) + fair_sharing(cd) + local_queues(draft, cd)
    return out, kept
