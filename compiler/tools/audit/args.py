"""Arguments of ``gpupolicy audit`` (kept apart so building the parser imports nothing heavy)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workloads", type=Path, required=True,
                   help="kubectl get workloads.kueue.x-k8s.io -A -o json")
    p.add_argument("--pods", type=Path, help="kubectl get pods -A -o json (GPU pods outside Kueue, pool misuse)")
    p.add_argument("--metrics-before", type=Path, help="Prometheus /api/v1/query_range JSON, the window before")
    p.add_argument("--metrics-after", type=Path, help="Prometheus /api/v1/query_range JSON, the window after")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for ledger.csv and AUDIT.md (default: AUDIT.md on stdout); "
                        "never the compiler's out/")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.add_argument("--policies", type=Path, default=None, help="policy directory (default: <root>/policies)")
    p.add_argument("--cluster", default=None, help="cluster the export comes from (default: the only one)")
    p.add_argument("--now", default=None, help="export time, ISO 8601 (default: the latest time in the export)")
