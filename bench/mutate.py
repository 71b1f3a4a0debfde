"""Mutation testing of the solvers (``make mutate``): how strong their tests are.

The solvers (MIG packing, the policy's quota arithmetic, the simulator's cohort-tree quota
arithmetic) are mutated by mutmut: ``[tool.mutmut]`` in pyproject.toml names the modules and the
tests run against them. Each mutant is one small change of behaviour (a comparison flipped, a
constant off by one, a value dropped); a mutant no test kills is a missing test, unless it changes
nothing a caller can observe (a search order, a memo, a defensive check the inputs never reach):
those are listed in ``bench/mutants-equivalent.txt``, each with why.

    make mutate                          # every module of [tool.mutmut], then the summary
    .venv/mutate/bin/python bench/mutate.py --summary   # the summary of the last run only

Prints, per module, how many mutants were killed, survived (explained or not), timed out or were
reached by no test, then every unexplained survivor and every mutant no selected test reaches, with
its diff. Exit 1 when there is one. The run's state is kept in ``mutants/`` (git-ignored): a second
run re-tests only what changed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EQUIVALENT = REPO / "bench" / "mutants-equivalent.txt"
MUTMUT = [sys.executable, "-m", "mutmut"]
BAD = ("survived", "no tests")


def equivalents(path: Path = EQUIVALENT) -> set[tuple[str, str, str]]:
    """(module, removed line, added line) of every mutant known to change nothing observable. The
    file: blocks of ``# why`` comment lines, then ``module``, ``- old line`` and ``+ new line``."""
    out: set[tuple[str, str, str]] = set()
    lines = [x.rstrip("\n") for x in path.read_text().splitlines()] if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line or line.startswith("#"):
            i += 1
            continue
        old, new = lines[i + 1].strip(), lines[i + 2].strip()
        if not (old.startswith("- ") and new.startswith("+ ")):
            raise SystemExit(f"{path}:{i + 2}: expected '- old' and '+ new' lines after the module {line!r}")
        out.add((line, old[2:].strip(), new[2:].strip()))
        i += 3
    return out


def results() -> dict[str, str]:
    """Every mutant of the last run -> its status (killed, survived, no tests, timeout, ...)."""
    proc = subprocess.run([*MUTMUT, "results", "--all", "true"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr or proc.stdout)
    out = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s+(\S+): (.+)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def module_of(mutant: str) -> str:
    """``compiler.mig.packing.x__search__mutmut_7`` -> ``compiler.mig.packing``."""
    return mutant.split(".x", 1)[0] if ".x" in mutant else mutant.rsplit(".", 1)[0]


def change(mutant: str) -> tuple[str, str, str]:
    """The mutant's diff (for the report) and its removed and added line (for the equivalents)."""
    diff = subprocess.run([*MUTMUT, "show", mutant], cwd=REPO, capture_output=True, text=True).stdout
    old = [x[1:].strip() for x in diff.splitlines() if x.startswith("-") and not x.startswith("---")]
    new = [x[1:].strip() for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")]
    return diff, " / ".join(old), " / ".join(new)


def fresh_if_reconfigured(root: Path = REPO) -> None:
    """mutmut keeps the tests that reach each function (``mutants/mutmut-stats.json``) from its
    last run, and does not look again when ``[tool.mutmut]`` names other modules: their mutants
    would all be "no tests". So the state is dropped when that section changed since."""
    text = (root / "pyproject.toml").read_text()
    start = text.find("[tool.mutmut]")
    section = text[start:text.find("\n[", start + 1)] if start >= 0 else ""
    state, seen = root / "mutants", root / "mutants" / ".tool-mutmut"
    if state.is_dir() and (not seen.exists() or seen.read_text() != section):
        shutil.rmtree(state)
    state.mkdir(exist_ok=True)
    seen.write_text(section)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--summary", action="store_true", help="summarise the last run without running mutmut")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    ns = ap.parse_args()
    if not ns.summary:
        fresh_if_reconfigured()
        # in one process: mutmut learns which tests reach a function by recording calls, and a
        # forked child's calls (the reports, the rules: compiler.cache.forked) would be lost to it.
        # A surviving mutant runs every test that reaches it: the simulator's property tests at
        # 1,000 examples each made that ~80 s per survivor; 100 keep them (a kill that needs more
        # examples than that is luck, not a test)
        env = {**os.environ, "GPUPOLICY_NO_FORK": "1",
               "GPUPOLICY_FUZZ_EXAMPLES": os.environ.get("GPUPOLICY_MUTATE_EXAMPLES", "100")}
        run = subprocess.run([*MUTMUT, "run", "--max-children", str(ns.max_children)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:  # its progress lines end in carriage returns: the end is the news
            print(run.stdout.replace("\r", "\n")[-4000:], file=sys.stderr)
            print(f"mutmut run exited {run.returncode}", file=sys.stderr)
            return 2
    status = results()
    known = equivalents()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    shown: list[str] = []
    for mutant, state in sorted(status.items()):
        module = module_of(mutant)
        if state not in BAD:
            counts[module][state] += 1
            continue
        diff, old, new = change(mutant)
        if state == "survived" and (module, old, new) in known:
            counts[module]["equivalent"] += 1
            continue
        counts[module][state] += 1
        shown.append(f"{state}: {mutant}\n{diff.rstrip()}\n")
    for module, c in sorted(counts.items()):
        total = sum(c.values())
        parts = ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
        print(f"{module}: {total} mutants: {parts}")
    if shown:
        print(f"\n{len(shown)} mutant(s) no test kills and bench/mutants-equivalent.txt does not explain:\n")
        print("\n".join(shown))
        return 1
    print("every mutant is killed or explained")
    return 0


if __name__ == "__main__":
    sys.exit(main())
