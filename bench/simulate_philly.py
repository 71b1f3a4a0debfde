"""Time ``gpupolicy simulate`` on the Philly trace (issue 16): the replay alone, in-process.

    .venv/bin/python bench/simulate_philly.py [--jobs N ...] [--cluster onprem] [--load 1.0] [--out DIR]

Reads the demo's rendered Kueue objects from out/ (or another tree's ``--out``, such as a
``bench/generate.py`` organisation's) and ../shared/traces/philly-pollux/philly.csv
(VCs mapped to teams by the automatic rule), replays the first N jobs for each N given (default
20000 and all 82,247) and prints one JSON line per N: read/replay/report seconds (wall and CPU),
cycles, preemptions, stranded GPU-hours, peak RSS and the load average (the machine is shared);
with two sizes also t(large)/t(small) over jobs(large)/jobs(small), on CPU seconds. ``--reference``
replays with the straightforward path (no memoised failures or search bounds) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.tools.simulate.cluster import Cluster  # noqa: E402
from compiler.tools.simulate.objects import load_setup, read_out_dir  # noqa: E402
from compiler.tools.simulate.replay import replay  # noqa: E402
from compiler.tools.simulate.report import summarize  # noqa: E402
from compiler.tools.simulate.traces import Mapping, compress, read_trace  # noqa: E402

PHILLY = ROOT.parent / "shared" / "traces" / "philly-pollux" / "philly.csv"


def one(n: int | None, cluster: str, load: float, tmp: Path, reference: bool = False,
        out_dir: Path = ROOT / "out") -> dict[str, object]:
    lines = PHILLY.read_text().splitlines()
    path = PHILLY
    if n is not None and n < len(lines) - 1:
        path = tmp / f"philly-{n}.csv"
        path.write_text("\n".join(lines[: n + 1]) + "\n")
    t0 = time.perf_counter()
    setup = load_setup(read_out_dir(out_dir), cluster)
    jobs, _, _ = read_trace(path, setup, Mapping())
    compress(jobs, load)
    t1, c1 = time.perf_counter(), time.process_time()
    cl = Cluster.of(setup)
    cl.fast = not reference
    out = replay(cl, jobs)
    t2, c2 = time.perf_counter(), time.process_time()
    rep = summarize(out, jobs, baselines=False)
    t3 = time.perf_counter()
    return {"jobs": len(jobs), "queues": len(setup.queues), "cluster": cluster, "load": load, "reference": reference, "read_s": round(t1 - t0, 2),
            "replay_s": round(t2 - t1, 2), "replay_cpu_s": round(c2 - c1, 2), "report_s": round(t3 - t2, 2),
            "cycles": out.cycles, "preemptions": sum(len(t.preempted_by) for t in out.tracks),
            "never_fit": sum(bool(t.never_fits) for t in out.tracks),
            "utilisation": round(rep.utilisation, 3), "idle_gpu_h": round(rep.idle_gpu_hours),
            "stranded_gpu_h": round(rep.stranded_gpu_hours),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "loadavg_1m": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, nargs="*", default=[20000, 0], help="sizes; 0 = the whole trace")
    ap.add_argument("--cluster", default="onprem")
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--reference", action="store_true", help="the straightforward path (slow; for comparison)")
    ap.add_argument("--out", type=Path, default=ROOT / "out", help="the rendered tree to read (default: the demo's)")
    ns = ap.parse_args()
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in ns.jobs:
            row = one(n or None, ns.cluster, ns.load, Path(tmp), ns.reference, ns.out)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if len(rows) == 2:
        small, large = rows
        cpu_s, cpu_l, jobs_s, jobs_l = small["replay_cpu_s"], large["replay_cpu_s"], small["jobs"], large["jobs"]
        assert isinstance(cpu_s, float) and isinstance(cpu_l, float)
        assert isinstance(jobs_s, int) and isinstance(jobs_l, int)
        print(json.dumps({"t_large_over_t_small": round(cpu_l / max(cpu_s, 1e-9), 2),
                          "jobs_large_over_jobs_small": round(jobs_l / jobs_s, 2)}))


if __name__ == "__main__":
    main()
