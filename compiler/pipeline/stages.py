"""The stages in order, written once: load → validate → lower → verify → emit → report.

``compile_run`` is the sequence (load and validate are in ``compiler.pipeline.front``, which the
commands that stop after validate import alone); each stage asks the run's store for a unit before
computing it (``compiler.pipeline.run`` says which units there are). With an empty store every unit is
computed, so ``validate``, ``--no-cache`` and a warm ``check`` run exactly this code.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from compiler.cache.forked import Pending, Tasks, in_child
from compiler.cache.records import (
    NO_STATS,
    DiagRecord,
    RunRecord,
    StatsRecord,
    UnitRecord,
    diag_in,
    diag_out,
    stats_out,
    stats_total,
)
from compiler.cache.store import compiler_fingerprint, content_digest, digest
from compiler.diagnostics import Diagnostic, has_errors
from compiler.emit.tree import render_manifest
from compiler.load.paths import display_path
from compiler.lower import lower_delivery, lower_team_unit
from compiler.model.inventory import FileRow, Inventory
from compiler.model.manifest import Manifest
from compiler.model.schemas import render_schemas
from compiler.pipeline.blocks import merged, rows_of
from compiler.pipeline.cohorts import fleet_lowered, kept_cohorts
from compiler.pipeline.front import assemble
from compiler.pipeline.lifetime import hold
from compiler.pipeline.owners import codeowners_kept, unit_owners
from compiler.pipeline.policy_unit import (
    StoredPart,
    joined,
    placed,
    policy_unit,
    report_parts,
    reports_or_none,
    semantic_rules,
    stored_part,
)
from compiler.pipeline.run import PolicyInput, Run
from compiler.pipeline.tables import ParsedCrds, render_fleet, verify_objects
from compiler.pipeline.units import (
    RepoFile,
    StoredFragments,
    block_key,
    kept,
    repo_file,
    team_names,
    team_table_key,
    unit_blocks,
)
from compiler.policy.graph import Policy, Team
from compiler.policy.multikueue_topology import check_manifests
from compiler.report.codeowners import OwnedPart, check_size, delivery_rows, owned_part, render_codeowners
from compiler.report.gitops import argocd_reports
from compiler.report.policy_report import REPORT_PARTS, policy_reports
from compiler.report.report_size import check_report_size
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
        # The policy-scope unit runs in other processes while this one lowers: the semantic rules,
        # and REPORT.md with allocation.json. With a store, one after the other in one child
        # (after a one-team edit at 1,000 teams ~0.2 s each, this process's share ~1 s: one child
        # copies the parent's pages once, not twice). Without one (a full build), in a child each:
        # one child holding the rules' memory while it renders the reports was the peak of a
        # 10,000-team build (+60 MiB, bench/README.md). The rules' errors stop the build before
        # anything is emitted; lowering a policy they reject may fail, so failures wait for their
        # verdict, and the reports are used only when the rules pass. With a store the child is the
        # critical path of a large organisation (after a one-team edit at 5,000 teams its 1.3 s of
        # CPU end after this process's lowering), so it runs at this process's priority (`validate`
        # 3.23 -> 2.95 s there, the same at 1,000 teams), and the reports' two parts go to whichever
        # process is free first: this one takes its share when it would otherwise wait for the
        # rules (``Tasks``; 2.50 -> 2.32 s at 5,000 teams, bench/README.md), after the work it
        # keeps for that moment (``Run.meanwhile``: CODEOWNERS).
        if run.store.off:
            checks = in_child(semantic_rules, policy, run)
            rendered = in_child(reports_or_none, policy) if run.reports else Pending(lambda: None)
            run.children += [checks, rendered]
            reports = Pending(lambda: None if (files := rendered()) is None else [stored_part(run, files, True)])
        else:
            tasks = Tasks(len(REPORT_PARTS) if run.reports else 0)
            fragments = StoredFragments(run.store, team_names(run.team_keys, policy.teams), run.fleet_key)
            unit = in_child(policy_unit, policy, run, tasks, fragments, nice=0)
            mine = Pending(lambda: report_parts(policy, run, tasks, fragments))

            def rules() -> list[DiagRecord]:  # this process's own work first, then report parts
                for job in run.meanwhile:
                    job()
                mine()
                return unit()[0]

            def reported() -> list[StoredPart] | None:
                _, theirs, used = unit()
                run.store.used.update(("fragment", key) for key in [*used, *fragments.used])
                parts = joined(theirs, mine())
                if parts is not None and len(parts) < len(REPORT_PARTS):  # the child died holding one
                    parts = report_parts(policy, run, Tasks(len(REPORT_PARTS)), fragments)  # (in_child ran it here)
                return parts

            checks = Pending(rules)
            reports = Pending(reported)
            run.children += [unit, Pending(tasks.close)]
        run.lap("validate")
        try:
            return lower_verify_emit(run, policy, diags, checks, reports)
        except Exception:
            found = [diag_in(d) for d in checks()]
            if has_errors(found):
                run.policy, run.lowered = None, []
                return RunRecord.failure(diags + found)
            raise
    finally:
        for child in run.children:
            child()
        run.children.clear()


# -- lower, verify, emit, report ------------------------------------------------------------


def lower_verify_emit(run: Run, policy: Policy, diags: list[Diagnostic],
                      checks: Pending, reports: Pending) -> RunRecord:
    opts = run.opts
    base = list(diags)  # load and schema diagnostics
    clusters = sorted(policy.clusters)
    # lower: fleet-scope passes (every run; most Cohorts through the store), team units (through
    # the store), then the output-scope passes over the merged inventory
    fresh, left = fleet_lowered(run, policy, clusters)
    inventory = Inventory.of(fresh)
    keep = not run.store.off
    if opts.verify:
        run.verifier = Verifier(policy, opts.crds, strict=opts.strict)
        if run.verifier.registry is not None:
            run.verifier.registry.remember(None if run.store.off else ParsedCrds(run.store))
    cohorts = kept_cohorts(run, policy, left, inventory)
    shown_policies, shown_out = display_path(opts.policy_dir, opts.root), display_path(opts.out_dir, opts.root)
    records, unit_keys, runtime_parts, owned = team_units(run, policy, inventory)
    argocd = lower_delivery(policy, inventory)
    fresh += argocd
    run.policy = policy
    run.lowered = fresh + run.kept
    owners = codeowners_job(run, policy, inventory, owned, unit_keys, delivery_rows(argocd), shown_policies, shown_out)
    diags += check_manifests(policy, inventory)
    # OPS: what ArgoCD syncs must also run (the parts in the inventory's order of files)
    diags += check_runtime(policy, fresh, inventory, merge_facts(runtime_parts))
    diags += check_output_path(policy, shown_out)  # GITOPS401
    run.lap("lower")

    # emit (in memory) and verify: fleet and output objects one by one, team units whole
    inline = render_fleet(run, fresh)
    run.lap("emit")
    stats: list[StatsRecord] = list(cohorts.stats)
    found: list[Diagnostic] = list(cohorts.diags)
    if opts.verify:
        found += verify_objects(run, fresh, inline, stats)
    for rec in records:
        found += [diag_in(d) for d in rec.diags]
        stats.append(rec.stats)
    if opts.verify:
        diags += run_level(policy, found, opts.crds, strict=opts.strict)
    run.lap("verify")

    checked = [diag_in(d) for d in checks()]
    run.lap("wait")  # for the policy-scope unit's child: the critical path when this is long
    if has_errors(checked):  # the policy-scope rules stop the build before anything is emitted
        run.policy, run.lowered = None, []
        return RunRecord.failure(base + checked)
    diags += checked
    run.lap("validate")
    shares = None  # the report parts; None too when they cannot be rendered (then the run fails)
    if run.reports:  # GITOPS403 and GITOPS404: the files as GitHub would load or render them, or not
        shares = reports()
        diags += check_size(policy, *owners()[1:3])
        diags += check_report_size(policy, {rel: n for share in shares or [] for rel, n in share[4].items()})
    diags = apply_waivers(policy, diags, inventory, final=True, verified=opts.verify)  # every finding is in
    if opts.verify and has_errors(diags, strict=opts.strict):
        return RunRecord.failure(diags, stats_sum(stats))

    # report: the policy-scope and output-scope files, CODEOWNERS, the schemas
    inline_digests = {rel: content_digest(data) for rel, data in inline.items()}
    inline_digests.update(cohorts.digests)
    homes = dict(cohorts.homes)  # the files in blobs of their own: kept Cohorts, reports (``stored_part``)
    pieces: list[str] = []  # the fragments the reports are made of
    if run.reports:  # a waived error does not withhold them
        inline_digests.update(placed(run, shares or [stored_part(run, policy_reports(policy), True)], homes, pieces))
    more = argocd_reports(policy, inventory, argocd)
    inline_digests.update((rel, content_digest(data)) for rel, data in more.items())
    inline.update(more)
    glob = digest("inline", *[x for rel in sorted(inline) for x in (rel, inline_digests[rel])])
    run.store.put("blob", glob, inline, compress=True)
    run.keep(glob, inline)
    repo: dict[str, RepoFile] = {".github/CODEOWNERS": owners()} if run.reports else {}
    schemas = run.store.get("schemas", compiler_fingerprint())  # depend on the compiler alone
    if schemas is None:
        schemas = render_schemas()
        run.store.put("schemas", compiler_fingerprint(), schemas)
    repo.update({f"schemas/{name}": repo_file(run.store, data) for name, data in schemas.items()})
    repo_digests = {rel: run.keep_repo(file) for rel, file in repo.items()}
    if keep:  # freed at exit, not on return (pipeline.lifetime); without a store memory matters more
        hold(records, inventory, runtime_parts)
    return RunRecord([diag_out(d) for d in diags], False, unit_keys, inline_digests, glob, repo_digests,
                     inventory.count, stats_sum(stats) if opts.verify else {}, homes, pieces)


Owned = tuple[list[FileRow], dict[str, OwnedPart]]  # the fleet-scope files' rows, the parts computed now


def codeowners_job(run: Run, policy: Policy, inventory: Inventory, owned: Owned | None, unit_keys: list[str],
                   delivery: list[FileRow], shown_policies: str, shown_out: str) -> Pending:
    """CODEOWNERS, to be asked for once the rules are in: with a store, from the fleet-scope
    files' part (ArgoCD's files among them: ``delivery``) and the units' kept parts and sections,
    rendered while the run would wait for the rules (``Run.meanwhile``); without one, from the
    merged inventory in a child; nothing for a diff, which compares out/ only."""
    if owned is not None:
        fleet_rows, known = owned
        fleet_part = owned_part([*fleet_rows, *delivery], {t.path: t.name for t in policy.teams})
        keys = list(zip(policy.teams, unit_keys))  # team_units' keys, in the teams' order
        owners = Pending(lambda: codeowners_kept(run.store, policy, fleet_part, known, keys, shown_policies, shown_out))
        run.meanwhile.append(owners)
    elif run.store.off and run.reports:
        owners = in_child(kept, run.store, render_codeowners, policy, inventory, shown_policies, shown_out, delivery)
        run.children.append(owners)
    else:
        owners = Pending(lambda: None)
    return owners


def team_units(run: Run, policy: Policy, inventory: Inventory
               ) -> tuple[list[UnitRecord], list[str], list[FileFacts], Owned | None]:
    """Every team unit, computed or from the store, merged into ``inventory`` in the teams' order,
    with the OPS model's parts (the fleet-scope files' first) and, with a store and reports, what
    CODEOWNERS reads besides the store: the fleet-scope files' rows and the parts of the units
    computed now (the caller renders it while the run would wait for the rules, ``Run.meanwhile``;
    without a store it reads the merged inventory, in a child the caller starts). Returns the
    records merged, each of one unit or, with a store, of a block of them (``pipeline.blocks``),
    and the units' keys."""
    runtime_parts: list[FileFacts] = [file_facts(inventory.files)]
    records: list[UnitRecord] = []
    keys = [(team, run.team_keys[team.path]) for team in policy.teams]  # hashed with the inputs (Run.run)
    owned: Owned | None = None
    computed: dict[str, Unit] = {}
    if not run.store.off and run.reports:
        # The units missing from the store first; CODEOWNERS reads the other units' parts itself
        # (compiler.pipeline.owners), rendered in this process when it would wait for the rules:
        # in a child of its own (at +5) it shared the two cores three ways and copied the pages it
        # touched (validate after a one-team edit 1.005 -> 0.885 s at 1,000 teams, 2.25 -> 2.19 s
        # at 5,000; medians of 10 and 8 interleaved rounds).
        known: dict[str, OwnedPart] = {}
        present = run.store.keys("unit")
        for team, key in keys:
            if run.shared is None and key not in present:
                computed[key] = compute_unit(run, policy, team, key, known)
        owned = list(inventory.files), known  # before the units' rows are merged into it
    if not run.store.off and run.shared is None:
        for block in unit_blocks(keys):
            whole, read = unit_block(run, policy, block, computed)
            inventory.merge(Inventory.from_record(whole.inventory, read))
            records.append(whole)
            runtime_parts.append(whole.runtime)
        return records, [key for _, key in keys], runtime_parts, owned
    for team, key in keys:  # without a store, or in a diff: no unit was computed above
        rec, rows = unit(run, policy, team, key)
        inventory.merge(rows if isinstance(rows, Inventory) else Inventory.from_record(rec.inventory, rows))
        records.append(rec)
        runtime_parts.append(rec.runtime)
    return records, [key for _, key in keys], runtime_parts, owned


# A team unit's record with its inventory (computed by this run) or the reader of its rows (stored).
Unit = tuple[UnitRecord, "Inventory | Callable[[], list[FileRow]]"]


def unit(run: Run, policy: Policy, team: Team, key: str) -> Unit:
    """A team unit's record from the store (with the reader of its rows), else computed now (with
    its inventory)."""
    stored = run.stored_unit(key)
    if stored is None:
        return compute_unit(run, policy, team, key, None)
    reused(run, team, key)
    return UnitRecord.of(stored), unit_rows(run, policy, team, key)


def reused(run: Run, team: Team, key: str) -> None:
    """A stored unit taken by this run: its entries stay live, marked only if the run prunes
    (``Run.prune``): nine entries of 5,000 units were ~0.04 s of every one-team edit at 5,000 teams."""
    run.reused_units.append((team.path, key))


def unit_block(run: Run, policy: Policy, block: list[tuple[Team, str]], computed: dict[str, Unit]
               ) -> tuple[UnitRecord, Callable[[], list[FileRow]]]:
    """A block of team units merged (``pipeline.blocks``): its entry when none of its units was
    computed by this run, else merged from its units' records and kept; with the reader of its
    units' rows (those of a unit computed now are in memory)."""
    bkey = block_key(block)
    stored = None if any(key in computed for _, key in block) else run.store.get("block", bkey)
    readers: list[Callable[[], list[FileRow]]] = []
    if stored is not None:
        for team, key in block:
            reused(run, team, key)
            readers.append(unit_rows(run, policy, team, key))
        return UnitRecord.of(stored), rows_of(readers)
    records: list[UnitRecord] = []
    for team, key in block:
        rec, rows = computed.pop(key) if key in computed else unit(run, policy, team, key)
        records.append(rec)
        readers.append(rows_in(rows) if isinstance(rows, Inventory) else rows)
    whole = merged(records)
    run.store.put("block", bkey, whole.plain())
    return whole, rows_of(readers)


def rows_in(inventory: Inventory) -> Callable[[], list[FileRow]]:
    return lambda: inventory.files


def unit_rows(run: Run, policy: Policy, team: Team, key: str) -> Callable[[], list[FileRow]]:
    """A stored unit's inventory rows, read when first needed (kind ``rows``; ``Inventory.later``),
    or the team lowered again for them if the entry went meanwhile (lowering is pure: the same rows)."""
    def read() -> list[FileRow]:
        rows = run.store.get("rows", key)
        if isinstance(rows, list):
            return rows
        return Inventory.of(lower_team_unit(policy, team)).files

    return read


def compute_unit(run: Run, policy: Policy, team: Team, key: str,
                 known: dict[str, OwnedPart] | None) -> tuple[UnitRecord, Inventory]:
    """A team unit lowered, rendered and verified at once (one team's objects alive at a time:
    issue 21, RSS), then stored with its CODEOWNERS part, which goes to ``known`` too."""
    ms = lower_team_unit(policy, team)
    team_inventory = Inventory.of(ms)
    run.lap("lower")
    if not run.store.off:
        owned = unit_owners(team_inventory, team)
        run.store.put("owners", key, owned)
        run.store.used.add(("ownsec", key))  # written when CODEOWNERS is rendered
        if known is not None:
            known[key] = owned
    rec = new_unit(run, key, team.path, ms, team_inventory, file_facts(team_inventory.files))
    run.lap("verify")
    return rec, team_inventory


def new_unit(run: Run, key: str, team_path: str, flat: list[Manifest], inventory: Inventory,
             runtime: FileFacts) -> UnitRecord:
    """A team unit computed: its objects rendered and verified, then stored. With a store its
    objects are verified through a table of that team's objects (``verify_objects``): after an
    edit of one budget only the changed ClusterQueues are, so only their schemas are compiled in
    this process (the first object of a kind costs its CRD's parsing and compiling, ~0.1 s for
    ClusterQueue). The findings are the same either way (a finding verify makes once per call,
    such as NEAREST_SCHEMAS, is one diagnostic once sorted: ``sort_diagnostics``)."""
    files = {m.relpath: render_manifest(m) for m in flat}
    diags: list[Diagnostic] = []
    stats = NO_STATS
    if run.verifier is not None and run.store.off:  # in one call: ~25% less than object by object
        diags, verified = run.verifier(flat, files.get)
        stats = stats_out(verified)
    elif run.verifier is not None:
        parts: list[StatsRecord] = []
        diags = verify_objects(run, flat, files, parts, team_table_key(run.fp, team_path))
        stats = stats_total(parts)
    # the inventory's record only to store it: without a store it would be a second copy of the
    # unit's rows (marshalled) beside the merged inventory's, ~70 MB at 10,000 teams
    rec = UnitRecord(() if run.store.off else inventory.to_record(), [diag_out(d) for d in diags], stats, runtime)
    run.store.put("unit", key, rec.plain())
    run.store.put("rows", key, inventory.files)  # apart: a later run reads them only when a waiver needs them
    run.unit_lowered(key, flat)
    digests = run.files[key] = {rel: content_digest(data) for rel, data in files.items()}
    run.store.put("files", key, digests)  # read only by the runs that need every file's digest
    run.store.put("blob", key, files, compress=True)
    run.keep(key, files)
    return rec


def stats_sum(parts: Iterable[StatsRecord]) -> dict[str, object]:
    """``stats_total`` of ``parts``, as the statistics a run reports."""
    objects, *ints = stats_total(parts)
    return VerifyStats(Counter(objects), *ints).as_dict()
