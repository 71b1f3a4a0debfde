"""Arguments of ``gpupolicy import`` (kept apart so building the parser imports nothing heavy)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=Path, help="kubectl get nodes -o json")
    p.add_argument("--pods", type=Path, help="kubectl get pods -A -o json")
    p.add_argument("--kueue", type=Path, help="kubectl get resourceflavors,cohorts,clusterqueues,localqueues,"
                   "workloadpriorityclasses -A -o json (plus multikueueconfigs,multikueueclusters on a manager)")
    p.add_argument("--cluster-policy", type=Path, help="kubectl get clusterpolicies.nvidia.com -o json")
    p.add_argument("--cluster", default="main", help="name of the exported cluster (default: main)")
    p.add_argument("--from", dest="from_dir", type=Path,
                   help="directory with one sub-directory per cluster (nodes.json, pods.json, kueue.json, "
                        "cluster-policy.json); instead of the single-cluster flags")
    p.add_argument("--name", default="imported", help="fleet name (default: imported)")
    p.add_argument("--out", type=Path, required=True, help="directory for policies/ and INVENTORY.md")
    p.add_argument("--force", action="store_true", help="replace an existing DIR/policies")
