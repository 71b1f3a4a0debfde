"""The event-driven replay of a trace.

Time jumps from event to event (arrivals and completions). At each instant the scheduler runs
cycles until nothing more can happen: each cycle takes one head per ClusterQueue (highest
priority, then oldest), as Kueue's queue manager does (pkg/cache/queue/cluster_queue.go at
v0.19.2). A head that cannot be admitted (no fit, or preemption without candidates) is moved to
the inadmissible list with every queued workload of the same shape and priority (the scheduling
equivalence hash, on by default since v0.18) under ``BestEffortFIFO``; under ``StrictFIFO`` it
stays the head and blocks its queue. Inadmissible workloads return to the queue when quota is
released anywhere in their cohort tree (a finished or evicted workload calls
``QueueAssociatedInadmissibleWorkloadsAfter``, pkg/controller/core/workload_controller.go, which
requeues the whole root cohort's inadmissible workloads, pkg/cache/queue/inadmissible_workloads.go;
Kueue batches that requeue by one second, the replay does it at once); a StrictFIFO queue also
retries when a new workload arrives in it. Only releases requeue: an admission elsewhere does not
(the same files), so a parked bucket stays parked until the next release in its tree.

An admitted job runs for its remaining duration. A preempted job releases its quota at once and
goes back to its queue ``EVICTION_S`` later (its pods terminate; the requeue is an event of its
own, which runs the scheduler), then restarts from the beginning, or keeps ``checkpoint`` (0..1)
of its progress. The completion planned for the evicted run is dropped: an instant where only
such stale completions fall queues nothing, so its scheduler finds no head and runs no cycle.

Preemption loops. Kueue v0.19.2 can preempt for ever. Either a preemptor evicts its targets
and the quota they free goes to another workload first (a workload of another queue the
tournament puts first, or a higher-priority one of its own queue that the release unparked), so
it preempts again (kubernetes-sigs/kueue#14543, open at this tag); or two workloads take turns:
one reclaims within its nominal quota, the other wins it back by a fair-sharing strategy, and
so on (#7101). The replay follows Kueue into such a loop, and one that holds while jobs keep
arriving never ends (each eviction's requeue is a new instant that runs the loop again): two
random 22-job clusters ran for minutes and gigabytes, and 6 workloads of the Philly trace on a
1,000-team cluster preempted ~500-1,500 times each without being admitted. A workload that has
preempted in ``LOOP_LIMIT`` cycles without running to completion is reported
(``Outcome.stalled``, shown in every format) and held back: from then on it is admitted only
where it fits without preempting. Every eviction is some workload's preemption, so the replay
now always ends. Kueue would keep evicting, so the report understates the churn of a loop it
names.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field
from typing import Callable

from compiler.tools.simulate.causes import BEHIND, borrowers, explain_failure
from compiler.tools.simulate.cluster import Cluster, Workload, shape
from compiler.tools.simulate.objects import FR
from compiler.tools.simulate.quota import cq_available
from compiler.tools.simulate.scheduler import Entry, deps, run_cycle

MAX_IDLE_CYCLES = 50
MAX_CYCLES_PER_INSTANT = 200_000
EVICTION_S = 1.0  # a preempted workload is requeued this long after its eviction
FINISH, ARRIVAL, REQUEUE = 0, 1, 2  # event kinds, in the order one instant takes them
LOOP_LIMIT = 10  # cycles in which one workload preempted, without it finishing: a loop (see the docstring)
LOOP_CAUSE = "held back after a preemption loop (kubernetes-sigs/kueue#14543): admitted only where it fits without preempting"


@dataclass
class Job:
    """One trace row, mapped to a ClusterQueue."""

    name: str
    team: str
    cq: str
    submit: float  # seconds
    duration: float
    requests: dict[str, int]
    priority: int = 0
    priority_class: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    where: str = ""  # file:line
    gpus: float = 0.0  # GPU-ish amount for reports (the class's units)


@dataclass
class Track:
    job: Job
    wl: Workload
    remaining: float
    run_id: int = 0
    started: float = -1.0
    first_admit: float = -1.0
    finish: float = -1.0
    wait: float = 0.0
    pending_since: float = 0.0  # start of the current wait (arrival or eviction)
    prefix: str = ""  # cause of the current wait until its equivalence class is first tried
    causes: dict[str, float] = field(default_factory=dict)
    runs: list[tuple[float, float, dict[FR, int]]] = field(default_factory=list)
    preempted_by: list[tuple[float, str, str]] = field(default_factory=list)  # time, preemptor, reason
    caused: int = 0
    flavors: dict[str, str] = field(default_factory=dict)
    never_fits: str = ""
    preempting_cycles: int = 0  # cycles in which it preempted (a job finishes once: LOOP_LIMIT)


@dataclass
class Outcome:
    tracks: list[Track]
    cluster: Cluster
    usage_log: list[tuple[float, str, FR, int]]  # time, CQ, flavor-resource, delta
    end: float
    cycles: int = 0
    stalled: list[str] = field(default_factory=list)


class _Queue:
    """Pending workloads of one ClusterQueue, bucketed by (shape, priority): one heap per bucket,
    a bucket is either active or parked (inadmissible), so parking and requeueing cost nothing
    per workload. Each bucket keeps a timeline of why its head failed; a waiting workload is
    charged the causes of its bucket's timeline over its wait (``charge``), so workloads that
    never reach the head are explained too."""

    def __init__(self, strict: bool, behind: str) -> None:
        self.strict, self.behind = strict, behind
        self.heaps: dict[tuple[object, ...], list[tuple[int, float, str]]] = {}
        self.parked: set[tuple[object, ...]] = set()
        self.times: dict[tuple[object, ...], list[float]] = {}
        self.causes: dict[tuple[object, ...], list[str]] = {}
        self.top: tuple[tuple[object, ...], str] | None = None  # head()'s answer while ``fresh``
        self.fresh = False

    def note(self, h: tuple[object, ...], now: float, cause: str) -> None:
        times, causes = self.times.setdefault(h, []), self.causes.setdefault(h, [])
        if causes and causes[-1] == cause:
            return
        if times and times[-1] == now:
            causes[-1] = cause
        else:
            times.append(now)
            causes.append(cause)

    def charge(self, tr: Track, h: tuple[object, ...], end: float) -> None:
        start = tr.pending_since
        times, causes = self.times.get(h, []), self.causes.get(h, [])
        i = bisect.bisect_right(times, start)
        cur, t = tr.prefix, start
        if i > 0 and tr.prefix == self.behind:  # joined a bucket already waiting for a known cause
            cur = causes[i - 1]
        while i < len(times) and times[i] < end:
            if times[i] > t:
                tr.causes[cur] = tr.causes.get(cur, 0.0) + times[i] - t
            cur, t = causes[i], max(t, times[i])
            i += 1
        if end > t:
            tr.causes[cur] = tr.causes.get(cur, 0.0) + end - t

    def push(self, h: tuple[object, ...], wl: Workload) -> str:
        """Queue a workload; under BestEffortFIFO one whose equivalence class is inadmissible
        stays inadmissible with it (cluster_queue.go). Returns its bucket's cause then."""
        heapq.heappush(self.heaps.setdefault(h, []), (-wl.priority, wl.created, wl.key))
        self.fresh = False
        return self.causes[h][-1] if h in self.parked and not self.strict and self.causes.get(h) else ""

    def head(self) -> tuple[tuple[object, ...], str] | None:
        if self.fresh:
            return self.top
        best: tuple[int, float, str] | None = None
        best_h: tuple[object, ...] = ()
        for h, heap in self.heaps.items():
            if heap and h not in self.parked and (best is None or heap[0] < best):
                best, best_h = heap[0], h
        self.top, self.fresh = None if best is None else (best_h, best[2]), True
        return self.top

    def pop(self, h: tuple[object, ...]) -> None:
        heapq.heappop(self.heaps[h])
        self.fresh = False
        if not self.heaps[h]:  # nobody left to charge: the bucket's history can go
            del self.heaps[h]
            self.parked.discard(h)
            self.times.pop(h, None)
            self.causes.pop(h, None)

    def park(self, h: tuple[object, ...]) -> None:
        self.fresh = False
        if self.strict:
            self.parked.update(self.heaps)
        else:
            self.parked.add(h)

    def unpark(self) -> None:
        if self.parked:
            self.parked.clear()
            self.fresh = False

    def waiting(self) -> list[tuple[tuple[object, ...], str]]:
        return [(h, key) for h, heap in self.heaps.items() for _, _, key in heap]


# A cycle asks only the queues holding workloads for their heads, in the queues' order, while
# they are at most one in SPARSE (else every queue, without sorting them; None: every queue always)
SPARSE: int | None = 4


def _shape(wl: Workload) -> tuple[object, ...]:
    return (tuple(sorted(wl.requests.items())), tuple(sorted(wl.node_selector.items())), wl.priority)


def replay(cl: Cluster, jobs: list[Job], checkpoint: float = 0.0,
           progress: Callable[[int, int], None] | None = None,
           observe: Callable[[float, Cluster], None] | None = None) -> Outcome:
    """Replay ``jobs``; ``observe(now, cluster)`` is called after every cycle and completion (tests
    check invariants there)."""
    tracks = {j.name: Track(j, Workload(j.name, j.cq, dict(j.requests), j.priority, j.submit, dict(j.node_selector)),
                            j.duration) for j in jobs}
    behind = {q: BEHIND.format(team=q) for q in cl.setup.queues}
    queues = {q: _Queue(s.queueing == "StrictFIFO", behind[q]) for q, s in cl.setup.queues.items()}
    roots = {q: [c.name for c in cl.node(q).root().subtree_cqs()] for q in cl.setup.queues}
    events: list[tuple[float, int, int, str, int]] = []  # time, kind (FINISH, ARRIVAL, REQUEUE), seq, key, run
    for i, j in enumerate(sorted(jobs, key=lambda j: (j.submit, j.name))):
        events.append((j.submit, ARRIVAL, i, j.name, 0))
    heapq.heapify(events)
    seq = len(events)
    log: list[tuple[float, str, FR, int]] = []
    out = Outcome(list(tracks.values()), cl, log, 0.0)
    done = 0

    first = min((j.submit for j in jobs), default=0.0)

    def when(now: float) -> str:
        """A warning's time: hours into the trace (a trace's clock may be epoch seconds), and the
        trace's own time to find it there."""
        return f"{(now - first) / 3600:,.2f} h in (t={now:.0f}s)"

    explained: dict[tuple[object, ...], str] = {}

    def explain(e: Entry) -> str:
        """Why a failed entry waits: a function of its shape, its assignment and, per
        flavor-resource it could get, the unused quota, its own usage and who borrows
        (``causes.explain_failure``), so memoised on those, and on the usage versions that
        determine them (the reference mode recomputes it)."""
        if e.wl.held_back:
            return LOOP_CAUSE
        if not cl.fast:
            return explain_failure(cl, e.wl, e.usage, e.assignment.reasons)
        quick = (shape(cl, e.wl), deps(cl, e.wl), tuple(e.usage.items()), tuple(e.assignment.reasons[:1]))
        hit = explained.get(quick)
        if hit is not None:
            return hit
        node = cl.node(e.wl.cq)
        root = node.root()
        state = tuple((cq_available(node, fr), node.usage.get(fr, 0), borrowers(root, fr, e.wl.cq))
                      for _, fr in cl.dep_keys[shape(cl, e.wl)])
        key = (shape(cl, e.wl), state, tuple(e.usage.items()), tuple(e.assignment.reasons[:1]))
        hit = explained.get(key)
        if hit is None:
            if len(explained) > 100_000:
                explained.clear()
            hit = explained[key] = explain_failure(cl, e.wl, e.usage, e.assignment.reasons)
        explained[quick] = hit
        return hit

    order = {q: i for i, q in enumerate(queues)}
    waiting: set[str] = set()  # the queues holding a workload

    def popped(name: str, h: tuple[object, ...]) -> None:
        queues[name].pop(h)
        if not queues[name].heaps:
            waiting.discard(name)

    def release(tr: Track, now: float) -> None:
        for fr, v in tr.wl.usage.items():
            log.append((now, tr.wl.cq, fr, -v))
        tr.runs.append((tr.started, now, dict(tr.wl.usage)))
        cl.release(tr.wl)
        for q in roots[tr.wl.cq]:
            queues[q].unpark()

    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, key, run = heapq.heappop(events)
            tr = tracks[key]
            if kind == REQUEUE:  # an evicted workload's pods are gone: it is queued again
                queues[tr.wl.cq].push(_shape(tr.wl), tr.wl)
                waiting.add(tr.wl.cq)
                continue
            if kind == FINISH:
                if run != tr.run_id or tr.wl.admitted_at < 0:
                    continue  # preempted meanwhile
                release(tr, now)
                tr.finish = now
                done += 1
                if observe is not None:
                    observe(now, cl)
                if progress is not None and (done % 250 == 0 or done == len(jobs)):
                    progress(done, len(jobs))
            else:
                q = queues[tr.wl.cq]
                tr.pending_since = now
                tr.prefix = q.push(_shape(tr.wl), tr.wl) or behind[tr.wl.cq]
                waiting.add(tr.wl.cq)
                if q.strict:
                    q.unpark()
        idle = 0
        cycles_here = 0
        while True:
            cycles_here += 1
            if cycles_here > MAX_CYCLES_PER_INSTANT:
                out.stalled.append(f"{when(now)}: more than {MAX_CYCLES_PER_INSTANT} cycles; moved on")
                break
            heads: list[tuple[str, tuple[object, ...], Workload]] = []
            # the queues with workloads, in the queues' order: at 1,000 teams most are empty, and
            # asking each for its head every cycle was a third of a replay
            sparse = SPARSE is not None and SPARSE * len(waiting) <= len(queues)
            names = sorted(waiting, key=order.__getitem__) if sparse else queues
            for name in names:
                top = queues[name].head()
                if top is not None:
                    heads.append((name, top[0], tracks[top[1]].wl))
            if not heads:
                break
            out.cycles += 1
            entries = run_cycle(cl, [w for _, _, w in heads], now)
            progress_made = False
            for (name, h, _), e in zip(heads, entries):
                tr = tracks[e.wl.key]
                if e.status == "admitted":
                    progress_made = True
                    queues[name].charge(tr, h, now)
                    popped(name, h)
                    tr.wait += now - tr.pending_since
                    if tr.first_admit < 0:
                        tr.first_admit = now
                    tr.started = now
                    tr.flavors = dict(e.assignment.flavors)
                    for fr, v in e.usage.items():
                        log.append((now, name, fr, v))
                    tr.run_id += 1
                    heapq.heappush(events, (now + tr.remaining, FINISH, seq, tr.job.name, tr.run_id))
                    seq += 1
                elif e.status == "preempting":
                    progress_made = True
                    tr.caused += len(e.targets)
                    tr.preempting_cycles += 1
                    if tr.preempting_cycles == LOOP_LIMIT:
                        tr.wl.held_back = True
                        out.stalled.append(
                            f"{when(now)}: {e.wl.key} ({tr.job.team}) preempted in {LOOP_LIMIT} cycles without "
                            f"running to completion (the quota it freed went to others, or it was evicted again): "
                            f"a preemption loop (kubernetes-sigs/kueue#14543); held back from preempting from "
                            f"here on")
                    queues[name].note(h, now, explain_failure(cl, e.wl, e.usage, e.assignment.reasons, True))
                    for t in e.targets:
                        victim = tracks[t.workload.key]
                        ran = now - victim.started
                        release(victim, now)
                        victim.remaining = max(0.0, victim.remaining - ran * checkpoint)
                        victim.preempted_by.append((now, e.wl.key, t.reason))
                        victim.pending_since = now
                        victim.prefix = f"preempted by {e.wl.cq} ({t.reason})"
                        heapq.heappush(events, (now + EVICTION_S, REQUEUE, seq, victim.job.name, victim.run_id))
                        seq += 1
                elif e.status in ("nofit", "no-candidates"):
                    cause = explain(e)
                    if e.assignment.never_fits:
                        tr.never_fits = cause
                        popped(name, h)
                        continue
                    queues[name].note(h, now, cause)
                    queues[name].park(h)
            if observe is not None:
                observe(now, cl)
            idle = 0 if progress_made else idle + 1
            if idle > MAX_IDLE_CYCLES:  # only skipped entries left: a livelock the model cannot resolve
                out.stalled.append(f"{when(now)}: {len(heads)} heads skipped {MAX_IDLE_CYCLES} cycles in a row")
                for name, bucket, _ in heads:
                    queues[name].park(bucket)
        out.end = max(out.end, now)
    for q in queues.values():  # still waiting at the end
        for h, key in q.waiting():
            q.charge(tracks[key], h, out.end)
            tracks[key].wait += out.end - tracks[key].pending_since
    return out
