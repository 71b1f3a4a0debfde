"""The draft policy: one fleet file and one file per team, merged over the imported clusters, with a
``guessed:`` comment on every value the exports did not state."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from compiler import escape
from compiler.model.common import API_VERSION
from compiler.policy.cuts import CUT_MODES, ISOLATION_LEVELS
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_TEAM
from compiler.tools.cluster_import.changes import Change, draft_changes
from compiler.tools.cluster_import.cluster import BudgetDraft, ClusterDraft, link
from compiler.tools.cluster_import.pools import dns_label

UNASSIGNED = "unassigned"
DEFAULT_DATA_CLASS = "internal"


@dataclass
class TeamDraft:
    name: str
    department: str | None = None
    weight: float | None = None
    namespaces: dict[str, set[str]] = field(default_factory=dict)  # namespace -> clusters
    budgets: list[BudgetDraft] = field(default_factory=list)
    data_classes: set[str] = field(default_factory=set)
    notes: dict[str, str] = field(default_factory=dict)


@dataclass
class Draft:
    fleet: CommentedMap
    teams: dict[str, CommentedMap]
    team_drafts: dict[str, TeamDraft]
    clusters: list[ClusterDraft]
    notes: list[str] = field(default_factory=list)  # merge conflicts and other remarks for the report
    changes: list[Change] = field(default_factory=list)  # what the draft does not reproduce (``changes``)

    def files(self) -> dict[str, str]:
        out = {"policies/fleet.yaml": render(self.fleet, "fleet")}
        for name, doc in sorted(self.teams.items()):
            out[f"policies/teams/{name}.yaml"] = render(doc, "team")
        return out


def _cm(data: dict[str, Any], notes: dict[str, str] | None = None) -> CommentedMap:
    m = CommentedMap()
    for k, v in data.items():
        if v is None:
            continue
        m[k] = _conv(v)
    for k, text in (notes or {}).items():
        if k in m:
            m.yaml_add_eol_comment(escape.text(f"guessed: {text}"), k)
    return m


def _conv(v: Any) -> Any:
    if isinstance(v, CommentedMap | CommentedSeq):
        return v
    if isinstance(v, dict):
        return _cm(v)
    if isinstance(v, list):
        seq = CommentedSeq(_conv(x) for x in v)
        if all(not isinstance(x, dict | list) for x in v):
            seq.fa.set_flow_style()
        return seq
    return v


def render(doc: CommentedMap, kind: str) -> str:
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(doc, buf)
    schema = "../schemas/fleet.schema.json" if kind == "fleet" else "../../schemas/team.schema.json"
    head = (f"# yaml-language-server: $schema={schema}\n"
            "# Draft written by `gpupolicy import` from kubectl exports: review every `guessed:` comment.\n")
    return head + buf.getvalue()


def _weight(w: float | None) -> float | int | None:
    if w is None or w == 1:
        return None
    return int(w) if float(w).is_integer() else w


def _departments(clusters: list[ClusterDraft], notes: list[str]) -> list[CommentedMap]:
    depts: dict[str, dict[str, Any]] = {}
    for cd in clusters:
        for co in cd.kueue.cohorts.values():
            name = dns_label(co.name, "cohort")
            entry = {"name": name, "parent": dns_label(co.parent, "cohort") if co.parent else None,
                     "weight": _weight(co.weight)}
            old = depts.setdefault(name, entry)
            if old != entry:
                notes.append(f"cohort {co.name} differs between clusters ({old} vs {entry} on {cd.name}); "
                             "the first is kept")
        for q in cd.kueue.queues.values():
            for dept in [q.cohort] if q.cohort else []:
                depts.setdefault(dns_label(dept, "cohort"), {"name": dns_label(dept, "cohort")})
    for d in list(depts.values()):
        if d.get("parent") and d["parent"] not in depts:
            depts[d["parent"]] = {"name": d["parent"]}
    return [_cm(d) for d in depts.values()]


def _teams(clusters: list[ClusterDraft]) -> dict[str, TeamDraft]:
    teams: dict[str, TeamDraft] = {}
    owner_of_ns: dict[tuple[str, str], str] = {}
    for cd in clusters:
        for q in cd.kueue.queues.values():
            t = teams.setdefault(dns_label(q.name, "team"), TeamDraft(dns_label(q.name, "team")))
            dept = dns_label(q.cohort, "cohort") if q.cohort else UNASSIGNED
            if t.department is None:
                t.department = dept
            t.weight = t.weight if t.weight is not None else q.weight
            for ns in q.namespaces:
                if (cd.name, ns) in owner_of_ns:
                    continue  # two queues claim it: reported by the inventory
                owner_of_ns[(cd.name, ns)] = t.name
                t.namespaces.setdefault(ns, set()).add(cd.name)
        for b in cd.budgets:
            teams[b.team].budgets.append(b)
        # GPU namespaces no queue selects: training or unclassified pods make a training namespace
        for pod in cd.pods:
            if (cd.name, pod.namespace) in owner_of_ns or pod.role == "serving":
                continue
            name = dns_label(pod.labels.get(LABEL_TEAM) or pod.namespace, "team")
            t = teams.setdefault(name, TeamDraft(name))
            if t.department is None:
                t.department = UNASSIGNED
                t.notes["department"] = "no Kueue ClusterQueue for this team; put it in a department"
            t.notes.setdefault("namespaces", "GPU pods ran here without a queue; gpupolicy adds a LocalQueue")
            owner_of_ns[(cd.name, pod.namespace)] = name
            t.namespaces.setdefault(pod.namespace, set()).add(cd.name)
        for pod in cd.pods:
            team = owner_of_ns.get((cd.name, pod.namespace))
            dc = pod.labels.get(LABEL_DATA_CLASS)
            if team is not None and dc and dc == dns_label(dc, ""):
                teams[team].data_classes.add(dc)
    for name in [n for n, t in teams.items() if not t.namespaces]:
        del teams[name]  # reported by the inventory: a queue that admits no namespace is no team yet
    return teams


def _isolation(t: TeamDraft) -> tuple[str, str | None]:
    cuts = {b.cut for b in t.budgets}
    if not cuts:
        return "isolated", "no budget says which cuts the team uses"
    level = min(ISOLATION_LEVELS.index(CUT_MODES[c].isolation) for c in cuts)
    return ISOLATION_LEVELS[level], f"the strictest need its budgets' cuts ({', '.join(sorted(cuts))}) satisfy"


def _budget(b: BudgetDraft) -> CommentedMap:
    data = {"cluster": b.cluster, "class": b.cls, "guaranteed": b.guaranteed,
            "borrow": "unlimited" if b.borrow is None else b.borrow,
            "lend": "unlimited" if b.lend is None else b.lend}
    m = _cm(data)
    if b.note:
        m.yaml_add_eol_comment(escape.text(b.note), "class")
    return m


def _team_doc(t: TeamDraft) -> CommentedMap:
    isolation, why = _isolation(t)
    notes = {"owners": "replace with the team's GitHub team", **t.notes}
    if why:
        notes["isolation"] = why
    data_classes = sorted(t.data_classes)
    if not data_classes:
        data_classes = [DEFAULT_DATA_CLASS]
        notes["dataClasses"] = f"no pod carried {LABEL_DATA_CLASS}"
    spec = {
        "owners": [f"@your-org/{t.name}"],
        "department": t.department or UNASSIGNED,
        "isolation": isolation,
        "dataClasses": data_classes,
        "fairShareWeight": _weight(t.weight),
        "namespaces": [_cm({"name": ns, "clusters": sorted(cl)}) for ns, cl in sorted(t.namespaces.items())],
        "budgets": [_budget(b) for b in sorted(t.budgets, key=lambda b: (b.cluster, b.cls))] or None,
    }
    if not t.budgets:
        notes["department"] = "; ".join(n for n in (notes.get("department"), "no quota found: add budgets") if n)
    return _cm({"apiVersion": API_VERSION, "kind": "Team", "metadata": {"name": t.name},
                "spec": _cm(spec, notes)})


def _cluster_doc(cd: ClusterDraft) -> CommentedMap:
    pools = []
    for p in cd.pools:
        pools.append(_cm(p.policy_dict(), {k: v for k, v in p.notes.items() if not k.startswith("_")}))
    data = {"name": cd.name, "kubernetesVersion": f"1.{cd.kube_minor}",
            "apiServer": f"https://{cd.name}.k8s.example.invalid:6443", "region": cd.region,
            "residency": cd.residency, "provisioner": None if cd.provisioner == "none" else cd.provisioner,
            "dra": True if cd.dra else None, "multikueue": cd.multikueue, "pools": pools or None}
    notes = {"apiServer": "the export does not name the API server", **cd.notes}
    m = _cm(data, notes)
    if cd.unknown:
        key = "pools" if "pools" in m else "name"
        names = ", ".join(f"{p.name} ({p.product})" for p in cd.unknown)
        m.yaml_add_eol_comment(escape.text(f"not imported, GPU product unknown to the catalog: {names} "
                                           "(see INVENTORY.md)"), key)
    return m


def build_draft(clusters: list[ClusterDraft], fleet_name: str = "imported") -> Draft:
    link(clusters)
    notes: list[str] = []
    teams = _teams(clusters)
    depts = _departments(clusters, notes)
    if any(t.department == UNASSIGNED for t in teams.values()) or not depts:
        depts.append(_cm({"name": UNASSIGNED}))
    priorities: dict[str, dict[str, Any]] = {}
    for cd in clusters:
        for tier in cd.kueue.priorities:
            old = priorities.setdefault(tier["name"], tier)
            if old["value"] != tier["value"]:
                notes.append(f"WorkloadPriorityClass {tier['name']} has value {tier['value']} on {cd.name}, "
                             f"{old['value']} elsewhere; {old['value']} kept")
    data_classes = sorted({dc for t in teams.values() for dc in t.data_classes} | (
        {DEFAULT_DATA_CLASS} if any(not t.data_classes for t in teams.values()) or not teams else set()))
    spec = {
        "platform": _cm({"owners": ["@your-org/platform"]}, {"owners": "replace with the platform team"}),
        "gitops": _cm({"repoUrl": "https://git.example.invalid/gpu-policy.git"},
                      {"repoUrl": "the repository ArgoCD syncs out/ from"}),
        "clusters": [_cluster_doc(cd) for cd in clusters],
        "departments": depts,
        "priorities": [_cm(p) for p in priorities.values()] or None,
        "dataClasses": [_cm({"name": d}) for d in data_classes],
    }
    spec_map = _cm(spec)
    spec_map.yaml_add_eol_comment("guessed: no residency known; restrict where each class may be handled",
                                  "dataClasses")
    fleet = _cm({"apiVersion": API_VERSION, "kind": "Fleet", "metadata": {"name": dns_label(fleet_name, "imported")},
                 "spec": spec_map})
    draft = Draft(fleet, {n: _team_doc(t) for n, t in teams.items()}, teams, clusters, notes)
    draft.changes, kept = draft_changes(draft)
    draft.notes += kept
    return draft
