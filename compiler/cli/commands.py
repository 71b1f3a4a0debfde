"""One function per subcommand: run the pipeline, print, write, return the exit code."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Callable

from compiler import escape
from compiler.cli.render import DOCUMENT_FORMATS, FORMATS, choose_format, json_records, place_file_findings, use_colour
from compiler.cli.stale import stale_findings
from compiler.diagnostics import (
    EXIT_OK,
    EXIT_POLICY,
    EXIT_USAGE,
    Diagnostic,
    UsageError,
    exit_code,
)
from compiler.load.paths import display_path

# The pipeline and the tools are imported inside the commands: `rules`, `--help` and usage errors
# need none of them (~0.3 s of imports, most of a small command's start-up).
if TYPE_CHECKING:
    from pathlib import Path

    from compiler.cache.store import Store
    from compiler.cli.out_tree import TreeScan
    from compiler.pipeline.options import Options
    from compiler.pipeline.run import Result
    from compiler.policy.graph import Policy


def _fmt(ns: argparse.Namespace) -> str:
    return choose_format(getattr(ns, "format", None))


def _print_diags(diags: list[Diagnostic], opts: Options, ns: argparse.Namespace) -> None:
    """Diagnostics in the chosen format: a document format (json, sarif, junit) is the one
    document on stdout; line formats go to stderr, leaving stdout to the command's own output."""
    fmt = _fmt(ns)
    stream = sys.stdout if fmt in DOCUMENT_FORMATS else sys.stderr
    FORMATS[fmt](_ordered(diags, opts), opts.root, stream, use_colour(stream), strict=opts.strict)


def _ordered(diags: list[Diagnostic], opts: Options) -> list[Diagnostic]:
    if not diags:  # a clean run asks git nothing
        return []
    from compiler.diagnostics import prioritise
    from compiler.pipeline.previous import touched_files

    # with a known git base (GPUPOLICY_BASE, or CI): errors on the files the change touched, first
    # (asking git only when there is something to order)
    touched = touched_files(opts.root) if diags else frozenset[str]()
    return place_file_findings(prioritise(diags, touched), opts.root)


def _print_document(diags: list[Diagnostic], opts: Options, ns: argparse.Namespace, **payload: object) -> None:
    """A command with output of its own (report, explain, nodes) under ``--format json``: one
    document, its diagnostics under ``diagnostics`` and its output beside them (none on errors)."""
    import json

    doc = {"diagnostics": json_records(_ordered(diags, opts)), **payload}
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def cmd_validate(opts: Options, ns: argparse.Namespace) -> int:
    """The pipeline with the on-disk store (unless --no-cache), like ``check``: the pre-commit hooks
    run validate then check, and the second is then answered from the store."""
    from compiler.cache.store import Store
    from compiler.pipeline.run import compile_policies

    store = None if ns.no_cache else Store(opts.root)
    res = compile_policies(opts, store, objects=False, digests=False)
    _print_timings(res)
    _print_diags(res.diagnostics, opts, ns)
    _cache_notice(store)
    return EXIT_POLICY if res.failed else exit_code(res.diagnostics, strict=opts.strict)


def _compile_cached(opts: Options, ns: argparse.Namespace, *, writing: bool = False, checking: bool = False
                    ) -> tuple[Result, Store | None, TreeScan]:
    """check and build: the pipeline with the on-disk store unless --no-cache, with out/ scanned
    meanwhile (compiler.cli.out_tree). ``check`` never writes outside the cache, and compares the
    tree with what changed since the build that wrote it, so its run needs no digest of every file
    (``compiler.pipeline.out_digests``)."""
    from compiler.cache.store import Store
    from compiler.cli.out_tree import TreeScan
    from compiler.emit.tree import recover
    from compiler.pipeline.run import compile_policies

    store = None if getattr(ns, "no_cache", False) else Store(opts.root)
    if writing:
        recover(opts.out_dir)  # finish a swap a killed build left half done before looking at out/
    scan = TreeScan(opts.out_dir, store, summary=checking)
    out = compile_policies(opts, store, objects=False, digests=not checking or store is None)
    _print_timings(out)
    return out, store, scan


def _print_timings(out: Result) -> None:
    if os.environ.get("GPUPOLICY_TIMINGS"):  # bench/: where an incremental run spends its time
        print("gpupolicy: timings " + " ".join(f"{k}={v:.3f}" for k, v in out.timings.items()), file=sys.stderr)


def _cache_notice(store: Store | None) -> None:
    """One line when the cache could not be used as it should; the result is the same."""
    if store is not None and store.problems:
        print(f"gpupolicy: notice: cache {store.dir.name}/: {'; '.join(store.problems)}; compiled without "
              "those entries (the result is the same; the directory is safe to delete)", file=sys.stderr)


def cmd_build(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.cli.lock import build_lock

    with build_lock(opts.root):  # one build at a time: the second waits
        return _build(opts, ns)


def _build(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.cli.out_tree import write

    out, store, scan = _compile_cached(opts, ns, writing=True)
    _print_diags(out.diagnostics, opts, ns)
    code = exit_code(out.diagnostics, strict=opts.strict)
    if out.failed or code != EXIT_OK:
        scan.result()  # reap the child
        print("gpupolicy: build failed; out/ left unchanged", file=sys.stderr)
        return EXIT_POLICY
    from compiler.pipeline.run import compile_policies
    from compiler.pipeline.units import CacheEntryMissing

    try:
        changed = write(scan, opts.root, out, store)
    except CacheEntryMissing:  # another process pruned the cache meanwhile: render everything
        out = compile_policies(opts, objects=False)
        changed = write(scan, opts.root, out, None)
    _cache_notice(store)
    print(f"gpupolicy: {out.n_objects} objects in {len(out.out_digests)} files "
          f"({'updated' if changed else 'unchanged'})", file=sys.stderr)
    _print_verify_stats(out.verify_stats)
    return EXIT_OK


def _print_verify_stats(st: dict[str, object]) -> None:
    if st:
        print(f"gpupolicy: verified {st.get('total_objects', 0)} objects: {st.get('cel_rules_evaluated', 0)} CRD CEL rules "
              f"evaluated, {st.get('transition_rules_skipped', 0)} transition (oldSelf) rules skipped, "
              f"{st.get('webhook_checks', 0)} Kueue webhook checks", file=sys.stderr)


def cmd_check(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.cli.lock import build_lock

    with build_lock(opts.root, shared=True):  # never reads out/ halfway through a build's swap
        return _check(opts, ns)


def _check(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.cli.out_tree import stale as stale_outputs

    out, store, scan = _compile_cached(opts, ns, checking=True)
    code = exit_code(out.diagnostics, strict=opts.strict)
    if out.failed or code != EXIT_OK:
        scan.summary()  # reap the child
        _print_diags(out.diagnostics, opts, ns)
        return EXIT_POLICY
    from compiler.pipeline.units import CacheEntryMissing

    shown_out = display_path(opts.out_dir, opts.root)
    try:
        stale, n_files = stale_outputs(scan, opts.root, shown_out, out, store)
    except CacheEntryMissing:  # another process pruned the cache meanwhile: render everything
        from compiler.pipeline.run import compile_policies

        out = compile_policies(opts, objects=False)
        stale, n_files = stale_outputs(scan, opts.root, shown_out, out, None)
    _cache_notice(store)
    if _fmt(ns) == "text":  # the compact listing people read; every other format has them as GITOPS490
        _print_diags(out.diagnostics, opts, ns)
        for status, path in stale:
            print(f"stale: {status:8} {escape.text(path)}", file=sys.stderr)
    else:
        _print_diags(out.diagnostics + stale_findings(stale), opts, ns)
    if stale:
        print(f"gpupolicy: {len(stale)} generated file(s) are stale; run `gpupolicy build` and commit",
              file=sys.stderr)
        return EXIT_POLICY
    print(f"gpupolicy: out/ is up to date ({n_files} files)", file=sys.stderr)
    return EXIT_OK


def cmd_schema(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.cli.out_tree import inside
    from compiler.emit.tree import write_file_atomic
    from compiler.model.schemas import render_schemas

    schemas = render_schemas()
    for name, data in schemas.items():
        write_file_atomic(inside(opts.root, f"schemas/{name}"), data)
    print(f"gpupolicy: wrote {len(schemas)} schemas to schemas/", file=sys.stderr)
    return EXIT_OK


def _validated(opts: Options, ns: argparse.Namespace) -> tuple[Policy | None, list[Diagnostic]]:
    """The validated policy (nothing lowered; None on errors) and its diagnostics, printed unless
    the command prints one JSON document that carries them (``_print_document``)."""
    from compiler.cache.store import Store
    from compiler.pipeline.run import validated_policy

    policy, diags = validated_policy(opts, None if ns.no_cache else Store(opts.root))
    if _fmt(ns) != "json":
        _print_diags(diags, opts, ns)
    elif exit_code(diags) != EXIT_OK:
        _print_document(diags, opts, ns)
    return (None if exit_code(diags) != EXIT_OK else policy), diags


def cmd_report(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.report.policy_report import allocation_data, render_markdown

    policy, diags = _validated(opts, ns)
    if policy is None:
        return EXIT_POLICY
    if _fmt(ns) == "json":  # the allocation as data: what out/reports/allocation.json holds
        _print_document(diags, opts, ns, allocation=allocation_data(policy))
    else:
        sys.stdout.write(render_markdown(policy).decode())
    return EXIT_OK


def cmd_explain(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.tools.explain import explain_team
    from compiler.tools.job_admission import admit, parse_shape

    policy, diags = _validated(opts, ns)
    if policy is None:
        return EXIT_POLICY
    if policy.team(ns.team) is None:
        known = ", ".join(t.name for t in policy.teams)
        print(f"gpupolicy: no team {ns.team!r} (known: {known})", file=sys.stderr)
        return EXIT_USAGE
    try:
        shape = parse_shape(ns.job) if ns.job else None
    except ValueError as exc:
        print(f"gpupolicy: --job: {exc}", file=sys.stderr)
        return EXIT_USAGE
    clusters = [ns.cluster] if ns.cluster else sorted({e.cluster for e in policy.allocation.for_team(ns.team)})
    verdicts = [(cluster, admit(policy, ns.team, cluster, shape)) for cluster in clusters] if shape else []
    if _fmt(ns) == "json":
        allocation = [{"cluster": e.cluster, "class": e.gpu_class, "guaranteed": e.guaranteed.as_json(),
                       "borrow": e.borrow.as_json(), "lend": e.lend.as_json(), "lendable": e.lendable}
                      for e in policy.allocation.for_team(ns.team)]
        jobs = [{"job": ns.job, "cluster": cluster, "admissible": v.admissible, "flavors": dict(v.flavors),
                 "reasons": list(v.reasons)} for cluster, v in verdicts]
        _print_document(diags, opts, ns, team=ns.team, explanation=explain_team(policy, ns.team),
                        allocation=allocation, jobs=jobs)
        return EXIT_OK
    sys.stdout.write(explain_team(policy, ns.team))
    for cluster, verdict in verdicts:
        if verdict.admissible:
            chosen = ", ".join(f"{r} on flavor {f}" for r, f in verdict.flavors) or "no GPU resources"
            print(f"job {ns.job} on {cluster}: admissible when the cohort is idle ({chosen})")
        else:
            print(f"job {ns.job} on {cluster}: not admissible")
            for reason in verdict.reasons:
                print(f"  - {reason}")
    return EXIT_OK


def cmd_nodes(opts: Options, ns: argparse.Namespace) -> int:
    """Node drift against the contract: exit 0 none, 1 drift (or policy errors), 2 bad input."""
    import json

    from compiler.tools.kube_export import ExportError, load_items
    from compiler.tools.node_drift import check_nodes, pool_guesses, render_json, render_text

    try:  # the streaming reader of every kubectl export (import, audit)
        nodes = load_items(ns.nodes_json, ("Node",))
    except ExportError as exc:
        raise UsageError(f"cannot read nodes: {exc}") from exc
    policy, diags = _validated(opts, ns)
    if policy is None:
        return EXIT_POLICY
    cluster = ns.cluster
    if cluster is None:
        guesses = [c.name for c in policy.fleet.spec.clusters] if len(policy.clusters) == 1 else pool_guesses(policy, nodes)
        if len(guesses) != 1:
            raise UsageError(f"cannot tell which cluster the nodes belong to (candidates: {', '.join(guesses) or 'none'}); "
                             "pass --cluster")
        cluster = guesses[0]
    elif cluster not in policy.clusters:
        raise UsageError(f"no cluster {cluster!r} (known: {', '.join(sorted(policy.clusters))})")
    report = check_nodes(policy, cluster, nodes)
    if _fmt(ns) == "json":  # --format json: the report and the diagnostics, one document
        _print_document(diags, opts, ns, **json.loads(render_json(report)))
    else:
        sys.stdout.write(render_json(report) if ns.output == "json" else render_text(report))
    return EXIT_POLICY if report.drift else EXIT_OK


def cmd_rule_docs(directory: Path) -> int:
    """``rules --docs DIR``: docs/rules/ from the registry (compiler.report.rule_docs)."""
    from compiler.report.rule_docs import write_rule_docs

    written, removed = write_rule_docs(directory)
    print(f"gpupolicy: {written} rule pages in {escape.text(str(directory))}" + (f" ({removed} removed)" if removed else ""),
          file=sys.stderr)
    return EXIT_OK


def cmd_rules(examples: bool, fmt: str = "text") -> int:
    """``rules``: from compiler/rules_index.json, not the registry, whose import (pydantic, every
    stage) would be most of this command's start-up (issue #21); the index is tested equal to it."""
    from compiler.report.rule_index import rule_entries

    if fmt == "json":
        import json

        from compiler.diagnostics import rule_url

        rules = [{**entry, "url": rule_url(entry["id"])} for entry in rule_entries()]
        sys.stdout.write(json.dumps(rules, indent=2) + "\n")
        return EXIT_OK
    for entry in rule_entries():
        print(f"{entry['id']}  [{entry['severity']}] {entry['summary']}")
        if examples:
            print("    PASS:\n" + "\n".join("      " + line for line in entry["pass"].splitlines()))
            print("    FAIL:\n" + "\n".join("      " + line for line in entry["fail"].splitlines()))
    return EXIT_OK


def cmd_diff(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.tools.diff_render import diff_command

    if getattr(ns, "simulate", None) is None:
        return diff_command(opts, ns)
    from compiler.tools.simulate.compare import diff_with_simulation

    return diff_with_simulation(opts, ns, diff_command)


def cmd_import(ns: argparse.Namespace) -> int:
    from compiler.tools.cluster_import.command import run

    return run(ns)


def cmd_audit(ns: argparse.Namespace) -> int:
    from compiler.tools.audit.command import run

    return run(ns)


def cmd_init(ns: argparse.Namespace) -> int:
    from compiler.tools.scaffold.command import run

    return run(ns)


def cmd_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    from compiler.cli.completion import SCRIPTS

    sys.stdout.write(SCRIPTS[shell](parser))
    return EXIT_OK


def cmd_simulate(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.tools.simulate.command import cmd_simulate as simulate

    return simulate(opts, ns)


COMMANDS: dict[str, Callable[[Options, argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "build": cmd_build,
    "check": cmd_check,
    "schema": cmd_schema,
    "report": cmd_report,
    "explain": cmd_explain,
    "diff": cmd_diff,
    "nodes": cmd_nodes,
    "simulate": cmd_simulate,
}
