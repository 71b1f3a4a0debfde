"""Where a one-team edit's ``validate`` spends its time, stage by stage, by organisation size
(issue 21: "grows with the size of the change, not of the organisation").

    .venv/bin/python bench/stages.py                       # 250, 1,000 and 5,000 teams on 20 clusters
    .venv/bin/python bench/stages.py --teams 250,5000 --rounds 5 --keep /dev/shm/stages

For each size: a generated organisation (``bench/generate.py``), one ``build`` to fill the store,
then ``--rounds`` times a one-team budget edit (a different team each round) and ``validate``'s
pipeline in this process, with every forked unit run in this process too (``GPUPOLICY_NO_FORK``),
so that each stage's whole cost is seen once, on one core. Prints one line per stage: its median
seconds at each size and what it costs per 1,000 more teams (the slope from the smallest size to
the largest). A stage whose slope is not ~0 grows with the organisation. The wall time of the CLI
is lower than the sum (the policy-scope unit runs beside lowering in a second process).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# (label, module, attribute): the stages, in pipeline order. Nested ones are shown indented; the
# top-level ones add up to the run, less what is not listed ("other").
STAGES: tuple[tuple[str, str, str], ...] = (
    ("read the policy files", "compiler.pipeline.run", "Run.read_inputs"),
    ("parses from the store", "compiler.pipeline.front", "load"),
    ("assemble the policy", "compiler.validate", "assemble_policy"),
    ("  schema (pydantic)", "compiler.validate.schema", "parse_team"),
    ("  allocation", "compiler.validate", "build_allocation"),
    ("rules (policy unit)", "compiler.pipeline.policy_unit", "semantic_rules"),
    ("report parts", "compiler.pipeline.policy_unit", "report_parts"),
    ("fleet objects", "compiler.pipeline.cohorts", "fleet_lowered"),
    ("kept Cohorts", "compiler.pipeline.cohorts", "kept_cohorts"),
    ("team units (blocks)", "compiler.pipeline.stages", "team_units"),
    ("ArgoCD objects", "compiler.pipeline.stages", "lower_delivery"),
    ("CODEOWNERS", "compiler.pipeline.owners", "codeowners_kept"),
    ("OPS (runtime checks)", "compiler.pipeline.stages", "check_runtime"),
)
TOTAL = "whole run"


def _wrapped(times: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[label] = times.get(label, 0.0) + time.perf_counter() - t

    return timed


def instrument(times: dict[str, float]) -> None:
    """Wrap every stage where it is looked up: its module and the modules that imported it by name."""
    for label, module, attr in STAGES:
        owner: Any = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        fn = getattr(owner, name)
        timed = _wrapped(times, label, fn)
        setattr(owner, name, timed)
        if not path:
            for mod in list(sys.modules.values()):
                if mod is not None and mod.__name__.startswith("compiler.") and getattr(mod, name, None) is fn:
                    setattr(mod, name, timed)


def measure(root: Path, rounds: int, times: dict[str, float]) -> dict[str, float]:
    from run import _edit_teams  # bench/run.py: the same edit as make bench's

    from compiler.cache.store import Store
    from compiler.pipeline.options import Options, default_crds
    from compiler.pipeline.run import compile_policies

    opts = Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=default_crds(root))
    samples: dict[str, list[float]] = {}
    for r in range(rounds + 1):  # the first round warms the store for this compiler
        _edit_teams(root, 7 * r + 3, 1)
        times.clear()
        t = time.perf_counter()
        compile_policies(opts, Store(root), objects=False, digests=False)
        times[TOTAL] = time.perf_counter() - t
        if r:
            for label, seconds in times.items():
                samples.setdefault(label, []).append(seconds)
    return {label: statistics.median(v) for label, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teams", default="250,1000,5000")
    ap.add_argument("--clusters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="generate (or reuse) the trees under this directory")
    ns = ap.parse_args()
    os.environ["GPUPOLICY_NO_FORK"] = "1"
    import gc

    gc.disable()  # as a run does (compiler.pipeline.run.no_collections)
    from generate import generate

    work = ns.keep or Path(os.environ.get("TMPDIR", "/tmp")) / f"gpupolicy-stages-{os.getpid()}"
    sizes = [int(x) for x in ns.teams.split(",")]
    times: dict[str, float] = {}
    instrument(times)
    results: dict[int, dict[str, float]] = {}
    try:
        for n in sizes:
            root = work / f"t{n}x{ns.clusters}"
            if not (root / "out").is_dir():
                shutil.rmtree(root, ignore_errors=True)
                generate(n, ns.clusters, root)
                subprocess.run([sys.executable, "-m", "compiler", "build", "--root", str(root)], check=True,
                               capture_output=True, env={**os.environ, "GPUPOLICY_NO_FORK": ""})
            results[n] = measure(root, ns.rounds, times)
            print(f"# {n} teams: {results[n][TOTAL]:.3f} s", file=sys.stderr)
    finally:
        if ns.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    lo, hi = sizes[0], sizes[-1]
    labels = [label for label, _, _ in STAGES]
    listed = {label for label in labels if not label.startswith(" ")}
    for n in sizes:
        results[n]["other"] = results[n][TOTAL] - sum(v for k, v in results[n].items() if k in listed)
    print("| stage | " + " | ".join(f"{n:,} teams" for n in sizes) + " | per 1,000 more teams |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for label in [*labels, "other", TOTAL]:
        row = [results[n].get(label, 0.0) for n in sizes]
        slope = (row[-1] - row[0]) / (hi - lo) * 1000 if hi > lo else 0.0
        print(f"| {label} | " + " | ".join(f"{x:.3f}" for x in row) + f" | {slope:+.3f} |")


if __name__ == "__main__":
    main()
