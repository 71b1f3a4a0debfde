"""``gpupolicy import``: read the exports, write the draft policy and INVENTORY.md, validate the draft.

Input per cluster: ``--nodes`` (required), ``--pods``, ``--kueue``, ``--cluster-policy``; or
``--from DIR`` with one sub-directory per cluster holding ``nodes.json`` and optionally
``pods.json``, ``kueue.json``, ``cluster-policy.json``. Exit 0 when the draft validates, 1 when an
export is unreadable or the draft has errors (it is written all the same, with the errors in
INVENTORY.md), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from compiler import escape
from compiler.catalog import builtin_catalog
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, EXIT_USAGE, Diagnostic, UsageError, has_errors
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.tools.cluster_import.cluster import ClusterExport, analyse
from compiler.tools.cluster_import.draft import build_draft
from compiler.tools.cluster_import.inventory import findings, render_markdown
from compiler.tools.cluster_import.kueue import KUEUE_KINDS, read_kueue
from compiler.tools.cluster_import.nodes import node_facts
from compiler.tools.cluster_import.pods import gpu_pod
from compiler.tools.cluster_import.pools import dns_label
from compiler.tools.cluster_import.quantities import MalformedExport
from compiler.tools.kube_export import ExportError, ExportMissing, describe, iter_items, load_items

FILES = {"nodes": "nodes.json", "pods": "pods.json", "kueue": "kueue.json", "cluster_policy": "cluster-policy.json"}


def _checked(path: Path, items: Iterable[dict[str, Any]], parse: Callable[[dict[str, Any]], Any]
             ) -> list[dict[str, Any]]:
    """Objects that ``parse`` accepts (falsy results dropped); a malformed one names file and object."""
    out = []
    for i, obj in enumerate(items):
        try:
            keep = parse(obj)
        except MalformedExport as exc:  # the message names the field
            raise ExportError(f"{path}: {describe(obj, i)}: {exc}") from None
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise ExportError(f"{path}: {describe(obj, i)} is malformed ({type(exc).__name__}: {exc})") from None
        if keep is not None and keep is not False:
            out.append(obj)
    return out


def _read(name: str, nodes: Path, pods: Path | None, kueue: Path | None, cp: Path | None) -> ClusterExport:
    policy = load_items(cp, ["ClusterPolicy"]) if cp else []
    return ClusterExport(
        name=dns_label(name, "main"),
        nodes=_checked(nodes, iter_items(nodes, ["Node"]), node_facts),
        # streamed: only GPU pods are kept (a cluster's pod export can be large)
        pods=_checked(pods, iter_items(pods, ["Pod"]), gpu_pod) if pods else [],
        kueue=_checked(kueue, iter_items(kueue, KUEUE_KINDS), lambda o: read_kueue([o]) and True) if kueue else [],
        cluster_policy=policy[0] if policy else None,
    )


def read_exports(ns: argparse.Namespace) -> list[ClusterExport]:
    if ns.from_dir is not None:
        if ns.nodes is not None:
            raise UsageError("import: give either --from or --nodes, not both")
        if not ns.from_dir.is_dir():
            raise UsageError(f"import: --from {ns.from_dir} is not a directory")
        out = []
        for sub in sorted(p for p in ns.from_dir.iterdir() if p.is_dir()):
            paths = {k: sub / f for k, f in FILES.items()}
            if not paths["nodes"].is_file():
                raise UsageError(f"import: {sub} has no nodes.json")
            opt = {k: (v if v.is_file() else None) for k, v in paths.items()}
            out.append(_read(sub.name, paths["nodes"], opt["pods"], opt["kueue"], opt["cluster_policy"]))
        if not out:
            raise UsageError(f"import: {ns.from_dir} has no cluster sub-directories")
        return out
    if ns.nodes is None:
        raise UsageError("import: --nodes (or --from) is required")
    return [_read(ns.cluster, ns.nodes, ns.pods, ns.kueue, ns.cluster_policy)]


def _validate(root: Path) -> list[Diagnostic]:
    res = compile_policies(Options(root=root, policy_dir=root / "policies", out_dir=root / "out", verify=False))
    return res.diagnostics


def _line(d: Diagnostic) -> str:
    loc = d.location
    where = f"{loc}: " if loc is not None and loc.file else ""
    return f"{where}{d.severity.value}[{d.code}] {d.message}"


def run(ns: argparse.Namespace) -> int:
    try:
        exports = read_exports(ns)
    except ExportMissing as exc:
        print(escape.text(f"gpupolicy: import: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except ExportError as exc:
        print(escape.text(f"gpupolicy: import: {exc}"), file=sys.stderr)
        return EXIT_POLICY
    catalog = builtin_catalog()
    draft = build_draft([analyse(e, catalog) for e in exports], ns.name)
    out: Path = ns.out
    target = out / "policies"
    if target.exists() and any(target.iterdir()):
        if not ns.force:
            raise UsageError(f"import: {target} exists; pass --force to replace it")
        shutil.rmtree(target)
    for rel, text in draft.files().items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    try:
        diags = _validate(out)
        shown = [_line(d) for d in diags if d.severity.value in ("error", "warning")]
        valid = not has_errors(diags)
    except Exception as exc:  # a compiler bug on the draft: keep the draft and the inventory, say so
        shown, valid = [f"the compiler failed on the draft: {type(exc).__name__}: {exc}"], False
    found = findings(draft)
    (out / "INVENTORY.md").write_text(render_markdown(draft, found, shown, valid), encoding="utf-8")
    teams = len(draft.teams)
    pools = sum(len(c.pools) for c in draft.clusters)
    print(f"gpupolicy: import: {len(exports)} cluster(s), {pools} pool(s), {teams} team(s) -> {target}; "
          f"{len(found)} inventory finding(s) in {out / 'INVENTORY.md'}")
    for line in shown:
        print(f"  {escape.text(line)}", file=sys.stderr)
    if not valid:
        print("gpupolicy: import: the draft does not validate yet (see INVENTORY.md)", file=sys.stderr)
        return EXIT_POLICY
    return EXIT_OK
