"""``gpupolicy`` command line: parse into options, run a command, map the outcome to an exit code.

Exit codes: 0 ok, 1 policy errors (warnings too under --strict), 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Sequence

from compiler.diagnostics import EXIT_USAGE, UsageError
from compiler.pipeline.lifetime import keep_until_exit
from compiler.pipeline.options import Options, default_crds
from compiler.tools.audit.args import add_arguments as audit_arguments
from compiler.tools.cluster_import.args import add_arguments as import_arguments
from compiler.tools.scaffold.args import add_arguments as init_arguments
from compiler.tools.simulate.args import add_arguments as simulate_arguments


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"gpupolicy: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


LINE_FORMATS = ("text", "json", "github", "parsable")
FINDING_FORMATS = (*LINE_FORMATS, "sarif", "junit")  # commands whose output is their findings
EXIT_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away


def _common(p: argparse.ArgumentParser, formats: tuple[str, ...] = LINE_FORMATS,
            format_help: str = "diagnostic format (default: github under GitHub Actions, else text)") -> None:
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.add_argument("--policies", type=Path, default=None, help="policy directory (default: <root>/policies)")
    p.add_argument("--out", type=Path, default=None, help="output directory (default: <root>/out)")
    p.add_argument("--crds", type=Path, default=None,
                   help="directory of CRD YAML files to verify against (default: $GPUPOLICY_CRDS, "
                        "else ../shared/crds when present, else the CRDs shipped with gpupolicy)")
    p.add_argument("--strict", action="store_true", help="warnings fail the run; missing CRDs are errors")
    p.add_argument("--format", choices=list(formats), default=None, help=format_help)
    p.add_argument("--no-verify", action="store_true", help="skip the verify stage (faster, unsafe)")
    p.add_argument("--no-cache", action="store_true",
                   help="compile everything, ignoring .gpupolicy-cache/ (safe to delete)")


class _Version(argparse.Action):
    """``--version``, looked up only when asked: importing ``importlib.metadata`` and reading the
    installed distributions cost ~0.03-0.08 s, a third of a small command's start-up."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"gpupolicy {_version()}")
        parser.exit()


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("gpupolicy")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpupolicy", description="GitOps policy compiler for shared GPU clusters.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_ in (
        ("validate", "check the policies and print diagnostics"),
        ("build", "validate, lower, verify and write out/, schemas/ and CODEOWNERS"),
        ("check", "render in memory; fail listing stale files if out/, schemas/ or CODEOWNERS differ"),
        ("schema", "regenerate schemas/ from the policy models"),
        ("report", "print the allocation report (markdown) to stdout"),
    ):
        formats = FINDING_FORMATS if name in ("validate", "build", "check") else LINE_FORMATS
        _common(sub.add_parser(name, help=help_), formats,
                "diagnostic format (default: github under GitHub Actions, else text); "
                + ("json, sarif and junit are" if formats == FINDING_FORMATS else "json is") + " one document on stdout")
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
    df.add_argument("--max-bytes", type=int, default=60_000, metavar="N",
                    help="markdown: fit the report in N bytes, summary and per-team table first, saying what is "
                         "left out (default: 60000, a PR comment; 0: no limit)")
    df.add_argument("--simulate", type=Path, default=None, metavar="TRACE",
                    help="also replay this job trace against base and head (see simulate) and add per-team deltas")
    df.add_argument("--simulate-cluster", default=None, metavar="NAME",
                    help="cluster to simulate (default: the only one with Kueue objects)")
    df.add_argument("--simulate-load", type=float, default=1.0, metavar="X", help="compress arrivals X-fold")
    df.add_argument("--simulate-mapping", type=Path, default=None, metavar="FILE",
                    help="trace team mapping (see simulate --mapping)")
    import_arguments(sub.add_parser("import", help="draft a policy and an inventory from kubectl exports of a cluster"))
    audit_arguments(sub.add_parser("audit", help="evidence ledger from exported Kueue Workloads and metric exports"))
    sim = sub.add_parser("simulate", help="replay a job trace against the rendered Kueue objects of a cluster")
    _common(sim, ("text", "json", "markdown"), "report format (default: text)")
    simulate_arguments(sim)
    init_arguments(sub.add_parser("init", help="scaffold a new team file that validates against the fleet"))
    comp = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)")
    comp.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")
    rules = sub.add_parser("rules", help="list every rule ID with its summary")
    rules.add_argument("--examples", action="store_true", help="show PASS/FAIL examples")
    rules.add_argument("--format", choices=["text", "json"], default="text",
                       help="text, or json: every rule with its examples and page URL (default: text)")
    rules.add_argument("--docs", type=Path, metavar="DIR", default=None,
                       help="write one markdown page per rule and an index into DIR (make docs: docs/rules)")
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
                   verify=not ns.no_verify, cache=not ns.no_cache)


def main(argv: Sequence[str] | None = None) -> int:
    from compiler.cli import commands

    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        if ns.command == "rules" and ns.docs is not None:
            return commands.cmd_rule_docs(ns.docs)
        if ns.command == "rules":
            return commands.cmd_rules(ns.examples, ns.format)
        if ns.command == "completion":
            return commands.cmd_completion(parser, ns.shell)
        if ns.command == "init":
            return commands.cmd_init(ns)
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
    except BrokenPipeError:  # before OSError: a closed reader is not an environment error
        return _reader_gone()
    except OSError as exc:  # unreadable or unwritable paths: the environment, not the policy
        print(f"gpupolicy: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a compiler bug: say so briefly; the traceback on request
        if os.environ.get("GPUPOLICY_DEBUG"):
            raise
        print(f"gpupolicy: internal error: {type(exc).__name__}: {exc} "
              "(please report it; GPUPOLICY_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_USAGE


def _reader_gone() -> int:
    """stdout's reader has gone (``gpupolicy rules | head -1``): stdout now points at /dev/null so
    no later flush fails again (the Python docs' recipe, library/signal.html, "Note on SIGPIPE"),
    with no "Broken pipe" message or traceback; the status is 141, that of a writer SIGPIPE ended,
    which shells (``set -o pipefail``) already treat as a reader that stopped early."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_PIPE


def entrypoint() -> None:
    # No cyclic collection for the whole command, as during a compile (pipeline.no_collections):
    # re-enabling it after a large build makes the next allocations pay a full collection of
    # everything it built (~1 s at 1,000 teams). A command is short-lived and makes few cycles.
    gc.disable()
    keep_until_exit()  # and no freeing of a run's structures before it either (pipeline.lifetime)
    code = main()
    # Skip the interpreter's teardown: freeing a large build's objects one by one takes ~0.15 s
    # on the 1,000-team benchmark and nothing is left to clean up (files closed, children
    # reaped); buffered output is flushed first.
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    except ValueError:  # stdout closed by the command
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
