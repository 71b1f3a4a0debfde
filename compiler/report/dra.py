"""The DRA section of REPORT.md and allocation.json: per cluster, the Kueue accounting path and why
(``compiler.dra.accounting``), the devices its pools publish, what every DeviceClass matches
(``compiler.dra.proof``), the ``deviceClassMappings`` and what the NVIDIA driver's own classes
would hand out outside every budget."""

from __future__ import annotations

from typing import Any

from compiler.dra.accounting import decide, dra_active
from compiler.dra.inventory import policy_inventory
from compiler.dra.proof import evaluate_class
from compiler.dra.selectors import DRIVER_CLASSES, DRIVER_EXTENDED_RESOURCE
from compiler.policy.dra_classes import device_class_mappings, device_classes
from compiler.policy.graph import Policy

BYPASS = ("not mapped in Kueue: a Kueue-managed job naming it is inadmissible (so is one using a "
          "pre-created ResourceClaim); a claim outside Kueue (serving or unmanaged namespaces, bare Pods, "
          "which Kueue's integrations do not manage) takes these devices outside every class budget")


def dra_report(policy: Policy) -> dict[str, Any]:
    """Per cluster: the accounting path and why, and what every DeviceClass matches."""
    out: dict[str, Any] = {}
    for c in policy.fleet.spec.clusters:
        acc = decide(policy, c)
        entry: dict[str, Any] = acc.as_json()
        out[c.name] = entry
        if not dra_active(c):
            if acc.path == "claim-template":  # a MultiKueue manager: counts, allocates nothing
                entry["deviceClassMappings"] = device_class_mappings(policy, c.name)
            continue
        inventory = policy_inventory(policy, c.name)
        entry["devices"] = {p.pool: {"perNode": sum(g.count for g in p.groups if not g.device.mig_parent) // p.nodes,
                                     "total": sum(g.count for g in p.groups if not g.device.mig_parent),
                                     "serving": p.serving} for p in inventory.pools}
        classes: dict[str, Any] = {}
        for dc in device_classes(policy, c.name):
            m = evaluate_class(dc.name, dc.selectors, inventory)
            classes[dc.name] = {"countsAs": f"gpupolicy.dev/{dc.budget_class}", "selectors": list(dc.selectors),
                                "matches": m.total, "pools": sorted(m.pools), "custom": dc.custom}
        entry["deviceClasses"] = classes
        entry["deviceClassMappings"] = device_class_mappings(policy, c.name)
        driver: dict[str, Any] = {}
        for name, expr in DRIVER_CLASSES.items():
            m = evaluate_class(name, [expr], inventory)
            if not m.total and not m.parents:
                continue
            note = BYPASS
            if name in DRIVER_EXTENDED_RESOURCE and acc.extended_resource:
                note += (f"; pods may also request {DRIVER_EXTENDED_RESOURCE[name]} (extendedResourceName), which "
                         "no ClusterQueue covers")
            driver[name] = {"matches": m.total, "classes": dict(sorted(m.matched.items())),
                            "migParents": m.parents, "note": note}
        entry["driverClasses"] = driver
    return out
