"""The stages in order, written once: load → validate → lower → verify → emit → report.

``compile_run`` is the sequence; each stage asks the run's store for a unit before computing it
(``compiler.pipeline.run`` says which units there are). With an empty store every unit is
computed, so ``validate``, ``--no-cache`` and a warm ``check`` run exactly this code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable, Iterable

from compiler.cache.forked import Pending, in_child
from compiler.cache.records import (
    NO_STATS,
    DiagRecord,
    RunRecord,
    StatsRecord,
    UnitRecord,
    diag_in,
    diag_out,
    stats_out,
)
from compiler.cache.store import compiler_fingerprint, content_digest, digest
from compiler.diagnostics import Diagnostic, has_errors
from compiler.emit.tree import render_manifest
from compiler.load.paths import display_path
from compiler.load.source import PolicySources, Positions, SourceFile, load_text
from compiler.lower import lower_cluster, lower_delivery, lower_team
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.model.schemas import render_schemas
from compiler.pipeline.run import PolicyInput, Run, fleet_key, unit_key
from compiler.pipeline.waivers import expire
from compiler.policy.graph import Policy
from compiler.policy.multikueue_topology import check_manifests
from compiler.report.codeowners import OwnedPart, owned_part, render_codeowners
from compiler.report.gitops import argocd_reports
from compiler.report.policy_report import policy_reports
from compiler.validate import assemble_policy, run_checks
from compiler.validate.cascade import recoverable
from compiler.validate.relations import check_output_path
from compiler.validate.waivers import apply_waivers
from compiler.verify.context import VerifyStats
from compiler.verify.ops import check_runtime
from compiler.verify.run import Verifier, run_level
from compiler.verify.runtime import FileFacts, file_facts, merge_facts


def compile_run(run: Run, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> RunRecord:
    try:
        policy, diags = assemble(run, inputs, diags0)
        if policy is None:
            return RunRecord.failure(diags)
        # The policy-scope unit runs in a second process while this one lowers. Its errors stop
        # the build before anything is emitted; lowering a policy they reject may fail, so
        # failures wait for their verdict.
        checks = in_child(whole_policy, policy, run)
        run.children.append(checks)
        run.lap("validate")
        try:
            return lower_verify_emit(run, policy, {i.shown: i.data or b"" for i in inputs}, diags, checks)
        except Exception:
            found = [diag_in(d) for d in checks()[0]]
            if has_errors(found):
                run.policy, run.lowered = None, []
                return RunRecord.failure(diags + found)
            raise
    finally:
        for child in run.children:
            child()
        run.children.clear()


def assemble(run: Run, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> tuple[Policy | None, list[Diagnostic]]:
    """Load, then schema-check and assemble the policy: the policy when the rules and lowering may
    run on it, else None with every diagnostic found."""
    sources, diags = load(run, inputs)
    diags = diags0 + diags
    run.lap("load")
    policy, more = assemble_policy(sources)
    diags += more
    if policy is None:
        return None, diags
    policy = replace(policy, previous=run.previous)
    if recoverable(diags):  # a rejected cut: its classes are unknown, the rest is whole
        return None, diags + run_checks(policy)
    return (None, diags) if has_errors(diags) else (policy, diags)


def validate_run(run: Run, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> tuple[Policy | None, list[Diagnostic]]:
    """The stages up to validate: the validated policy (None on errors) and every diagnostic."""
    policy, diags = assemble(run, inputs, diags0)
    if policy is None:
        return None, diags
    # the rules' verdict may come from the store (run.semantic); waivers and expiry apply now
    checked = expire(apply_waivers(policy, run.semantic(policy)))
    return (None if has_errors(checked) else policy), diags + checked


# -- load ------------------------------------------------------------------------------------


def load(run: Run, inputs: list[PolicyInput]) -> tuple[PolicySources, list[Diagnostic]]:
    """Each file's parse (a file-scope unit); a stored parse reads its position tables only when
    a diagnostic needs them."""
    fleet: SourceFile | None = None
    teams: list[SourceFile] = []
    diags: list[Diagnostic] = []
    for i in inputs:
        if i.data is None:
            continue
        key = digest(compiler_fingerprint(), i.shown, i.data)
        hit = run.store.get("load", key)
        src: SourceFile | None
        if hit is None:
            src, found = load_text(i.shown, i.data)
            diags.extend(found)
            if src is not None:
                run.store.put("pos", key, (src.positions, src.key_positions))
            run.store.put("load", key, (None if src is None else src.data, [diag_out(x) for x in found]))
        else:
            run.store.used.add(("pos", key))
            parsed, stored = hit
            diags.extend(diag_in(x) for x in stored)
            if parsed is None:
                continue
            text = i.data.decode("utf-8")
            src = SourceFile(i.shown, text[1:] if text.startswith("\ufeff") else text, parsed,
                             lazy_positions=_positions(run, key, i.shown, i.data))
        if src is None:
            continue
        if i.is_fleet:
            fleet = src
        else:
            teams.append(src)
    return PolicySources(fleet, teams), diags


def _positions(run: Run, key: str, shown: str, data: bytes) -> Callable[[], Positions]:
    """A file's position tables, read when a diagnostic first needs them (or re-parsed, if the
    entry was pruned meanwhile)."""
    def get() -> Positions:
        hit: Positions | None = run.store.get("pos", key)
        if hit is None:
            src, _ = load_text(shown, data)
            hit = ({}, {}) if src is None else (src.positions, src.key_positions)
        return hit

    return get


# -- validate: the policy-scope unit -------------------------------------------------------


def whole_policy(policy: Policy, run: Run) -> tuple[list[DiagRecord], dict[str, bytes] | None]:
    """The semantic rules (their findings kept in the store for explain, report and nodes:
    ``Run.semantic``), then (if they pass) REPORT.md and allocation.json: one child process,
    and the DRA proofs both need are computed once."""
    found = apply_waivers(policy, run.semantic(policy))  # a waived error does not withhold the reports
    return [diag_out(d) for d in found], None if has_errors(found) or not run.reports else policy_reports(policy)


# -- lower, verify, emit, report ------------------------------------------------------------


def lower_verify_emit(run: Run, policy: Policy, raw: dict[str, bytes], diags: list[Diagnostic],
                      checks: Pending) -> RunRecord:
    opts = run.opts
    base = list(diags)  # load and schema diagnostics
    clusters = sorted(policy.clusters)
    # lower: fleet-scope passes (every run), team units (through the store), then the
    # output-scope passes over the merged inventory
    fresh: list[Manifest] = [m for c in clusters for m in lower_cluster(policy, c)]
    inventory = Inventory.of(fresh)
    # CODEOWNERS and the OPS model: the fleet-scope files' parts now, each team unit's stored with
    # it. Without a store CODEOWNERS reads the merged inventory in its child, off the critical path.
    keep = not run.store.off
    owner_parts: list[OwnedPart] = [owned_part(inventory.files, {t.path: t.name for t in policy.teams})] if keep else []
    runtime_parts: list[FileFacts] = [file_facts(inventory.files)]
    units: list[tuple[str, UnitRecord]] = []
    if opts.verify:
        run.verifier = Verifier(policy, opts.crds, strict=opts.strict)
    fleet = fleet_key(run.fp, policy.fleet_src.path, raw[policy.fleet_src.path])  # hashed once
    for team in policy.teams:
        key = unit_key(fleet, team.path, raw[team.path])
        stored = run.stored_unit(key)
        rec = None if stored is None else UnitRecord.of(stored)
        if rec is not None:
            run.reused += 1
            run.store.used.update({("files", key), ("blob", key), ("outline", key)})  # live, though not read now
            inventory.merge(Inventory.from_record(rec.inventory))
        else:  # rendered and verified at once: one team's objects alive at a time (issue 21, RSS)
            ms = [m for c in clusters for m in lower_team(policy, team, c)]
            team_inventory = Inventory.of(ms)
            run.lap("lower")
            owned = owned_part(team_inventory.files, {team.path: team.name}) if keep else ({}, {}, {})
            rec = new_unit(run, key, ms, team_inventory, owned, file_facts(team_inventory.files))
            run.lap("verify")
            inventory.merge(team_inventory)
        units.append((key, rec))
        owner_parts.append(rec.owners)
        runtime_parts.append(rec.runtime)
    argocd = lower_delivery(policy, inventory)
    fresh += argocd
    run.policy = policy
    run.lowered = fresh + run.kept
    shown_out = display_path(opts.out_dir, opts.root)
    owners = in_child(render_codeowners, policy, owner_parts if keep else inventory,
                      display_path(opts.policy_dir, opts.root), shown_out)
    run.children.append(owners)
    diags += check_manifests(policy, inventory)
    # OPS: what ArgoCD syncs must also run (the parts in the inventory's order of files)
    diags += check_runtime(policy, fresh, inventory, merge_facts(runtime_parts))
    diags += check_output_path(policy, shown_out)  # GITOPS401
    run.lap("lower")

    # emit (in memory) and verify: fleet and output objects one by one, team units whole
    inline = {m.relpath: render_manifest(m) for m in fresh}
    run.lap("emit")
    stats: list[StatsRecord] = []
    found: list[Diagnostic] = []
    if opts.verify:
        found += verify_objects(run, fresh, inline, stats)
    seen = set(inline)
    for key, rec in units:
        found += [diag_in(d) for d in rec.diags]
        stats.append(rec.stats)
        run.files[key] = rec.files
        if not seen.isdisjoint(rec.files):
            raise AssertionError(f"two objects render to out/{sorted(seen & set(rec.files))[0]}")
        seen.update(rec.files)
    if opts.verify:
        diags += run_level(policy, found, opts.crds, strict=opts.strict)
    run.lap("verify")

    checked = [diag_in(d) for d in checks()[0]]
    if has_errors(checked):  # the policy-scope rules stop the build before anything is emitted
        run.policy, run.lowered = None, []
        return RunRecord.failure(base + checked)
    diags += checked
    run.lap("validate")
    diags = apply_waivers(policy, diags, inventory, final=True, verified=opts.verify)  # every finding is in
    if opts.verify and has_errors(diags, strict=opts.strict):
        return RunRecord.failure(diags, stats_sum(stats))

    # report: the policy-scope and output-scope files, CODEOWNERS, the schemas
    reports = checks()[1]
    assert reports is not None or not run.reports
    inline.update(reports or {})
    inline.update(argocd_reports(policy, inventory, argocd))
    inline_digests = {rel: content_digest(data) for rel, data in inline.items()}
    glob = digest("inline", *[x for kv in sorted(inline_digests.items()) for x in kv])
    run.store.put("blob", glob, inline, compress=True)
    run.blobs[glob] = inline
    repo = {".github/CODEOWNERS": owners()}
    schemas = run.store.get("schemas", compiler_fingerprint())  # depend on the compiler alone
    if schemas is None:
        schemas = render_schemas()
        run.store.put("schemas", compiler_fingerprint(), schemas)
    repo.update({f"schemas/{name}": data for name, data in schemas.items()})
    return RunRecord([diag_out(d) for d in diags], False, [u[0] for u in units], inline_digests, glob, repo,
                     inventory.count, stats_sum(stats) if opts.verify else {})


def new_unit(run: Run, key: str, flat: list[Manifest], inventory: Inventory, owners: OwnedPart,
             runtime: FileFacts) -> UnitRecord:
    """A team unit computed: its objects rendered and verified, then stored."""
    files = {m.relpath: render_manifest(m) for m in flat}
    diags: list[Diagnostic] = []
    stats = NO_STATS
    if run.verifier is not None:
        diags, verified = run.verifier(flat, files.get)
        stats = stats_out(verified)
    rec = UnitRecord(inventory.to_record(), {rel: content_digest(data) for rel, data in files.items()},
                     [diag_out(d) for d in diags], stats, owners, runtime)
    run.store.put("unit", key, rec.plain())
    run.unit_lowered(key, flat)
    run.store.put("files", key, rec.files)
    run.store.put("blob", key, files, compress=True)
    run.blobs[key] = files
    return rec


def verify_objects(run: Run, fresh: list[Manifest], rendered: dict[str, bytes],
                   stats: list[StatsRecord]) -> list[Diagnostic]:
    """Fleet-scope and output-scope objects, one at a time, through a table keyed by their
    content (an unchanged ClusterQueue is not verified again)."""
    assert run.verifier is not None
    versions = run.verifier.versions
    table = run.store.get("verified", run.fp) or {}
    kept: dict[str, tuple[list[DiagRecord], StatsRecord]] = {}
    diags: list[Diagnostic] = []
    for m in fresh:
        key = digest(m.cluster, versions.get(m.cluster, "?"), str(sorted(versions.items())) if m.cluster == "argocd"
                     else "", m.relpath, rendered[m.relpath])
        hit = table.get(key)
        if hit is None:
            found, verified = run.verifier([m], rendered.get)
            hit = ([diag_out(d) for d in found], stats_out(verified))
        kept[key] = hit
        diags += [diag_in(d) for d in hit[0]]
        stats.append(hit[1])
    if kept.keys() != table.keys():
        run.store.put("verified", run.fp, kept)
    return diags


def stats_sum(parts: Iterable[StatsRecord]) -> dict[str, object]:
    total = VerifyStats()
    for objects, *ints in parts:
        total.objects.update(Counter(objects))
        total.cel_rules_evaluated += ints[0]
        total.transition_rules_skipped += ints[1]
        total.cel_rules_unsupported += ints[2]
        total.cel_skipped_invalid_objects += ints[3]
        total.webhook_checks += ints[4]
        total.embedded_expressions += ints[5]
    return total.as_dict()
