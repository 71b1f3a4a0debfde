"""What the rules and reports now compute once per policy answers as the per-call arithmetic it
replaced: guaranteed totals per class, the pie charts' largest teams, and memoised answers that
callers only read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import copy_demo, policy_at

from compiler.escape import mermaid
from compiler.policy.allocation import Allocation, Resolved
from compiler.policy.cohorts import spare_capacity
from compiler.policy.graph import Policy
from compiler.report import charts
from compiler.report.mermaid import block
from compiler.validate import run_checks


@pytest.fixture(scope="module")
def org_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.generate import generate

    root = tmp_path_factory.mktemp("org")
    generate(80, 6, root)
    return root


@pytest.fixture(scope="module")
def org(org_root: Path) -> Policy:
    policy, _diags = policy_at(org_root)
    assert policy is not None
    return policy


def test_totals_are_the_sums(org: Policy) -> None:
    a = org.allocation
    for cluster, by_id in org.classes.items():
        for cid in by_id:
            entries = a.for_class(cluster, cid)
            assert a.guaranteed_total(cluster, cid) == sum(e.guaranteed.value or 0 for e in entries)
            assert a.budgeted(cluster, cid) == bool(entries)
    assert a.guaranteed_total("nowhere", "none") == 0 and not a.budgeted("nowhere", "none")
    assert Allocation().guaranteed_total("c", "k") == 0


def test_spare_capacity_from_the_totals(org: Policy) -> None:
    for cluster, by_id in org.classes.items():
        expected = {cid: free for cid, cls in by_id.items()
                    if cls.training_pools and (entries := org.allocation.for_class(cluster, cid))
                    and (free := cls.capacity - sum(e.guaranteed.value or 0 for e in entries)) > 0}
        assert spare_capacity(org, cluster) == expected


def _pie_reference(policy: Policy, cluster: str, cid: str, capacity: int) -> list[str]:
    """The pie as it was written before (a full sort with a key function)."""
    held = sorted(((e.guaranteed.value or 0, e.team) for e in policy.allocation.for_class(cluster, cid)
                   if e.guaranteed.value), key=lambda x: (-x[0], x[1]))
    shown, rest = held[:charts.PIE_SLICES], held[charts.PIE_SLICES:]
    slices = [(team, n) for n, team in shown]
    if rest:
        slices.append((f"{len(rest):,} other teams", sum(n for n, _t in rest)))
    free = capacity - sum(n for n, _t in held)
    if free > 0:
        slices.append(("guaranteed to no team", free))
    if not slices:
        return []
    return block(["pie showData", f"  title {mermaid(cluster)} {mermaid(cid)}, capacity {capacity:,}",
                  *(f'  "{mermaid(name)}" : {n}' for name, n in slices)]) + [""]


def test_pies_are_the_reference(org: Policy, tmp_path: Path) -> None:
    demo, _ = policy_at(copy_demo(tmp_path))
    assert demo is not None
    cases = 0
    for policy in (org, demo):
        for cluster, by_id in policy.classes.items():
            for cid, cls in by_id.items():
                assert charts.allocation_pie(policy, cluster, cid, cls.capacity) == \
                    _pie_reference(policy, cluster, cid, cls.capacity)
                cases += len(policy.allocation.for_class(cluster, cid)) > charts.PIE_SLICES
    assert cases  # some pies fold teams into "other teams"


def test_pie_ties_and_bools(org: Policy) -> None:
    """Equal guarantees order by team; a guarantee read as a bool is written as before."""
    cluster, cid = next((c, k) for c, by_id in org.classes.items() for k in by_id
                        if len(org.allocation.for_class(c, k)) > charts.PIE_SLICES)
    entries = [e._replace(guaranteed=Resolved(True if i % 3 == 0 else 2, "team"))
               for i, e in enumerate(org.allocation.entries)]
    policy = replace(org, allocation=Allocation(tuple(entries), org.allocation.capacity))
    cap = policy.classes[cluster][cid].capacity
    assert charts.allocation_pie(policy, cluster, cid, cap) == _pie_reference(policy, cluster, cid, cap)


def test_rules_answer_the_same_on_a_fresh_and_a_warm_policy(org: Policy, org_root: Path) -> None:
    """The memos (per policy, and the DRA outcomes across policies) change no finding."""
    fresh, _ = policy_at(org_root)
    assert fresh is not None
    first = [str(d) for d in run_checks(fresh)]
    assert [str(d) for d in run_checks(fresh)] == first  # warm
    assert [str(d) for d in run_checks(org)] == first  # another policy object of the same files
