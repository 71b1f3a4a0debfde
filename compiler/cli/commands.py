"""One function per subcommand: run the pipeline, print, write, return the exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from compiler.cli.render import FORMATS, choose_format
from compiler.diagnostics import (
    EXIT_OK,
    EXIT_POLICY,
    EXIT_USAGE,
    Diagnostic,
    UsageError,
    exit_code,
    sort_diagnostics,
)
from compiler.emit import diff_tree, read_tree, write_file_atomic, write_tree
from compiler.admit import admit, parse_shape
from compiler.explain import explain_team
from compiler.pipeline import Options, Result, compile_policies
from compiler.report import render_markdown
from compiler.rules import all_rules
from compiler.schemas import render_schemas


def _print_diags(diags: list[Diagnostic], opts: Options, ns: argparse.Namespace) -> None:
    fmt = choose_format(ns.format)
    stream = sys.stdout if fmt in ("json",) else sys.stderr
    FORMATS[fmt](sort_diagnostics(diags), opts.root, stream, stream.isatty())


def _compile(opts: Options, ns: argparse.Namespace, *, verify: bool | None = None) -> Result:
    if verify is not None:
        opts.verify = verify and opts.verify
    res = compile_policies(opts)
    _print_diags(res.diagnostics, opts, ns)
    return res


def cmd_validate(opts: Options, ns: argparse.Namespace) -> int:
    res = _compile(opts, ns)
    return exit_code(res.diagnostics, strict=opts.strict) if res.policy else EXIT_POLICY


def cmd_build(opts: Options, ns: argparse.Namespace) -> int:
    res = _compile(opts, ns)
    code = exit_code(res.diagnostics, strict=opts.strict)
    if res.policy is None or code != EXIT_OK:
        print("gpupolicy: build failed; out/ left unchanged", file=sys.stderr)
        return EXIT_POLICY
    changed = write_tree(opts.out_dir, res.out_files)
    for rel, data in sorted(res.repo_files.items()):
        changed |= write_file_atomic(opts.root / rel, data)
    n = len(res.manifests)
    print(f"gpupolicy: {n} objects in {len(res.out_files)} files "
          f"({'updated' if changed else 'unchanged'})", file=sys.stderr)
    _print_verify_stats(res)
    return EXIT_OK


def _print_verify_stats(res: Result) -> None:
    st = res.verify_stats
    if st:
        print(f"gpupolicy: verified {st.get('total_objects', 0)} objects: {st.get('cel_rules_evaluated', 0)} CRD CEL rules "
              f"evaluated, {st.get('transition_rules_skipped', 0)} transition (oldSelf) rules skipped, "
              f"{st.get('webhook_checks', 0)} Kueue webhook checks", file=sys.stderr)


def stale_files(opts: Options, res: Result) -> list[tuple[str, str]]:
    out_rel = opts.out_dir
    stale = [(s, f"{_shown(out_rel, opts.root)}/{p}") for s, p in diff_tree(res.out_files, read_tree(opts.out_dir))]
    for rel, data in sorted(res.repo_files.items()):
        path = opts.root / rel
        if not path.is_file():
            stale.append(("missing", rel))
        elif path.read_bytes() != data:
            stale.append(("changed", rel))
    return stale


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def cmd_check(opts: Options, ns: argparse.Namespace) -> int:
    res = _compile(opts, ns)
    code = exit_code(res.diagnostics, strict=opts.strict)
    if res.policy is None or code != EXIT_OK:
        return EXIT_POLICY
    stale = stale_files(opts, res)
    if stale:
        for status, path in stale:
            print(f"stale: {status:8} {path}", file=sys.stderr)
        print(f"gpupolicy: {len(stale)} generated file(s) are stale; run `gpupolicy build` and commit",
              file=sys.stderr)
        return EXIT_POLICY
    print(f"gpupolicy: out/ is up to date ({len(res.out_files)} files)", file=sys.stderr)
    return EXIT_OK


def cmd_schema(opts: Options, ns: argparse.Namespace) -> int:
    for name, data in render_schemas().items():
        write_file_atomic(opts.root / "schemas" / name, data)
    print(f"gpupolicy: wrote {len(render_schemas())} schemas to schemas/", file=sys.stderr)
    return EXIT_OK


def cmd_report(opts: Options, ns: argparse.Namespace) -> int:
    res = _compile(opts, ns, verify=False)
    if res.policy is None or exit_code(res.diagnostics) != EXIT_OK:
        return EXIT_POLICY
    sys.stdout.write(render_markdown(res.policy).decode())
    return EXIT_OK


def cmd_explain(opts: Options, ns: argparse.Namespace) -> int:
    res = _compile(opts, ns, verify=False)
    if res.policy is None or exit_code(res.diagnostics) != EXIT_OK:
        return EXIT_POLICY
    if res.policy.team(ns.team) is None:
        known = ", ".join(t.name for t in res.policy.teams)
        print(f"gpupolicy: no team {ns.team!r} (known: {known})", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(explain_team(res.policy, ns.team))
    if ns.job:
        try:
            shape = parse_shape(ns.job)
        except ValueError as exc:
            print(f"gpupolicy: --job: {exc}", file=sys.stderr)
            return EXIT_USAGE
        clusters = [ns.cluster] if ns.cluster else sorted({e.cluster for e in res.policy.allocation.for_team(ns.team)})
        for cluster in clusters:
            verdict = admit(res.policy, ns.team, cluster, shape)
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

    from compiler.load import load_policy_dir
    from compiler.nodes import NodesInputError, check_nodes, parse_nodes, pool_guesses, render_json, render_text
    from compiler.validate import build_policy

    try:
        nodes = parse_nodes(json.loads(ns.nodes_json.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, NodesInputError) as exc:
        raise UsageError(f"cannot read nodes from {ns.nodes_json}: {exc}") from exc
    sources, diags = load_policy_dir(opts.policy_dir, opts.root)
    policy, more = build_policy(sources)
    _print_diags(diags + more, opts, ns)
    if policy is None or exit_code(diags + more) != EXIT_OK:
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
    sys.stdout.write(render_json(report) if ns.output == "json" else render_text(report))
    return EXIT_POLICY if report.drift else EXIT_OK


def cmd_rules(examples: bool) -> int:
    for rule in all_rules().values():
        print(f"{rule.id}  [{rule.severity.value}] {rule.summary}")
        if examples:
            print("    PASS:\n" + "\n".join("      " + line for line in rule.passing.splitlines()))
            print("    FAIL:\n" + "\n".join("      " + line for line in rule.failing.splitlines()))
    return EXIT_OK


def cmd_diff(opts: Options, ns: argparse.Namespace) -> int:
    from compiler.diff_render import diff_command

    return diff_command(opts, ns)


COMMANDS: dict[str, Callable[[Options, argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "build": cmd_build,
    "check": cmd_check,
    "schema": cmd_schema,
    "report": cmd_report,
    "explain": cmd_explain,
    "diff": cmd_diff,
    "nodes": cmd_nodes,
}
