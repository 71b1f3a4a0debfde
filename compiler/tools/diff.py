"""``gpupolicy diff --base <git-ref>``: what a change does for whom, and what a sync cannot do.

The policy directory at ``<git-ref>`` is extracted with ``git archive`` into a temporary
directory (the user's work tree and index are never touched), both sides are compiled in memory
with the command's options (as ``check`` compiles), then compared:

- per team and cluster: guaranteed / borrowable / lendable GPUs per class (the one allocation
  model), isolation, priority, department, namespaces, serving deployments;
- the fleet: capacity per cluster and class, pinned versions, priority tiers;
- the rendered manifests: added / removed / modified, each with a short unified YAML diff;
- flags for changes a sync cannot apply in place or that need an order (``compiler.tools.diff_flags``).

Both sides compile through the repository's store (``.gpupolicy-cache/``, unless
``--no-cache``), whose units ``check`` (the pre-commit hook) has mostly filled. A team unit both sides share (same fleet and team bytes) renders the same objects
on both: its files are compared by digest and its objects enter the flags as outlines (identity
and references, ``compiler.cache.records.outline_out``), which is all the flags read of an object
that did not change. Every other unit is lowered, so after a one-team edit the base costs about
one team, not the organisation; a cold store computes everything, with the same report.

Rendering (markdown for a PR comment, json, text) is ``compiler.tools.diff_render``.
"""

from __future__ import annotations

import difflib
import io
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compiler.cache.store import NullStore, Store
from compiler.diagnostics import Diagnostic, UsageError, has_errors
from compiler.load.paths import display_path
from compiler.model.manifest import Manifest
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies, unit_keys
from compiler.policy.graph import Policy
from compiler.policy.priorities import team_priorities
from compiler.tools.diff_flags import Flag, find_flags

DIFF_LINES = 40  # per modified manifest


@dataclass
class Side:
    policy: Policy | None
    manifests: dict[str, Manifest]  # out-relative path -> manifest (an outline for a shared unit's)
    digests: dict[str, str]  # out-relative path -> digest of every rendered object's file
    files: Mapping[str, bytes]  # the same paths -> bytes, read when asked for
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    """One (team, cluster, class) budget: guaranteed, borrowable (None = unlimited), lendable."""

    guaranteed: int
    borrowable: int | None
    lendable: int


@dataclass
class TeamDelta:
    team: str
    status: str = "changed"  # added | removed | changed
    budgets: list[tuple[str, str, Row | None, Row | None]] = field(default_factory=list)  # cluster, class, old, new
    attributes: list[tuple[str, Any, Any]] = field(default_factory=list)  # what, old, new
    serving: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # deployment, field, old, new


@dataclass
class DiffReport:
    base: str
    base_note: str | None
    teams: list[TeamDelta]
    fleet: list[tuple[str, Any, Any]]
    added: list[str]
    removed: list[str]
    modified: list[tuple[str, str]]  # path, unified diff
    flags: list[Flag]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=120)


def extract_base(root: Path, policy_dir: Path, ref: str, dest: Path) -> tuple[Path, Path, bool]:
    """Extract ``policy_dir`` as of ``ref`` under ``dest``; returns (root, policy dir, existed)."""
    top_p = _git(root, "rev-parse", "--show-toplevel")
    if top_p.returncode != 0:
        raise UsageError(f"{root} is not inside a git repository: {top_p.stderr.decode().strip()}")
    top = Path(top_p.stdout.decode().strip()).resolve()
    commit_p = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit_p.returncode != 0:
        raise UsageError(f"unknown git revision {ref!r}")
    commit = commit_p.stdout.decode().strip()
    try:
        rel_policy = policy_dir.resolve().relative_to(top).as_posix()
        rel_root = root.resolve().relative_to(top).as_posix()
    except ValueError as exc:
        raise UsageError(f"{policy_dir} is not inside the git repository {top}") from exc
    base_root = dest / rel_root if rel_root != "." else dest
    base_policy = dest / rel_policy
    if _git(top, "cat-file", "-e", f"{commit}:{rel_policy}").returncode != 0:
        return base_root, base_policy, False
    archive = _git(top, "archive", "--format=tar", commit, "--", rel_policy)
    if archive.returncode != 0:
        raise UsageError(f"git archive failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return base_root, base_policy, True


def side_options(opts: Options, root: Path, policy_dir: Path) -> Options:
    """The command's options for a tree at ``root``: the same keys as ``check`` there, so the
    units it stored serve both sides."""
    out = Path(display_path(opts.out_dir, opts.root))
    return replace(opts, root=root, policy_dir=policy_dir, out_dir=root / out)


def compile_side(opts: Options, store: Store | None = None, shared: frozenset[str] = frozenset()) -> Side:
    """One side, its units in ``shared`` as outlines (``compiler.pipeline.run.compile_policies``)."""
    res = compile_policies(opts, store, shared=shared, reports=False)
    if res.policy is None or res.failed or has_errors(res.diagnostics):  # failed: also --strict warnings
        return Side(None, {}, {}, {}, res.diagnostics)
    objects = {m.relpath: m for m in res.manifests}  # in a cold store, shared units' too: outlines replace them
    files = dict.fromkeys(objects)
    for key in shared:
        unit = res.units.get(key, {})  # {}: a shared file that is no team unit (a run would have failed)
        files.update(unit)
        for path in unit:
            objects.pop(path, None)
        objects.update(res.outlines.get(key, {}))
    digests = {p: res.out_digests[p] for p in sorted(files)}
    return Side(res.policy, objects, digests, res.out_files, res.diagnostics)


def _rows(policy: Policy | None) -> dict[tuple[str, str, str], Row]:
    if policy is None:
        return {}
    return {(e.team, e.cluster, e.gpu_class): Row(e.guaranteed.value or 0, e.borrow.value, e.lendable)
            for e in policy.allocation.entries}


def _team_attrs(policy: Policy | None, team: str) -> dict[str, Any]:
    t = policy.team(team) if policy else None
    if t is None:
        return {}
    s = t.model.spec
    return {
        "isolation": s.isolation, "priority": s.priority, "department": s.department,
        "allowedPriorities": list(team_priorities(policy, t).allowed) if policy else [],
        "fairShareWeight": s.fair_share_weight, "dataClasses": sorted(s.data_classes),
        "namespaces": {ns.name: sorted(ns.clusters) for ns in s.namespaces},
    }


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _serving(policy: Policy | None, team: str) -> dict[str, dict[str, Any]]:
    t = policy.team(team) if policy else None
    if t is None:
        return {}
    return {s.name: _flatten(s.model_dump(by_alias=True, mode="json")) for s in t.model.spec.serving}


def team_deltas(base: Policy | None, head: Policy | None) -> list[TeamDelta]:
    old_rows, new_rows = _rows(base), _rows(head)
    old_teams = {t.name for t in base.teams} if base else set()
    new_teams = {t.name for t in head.teams} if head else set()
    by_team: dict[str, set[tuple[str, str, str]]] = {}
    for k in old_rows.keys() | new_rows.keys():
        by_team.setdefault(k[0], set()).add(k)
    out = []
    for team in sorted(old_teams | new_teams):
        d = TeamDelta(team, "added" if team not in old_teams else "removed" if team not in new_teams else "changed")
        keys = sorted(by_team.get(team, ()))
        for k in keys:
            o, n = old_rows.get(k), new_rows.get(k)
            if o != n:
                d.budgets.append((k[1], k[2], o, n))
        oa, na = _team_attrs(base, team), _team_attrs(head, team)
        for what in sorted(set(oa) | set(na)):
            if oa.get(what) != na.get(what) and d.status == "changed":
                d.attributes.append((what, oa.get(what), na.get(what)))
        os_, ns_ = _serving(base, team), _serving(head, team)
        for name in sorted(set(os_) | set(ns_)):
            if name not in os_:
                d.serving.append((name, "added", None, ns_[name].get("model")))
            elif name not in ns_:
                d.serving.append((name, "removed", os_[name].get("model"), None))
            else:
                for f in sorted(set(os_[name]) | set(ns_[name])):
                    if os_[name].get(f) != ns_[name].get(f):
                        d.serving.append((name, f, os_[name].get(f), ns_[name].get(f)))
        if d.status != "changed" or d.budgets or d.attributes or d.serving:
            out.append(d)
    return out


def _fleet_leaves(value: Any, prefix: str) -> dict[str, Any]:
    """The fleet spec's leaves by path; list items that have a ``name`` keyed by it
    (``departments[research].defaults.borrow``), so a reorder is no change and an edit names its item."""
    if isinstance(value, dict) and value:  # an empty one stays a leaf: an item added bare still shows
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_fleet_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        out = {}
        for v in value:
            out.update(_fleet_leaves({k: x for k, x in v.items() if k != "name"}, f"{prefix}[{v['name']}]"))
        return out
    return {prefix: value}


def _fleet_facts(policy: Policy | None) -> dict[str, Any]:
    """Every leaf of the fleet file, plus the capacity it yields per cluster and class. Counting
    only chosen facts (capacity, versions, tiers, weights) reported a change of
    ``defaults.budget`` as "0 fleet change(s)" while it re-rendered every queue."""
    if policy is None:
        return {}
    facts: dict[str, Any] = {}
    for cname, by_id in policy.classes.items():
        for cid, cls in by_id.items():
            facts[f"capacity {cname}/{cid}"] = cls.capacity
    facts.update(_fleet_leaves(policy.fleet.spec.model_dump(by_alias=True, mode="json", exclude_none=True), ""))
    return facts


def fleet_deltas(base: Policy | None, head: Policy | None) -> list[tuple[str, Any, Any]]:
    o, n = _fleet_facts(base), _fleet_facts(head)
    return [(k, o.get(k), n.get(k)) for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]


def unified(path: str, old: bytes, new: bytes, limit: int = DIFF_LINES) -> str:
    lines = list(difflib.unified_diff(old.decode().splitlines(), new.decode().splitlines(),
                                      f"a/{path}", f"b/{path}", n=2, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


def build_report(ref: str, base: Side, head: Side, base_note: str | None, out_prefix: str) -> DiffReport:
    old, new = base.digests, head.digests
    added = [out_prefix + p for p in sorted(set(new) - set(old))]
    removed = [out_prefix + p for p in sorted(set(old) - set(new))]
    modified = [(out_prefix + p, unified(out_prefix + p, base.files[p], head.files[p]))
                for p in sorted(set(old) & set(new)) if old[p] != new[p]]
    return DiffReport(
        base=ref, base_note=base_note, teams=team_deltas(base.policy, head.policy),
        fleet=fleet_deltas(base.policy, head.policy), added=added, removed=removed, modified=modified,
        flags=find_flags(base.manifests, head.manifests),
    )


def run_diff(opts: Options, ref: str) -> tuple[DiffReport | None, list[Diagnostic]]:
    """Compile base and head; None when the working tree does not compile."""
    store = Store(opts.root) if opts.cache else NullStore()
    note = None
    with tempfile.TemporaryDirectory(prefix="gpupolicy-diff-") as tmp:
        # the base is extracted first: the units both sides share are known before either compiles
        try:
            base_root, base_policy, existed = extract_base(opts.root, opts.policy_dir, ref, Path(tmp))
        except UsageError:
            head = compile_side(opts, store)
            if head.policy is None:  # a working tree that does not compile is said first
                return None, head.diagnostics
            raise
        base_opts = side_options(opts, base_root, base_policy)
        shared = unit_keys(opts) & unit_keys(base_opts) if existed else frozenset()
        head = compile_side(opts, store, shared)
        if head.policy is None:
            return None, head.diagnostics
        if existed:
            base = compile_side(base_opts, store, shared)
            if base.policy is None:
                note = f"the policies at {ref} do not compile; every object is shown as added"
        else:
            base = Side(None, {}, {}, {})
            note = f"no policy directory at {ref}; every object is shown as added"
    try:
        prefix = opts.out_dir.resolve().relative_to(opts.root.resolve()).as_posix() + "/"
    except ValueError:
        prefix = "out/"
    return build_report(ref, base, head, note, prefix), head.diagnostics
