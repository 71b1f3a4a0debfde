"""Scale check for ``gpupolicy audit``: N Kueue Workloads (default 100,000) shaped like the fixtures,
written to a temporary export, then audited through the installed CLI. Prints wall time and peak
RSS of the audit process (the issue's bar: <= 60 s and < 1 GiB on the 2-core machine).

    .venv/bin/python bench/audit_scale.py [N]
"""

from __future__ import annotations

import copy
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "audit" / "workloads.json"
TEAMS = (("nlp", "nlp-train", "h100-80gb"), ("recsys", "recsys-train", "h100-80gb"),
         ("vision", "vision-train", "a100-80gb-mig-3g.40gb"), ("search", "search-train", "a100-80gb-mig-1g.10gb"))


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_export(path: Path, n: int) -> int:
    templates = json.loads(FIX.read_text())["items"]
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"apiVersion": "v1", "items": [\n')
        for i in range(n):
            w = copy.deepcopy(templates[i % 5])  # admitted, finished, evicted, pending, admitted-without-budget
            team, ns, cls = TEAMS[i % len(TEAMS)]
            created = start + timedelta(seconds=20 * i)
            w["metadata"].update(name=f"job-{i:06d}", namespace=ns, uid=f"00000000-0000-4000-8000-{i:012d}",
                                 creationTimestamp=_iso(created))
            w["metadata"]["labels"]["gpupolicy.dev/team"] = team
            for c in w["status"].get("conditions") or []:
                c["lastTransitionTime"] = _iso(created + timedelta(minutes=5 + i % 7))
            adm = w["status"].get("admission")
            if adm:
                adm["clusterQueue"] = team
                for psa in adm["podSetAssignments"]:
                    res = f"gpupolicy.dev/{cls}"
                    psa["flavors"] = {"cpu": cls, res: cls}
                    psa["resourceUsage"] = {"cpu": "8", res: "1"}
            fh.write(("," if i else "") + json.dumps(w) + "\n")
        fh.write('], "kind": "List", "metadata": {"resourceVersion": ""}}\n')
    return path.stat().st_size


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    exe = Path(sys.executable).parent / "gpupolicy"
    with tempfile.TemporaryDirectory() as d:
        export = Path(d) / "workloads.json"
        size = write_export(export, n)
        t = time.perf_counter()
        p = subprocess.run([str(exe), "audit", "--workloads", str(export), "--cluster", "onprem", "--root", str(REPO),
                            "--out", str(Path(d) / "evidence")], capture_output=True, text=True)
        wall = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB on Linux
        if p.returncode != 0:
            sys.exit(f"audit failed ({p.returncode}): {p.stderr}")
        rows = sum(1 for _ in (Path(d) / "evidence" / "ledger.csv").open()) - 1
        print(f"audit: {n:,} workloads ({size / 2**20:.0f} MiB export) -> {rows:,} ledger rows in {wall:.1f} s, "
              f"peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
