"""Trace readers: a generic CSV, the Philly trace, exported Kueue Workloads.

**Generic CSV** (header row required, any column order, ``#`` lines ignored):

| column | meaning |
|---|---|
| ``submit`` | submit time: seconds (float) or an ISO date-time |
| ``duration`` | run time in seconds once admitted (> 0) |
| ``gpus`` | GPUs (units of the class) the job requests (> 0) |
| ``team`` | the team (= its ClusterQueue); or a trace name mapped by the mapping file |
| ``class`` | GPU class ID (= ResourceFlavor name); empty = the mapping's or the team's first class |
| ``priority`` | WorkloadPriorityClass name or an integer; empty = the mapping's ``priority``, else the team's default tier (its Namespace's ``gpupolicy.dev/priority``, see ``objects``), else 0; a tier the job's namespace may not use (its ``priority.gpupolicy.dev/<tier>`` labels) is an error: admission would refuse the job |
| ``namespace`` | optional: the job's namespace; its LocalQueue decides the ClusterQueue |
| ``name`` | optional job name (default ``job-<line>``) |

**Philly** (``philly.csv`` of the Pollux artifact: ``timestamp,duration,num_gpus,gpu_time,cluster``):
the virtual cluster (``cluster``) is the team. Mapping file ``teams:`` maps VC hashes to teams;
VCs it does not name are dealt by the automatic rule: VCs ranked by total GPU time (descending),
then assigned round-robin to the ClusterQueues ranked by guaranteed GPUs (descending, then name).

**Workloads JSON** (``kubectl get workloads.kueue.x-k8s.io -A -o json``): each Workload's
``spec.queueName`` in its namespace names the LocalQueue; requests are the pod sets' container
requests × count; priority is ``spec.priority``; submit is ``metadata.creationTimestamp``; the
duration is from the ``QuotaReserved`` (or ``Admitted``) condition to ``Finished``. Workloads
that never finished are skipped and counted.

**Mapping file** (YAML, all keys optional)::

    teams: {11cb48: nlp, 6214e9: vision}   # trace team -> gpupolicy team (ClusterQueue)
    class: h100-80gb                       # GPU class of rows without one
    classes: {nlp: h100-80gb}              # per-team class
    priority: standard                     # priority of rows without one

A GPU class names a ResourceFlavor; the job requests the resource that flavor covers in the
team's ClusterQueue and selects the flavor's node labels.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import yaml

from compiler.tools.simulate.objects import SCALE, KueueSetup
from compiler.tools.simulate.replay import Job

MAX_ERRORS = 20


class TraceError(Exception):
    """Located problems of a trace or mapping file (each ``file:line: message``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Mapping:
    teams: dict[str, str] = field(default_factory=dict)
    default_class: str = ""
    classes: dict[str, str] = field(default_factory=dict)
    priority: str = ""

    @classmethod
    def load(cls, path: Path | None) -> Mapping:
        if path is None:
            return cls()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise TraceError([f"{path}: cannot read mapping: {exc}"]) from exc
        if not isinstance(data, dict) or set(data) - {"teams", "class", "classes", "priority"}:
            raise TraceError([f"{path}:1: mapping must be a map with keys teams, class, classes, priority"])
        return cls({str(k): str(v) for k, v in (data.get("teams") or {}).items()}, str(data.get("class") or ""),
                   {str(k): str(v) for k, v in (data.get("classes") or {}).items()}, str(data.get("priority") or ""))


class _Builder:
    """Turns (team, class, priority, gpus) into Jobs against one cluster's objects."""

    def __init__(self, setup: KueueSetup, mapping: Mapping) -> None:
        self.setup, self.mapping = setup, mapping
        self.problems: list[str] = []

    def fail(self, where: str, msg: str) -> None:
        if len(self.problems) < MAX_ERRORS:
            self.problems.append(f"{where}: {msg}")

    def priority(self, where: str, text: str, cq: str, namespace: str = "") -> tuple[int, str]:
        text = text.strip() or self.mapping.priority or self.setup.default_tier(cq, namespace)
        if not text:
            return 0, ""
        if text in self.setup.priorities:
            ns = self.setup.job_namespace(cq, namespace)
            allowed = self.setup.allowed_tiers.get(ns)
            if allowed is not None and text not in allowed:
                self.fail(where, f"priority tier {text!r} is not one namespace {ns!r} may use (allowed: "
                                 f"{', '.join(sorted(allowed))}): the gpupolicy-priority admission policy refuses "
                                 "the job; give the row an allowed tier, or map it in the mapping file's priority:")
            return self.setup.priorities[text], text
        try:
            return int(text), text
        except ValueError:
            self.fail(where, f"unknown priority {text!r} (WorkloadPriorityClasses: "
                             f"{', '.join(sorted(self.setup.priorities)) or 'none'})")
            return 0, text

    def job(self, where: str, name: str, team: str, cls: str, submit: float, duration: float, gpus: float,
            prio: str, namespace: str = "") -> Job | None:
        cq = self.mapping.teams.get(team, team)
        if namespace:
            by_ns = [q for (ns, _), q in sorted(self.setup.local_queues.items()) if ns == namespace]
            if not by_ns:
                self.fail(where, f"namespace {namespace!r} has no LocalQueue on cluster {self.setup.cluster}")
                return None
            cq = self.setup.local_queues.get((namespace, cq), by_ns[0])
        if cq not in self.setup.queues:
            self.fail(where, f"unknown team {team!r} on cluster {self.setup.cluster} (ClusterQueues: "
                             f"{', '.join(sorted(self.setup.queues))}); map it in the mapping file's teams:")
            return None
        if duration <= 0:
            self.fail(where, f"duration must be > 0, got {duration:g}")
            return None
        if gpus <= 0:
            self.fail(where, f"GPUs must be > 0, got {gpus:g}")
            return None
        spec = self.setup.queues[cq]
        cls = cls or self.mapping.classes.get(cq, "") or self.mapping.default_class
        flavors = [f for g in spec.groups for f in g.flavors]
        if not cls:
            cls = flavors[0] if flavors else ""
        resources = self.setup.resource_of_flavor(cq, cls)
        if not resources:
            if cls not in self.setup.flavors:
                self.fail(where, f"unknown GPU class {cls!r} on cluster {self.setup.cluster} "
                                 f"(classes: {', '.join(sorted(self.setup.flavors))})")
                return None
            # a class the team has no quota for: it requests the class's resource anyway (never fits)
            resources = [r for q in self.setup.queues.values() for r in self.setup.resource_of_flavor(q.name, cls)][:1]
            if not resources:
                self.fail(where, f"GPU class {cls!r} is in no ClusterQueue on cluster {self.setup.cluster}")
                return None
        value, pname = self.priority(where, prio, cq, namespace)
        return Job(name, cq, cq, submit, duration, {resources[0]: int(round(gpus * SCALE))}, value, pname,
                   dict(self.setup.flavors.get(cls, {})), where, gpus)

    def done(self, jobs: list[Job]) -> list[Job]:
        if self.problems:
            raise TraceError(self.problems)
        if not jobs:
            raise TraceError(["trace has no jobs"])
        return jobs


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            lines = (ln for ln in fh)
            reader = csv.DictReader(lines)
            for row in reader:
                if any(v and v.lstrip().startswith("#") for v in list(row.values())[:1]):
                    continue
                yield reader.line_num, {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
    except UnicodeDecodeError as exc:
        raise TraceError([f"{path}: not UTF-8 text ({exc.reason})"]) from exc
    except csv.Error as exc:
        raise TraceError([f"{path}: CSV error: {exc}"]) from exc


def _header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return [c.strip() for c in next(csv.reader(fh), [])]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise TraceError([f"{path}:1: cannot read header: {exc}"]) from exc


def read_generic(path: Path, setup: KueueSetup, mapping: Mapping) -> list[Job]:
    header = _header(path)
    missing = [c for c in ("submit", "duration", "gpus", "team") if c not in header]
    if missing:
        raise TraceError([f"{path}:1: missing column(s) {', '.join(missing)} (have: {', '.join(header)})"])
    b = _Builder(setup, mapping)
    jobs: list[Job] = []
    for line, row in _rows(path):
        where = f"{path}:{line}"
        try:
            submit, duration, gpus = _time(row["submit"]), float(row["duration"]), float(row["gpus"])
        except (ValueError, TypeError) as exc:
            b.fail(where, f"bad number or time: {exc}")
            continue
        j = b.job(where, row.get("name") or f"job-{line}", row["team"], row.get("class", ""), submit, duration,
                  gpus, row.get("priority", ""), row.get("namespace", ""))
        if j is not None:
            jobs.append(j)
    return b.done(jobs)


def philly_rule(totals: dict[str, float], setup: KueueSetup) -> dict[str, str]:
    """The automatic VC -> team rule (see the module docstring)."""
    def guaranteed(q: str) -> int:
        return sum(v.nominal for v in setup.queues[q].quotas.values())

    teams = sorted(setup.queues, key=lambda q: (-guaranteed(q), q))
    vcs = sorted(totals, key=lambda v: (-totals[v], v))
    return {vc: teams[i % len(teams)] for i, vc in enumerate(vcs)}


def read_philly(path: Path, setup: KueueSetup, mapping: Mapping) -> list[Job]:
    header = _header(path)
    missing = [c for c in ("timestamp", "duration", "num_gpus", "cluster") if c not in header]
    if missing:
        raise TraceError([f"{path}:1: missing Philly column(s) {', '.join(missing)}"])
    raw: list[tuple[str, str, float, float, float]] = []
    b = _Builder(setup, mapping)
    for line, row in _rows(path):
        where = f"{path}:{line}"
        try:
            raw.append((where, row["cluster"], _time(row["timestamp"]), float(row["duration"]),
                        float(row["num_gpus"])))
        except (ValueError, TypeError) as exc:
            b.fail(where, f"bad number or time: {exc}")
    totals: dict[str, float] = {}
    for _, vc, _, d, g in raw:
        totals[vc] = totals.get(vc, 0.0) + d * g
    auto = philly_rule({v: t for v, t in totals.items() if v not in mapping.teams}, setup)
    b.mapping = Mapping({**auto, **mapping.teams}, mapping.default_class, mapping.classes, mapping.priority)
    jobs = [j for i, (where, vc, t, d, g) in enumerate(raw)
            if (j := b.job(where, f"philly-{i + 1}", vc, "", t, d, g, "")) is not None]
    return b.done(jobs)


def _requests(ps: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    count = int(ps.get("count", 1))
    for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            try:
                out[k] = out.get(k, 0.0) + float(str(v)) * count
            except ValueError:
                continue
    return out


def _cond(wl: dict[str, Any], kind: str) -> float | None:
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True" and c.get("lastTransitionTime"):
            return _time(str(c["lastTransitionTime"]))
    return None


def read_workloads(path: Path, setup: KueueSetup, mapping: Mapping) -> tuple[list[Job], int]:
    """Jobs from exported Workloads, and how many were skipped (never finished)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError([f"{path}:{getattr(exc, 'lineno', 1)}: not a JSON Workload list: {exc}"]) from exc
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise TraceError([f"{path}:1: expected a List with items (kubectl get workloads -A -o json)"])
    b = _Builder(setup, mapping)
    jobs: list[Job] = []
    skipped = 0
    for i, wl in enumerate(items):
        where = f"{path}: items[{i}]"
        meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        start, end = _cond(wl, "QuotaReserved") or _cond(wl, "Admitted"), _cond(wl, "Finished")
        if start is None or end is None or "creationTimestamp" not in meta:
            skipped += 1
            continue
        reqs: dict[str, float] = {}
        for ps in spec.get("podSets") or []:
            for k, v in _requests(ps).items():
                reqs[k] = reqs.get(k, 0.0) + v
        ns, queue = str(meta.get("namespace", "")), str(spec.get("queueName", ""))
        cq = setup.local_queues.get((ns, queue), queue)
        groups = setup.queues[cq].groups if cq in setup.queues else ()
        gpu = [(r, v) for r, v in reqs.items() if any(r in g.covered for g in groups)]
        cls = next((f for g in groups if gpu and gpu[0][0] in g.covered for f in g.flavors), "")
        prio = str(spec.get("priority", "")) if spec.get("priority") is not None else \
            str((spec.get("priorityClassRef") or {}).get("name", ""))
        j = b.job(where, f"{ns}/{meta.get('name', i)}", cq, cls, _time(str(meta["creationTimestamp"])),
                  max(end - start, 1.0), gpu[0][1] if gpu else 0.0, prio)
        if j is not None:
            jobs.append(j)
    return b.done(jobs), skipped


def compress(jobs: list[Job], load: float) -> list[Job]:
    """``--load X``: arrivals X times as dense (submit offsets from the first divided by X)."""
    if load == 1.0 or not jobs:
        return jobs
    t0 = min(j.submit for j in jobs)
    for j in jobs:
        j.submit = t0 + (j.submit - t0) / load
    return jobs


def read_trace(path: Path, setup: KueueSetup, mapping: Mapping) -> tuple[list[Job], str, int]:
    """(jobs, format name, skipped) for any supported trace, told apart by content."""
    if not path.is_file():
        raise TraceError([f"{path}: no such trace file"])
    if path.suffix == ".json":
        jobs, skipped = read_workloads(path, setup, mapping)
        return jobs, "workloads", skipped
    header = _header(path)
    if "num_gpus" in header and "cluster" in header:
        return read_philly(path, setup, mapping), "philly", 0
    return read_generic(path, setup, mapping), "csv", 0
