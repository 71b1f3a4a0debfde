"""``gpupolicy audit``: exports in, ledger and report out (never into the compiler's ``out/``).

``audit_workloads`` is the core over an iterator of Workload objects (streamed from the export);
``run`` does the I/O. Exit 0 with the report written (findings are evidence, not failures), 1 for
an unreadable export or a policy that does not validate, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from compiler import escape
from compiler.cli.render import format_parsable
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, EXIT_USAGE, UsageError, exit_code
from compiler.pipeline.options import Options
from compiler.pipeline.run import validated_policy
from compiler.tools.audit.context import PolicyView, empty_view, policy_view
from compiler.tools.audit.findings import Finding, is_gpu_pod, pod_findings, workload_findings
from compiler.tools.audit.ledger import Row, mark_borrowing, resolve_preemptors, rows_of, usage_curves
from compiler.tools.audit.metrics import read_window
from compiler.tools.audit.render import ledger_csv, markdown, ts
from compiler.tools.audit.waits import Wait, waits_of
from compiler.tools.audit.workloads import parse_time, workload_facts
from compiler.tools.kube_export import ExportError, ExportMissing, iter_items

PROGRESS_EVERY = 10_000


@dataclass
class Audit:
    rows: list[Row] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # located: amounts kept with a doubt (fractions of a GPU)
    workloads: int = 0
    now: datetime | None = None


def audit_workloads(items: Iterable[dict[str, Any]], source: str, view: PolicyView,
                    pods: list[dict[str, Any]] | None = None, now: datetime | None = None,
                    progress: Any = None) -> Audit:
    out = Audit()
    by_uid: dict[str, tuple[str, str]] = {}
    owners: set[str] = set()
    latest: datetime | None = None
    for i, obj in enumerate(items):
        w = workload_facts(obj, source, i, view.required_labels)
        rows = rows_of(w, view)
        out.rows += rows
        out.warnings += w.warnings
        out.findings += workload_findings(rows[0], view)
        if w.uid:
            by_uid[w.uid] = (w.key, rows[0].team)
        if w.owner_uid:
            owners.add(w.owner_uid)
        for t in [w.created, *(c.at for c in w.conditions.values())]:
            if t is not None and (latest is None or t > latest):
                latest = t
        out.workloads = i + 1
        if progress is not None and out.workloads % PROGRESS_EVERY == 0:
            progress(out.workloads)
    out.now = now or latest
    resolve_preemptors(out.rows, by_uid)
    curves = usage_curves(out.rows)
    mark_borrowing(out.rows, view, curves)
    for r in out.rows:
        out.waits += waits_of(r, view, curves, out.now)
    if pods:
        out.findings += pod_findings(pods, view, owners)
    return out


def _view(ns: argparse.Namespace) -> tuple[PolicyView, str]:
    policy_dir = ns.policies if ns.policies is not None else ns.root / "policies"
    if not policy_dir.is_dir():
        if ns.policies is not None:
            raise UsageError(f"audit: policy directory {policy_dir} does not exist")
        return empty_view(ns.cluster or "unknown"), "none (no policies/ here: only label findings)"
    policy, diags = validated_policy(Options(root=ns.root, policy_dir=policy_dir, out_dir=ns.root / "out",
                                             verify=False))
    if policy is None or exit_code(diags) != EXIT_OK:
        format_parsable(diags, ns.root, sys.stderr, False)  # policy text escaped for the terminal
        raise _PolicyFailed(f"audit: the policies in {policy_dir} do not validate; fix them or pass --policies")
    cluster = ns.cluster
    if cluster is None:
        if len(policy.clusters) != 1:
            raise UsageError(f"audit: pass --cluster (one of {', '.join(sorted(policy.clusters))})")
        cluster = next(iter(policy.clusters))
    if cluster not in policy.clusters:
        raise UsageError(f"audit: no cluster {cluster!r} in the policy (known: {', '.join(sorted(policy.clusters))})")
    return policy_view(policy, cluster), str(policy_dir)


class _PolicyFailed(Exception):
    pass


def _check_out(out: Path, root: Path) -> None:
    compiled = os.path.realpath(root / "out")
    target = os.path.realpath(out)
    if target == compiled or target.startswith(compiled + os.sep):
        raise UsageError(f"audit: --out {out} is inside the compiler's out/ (ArgoCD syncs it); pick another directory")


def run(ns: argparse.Namespace) -> int:
    if ns.out is not None:
        _check_out(ns.out, ns.root)
    now = parse_time(ns.now) if ns.now else None
    if ns.now and now is None:
        raise UsageError(f"audit: --now {ns.now!r} is not an ISO 8601 time")
    if (ns.metrics_before is None) != (ns.metrics_after is None):
        print("gpupolicy: audit: only one metric window given: the other side reports no number", file=sys.stderr)
    try:
        view, policy_src = _view(ns)
        pods = [p for p in iter_items(ns.pods, ["Pod"]) if is_gpu_pod(p)] if ns.pods else None
        tty = sys.stderr.isatty()

        def progress(n: int) -> None:
            if tty:
                print(f"\rgpupolicy: audit: {n:,} workloads read", end="", file=sys.stderr, flush=True)

        result = audit_workloads(iter_items(ns.workloads, ["Workload"]), str(ns.workloads), view, pods, now, progress)
        if tty and result.workloads >= 10_000:
            print(file=sys.stderr)
        before = read_window(ns.metrics_before, view) if ns.metrics_before else None
        after = read_window(ns.metrics_after, view) if ns.metrics_after else None
    except ExportMissing as exc:
        print(escape.text(f"gpupolicy: audit: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except ExportError as exc:
        print(escape.text(f"gpupolicy: audit: {exc}"), file=sys.stderr)
        return EXIT_POLICY
    except _PolicyFailed as exc:
        print(escape.text(f"gpupolicy: {exc}"), file=sys.stderr)
        return EXIT_POLICY
    for w in result.warnings:
        print(escape.text(f"gpupolicy: audit: warning: {w}"), file=sys.stderr)
    meta = {"workloads export": str(ns.workloads), "policy": policy_src, "cluster": view.cluster,
            "export time": ts(result.now) or "unknown"}
    report = markdown(result.rows, result.waits, result.findings, before, after, meta, result.warnings)
    if ns.out is None:
        sys.stdout.write(report)
    else:
        ns.out.mkdir(parents=True, exist_ok=True)
        (ns.out / "ledger.csv").write_text(ledger_csv(result.rows), encoding="utf-8")
        (ns.out / "AUDIT.md").write_text(report, encoding="utf-8")
        print(f"gpupolicy: audit: {result.workloads} workloads, {len(result.rows)} ledger rows, "
              f"{len(result.findings)} findings -> {ns.out / 'ledger.csv'}, {ns.out / 'AUDIT.md'}", file=sys.stderr)
    return EXIT_OK
