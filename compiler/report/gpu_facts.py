"""REPORT.md's GPU facts section: every catalog fact the compiler relied on, per model in use.

The catalog (built in, or restated and extended in the fleet file's ``spec.catalog``) decides
capacity, MIG geometry, DRA selectors, device filters and serving sizing. Showing each fact and its
source lets a reviewer check them, and makes every ``spec.catalog`` field visible in the output
(issue 22: no silent fields).
"""

from __future__ import annotations

from compiler import escape
from compiler.catalog import GpuModel
from compiler.policy.graph import Policy


def _v(value: object) -> str:
    """A fact as inert markdown (catalog strings come from the fleet file: escape.md_code)."""
    return "-" if value is None or value == () or value == "" else escape.md_code(str(value), table=True)


def _model_lines(m: GpuModel, origin: str) -> list[str]:
    lines = [f"### {_v(m.id)} ({_v(m.display_name)}, {origin})", "",
             f"{_v(m.architecture)}, compute capability {_v(m.compute_capability)}, {m.memory_gib:g} GiB "
             f"(NVML total {_v(m.memory_mib)} MiB), bandwidth {_v(m.memory_bandwidth_gbps)} GB/s "
             f"(source: {_v(m.bandwidth_source) if m.bandwidth_source else 'unsourced'}). Source: {_v(m.source)}.", "",
             "| PCI device | form factor | product name | bandwidth GB/s | bandwidth source |", "|---|---|---|---:|---|"]
    for v in m.variants:
        lines.append(f"| {_v(v.pci_device_id)} | {_v(v.form_factor)} | {_v(v.product_name)} | "
                     f"{_v(v.memory_bandwidth_gbps)} | {_v(v.bandwidth_source)} |")
    lines.append("")
    if m.mig is not None:
        g = m.mig
        lines += [f"MIG: {g.compute_slices} compute / {g.memory_slices} memory slices, at most {g.max_instances} "
                  f"instances per GPU. Source: {_v(g.source)}.", "",
                  "| profile | compute | memory | max | placements | id | min driver | other names |",
                  "|---|---:|---:|---:|---|---:|---:|---|"]
        for p in g.profiles:
            names = "; ".join(f"{_v(d.name)} on {', '.join(map(str, d.branches)) or 'unrecorded branches'} "
                              f"({_v(d.source)})" for d in p.driver_names) or "-"
            lines.append(f"| {_v(p.name)} | {p.compute_slices} | {p.memory_slices} | {p.max_instances} | "
                         f"{', '.join(map(str, p.starts))} | {_v(p.profile_id)} | {_v(p.min_driver)} | {names} |")
        lines.append("")
    return lines


def gpu_facts_section(policy: Policy) -> list[str]:
    used = sorted({pool.model for c in policy.fleet.spec.clusters for pool in c.pools})
    declared = set(policy.fleet.spec.catalog)
    lines = ["## GPU facts used", "",
             "What the compiler assumed about each GPU model in use (capacity, MIG geometry, DRA selectors, "
             "serving sizing); `spec.catalog` in the fleet file restates or replaces a built-in entry.", ""]
    for mid in used:
        model = policy.catalog.get(mid)
        if model is not None:
            lines += _model_lines(model, "fleet file" if mid in declared else "built-in catalog")
    return lines
