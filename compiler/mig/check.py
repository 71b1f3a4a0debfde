"""Checks of MIG device layouts against a GPU model: profile names (per driver branch), counts,
packing, and the device plugin's MIG strategy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from compiler.catalog.builtin import builtin_catalog
from compiler.catalog.model import GpuModel, MigGeometry, MigProfile, driver_branch
from compiler.diagnostics import closest
from compiler.mig.packing import pack
from compiler.mig.problems import (
    BAD_DRIVER,
    COUNT_OVER_MAX,
    DRIVER_TOO_OLD,
    EMPTY_DEVICE,
    NO_PLACEMENT,
    NOT_MIG_CAPABLE,
    STRATEGY_MISMATCH,
    UNKNOWN_PROFILE,
    MigProblem,
)

Strategy = Literal["none", "single", "mixed"]
STRATEGIES: tuple[str, ...] = ("none", "single", "mixed")


@dataclass(frozen=True)
class ProfileMatch:
    profile: MigProfile  # canonical entry (stable name for GPU class IDs)
    reported: str  # the name the declared driver reports, to emit in mig-parted configs


def parse_driver(driver: str | None) -> int | None | MigProblem:
    try:
        return driver_branch(driver)
    except ValueError as exc:
        return MigProblem(BAD_DRIVER, str(exc), hint="write the driver branch, e.g. driver: '550'")


def not_mig_capable(model: GpuModel, what: str) -> MigProblem:
    return MigProblem(
        NOT_MIG_CAPABLE,
        f"{model.id} ({model.display_name}) is not MIG-capable; {what} needs MIG",
        hint="use full cards or time-slicing for this model, or the MIG layout all-disabled",
    )


def _driver_text(branches: tuple[int, ...]) -> str:
    return "driver branch " + "/".join(str(b) for b in branches)


def equivalent_profile(model: GpuModel, name: str) -> tuple[str, MigProfile] | None:
    """For a profile of another catalogued model (``1g.5gb`` of a100-40gb), the profile with the
    same slices on ``model`` (``1g.10gb`` on a100-80gb): the usual fix for gpu-operator#603."""
    if model.mig is None:
        return None
    for other in builtin_catalog():
        if other.id == model.id or other.mig is None:
            continue
        theirs = other.mig.profile(name)
        if theirs is None or (other.mig.compute_slices, other.mig.memory_slices) != (
            model.mig.compute_slices,
            model.mig.memory_slices,
        ):
            continue
        for mine in model.mig.profiles:
            if (mine.compute_slices, mine.memory_slices, mine.attribute) == (
                theirs.compute_slices,
                theirs.memory_slices,
                theirs.attribute,
            ):
                return other.id, mine
    return None


def lookup_profile(model: GpuModel, name: str, *, driver: str | None = None) -> ProfileMatch | MigProblem:
    """Resolve a profile name as written in policy (under the declared driver) to the catalog entry."""
    branch = parse_driver(driver)
    if isinstance(branch, MigProblem):
        return branch
    if model.mig is None:
        return not_mig_capable(model, f"profile {name}")
    geometry = model.mig
    for p in geometry.profiles:
        if p.name_for(branch) == name:
            if branch is not None and p.min_driver is not None and branch < p.min_driver:
                return MigProblem(
                    DRIVER_TOO_OLD,
                    f"{model.id}: profile {name} needs driver branch {p.min_driver} or later, declared {branch}",
                    hint=f"upgrade the driver to R{p.min_driver}+ or choose another profile",
                )
            return ProfileMatch(p, name)
    for p in geometry.profiles:
        if p.name == name:  # canonical name, but this branch renames it
            reported = p.name_for(branch)
            return MigProblem(
                UNKNOWN_PROFILE,
                f"{model.id}: driver branch {branch} reports {name} as {reported}; mig-parted rejects {name}",
                hint=f"write {reported} for this driver, or declare the driver the pool really runs",
            )
        for alt in p.driver_names:
            if alt.name == name:
                current = p.name_for(branch)
                if alt.branches:
                    hint = f"{name} is the name {_driver_text(alt.branches)} reports for {p.name} ({alt.source}); "
                    hint += f"declare that driver, or write {current}"
                else:
                    hint = f"{name} is how some drivers reported {p.name} ({alt.source}); write {current}"
                return MigProblem(UNKNOWN_PROFILE, f"{model.id}: no MIG profile {name} on this driver", hint=hint)
    valid = geometry.names(branch)
    hint_parts = []
    same = equivalent_profile(model, name)
    if same is not None:
        owner, mine = same
        hint_parts.append(f"{name} is a profile of {owner}; the same slices on {model.id}: {mine.name_for(branch)}")
    else:
        close = closest(name, valid)
        if close:
            hint_parts.append(f"did you mean {close}?")
    hint_parts.append(f"{model.id} profiles: {', '.join(valid)}")
    return MigProblem(UNKNOWN_PROFILE, f"{model.id}: no MIG profile {name}", hint="; ".join(hint_parts))


def check_device(
    model: GpuModel, profiles: Mapping[str, int], *, driver: str | None = None
) -> list[MigProblem]:
    """Problems with one GPU's MIG devices (profile name -> count); empty when it can be created."""
    branch = parse_driver(driver)
    if isinstance(branch, MigProblem):
        return [branch]
    if model.mig is None:
        return [not_mig_capable(model, "a MIG device layout")]
    geometry: MigGeometry = model.mig
    problems: list[MigProblem] = []
    canonical: dict[str, int] = {}
    media = 0
    for name, count in profiles.items():
        match = lookup_profile(model, name, driver=driver)
        if isinstance(match, MigProblem):
            problems.append(match)
            continue
        p = match.profile
        if count < 0:
            problems.append(MigProblem(COUNT_OVER_MAX, f"{model.id}: {name} count {count} is negative"))
            continue
        if count > p.max_instances:
            problems.append(
                MigProblem(
                    COUNT_OVER_MAX,
                    f"{model.id}: {count}x {name} requested, at most {p.max_instances} per GPU",
                    hint=f"lower the count to {p.max_instances} or spread the instances over more GPUs",
                )
            )
        if p.holds_media_engines:
            media += count
        canonical[p.name] = canonical.get(p.name, 0) + count
    if media > 1:
        names = ", ".join(n for n in profiles if "+me" in n)
        problems.append(
            MigProblem(
                COUNT_OVER_MAX,
                f"{model.id}: {media} instances with media extensions ({names}), a GPU has one set",
                hint="keep one +me instance per GPU; use the plain profile for the others",
            )
        )
    if problems:
        return problems  # packing is meaningless until names and counts are right
    if sum(canonical.values()) == 0:
        return [MigProblem(EMPTY_DEVICE, f"{model.id}: MIG enabled with no MIG devices; the GPU offers no capacity")]
    result = pack(geometry, canonical)
    if not result.ok:
        return [
            MigProblem(
                NO_PLACEMENT,
                f"{model.id}: {result.reason}",
                hint="drop or shrink an instance so the set fits one GPU",
            )
        ]
    return []


def _gpu_set(indices: Sequence[int]) -> str:
    return ("GPU " if len(indices) == 1 else "GPUs ") + ",".join(str(i) for i in indices)


def check_pool_layout(
    model: GpuModel,
    devices: Sequence[Mapping[str, int]],
    strategy: str,
    *,
    driver: str | None = None,
) -> list[MigProblem]:
    """Problems with a pool's per-GPU MIG devices (one mapping per GPU of a node; ``[]`` = MIG
    disabled) under the device plugin's MIG ``strategy``."""
    if strategy not in STRATEGIES:
        return [MigProblem(STRATEGY_MISMATCH, f"unknown MIG strategy {strategy!r}", hint="use mixed (SPEC §9)")]
    if not devices:
        return []
    groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for i, device in enumerate(devices):
        key = tuple(sorted((n, c) for n, c in device.items() if c != 0))
        groups.setdefault(key, []).append(i)
    problems: list[MigProblem] = []
    for key, indices in groups.items():
        for p in check_device(model, dict(key), driver=driver):
            if len(groups) > 1:
                p = MigProblem(p.fault, f"{_gpu_set(indices)}: {p.message}", p.hint)
            problems.append(p)
    if strategy == "none":
        problems.append(
            MigProblem(
                STRATEGY_MISMATCH,
                f"{model.id}: MIG devices declared but the MIG strategy is none; they are not advertised",
                hint="use strategy mixed (SPEC §9)",
            )
        )
    elif strategy == "single":
        names = sorted({n for key in groups for n, _ in key})
        if len(groups) > 1 or len(names) != 1:
            found = " | ".join(
                f"{_gpu_set(ix)}: " + (", ".join(f"{c}x {n}" for n, c in key) or "no MIG devices")
                for key, ix in groups.items()
            )
            problems.append(
                MigProblem(
                    STRATEGY_MISMATCH,
                    f"{model.id}: MIG strategy single needs one identical profile on every GPU; found {found}",
                    hint="use strategy mixed: with more than one profile the node reports MIG-INVALID under single",
                )
            )
    return problems


def instances(devices: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """MIG instances per profile on one node (sum over its GPUs), in profile-name order."""
    total: dict[str, int] = {}
    for device in devices:
        for name, count in device.items():
            if count:
                total[name] = total.get(name, 0) + count
    return dict(sorted(total.items()))
