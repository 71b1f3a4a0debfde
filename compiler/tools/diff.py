"""``gpupolicy diff --base <git-ref>``: what a change does for whom, and what a sync cannot do.

The policy directory at ``<git-ref>`` is written from git's objects into a temporary directory
(the user's work tree and index are never touched), both sides are compiled with the command's
options (as ``check`` compiles), then compared:

- per team and cluster: guaranteed / borrowable / lendable GPUs per class (the one allocation
  model), isolation, priority, department, namespaces, serving deployments;
- the fleet: capacity per cluster and class, pinned versions, priority tiers;
- the rendered manifests: added / removed / modified, each with a short unified YAML diff;
- flags for changes a sync cannot apply in place or that need an order (``compiler.tools.diff_flags``).

What a change costs is its own size, not the organisation's (issue 21):

- Both sides compile through the repository's store (``.gpupolicy-cache/``, unless
  ``--no-cache``), whose units ``check`` (the pre-commit hook) has mostly filled. A team unit
  both sides share (same fleet and team bytes: ``compiler.pipeline.run.unit_keys``) renders the
  same files and objects on both, so it is left out of the comparison: its objects enter the
  flags once, as outlines (identity and references, ``compiler.cache.records.outline_out``, all
  the flags read of an object that did not change), and its team's budgets, attributes and
  serving are not compared (they read the fleet and that team's file only:
  ``compiler.policy.allocation.build_allocation``). Every other unit is lowered.
- A base that differs in a few units (``SMALL_BASE``) compiles in a forked child while this
  process compiles the work tree (``compiler.cache.forked``; without fork, one after the other)
  and sends back only what the report reads of it (``Side.plain``), which the store keeps
  (``base_key``): the next diff against the same commit compiles the work tree alone. Any other
  base compiles here, after the work tree.
- A cold store computes everything, with the same report (tests/test_incremental.py,
  tests/test_diff_scale.py).

Rendering (markdown for a PR comment, json, text) is ``compiler.tools.diff_render``.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.cache.forked import in_child
from compiler.cache.store import NullStore, Store, digest
from compiler.diagnostics import Diagnostic, UsageError, has_errors
from compiler.model.manifest import Manifest
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies, unit_keys
from compiler.pipeline.waivers import today
from compiler.policy.graph import Policy
from compiler.policy.priorities import team_priorities
from compiler.tools.diff_base import scratch_dir, side_options, write_base
from compiler.tools.diff_flags import Flag, Index, find_flags, index
from compiler.tools.diff_fleet import fleet_changes, fleet_facts

DIFF_LINES = 40  # per modified manifest
# Team units of the base the work tree does not share, at most, for the base to compile in a
# second process. Its summary grows with them: a whole 1,000-team base (a fleet edit: 82,000
# objects, 94 MiB of marshal data) cost ~3 s of CPU to send and rebuild, more than the overlap
# saved; such a base compiles here, after the work tree.
SMALL_BASE = 64


@dataclass(frozen=True)
class Row:
    """One (team, cluster, class) budget: guaranteed, borrowable (None = unlimited), lendable."""

    guaranteed: int
    borrowable: int | None
    lendable: int


Budgets = dict[tuple[str, str], Row]  # (cluster, class) -> row
TeamFacts = tuple[Budgets, dict[str, Any], dict[str, dict[str, Any]]]  # budgets, attributes, serving


@dataclass
class Facts:
    """What the team and fleet deltas read of one side: every team's name, the budgets,
    attributes and serving deployments of the teams compared, and the fleet's leaves."""

    teams: frozenset[str]
    detail: dict[str, TeamFacts]
    fleet: dict[str, Any]

    def plain(self) -> tuple[Any, ...]:
        detail = {t: ({k: (r.guaranteed, r.borrowable, r.lendable) for k, r in rows.items()}, attrs, serving)
                  for t, (rows, attrs, serving) in self.detail.items()}
        return sorted(self.teams), detail, self.fleet

    @classmethod
    def of(cls, value: Any) -> Facts:
        teams, detail, fleet = value
        return cls(frozenset(teams), {t: ({k: Row(*r) for k, r in rows.items()}, attrs, serving)
                                      for t, (rows, attrs, serving) in detail.items()}, fleet)


@dataclass
class Side:
    """One side of the comparison. ``objects``, ``digests`` and ``files`` hold what this side
    alone may render differently: the fleet- and output-scope objects and the team units the
    other side does not share. The shared units' (the same on both sides) are ``common``
    (outlines) and ``common_digests``."""

    ok: bool  # it compiled
    objects: dict[str, Manifest] = field(default_factory=dict)  # out-relative path -> manifest
    digests: dict[str, str] = field(default_factory=dict)  # the same scope's files -> digest
    files: Mapping[str, bytes] = field(default_factory=dict)  # the same paths -> bytes, read when asked for
    changed: frozenset[str] | None = None  # the teams whose unit is not shared; None: every team
    policy: Policy | None = None
    facts: Facts | None = None  # computed from the policy when first needed (``facts_of``)
    common: dict[str, Manifest] = field(default_factory=dict)
    common_index: Index | None = None  # ``index(common)``, when computed ahead
    common_digests: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def plain(self) -> tuple[Any, ...]:
        """What the report reads of a side, as ``marshal``-able data (the base side's child
        sends it): objects, digests and bytes of the files, facts. The shared part stays out:
        the work tree's side has it too."""
        facts = facts_of(self, self.changed)
        return (self.ok, [(m.cluster, m.component, m.obj, m.sources) for m in self.objects.values()], self.digests,
                {p: self.files[p] for p in self.digests}, None if facts is None else facts.plain())

    @classmethod
    def of(cls, value: Any) -> Side:
        ok, objects, digests, files, facts = value
        manifests = [Manifest(c, comp, obj, tuple(src)) for c, comp, obj, src in objects]
        return cls(ok, {m.relpath: m for m in manifests}, digests, files,
                   facts=None if facts is None else Facts.of(facts))


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


def compile_side(opts: Options, store: Store | None = None, shared: frozenset[str] = frozenset(),
                 shared_paths: frozenset[str] = frozenset(), outlines: bool = True) -> Side:
    """One side, the units in ``shared`` (keys; ``shared_paths``, their team files) set apart, with
    their outlines unless ``outlines=False`` (``compiler.pipeline.run.compile_policies``)."""
    res = compile_policies(opts, store, shared=shared, reports=False, outlines=outlines)
    if res.policy is None or res.failed or has_errors(res.diagnostics):  # failed: also --strict warnings
        return Side(False, diagnostics=res.diagnostics)
    common: dict[str, Manifest] = {}
    common_digests: dict[str, str] = {}
    for key in sorted(shared):
        common_digests.update(res.units.get(key, {}))  # {}: a shared file that is no team unit
        common.update(res.outlines.get(key, {}))
    # in a cold store the shared units were lowered too: their objects are left out like the rest
    objects = {m.relpath: m for m in res.manifests if m.relpath not in common_digests}
    digests = {p: d for p, d in res.out_digests.items() if p not in common_digests}
    changed = frozenset(t.name for t in res.policy.teams if t.path not in shared_paths) if shared_paths else None
    return Side(True, objects, digests, res.out_files, changed, res.policy, common=common,
                common_digests=common_digests, diagnostics=res.diagnostics)


def base_side(opts: Options, store: Store, shared: frozenset[str], shared_paths: frozenset[str]) -> tuple[Any, ...]:
    """The base side as the report reads it (``Side.plain``), run in a child process; the shared
    units' outlines are the work tree's side's to read."""
    return compile_side(opts, store, shared, shared_paths, outlines=False).plain()


def _budgets(policy: Policy, teams: list[str]) -> dict[str, Budgets]:
    out: dict[str, Budgets] = {t: {} for t in teams}
    for team in teams:
        for e in policy.allocation.for_team(team):
            out[team][(e.cluster, e.gpu_class)] = Row(e.guaranteed.value or 0, e.borrow.value, e.lendable)
    return out


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


def side_facts(policy: Policy, only: frozenset[str] | None = None) -> Facts:
    """The facts of ``policy``, the per-team ones for the teams in ``only`` (None: every team).
    A team's budgets, attributes and serving read the fleet and its own file only, so a team
    whose unit both sides share has the same facts on both."""
    teams = [t.name for t in policy.teams if only is None or t.name in only]
    budgets = _budgets(policy, teams)
    detail = {t: (budgets[t], _team_attrs(policy, t), _serving(policy, t)) for t in teams}
    return Facts(frozenset(t.name for t in policy.teams), detail, fleet_facts(policy))


def facts_of(side: Side, only: frozenset[str] | None) -> Facts | None:
    if side.facts is None and side.ok and side.policy is not None:
        side.facts = side_facts(side.policy, only)
    return side.facts


def deltas(base: Facts | None, head: Facts | None) -> list[TeamDelta]:
    """The teams whose budgets, attributes or serving differ, or that were added or removed."""
    old_teams = base.teams if base else frozenset()
    new_teams = head.teams if head else frozenset()
    old = base.detail if base else {}
    new = head.detail if head else {}
    none: TeamFacts = ({}, {}, {})
    out = []
    for team in sorted(old.keys() | new.keys()):
        d = TeamDelta(team, "added" if team not in old_teams else "removed" if team not in new_teams else "changed")
        (o_rows, oa, os_), (n_rows, na, ns_) = old.get(team, none), new.get(team, none)
        for k in sorted(o_rows.keys() | n_rows.keys()):
            o, n = o_rows.get(k), n_rows.get(k)
            if o != n:
                d.budgets.append((k[0], k[1], o, n))
        for what in sorted(set(oa) | set(na)):
            if oa.get(what) != na.get(what) and d.status == "changed":
                d.attributes.append((what, oa.get(what), na.get(what)))
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


def team_deltas(base: Policy | None, head: Policy | None) -> list[TeamDelta]:
    """Every team of two policies compared."""
    return deltas(side_facts(base) if base else None, side_facts(head) if head else None)


def unified(path: str, old: bytes, new: bytes, limit: int = DIFF_LINES) -> str:
    lines = list(difflib.unified_diff(old.decode().splitlines(), new.decode().splitlines(),
                                      f"a/{path}", f"b/{path}", n=2, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


def build_report(ref: str, base: Side, head: Side, base_note: str | None, out_prefix: str) -> DiffReport:
    """The report. With a base that compiled, the parts both sides share are left out (they are
    equal); without one, everything the work tree renders is new."""
    if base.ok:
        old, new = base.digests, head.digests
        flags = find_flags(base.objects, head.objects, head.common_index or head.common)
    else:
        old, new = {}, {**head.common_digests, **head.digests}
        flags = find_flags({}, {**head.common, **head.objects})
    added = [out_prefix + p for p in sorted(new.keys() - old.keys())]
    removed = [out_prefix + p for p in sorted(old.keys() - new.keys())]
    modified = [(out_prefix + p, unified(out_prefix + p, base.files[p], head.files[p]))
                for p in sorted(old.keys() & new.keys()) if old[p] != new[p]]
    old_facts = facts_of(base, base.changed) if base.ok else None
    new_facts = facts_of(head, head.changed) if base.ok else side_facts(head.policy) if head.policy else None
    return DiffReport(
        base=ref, base_note=base_note, teams=deltas(old_facts, new_facts),
        fleet=fleet_changes(old_facts.fleet if old_facts else {}, new_facts.fleet if new_facts else {}),
        added=added, removed=removed, modified=modified, flags=flags,
    )


def base_key(tree: str, base_units: Mapping[str, str], shared: frozenset[str]) -> str | None:
    """The key of a base side's summary (``Side.plain``): the tree written (``write_base``), the
    compiler, CRDs and options (in every unit key), the units left out (``shared``) and today's
    date (waiver expiry, ``compiler.pipeline.waivers``). None without unit keys (no single
    fleet file): such a base is compiled every time."""
    if not base_units:
        return None
    return digest("diff-base", tree, today().isoformat(), *sorted(base_units), "shared", *sorted(shared))


def run_diff(opts: Options, ref: str) -> tuple[DiffReport | None, list[Diagnostic]]:
    """Compile base and head; None when the working tree does not compile.

    A small base side is kept in the store (kind ``diffbase``) by everything it was computed
    from (``base_key``): a second diff against the same commit, the work tree's changes in the
    same team files, compiles the work tree only."""
    store = Store(opts.root) if opts.cache else NullStore()
    note = None
    with tempfile.TemporaryDirectory(prefix="gpupolicy-diff-", dir=scratch_dir()) as tmp:
        # the base is written first: the units both sides share are known before either compiles
        try:
            base_root, base_policy, tree = write_base(opts.root, opts.policy_dir, ref, Path(tmp))
        except UsageError:
            head = compile_side(opts, store)
            if not head.ok:  # a working tree that does not compile is said first
                return None, head.diagnostics
            raise
        base_opts = side_options(opts, base_root, base_policy)
        head_units = unit_keys(opts)
        base_units = unit_keys(base_opts) if tree is not None else {}
        shared = frozenset(head_units.keys() & base_units.keys())
        shared_paths = frozenset(head_units[k] for k in shared)
        # a base that differs in a few units: computed in a second process and kept in the store
        small = tree is not None and len(base_units) - len(shared) <= SMALL_BASE
        key = base_key(tree, base_units, shared) if small and tree is not None else None
        stored = None if key is None else store.get("diffbase", key)
        pending = None
        if small and stored is None:
            # the base there, the work tree here; both write what they compute to the store.
            # The stages are imported first, once for both (~0.2 s of modules).
            import compiler.pipeline.stages  # noqa: F401

            pending = in_child(base_side, base_opts, store, shared, shared_paths)
        head = compile_side(opts, store, shared, shared_paths)
        if head.ok:  # what the report reads of the work tree alone, while the base may still compile
            facts_of(head, head.changed)
            head.common_index = index(head.common)
        base = Side(False)
        if pending is not None or stored is not None:
            plain = pending() if pending is not None else stored  # the child is reaped either way
            if key is not None and stored is None:
                store.put("diffbase", key, plain, compress=True)
                store.prune(("diffbase",))
            base = Side.of(plain)
        if not head.ok:
            return None, head.diagnostics
        if tree is not None and not small:
            base = compile_side(base_opts, store, shared, shared_paths, outlines=False)
        if tree is None:
            note = f"no policy directory at {ref}; every object is shown as added"
        elif not base.ok:
            note = f"the policies at {ref} do not compile; every object is shown as added"
    try:
        prefix = opts.out_dir.resolve().relative_to(opts.root.resolve()).as_posix() + "/"
    except ValueError:
        prefix = "out/"
    return build_report(ref, base, head, note, prefix), head.diagnostics
