"""The ledger: one row per admission (and per Workload still pending), who held which GPU class,
for which model and data class, when, whether within the team's guarantee, and who preempted it.

Kueue keeps only the latest condition of each type on a Workload and clears ``status.admission``
when it evicts one: an evicted Workload's earlier admission time and flavor are gone, and the row
says so (``schedulingStats`` still counts the evictions). *Borrowed* is derived: the queue's usage
of the class at admission, summed over the Workloads of the same export, above the guarantee.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction

from compiler.tools.audit.context import PolicyView
from compiler.tools.audit.workloads import WorkloadFacts
from compiler.tools.cluster_import.quantities import shown

_PREEMPT = re.compile(r"UID: (?P<uid>[^,]+), JobUID: (?P<job>[^)]+)\) due to (?P<why>.+?); preemptor path: "
                      r"(?P<src>\S+); preemptee path: (?P<dst>\S+)")
_BY_UID = "uid:"


@dataclass(slots=True)
class Row:
    namespace: str
    name: str
    uid: str
    team: str
    model: str
    data_class: str
    cluster: str
    residency: str
    queue: str
    cluster_queue: str
    gpu_class: str
    resource: str
    gpus: int | Fraction  # a Fraction only for a fraction of a GPU (warned about when read)
    created: datetime | None
    admitted: datetime | None
    ended: datetime | None
    state: str  # running | finished | evicted | pending
    end_reason: str
    borrowed: str = ""
    preempted_by: str = ""
    preemption: str = ""
    evictions: int = 0
    facts: WorkloadFacts | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def gpu_class(resource: str, flavor: str | None) -> str:
    if flavor:
        return flavor  # gpupolicy names each ResourceFlavor after its GPU class
    if resource.startswith("gpupolicy.dev/"):
        return resource.removeprefix("gpupolicy.dev/")
    return ""


def rows_of(w: WorkloadFacts, view: PolicyView) -> list[Row]:
    team = view.team_of(w.namespace, w.team) or ""
    qr, adm = w.true("QuotaReserved"), w.true("Admitted")
    finished, evicted = w.true("Finished"), w.true("Evicted")
    admitted = (qr.at if qr else None) or (adm.at if adm else None)
    if finished is not None:
        state, ended, reason = "finished", finished.at, finished.reason
    elif evicted is not None:
        state, ended, reason = "evicted", evicted.at, evicted.reason
    elif qr is not None or adm is not None:
        state, ended, reason = "running", None, ""
    else:
        pending = w.cond("QuotaReserved")
        state, ended, reason = "pending", None, pending.reason if pending is not None else ""
    cluster = w.cluster_name or view.cluster
    preempt = w.true("Preempted")
    preemption, preempted_by = "", ""
    if preempt is not None:
        m = _PREEMPT.search(preempt.message)
        preemption = f"{preempt.reason}: {m.group('why')}" if m else preempt.reason
        preempted_by = _BY_UID + m.group("uid") if m else ""
    out = []
    for use in w.gpus or (None,):
        out.append(Row(
            namespace=w.namespace, name=w.name, uid=w.uid, team=team, model=w.model or "",
            data_class=w.data_class or "", cluster=cluster, residency=view.residency_of(cluster),
            queue=w.queue or "", cluster_queue=w.cluster_queue or "",
            gpu_class=gpu_class(use.resource, use.flavor) if use else "",
            resource=use.resource if use else "", gpus=use.count if use else 0,
            created=w.created, admitted=admitted, ended=ended, state=state, end_reason=reason,
            preempted_by=preempted_by, preemption=preemption, evictions=sum(n for _, n in w.evictions), facts=w,
        ))
    return out


@dataclass
class Usage:
    """A queue's usage of one class over time (admitted Workloads of the export)."""

    times: list[datetime] = field(default_factory=list)
    levels: list[int | Fraction] = field(default_factory=list)

    def at(self, t: datetime) -> int | Fraction:
        i = bisect_right(self.times, t)
        return self.levels[i - 1] if i else 0


def usage_curves(rows: list[Row]) -> dict[tuple[str, str], Usage]:
    events: dict[tuple[str, str], list[tuple[datetime, int, int | Fraction]]] = defaultdict(list)
    for r in rows:
        if r.admitted is None or not r.gpu_class:
            continue
        k = (r.team, r.gpu_class)
        events[k].append((r.admitted, 1, r.gpus))
        if r.ended is not None:
            events[k].append((r.ended, 0, -r.gpus))  # releases sort before admissions at the same instant
    out: dict[tuple[str, str], Usage] = {}
    for k, ev in events.items():
        ev.sort(key=lambda e: (e[0], e[1]))
        u = Usage()
        level: int | Fraction = 0
        for t, _, delta in ev:
            level += delta
            if u.times and u.times[-1] == t:
                u.levels[-1] = level
            else:
                u.times.append(t)
                u.levels.append(level)
        out[k] = u
    return out


def mark_borrowing(rows: list[Row], view: PolicyView, curves: dict[tuple[str, str], Usage]) -> None:
    for r in rows:
        if not r.gpu_class:
            continue
        budget = view.budgets.get((r.team, r.gpu_class))
        if r.admitted is None:
            r.borrowed = "unknown (admission cleared on eviction)" if r.state == "evicted" else ""
        elif not view.loaded:
            r.borrowed = "unknown (no policy)"
        elif budget is None:
            r.borrowed = "no budget"
        else:
            used = curves[(r.team, r.gpu_class)].at(r.admitted)
            r.borrowed = (f"borrowed ({shown(used)} in use, guarantee {budget.guaranteed})"
                          if used > budget.guaranteed else f"within guarantee ({shown(used)} of {budget.guaranteed})")


def resolve_preemptors(rows: list[Row], by_uid: dict[str, tuple[str, str]]) -> None:
    for r in rows:
        if r.preempted_by.startswith(_BY_UID):
            uid = r.preempted_by.removeprefix(_BY_UID)
            who = by_uid.get(uid)
            r.preempted_by = f"{who[0]} (team {who[1] or '?'})" if who else f"workload UID {uid} (not in the export)"
