"""Sharing options and their side effects (docs/misconfigurations.md, family "sharing"): what a
time-sliced or MPS share does not give, stated where the policy chooses it.

- FLEET304: ``failRequestsGreaterThanOne: false`` lets a pod ask for several shares, which gives no
  more compute and may all land on one physical GPU (NVIDIA/gpu-operator#386).
- FLEET305: a team that handles a residency-restricted data class budgets a time-sliced or MPS
  class: DCGM cannot attribute GPU metrics to the pods sharing a device (GPU Operator docs, GPU
  sharing), so the audit evidence for that data class has a hole.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.model.fleet import TimeSlicingCut
from compiler.policy.graph import Policy, Team

MULTI_SHARE = define(
    "FLEET304", "Time-sliced pools keep failRequestsGreaterThanOne: true: a request for several shares gets no "
    "more compute and may get slots of one GPU.",
    "cut: {mode: timeslicing, replicas: 4}", "cut: {mode: timeslicing, replicas: 4, failRequestsGreaterThanOne: false}",
    Severity.WARNING, scope=Scope.FLEET)
AUDIT_HOLE = define(
    "FLEET305", "A team handling a residency-restricted data class is not budgeted on time-sliced or MPS shares: "
    "GPU metrics cannot be attributed to the pods sharing a device, so the audit cannot say who held it.",
    "dataClasses: [pii]\nbudgets: [{cluster: onprem, class: h100-80gb}]",
    "dataClasses: [pii]\nbudgets: [{cluster: cloud, class: l4-ts4}]", Severity.WARNING, scope=Scope.TEAM)

RULES: tuple[Rule, ...] = (MULTI_SHARE, AUDIT_HOLE)


@checks(MULTI_SHARE)
def check_multi_share(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        for pi, p in enumerate(c.pools):
            if isinstance(p.cut, TimeSlicingCut) and not p.cut.fail_requests_greater_than_one:
                yield MULTI_SHARE.diag(
                    f"pool {p.name!r} on {c.name!r} lets a pod request several of its {p.cut.replicas} time-sliced "
                    "shares per GPU: CUDA gives each process an equal time slice however many shares it holds, and "
                    "the shares of one request can all come from one physical GPU, so a job asking for 2 gets "
                    "neither 2x compute nor 2 GPUs",
                    policy.fleet_src.locate(("spec", "clusters", ci, "pools", pi, "cut", "failRequestsGreaterThanOne")),
                    hint="keep failRequestsGreaterThanOne: true (the default) and budget full cards or MIG slices for "
                         "jobs that need more than one GPU")


@checks(AUDIT_HOLE)
def check_audit_hole(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    restricted = {d.name for d in policy.fleet.spec.data_classes if d.residency is not None}
    held = sorted(restricted & set(team.model.spec.data_classes))
    if not held:
        return
    for i, b in enumerate(team.model.spec.budgets):
        cls = policy.classes.get(b.cluster, {}).get(b.class_)
        if cls is None or cls.mode.per_pod_metrics:
            continue
        yield AUDIT_HOLE.diag(
            f"team {team.name!r} handles {', '.join(held)} and is budgeted on {b.class_} ({cls.mode.wording}) on "
            f"{b.cluster}: {cls.mode.attribution}; the evidence ledger cannot say which of the pods sharing a GPU "
            "held it", team.src.locate(("spec", "budgets", i, "class")),
            hint="budget full cards or MIG slices for teams with restricted data, or run that data in a separate "
                 "team without shared classes")
