"""Digests of everything a build writes, for proving a refactoring changed no output.

    .venv/bin/python bench/digests.py [--crds DIR] [--work DIR] > after.txt; diff before.txt after.txt

Builds the demo (policies/), every golden case and a 250-team x 20-cluster bench organisation
(bench/generate.py, seed 1), each twice: ``build --no-cache`` and ``build`` with the cache from
an empty ``out/``. Prints one line per case: the digests of ``out/``, ``.github/`` and
``schemas/`` and whether the cached build gave the same tree.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent / "gpupolicy"


def tree(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(x for x in path.rglob("*") if x.is_file()):
        h.update(str(f.relative_to(path)).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


def case(work: Path, name: str, policies: Path, crds: Path) -> str:
    root = work / name
    shutil.copytree(policies, root / "policies")
    subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
    cmd = [str(BIN), "build", "--crds", str(crds)]
    first = subprocess.run([*cmd, "--no-cache"], cwd=root, capture_output=True, text=True).returncode
    plain = f"{tree(root / 'out')} {tree(root / '.github')} {tree(root / 'schemas')}"
    shutil.rmtree(root / "out")
    second = subprocess.run(cmd, cwd=root, capture_output=True, text=True).returncode
    cached = f"{tree(root / 'out')} {tree(root / '.github')}"
    files = sum(1 for _ in (root / "out").rglob("*.yaml"))
    same = "SAME" if plain.startswith(cached) else "DIFF"
    return f"{name:26} rc={first}/{second} out,.github,schemas={plain} cached={cached} files={files} {same}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crds", type=Path, default=REPO.parent / "shared" / "crds")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpupolicy-digests-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(case(work, "demo", REPO / "policies", args.crds), flush=True)
        for c in sorted((REPO / "tests" / "golden").iterdir()):
            print(case(work, "golden-" + c.name, c / "policies", args.crds), flush=True)
        org = work / "bench-org"
        subprocess.run([sys.executable, str(REPO / "bench" / "generate.py"), "--teams", "250", "--clusters", "20",
                        "--out", str(org)], check=True, capture_output=True)
        print(case(work, "bench-250x20", org / "policies", args.crds), flush=True)


if __name__ == "__main__":
    main()
