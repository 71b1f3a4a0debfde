"""The pipeline as data: load → validate → lower → verify → emit → report.

``compile_policies`` runs every stage in memory and returns what each produced; the CLI
decides what to write. Nothing here touches ``out/``.
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from compiler.diagnostics import Diagnostic, has_errors
from compiler.load.paths import display_path

if TYPE_CHECKING:
    from compiler.model.manifest import Manifest
    from compiler.policy.graph import Policy


@dataclass
class Options:
    root: Path  # repository root: display paths are relative to it
    policy_dir: Path
    out_dir: Path
    crds: Path | None = None
    strict: bool = False
    verify: bool = True


@dataclass
class Result:
    policy: Policy | None = None
    manifests: list[Manifest] = field(default_factory=list)
    out_files: dict[str, bytes] = field(default_factory=dict)  # relative to out/
    repo_files: dict[str, bytes] = field(default_factory=dict)  # relative to the root
    diagnostics: list[Diagnostic] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    verify_stats: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.policy is not None and not has_errors(self.diagnostics)


def default_crds(root: Path) -> Path | None:
    env = os.environ.get("GPUPOLICY_CRDS")
    if env:
        return Path(env)
    for cand in (root.parent / "shared" / "crds", root / ".." / "shared" / "crds"):
        if cand.is_dir():
            return cand
    return None


@contextmanager
def no_collections() -> Iterator[None]:
    """A build allocates millions of objects that live until it ends; the cyclic collector
    would re-walk them over and over (~30% of the 1,000-team benchmark with the default
    thresholds, bench/README.md; still ~60% of loading the cache with thresholds raised 100x).
    Cycles are rare here (peak RSS +3-10% without collecting), so none runs during a compile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_policies(opts: Options) -> Result:
    with no_collections():
        return _compile(opts)


def _compile(opts: Options) -> Result:
    # Stage modules are imported here, not at the top: the CLI imports this module for Options,
    # and a cached `check` (compiler.cache.incremental) never needs them (~0.3 s of imports).
    from compiler.report.codeowners import render_codeowners
    from compiler.emit.tree import render_tree
    from compiler.report.gitops import argocd_reports
    from compiler.load.source import load_policy_dir
    from compiler.lower import lower_all
    from compiler.policy.multikueue_topology import check_manifests
    from compiler.report.policy_report import policy_reports
    from compiler.model.schemas import render_schemas
    from compiler.validate import build_policy

    res = Result()
    t = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal t
        now = time.perf_counter()
        res.timings[stage] = res.timings.get(stage, 0.0) + now - t
        t = now

    sources, diags = load_policy_dir(opts.policy_dir, opts.root)
    res.diagnostics.extend(diags)
    lap("load")
    policy, diags = build_policy(sources)
    res.diagnostics.extend(diags)
    lap("validate")
    if policy is None or has_errors(res.diagnostics):
        return res
    res.policy = policy
    res.manifests, inventory = lower_all(policy)
    res.diagnostics.extend(check_manifests(policy, inventory))  # GITOPS006
    lap("lower")
    if opts.verify:
        from compiler.verify.run import run_verify

        diags, stats = run_verify(policy, res.manifests, opts.crds, strict=opts.strict)
        res.diagnostics.extend(diags)
        res.verify_stats = stats
        lap("verify")
        if has_errors(res.diagnostics, strict=opts.strict):
            return res
    files = render_tree(res.manifests)
    files.update(policy_reports(policy))
    files.update(argocd_reports(policy, inventory, [m for m in res.manifests if m.cluster == "argocd"]))
    res.out_files = files
    policy_rel = display_path(opts.policy_dir, opts.root)
    out_rel = display_path(opts.out_dir, opts.root)
    res.repo_files[".github/CODEOWNERS"] = render_codeowners(policy, inventory, policy_rel, out_rel)
    for name, data in render_schemas().items():
        res.repo_files[f"schemas/{name}"] = data
    lap("emit")
    return res
