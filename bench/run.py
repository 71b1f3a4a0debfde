"""Benchmark gpupolicy at fleet scale; prints one JSON line per run (bench/README.md).

    .venv/bin/python bench/run.py [--cases demo,medium,large] [--crds DIR] [--keep DIR]

Cases: ``small`` (the demo organisation in policies/, also ``demo``), ``medium`` (250 teams x 20 clusters), ``large`` (1,000 x 20), or
``TEAMSxCLUSTERS``; organisations come from bench/generate.py (seed 1). Each case runs in its
own process, so ``peak_rss_mib`` (getrusage) is that build's alone. Per case:

* ``seconds``: the build in this process, stage by stage (load, validate, lower, verify, emit =
  render + reports, write = the atomic swap of a fresh out/), ``total`` their sum;
* ``baseline_s``: PyYAML's C emitter, ``yaml.dump(obj, Dumper=yaml.CSafeDumper)``, over the same
  objects in the same process, and ``ratio`` = total / baseline;
* ``cli``: wall times of the real command line on a copy: a full ``build`` (no cache, no out/),
  ``check`` with nothing changed, ``check`` after editing one team's budget (three edits, the
  median is ``check_after_edit``), then ``build``; ``incremental_ratio`` = check_after_edit /
  build. ``build_no_cache`` is ``build --no-cache`` over the unchanged tree;
* demo only: ``kubernetes_validate_s``, one ``kubernetes-validate --strict`` call on every
  built-in-kind file of the same out/, and ``check_vs_kubernetes_validate`` for cold (no cache)
  and warm (cache present) checks;
* large, when medium ran too: ``scaling`` = total(large) / total(medium).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
CASES = {"small": None, "demo": None, "medium": (250, 20), "large": (1000, 20)}  # small = the demo


def size_of(case: str) -> tuple[int, int] | None:
    if case in CASES:
        return CASES[case]
    m = re.fullmatch(r"(\d+)x(\d+)", case)
    if not m:
        raise SystemExit(f"unknown case {case!r}: demo, medium, large or TEAMSxCLUSTERS")
    return int(m.group(1)), int(m.group(2))


def prepare(case: str, work: Path) -> Path:
    root = work / case
    if root.exists():
        shutil.rmtree(root)
    size = size_of(case)
    if size is None:
        shutil.copytree(REPO / "policies", root / "policies")
    else:
        from bench.generate import generate

        generate(size[0], size[1], root)
    return root


def in_process(root: Path, crds: Path) -> dict[str, Any]:
    """The build stage by stage, then the C-emitter baseline over the same objects."""
    import gc

    import yaml

    from compiler.emit.tree import write_tree
    from compiler.pipeline.options import Options
    from compiler.pipeline.run import compile_policies

    gc.disable()  # as the CLI runs (compiler.cli.main.entrypoint)
    opts = Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=crds, verify=True)
    os.sync()  # start from a quiet disk: earlier cases' writeback must not land in this one's write
    res = compile_policies(opts)
    if not res.ok:
        raise SystemExit(f"{root}: the policy does not compile: {res.diagnostics[:3]}")
    t = time.perf_counter()
    write_tree(root / "out", res.out_files)
    seconds = dict(res.timings)
    seconds["write"] = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gc.collect()  # the baseline starts from a clean heap, with the same collector settings
    t = time.perf_counter()
    for m in res.manifests:
        yaml.dump(m.obj, Dumper=yaml.CSafeDumper)
    baseline = time.perf_counter() - t
    total = sum(seconds.values())
    return {
        "objects": len(res.manifests),
        "files": len(res.out_files),
        "bytes": sum(len(v) for v in res.out_files.values()),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "total": round(total, 3),
        "peak_rss_mib": round(peak),
        "baseline_s": round(baseline, 3),
        "ratio": round(total / baseline, 3),
        "ratio_without_write": round((total - seconds["write"]) / baseline, 3),
    }


def _wall(args: list[str], root: Path, crds: Path, expect: int = 0) -> float:
    env = {**os.environ, "GPUPOLICY_CRDS": str(crds)}
    env.pop("GITHUB_ACTIONS", None)
    os.sync()
    t = time.perf_counter()
    proc = subprocess.run([str(BIN / "gpupolicy"), *args, "--root", str(root)], cwd=root, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != expect or (expect == 1 and "stale" not in proc.stderr):
        raise SystemExit(f"gpupolicy {' '.join(args)} in {root}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return seconds


def _edit_one_team(root: Path, n: int) -> str:
    """The n-th team with a budget that sets no lending limit guarantees one GPU less: a real
    edit (its ClusterQueue, REPORT.md and allocation.json change) that stays valid."""
    import yaml

    found = 0
    for path in sorted((root / "policies" / "teams").glob("*.yaml")):
        team = yaml.safe_load(path.read_text())
        for budget in team["spec"].get("budgets", []):
            if budget.get("guaranteed", 0) >= 2 and "lend" not in budget:
                if found == n:
                    budget["guaranteed"] -= 1
                    path.write_text(yaml.safe_dump(team, sort_keys=False) + f"# bench edit {n}\n")
                    return path.name
                found += 1
                break
    raise SystemExit("no team budget to edit")


def cli(root: Path, crds: Path, demo: bool) -> dict[str, Any]:
    work = root.parent / f"{root.name}-cli"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(root / "policies", work / "policies")
    out: dict[str, Any] = {}
    out["build"] = _wall(["build"], work, crds)
    out["check_unchanged"] = _wall(["check"], work, crds)
    out["build_no_cache"] = _wall(["build", "--no-cache"], work, crds)
    if demo:
        shutil.rmtree(work / ".gpupolicy-cache")
        out["check_cold"] = _wall(["check"], work, crds)  # no cache at all
        out["check_unchanged"] = _wall(["check"], work, crds)
    edits = []
    for n in range(3):
        _edit_one_team(work, n)
        edits.append(_wall(["check"], work, crds, expect=1))
    out["check_after_edit_runs"] = [round(s, 3) for s in edits]
    out["check_after_edit"] = statistics.median(edits)
    out["build_after_edit"] = _wall(["build"], work, crds)
    if demo:
        out.update(kubernetes_validate(work, out))
    shutil.rmtree(work)
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def kubernetes_validate(root: Path, timings: dict[str, Any]) -> dict[str, Any]:
    from compiler.verify.builtin import bundled_versions, is_builtin_group, split_api_version

    newest = bundled_versions()[-1]
    files = []
    for path in sorted((root / "out").rglob("*.yaml")):
        m = re.search(r"^apiVersion: (\S+)$", path.read_text(), re.M)
        if m and is_builtin_group(split_api_version(m.group(1))[0], newest):
            files.append(str(path))
    t = time.perf_counter()
    proc = subprocess.run([str(BIN / "kubernetes-validate"), "--strict", "--quiet", *files], capture_output=True)
    kv = time.perf_counter() - t
    return {"kubernetes_validate_s": kv, "kubernetes_validate_files": len(files),
            "kubernetes_validate_rc": proc.returncode,
            "check_vs_kubernetes_validate": {"cold": round(timings["check_cold"] / kv, 3),
                                             "warm": round(timings["check_unchanged"] / kv, 3),
                                             "after_edit": round(timings["check_after_edit"] / kv, 3)}}


def one(case: str, work: Path, crds: Path) -> dict[str, Any]:
    root = prepare(case, work)
    size = size_of(case)
    from compiler.load.files import discover

    teams = len(discover(root / "policies", root)[0]) - 1
    import yaml

    clusters = len(yaml.safe_load((root / "policies" / "fleet.yaml").read_text())["spec"]["clusters"])
    line: dict[str, Any] = {"case": case, "teams": teams, "clusters": clusters}
    line.update(in_process(root, crds))
    line["cli"] = cli(root, crds, demo=size is None)
    line["incremental_ratio"] = round(line["cli"]["check_after_edit"] / line["cli"]["build"], 3)
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description="gpupolicy benchmark: one JSON line per case")
    ap.add_argument("--cases", default="small,medium,large")
    ap.add_argument("--crds", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None,
                    help="work directory, kept afterwards (default: a temp dir, on tmpfs when available)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one case here
    ap.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    ns = ap.parse_args()
    crds = ns.crds or Path(os.environ.get("GPUPOLICY_CRDS", REPO.parent / "shared" / "crds"))
    if not crds.is_dir():
        raise SystemExit(f"no CRD directory at {crds}: pass --crds (verification is part of the build)")
    if ns.one:
        print(json.dumps(one(ns.one, ns.work, crds.resolve())), flush=True)
        return
    # Byte-compile the package first: this environment may set PYTHONDONTWRITEBYTECODE, and
    # an installed tool has its .pyc files (without them every run compiles ~100 modules, ~0.15 s).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "compiler")], check=True)
    # The work trees live in RAM (tmpfs) when there is one: the figures are the compiler's, not
    # the disk's (bench/README.md: this VM's ext4 took 1.7 s, later 17-34 s of kernel time, to
    # create the same 72,000 files). --keep DIR measures on DIR's file system.
    shm = Path("/dev/shm")
    work = ns.keep or Path(tempfile.mkdtemp(prefix="gpupolicy-bench-", dir=shm if shm.is_dir() else None))
    work.mkdir(parents=True, exist_ok=True)
    totals: dict[str, float] = {}
    try:
        for case in ns.cases.split(","):
            proc = subprocess.run([sys.executable, __file__, "--one", case, "--work", str(work), "--crds", str(crds)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr)
                raise SystemExit(f"case {case} failed")
            line = json.loads(proc.stdout.strip().splitlines()[-1])
            totals[case] = line["total"]
            if case == "large" and "medium" in totals:
                line["scaling"] = round(line["total"] / totals["medium"], 3)
            print(json.dumps(line), flush=True)
    finally:
        if ns.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
