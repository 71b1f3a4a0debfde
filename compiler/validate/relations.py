"""The second direction of relations between parts of a policy (issue 22, docs/relations.md).

Most relations were checked from the side that names the other (a budget names its cluster:
FLEET002; a namespace on a cluster without a budget: FLEET011). These rules check the way back,
where a part that nothing uses is silently in force for nobody, or a place the data is processed
escaped the residency check:

- FLEET401: a budget on a cluster where the team has no training namespace (no LocalQueue: no
  job can use it), the reverse of FLEET011;
- FLEET402: a department with no team and no sub-department (its Cohort, caps and defaults govern
  nobody);
- FLEET404: a department cap on a cluster and class that no team below the department budgets (caps
  are checked, not rendered: KUEUE003 sums the guarantees below it, and there are none);
- SERVE401: a serving deployment processes its data class on a cluster whose residency the class
  does not allow (FLEET006 covers budgets, not serving);
- SERVE402: a pool reserved for serving that no deployment uses (its GPUs are held for nothing;
  Kueue never reaches them), the reverse of SERVE001;
- SERVE403: a named architecture other than the one the catalog lists for the model's hub id;
- SERVE404: an inline architecture whose shape differs from the catalogued model's;
- ADM401: identity groups of a team with no namespace to bind them in, the reverse of ADM001;
- GITOPS401: ``gitops.path`` other than the directory the build writes (emitted by the pipeline,
  which alone knows ``--out``).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.model.team import ModelArchitecture
from compiler.policy.graph import Policy, Team
from compiler.policy.summaries import gather
from compiler.policy.team_facts import CAPPED
from compiler.serving.architectures import ARCHITECTURES, by_hub_id

BUDGET_NAMESPACE = define(
    "FLEET401", "A team budgeting GPUs on a cluster has a training namespace there (else its ClusterQueue has no "
    "LocalQueue and no job can use the budget).",
    "namespaces:\n- {name: ml-train, clusters: [onprem]}\nbudgets:\n- {cluster: onprem, class: h100, guaranteed: 2}",
    "namespaces:\n- {name: ml-train, clusters: [onprem]}\nbudgets:\n- {cluster: cloud, class: h100, guaranteed: 2}",
    Severity.WARNING, scope=Scope.TEAM)
EMPTY_DEPARTMENT = define(
    "FLEET402", "A department has a team or a sub-department (else its Cohort, caps and budget defaults govern "
    "nobody).",
    "departments: [{name: ai}, {name: research, parent: ai}]   # team vision: department research",
    "departments: [{name: ai}, {name: robotics, parent: ai}]   # no team names robotics",
    Severity.WARNING, scope=Scope.POLICY)
IDLE_CAP = define(
    "FLEET404", "A department cap names a cluster and GPU class that some team below the department budgets (a cap "
    "limits the guarantees of the teams below it; with none there it limits nothing).",
    "caps: [{cluster: onprem, class: h100-80gb, max: 40}]   # team nlp (below) budgets h100-80gb on onprem",
    "caps: [{cluster: cloud, class: h100-80gb, max: 40}]    # no team below budgets h100-80gb on cloud",
    Severity.WARNING, scope=Scope.POLICY)
SERVING_RESIDENCY = define(
    "SERVE401", "A serving deployment handles its data class only on a cluster whose residency the class allows "
    "(serving processes the data as much as training does).",
    "# pii allows [eu]\nserving:\n- {name: chat, cluster: onprem, dataClass: pii}   # onprem: residency eu",
    "# pii allows [eu]\nserving:\n- {name: chat, cluster: cloud, dataClass: pii}    # cloud: residency us",
    scope=Scope.TEAM)
IDLE_SERVING_POOL = define(
    "SERVE402", "A pool reserved for serving hosts at least one serving deployment (else its GPUs are held for "
    "nothing: Kueue never reaches them).",
    "pools: [{name: h200-serve, serving: true}]\n# team nlp: serving: [{pool: h200-serve, ...}]",
    "pools: [{name: h200-serve, serving: true}]\n# no deployment names h200-serve",
    Severity.WARNING, scope=Scope.POLICY)
MODEL_ARCHITECTURE = define(
    "SERVE403", "A deployment's named architecture is the one its model is: when the catalog lists the model's hub "
    "id, `architecture` names that entry (sizing reads the architecture; vLLM loads the model).",
    "model: meta-llama/Llama-3.1-70B-Instruct\narchitecture: llama-3.1-70b",
    "model: meta-llama/Llama-3.1-70B-Instruct\narchitecture: llama-3.1-8b   # sized as 8B, loads 70B",
    scope=Scope.TEAM)
INLINE_ARCHITECTURE = define(
    "SERVE404", "An inline architecture has the shape the catalog records for the model's hub id (layers, heads, KV "
    "heads, head dim; parameters within 5%): sizing reads the inline figures, vLLM loads the model.",
    "model: meta-llama/Llama-3.1-8B-Instruct\narchitecture: {parametersB: 8, layers: 32, attentionHeads: 32, "
    "kvHeads: 8, headDim: 128}",
    "model: meta-llama/Llama-3.1-8B-Instruct\narchitecture: {parametersB: 8, layers: 16, attentionHeads: 32, "
    "kvHeads: 8, headDim: 128}", Severity.WARNING, scope=Scope.TEAM)
IDLE_GROUPS = define(
    "ADM401", "A team that declares identity groups has a namespace (training or serving) where RBAC binds them.",
    "groups: [acme:vision]\nnamespaces: [{name: vision-train, clusters: [onprem]}]",
    "groups: [acme:vision]\nnamespaces: []   # and no servingNamespace",
    Severity.WARNING, scope=Scope.TEAM)

OUTPUT_PATH = define(
    "GITOPS401", "ArgoCD reads what the build writes: gitops.path is the output directory (--out) relative to the "
    "repository root.",
    "gitops: {path: out}   # gpupolicy build (writes out/)",
    "gitops: {path: deploy}   # gpupolicy build writes out/: every Application points at a folder nothing writes",
    Severity.WARNING, scope=Scope.OUTPUT)

RULES: tuple[Rule, ...] = (BUDGET_NAMESPACE, EMPTY_DEPARTMENT, IDLE_CAP, SERVING_RESIDENCY, IDLE_SERVING_POOL,
                           MODEL_ARCHITECTURE, INLINE_ARCHITECTURE, IDLE_GROUPS, OUTPUT_PATH)


@checks(BUDGET_NAMESPACE)
def check_budget_namespace(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    spec = team.model.spec
    where = {c for ns in spec.namespaces for c in ns.clusters}
    for i, b in enumerate(spec.budgets):
        if b.cluster in policy.clusters and b.cluster not in where:
            yield BUDGET_NAMESPACE.diag(
                f"team {team.name!r} budgets {b.class_!r} on {b.cluster!r} but has no training namespace there, so "
                "its ClusterQueue gets no LocalQueue and no job can use the budget",
                team.src.locate(("spec", "budgets", i, "cluster")),
                hint=f"add {b.cluster!r} to the clusters of one of its namespaces, or drop the budget")


@checks(EMPTY_DEPARTMENT)
def check_empty_departments(policy: Policy) -> Iterator[Diagnostic]:
    used = {t.model.spec.department for t in policy.teams}
    parents = {d.parent for d in policy.fleet.spec.departments if d.parent}
    for i, d in enumerate(policy.fleet.spec.departments):
        if d.name not in used and d.name not in parents:
            yield EMPTY_DEPARTMENT.diag(
                f"department {d.name!r} has no team and no sub-department: its cohort, caps and defaults govern "
                "nobody", policy.fleet_src.locate(("spec", "departments", i, "name")),
                hint="name it as a team's department or another department's parent, or remove it")


@checks(IDLE_CAP)
def check_idle_caps(policy: Policy) -> Iterator[Diagnostic]:
    budgeted = gather(policy, CAPPED)  # (capped department, cluster, class) its teams budget, kept
    for i, d in enumerate(policy.fleet.spec.departments):
        for k, cap in enumerate(d.caps):
            if cap.class_ not in policy.classes.get(cap.cluster, {}):
                continue  # an unknown cluster or class: FLEET002
            if (d.name, cap.cluster, cap.class_) not in budgeted:
                yield IDLE_CAP.diag(
                    f"department {d.name!r} caps {cap.class_} on {cap.cluster!r} at {cap.max}, but no team below it "
                    "budgets that class there: the cap limits nothing", policy.fleet_src.locate(
                        ("spec", "departments", i, "caps", k)),
                    hint="cap a cluster and class the department's teams budget, or drop the cap")


@checks(SERVING_RESIDENCY)
def check_serving_residency(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    allowed = {d.name: d.residency for d in policy.fleet.spec.data_classes}
    for i, s in enumerate(team.model.spec.serving):
        cluster = policy.clusters.get(s.cluster)
        zones = allowed.get(s.data_class)
        if cluster is not None and zones is not None and cluster.residency not in zones:
            yield SERVING_RESIDENCY.diag(
                f"serving {s.name!r} handles data class {s.data_class!r} (allowed in {', '.join(zones)}) on "
                f"{s.cluster!r} (residency {cluster.residency!r})",
                team.src.locate(("spec", "serving", i, "cluster")),
                hint="serve it on a cluster in an allowed residency, or serve another data class")


@checks(IDLE_SERVING_POOL)
def check_idle_serving_pools(policy: Policy) -> Iterator[Diagnostic]:
    used = {(s.cluster, s.pool) for t in policy.teams for s in t.model.spec.serving}
    for i, c in enumerate(policy.fleet.spec.clusters):
        for j, p in enumerate(c.pools):
            if p.serving and (c.name, p.name) not in used:
                yield IDLE_SERVING_POOL.diag(
                    f"pool {p.name!r} on {c.name!r} is reserved for serving ({p.nodes * p.gpus_per_node} GPUs) but "
                    "no serving deployment uses it: Kueue never reaches these GPUs",
                    policy.fleet_src.locate(("spec", "clusters", i, "pools", j, "serving")),
                    hint="point a deployment's pool at it, or drop serving: true so training can use it")


@checks(MODEL_ARCHITECTURE)
def check_model_architecture(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    for i, s in enumerate(team.model.spec.serving):
        listed = by_hub_id(s.model)
        if isinstance(s.architecture, str) and listed is not None and s.architecture in ARCHITECTURES \
                and ARCHITECTURES[s.architecture] is not listed:
            key = next(k for k, a in ARCHITECTURES.items() if a is listed)
            yield MODEL_ARCHITECTURE.diag(
                f"serving {s.name!r} loads {s.model} (architecture {key!r} in the catalog) but is sized as "
                f"{s.architecture!r}", team.src.locate(("spec", "serving", i, "architecture")),
                hint=f"set architecture: {key}, or leave it out (the hub id decides)")


@checks(INLINE_ARCHITECTURE)
def check_inline_architecture(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    for i, s in enumerate(team.model.spec.serving):
        listed, arch = by_hub_id(s.model), s.architecture
        if listed is None or not isinstance(arch, ModelArchitecture):
            continue
        pairs = [("layers", arch.layers, listed.layers), ("attentionHeads", arch.attention_heads, listed.attention_heads),
                 ("kvHeads", arch.kv_heads, listed.kv_heads), ("headDim", arch.head_dim, listed.head_dim)]
        wrong = [f"{k} {mine} (catalog {theirs})" for k, mine, theirs in pairs if mine != theirs]
        if abs(arch.parameters_b - listed.parameters_b) > 0.05 * listed.parameters_b:
            wrong.append(f"parametersB {arch.parameters_b:g} (catalog {listed.parameters_b:g})")
        if wrong:
            yield INLINE_ARCHITECTURE.diag(
                f"serving {s.name!r}: the inline architecture is not {s.model}'s: {', '.join(wrong)}",
                team.src.locate(("spec", "serving", i, "architecture")),
                hint=f"fix the figures, or name the catalog entry: architecture: {listed.key}")


@checks(IDLE_GROUPS)
def check_idle_groups(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    spec = team.model.spec
    if spec.groups and not spec.namespaces and not spec.serving:  # serving: <team>-serving at least
        yield IDLE_GROUPS.diag(
            f"team {team.name!r} declares identity groups ({', '.join(spec.groups)}) but has no namespace where RBAC "
            "could bind them", team.src.locate(("spec", "groups")),
            hint="add a namespace, or drop the groups")


def check_output_path(policy: Policy, out_dir: str) -> list[Diagnostic]:
    """GITOPS401, emitted by the pipeline (it alone knows ``--out``): ``out_dir`` is the output
    directory as displayed, relative to the repository root."""
    path = policy.fleet.spec.gitops.path
    if out_dir == path:
        return []
    where = ("spec", "gitops", "path") if "path" in policy.fleet.spec.gitops.model_fields_set else ("spec", "gitops")
    return [OUTPUT_PATH.diag(
        f"ArgoCD's Applications read {path}/ (gitops.path) but this build writes {out_dir}/: they sync a folder "
        "nothing writes", policy.fleet_src.locate(where),
        hint=f"set gitops.path: {out_dir}, or build with --out {path}")]
