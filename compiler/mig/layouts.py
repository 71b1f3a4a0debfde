"""Named MIG layouts as mig-parted names them (and MIG Manager generates per node since
GPU Operator v26.3): ``all-disabled``, ``all-enabled``, ``all-<profile>`` with ``+`` written
``.`` (``all-1g.10gb.me``), and ``all-balanced``."""

from __future__ import annotations

from compiler.catalog.builtin import builtin_catalog
from compiler.catalog.model import GpuModel, MigGeometry, MigProfile, config_name
from compiler.diagnostics import closest
from compiler.mig.check import equivalent_profile, not_mig_capable, parse_driver
from compiler.mig.problems import DRIVER_TOO_OLD, UNKNOWN_LAYOUT, MigProblem

DISABLED = "all-disabled"
ENABLED = "all-enabled"
BALANCED = "all-balanced"

# mig-parted pkg/mig/builder balanced formula: instances per compute-slice size, by GPU size.
_BALANCED_FORMULA: dict[int, dict[int, int]] = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}


def _balanced(geometry: MigGeometry) -> dict[int, MigProfile] | str:
    formula = _BALANCED_FORMULA.get(geometry.compute_slices)
    if formula is None:
        return f"all-balanced is defined for 7- and 4-slice GPUs, this one has {geometry.compute_slices}"
    chosen: dict[int, MigProfile] = {}
    for g in formula:
        # the base profile (no +/- attribute) of that size with the most instances, e.g. 1g.10gb over 1g.20gb
        bases = [p for p in geometry.profiles if p.compute_slices == g and not p.attribute]
        if not bases:
            return f"all-balanced needs a base {g}g profile, this GPU has none"
        chosen[g] = max(bases, key=lambda p: p.max_instances)
    return chosen


def layout_names(model: GpuModel, *, driver: str | None = None) -> tuple[str, ...]:
    """Every named layout that exists for the model (under the declared driver)."""
    branch = parse_driver(driver)
    if isinstance(branch, MigProblem) or model.mig is None:
        return (DISABLED,)
    names = [DISABLED, ENABLED]
    if not isinstance(_balanced(model.mig), str):
        names.append(BALANCED)
    names += [config_name(p.name_for(branch)) for p in model.mig.profiles]
    return tuple(names)


def resolve_layout(
    model: GpuModel, layout: str, *, driver: str | None = None, gpus: int = 1
) -> list[dict[str, int]] | MigProblem:
    """Per-GPU profile counts of a named layout, one mapping per GPU (``gpus`` of them).

    ``all-disabled`` gives ``[]`` (MIG off, full cards); ``all-enabled`` gives empty mappings.
    Profile names are those the declared driver reports. The result is not packed here:
    run ``check_pool_layout`` on it.
    """
    branch = parse_driver(driver)
    if isinstance(branch, MigProblem):
        return branch
    if layout == DISABLED:
        return []
    if model.mig is None:
        return not_mig_capable(model, f"layout {layout}")
    geometry = model.mig
    if layout == ENABLED:
        return [{} for _ in range(gpus)]
    if layout == BALANCED:
        chosen = _balanced(geometry)
        if isinstance(chosen, str):
            return MigProblem(UNKNOWN_LAYOUT, f"{model.id}: {chosen}")
        formula = _BALANCED_FORMULA[geometry.compute_slices]
        device = {chosen[g].name_for(branch): n for g, n in formula.items()}
        return [dict(device) for _ in range(gpus)]
    for p in geometry.profiles:
        if layout in (config_name(p.name), config_name(p.name_for(branch))):
            if branch is not None and p.min_driver is not None and branch < p.min_driver:
                return MigProblem(
                    DRIVER_TOO_OLD,
                    f"{model.id}: layout {layout} uses {p.name}, which needs driver branch {p.min_driver}+ "
                    f"(declared {branch})",
                )
            return [{p.name_for(branch): p.max_instances} for _ in range(gpus)]
    return MigProblem(UNKNOWN_LAYOUT, f"{model.id}: no MIG layout {layout}", hint=_layout_hint(model, layout, driver))


def _branch(driver: str | None) -> int | None:
    branch = parse_driver(driver)
    return None if isinstance(branch, MigProblem) else branch


def _layout_hint(model: GpuModel, layout: str, driver: str | None) -> str:
    valid = layout_names(model, driver=driver)
    parts: list[str] = []
    assert model.mig is not None
    for p in model.mig.profiles:
        for alt in p.driver_names:
            if layout == config_name(alt.name):
                parts.append(f"{alt.name} is a driver-specific name of {p.name} ({alt.source})")
    owners = [m.id for m in builtin_catalog() if m.id != model.id and layout in layout_names(m)]
    profile_names = [
        p.name
        for m in builtin_catalog()
        if m.id in owners and m.mig
        for p in m.mig.profiles
        if config_name(p.name) == layout
    ]
    same = equivalent_profile(model, profile_names[0]) if profile_names else None
    if owners:
        text = f"{layout} is a layout for {', '.join(owners)}; on {model.id} the node would report MIG-INVALID"
        if same is not None:
            text += f"; the same slices on {model.id}: {config_name(same[1].name_for(_branch(driver)))}"
        parts.append(text)
    close = closest(layout, valid)
    if close and same is None:
        parts.append(f"did you mean {close}?")
    parts.append(f"{model.id} layouts: {', '.join(valid)}")
    return "; ".join(parts)
