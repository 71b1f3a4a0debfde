"""Flavor assignment for one pending workload, as Kueue v0.19.2's FlavorAssigner does it.

Read from kubernetes-sigs/kueue at tag v0.19.2 (not copied):
``pkg/scheduler/flavorassigner/flavorassigner.go`` (findFlavorForPodSets, fitsResourceQuota,
isPreferred, shouldTryNextFlavor, canPreemptWhileBorrowing, checkFlavorForPodSets) and
``pkg/scheduler/preemption/preemption_oracle.go`` (SimulatePreemption).

Per resource group, flavors are tried in the ClusterQueue's order. A flavor whose node labels
contradict the job's node selector is skipped. Each requested resource of the group gets a mode on
the flavor (fit, preempt, reclaim, no candidates, no fit) and a borrowing level (how far up the
tree the quota comes from); the flavor's mode is the worst over its resources. Fungibility decides
whether to stop at this flavor (``whenCanBorrow``/``whenCanPreempt``: ``MayStopSearch``) or look
further and keep the preferred one (``preference``: BorrowingOverPreemption by default).

Simplifications: one pod set per workload; the scan always starts at the first flavor (Kueue
resumes from the last tried flavor while the ClusterQueue generation is unchanged); taints are not
checked (gpupolicy's flavors carry tolerations, not taints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from compiler.tools.simulate.bounds import no_targets
from compiler.tools.simulate.cluster import Cluster, Workload
from compiler.tools.simulate.objects import FR, ResourceGroup, shown
from compiler.tools.simulate.preemption import Target, get_targets
from compiler.tools.simulate.quota import cq_available, lowest_subtree_that_fits, potential_available

NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
MODE_NAMES = {NO_FIT: "NoFit", NO_CANDIDATES: "Preempt", PREEMPT: "Preempt", RECLAIM: "Preempt", FIT: "Fit"}


@dataclass
class Assignment:
    flavors: dict[str, str] = field(default_factory=dict)  # resource -> flavor
    modes: dict[str, int] = field(default_factory=dict)  # resource -> granular mode
    borrow: int = 0  # borrowing level (0 = within the ClusterQueue's nominal quota)
    reasons: list[str] = field(default_factory=list)
    never_fits: bool = False  # above what the ClusterQueue could ever get
    oracle: dict[tuple[FR, int], list[Target]] = field(default_factory=dict)  # SimulatePreemption results
    representative: str | None = None  # final_mode's cache

    def mode(self) -> str:
        """RepresentativeMode: the worst over resources (Fit, Preempt or NoFit)."""
        if not self.modes:
            return "NoFit" if self.never_fits else "Fit"
        return MODE_NAMES[min(self.modes.values())]

    def final_mode(self) -> str:
        """``mode()`` of a finished assignment, computed once (the replay asks it many times)."""
        if self.representative is None:
            self.representative = self.mode()
        return self.representative

    def usage(self, wl: Workload) -> dict[FR, int]:
        return {(self.flavors[r], r): v for r, v in wl.requests.items() if r in self.flavors}

    def preempt_frs(self) -> set[FR]:
        return {(f, r) for r, f in self.flavors.items() if self.modes[r] in (NO_CANDIDATES, PREEMPT, RECLAIM)}


def _preferred(a: tuple[int, int], b: tuple[int, int], preference: str | None) -> bool:
    """isPreferred for (mode, borrow) pairs."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _try_next(mode: tuple[int, int], when_borrow: str, when_preempt: str) -> bool:
    if mode[0] in (NO_FIT, NO_CANDIDATES):
        return True
    if mode[0] in (PREEMPT, RECLAIM) and when_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and when_borrow == "TryNextFlavor"


def _simulate_preemption(cl: Cluster, wl: Workload, fr: FR, val: int, out: Assignment) -> tuple[int, int]:
    """SimulatePreemption: (mode, borrowing level after the preemptions). The targets are kept:
    for a one-resource workload they are what GetTargets returns for the whole assignment."""
    node = cl.node(wl.cq)
    if cl.fast and no_targets(cl, wl, {fr}, {fr: val}):
        out.oracle[(fr, val)] = []
        return NO_CANDIDATES, lowest_subtree_that_fits(node, fr, val)[0]
    targets = out.oracle[(fr, val)] = get_targets(cl, wl, {fr}, {fr: val})
    if not targets:
        return NO_CANDIDATES, lowest_subtree_that_fits(node, fr, val)[0]
    for t in targets:
        cl.remove_usage_of(t.workload)
    borrow = lowest_subtree_that_fits(node, fr, val)[0]
    for t in targets:
        cl.add_usage_of(t.workload)
    return (PREEMPT if any(t.workload.cq == wl.cq for t in targets) else RECLAIM), borrow


Oracle = Callable[[Cluster, Workload, FR, int, "Assignment"], tuple[int, int]]


def _exceeds(fr: FR, val: int, max_cap: int) -> str:
    """fitsResourceQuota's NoFit reason, for the one pod set a simulated workload has."""
    return f"insufficient quota for {fr[1]} in flavor {fr[0]}, request ({shown(val)}) > maximum capacity ({shown(max_cap)})"


def _fits_quota(cl: Cluster, wl: Workload, fr: FR, val: int, out: Assignment,
                oracle: Oracle | None = None) -> tuple[int, int, str]:
    node = cl.node(wl.cq)
    spec = cl.spec(wl.cq)
    avail = cq_available(node, fr)
    max_cap = potential_available(node, fr)
    if val > max_cap:
        return NO_FIT, 0, _exceeds(fr, val, max_cap)
    borrow, may_reclaim = lowest_subtree_that_fits(node, fr, val)
    if val <= avail:
        return FIT, borrow, ""
    why = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, {shown(val - avail)} more needed"
    quota = node.quotas.get(fr)
    nominal = quota.nominal if quota is not None else 0
    can_preempt_borrowing = spec.borrow_within != "Never" or (cl.fair_sharing and spec.reclaim != "Never")
    if nominal >= val or may_reclaim or can_preempt_borrowing:
        mode, borrow = (oracle or _simulate_preemption)(cl, wl, fr, val, out)
        return mode, borrow, why
    return NO_FIT, borrow, why


def _selector_matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    """Only the flavor's own label keys are compared (flavorSelector)."""
    return all(labels[k] == v for k, v in selector.items() if k in labels)


def _assign_group(cl: Cluster, wl: Workload, group: ResourceGroup, requests: dict[str, int], out: Assignment,
                  oracle: Oracle | None) -> None:
    spec = cl.spec(wl.cq)
    best: dict[str, tuple[str, int]] = {}
    best_mode = (NO_FIT, 1 << 30)
    best_borrow = 0
    for fname in group.flavors:
        labels = cl.setup.flavors.get(fname)
        if labels is None:
            out.reasons.append(f"flavor {fname} not found")
            continue
        if not _selector_matches(labels, wl.node_selector):
            out.reasons.append(f"flavor {fname} doesn't match the job's node selector")
            continue
        rep = (FIT, 0)
        chosen: dict[str, tuple[str, int]] = {}
        max_borrow = 0
        for res, val in requests.items():
            mode, borrow, why = _fits_quota(cl, wl, (fname, res), val, out, oracle)
            if why:
                out.reasons.append(why)
            max_borrow = max(max_borrow, borrow)
            if _preferred(rep, (mode, borrow), spec.preference):
                rep = (mode, borrow)
            if rep[0] == NO_FIT:
                break
            chosen[res] = (fname, mode)
        if not _try_next(rep, spec.when_can_borrow, spec.when_can_preempt):
            best, best_mode, best_borrow = chosen, rep, max_borrow
            break
        if _preferred(rep, best_mode, spec.preference):
            best, best_mode, best_borrow = chosen, rep, max_borrow
    if best_mode[0] == NO_FIT:
        for res in requests:
            out.modes[res] = NO_FIT
        return
    for res, (fname, mode) in best.items():
        out.flavors[res] = fname
        out.modes[res] = mode
    out.borrow = max(out.borrow, best_borrow)


def assign(cl: Cluster, wl: Workload, oracle: Oracle | None = None) -> Assignment:
    """The flavors a workload would get now, with the mode of each and why others failed.
    ``oracle`` replaces SimulatePreemption (the upstream flavor assigner tests use a fake one)."""
    out = Assignment()
    spec = cl.spec(wl.cq)
    excluded = cl.setup.excluded_prefixes
    wanted = {r: v for r, v in wl.requests.items() if not (excluded and r.startswith(excluded))}
    for res in wanted:
        if not any(res in g.covered for g in spec.groups):
            out.reasons.append(f"resource {res} unavailable in ClusterQueue {wl.cq}")
            out.modes[res] = NO_FIT
            out.never_fits = True
    for group in spec.groups:
        reqs = {r: v for r, v in wanted.items() if r in group.covered}
        if reqs:
            _assign_group(cl, wl, group, reqs, out, oracle)
    if any(m == NO_FIT for m in out.modes.values()):
        node = cl.node(wl.cq)
        out.never_fits = out.never_fits or all(
            wanted[r] > max((potential_available(node, (f, r)) for g in spec.groups if r in g.covered
                             for f in g.flavors), default=0)
            for r in wanted if out.modes.get(r) == NO_FIT)
    return out
