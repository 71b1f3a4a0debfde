"""DRA for NVIDIA GPUs: the device inventory each DRA cluster publishes, the DeviceClass selectors
gpupolicy writes, their proof against that inventory, and the Kueue accounting path per cluster.

``dra_report(policy)`` summarises it per cluster for REPORT.md / allocation.json. Lowering is in
``compiler.lower.dra``; rules DRA002-DRA013 in ``compiler.dra.rules``.
"""

from __future__ import annotations

from typing import Any

from compiler.dra.accounting import Accounting, decide, dra_active
from compiler.dra.inventory import DRIVER, Device, DeviceGroup, Inventory, cluster_inventory, policy_inventory, resource_slice
from compiler.dra.proof import ClassMatch, evaluate_class
from compiler.dra.selectors import DRIVER_CLASSES, DRIVER_EXTENDED_RESOURCE, class_selector
from compiler.policy.graph import Policy

__all__ = [
    "DRIVER", "DRIVER_CLASSES", "Accounting", "ClassMatch", "Device", "DeviceGroup", "Inventory",
    "class_selector", "cluster_inventory", "decide", "dra_active", "dra_report", "evaluate_class",
    "resource_slice",
]

BYPASS = ("not mapped in Kueue: a Kueue-managed job naming it is inadmissible (so is one using a "
          "pre-created ResourceClaim); a claim outside Kueue (serving or unmanaged namespaces, bare Pods, "
          "which Kueue's integrations do not manage) takes these devices outside every class budget")


def dra_report(policy: Policy) -> dict[str, Any]:
    """Per cluster: the accounting path and why, and what every DeviceClass matches."""
    from compiler.lower.dra import device_class_mappings, device_classes

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
