"""Arguments of ``gpupolicy simulate`` (added to the CLI parser by compiler/cli/main.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, type=Path,
                   help="job trace: generic CSV, Philly CSV (philly.csv) or exported Workloads JSON")
    p.add_argument("--cluster", default=None, help="cluster whose rendered Kueue objects to use (default: the only one)")
    p.add_argument("--load", type=float, default=1.0, help="compress arrivals by this factor (2.0 = twice as dense)")
    p.add_argument("--mapping", type=Path, default=None,
                   help="YAML mapping of trace teams to teams, default GPU class and priority")
    p.add_argument("--explain", default=None, metavar="JOB", help="why this job waited, instead of the report")
    p.add_argument("--checkpoint", type=float, default=0.0,
                   help="fraction of progress a preempted job keeps (0 = restart from scratch)")
    p.add_argument("--from-out", action="store_true",
                   help="read the Kueue objects from the out/ directory instead of compiling the policies")
    p.add_argument("--no-baselines", action="store_true", help="skip the static-partition and first-apply baselines")
    p.add_argument("--base", default=None, metavar="REF",
                   help="also replay against this git revision's policies and show per-team deltas "
                        "(default format then: markdown, for a PR comment)")
