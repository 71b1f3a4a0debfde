"""Per-team and per-cluster figures of a replay, and the two baselines.

All GPU figures are in units of the requested resource (a full card, a MIG slice, a time-sliced
share), summed over a team's classes. Definitions:

- GPU-hours: held by the team's admitted workloads, including runs later lost to preemption;
- wait: time pending (from submit to admission, and again from each eviction to re-admission);
- share of guarantee used: time-integral of min(usage, guarantee) / (guarantee × span);
- borrowed: time-integral of usage above the guarantee;
- lent: at each instant the tree's total borrowing is split among the lenders in proportion to
  their unused lendable guarantee (Cohort pools take their share); an approximation, since Kueue
  does not record whose quota a borrower uses;
- utilisation: GPU-hours used / (capacity × span), capacity = every nominal quota of the cluster
  (guarantees plus Cohort pools), which gpupolicy keeps equal to the hardware;
- idle GPU-hours: capacity × span − GPU-hours used;
- stranded GPU-hours: per GPU resource (a class's ``gpupolicy.dev/<class>``), the time-integral
  of min(idle units of that resource, total request of the waiting jobs of that resource whose
  request is at most the idle units): GPUs left idle while a job that would fit in them waits, so
  what holds it back is quota (a guarantee not lent, a borrowing or lending limit), not capacity.
  Jobs that can never fit are not waiting work; a waiting job larger than the idle units is held
  back by capacity and not counted.

Baselines on the same trace: *static partition* (every team only its guarantee, no cohort) and
*first apply wins* (no queues: one pool of the whole capacity, first come first served, no
priorities or preemption). Finish-time fairness = mean completion time under the policy / under
the static partition, over jobs completed in both.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any

from compiler.tools.simulate.cluster import Cluster
from compiler.tools.simulate.objects import FR, SCALE, ClusterQueueSpec, KueueSetup, Quota, ResourceGroup
from compiler.tools.simulate.replay import Job, Outcome, Track, replay

H = 3600.0


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


@dataclass
class TeamStats:
    team: str
    jobs: int = 0
    completed: int = 0
    never_fit: int = 0
    gpu_hours: float = 0.0
    wait_p50_h: float = 0.0
    wait_p95_h: float = 0.0
    wait_max_h: float = 0.0
    guarantee: float = 0.0
    guarantee_used: float = 0.0
    borrowed_gpu_hours: float = 0.0
    lent_gpu_hours: float = 0.0
    preemptions_suffered: int = 0
    preemptions_caused: int = 0
    causes: list[tuple[str, float]] = field(default_factory=list)  # (cause, hours), largest first
    static_wait_p95_h: float | None = None
    first_apply_wait_p95_h: float | None = None
    finish_time_fairness: float | None = None


@dataclass
class Report:
    cluster: str
    jobs: int
    span_h: float
    capacity: dict[str, float]
    used_gpu_hours: float
    utilisation: float
    idle_gpu_hours: float
    teams: list[TeamStats]
    never_fit: list[tuple[str, str]]  # (job, why)
    fair_sharing: bool
    cycles: int
    stalled: list[str]
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    stranded_gpu_hours: float = 0.0
    stranded_by_resource: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        """The report ``as_json`` gave (``compiler.tools.simulate.kept``)."""
        return cls(**{**data, "teams": [TeamStats(**t) for t in data["teams"]]})


def _integrals(out: Outcome, span_start: float) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(guarantee used, borrowed, lent) GPU-seconds per team: the time-integrals the module
    docstring defines, over the usage changes.

    Each (queue, flavor-resource) is brought up to date only when its own usage changes (and once
    at the end): between its changes its guarantee used and borrowing are constant, and its lending
    is its unused lendable quota times the integral of its tree's borrowing / lendable total, which
    the tree keeps as one running sum (``_Tree.ratio``). A pass over every queue of the tree at
    every change (the definition read literally) took ~6 s per side for 5,000 jobs on a cluster
    of 1,000 teams; ``tests/test_simulate_fast_path.py`` holds this to that reading."""
    cl = out.cluster
    trees: dict[tuple[str, str, FR], _Tree] = {}  # by root Cohort, or by queue for one in no Cohort
    pools: dict[tuple[str, FR], int] = {}
    for c in cl.setup.cohorts.values():
        root = cl.tree.cohorts[c.name].root().name
        for fr, quota in c.quotas.items():
            pools[(root, fr)] = pools.get((root, fr), 0) + quota.nominal
    share: dict[tuple[str, FR], _Share] = {}
    for spec in cl.setup.queues.values():
        node = cl.node(spec.name)
        where = ("cohort", node.root().name) if node.parent else ("queue", spec.name)
        for fr, quota in spec.quotas.items():
            lendable = quota.nominal if quota.lending_limit is None or spec.cohort is None \
                else min(quota.nominal, quota.lending_limit)
            tree = trees.get((*where, fr))
            if tree is None:
                pool = pools.get((where[1], fr), 0) if node.parent else 0
                tree = trees[(*where, fr)] = _Tree(pool, span_start)
            share[(spec.name, fr)] = _Share(spec.name, tree, quota.nominal, lendable, node.parent is not None,
                                            span_start)
    totals = (dict.fromkeys(cl.setup.queues, 0.0), dict.fromkeys(cl.setup.queues, 0.0),
              dict.fromkeys(cl.setup.queues, 0.0))
    for t, cq, fr, delta in sorted(out.usage_log, key=lambda e: e[0]):
        one = share.get((cq, fr))
        if one is not None:
            one.change(t, delta, totals)
    for one in share.values():
        one.change(out.end, 0, totals)
    return totals


class _Tree:
    """A cohort tree's borrowing and unused lendable quota for one flavor-resource (its Cohorts'
    pools included), and the running integral of their ratio (the lending rate of one unit of
    unused lendable quota)."""

    __slots__ = ("borrowed", "idle", "ratio", "since")

    def __init__(self, pool: int, start: float) -> None:
        self.borrowed = 0
        self.idle = pool
        self.ratio = 0.0
        self.since = start

    def advance(self, t: float) -> float:
        if t > self.since:
            if self.borrowed and self.idle:
                self.ratio += self.borrowed / self.idle * (t - self.since)
            self.since = t
        return self.ratio


class _Share:
    """One queue's usage of one flavor-resource and the integrals it has added up to ``since``."""

    __slots__ = ("idle", "lendable", "lends", "name", "nominal", "ratio", "since", "tree", "used")

    def __init__(self, name: str, tree: _Tree, nominal: int, lendable: int, lends: bool, start: float) -> None:
        self.name, self.tree, self.nominal, self.lendable, self.lends = name, tree, nominal, lendable, lends
        self.used = 0
        self.since = start
        self.ratio = 0.0
        self.idle = self._idle()
        tree.idle += self.idle

    def _idle(self) -> int:  # a queue in no Cohort lends nothing (nor can its tree borrow)
        return max(0, self.lendable - self.used) if self.lends and self.used <= self.nominal else 0

    def change(self, t: float, delta: int, totals: tuple[dict[str, float], ...]) -> None:
        g_used, borrowed, lent = totals
        ratio = self.tree.advance(t)
        if t > self.since:
            dt = t - self.since
            g_used[self.name] += min(self.used, self.nominal) * dt
            if self.used > self.nominal:
                borrowed[self.name] += (self.used - self.nominal) * dt
            self.since = t
        if self.idle:
            lent[self.name] += self.idle * (ratio - self.ratio)
        self.ratio = ratio
        if delta:
            tree = self.tree
            tree.borrowed -= max(0, self.used - self.nominal)
            tree.idle -= self.idle
            self.used += delta
            self.idle = self._idle()
            tree.borrowed += max(0, self.used - self.nominal)
            tree.idle += self.idle


def _pending(tr: Track, end: float) -> list[tuple[float, float]]:
    """The periods ``tr`` waited: before its first run, after each eviction, and to the end of the
    replay if it was never (re)admitted."""
    out = []
    since = tr.job.submit
    for start, stop, _ in tr.runs:
        if start > since:
            out.append((since, start))
        since = stop
    if tr.finish < 0 and end > since:
        out.append((since, end))
    return out


def stranded(out: Outcome, capacity: dict[str, int]) -> dict[str, float]:
    """Stranded GPU-seconds (in thousandths) per resource, as the module docstring defines them:
    a sweep over usage changes and waiting periods."""
    events: list[tuple[float, int, str, int]] = []  # time, kind (0 usage delta, 1 wait +, 2 wait -), resource, amount
    for t, _, (_, res), delta in out.usage_log:
        events.append((t, 0, res, delta))
    for tr in out.tracks:
        if tr.never_fits or len(tr.job.requests) != 1:
            continue
        (res, amount), = tr.job.requests.items()
        for a, b in _pending(tr, out.end):
            events.append((a, 1, res, amount))
            events.append((b, 2, res, amount))
    events.sort(key=lambda e: (e[0], e[1]))
    used: dict[str, int] = {}
    waiting: dict[str, dict[int, int]] = {}  # resource -> request -> count
    acc = dict.fromkeys(capacity, 0.0)
    last = events[0][0] if events else 0.0
    for t, kind, res, amount in events:
        if t > last:
            for r, sizes in waiting.items():
                idle = capacity.get(r, 0) - used.get(r, 0)
                if idle > 0 and sizes:
                    held = sum(size * n for size, n in sizes.items() if size <= idle)
                    acc[r] = acc.get(r, 0.0) + min(idle, held) * (t - last)
            last = t
        if kind == 0:
            used[res] = used.get(res, 0) + amount
        else:
            sizes = waiting.setdefault(res, {})
            sizes[amount] = sizes.get(amount, 0) + (1 if kind == 1 else -1)
            if not sizes[amount]:
                del sizes[amount]
    return acc


def _waits(tracks: list[Track]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for tr in tracks:
        if not tr.never_fits:
            out.setdefault(tr.job.team, []).append(tr.wait)
    return out


def static_setup(setup: KueueSetup) -> KueueSetup:
    s = copy.deepcopy(setup)
    s.cohorts = {}
    for q in s.queues.values():
        q.cohort = None
        q.quotas = {fr: Quota(v.nominal) for fr, v in q.quotas.items()}
    return s


def capacity_of(setup: KueueSetup) -> dict[FR, int]:
    """Every nominal quota of the cluster (ClusterQueues and Cohort pools) per flavor-resource."""
    capacity: dict[FR, int] = {}
    for quotas in (*(q.quotas for q in setup.queues.values()), *(c.quotas for c in setup.cohorts.values())):
        for fr, v in quotas.items():
            capacity[fr] = capacity.get(fr, 0) + v.nominal
    return capacity


def first_apply_setup(setup: KueueSetup) -> KueueSetup:
    capacity = capacity_of(setup)
    s = copy.deepcopy(setup)
    groups = [ResourceGroup(g.covered, g.flavors) for q in setup.queues.values() for g in q.groups]
    merged: dict[str, list[str]] = {}
    for g in groups:
        for r in g.covered:
            for f in g.flavors:
                if f not in merged.setdefault(r, []):
                    merged[r].append(f)
    s.cohorts = {}
    s.queues = {"*": ClusterQueueSpec("*", None, tuple(ResourceGroup((r,), tuple(fs)) for r, fs in sorted(merged.items())),
                                      {fr: Quota(v) for fr, v in capacity.items()})}
    return s


def summarize(out: Outcome, jobs: list[Job], baselines: bool = True) -> Report:
    cl = out.cluster
    start = min((j.submit for j in jobs), default=0.0)
    span = max(out.end - start, 1.0)
    g_used, borrowed, lent = _integrals(out, start)
    teams: dict[str, TeamStats] = {q: TeamStats(q) for q in cl.setup.queues}
    for q, st in teams.items():
        st.guarantee = sum(v.nominal for v in cl.setup.queues[q].quotas.values()) / SCALE
    for tr in out.tracks:
        st = teams[tr.job.team]
        st.jobs += 1
        st.completed += tr.finish >= 0
        st.never_fit += bool(tr.never_fits)
        st.gpu_hours += sum((e - s) * sum(u.values()) for s, e, u in tr.runs) / SCALE / H
        st.preemptions_suffered += len(tr.preempted_by)
        st.preemptions_caused += tr.caused
    causes: dict[str, dict[str, float]] = {}
    for tr in out.tracks:
        for c, v in tr.causes.items():
            causes.setdefault(tr.job.team, {})[c] = causes.get(tr.job.team, {}).get(c, 0.0) + v
    for team, ws in _waits(out.tracks).items():
        st = teams[team]
        st.wait_p50_h, st.wait_p95_h, st.wait_max_h = pct(ws, 50) / H, pct(ws, 95) / H, max(ws) / H
    for q, st in teams.items():
        st.guarantee_used = g_used[q] / SCALE / (st.guarantee * span) if st.guarantee else 0.0
        st.borrowed_gpu_hours, st.lent_gpu_hours = borrowed[q] / SCALE / H, lent[q] / SCALE / H
        st.causes = sorted(((c, v / H) for c, v in causes.get(q, {}).items()), key=lambda x: (-x[1], x[0]))
    capacity: dict[str, float] = {}
    for (f, _), v in capacity_of(cl.setup).items():
        capacity[f] = capacity.get(f, 0.0) + v / SCALE
    used = sum(st.gpu_hours for st in teams.values())
    cap_h = sum(capacity.values()) * span / H
    rep = Report(cl.setup.cluster, len(jobs), span / H, capacity, used, used / cap_h if cap_h else 0.0,
                 max(0.0, cap_h - used), sorted(teams.values(), key=lambda s: s.team),
                 [(tr.job.name, tr.never_fits) for tr in out.tracks if tr.never_fits], cl.fair_sharing,
                 out.cycles, out.stalled)
    by_resource: dict[str, int] = {}
    for (_, res), v in capacity_of(cl.setup).items():
        by_resource[res] = by_resource.get(res, 0) + v
    rep.stranded_by_resource = {r: v / SCALE / H for r, v in sorted(stranded(out, by_resource).items())}
    rep.stranded_gpu_hours = sum(rep.stranded_by_resource.values())
    if baselines:
        _baselines(rep, out, jobs)
    return rep


def _baselines(rep: Report, out: Outcome, jobs: list[Job]) -> None:
    setup = out.cluster.setup
    static = replay(Cluster.of(static_setup(setup), out.cluster.fair_sharing), jobs)
    fa_jobs = [copy.copy(j) for j in jobs]
    for j in fa_jobs:
        j.cq = "*"
        j.priority = 0
    fa = replay(Cluster.of(first_apply_setup(setup), False), fa_jobs)
    s_waits, f_waits = _waits(static.tracks), _waits(fa.tracks)
    s_jct = {tr.job.name: tr.finish - tr.job.submit for tr in static.tracks if tr.finish >= 0}
    for st in rep.teams:
        st.static_wait_p95_h = pct(s_waits.get(st.team, []), 95) / H
        st.first_apply_wait_p95_h = pct(f_waits.get(st.team, []), 95) / H
        pairs = [(tr.finish - tr.job.submit, s_jct[tr.job.name]) for tr in out.tracks
                 if tr.job.team == st.team and tr.finish >= 0 and tr.job.name in s_jct]
        if pairs:
            st.finish_time_fairness = sum(p for p, _ in pairs) / max(sum(s for _, s in pairs), 1e-9)
    for name, o in (("static-partition", static), ("first-apply-wins", fa)):
        ws = [tr.wait for tr in o.tracks if not tr.never_fits]
        rep.baselines[name] = {"wait_p50_h": pct(ws, 50) / H, "wait_p95_h": pct(ws, 95) / H,
                               "never_fit": float(sum(bool(tr.never_fits) for tr in o.tracks)),
                               "completed": float(sum(tr.finish >= 0 for tr in o.tracks))}
    ws = [tr.wait for tr in out.tracks if not tr.never_fits]
    rep.baselines["policy"] = {"wait_p50_h": pct(ws, 50) / H, "wait_p95_h": pct(ws, 95) / H,
                               "never_fit": float(len(rep.never_fit)),
                               "completed": float(sum(tr.finish >= 0 for tr in out.tracks))}
