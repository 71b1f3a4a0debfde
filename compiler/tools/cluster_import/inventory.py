"""The inventory report: what runs where, and the dangerous state the seed names (training and
serving on the same nodes, GPU pods without team/model/data-class labels, GPU namespaces in no
queue, time-sliced GPUs shared between teams, quotas above capacity), plus unknown GPU products
with how to add them to the catalog and everything the draft could not express."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from compiler import escape
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_TEAM
from compiler.tools.cluster_import.cluster import ClusterDraft
from compiler.tools.cluster_import.draft import Draft
from compiler.tools.cluster_import.pools import PoolDraft, dns_label

REQUIRED = (LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS)


@dataclass(frozen=True)
class Finding:
    cluster: str
    kind: str  # mixed-nodes | unlabelled-pods | no-queue | shared-across-teams | over-capacity | unknown-gpu | ...
    message: str
    hint: str = ""
    code: str = ""  # a snippet to paste, shown as code after the hint


def _mixed(cd: ClusterDraft) -> list[Finding]:
    roles: dict[str, set[str]] = defaultdict(set)
    for p in cd.pods:
        if p.node and p.active:
            roles[p.node].add(p.role)
    out = [Finding(cd.name, "mixed-nodes", f"node {node}: training and serving pods run side by side",
                   "reserve serving pools (serving: true): gpupolicy taints them and keeps Kueue flavors off them")
           for node, r in sorted(roles.items()) if {"training", "serving"} <= r]
    pools = cd.node_pool()
    for node, r in sorted(roles.items()):
        pool = pools.get(node)
        if "serving" in r and pool is not None and not pool.serving and "training" not in r:
            out.append(Finding(cd.name, "serving-unreserved", f"node {node} (pool {pool.name}) serves but is not "
                               "reserved for serving: training can land on it",
                               f"mark pool {pool.name} serving: true, or move serving to a reserved pool"))
    return out


def _unlabelled(cd: ClusterDraft) -> list[Finding]:
    missing: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in cd.pods:
        for label in REQUIRED:
            if label not in p.labels:
                missing[p.namespace][label] += 1
    return [Finding(cd.name, "unlabelled-pods",
                    f"namespace {ns}: GPU pods without " + ", ".join(f"{k} ({n})" for k, n in sorted(m.items())),
                    "gpupolicy's admission policy rejects GPU pods without these labels: label the jobs first")
            for ns, m in sorted(missing.items())]


def _no_queue(cd: ClusterDraft) -> list[Finding]:
    queued = cd.kueue.queue_of_namespace()
    roles: dict[str, set[str]] = defaultdict(set)
    for p in cd.pods:
        roles[p.namespace].add(p.role)
    out = []
    for ns, r in sorted(roles.items()):
        if ns in queued:
            continue
        if r == {"serving"}:
            out.append(Finding(cd.name, "serving-namespace", f"namespace {ns}: serving pods outside Kueue",
                               "declare the deployment under the team's serving: (not imported by the draft)"))
        else:
            out.append(Finding(cd.name, "no-queue", f"namespace {ns}: GPU pods ({', '.join(sorted(r))}) but no "
                               "LocalQueue or ClusterQueue selects it: whoever applies first holds the cards",
                               "the draft makes it a training namespace; give its team a budget"))
    claimed: dict[str, list[str]] = defaultdict(list)
    for q in cd.kueue.queues.values():
        for ns in q.namespaces:
            claimed[ns].append(q.name)
    out += [Finding(cd.name, "no-namespace", f"ClusterQueue {q.name} admits no namespace (no name selector, no "
                    "LocalQueue): not imported as a team", "give it a namespace, or drop it")
            for q in cd.kueue.queues.values() if not q.namespaces]
    out += [Finding(cd.name, "two-queues", f"namespace {ns} is selected by ClusterQueues {', '.join(qs)}",
                    f"the draft gives it to {qs[0]}") for ns, qs in sorted(claimed.items()) if len(qs) > 1]
    return out


def _shared(cd: ClusterDraft) -> list[Finding]:
    pools = cd.node_pool()
    teams: dict[str, set[str]] = defaultdict(set)
    queued = cd.kueue.queue_of_namespace()
    for p in cd.pods:
        pool = pools.get(p.node or "")
        if pool is not None and pool.cut.get("mode") in ("timeslicing", "mps") and p.active:
            teams[p.node or ""].add(p.labels.get(LABEL_TEAM) or queued.get(p.namespace) or p.namespace)
    return [Finding(cd.name, "shared-across-teams", f"node {node} ({pools[node].cut['mode']}): GPUs shared by teams "
                    f"{', '.join(sorted(t))}: no memory or fault isolation between them",
                    "give teams that need isolation MIG or full-card budgets (isolation: isolated/exclusive)")
            for node, t in sorted(teams.items()) if len(t) > 1]


def _capacity(cd: ClusterDraft) -> list[Finding]:
    if cd.multikueue and cd.multikueue.get("role") == "manager":
        return []
    total: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for b in cd.budgets:
        total[b.cls].append((b.team, b.guaranteed))
    out = []
    for cls, entries in sorted(total.items()):
        cap, want = cd.capacity(cls), sum(n for _, n in entries)
        if want > cap:
            who = ", ".join(f"{t} {n}" for t, n in entries)
            out.append(Finding(cd.name, "over-capacity", f"{cls}: queues guarantee {want} ({who}) but the training "
                               f"pools hold {cap}", "the draft keeps the quotas; gpupolicy validate reports KUEUE001 "
                               "until guarantees fit the hardware"))
    return out


def catalog_hint(pool: PoolDraft) -> tuple[str, str]:
    """How to add an unknown GPU product: the advice and the fleet.yaml snippet."""
    mib = pool.memory_mib if pool.memory_mib and pool.memory_mib.isdigit() else None
    memory = f"memoryMiB: {mib}, " if mib else ""
    gib = f"{round(int(mib) / 1024)}" if mib else "<GiB>"
    key = dns_label((pool.product or "my-gpu").lower().removeprefix("nvidia-"), "my-gpu")
    return ("add under spec.catalog in fleet.yaml (the GFD label is the product name with spaces as '-'), then add "
            "the pool:", f"{key}: {{displayName: ..., architecture: ..., computeCapability: ..., memoryGiB: {gib}, "
            f"{memory}productName: <nvidia-smi name>, source: ...}}")


def _unknown(cd: ClusterDraft) -> list[Finding]:
    return [Finding(cd.name, "unknown-gpu", f"{p.nodes} node(s) ({', '.join(p.node_names[:3])}"
                    f"{', ...' if p.nodes > 3 else ''}) report nvidia.com/gpu.product={p.product!r}, "
                    "unknown to the GPU catalog: pool not written", *catalog_hint(p)) for p in cd.unknown]


def findings(draft: Draft) -> list[Finding]:
    out: list[Finding] = []
    for cd in draft.clusters:
        for check in (_unknown, _mixed, _unlabelled, _no_queue, _shared, _capacity):
            out += check(cd)
        out += [Finding(cd.name, "pool", f"pool {p.name}: {x}") for p in cd.pools for x in p.problems]
        out += [Finding(cd.name, "cluster", x) for x in cd.problems]
        out += [Finding(cd.name, "not-imported", x) for x in cd.kueue.unexpressed]
    out += [Finding(c.cluster, c.kind, c.message, c.hint) for c in draft.changes]
    return out


def _cell(s: object) -> str:
    """A table cell from the exports: a plain name as it is, anything else as code (``escape``)."""
    return escape.md_name(str(s), table=True) if str(s) else "-"


def _finding(f: Finding) -> str:
    line = f"- **{escape.md_text(f.kind)}** ({escape.md_name(f.cluster)}): {escape.md_text(f.message)}"
    if f.hint:
        line += f" — {escape.md_text(f.hint)}"
    if f.code:
        line += f" {escape.md_code(f.code)}"
    return line


def render_markdown(draft: Draft, found: list[Finding], diagnostics: list[str], valid: bool) -> str:
    """INVENTORY.md. Every string from the exports (names, labels, messages quoting them) and from the
    draft's diagnostics is escaped for markdown (``compiler.escape``): nothing in an export renders."""
    lines = ["# Inventory (gpupolicy import)", ""]
    for cd in draft.clusters:
        gpus = sum(p.nodes * p.gpus_per_node for p in cd.pools + cd.unknown)
        lines += [f"## Cluster {escape.md_name(cd.name)}", "",
                  f"Kubernetes 1.{cd.kube_minor}, {'DRA' if cd.dra else 'device plugin'}, provisioner "
                  f"{cd.provisioner}; {len(cd.facts)} nodes, {gpus} GPUs, {len(cd.pods)} GPU pods, "
                  f"{len(cd.kueue.queues)} ClusterQueues.", "",
                  "| pool | GPU product | model | nodes | GPUs/node | cut | serving | classes |",
                  "|---|---|---|---|---|---|---|---|"]
        for p in cd.pools + cd.unknown:
            cut = ", ".join(f"{k}={v}" for k, v in p.cut.items() if k != "devices") + (" (per-device)" if
                                                                                        "devices" in p.cut else "")
            classes = ", ".join(_cell(c.id) for c in p.classes) or "-"
            lines.append(f"| {_cell(p.name)} | {_cell(p.product or '')} | "
                         f"{_cell(p.model) if p.model else '**unknown**'} | {p.nodes} | "
                         f"{p.gpus_per_node} | {_cell(cut)} | {'yes' if p.serving else 'no'} | {classes} |")
        lines.append("")
        if cd.budgets:
            lines += ["| team | class | guaranteed | borrow | lend | capacity |", "|---|---|---|---|---|---|"]
            for b in sorted(cd.budgets, key=lambda b: (b.cls, b.team)):
                lines.append(f"| {_cell(b.team)} | {_cell(b.cls)} | {b.guaranteed} | "
                             f"{'unlimited' if b.borrow is None else b.borrow}"
                             f" | {'unlimited' if b.lend is None else b.lend} | {cd.capacity(b.cls)} |")
            lines.append("")
    lines += ["## Dangerous state and gaps", ""]
    if not found:
        lines.append("None found.")
    lines += [_finding(f) for f in found]
    lines += ["", "## The draft", ""]
    lines += [f"- {escape.md_text(n)}" for n in draft.notes]
    lines.append("- every value the exports did not state carries a `guessed:` comment in the YAML")
    lines.append("- the draft validates with `gpupolicy validate`" if valid else
                 "- the draft does **not** validate yet: fix the errors below (quotas were kept as exported)")
    if diagnostics:
        lines += ["", "`gpupolicy validate` on the draft:", "",
                  escape.md_fence("\n".join(escape.text(d) for d in diagnostics))]
    return "\n".join(lines) + "\n"
