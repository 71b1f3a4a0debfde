"""Admission and tenancy rules (ADM): the labels admission requires can be met, and every team
that gets namespaces can be given access to them. One check per rule."""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.policy.graph import Policy, Team, serving_namespace
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_TEAM

NO_GROUPS = define(
    "ADM001", "A team with namespaces declares at least one identity group, so RBAC can let it submit there.",
    "namespaces: [{name: ml-train, clusters: [onprem]}]\ngroups: ['acme:ml']",
    "namespaces: [{name: ml-train, clusters: [onprem]}]\n# no groups: nobody may submit in ml-train",
    Severity.WARNING, scope=Scope.TEAM)
UNUSED_ALLOWED = define(
    "ADM002", "Every key of admission.allowedValues is a required label (others are never checked).",
    "requiredLabels: [gpupolicy.dev/team, gpupolicy.dev/model, gpupolicy.dev/data-class]\n"
    "allowedValues: {gpupolicy.dev/model: [llama-3]}",
    "allowedValues: {example.com/cost-center: [a, b]}   # not in requiredLabels", Severity.WARNING, scope=Scope.FLEET)
UNKNOWN_DATA_CLASS = define(
    "ADM003", "Allowed values of gpupolicy.dev/data-class are declared data classes.",
    "dataClasses: [{name: public}, {name: pii}]\nallowedValues: {gpupolicy.dev/data-class: [public, pii]}",
    "dataClasses: [{name: public}]\nallowedValues: {gpupolicy.dev/data-class: [public, secret]}", scope=Scope.FLEET)
AUDIT_LABELS = define(
    "ADM004", "requiredLabels include gpupolicy.dev/team, gpupolicy.dev/model and gpupolicy.dev/data-class "
    "(the audit question: who held which GPU, for which model, with which data).",
    "requiredLabels: [gpupolicy.dev/team, gpupolicy.dev/model, gpupolicy.dev/data-class, example.com/project]",
    "requiredLabels: [gpupolicy.dev/team]", scope=Scope.FLEET)
UNSATISFIABLE = define(
    "ADM005", "allowedValues leave room for every team: its name under gpupolicy.dev/team and each data class "
    "it declares under gpupolicy.dev/data-class.",
    "allowedValues: {gpupolicy.dev/data-class: [public, internal, pii]}   # nlp declares internal, pii",
    "allowedValues: {gpupolicy.dev/data-class: [public]}   # nlp declares pii: its GPU jobs are always denied",
    scope=Scope.TEAM)
EXEMPT_TEAM_NS = define(
    "ADM006", "admission.exemptNamespaces names no team namespace (team namespaces are always checked).",
    "exemptNamespaces: [legacy-ml]", "exemptNamespaces: [nlp-train]   # a team namespace", Severity.WARNING,
    scope=Scope.POLICY)


RULES: tuple[Rule, ...] = (
    NO_GROUPS, UNUSED_ALLOWED, UNKNOWN_DATA_CLASS, AUDIT_LABELS, UNSATISFIABLE, EXEMPT_TEAM_NS,
)


def _team_namespaces(policy: Policy) -> dict[str, str]:
    out: dict[str, str] = {}
    for team in policy.teams:
        spec = team.model.spec
        for ns in spec.namespaces:
            out.setdefault(ns.name, team.name)
        if spec.serving:
            out.setdefault(serving_namespace(team.name, spec.serving_namespace), team.name)
    return out



_BASE = ("spec", "admission")


@checks(AUDIT_LABELS)
def check_audit_labels(policy: Policy) -> Iterator[Diagnostic]:
    adm = policy.fleet.spec.admission
    missing = [k for k in (LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS) if k not in adm.required_labels]
    if missing:
        yield AUDIT_LABELS.diag(f"admission.requiredLabels lacks {', '.join(missing)}",
                                policy.fleet_src.locate(_BASE + ("requiredLabels",), key=True),
                                hint="workloads without them cannot be attributed to a team, model and data class")


@checks(UNUSED_ALLOWED)
def check_unused_allowed(policy: Policy) -> Iterator[Diagnostic]:
    adm = policy.fleet.spec.admission
    for key in adm.allowed_values:
        if key not in adm.required_labels:
            yield UNUSED_ALLOWED.diag(f"allowedValues names {key!r}, which is not a required label, so admission "
                                      "never checks it",
                                      policy.fleet_src.locate(_BASE + ("allowedValues", key), key=True),
                                      hint=f"add {key} to admission.requiredLabels or drop it")


@checks(UNKNOWN_DATA_CLASS)
def check_allowed_data_classes(policy: Policy) -> Iterator[Diagnostic]:
    declared = [d.name for d in policy.fleet.spec.data_classes]
    for i, v in enumerate(policy.fleet.spec.admission.allowed_values.get(LABEL_DATA_CLASS, [])):
        if v not in declared:
            yield UNKNOWN_DATA_CLASS.diag(
                f"allowed data class {v!r} is not declared under spec.dataClasses",
                policy.fleet_src.locate(_BASE + ("allowedValues", LABEL_DATA_CLASS, i)),
                hint=f"declared: {', '.join(declared)}")


@checks(NO_GROUPS)
def check_groups(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    spec = team.model.spec
    if (spec.namespaces or spec.serving) and not spec.groups:
        yield NO_GROUPS.diag(f"team {team.name!r} has namespaces but no identity groups: no RoleBinding is "
                             "generated, so nobody may submit there", team.src.locate(("spec", "owners")),
                             hint="add groups: [<your identity provider group>] (distinct from code owners)")


@checks(UNSATISFIABLE)
def check_satisfiable(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    spec = team.model.spec
    if not spec.namespaces:
        return
    src = policy.fleet_src
    adm = policy.fleet.spec.admission
    team_values = adm.allowed_values.get(LABEL_TEAM)
    if LABEL_TEAM in adm.required_labels and team_values is not None and team.name not in team_values:
        yield UNSATISFIABLE.diag(
            f"allowedValues for {LABEL_TEAM} leave out team {team.name!r}: its GPU jobs would always be denied",
            src.locate(_BASE + ("allowedValues", LABEL_TEAM), key=True), hint=f"add {team.name} to the list")
    declared = [d.name for d in policy.fleet.spec.data_classes]
    dc_values = adm.allowed_values.get(LABEL_DATA_CLASS)
    if LABEL_DATA_CLASS in adm.required_labels and dc_values is not None:
        for i, dc in enumerate(spec.data_classes):
            if dc in declared and dc not in dc_values:
                yield UNSATISFIABLE.diag(
                    f"team {team.name!r} declares data class {dc!r}, which allowedValues for {LABEL_DATA_CLASS} "
                    "leave out: its jobs on that data would always be denied",
                    team.src.locate(("spec", "dataClasses", i)),
                    hint=f"add {dc} to admission.allowedValues in fleet.yaml or drop it from the team")


@checks(EXEMPT_TEAM_NS)
def check_exempt_namespaces(policy: Policy) -> Iterator[Diagnostic]:
    owned = _team_namespaces(policy)
    for i, ns in enumerate(policy.fleet.spec.admission.exempt_namespaces):
        if ns in owned:
            yield EXEMPT_TEAM_NS.diag(f"exempt namespace {ns!r} belongs to team {owned[ns]!r}; the GPU backstop never "
                                      "applies to team namespaces and their own rules still do",
                                      policy.fleet_src.locate(_BASE + ("exemptNamespaces", i)),
                                      hint="drop it from exemptNamespaces")
