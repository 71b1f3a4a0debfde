"""What Kueue's validating webhook rejects beyond the CRD schema (domain/kueue.md §4.2), for
ClusterQueue, Cohort and ResourceFlavor (v1beta1 and v1beta2). Runs on the defaulted object,
as the webhook does. ``borrowingLimit`` without a cohort on a ClusterQueue is left to the CRD's
CEL rule (VERIFY004) so it is reported once.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from compiler.cel.quantity import QuantityError, quantity_from_json
from compiler.diagnostics import Rule, Scope, define
from compiler.verify.context import ObjectContext, PathPart
from compiler.verify.meta import label_value_problem, qualified_name_problem

NEGATIVE_QUOTA = define(
    "VERIFY020", "Kueue: nominalQuota, borrowingLimit and lendingLimit must be non-negative quantities.",
    "nominalQuota: 8", "nominalQuota: -1",
    scope=Scope.OUTPUT,
)
LENDING_ABOVE_NOMINAL = define(
    "VERIFY021", "Kueue: a ClusterQueue's lendingLimit must not exceed its nominalQuota.",
    "nominalQuota: 8\nlendingLimit: 2", "nominalQuota: 8\nlendingLimit: 10",
    scope=Scope.OUTPUT,
)
LIMIT_WITHOUT_PARENT = define(
    "VERIFY022", "Kueue: lending/borrowing limits need a cohort (ClusterQueue) or a parent (Cohort).",
    "cohortName: research\n... lendingLimit: 2", "# no cohortName\n... lendingLimit: 2",
    scope=Scope.OUTPUT,
)
RESOURCE_ORDER = define(
    "VERIFY023", "Kueue: flavors[].resources[i].name must equal the group's coveredResources[i].",
    "coveredResources: [nvidia.com/gpu, cpu]\nresources: [{name: nvidia.com/gpu}, {name: cpu}]",
    "coveredResources: [nvidia.com/gpu, cpu]\nresources: [{name: cpu}, {name: nvidia.com/gpu}]",
    scope=Scope.OUTPUT,
)
DUPLICATE_IN_GROUPS = define(
    "VERIFY024", "Kueue: a resource or a flavor may appear in only one resourceGroup, once.",
    "resourceGroups: [{coveredResources: [cpu]}, {coveredResources: [nvidia.com/gpu]}]",
    "resourceGroups: [{coveredResources: [cpu]}, {coveredResources: [cpu]}]",
    scope=Scope.OUTPUT,
)
TOO_MANY = define(
    "VERIFY025", "Kueue: at most 256 flavors and 256 covered resources per queue, 512 flavor x resource pairs per group.",
    "16 flavors x 4 resources", "300 flavors in one ClusterQueue",
    scope=Scope.OUTPUT,
)
BAD_RESOURCE_NAME = define(
    "VERIFY026", "Kueue: covered resource names must be valid qualified names (label-key syntax).",
    "coveredResources: [nvidia.com/gpu]", "coveredResources: [nvidia.com/gpu!]",
    scope=Scope.OUTPUT,
)
BAD_WEIGHT = define(
    "VERIFY027", "Kueue: fairSharing.weight must be 0 or more than 1n.",
    "fairSharing: {weight: '0.5'}", "fairSharing: {weight: '-1'}",
    scope=Scope.OUTPUT,
)
BAD_SELECTOR = define(
    "VERIFY028", "Kueue: namespaceSelector must be a valid LabelSelector.",
    "matchExpressions: [{key: team, operator: In, values: [a]}]",
    "matchExpressions: [{key: team, operator: In, values: []}]",
    scope=Scope.OUTPUT,
)
BAD_ON_FLAVORS = define(
    "VERIFY029", "Kueue: admissionChecksStrategy onFlavors must name flavors of the ClusterQueue.",
    "onFlavors: [h100]   # h100 is in resourceGroups", "onFlavors: [l4]   # not a flavor of this queue",
    scope=Scope.OUTPUT,
)
BAD_FLAVOR_NODES = define(
    "VERIFY030", "Kueue: ResourceFlavor nodeLabels and nodeTaints must be valid and taints unique per key/effect.",
    "nodeTaints: [{key: gpupolicy.dev/serving, value: pool-a, effect: NoSchedule}]",
    "nodeTaints: [{key: a, effect: NoSchedule}, {key: a, effect: NoSchedule}]",
    scope=Scope.OUTPUT,
)


RULES: tuple[Rule, ...] = (
    NEGATIVE_QUOTA, LENDING_ABOVE_NOMINAL, LIMIT_WITHOUT_PARENT, RESOURCE_ORDER, DUPLICATE_IN_GROUPS,
    TOO_MANY, BAD_RESOURCE_NAME, BAD_WEIGHT, BAD_SELECTOR, BAD_ON_FLAVORS, BAD_FLAVOR_NODES,
)

_NANO = Fraction(1, 10**9)


def _quantity(value: Any) -> Fraction | int | None:
    if type(value) is int:  # the common case, without building a Fraction
        return value
    try:
        return quantity_from_json(value).value
    except QuantityError:
        return None  # malformed quantities are the schema's pattern error, reported already


def check_kueue(obj: dict[str, Any], ctx: ObjectContext) -> int:
    """Run the webhook rules for ``obj``; returns how many checks ran (for stats)."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return 0
    if kind == "ResourceFlavor":
        _flavor(spec, ctx)
        return 1
    if kind not in ("ClusterQueue", "Cohort"):
        return 0
    queue = kind == "ClusterQueue"
    parent = spec.get("cohortName", spec.get("cohort")) if queue else spec.get("parentName", spec.get("parent"))
    _resource_groups(spec.get("resourceGroups"), ctx, queue=queue, has_parent=bool(parent))
    _weight(spec.get("fairSharing"), ctx)
    if queue:
        _selector(spec.get("namespaceSelector"), ctx)
        _on_flavors(spec, ctx)
    return 1


def _resource_groups(groups: Any, ctx: ObjectContext, *, queue: bool, has_parent: bool) -> None:
    if not isinstance(groups, list):
        return
    seen_resources: dict[str, int] = {}
    seen_flavors: dict[str, int] = {}
    total_flavors = total_resources = 0
    for g, group in enumerate(groups):
        if not isinstance(group, dict):
            continue
        base: list[PathPart] = ["spec", "resourceGroups", g]
        covered = [r for r in group.get("coveredResources") or [] if isinstance(r, str)]
        flavors = [f for f in group.get("flavors") or [] if isinstance(f, dict)]
        total_flavors += len(flavors)
        total_resources += len(covered)
        if len(flavors) * len(covered) > 512:
            ctx.report(TOO_MANY, base, f"{len(flavors)} flavors x {len(covered)} resources = "
                       f"{len(flavors) * len(covered)} pairs; at most 512 per resource group")
        for i, res in enumerate(covered):
            path = [*base, "coveredResources", i]
            problem = qualified_name_problem(res)
            if problem:
                ctx.report(BAD_RESOURCE_NAME, path, f"Invalid resource name {res!r}: {problem}")
            if res in seen_resources:
                ctx.report(DUPLICATE_IN_GROUPS, path, f"Duplicate value: resource {res!r} is already "
                           f"covered by resourceGroups[{seen_resources[res]}]")
            else:
                seen_resources[res] = g
        for f, flavor in enumerate(flavors):
            fpath = [*base, "flavors", f]
            fname = flavor.get("name")
            if isinstance(fname, str):
                if fname in seen_flavors:
                    ctx.report(DUPLICATE_IN_GROUPS, [*fpath, "name"], f"Duplicate value: flavor {fname!r} "
                               f"already appears in resourceGroups[{seen_flavors[fname]}]")
                else:
                    seen_flavors[fname] = g
            for r, res in enumerate(flavor.get("resources") or []):
                if isinstance(res, dict):
                    _resource_quota(res, covered, [*fpath, "resources", r], r, ctx, queue=queue, has_parent=has_parent)
    if total_flavors > 256:
        ctx.report(TOO_MANY, ["spec", "resourceGroups"], f"{total_flavors} flavors in total; at most 256")
    if total_resources > 256:
        ctx.report(TOO_MANY, ["spec", "resourceGroups"], f"{total_resources} covered resources in total; at most 256")


def _resource_quota(res: dict[str, Any], covered: list[str], path: list[PathPart], index: int,
                    ctx: ObjectContext, *, queue: bool, has_parent: bool) -> None:
    name = res.get("name")
    if index < len(covered) and name != covered[index]:
        ctx.report(RESOURCE_ORDER, [*path, "name"],
                   f"Invalid value {name!r}: must match the name in coveredResources[{index}] ({covered[index]!r})",
                   hint="list each flavor's resources in the order of coveredResources")
    for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        raw = res.get(field)
        # Only a leading '-' can make a quantity negative: parse nothing else here.
        if (type(raw) is int and raw < 0) or (isinstance(raw, str) and raw.startswith("-") and (_quantity(raw) or 0) < 0):
            ctx.report(NEGATIVE_QUOTA, [*path, field], f"Invalid value {raw!r}: must be greater than or equal to 0")
    if not has_parent:
        limits = ("lendingLimit",) if queue else ("borrowingLimit", "lendingLimit")
        for field in limits:
            if res.get(field) is not None:
                owner = "cohortName" if queue else "parentName"
                ctx.report(LIMIT_WITHOUT_PARENT, [*path, field], f"must be nil when {owner} is empty",
                           hint=f"set spec.{owner} or drop {field}")
    raw_nominal, raw_lending = res.get("nominalQuota"), res.get("lendingLimit")
    if queue and raw_nominal is not None and raw_lending is not None:
        nominal, lending = _quantity(raw_nominal), _quantity(raw_lending)
        if nominal is not None and lending is not None and lending > nominal:
            ctx.report(LENDING_ABOVE_NOMINAL, [*path, "lendingLimit"],
                       f"Invalid value {raw_lending!r}: must be less than or equal to the nominalQuota ({raw_nominal!r})",
                       hint="lend at most what the queue is guaranteed")


def _weight(fair: Any, ctx: ObjectContext) -> None:
    if not isinstance(fair, dict) or fair.get("weight") is None:
        return
    w = _quantity(fair["weight"])
    if w is not None and (w < 0 or 0 < w <= _NANO):
        ctx.report(BAD_WEIGHT, ["spec", "fairSharing", "weight"],
                   f"Invalid value {fair['weight']!r}: must be 0 or greater than 1n (10e-9)")


def _selector(selector: Any, ctx: ObjectContext) -> None:
    if not isinstance(selector, dict):
        return
    base: list[PathPart] = ["spec", "namespaceSelector"]
    for key, value in (selector.get("matchLabels") or {}).items():
        problem = qualified_name_problem(str(key)) or label_value_problem(value)
        if problem:
            ctx.report(BAD_SELECTOR, [*base, "matchLabels", str(key)], f"Invalid label {key}={value!r}: {problem}")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, dict):
            continue
        path = [*base, "matchExpressions", i]
        op, values = expr.get("operator"), expr.get("values") or []
        problem = qualified_name_problem(str(expr.get("key", "")))
        if problem:
            ctx.report(BAD_SELECTOR, [*path, "key"], f"Invalid key {expr.get('key')!r}: {problem}")
        if op in ("In", "NotIn") and not values:
            ctx.report(BAD_SELECTOR, [*path, "values"], f"Required value: values must be non-empty for operator {op}")
        elif op in ("Exists", "DoesNotExist") and values:
            ctx.report(BAD_SELECTOR, [*path, "values"], f"Forbidden: values must be empty for operator {op}")
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            ctx.report(BAD_SELECTOR, [*path, "operator"], f"Unsupported value: {op!r}")
        for j, v in enumerate(values):
            problem = label_value_problem(v)
            if problem:
                ctx.report(BAD_SELECTOR, [*path, "values", j], f"Invalid value {v!r}: {problem}")


def _on_flavors(spec: dict[str, Any], ctx: ObjectContext) -> None:
    strategy = spec.get("admissionChecksStrategy")
    if not isinstance(strategy, dict):
        return
    flavors = {f.get("name") for g in spec.get("resourceGroups") or [] if isinstance(g, dict)
               for f in g.get("flavors") or [] if isinstance(f, dict)}
    for i, check in enumerate(strategy.get("admissionChecks") or []):
        for j, name in enumerate((check or {}).get("onFlavors") or []):
            if name not in flavors:
                ctx.report(BAD_ON_FLAVORS, ["spec", "admissionChecksStrategy", "admissionChecks", i, "onFlavors", j],
                           f"Invalid value {name!r}: must be one of the ClusterQueue's flavors {sorted(map(str, flavors))}")


def _flavor(spec: dict[str, Any], ctx: ObjectContext) -> None:
    for key, value in (spec.get("nodeLabels") or {}).items():
        problem = qualified_name_problem(str(key)) or label_value_problem(value)
        if problem:
            ctx.report(BAD_FLAVOR_NODES, ["spec", "nodeLabels", str(key)], f"Invalid label {key}={value!r}: {problem}")
    seen: dict[tuple[Any, Any], int] = {}
    for i, taint in enumerate(spec.get("nodeTaints") or []):
        if not isinstance(taint, dict):
            continue
        path: list[PathPart] = ["spec", "nodeTaints", i]
        problem = qualified_name_problem(str(taint.get("key", "")))
        if problem:
            ctx.report(BAD_FLAVOR_NODES, [*path, "key"], f"Invalid taint key {taint.get('key')!r}: {problem}")
        if taint.get("value") is not None and label_value_problem(taint["value"]):
            ctx.report(BAD_FLAVOR_NODES, [*path, "value"], f"Invalid taint value {taint['value']!r}")
        key = (taint.get("key"), taint.get("effect"))
        if key in seen:
            ctx.report(BAD_FLAVOR_NODES, path, f"Duplicate value: taint {key[0]}:{key[1]} already at nodeTaints[{seen[key]}]")
        else:
            seen[key] = i
