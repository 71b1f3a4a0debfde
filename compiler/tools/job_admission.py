"""Would Kueue admit a job of a given shape? A best-case replay of Kueue's flavor assignment
on an idle cluster, for ``gpupolicy explain <team> --job ...`` and for tests.

It answers from the same allocation model as the report: the team's ClusterQueue covers the
GPU resources of its budgets; each requested GPU resource must fit one flavor's nominal quota
plus what it may borrow from the rest of the cohort (other teams' lendable guarantees and the GPUs
no team is guaranteed, held by the root Cohort); undeclared resources (CPU, memory) are
ignored (``excludeResourcePrefixes``), and any other undeclared resource blocks admission
(``quotaCheckStrategy: BlockUndeclared``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from compiler.policy.classes import GpuClass
from compiler.policy.cohorts import borrowable_spare
from compiler.policy.graph import Policy
from compiler.policy.kueue_manager import manager_config
from compiler.policy.queues import resource_groups, training_namespaces


@dataclass(frozen=True)
class Verdict:
    admissible: bool
    reasons: tuple[str, ...]
    flavors: tuple[tuple[str, str], ...] = ()  # (resource, flavor) chosen


def parse_shape(text: str) -> dict[str, int]:
    """``nvidia.com/gpu=4,cpu=32,memory=256Gi`` → GPU-ish counts (CPU/memory kept as 0/1 markers)."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise ValueError(f"{part!r} is not RESOURCE=AMOUNT")
        digits = "".join(ch for ch in value if ch.isdigit() or ch == ".")
        try:
            amount = float(digits) if digits else -1.0
        except ValueError:
            amount = -1.0
        if amount < 0:
            raise ValueError(f"{part!r}: amount {value!r} is not a quantity")
        out[name] = int(amount) if amount.is_integer() else int(amount) + 1
    return out


def _by_resource(shape: dict[str, int], classes: Mapping[str, GpuClass]
                 ) -> tuple[dict[str, int], dict[str, str]] | Verdict:
    """The shape by resource, and the class a job selects for each resource it names by class. A
    class ID stands for its resource on this cluster (``h100-80gb=4``) and for a job that selects
    the class (``gpupolicy.dev/class``): only that class's flavor is tried, as Kueue tries only
    the flavors whose nodeLabels agree (compiler.lower.kueue.flavor_node_labels); a resource named
    as such may take any flavor that covers it, in the ClusterQueue's order."""
    wanted: dict[str, str] = {}
    by_resource: dict[str, int] = {}
    for k, v in shape.items():
        resource = classes[k].resource if k in classes else k
        if k in classes:
            if resource in wanted:
                return Verdict(False, (f"{wanted[resource]} and {k} are both {resource}: a job requests a resource "
                                       "once, so it selects one class",))
            wanted[resource] = k
        by_resource[resource] = by_resource.get(resource, 0) + v
    return by_resource, wanted


def admit(policy: Policy, team_name: str, cluster: str, shape: dict[str, int]) -> Verdict:
    team = policy.team(team_name)
    if team is None:
        return Verdict(False, (f"no team {team_name!r}",))
    if cluster not in policy.clusters:
        return Verdict(False, (f"no cluster {cluster!r}",))
    entries = [e for e in policy.allocation.for_team(team_name) if e.cluster == cluster]
    groups = resource_groups(policy, cluster, entries)
    if not groups or not training_namespaces(team, cluster):
        return Verdict(False, (f"{team_name} has no ClusterQueue on {cluster} (no budget or no namespace there)",))
    resources_cfg = manager_config(policy, cluster).get("resources", {})
    strategy = resources_cfg.get("quotaCheckStrategy", "BlockUndeclared")
    excluded = tuple(resources_cfg.get("excludeResourcePrefixes", ()))
    covered = {r: g for g in groups for r in g["coveredResources"]}
    reasons: list[str] = []
    chosen: list[tuple[str, str]] = []
    classes = policy.classes.get(cluster, {})
    spare = borrowable_spare(policy, cluster)  # GPUs no team is guaranteed, lent by the root Cohort
    selected = _by_resource(shape, classes)
    if isinstance(selected, Verdict):
        return selected
    shape, wanted = selected
    for resource, amount in sorted(shape.items()):
        if resource.startswith(excluded):
            continue
        group = covered.get(resource)
        if group is None:
            if strategy == "BlockUndeclared":
                hint = ""
                if policy.clusters[cluster].dra and resource.startswith("nvidia.com/"):
                    hint = "; this cluster allocates GPUs through DRA: use a ResourceClaimTemplate of the class"
                reasons.append(f"{resource} is not covered by ClusterQueue {team_name} on {cluster} "
                               f"(covered: {', '.join(sorted(covered))}){hint}")
            continue
        fits = None
        attempts: list[str] = []
        for flavor in group["flavors"]:
            if resource in wanted and flavor["name"] != wanted[resource]:
                continue
            res = next(r for r in flavor["resources"] if r["name"] == resource)
            nominal = int(res["nominalQuota"])
            others = [o for o in policy.allocation.for_class(cluster, flavor["name"]) if o.team != team_name]
            lendable = sum(o.lendable for o in others) + spare.get(flavor["name"], 0)
            limit = res.get("borrowingLimit")
            borrowable = lendable if limit is None else min(int(limit), lendable)
            if amount <= nominal + borrowable:
                fits = flavor["name"]
                break
            cls = classes.get(flavor["name"])
            attempts.append(
                f"{resource}={amount} does not fit flavor {flavor['name']}: guaranteed {nominal} + borrowable "
                f"{borrowable} (others and the unguaranteed pool lend {lendable}, limit "
                f"{'none' if limit is None else limit}) = "
                f"{nominal + borrowable}; physical capacity {cls.capacity if cls else '?'}")
        if fits is not None:
            chosen.append((resource, fits))
        else:  # no attempt: the class asked for is not among the queue's flavors
            reasons += attempts or [f"{wanted[resource]} is not covered by ClusterQueue {team_name} on {cluster} (its "
                                    f"{resource} flavors: {', '.join(f['name'] for f in group['flavors'])})"]
    return Verdict(not reasons, tuple(reasons), tuple(chosen))
