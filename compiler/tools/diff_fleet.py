"""What ``gpupolicy diff`` reports of the fleet file: every leaf of its spec by path (named list
items keyed by name, so a reorder is no change), and the capacity it yields per cluster and class.
"""

from __future__ import annotations

from typing import Any

from compiler.policy.graph import Policy

__all__ = ["fleet_changes", "fleet_deltas", "fleet_facts"]


def _fleet_leaves(value: Any, prefix: str) -> dict[str, Any]:
    """The fleet spec's leaves by path; list items that have a ``name`` keyed by it
    (``departments[research].defaults.borrow``), so a reorder is no change and an edit names its item."""
    if isinstance(value, dict) and value:  # an empty one stays a leaf: an item added bare still shows
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_fleet_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        out = {}
        for v in value:
            out.update(_fleet_leaves({k: x for k, x in v.items() if k != "name"}, f"{prefix}[{v['name']}]"))
        return out
    return {prefix: value}


def fleet_facts(policy: Policy | None) -> dict[str, Any]:
    """Every leaf of the fleet file, plus the capacity it yields per cluster and class. Counting
    only chosen facts (capacity, versions, tiers, weights) reported a change of
    ``defaults.budget`` as "0 fleet change(s)" while it re-rendered every queue."""
    if policy is None:
        return {}
    facts: dict[str, Any] = {}
    for cname, by_id in policy.classes.items():
        for cid, cls in by_id.items():
            facts[f"capacity {cname}/{cid}"] = cls.capacity
    facts.update(_fleet_leaves(policy.fleet.spec.model_dump(by_alias=True, mode="json", exclude_none=True), ""))
    return facts


def fleet_changes(o: dict[str, Any], n: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(k, o.get(k), n.get(k)) for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]


def fleet_deltas(base: Policy | None, head: Policy | None) -> list[tuple[str, Any, Any]]:
    return fleet_changes(fleet_facts(base), fleet_facts(head))
