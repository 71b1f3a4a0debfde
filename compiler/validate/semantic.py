"""Fleet and cross-team rules of stage 2b (SPEC §6): unique names, references, department cycles,
priorities, pools (Karpenter, shared cuts, flavor selection), team files, namespace claims, DRA001.

Each rule is declared with its ID, scope, one-line summary and PASS/FAIL examples, and has one
check (``@checks(rule)``): a pure function of the ``Policy`` that yields located diagnostics.
``compiler.validate.driver`` runs them; team-scope rules live in ``compiler.validate.teams``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define, did_you_mean, per_team
from compiler.load.source import SourceFile, YamlPath
from compiler.policy.cuts import cut_mode
from compiler.policy.graph import Policy, Team, reserved_namespace, serving_namespace
from compiler.policy.multikueue_topology import is_manager
from compiler.policy.priorities import tiers_by_name
from compiler.policy.summaries import gather
from compiler.policy.team_facts import CLAIMS, CONFLICT, gateway_namespaces
from compiler.validate.cascade import unresolved
from compiler.validate.related import related
from compiler.validate.teams import data_classes_by_name

DUPLICATE = define(
    "FLEET001", "Names are unique within their kind (clusters, pools of a cluster, departments, "
    "priorities, data classes, namespaces of a team).",
    "clusters:\n- name: onprem\n- name: cloud", "clusters:\n- name: onprem\n- name: onprem", scope=Scope.FLEET)
UNKNOWN_REF = define(
    "FLEET002", "Every reference names something that exists: cluster, pool, GPU class, department, "
    "priority, data class, GPU model.",
    "department: research   # declared in fleet.yaml", "department: reserch", scope=Scope.POLICY)
TEAM_FILE = define(
    "FLEET003", "A team file is named after the team it defines (teams/<team>.yaml), and each team "
    "is defined once.",
    "# teams/vision.yaml\nmetadata:\n  name: vision", "# teams/vision.yaml\nmetadata:\n  name: nlp", scope=Scope.POLICY)
NAMESPACE_CLAIM = define(
    "FLEET004", "A namespace belongs to one team and one purpose on each cluster; system namespaces "
    "belong to nobody.",
    "# vision: vision-train, nlp: nlp-train", "# vision and nlp both list namespace shared-train", scope=Scope.POLICY)
DEPT_CYCLE = define(
    "FLEET005", "Departments form a tree: no department is its own ancestor.",
    "- name: ai\n- name: vision\n  parent: ai", "- name: a\n  parent: b\n- name: b\n  parent: a", scope=Scope.FLEET)
PRIORITY_DEFAULT = define(
    "FLEET007", "At most one priority tier is the default, and priority values are distinct.",
    "- {name: high, value: 1000}\n- {name: low, value: 100, default: true}",
    "- {name: high, value: 100, default: true}\n- {name: low, value: 100, default: true}", scope=Scope.FLEET)
FLAVOR_SELECT = define(
    "FLEET010", "Every GPU class can be selected by node labels: a class on several pools needs pools "
    "that carry one class each.",
    "# class h100 on pools h100-a and h100-b, both full-card",
    "# class a100-80gb-mig-1g.10gb on two pools cut all-balanced (three classes per node)", scope=Scope.FLEET)
TS_RENAME = define(
    "FLEET013", "Shared cuts advertise `nvidia.com/gpu.shared` (renameByDefault: true) so a share "
    "never satisfies a full-card request.",
    "cut: {mode: timeslicing, replicas: 4}", "cut: {mode: timeslicing, replicas: 4, renameByDefault: false}",
    Severity.WARNING, scope=Scope.FLEET)
KARPENTER = define(
    "FLEET014", "Karpenter settings appear only on pools of clusters provisioned by Karpenter, and every "
    "such pool has them.",
    "provisioner: karpenter\npools:\n- karpenter: {nodeClass: gpu}", "provisioner: none\npools:\n- karpenter: {nodeClass: gpu}",
    scope=Scope.FLEET)
DRA_VERSION = define(
    "DRA001", "DRA (resource.k8s.io/v1) needs Kubernetes 1.34 or newer.",
    "kubernetesVersion: '1.34'\ndra: true", "kubernetesVersion: '1.33'\ndra: true", scope=Scope.FLEET)


RULES: tuple[Rule, ...] = (
    DUPLICATE, UNKNOWN_REF, TEAM_FILE, NAMESPACE_CLAIM, DEPT_CYCLE, PRIORITY_DEFAULT, FLAVOR_SELECT,
    TS_RENAME, KARPENTER, DRA_VERSION,
)


# -- fleet scope: fleet.yaml and its derived classes, no team --------------------------------------


@checks(DUPLICATE)
def check_duplicates(policy: Policy) -> Iterator[Diagnostic]:
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


@checks(PRIORITY_DEFAULT)
def check_priority_default(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    spec = policy.fleet.spec
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


@checks(DEPT_CYCLE)
def check_department_cycles(policy: Policy) -> Iterator[Diagnostic]:
    src = policy.fleet_src
    depts = policy.departments
    for i, d in enumerate(policy.fleet.spec.departments):
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


@checks(DRA_VERSION)
def check_dra_version(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        if c.dra and c.kubernetes_version and int(c.kubernetes_version.split(".")[1]) < 34:
            yield DRA_VERSION.diag(
                f"cluster {c.name!r} runs Kubernetes {c.kubernetes_version} but dra: true needs >= 1.34 "
                "(resource.k8s.io/v1)", policy.fleet_src.locate(("spec", "clusters", ci, "dra")),
                hint="upgrade the cluster or set dra: false to use the device-plugin path")


@checks(KARPENTER)
def check_karpenter(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        for pi, p in enumerate(c.pools):
            base = ("spec", "clusters", ci, "pools", pi)
            if (p.karpenter is not None) != (c.provisioner == "karpenter"):
                yield KARPENTER.diag(
                    f"pool {p.name!r} {'has' if p.karpenter else 'lacks'} karpenter settings on a cluster "
                    f"provisioned by {c.provisioner!r}",
                    policy.fleet_src.locate(base + ("karpenter",) if p.karpenter else base),
                    hint="karpenter: {nodeClass: ...} is required exactly when provisioner: karpenter")


@checks(TS_RENAME)
def check_shares_renamed(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        for pi, p in enumerate(c.pools):
            shares = cut_mode(p.cut).shares(p.cut)
            if shares is not None and not shares.renamed:
                yield TS_RENAME.diag(f"pool {p.name!r} advertises shares as nvidia.com/gpu; a full-card request "
                                     "may land on a share",
                                     policy.fleet_src.locate(("spec", "clusters", ci, "pools", pi, "cut",
                                                              "renameByDefault")),
                                     hint="drop renameByDefault: false")


@checks(FLAVOR_SELECT)
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

# -- policy scope: the fleet and every team together -----------------------------------------------


@checks(UNKNOWN_REF)
def check_references(policy: Policy) -> Iterator[Diagnostic]:
    """The fleet's references: departments' parents, the default priority, pools' GPU models,
    MultiKueue workers, departments' caps and data classes' residencies."""
    src = policy.fleet_src
    spec = policy.fleet.spec
    depts = policy.departments
    for i, d in enumerate(spec.departments):
        if d.parent is not None and d.parent not in depts:
            yield UNKNOWN_REF.diag(f"department {d.name!r} has unknown parent {d.parent!r}",
                                   src.locate(("spec", "departments", i, "parent")),
                                   hint=_choices(d.parent, depts))
    if spec.defaults.priority is not None and spec.defaults.priority not in {p.name for p in spec.priorities}:
        yield UNKNOWN_REF.diag(f"default priority {spec.defaults.priority!r} is not a declared tier",
                               src.locate(("spec", "defaults", "priority")))
    clusters = policy.clusters
    for ci, c in enumerate(spec.clusters):
        for pi, p in enumerate(c.pools):
            if policy.catalog.get(p.model) is None:
                yield UNKNOWN_REF.diag(f"pool {p.name!r}: unknown GPU model {p.model!r}",
                                       src.locate(("spec", "clusters", ci, "pools", pi, "model")),
                                       hint=_choices(p.model, policy.catalog.ids()) or
                                       "add it under spec.catalog or use a catalogued model")
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
            elif cap.class_ not in policy.classes.get(cap.cluster, {}) and not unresolved(policy, cap.cluster,
                                                                                            cap.class_):
                yield UNKNOWN_REF.diag(f"cap names GPU class {cap.class_!r}, which cluster {cap.cluster!r} lacks",
                                       src.locate(base + ("class",)),
                                       hint=_choices(cap.class_, policy.classes.get(cap.cluster, {})))
    residencies = {c.residency for c in spec.clusters}
    for i, dc in enumerate(spec.data_classes):
        for j, r in enumerate(dc.residency or []):
            if r not in residencies:
                yield UNKNOWN_REF.diag(f"data class {dc.name!r} allows residency {r!r}, which no cluster has",
                                       src.locate(("spec", "dataClasses", i, "residency", j)), severity=Severity.WARNING)


# A team's references read the fleet and that team alone: 5,000 teams' took ~0.1 s of every run
# inside the policy-scope check; as its per-team part a store keeps them with the team's findings.
@per_team(UNKNOWN_REF)
def team_references(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    """A team's references: its department, priority and allowed priorities, data classes, its
    budgets' clusters and GPU classes, its namespaces' clusters, and its serving deployments'
    clusters, pools and data classes."""
    priorities, dclasses = tiers_by_name(policy), data_classes_by_name(policy)
    t, src = team.model, team.src
    clusters = policy.clusters
    if t.spec.department not in policy.departments:
        yield UNKNOWN_REF.diag(f"unknown department {t.spec.department!r}", src.locate(("spec", "department")),
                               hint=_choices(t.spec.department, policy.departments))
    if t.spec.priority is not None and t.spec.priority not in priorities:
        yield UNKNOWN_REF.diag(f"unknown priority {t.spec.priority!r}", src.locate(("spec", "priority")),
                               hint=_choices(t.spec.priority, priorities))
    for i, p in enumerate(t.spec.allowed_priorities or []):
        if p not in priorities:
            yield UNKNOWN_REF.diag(f"allowedPriorities names unknown priority {p!r}",
                                   src.locate(("spec", "allowedPriorities", i)), hint=_choices(p, priorities))
    for i, dc in enumerate(t.spec.data_classes):
        if dc not in dclasses:
            yield UNKNOWN_REF.diag(f"unknown data class {dc!r}", src.locate(("spec", "dataClasses", i)),
                                   hint=_choices(dc, dclasses))
    for i, b in enumerate(t.spec.budgets):
        base = ("spec", "budgets", i)
        if b.cluster not in clusters:
            yield UNKNOWN_REF.diag(f"budget names unknown cluster {b.cluster!r}", src.locate(base + ("cluster",)),
                                   hint=_choices(b.cluster, clusters))
        elif policy.classes.get(b.cluster, {}).get(b.class_) is None and not unresolved(policy, b.cluster, b.class_):
            yield UNKNOWN_REF.diag(f"cluster {b.cluster!r} has no GPU class {b.class_!r}",
                                   src.locate(base + ("class",)),
                                   hint=_choices(b.class_, policy.classes.get(b.cluster, {})))
    for i, ns in enumerate(t.spec.namespaces):
        for j, c in enumerate(ns.clusters):
            if c not in clusters:
                yield UNKNOWN_REF.diag(f"namespace {ns.name!r} names unknown cluster {c!r}",
                                       src.locate(("spec", "namespaces", i, "clusters", j)), hint=_choices(c, clusters))
    for i, s in enumerate(t.spec.serving):
        base = ("spec", "serving", i)
        if s.cluster not in clusters:
            yield UNKNOWN_REF.diag(f"serving {s.name!r} names unknown cluster {s.cluster!r}",
                                   src.locate(base + ("cluster",)), hint=_choices(s.cluster, clusters))
            continue
        pools = [p.name for p in clusters[s.cluster].pools]
        if s.pool not in pools:
            yield UNKNOWN_REF.diag(f"serving {s.name!r}: cluster {s.cluster!r} has no pool {s.pool!r}",
                                   src.locate(base + ("pool",)), hint=_choices(s.pool, pools))
        if s.data_class not in t.spec.data_classes:
            yield UNKNOWN_REF.diag(f"serving {s.name!r} handles data class {s.data_class!r}, which the team "
                                   "does not declare", src.locate(base + ("dataClass",)))


def _choices(value: str, options: object) -> str | None:
    names = sorted(str(o) for o in options)  # type: ignore[attr-defined]
    hint = did_you_mean(value, names)
    if hint:
        return hint
    if names and len(names) <= 12:
        return f"known: {', '.join(names)}"
    return None


@checks(TEAM_FILE)
def check_team_files(policy: Policy) -> Iterator[Diagnostic]:
    by_name: dict[str, str] = {}
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


@checks(NAMESPACE_CLAIM)
def check_namespace_claims(policy: Policy) -> Iterator[Diagnostic]:
    if CONFLICT not in gather(policy, CLAIMS):  # the teams' kept claims: each namespace once, none a system one
        return
    clusters = policy.clusters
    owners: dict[tuple[str, str], Claim] = {}  # (cluster, ns) -> (team, purpose, file, where)
    for team in policy.teams:  # the platform's namespaces some team's serving routes through a Gateway in
        for key, dep in gateway_namespaces(policy, team).items():
            owners.setdefault(key, (team.name, f"the Gateway its serving {dep!r} routes through", team.src, ()))
    for team in policy.teams:
        t, src = team.model, team.src
        name = t.metadata.name
        for i, ns in enumerate(t.spec.namespaces):
            for j, c in enumerate(ns.clusters):
                if c in clusters:  # else FLEET002
                    at = ("spec", "namespaces", i, "clusters", j)  # located only for a diagnostic (12,000 here)
                    key = (c, ns.name)
                    if key not in owners and reserved_namespace(policy.fleet, clusters[c], ns.name) is None:
                        owners[key] = (name, "training", src, at)  # the common case, inline
                    else:
                        yield from _claim(policy, owners, c, ns.name, name, "training", src, at)
        for i, s in enumerate(t.spec.serving):
            if s.cluster in clusters:
                serving_ns = serving_namespace(t.metadata.name, t.spec.serving_namespace)
                yield from _claim(policy, owners, s.cluster, serving_ns, t.metadata.name, "serving", src,
                                  ("spec", "servingNamespace") if t.spec.serving_namespace else ("spec", "serving", i))


Claim = tuple[str, str, SourceFile, YamlPath]


def _claim(policy: Policy, owners: dict[tuple[str, str], Claim], cluster: str, ns: str,
           team: str, purpose: str, src: SourceFile, at: YamlPath) -> Iterator[Diagnostic]:
    why = reserved_namespace(policy.fleet, policy.clusters[cluster], ns)
    if why is not None:
        yield NAMESPACE_CLAIM.diag(f"namespace {ns!r} on {cluster!r} is a system namespace: {why}", src.locate(at),
                                   hint="pick a namespace of the team's own (a team namespace gets a LocalQueue, a "
                                        "Role and a quota that would apply to what runs there)")
        return
    prev = owners.get((cluster, ns))
    if prev is None:
        owners[(cluster, ns)] = (team, purpose, src, at)
    elif prev[1].startswith("the Gateway"):
        yield NAMESPACE_CLAIM.diag(f"namespace {ns!r} on {cluster!r} hosts {prev[1]} (team {prev[0]!r}, "
                                   f"{prev[2].path}): it is the platform's, not a team namespace", src.locate(at),
                                   hint="pick a namespace of the team's own (a team namespace gets a Role and a quota "
                                        "that would apply to the Gateway's namespace)")
    elif prev[:2] != (team, purpose):
        who = f"team {prev[0]!r} ({prev[2].path})" if prev[0] != team else "this team"
        yield NAMESPACE_CLAIM.diag(f"namespace {ns!r} on {cluster!r} is already claimed by {who} for {prev[1]}",
                                   src.locate(at),
                                   hint="each namespace belongs to one team and one purpose (training or serving)")
        if prev[2].path != src.path:  # the other file that contributes (issue 20: report on every file)
            yield related(NAMESPACE_CLAIM, f"namespace {ns!r} on {cluster!r}, claimed here by team {prev[0]!r} for "
                          f"{prev[1]}, is also claimed by team {team!r} for {purpose}", prev[2].locate(prev[3]),
                          src.path)
