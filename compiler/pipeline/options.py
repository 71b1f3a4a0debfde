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


def default_crds(root: Path) -> Path | None:
    env = os.environ.get("GPUPOLICY_CRDS")
    if env:
        return Path(env)
    for cand in (root.parent / "shared" / "crds", root / ".." / "shared" / "crds"):
        if cand.is_dir():
            return cand
    return None
