"""DRA for NVIDIA GPUs: the device inventory each DRA cluster publishes, the DeviceClass selectors
gpupolicy writes, their proof against that inventory, and the Kueue accounting path per cluster.

The DeviceClasses and mappings derived from a policy are ``compiler.policy.dra_classes``; lowering
is ``compiler.lower.dra``; the per-cluster summary for REPORT.md / allocation.json is
``compiler.report.dra``; rules DRA002-DRA014 in ``compiler.validate.dra``.
"""

from __future__ import annotations

from compiler.dra.accounting import Accounting, decide, dra_active
from compiler.dra.inventory import DRIVER, Device, DeviceGroup, Inventory, cluster_inventory, resource_slice
from compiler.dra.proof import ClassMatch, evaluate_class
from compiler.dra.selectors import DRIVER_CLASSES, class_selector

__all__ = [
    "DRIVER", "DRIVER_CLASSES", "Accounting", "ClassMatch", "Device", "DeviceGroup", "Inventory",
    "class_selector", "cluster_inventory", "decide", "dra_active", "evaluate_class",
    "resource_slice",
]
