"""The allocation model (``compiler.policy.allocation``): where each budget value comes from (the
team, the nearest department up the tree with a default, the fleet's defaults, Kueue's built-in
behaviour) and the indexes every reader asks. ``make mutate`` found that no golden case sets a
department default for ``guaranteed`` or a fleet default with a number, so those origins are
pinned here."""

from __future__ import annotations

from typing import Any

from compiler.model.fleet import BudgetDefaults, Department
from compiler.model.team import Budget
from compiler.policy.allocation import Resolved, TeamAllocation, build_allocation


def budget(**values: Any) -> Budget:
    return Budget.model_validate({"cluster": "east", "class": "h100", **values})


DEPARTMENTS = {d.name: d for d in (
    Department(name="org", defaults=BudgetDefaults(guaranteed=4, lend=1)),
    Department(name="child", parent="org", defaults=BudgetDefaults(borrow="unlimited")),
    Department(name="solo"),
)}
FLEET = BudgetDefaults(guaranteed=2, borrow=3)


def test_each_value_comes_from_the_nearest_level_that_sets_it() -> None:
    teams = [("a-team", "child", "teams/a.yaml", [budget()]),
             ("b-team", "solo", "teams/b.yaml", [budget()]),
             ("c-team", "child", "teams/c.yaml", [budget(guaranteed=5, borrow=0, lend="unlimited")])]
    a, b, c = build_allocation(teams, DEPARTMENTS, FLEET, {("east", "h100"): 16}).entries
    assert (a.guaranteed, a.borrow, a.lend) == (Resolved(4, "department org"), Resolved(None, "department child"),
                                                Resolved(1, "department org"))
    assert (b.guaranteed, b.borrow, b.lend) == (Resolved(2, "fleet defaults"), Resolved(3, "fleet defaults"),
                                                Resolved(None, "built-in"))
    assert (c.guaranteed, c.borrow, c.lend) == (Resolved(5, "team"), Resolved(0, "team"), Resolved(None, "team"))
    assert (a.lendable, b.lendable, c.lendable) == (1, 2, 5)  # lend caps the guarantee; unlimited lends it all


def test_kueues_built_in_behaviour_when_nothing_sets_a_value() -> None:
    [e] = build_allocation([("t", "solo", "teams/t.yaml", [budget()])], DEPARTMENTS, BudgetDefaults(),
                           {}).entries
    assert (e.guaranteed, e.borrow, e.lend) == (Resolved(0, "built-in"), Resolved(None, "built-in"),
                                                Resolved(None, "built-in"))
    assert [e.guaranteed.show(), e.borrow.show()] == ["0", "unlimited"]
    assert e.borrow.as_json() == {"value": "unlimited", "origin": "built-in"}
    assert e.guaranteed.as_json() == {"value": 0, "origin": "built-in"}


def test_entries_in_team_order_whatever_the_input_order() -> None:
    """Teams come in name order from the loader; a caller that does not keep it still gets the
    entries sorted (department names chosen so that comparing any other pair of fields would
    find the input sorted)."""
    teams = [("zeta", "a0", "teams/z.yaml", [budget(guaranteed=1)]),
             ("alpha", "zz", "teams/a.yaml", [budget(guaranteed=2), budget(cluster="west", guaranteed=3)])]
    allocation = build_allocation(teams, {}, BudgetDefaults(), {})
    assert [(e.team, e.cluster) for e in allocation.entries] == [("alpha", "east"), ("zeta", "east"),
                                                                 ("alpha", "west")]
    assert [e.team for e in allocation.for_cluster("east")] == ["alpha", "zeta"]
    assert allocation.for_cluster("nowhere") == [] and allocation.for_team("nobody") == []
    assert allocation.guaranteed_total("east", "h100") == 3 and allocation.budgeted("west", "h100")
    assert not allocation.budgeted("west", "a100")
    assert isinstance(allocation.for_team("alpha")[0], TeamAllocation)
