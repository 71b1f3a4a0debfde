"""Incremental ``check`` and ``build``: recompile and re-verify only what a change touches.

The unit of reuse follows ``compiler.lower``: a *team unit* is everything the team passes
produce for one team on every cluster, plus its verification. Team passes read the fleet and
that one team file and nothing of other teams (lower_serving and the DRA/RBAC helpers were
made per-team for this), so a unit is keyed by exactly those bytes, the compiler's
fingerprint, the CRD directory's contents and the options (``compiler.cache.store``). Everything
that reads the whole policy is recomputed every time from the cached pieces: schema and
semantic validation (capacity, borrowing, departments: cross-team by nature), the cluster
passes (cohorts depend on which departments have teams), ArgoCD objects, GITOPS006,
REPORT.md, allocation.json, CODEOWNERS and the bootstrap report.

Those global passes never see a cached unit's objects: each unit stores its
``compiler.inventory.Inventory`` (the few facts ArgoCD, GITOPS006 and CODEOWNERS read), and the
units' inventories are merged. tests/test_incremental.py checks incremental output == full output
on the demo, every golden case and edits of them.

Three levels: the whole result keyed by every input (an unchanged tree: no compilation at
all); per-file load results and per-team units; and a verification table for the cluster and
ArgoCD objects, keyed by object content. When the cache cannot reproduce the full pipeline
exactly it is not used: verification without a CRD directory (VERIFY900 counts every custom
resource) and CEL rules the engine cannot compile (VERIFY006 is reported once per run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from compiler.cache.store import Store, compiler_fingerprint, content_digest, digest, tree_fingerprint
from compiler.cache.records import diag_in, diag_out, failed_record, stats_out, stats_sum
from compiler.diagnostics import Diagnostic, Location, has_errors
from compiler.cache.forked import Pending, in_child
from compiler.load.paths import display_path

if TYPE_CHECKING:
    from compiler.model.inventory import Inventory

UNSUPPORTED_ONCE = "VERIFY006"


class CacheEntryMissing(Exception):
    """A cached file's bytes are gone (pruned or deleted meanwhile): rebuild without the cache."""


@dataclass
class Output:
    """What ``check`` and ``build`` need: diagnostics and the expected files (as digests, with
    their bytes fetched on demand)."""

    diagnostics: list[Diagnostic]
    failed: bool  # policy errors: nothing to compare or write
    out_digests: dict[str, str] = field(default_factory=dict)
    repo_files: dict[str, bytes] = field(default_factory=dict)
    n_objects: int = 0
    verify_stats: dict[str, object] = field(default_factory=dict)
    fetch: Callable[[str], bytes] | None = None  # out/-relative path -> bytes
    cached: str = "none"  # "result", "partial" (units reused), "none"
    timings: dict[str, float] = field(default_factory=dict)


def _whole_policy(policy: Any) -> tuple[list[tuple[Any, ...]], dict[str, bytes] | None]:
    """The semantic rules, then (if they pass) REPORT.md and allocation.json: the work that
    reads the whole policy and nothing lowered, for one child process (one fork, and the DRA
    proofs both need are computed once)."""
    from compiler.report.policy_report import policy_reports
    from compiler.validate.semantic import run_checks

    found = run_checks(policy)
    return [diag_out(d) for d in found], None if has_errors(found) else policy_reports(policy)


# -- the engine -------------------------------------------------------------------------------


def eligible(opts: Any) -> bool:
    return opts.crds is not None or not opts.verify


def compile_incremental(opts: Any) -> Output:
    from compiler.pipeline import compile_policies, no_collections

    if not eligible(opts):
        return from_result(compile_policies(opts))
    with no_collections():
        out = _Run(opts, Store(opts.root)).run()
    return out if out is not None else from_result(compile_policies(opts))


def from_result(res: Any) -> Output:
    """The full pipeline's ``Result`` as an ``Output`` (no cache involved)."""
    files = res.out_files
    return Output(list(res.diagnostics), not res.out_files, {k: content_digest(v) for k, v in files.items()},
                  dict(res.repo_files), len(res.manifests), dict(res.verify_stats), files.__getitem__)



class _Run:
    def __init__(self, opts: Any, store: Store) -> None:
        self.opts = opts
        self.store = store
        self.blobs: dict[str, dict[str, bytes]] = {}  # unit key -> rendered files, loaded lazily
        self.files: dict[str, dict[str, str]] = {}  # unit key -> digests of its files
        self.children: list[Pending] = []  # forked work; reaped whatever path compile() takes
        self.timings: dict[str, float] = {}
        self.t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + now - self.t
        self.t = now

    def fetch(self, where: dict[str, str]) -> Callable[[str], bytes]:
        def get(rel: str) -> bytes:
            key = where[rel]
            files = self.blobs.get(key)
            if files is None:
                files = self.store.get("blob", key)
                if files is None:
                    raise CacheEntryMissing(f"blob/{key}")
                self.blobs[key] = files
            return files[rel]

        return get

    def run(self) -> Output | None:
        from compiler.load.source import discover

        opts = self.opts
        files, diags0 = discover(opts.policy_dir, opts.root)
        raw: list[tuple[str, bytes, bool]] = []
        for path, shown in files:
            try:
                raw.append((shown, path.read_bytes(), path.name == "fleet.yaml" and path.parent == opts.policy_dir))
            except OSError:
                return None  # the full pipeline reports unreadable files
        crds = tree_fingerprint(opts.crds) if opts.verify else "-"
        self.fp = digest(compiler_fingerprint(), crds, str(opts.strict), str(opts.verify),
                         display_path(opts.policy_dir, opts.root), display_path(opts.out_dir, opts.root))
        key_all = digest(self.fp, *[x for shown, data, _ in raw for x in (shown, data)],
                         *[repr(diag_out(d)) for d in diags0])
        self.lap("inputs")
        rec = self.store.get("result", key_all)
        how = "result"
        if rec is None:
            rec = self.compile(raw, diags0)
            if rec is None:
                return None
            self.store.put("result", key_all, rec)
            self.store.prune(("result", "load", "pos", "unit", "files", "blob", "schemas"))
            how = "partial" if self.reused else "none"
        out = self.output(rec, how)
        if out is None:  # a unit's entry vanished since: compile without the result entry
            rec = self.compile(raw, diags0)
            out = None if rec is None else self.output(rec, "none")
        return out

    def output(self, rec: dict[str, Any], how: str) -> Output | None:
        where: dict[str, str] = {}
        digests: dict[str, str] = {}
        for key in rec["units"]:
            files = self.files.get(key) or self.store.get("files", key)
            if files is None:
                return None
            digests.update(files)  # C loops: 72,000 files on the 1,000-team benchmark
            where.update(dict.fromkeys(files, key))
        digests.update(rec["inline"])
        where.update(dict.fromkeys(rec["inline"], rec["glob"]))
        out = Output([diag_in(d) for d in rec["diags"]], rec["failed"], digests,
                     rec["repo"], rec["n"], rec["stats"], self.fetch(where), how)
        self.lap("save" if how != "result" else "result")
        out.timings = self.timings
        return out

    # -- stages ---------------------------------------------------------------------------

    def load(self, raw: list[tuple[str, bytes, bool]]) -> tuple[Any, list[Diagnostic]]:
        from compiler.load.source import PolicySources, SourceFile, load_text

        fleet: SourceFile | None = None
        teams: list[SourceFile] = []
        diags: list[Diagnostic] = []
        for shown, data, is_fleet in raw:
            key = digest(compiler_fingerprint(), shown, data)
            hit = self.store.get("load", key)
            if hit is None:
                src, found = load_text(shown, data)
                if src is not None:
                    self.store.put("pos", key, (src.positions, src.key_positions))
                hit = (None if src is None else src.data, [diag_out(x) for x in found])
                self.store.put("load", key, hit)
            self.store.used.add(("pos", key))
            parsed, stored = hit
            diags.extend(diag_in(x) for x in stored)
            if parsed is None:
                continue
            text = data.decode("utf-8")
            src = SourceFile(shown, text[1:] if text.startswith("\ufeff") else text, parsed,
                             lazy_positions=self.positions(key, shown, data))
            if is_fleet:
                fleet = src
            else:
                teams.append(src)
        return PolicySources(fleet, teams), diags

    def positions(self, key: str, shown: str, data: bytes) -> Callable[[], Any]:
        """A file's position tables, read when a diagnostic first needs them (or re-parsed, if
        the entry was pruned meanwhile)."""
        def get() -> Any:
            from compiler.load.source import load_text

            hit = self.store.get("pos", key)
            if hit is None:
                src, _ = load_text(shown, data)
                hit = ({}, {}) if src is None else (src.positions, src.key_positions)
            return hit

        return get

    def compile(self, raw: list[tuple[str, bytes, bool]], diags0: list[Diagnostic]) -> dict[str, Any] | None:
        self.reused = 0
        try:
            return self._compile(raw, diags0)
        finally:
            for child in self.children:
                child()
            self.children.clear()

    def _compile(self, raw: list[tuple[str, bytes, bool]], diags0: list[Diagnostic]) -> dict[str, Any] | None:
        from compiler.validate import build_policy

        sources, diags = self.load(raw)
        diags = diags0 + diags
        self.lap("load")
        policy, more = build_policy(sources, checks=False)
        diags += more
        if policy is None or has_errors(diags):
            return failed_record(diags, {})
        # The semantic rules (capacity, borrowing, DRA proofs: whole-policy) and the reports run
        # in a second process while this one lowers. As in the full pipeline, their errors stop
        # the build before anything is emitted; lowering a policy they reject may fail, so
        # failures wait for their verdict.
        work = in_child(_whole_policy, policy)
        self.children.append(work)
        self.lap("validate")
        try:
            return self.lower_verify_emit(policy, {shown: data for shown, data, _ in raw}, diags, work)
        except Exception:
            found = [diag_in(d) for d in work()[0]]
            if has_errors(found):
                return failed_record(diags + found, {})
            raise

    def lower_verify_emit(self, policy: Any, raw: dict[str, bytes], diags: list[Diagnostic],
                          work: Pending) -> dict[str, Any] | None:
        from compiler.report.codeowners import render_codeowners
        from compiler.emit.tree import render_manifest
        from compiler.report.gitops import argocd_reports
        from compiler.model.inventory import Inventory
        from compiler.lower import lower_cluster, lower_delivery, lower_team
        from compiler.model.manifest import Manifest
        from compiler.policy.multikueue_topology import check_manifests
        from compiler.model.schemas import render_schemas

        opts = self.opts
        base = list(diags)  # load and schema diagnostics
        clusters = sorted(policy.clusters)
        fleet_path = policy.fleet_src.path
        fresh: list[Manifest] = [m for c in clusters for m in lower_cluster(policy, c)]  # rendered this run
        inventory = Inventory.of(fresh)
        units: list[tuple[str, dict[str, Any] | None]] = []  # (key, cached record or None)
        new: dict[str, tuple[list[Manifest], Inventory]] = {}  # key -> a new unit's objects, inventory
        fleet_key = digest(self.fp, fleet_path, raw[fleet_path])  # hashed once, not once per team
        for team in policy.teams:
            key = digest(fleet_key, team.path, raw[team.path])
            rec = self.store.get("unit", key)
            if rec is not None:
                self.reused += 1
                self.store.used.update({("files", key), ("blob", key)})  # live, though not read now
                inventory.merge(Inventory.from_record(rec["inventory"]))
            else:
                ms = [m for c in clusters for m in lower_team(policy, team, c)]
                new[key] = (ms, Inventory.of(ms))
                inventory.merge(new[key][1])
            units.append((key, rec))
        self.lap("lower")
        argocd = lower_delivery(policy, inventory)
        fresh += argocd
        owners = in_child(render_codeowners, policy, inventory, display_path(opts.policy_dir, opts.root),
                          display_path(opts.out_dir, opts.root))
        self.children.append(owners)
        diags += check_manifests(policy, inventory)
        self.lap("global")

        inline = {m.relpath: render_manifest(m) for m in fresh}
        self.lap("emit")
        stats: list[tuple[Any, ...]] = []
        if opts.verify:
            found = self.verify_shared(policy, fresh, inline, stats)
            if found is None:
                return None
            diags += found
        self.lap("verify")
        seen = set(inline)
        for key, rec in units:
            if rec is None:
                rec = self.new_unit(policy, key, *new[key])
                if rec is None:
                    return None
            diags += [diag_in(d) for d in rec["diags"]]
            stats.append(rec["stats"])
            self.files[key] = rec["files"]
            if not seen.isdisjoint(rec["files"]):
                raise AssertionError(f"two objects render to out/{sorted(seen & set(rec['files']))[0]}")
            seen.update(rec["files"])
        self.lap("units")
        found = [diag_in(d) for d in work()[0]]
        if has_errors(found):  # the full pipeline stops before lowering: so do its diagnostics
            return failed_record(base + found, {})
        diags += found
        self.lap("checks")
        if opts.verify and has_errors(diags, strict=opts.strict):
            return failed_record(diags, stats_sum(stats))
        inline.update(work()[1])
        inline.update(argocd_reports(policy, inventory, argocd))
        self.lap("reports")
        inline_digests = {rel: content_digest(data) for rel, data in inline.items()}
        glob = digest("inline", *[x for kv in sorted(inline_digests.items()) for x in kv])
        self.store.put("blob", glob, inline, compress=True)
        self.blobs[glob] = inline
        repo = {".github/CODEOWNERS": owners()}
        schemas = self.store.get("schemas", compiler_fingerprint())  # depend on the compiler alone
        if schemas is None:
            schemas = render_schemas()
            self.store.put("schemas", compiler_fingerprint(), schemas)
        repo.update({f"schemas/{name}": data for name, data in schemas.items()})
        self.lap("global")
        # Freeing the policy and ~70,000 objects one by one costs ~0.15 s; the CLI leaves with
        # os._exit instead.
        self.keep = (units, inventory, policy, fresh, inline)
        return {"diags": [diag_out(d) for d in diags], "failed": False, "units": [u[0] for u in units],
                "inline": inline_digests, "glob": glob, "repo": repo, "n": inventory.count,
                "stats": stats_sum(stats) if opts.verify else {}}

    def new_unit(self, policy: Any, key: str, flat: list[Any], inventory: Inventory) -> dict[str, Any] | None:
        from compiler.emit.tree import render_manifest
        from compiler.verify.lines import add_lines

        diags: list[Diagnostic] = []
        stats: tuple[Any, ...] = ({}, 0, 0, 0, 0, 0, 0)
        files = {m.relpath: render_manifest(m) for m in flat}
        if self.opts.verify:
            result = self.verifier(policy)(flat)
            diags = add_lines(result.diagnostics, files.get)
            if any(d.code == UNSUPPORTED_ONCE for d in diags):
                return None
            stats = stats_out(result.stats)
        rec = {"inventory": inventory.to_record(),
               "files": {rel: content_digest(data) for rel, data in files.items()},
               "diags": [diag_out(d) for d in diags], "stats": stats}
        self.store.put("unit", key, rec)
        self.store.put("files", key, rec["files"])
        self.store.put("blob", key, files, compress=True)
        self.blobs[key] = files
        return rec

    def verifier(self, policy: Any) -> Callable[[list[Any]], Any]:
        from compiler.verify import verify
        from compiler.verify.run import _registry

        registry = _registry(str(self.opts.crds.resolve()))
        versions = {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters}
        return lambda ms: verify(ms, kube_versions=versions, crds=registry, strict=self.opts.strict)

    def verify_shared(self, policy: Any, fresh: list[Any], rendered: dict[str, bytes],
                      stats: list[tuple[Any, ...]]) -> list[Diagnostic] | None:
        """Cluster and ArgoCD objects, one at a time, through a table keyed by their content."""
        from compiler.verify import kueue_config
        from compiler.lower.kueue import manager_config
        from compiler.verify.lines import add_lines

        diags: list[Diagnostic] = []
        for cluster in sorted(policy.clusters):  # Helm values, not manifests (as run_verify)
            diags.extend(kueue_config.check(manager_config(policy, cluster), cluster, Location(policy.fleet_src.path)))
        versions = {c.name: c.kubernetes_version for c in policy.fleet.spec.clusters}
        table = self.store.get("verified", self.fp) or {}
        kept: dict[str, Any] = {}
        check = None
        for m in fresh:
            key = digest(m.cluster, versions.get(m.cluster, "?"), str(sorted(versions.items())) if m.cluster == "argocd"
                         else "", m.relpath, rendered[m.relpath])
            hit = table.get(key)
            if hit is None:
                check = check or self.verifier(policy)
                result = check([m])
                hit = ([diag_out(d) for d in add_lines(result.diagnostics, rendered.get)], stats_out(result.stats))
            kept[key] = hit
            found = [diag_in(d) for d in hit[0]]
            if any(d.code == UNSUPPORTED_ONCE for d in found):
                return None
            diags += found
            stats.append(hit[1])
        if kept.keys() != table.keys():
            self.store.put("verified", self.fp, kept)
        return diags
