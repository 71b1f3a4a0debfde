""""Why did it wait": each pending period of a Workload, explained in the policy's terms.

Periods: creation -> quota reservation (or -> the export time while still pending), and eviction ->
the export time for an evicted Workload waiting to be re-admitted. A Workload that is still
pending carries Kueue's own reason (``QuotaReserved=False``); for one already admitted Kueue has
replaced that condition, so the cause is derived from the ledger: the team's usage of the class
when it was created against its guarantee and borrowing limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from compiler.tools.audit.context import PolicyView
from compiler.tools.audit.ledger import Row, Usage
from compiler.tools.cluster_import.quantities import shown

_INSUFFICIENT = re.compile(r"insufficient (?:unused )?quota for (?P<res>\S+) in flavor (?P<flavor>\S+?),? "
                           r"(?:(?P<more>\S+) more needed)?")
_EVICTED = {
    "Preempted": "preempted to make room for another workload",
    "PodsReadyTimeout": "its pods were not ready within waitForPodsReady's timeout; Kueue released the quota",
    "AdmissionCheck": "an admission check (e.g. MultiKueue dispatch) turned False",
    "ClusterQueueStopped": "its ClusterQueue was stopped (stopPolicy)",
    "Deactivated": "it was deactivated (spec.active=false)",
    "InactiveWorkload": "it was deactivated (spec.active=false)",
    "NodeFailures": "a node it ran on failed",
}
_PENDING = {
    "Inadmissible": "Kueue cannot queue it",
    "Misconfigured": "its LocalQueue or ClusterQueue is missing or misconfigured",
    "NoMatchingFlavor": "no flavor of its queue matches the job's node selector or tolerations",
    "ExceedsMaxQuota": "it asks for more than its queue may ever hold (guarantee + borrowing limit)",
    "Suspended": "its LocalQueue or ClusterQueue is stopped",
    "WaitingForPreemptedWorkloads": "it preempted workloads and waits for them to release the GPUs",
    "WaitingForPodsReady": "admission is blocked until earlier workloads' pods are ready (waitForPodsReady)",
    "AdmissionGated": "an admission gate holds it",
    "PendingEvaluation": "not yet evaluated by the scheduler",
}


@dataclass(frozen=True, slots=True)
class Wait:
    key: str
    team: str
    start: datetime | None
    end: datetime | None  # None: still waiting at the export time
    seconds: int | None
    cause: str
    derived: bool  # True: from the ledger, not from a Kueue condition


def _budget_text(view: PolicyView, team: str, cls: str) -> str:
    b = view.budgets.get((team, cls))
    if b is None:
        return f"team {team or '?'} has no budget for {cls or 'this class'} on {view.cluster}"
    return (f"team {team} on {view.cluster}: {cls} guaranteed {b.guaranteed}, borrow "
            f"{'unlimited' if b.borrow is None else b.borrow}")


def _pending_cause(r: Row, view: PolicyView) -> str:
    assert r.facts is not None
    c = r.facts.cond("QuotaReserved")
    if c is None:
        return "not yet evaluated by Kueue (no QuotaReserved condition)"
    m = _INSUFFICIENT.search(c.message)
    if m:
        cls = m.group("flavor")
        more = f"{m.group('more')} more GPUs needed than" if m.group("more") else "more GPUs needed than"
        return f"waiting for quota: {more} unused in the queue and its cohort ({_budget_text(view, r.team, cls)})"
    if "LocalQueue" in c.message and "doesn't exist" in c.message:
        owner = view.ns_team.get(r.namespace)
        where = f"a training namespace of team {owner}" if owner else "not a training namespace in the policy"
        return f"{c.message} (namespace {r.namespace} is {where})"
    base = _PENDING.get(c.reason, c.reason or "pending")
    return f"{base}: {c.message}" if c.message else base


def _admitted_cause(r: Row, view: PolicyView, usage: Usage | None, seconds: int) -> str:
    if seconds < 60:
        return "admitted within a minute (scheduling latency)"
    if r.created is None or not r.gpu_class:
        return "waited for quota (no GPU class recorded)"
    used = usage.at(r.created) if usage else 0
    b = view.budgets.get((r.team, r.gpu_class))
    if b is None:
        return f"{_budget_text(view, r.team, r.gpu_class)}: it could only run on GPUs lent by other teams"
    limit = None if b.borrow is None else b.guaranteed + b.borrow
    if limit is not None and used + r.gpus > limit:
        return (f"the team's queue was at its limit: {shown(used)} {r.gpu_class} in use + {shown(r.gpus)} asked > "
                f"guarantee {b.guaranteed} + borrow {b.borrow}")
    if used + r.gpus > b.guaranteed:
        return (f"needed to borrow {shown(used + r.gpus - b.guaranteed)} beyond the guarantee {b.guaranteed} "
                f"({shown(used)} in use): the cohort had no unused {r.gpu_class} to lend")
    return (f"within the guarantee ({shown(used)} in use + {shown(r.gpus)} of {b.guaranteed}): the team's lent GPUs "
            "were being reclaimed from borrowers, or pods were still terminating")


def waits_of(r: Row, view: PolicyView, curves: dict[tuple[str, str], Usage], now: datetime | None) -> list[Wait]:
    out: list[Wait] = []
    start = r.created
    if r.admitted is not None:
        secs = int((r.admitted - start).total_seconds()) if start else None
        cause = _admitted_cause(r, view, curves.get((r.team, r.gpu_class)), secs or 0)
        out.append(Wait(r.key, r.team, start, r.admitted, secs, cause, True))
    elif r.state == "pending":
        secs = int((now - start).total_seconds()) if start and now else None
        out.append(Wait(r.key, r.team, start, None, secs, _pending_cause(r, view), False))
    if r.state == "evicted" and r.ended is not None:
        assert r.facts is not None
        ev = r.facts.true("Evicted")
        why = _EVICTED.get(ev.reason if ev else "", ev.reason if ev else "evicted")
        if r.preempted_by:
            why += f" by {r.preempted_by} ({r.preemption})"
        if r.facts.requeue_at is not None:
            why += f"; Kueue requeues it at {r.facts.requeue_at.strftime('%Y-%m-%dT%H:%M:%SZ')} (backoff)"
        qr = r.facts.cond("QuotaReserved")
        if qr is not None and not qr.status and qr.message and "insufficient" in qr.message:
            why += "; now " + _pending_cause(r, view)
        secs = int((now - r.ended).total_seconds()) if now else None
        out.append(Wait(r.key, r.team, r.ended, None, secs, "evicted: " + why, False))
    return out
