"""``gpupolicy`` command line: parse into options, run a command, map the outcome to an exit code.

Exit codes: 0 ok, 1 policy errors (warnings too under --strict), 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Sequence

from compiler.diagnostics import EXIT_USAGE, UsageError
from compiler.pipeline.options import Options, default_crds
from compiler.tools.audit.args import add_arguments as audit_arguments
from compiler.tools.cluster_import.args import add_arguments as import_arguments
from compiler.tools.simulate.args import add_arguments as simulate_arguments


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"gpupolicy: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _common(p: argparse.ArgumentParser, formats: tuple[str, ...] = ("text", "json", "github", "parsable"),
            format_help: str = "diagnostic format (default: github under GitHub Actions, else text)") -> None:
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.add_argument("--policies", type=Path, default=None, help="policy directory (default: <root>/policies)")
    p.add_argument("--out", type=Path, default=None, help="output directory (default: <root>/out)")
    p.add_argument("--crds", type=Path, default=None,
                   help="directory of CRD YAML files to verify against (default: $GPUPOLICY_CRDS, "
                        "else ../shared/crds when present)")
    p.add_argument("--strict", action="store_true", help="warnings fail the run; missing CRDs are errors")
    p.add_argument("--format", choices=list(formats), default=None, help=format_help)
    p.add_argument("--no-verify", action="store_true", help="skip the verify stage (faster, unsafe)")
    p.add_argument("--no-cache", action="store_true",
                   help="validate/check/build: compile everything, ignoring .gpupolicy-cache/ (safe to delete)")


def _version() -> str:
    try:
        return importlib.metadata.version("gpupolicy")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpupolicy", description="GitOps policy compiler for shared GPU clusters.")
    parser.add_argument("--version", action="version", version=f"gpupolicy {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_ in (
        ("validate", "check the policies and print diagnostics"),
        ("build", "validate, lower, verify and write out/, schemas/ and CODEOWNERS"),
        ("check", "render in memory; fail listing stale files if out/, schemas/ or CODEOWNERS differ"),
        ("schema", "regenerate schemas/ from the policy models"),
        ("report", "print the allocation report (markdown) to stdout"),
    ):
        _common(sub.add_parser(name, help=help_))
    ex = sub.add_parser("explain", help="a team's allocation, borrowing, preemption and required labels")
    _common(ex)
    ex.add_argument("team")
    ex.add_argument("--job", default=None,
                    help="a job shape to test for admission, e.g. 'h100-80gb=4,cpu=32,memory=256Gi'")
    ex.add_argument("--cluster", default=None, help="cluster for --job (default: every cluster of the team)")
    nodes = sub.add_parser("nodes", help="compare real nodes (kubectl get nodes -o json) with the node contract")
    _common(nodes)
    nodes.add_argument("nodes_json", metavar="NODES_JSON", type=Path, help="output of `kubectl get nodes -o json`")
    nodes.add_argument("--cluster", default=None, help="cluster the nodes belong to (default: guessed from pool labels)")
    nodes.add_argument("--output", choices=["text", "json"], default="text", help="report format (default: text)")
    df = sub.add_parser("diff", help="what a change does for whom, compared with a git revision")
    _common(df, ("markdown", "json", "text"), "report format (default: markdown, for a PR comment)")
    df.add_argument("--base", required=True, help="git revision to compare with, e.g. origin/main")
    import_arguments(sub.add_parser("import", help="draft a policy and an inventory from kubectl exports of a cluster"))
    audit_arguments(sub.add_parser("audit", help="evidence ledger from exported Kueue Workloads and metric exports"))
    sim = sub.add_parser("simulate", help="replay a job trace against the rendered Kueue objects of a cluster")
    _common(sim, ("text", "json", "markdown"), "report format (default: text)")
    simulate_arguments(sim)
    rules = sub.add_parser("rules", help="list every rule ID with its summary")
    rules.add_argument("--examples", action="store_true", help="show PASS/FAIL examples")
    return parser


def _inside(path: Path, root: Path) -> bool:
    """``path`` lies inside ``root``, as written and once symbolic links are resolved (a pull
    request controls the tree: ``out -> ~/.ssh`` must not make a build replace that directory)."""
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def options(ns: argparse.Namespace) -> Options:
    root = ns.root
    if not root.is_dir():
        raise UsageError(f"root {root} is not a directory")
    policy_dir = ns.policies if ns.policies is not None else root / "policies"
    out_dir = ns.out if ns.out is not None else root / "out"
    crds = ns.crds if ns.crds is not None else default_crds(root)
    if crds is not None and not crds.is_dir():
        raise UsageError(f"CRD directory {crds} does not exist")
    if not policy_dir.is_dir():
        raise UsageError(f"policy directory {policy_dir} does not exist")
    for flag, path in (("--policies", policy_dir), ("--out", out_dir)):
        # Headers, reports and CODEOWNERS name these relative to the repository: one outside it
        # would write an absolute path of this machine into them.
        if not _inside(path, root):
            raise UsageError(f"{flag} {path} is, or resolves (through a symbolic link) to, a directory outside the "
                             f"repository root {root}; gpupolicy reads and writes only inside the repository")
    return Options(root=root, policy_dir=policy_dir, out_dir=out_dir, crds=crds, strict=ns.strict,
                   verify=not ns.no_verify)


def main(argv: Sequence[str] | None = None) -> int:
    from compiler.cli import commands

    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        if ns.command == "rules":
            return commands.cmd_rules(ns.examples)
        if ns.command in ("import", "audit"):  # exports in, files out: no policy directory options
            return commands.cmd_import(ns) if ns.command == "import" else commands.cmd_audit(ns)
        opts = options(ns)
        return commands.COMMANDS[ns.command](opts, ns)
    except UsageError as exc:
        print(f"gpupolicy: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpupolicy: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # unreadable or unwritable paths: the environment, not the policy
        print(f"gpupolicy: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a compiler bug: say so briefly; the traceback on request
        if os.environ.get("GPUPOLICY_DEBUG"):
            raise
        print(f"gpupolicy: internal error: {type(exc).__name__}: {exc} "
              "(please report it; GPUPOLICY_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_USAGE


def entrypoint() -> None:
    # No cyclic collection for the whole command, as during a compile (pipeline.no_collections):
    # re-enabling it after a large build makes the next allocations pay a full collection of
    # everything it built (~1 s at 1,000 teams). A command is short-lived and makes few cycles.
    gc.disable()
    code = main()
    # Skip the interpreter's teardown: freeing a large build's objects one by one takes ~0.15 s
    # on the 1,000-team benchmark and nothing is left to clean up (files closed, children
    # reaped); buffered output is flushed first.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        sys.exit(code)
    os._exit(code)
