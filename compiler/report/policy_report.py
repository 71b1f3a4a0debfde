"""Stage 6, report: the allocation model as REPORT.md (people) and allocation.json (tools)."""

from __future__ import annotations

import functools
import hashlib
from json.encoder import encode_basestring_ascii
from typing import Any, Callable, Sequence, TypeVar

from compiler.emit.jsonfast import Written, dumps_pieces
from compiler.policy.allocation import TeamAllocation
from compiler.policy.cohorts import spare_capacity, spare_cohort
from compiler.policy.graph import Policy
from compiler.policy.memo import per_policy
from compiler.report.acknowledged import acknowledged_section
from compiler.report.attribution import attribution_report
from compiler.report.charts import cluster_charts
from compiler.report.cohort_tree import cohort_tree
from compiler.report.dra import dra_report
from compiler.report.fragments import Fragments, Pieces, Rendered, joined, kept_blocks
from compiler.report.gpu_facts import gpu_facts_section
from compiler.report.node_contract import contract_files
from compiler.report.priorities import priorities_section
from compiler.report.report_tables import GENERATED, SideFiles, table
from compiler.report.runtime import runtime_section
from compiler.report.serving_rows import serving_plain, serving_section, serving_written
from compiler.report.waivers import waivers_section

_T = TypeVar("_T")


@per_policy  # REPORT.md and allocation.json both print it
def policy_hash(policy: Policy) -> str:
    """sha256 over the policy files (path and text, in path order): ties out/ to a commit."""
    h = hashlib.sha256()
    for src in sorted([policy.fleet_src, *(t.src for t in policy.teams)], key=lambda s: s.path):
        h.update(src.path.encode() + b"\0" + src.text.encode() + b"\0")
    return h.hexdigest()


def _dra(policy: Policy, fragments: Fragments) -> dict[str, Any]:
    """The DRA section of both reports. It reads the fleet alone (``compiler.report.dra``;
    tests/test_rule_scopes.py), and evaluating every DeviceClass's selectors over each cluster's
    devices took each report's process 0.1-0.2 s at 5,000 teams: kept by the fleet file."""
    value: dict[str, Any] = fragments.of_fleet("dra", lambda: _dra_report(policy))
    return value


@per_policy  # both reports (read only)
def _dra_report(policy: Policy) -> dict[str, Any]:
    return dra_report(policy)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def allocation_data(policy: Policy) -> dict[str, Any]:
    return _allocation_data(policy, _teams, serving_plain(policy), Rendered())


def _allocation_data(policy: Policy, teams: Callable[[list[TeamAllocation]], Any], serving: Any,
                     fragments: Fragments) -> dict[str, Any]:
    clusters: dict[str, Any] = {}
    for cname, cluster in sorted(policy.clusters.items()):
        classes: dict[str, Any] = {}
        for cid, cls in policy.classes.get(cname, {}).items():
            entries = policy.allocation.for_class(cname, cid)
            classes[cid] = {
                "model": cls.model,
                "cut": cls.cut,
                "resource": cls.resource,
                "capacity": cls.capacity,
                "servingCapacity": cls.serving_capacity,
                "pools": [
                    {"pool": s.pool, "nodes": s.nodes, "perNode": s.per_node, "serving": s.serving}
                    for s in cls.slices
                ],
                "guaranteedTotal": policy.allocation.guaranteed_total(cname, cid),
                "teams": teams(entries),
            }
        clusters[cname] = {
            "kubernetesVersion": cluster.kubernetes_version,
            "residency": cluster.residency,
            "dra": cluster.dra,
            "classes": classes,
            # GPUs no team is guaranteed, and the Cohort lending them (null: none, or no single root)
            "unguaranteed": (spare := spare_capacity(policy, cname)),
            "unguaranteedCohort": spare_cohort(policy, cname) if spare else None,
        }

    members: dict[str, list[str]] = {}
    for t in policy.teams:
        members.setdefault(t.model.spec.department, []).append(t.name)
    return {
        "apiVersion": "gpupolicy.dev/v1alpha1",
        "kind": "Allocation",
        "serving": serving,
        "accounting": _dra(policy, fragments),
        "attribution": attribution_report(policy),
        "policySha256": policy_hash(policy),
        "sources": sorted(policy.source_paths),
        "clusters": clusters,
        "departments": {
            d.name: {"parent": d.parent, "weight": d.weight, "teams": sorted(members.get(d.name, ()))}
            for d in sorted(policy.fleet.spec.departments, key=lambda d: d.name)
        },
    }


def _teams(entries: list[TeamAllocation]) -> dict[str, Any]:
    return {e.team: _entry(e) for e in entries}


def _entry(e: TeamAllocation) -> dict[str, Any]:
    return {
        "guaranteed": e.guaranteed.as_json(),
        "borrow": e.borrow.as_json(),
        "lend": e.lend.as_json(),
        "lendable": e.lendable,
    }


_AMOUNTS = ("borrow", "guaranteed", "lend")  # _entry's keys but lendable, in sorted order
_EntryKey = tuple[Any, ...]
_VALUE = (int, type(None))


def _entry_text(e: TeamAllocation, nl: str, seen: dict[_EntryKey, str]) -> str | None:
    """``_entry(e)`` as the indenting JSON writer writes it at ``nl``, in one string, kept in
    ``seen`` for the entries alike (a few hundred kinds in 10,000 at 1,000 teams); None for a
    value of another type than the common ones, which the generic writer then handles."""
    b, g, le = amounts = (e.borrow, e.guaranteed, e.lend)
    # exact types: written as the generic writer would, and no key takes True for 1
    if not (type(b.value) in _VALUE and type(g.value) in _VALUE and type(le.value) in _VALUE
            and type(b.origin) is str and type(g.origin) is str and type(le.origin) is str):
        return None
    key = (nl, b.value, b.origin, g.value, g.origin, le.value, le.origin)
    text = seen.get(key)
    if text is None:
        i, j = nl + "  ", nl + "    "
        text = "{"
        for name, r in zip(_AMOUNTS, amounts):
            shown = '"unlimited"' if r.value is None else int.__repr__(r.value)
            text += f'{i}"{name}": {{{j}"origin": {encode_basestring_ascii(r.origin)},{j}"value": {shown}{i}}},'
        text = seen[key] = f'{text}{i}"lendable": {int.__repr__(e.lendable)}{nl}}}'  # lendable: of the key's values
    return text


def _teams_text(entries: list[TeamAllocation], nl: str, seen: dict[_EntryKey, str],
                fragments: Fragments = Rendered()) -> str | Pieces | None:
    """``_teams(entries)`` as the indenting JSON writer writes it at ``nl`` (half of
    allocation.json's bytes, ~5x faster than the generic writer), a block of teams at a time
    (``in_blocks``) kept by those teams' units; None if an entry is not ``_entry_text``'s."""
    by_team = {e.team: e for e in entries}  # a team budgeted twice: the last entry, as in _teams
    if not by_team:
        return "{}"
    if any(type(t) is not str for t in by_team):
        return None
    what = f"allocation.json {entries[0].cluster} {entries[0].gpu_class} {len(nl)}"
    texts = kept_blocks(fragments, what, sorted(by_team), _ROWS_BLOCK, str,
                        lambda block: _team_entries([by_team[team] for team in block], nl + "  ", seen))
    return None if texts is None else ["{", *joined(texts, ","), nl + "}"]


def _team_entries(entries: list[TeamAllocation], inner: str, seen: dict[_EntryKey, str]) -> str | None:
    """Consecutive teams' entries of a class's ``teams`` object, written at ``inner``."""
    parts = []
    for e in entries:
        text = _entry_text(e, inner, seen)
        if text is None:
            return None
        parts.append(f"{inner}{encode_basestring_ascii(e.team)}: {text}")
    return ",".join(parts)


# Rows per kept block of a cluster's table in REPORT.md and of a class's teams in allocation.json,
# on average: at 5,000 teams a cluster lists ~2,600 entries and a class ~650; a one-team edit
# renders a block of each instead of the whole (~4 tables and ~8 classes each time).
_ROWS_BLOCK = 256


def _written(seen: dict[_EntryKey, str], fragments: Fragments = Rendered()) -> Callable[[list[TeamAllocation]], Written]:
    """A class's teams as ``Written``: their text kept by the teams' units (an entry reads the
    fleet and its team's file alone: ``compiler.policy.allocation.build_allocation``)."""
    return lambda entries: Written(lambda: _teams(entries), lambda nl: _teams_text(entries, nl, seen, fragments))


def render_json(policy: Policy, fragments: Fragments = Rendered()) -> bytes:
    # == json.dumps(allocation_data(policy), indent=2, sort_keys=True), ~5x faster
    # (tests/test_emit_fast.py, tests/test_whole_policy_json.py)
    return "".join(_json_pieces(policy, fragments)).encode()


def _json_pieces(policy: Policy, fragments: Fragments) -> Pieces:
    data = _allocation_data(policy, _written({}, fragments), serving_written(policy, fragments), fragments)
    return [*dumps_pieces(data), "\n"]


def _team_of(e: TeamAllocation) -> str:
    return e.team


def _entry_rows(policy: Policy, cname: str, entries: Sequence[TeamAllocation]) -> str:
    """A cluster's table rows: its entries, and its classes' capacity (the fleet's)."""
    rows = []
    for e in entries:
        cap = policy.allocation.capacity.get((cname, e.gpu_class), 0)
        g = e.guaranteed.value or 0
        rows.append(f"| {e.team} | `{e.gpu_class}` | {g} ({e.guaranteed.origin}) | {_pct(g, cap)} | "
                    f"{e.borrow.show()} ({e.borrow.origin}) | {e.lend.show()} ({e.lend.origin}) |")
    return "\n".join(rows)


def render_markdown(policy: Policy, fragments: Fragments = Rendered()) -> bytes:
    return "".join(_markdown_pieces(policy, fragments)).encode()


def _markdown_pieces(policy: Policy, fragments: Fragments, side: SideFiles | None = None) -> Pieces:
    """REPORT.md; its long tables go to ``side`` when it takes them (``compiler.report.report_tables``)."""
    lines = [
        GENERATED,
        f"# GPU allocation report: fleet `{policy.fleet.metadata.name}`",
        "",
        f"Policy sha256: `{policy_hash(policy)}` over {len(policy.source_paths)} files.",
        "",
        "Values: `unlimited` = no limit; the origin says where a value came from "
        "(team file, a department default, fleet defaults, or Kueue's built-in behaviour).",
        "",
    ]
    for cname, cluster in sorted(policy.clusters.items()):
        lines += [f"## Cluster `{cname}`", "",
                  f"Kubernetes {cluster.kubernetes_version}, region `{cluster.region}`, "
                  f"residency `{cluster.residency}`, "
                  f"{'DRA' if cluster.dra else 'device plugin'} path, provisioner `{cluster.provisioner}`"
                  + "".join(f", feature gate `{g}={str(on).lower()}`"
                            for g, on in sorted(cluster.feature_gates.kubernetes.items())) + ".", ""]
        lines += ["| class | cut | resource | pools (nodes x units) | capacity | serving-reserved | guaranteed |",
                  "|---|---|---|---|---:|---:|---:|"]
        for cid, cls in policy.classes.get(cname, {}).items():
            g = policy.allocation.guaranteed_total(cname, cid)
            pools = ", ".join(f"{s.pool} {s.nodes}x{s.per_node}{' (serving)' if s.serving else ''}" for s in cls.slices)
            lines.append(f"| `{cid}` | {cls.cut} | `{cls.resource}` | {pools} | {cls.capacity} | "
                         f"{cls.serving_capacity} | {g} ({_pct(g, cls.capacity)}) |")
        lines.append("")
        lines += cluster_charts(policy, cname)
        spare = spare_capacity(policy, cname)
        if spare:
            free = ", ".join(f"`{cid}` {n}" for cid, n in sorted(spare.items()))
            holder = spare_cohort(policy, cname)
            lines += [f"Guaranteed to no team: {free}. " + (
                f"Cohort `{holder}` holds them as nominal quota: any queue below it may borrow them "
                "within its borrowing limit." if holder else
                "The cluster's queues sit under several root departments, so no queue can borrow them "
                "(KUEUE007)."), ""]
        entries = policy.allocation.for_cluster(cname)
        if entries:
            head = ["| team | class | guaranteed | share | borrow up to | lend up to |", "|---|---|---:|---:|---:|---:|"]
            rows = kept_blocks(fragments, f"REPORT.md {cname}", entries, _ROWS_BLOCK, _team_of,
                               functools.partial(_entry_rows, policy, cname)) or []
            lines += table(side, f"cluster.{cname}", f"Cluster `{cname}`: the teams' budgets", head, rows, len(entries))
            lines.append("")
    lines += ["## Cohort tree", "", *cohort_tree(policy), ""]
    lines += priorities_section(policy, fragments, side)
    lines += serving_section(policy, fragments)
    lines += _accounting_section(policy, fragments)
    lines += _attribution_section(policy)
    lines += runtime_section(policy)
    lines += gpu_facts_section(policy)
    lines += acknowledged_section(policy)
    lines += waivers_section(policy)
    return joined(lines, "\n")


def _accounting_section(policy: Policy, fragments: Fragments) -> list[str]:
    lines = ["## GPU accounting path per cluster", ""]
    for cluster, entry in sorted(_dra(policy, fragments).items()):
        lines.append(f"- **{cluster}**: `{entry['path']}`")
        lines += [f"  - {why}" for why in entry.get("why", [])]
        for name, info in sorted(entry.get("driverClasses", {}).items()):
            lines.append(f"  - driver class `{name}` matches {info['matches']} devices: {info['note']}")
    lines.append("")
    return lines


def _attribution_section(policy: Policy) -> list[str]:
    required = ", ".join(f"`{k}`" for k in policy.fleet.spec.admission.required_labels)
    lines = ["## Who held which GPU (audit attribution)", "",
             f"Admission requires {required} and `kueue.x-k8s.io/queue-name` on every GPU workload; Kueue copies "
             "the labels to its Workloads (`labelKeysToCopy`); the DCGM exporter attaches them to GPU metrics only "
             "where the table says yes.",
             "", "| cluster | class | per-pod GPU metrics | why |", "|---|---|---|---|"]
    for cluster, entry in attribution_report(policy).items():
        for cid, info in entry["classes"].items():
            lines.append(f"| {cluster} | `{cid}` | {'yes' if info['perPodMetrics'] else '**no**'} | {info['reason']} |")
    lines.append("")
    return lines


def _markdown_part(policy: Policy, fragments: Fragments) -> dict[str, bytes | Pieces]:
    side: SideFiles = {}
    report = _markdown_pieces(policy, fragments, side)
    return {"REPORT.md": report, **side, **contract_files(policy)}


def _json_part(policy: Policy, fragments: Fragments) -> dict[str, bytes | Pieces]:
    return {"allocation.json": _json_pieces(policy, fragments)}


# The reports in parts that two processes may share (compiler.pipeline.stages), the larger first,
# so that the process free first takes it: allocation.json (23 MB at 5,000 teams, hashed and
# compressed by the process that renders it: ~0.5 s after a one-team edit), then REPORT.md with the
# node contracts (~0.35 s). The other order left this process rendering allocation.json ~0.15 s
# after the rules' process had finished.
REPORT_PARTS: tuple[Callable[[Policy, Fragments], dict[str, bytes | Pieces]], ...] = (_json_part, _markdown_part)


def in_order(files: dict[str, _T]) -> dict[str, _T]:
    """The parts' files (or their digests) in ``policy_reports``' order, however they were put
    together."""
    first = [name for name in ("REPORT.md", "allocation.json") if name in files]
    return {**{name: files[name] for name in first}, **{k: v for k, v in files.items() if k not in first}}


def policy_reports(policy: Policy, fragments: Fragments = Rendered()) -> dict[str, bytes]:
    """The ``out/`` files that describe the whole policy: REPORT.md, allocation.json and the
    node contracts of clusters without Karpenter (``out/reports/``)."""
    files: dict[str, bytes] = {}
    for part in REPORT_PARTS:
        files.update((rel, as_bytes(text)) for rel, text in part(policy, fragments).items())
    return in_order(files)


def as_bytes(text: bytes | Pieces) -> bytes:
    """A report part's file as it is written."""
    return text if isinstance(text, bytes) else "".join(text).encode()
