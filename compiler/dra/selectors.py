"""CEL selectors of the DeviceClasses gpupolicy generates, and of those the driver chart installs.

A generated class selects by capability, never by node: the driver, the device ``type``, the
NVML product names of the class's GPU model (every board variant the catalog knows, since the
fleet file does not say SXM or PCIe), the MIG ``profile`` as the pools' driver branch reports
it, and for full cards a memory floor. Everything is one ``&&`` chain whose first terms guard
the later ones: Kubernetes aborts the allocation when a selector errors on any device (for
example ``.profile`` read on a full GPU), and ``&&`` short-circuits to false before that.
"""

from __future__ import annotations

import math

from compiler.catalog import Catalog, GpuModel
from compiler.dra.inventory import DRIVER
from compiler.mig import lookup_profile
from compiler.mig.check import ProfileMatch
from compiler.model.fleet import Cluster
from compiler.policy.classes import GpuClass

ATTR = f"device.attributes['{DRIVER}']"
CAP = f"device.capacity['{DRIVER}']"
# Full cards report slightly less than the nominal size (NVML 81559 MiB on an 80 GB H100, less
# with ECC); the floor only states the capability, the product name does the selecting.
MEMORY_FLOOR = 0.9

# Classes the NVIDIA DRA driver chart installs itself (templates/deviceclass-*.yaml, rendered
# for resource.k8s.io/v1); they exist on every DRA cluster and overlap every generated class.
DRIVER_CLASSES: dict[str, str] = {
    "gpu.nvidia.com": f"device.driver == '{DRIVER}' && {ATTR}.type == 'gpu'",
    "mig.nvidia.com": f"device.driver == '{DRIVER}' && {ATTR}.type == 'mig'",
    "vfio.gpu.nvidia.com": f"device.driver == '{DRIVER}' && {ATTR}.type == 'vfio'",
}
DRIVER_EXTENDED_RESOURCE = {"gpu.nvidia.com": "nvidia.com/gpu"}  # set by the chart for v1


def _string_set(attr: str, values: list[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    if len(quoted) == 1:
        return f"{ATTR}.{attr} == {quoted[0]}"
    return f"{ATTR}.{attr} in [{', '.join(quoted)}]"


def memory_floor_gib(model: GpuModel) -> int:
    return int(math.floor(model.memory_gib * MEMORY_FLOOR))


def class_selector(cls: GpuClass, cluster: Cluster, catalog: Catalog) -> str | None:
    """The CEL expression of ``cls``'s DeviceClass; None when it cannot be written (a model
    without an NVML product name, or a shared cut, which DRA does not express per replica)."""
    model = catalog.get(cls.model)
    device_type = cls.mode.dra_device_type  # cut-mode table: None for shared cuts
    if model is None or not model.product_names or device_type is None:
        return None
    terms = [f"device.driver == '{DRIVER}'", f"{ATTR}.type == '{device_type}'",
             _string_set("productName", list(model.product_names))]
    if cls.profile is None:  # whole devices: a memory floor; MIG slices: the profile
        terms.append(f"{CAP}.memory.compareTo(quantity('{memory_floor_gib(model)}Gi')) >= 0")
    else:
        terms.append(_string_set("profile", profile_names(cls, cluster, catalog)))
    return " && ".join(terms)


def profile_names(cls: GpuClass, cluster: Cluster, catalog: Catalog) -> list[str]:
    """Names the pools' drivers report for the class's profile (``3g.39gb`` on 535 for 3g.40gb)."""
    model = catalog.get(cls.model)
    assert model is not None and cls.profile is not None
    names: list[str] = []
    for pool in cluster.pools:
        if pool.name not in cls.pools:
            continue
        match = lookup_profile(model, cls.profile, driver=pool.driver)
        name = match.reported if isinstance(match, ProfileMatch) else cls.profile
        if name not in names:
            names.append(name)
    return names or [cls.profile]
