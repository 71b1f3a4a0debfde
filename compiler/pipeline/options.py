"""What a command asks of the pipeline: directories, CRDs, strictness. Light on purpose: the CLI
imports it for every command, before it knows whether the pipeline will run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Options:
    root: Path  # repository root: display paths are relative to it
    policy_dir: Path
    out_dir: Path
    crds: Path | None = None
    strict: bool = False
    verify: bool = True
    cache: bool = True  # may use the store in .gpupolicy-cache/ (--no-cache: compute everything)


# The pinned upstream CRDs shipped with the compiler (each folder's SOURCE.txt names its tag).
PACKAGED_CRDS = Path(__file__).resolve().parent.parent / "verify" / "crds"


def default_crds(root: Path) -> Path | None:
    """``$GPUPOLICY_CRDS``, else ``../shared/crds`` beside the repository (SPEC §9), else the CRDs
    shipped with the compiler, so an installed gpupolicy verifies custom resources anywhere."""
    env = os.environ.get("GPUPOLICY_CRDS")
    if env:
        return Path(env)
    for cand in (root.parent / "shared" / "crds", root / ".." / "shared" / "crds"):
        if cand.is_dir():
            return cand
    return PACKAGED_CRDS if PACKAGED_CRDS.is_dir() else None
