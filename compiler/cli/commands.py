"""One function per subcommand: run the pipeline, print, write, return the exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from compiler.cli.render import FORMATS, choose_format
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, EXIT_USAGE, Diagnostic, exit_code, sort_diagnostics
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
    return EXIT_OK


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


def cmd_rules(examples: bool) -> int:
    for rule in all_rules().values():
        print(f"{rule.id}  [{rule.severity.value}] {rule.summary}")
        if examples:
            print("    PASS:\n" + "\n".join("      " + line for line in rule.passing.splitlines()))
            print("    FAIL:\n" + "\n".join("      " + line for line in rule.failing.splitlines()))
    return EXIT_OK


COMMANDS: dict[str, Callable[[Options, argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "build": cmd_build,
    "check": cmd_check,
    "schema": cmd_schema,
    "report": cmd_report,
    "explain": cmd_explain,
}
