"""The policy-scope unit of a run: the semantic rules over the whole policy, and REPORT.md with
allocation.json, each part stored by the process that renders it.

``compiler.pipeline.stages.compile_run`` runs them in a forked process while this one lowers
(``policy_unit``), and takes a report part itself when it would otherwise wait (``report_parts``).
"""

from __future__ import annotations

from typing import Mapping

from compiler.cache.forked import Tasks
from compiler.cache.records import DiagRecord, diag_out
from compiler.cache.store import content_digest, digest
from compiler.pipeline.run import Run
from compiler.pipeline.units import StoredFragments
from compiler.policy.graph import Policy
from compiler.report.fragments import Fragments, Pieces, recipe
from compiler.report.policy_report import REPORT_PARTS, as_bytes, in_order, policy_reports
from compiler.validate.waivers import apply_waivers


def semantic_rules(policy: Policy, run: Run) -> list[DiagRecord]:
    """The semantic rules' findings, waivers applied (their findings are kept in the store for
    explain, report and nodes: ``Run.semantic``)."""
    return [diag_out(d) for d in apply_waivers(policy, run.semantic(policy))]


def policy_unit(policy: Policy, run: Run, tasks: Tasks, fragments: StoredFragments
                ) -> tuple[list[DiagRecord], list[StoredPart] | None, list[str]]:
    """The rules' findings (``semantic_rules``), then the report parts this process takes, and
    the keys of the report fragments they read or kept (``StoredFragments``)."""
    return semantic_rules(policy, run), report_parts(policy, run, tasks, fragments), fragments.used


# A report part as the process that rendered it stored it: the digest of each of its out/ files,
# the key of the blob holding them, the bytes themselves when the run writes them, the kept
# fragments its files are made of, and each file's size (GITOPS404).
StoredPart = tuple[dict[str, str], str, "dict[str, bytes] | None", list[str], dict[str, int]]


def report_parts(policy: Policy, run: Run, tasks: Tasks, fragments: Fragments) -> list[StoredPart] | None:
    """The report parts (``REPORT_PARTS``) this process takes while any is left, each stored by
    this process (``stored_part``), or None when one cannot be rendered (as ``reports_or_none``)."""
    parts: list[StoredPart] = []
    while (part := tasks.take()) is not None:
        try:
            files = REPORT_PARTS[part](policy, fragments)
        except Exception:
            return None
        parts.append(stored_part(run, files, run.digests))
    return parts


def stored_part(run: Run, files: Mapping[str, bytes | Pieces], keep: bool) -> StoredPart:
    """Report files hashed and stored as a blob of their own by the process that rendered them,
    so that neither their bytes (29 MB at 5,000 teams, most of them allocation.json) cross from
    the rules' process nor the run hashes them after both processes are done (~0.2 s of this
    process once it had waited, bench/README.md). A file written in pieces is stored as its
    ``recipe``: the pieces the store keeps already (``StoredFragments``) by their keys, which
    spares compressing 20 MB of kept text again on each run (``Run.fetch`` joins them when the
    bytes are needed). The bytes come back only when ``keep`` (a build writes them)."""
    data = {rel: as_bytes(text) for rel, text in files.items()}
    digests = {rel: content_digest(b) for rel, b in data.items()}
    stored = {rel: text if isinstance(text, bytes) else recipe(text) for rel, text in files.items()}
    refs = [p[0] for text in stored.values() if isinstance(text, list) for p in text if isinstance(p, tuple)]
    key = digest("inline", *[x for kv in sorted(digests.items()) for x in kv], *refs)  # a recipe, one blob
    run.store.put("blob", key, stored, compress=True)
    return digests, key, data if keep else None, refs, {rel: len(b) for rel, b in data.items()}


def joined(*shares: list[StoredPart] | None) -> list[StoredPart] | None:
    """The report parts two processes rendered, or None when either could not."""
    parts: list[StoredPart] = []
    for share in shares:
        if share is None:
            return None
        parts += share
    return parts


def reports_or_none(policy: Policy) -> dict[str, bytes] | None:
    """REPORT.md and allocation.json, or None when they cannot be rendered: they are computed
    before the rules' verdict, on a policy the rules may yet reject (a policy they accept and
    this fails on is rendered again where its error is reported: ``lower_verify_emit``)."""
    try:
        return policy_reports(policy)
    except Exception:
        return None


def placed(run: Run, parts: list[StoredPart], homes: dict[str, str], pieces: list[str]) -> dict[str, str]:
    """The report files' digests in ``policy_reports``' order; where each is kept goes to
    ``homes``, the fragments their recipes name to ``pieces``, and the bytes a build writes are
    held for it (``Run.keep``)."""
    for part_digests, key, files, refs, _ in parts:
        homes.update(dict.fromkeys(part_digests, key))
        pieces += refs
        run.store.used.add(("blob", key))
        if files is not None:
            run.keep(key, files)
    return in_order({rel: d for part in parts for rel, d in part[0].items()})
