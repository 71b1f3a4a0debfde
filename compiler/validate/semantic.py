"""Stage 2b: cross-object rules over the whole policy graph (SPEC §6).

Each rule is defined next to its check with an ID, a one-line summary and PASS/FAIL examples.
Checks are pure functions of the ``Policy`` and yield located diagnostics.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterator

from compiler.diagnostics import did_you_mean
from compiler.load.source import SourceFile, YamlPath
from compiler.policy.classes import ISOLATION_ALLOWS, ISOLATION_TABLE
from compiler.validate.admission import check_admission
from compiler.diagnostics import Diagnostic, Severity
from compiler.dra.rules import check_dra
from compiler.policy.gitops_names import check_gitops
from compiler.policy.multikueue_topology import check_multikueue, is_manager
from compiler.policy.graph import Policy, serving_namespace
from compiler.rules import define
from compiler.serving.checks import check_serving
from compiler.validate.capacity import check_capacity, check_department_caps

DUPLICATE = define(
    "FLEET001", "Names are unique within their kind (clusters, pools of a cluster, departments, "
    "priorities, data classes, namespaces of a team).",
    "clusters:\n- name: onprem\n- name: cloud", "clusters:\n- name: onprem\n- name: onprem")
UNKNOWN_REF = define(
    "FLEET002", "Every reference names something that exists: cluster, pool, GPU class, department, "
    "priority, data class, GPU model.",
    "department: research   # declared in fleet.yaml", "department: reserch")
TEAM_FILE = define(
    "FLEET003", "A team file is named after the team it defines (teams/<team>.yaml), and each team "
    "is defined once.",
    "# teams/vision.yaml\nmetadata:\n  name: vision", "# teams/vision.yaml\nmetadata:\n  name: nlp")
NAMESPACE_CLAIM = define(
    "FLEET004", "A namespace belongs to one team and one purpose on each cluster; system namespaces "
    "belong to nobody.",
    "# vision: vision-train, nlp: nlp-train", "# vision and nlp both list namespace shared-train")
DEPT_CYCLE = define(
    "FLEET005", "Departments form a tree: no department is its own ancestor.",
    "- name: ai\n- name: vision\n  parent: ai", "- name: a\n  parent: b\n- name: b\n  parent: a")
RESIDENCY = define(
    "FLEET006", "A data class is only handled on clusters whose residency it allows.",
    "# pii allows [eu]; budget on cluster with residency eu",
    "# pii allows [eu]; team with pii budgets on cluster with residency us")
PRIORITY_DEFAULT = define(
    "FLEET007", "At most one priority tier is the default, and priority values are distinct.",
    "- {name: high, value: 1000}\n- {name: low, value: 100, default: true}",
    "- {name: high, value: 100, default: true}\n- {name: low, value: 100, default: true}")
ISOLATION = define(
    "FLEET009", "A team's budgets use only cuts its isolation allows (shared: any; isolated: MIG or "
    "full; exclusive: full cards).",
    "isolation: isolated\nbudgets:\n- {cluster: onprem, class: a100-80gb-mig-3g.40gb}",
    "isolation: exclusive\nbudgets:\n- {cluster: cloud, class: l4-ts4}")
FLAVOR_SELECT = define(
    "FLEET010", "Every GPU class can be selected by node labels: a class on several pools needs pools "
    "that carry one class each.",
    "# class h100 on pools h100-a and h100-b, both full-card",
    "# class a100-80gb-mig-1g.10gb on two pools cut all-balanced (three classes per node)")
IDLE_NAMESPACE = define(
    "FLEET011", "A team namespace on a cluster where the team has no budget gets no queue.",
    "namespaces:\n- {name: ml-train, clusters: [onprem]}\nbudgets:\n- {cluster: onprem, class: h100, guaranteed: 2}",
    "namespaces:\n- {name: ml-train, clusters: [cloud]}   # no budget on cloud",
    Severity.WARNING)
SERVING_ONLY = define(
    "FLEET012", "Training budgets name classes Kueue can reach: a class whose pools are all reserved "
    "for serving cannot be budgeted.",
    "budgets:\n- {cluster: onprem, class: h100, guaranteed: 4}",
    "budgets:\n- {cluster: onprem, class: h200, guaranteed: 4}   # h200 pool is serving: true")
TS_RENAME = define(
    "FLEET013", "Shared cuts advertise `nvidia.com/gpu.shared` (renameByDefault: true) so a share "
    "never satisfies a full-card request.",
    "cut: {mode: timeslicing, replicas: 4}", "cut: {mode: timeslicing, replicas: 4, renameByDefault: false}",
    Severity.WARNING)
KARPENTER = define(
    "FLEET014", "Karpenter settings appear only on pools of clusters provisioned by Karpenter, and every "
    "such pool has them.",
    "provisioner: karpenter\npools:\n- karpenter: {nodeClass: gpu}", "provisioner: none\npools:\n- karpenter: {nodeClass: gpu}")
BUDGET_TWICE = define(
    "KUEUE005", "A team lists each (cluster, class) budget once.",
    "- {cluster: onprem, class: h100}\n- {cluster: cloud, class: h100}",
    "- {cluster: onprem, class: h100}\n- {cluster: onprem, class: h100}")
DRA_VERSION = define(
    "DRA001", "DRA (resource.k8s.io/v1) needs Kubernetes 1.34 or newer.",
    "kubernetesVersion: '1.34'\ndra: true", "kubernetesVersion: '1.33'\ndra: true")
SERVE_POOL = define(
    "SERVE001", "A serving deployment runs on a pool of its cluster that is reserved for serving.",
    "serving:\n- {cluster: onprem, pool: h200-serve}   # serving: true",
    "serving:\n- {cluster: onprem, pool: h100-train}   # not reserved")

Check = Callable[[Policy], Iterator[Diagnostic]]


def check_unique(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    spec = policy.fleet.spec

    def dups(items: list[str], base: tuple[str | int, ...], what: str) -> Iterator[Diagnostic]:
        first: dict[str, int] = {}
        for i, name in enumerate(items):
            if name in first:
                line = src.locate(base + (first[name],)).line
                yield DUPLICATE.diag(f"{what} {name!r} is declared twice (first on line {line})",
                                     src.locate(base + (i, "name")), hint=f"rename or merge the two {what}s")
            else:
                first[name] = i

    yield from dups([c.name for c in spec.clusters], ("spec", "clusters"), "cluster")
    for ci, c in enumerate(spec.clusters):
        yield from dups([p.name for p in c.pools], ("spec", "clusters", ci, "pools"), "pool")
    yield from dups([d.name for d in spec.departments], ("spec", "departments"), "department")
    yield from dups([p.name for p in spec.priorities], ("spec", "priorities"), "priority")
    yield from dups([d.name for d in spec.data_classes], ("spec", "dataClasses"), "data class")
    seen_defaults = [i for i, p in enumerate(spec.priorities) if p.default]
    for i in seen_defaults[1:]:
        yield PRIORITY_DEFAULT.diag("more than one priority tier is marked default",
                                    src.locate(("spec", "priorities", i, "default")),
                                    hint="keep default: true on one tier")
    values: dict[int, str] = {}
    for i, p in enumerate(spec.priorities):
        if p.value in values:
            yield PRIORITY_DEFAULT.diag(f"priorities {values[p.value]!r} and {p.name!r} share value {p.value}",
                                        src.locate(("spec", "priorities", i, "value")),
                                        hint="give each tier a distinct value so preemption order is defined")
        values.setdefault(p.value, p.name)


def check_fleet_refs(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    spec = policy.fleet.spec
    depts = policy.departments
    for i, d in enumerate(spec.departments):
        if d.parent is not None and d.parent not in depts:
            yield UNKNOWN_REF.diag(f"department {d.name!r} has unknown parent {d.parent!r}",
                                   src.locate(("spec", "departments", i, "parent")),
                                   hint=_choices(d.parent, depts))
    # cycles
    for i, d in enumerate(spec.departments):
        seen = [d.name]
        cur = d.parent
        while cur is not None and cur in depts:
            if cur == d.name:
                yield DEPT_CYCLE.diag(f"department {d.name!r} is its own ancestor: {' -> '.join(seen + [cur])}",
                                      src.locate(("spec", "departments", i, "parent")),
                                      hint="departments form a tree (Kueue disables every queue in a cohort cycle)")
                break
            if cur in seen:
                break
            seen.append(cur)
            cur = depts[cur].parent
    if spec.defaults.priority is not None and spec.defaults.priority not in {p.name for p in spec.priorities}:
        yield UNKNOWN_REF.diag(f"default priority {spec.defaults.priority!r} is not a declared tier",
                               src.locate(("spec", "defaults", "priority")))
    clusters = policy.clusters
    for ci, c in enumerate(spec.clusters):
        if c.dra and c.kubernetes_version and int(c.kubernetes_version.split(".")[1]) < 34:
            yield DRA_VERSION.diag(
                f"cluster {c.name!r} runs Kubernetes {c.kubernetes_version} but dra: true needs >= 1.34 "
                "(resource.k8s.io/v1)", src.locate(("spec", "clusters", ci, "dra")),
                hint="upgrade the cluster or set dra: false to use the device-plugin path")
        for pi, p in enumerate(c.pools):
            base = ("spec", "clusters", ci, "pools", pi)
            if policy.catalog.get(p.model) is None:
                yield UNKNOWN_REF.diag(f"pool {p.name!r}: unknown GPU model {p.model!r}", src.locate(base + ("model",)),
                                       hint=_choices(p.model, policy.catalog.ids()) or
                                       "add it under spec.catalog or use a catalogued model")
            if (p.karpenter is not None) != (c.provisioner == "karpenter"):
                yield KARPENTER.diag(
                    f"pool {p.name!r} {'has' if p.karpenter else 'lacks'} karpenter settings on a cluster "
                    f"provisioned by {c.provisioner!r}", src.locate(base + ("karpenter",) if p.karpenter else base),
                    hint="karpenter: {nodeClass: ...} is required exactly when provisioner: karpenter")
            rename = getattr(p.cut, "rename_by_default", True)
            if not rename:
                yield TS_RENAME.diag(f"pool {p.name!r} advertises shares as nvidia.com/gpu; a full-card request "
                                     "may land on a share", src.locate(base + ("cut", "renameByDefault")),
                                     hint="drop renameByDefault: false")
        if c.multikueue is not None:
            for wi, w in enumerate(c.multikueue.workers):
                if w not in clusters:
                    yield UNKNOWN_REF.diag(f"MultiKueue worker {w!r} is not a declared cluster",
                                           src.locate(("spec", "clusters", ci, "multikueue", "workers", wi)),
                                           hint=_choices(w, clusters))
    for i, d in enumerate(spec.departments):
        for k, cap in enumerate(d.caps):
            base = ("spec", "departments", i, "caps", k)
            if cap.cluster not in clusters:
                yield UNKNOWN_REF.diag(f"cap names unknown cluster {cap.cluster!r}", src.locate(base + ("cluster",)),
                                       hint=_choices(cap.cluster, clusters))
            elif cap.class_ not in policy.classes.get(cap.cluster, {}):
                yield UNKNOWN_REF.diag(f"cap names GPU class {cap.class_!r}, which cluster {cap.cluster!r} lacks",
                                       src.locate(base + ("class",)),
                                       hint=_choices(cap.class_, policy.classes.get(cap.cluster, {})))
    residencies = {c.residency for c in spec.clusters}
    for i, dc in enumerate(spec.data_classes):
        for j, r in enumerate(dc.residency or []):
            if r not in residencies:
                yield UNKNOWN_REF.diag(f"data class {dc.name!r} allows residency {r!r}, which no cluster has",
                                       src.locate(("spec", "dataClasses", i, "residency", j)), severity=Severity.WARNING)


def _choices(value: str, options: object) -> str | None:
    names = sorted(str(o) for o in options)  # type: ignore[attr-defined]
    hint = did_you_mean(value, names)
    if hint:
        return hint
    if names and len(names) <= 12:
        return f"known: {', '.join(names)}"
    return None


def check_teams(policy: Policy) -> Iterator[Diagnostic]:
    spec = policy.fleet.spec
    depts = policy.departments
    clusters = policy.clusters
    dclasses = {d.name: d for d in spec.data_classes}
    priorities = {p.name for p in spec.priorities}
    system: dict[str, set[str]] = {c.name: set(c.system_namespaces) | {"kube-system", "kube-public",
                                                                    "kube-node-lease", "default"}
                                   for c in spec.clusters}
    by_name: dict[str, str] = {}
    owners: dict[tuple[str, str], tuple[str, str]] = {}  # (cluster, ns) -> (team, purpose)
    for team in policy.teams:
        t, src = team.model, team.src
        stem = src.path.rsplit("/", 1)[-1].removesuffix(".yaml")
        if t.metadata.name != stem:
            yield TEAM_FILE.diag(f"file {stem}.yaml defines team {t.metadata.name!r}", src.locate(("metadata", "name")),
                                 hint=f"rename the file to teams/{t.metadata.name}.yaml or the team to {stem!r}; "
                                 "a team file defines only its own team")
        if t.metadata.name in by_name:
            yield TEAM_FILE.diag(f"team {t.metadata.name!r} is also defined in {by_name[t.metadata.name]}",
                                 src.locate(("metadata", "name")), hint="each team is defined in exactly one file")
        by_name.setdefault(t.metadata.name, src.path)
        if t.spec.department not in depts:
            yield UNKNOWN_REF.diag(f"unknown department {t.spec.department!r}", src.locate(("spec", "department")),
                                   hint=_choices(t.spec.department, depts))
        if t.spec.priority is not None and t.spec.priority not in priorities:
            yield UNKNOWN_REF.diag(f"unknown priority {t.spec.priority!r}", src.locate(("spec", "priority")),
                                   hint=_choices(t.spec.priority, priorities))
        for i, dc in enumerate(t.spec.data_classes):
            if dc not in dclasses:
                yield UNKNOWN_REF.diag(f"unknown data class {dc!r}", src.locate(("spec", "dataClasses", i)),
                                       hint=_choices(dc, dclasses))
        budget_clusters: set[str] = set()
        seen_budget: dict[tuple[str, str], int] = {}
        for i, b in enumerate(t.spec.budgets):
            base = ("spec", "budgets", i)
            if b.cluster not in clusters:
                yield UNKNOWN_REF.diag(f"budget names unknown cluster {b.cluster!r}", src.locate(base + ("cluster",)),
                                       hint=_choices(b.cluster, clusters))
                continue
            budget_clusters.add(b.cluster)
            key = (b.cluster, b.class_)
            if key in seen_budget:
                yield BUDGET_TWICE.diag(f"budget for {b.class_!r} on {b.cluster!r} is listed twice "
                                        f"(first at entry {seen_budget[key]})", src.locate(base),
                                        hint="merge the two entries")
            seen_budget.setdefault(key, i)
            cls = policy.classes.get(b.cluster, {}).get(b.class_)
            if cls is None:
                yield UNKNOWN_REF.diag(f"cluster {b.cluster!r} has no GPU class {b.class_!r}",
                                       src.locate(base + ("class",)),
                                       hint=_choices(b.class_, policy.classes.get(b.cluster, {})))
                continue
            if not cls.training_pools:
                yield SERVING_ONLY.diag(f"class {b.class_!r} on {b.cluster!r} exists only on serving-reserved pools "
                                        f"({', '.join(cls.serving_pools)})", src.locate(base + ("class",)),
                                        hint="serving pools are outside Kueue; budget a training class instead")
            if cls.cut not in ISOLATION_ALLOWS[t.spec.isolation]:
                yield ISOLATION.diag(f"team isolation is {t.spec.isolation!r} but {b.class_!r} is a {cls.cut} cut",
                                     src.locate(base + ("class",)), hint=ISOLATION_TABLE)
            residency = clusters[b.cluster].residency
            for dc in t.spec.data_classes:
                allowed = dclasses[dc].residency if dc in dclasses else None
                if allowed is not None and residency not in allowed:
                    yield RESIDENCY.diag(f"team handles data class {dc!r} (allowed in {', '.join(allowed)}) but "
                                         f"budgets GPUs on {b.cluster!r} (residency {residency!r})",
                                         src.locate(base + ("cluster",)),
                                         hint="budget on a cluster in an allowed residency, or drop the data class")
        for i, ns in enumerate(t.spec.namespaces):
            for j, c in enumerate(ns.clusters):
                at = ("spec", "namespaces", i, "clusters", j)  # located only for a diagnostic (12,000 here)
                if c not in clusters:
                    yield UNKNOWN_REF.diag(f"namespace {ns.name!r} names unknown cluster {c!r}", src.locate(at),
                                           hint=_choices(c, clusters))
                    continue
                yield from _claim(owners, system, c, ns.name, t.metadata.name, "training", src, at)
                if c not in budget_clusters:
                    yield IDLE_NAMESPACE.diag(f"namespace {ns.name!r} on {c!r}: team has no budget there, so no "
                                              "queue is created", src.locate(at),
                                              hint="add a budget on that cluster or drop it")
        for i, s in enumerate(t.spec.serving):
            base = ("spec", "serving", i)
            if s.cluster not in clusters:
                yield UNKNOWN_REF.diag(f"serving {s.name!r} names unknown cluster {s.cluster!r}",
                                       src.locate(base + ("cluster",)), hint=_choices(s.cluster, clusters))
                continue
            pool = next((p for p in clusters[s.cluster].pools if p.name == s.pool), None)
            if pool is None:
                yield UNKNOWN_REF.diag(f"serving {s.name!r}: cluster {s.cluster!r} has no pool {s.pool!r}",
                                       src.locate(base + ("pool",)),
                                       hint=_choices(s.pool, [p.name for p in clusters[s.cluster].pools]))
            elif not pool.serving:
                yield SERVE_POOL.diag(f"serving {s.name!r} targets pool {s.pool!r}, which is not reserved for serving",
                                      src.locate(base + ("pool",)), hint="set serving: true on the pool in fleet.yaml "
                                      "or choose a serving pool")
            if s.data_class not in t.spec.data_classes:
                yield UNKNOWN_REF.diag(f"serving {s.name!r} handles data class {s.data_class!r}, which the team "
                                       "does not declare", src.locate(base + ("dataClass",)))
            serving_ns = serving_namespace(t.metadata.name, t.spec.serving_namespace)
            yield from _claim(owners, system, s.cluster, serving_ns, t.metadata.name, "serving", src,
                              ("spec", "servingNamespace") if t.spec.serving_namespace else base)


def _claim(owners: dict[tuple[str, str], tuple[str, str]], system: dict[str, set[str]], cluster: str, ns: str,
           team: str, purpose: str, src: SourceFile, at: YamlPath) -> Iterator[Diagnostic]:
    if ns in system.get(cluster, set()):
        yield NAMESPACE_CLAIM.diag(f"namespace {ns!r} is a system namespace on {cluster!r}", src.locate(at),
                                   hint="pick a namespace of the team's own")
        return
    prev = owners.get((cluster, ns))
    if prev is None:
        owners[(cluster, ns)] = (team, purpose)
    elif prev != (team, purpose):
        who = f"team {prev[0]!r}" if prev[0] != team else "this team"
        yield NAMESPACE_CLAIM.diag(f"namespace {ns!r} on {cluster!r} is already claimed by {who} for {prev[1]}",
                                   src.locate(at),
                                   hint="each namespace belongs to one team and one purpose (training or serving)")


def check_flavor_selection(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    for ci, c in enumerate(policy.fleet.spec.clusters):
        if is_manager(c):
            continue  # a MultiKueue manager's flavors only count quota; its workers select nodes
        classes = policy.classes.get(c.name, {})
        per_pool: dict[str, int] = defaultdict(int)
        for cls in classes.values():
            for s in cls.slices:
                per_pool[s.pool] += 1
        for cls in classes.values():
            pools = cls.training_pools
            if len(pools) > 1 and any(per_pool[p] > 1 for p in pools):
                pi = next(i for i, p in enumerate(c.pools) if p.name == pools[-1])
                yield FLAVOR_SELECT.diag(
                    f"class {cls.id!r} spans pools {', '.join(pools)} and some carry several classes, so no single "
                    "node label selects them", src.locate(("spec", "clusters", ci, "pools", pi)),
                    hint="cut the pools identically with a single-profile layout, or merge them into one pool")


CHECKS: tuple[Check, ...] = (
    check_unique,
    check_fleet_refs,
    check_teams,
    check_capacity,
    check_department_caps,
    check_flavor_selection,
    check_serving,
    check_multikueue,
    check_gitops,
    check_admission,
    check_dra,
)


def run_checks(policy: Policy) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for check in CHECKS:
        out.extend(check(policy))
    return out
