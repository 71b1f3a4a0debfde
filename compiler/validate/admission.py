"""Admission and tenancy rules (ADM): the labels admission requires can be met, and every team
that gets namespaces can be given access to them."""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Severity
from compiler.policy.graph import Policy, serving_namespace
from compiler.rules import define

NO_GROUPS = define(
    "ADM001", "A team with namespaces declares at least one identity group, so RBAC can let it submit there.",
    "namespaces: [{name: ml-train, clusters: [onprem]}]\ngroups: ['acme:ml']",
    "namespaces: [{name: ml-train, clusters: [onprem]}]\n# no groups: nobody may submit in ml-train",
    Severity.WARNING)
UNUSED_ALLOWED = define(
    "ADM002", "Every key of admission.allowedValues is a required label (others are never checked).",
    "requiredLabels: [gpupolicy.dev/team, gpupolicy.dev/model, gpupolicy.dev/data-class]\n"
    "allowedValues: {gpupolicy.dev/model: [llama-3]}",
    "allowedValues: {example.com/cost-center: [a, b]}   # not in requiredLabels", Severity.WARNING)
UNKNOWN_DATA_CLASS = define(
    "ADM003", "Allowed values of gpupolicy.dev/data-class are declared data classes.",
    "dataClasses: [{name: public}, {name: pii}]\nallowedValues: {gpupolicy.dev/data-class: [public, pii]}",
    "dataClasses: [{name: public}]\nallowedValues: {gpupolicy.dev/data-class: [public, secret]}")
AUDIT_LABELS = define(
    "ADM004", "requiredLabels include gpupolicy.dev/team, gpupolicy.dev/model and gpupolicy.dev/data-class "
    "(the audit question: who held which GPU, for which model, with which data).",
    "requiredLabels: [gpupolicy.dev/team, gpupolicy.dev/model, gpupolicy.dev/data-class, example.com/project]",
    "requiredLabels: [gpupolicy.dev/team]")
UNSATISFIABLE = define(
    "ADM005", "allowedValues leave room for every team: its name under gpupolicy.dev/team and each data class "
    "it declares under gpupolicy.dev/data-class.",
    "allowedValues: {gpupolicy.dev/data-class: [public, internal, pii]}   # nlp declares internal, pii",
    "allowedValues: {gpupolicy.dev/data-class: [public]}   # nlp declares pii: its GPU jobs are always denied")
EXEMPT_TEAM_NS = define(
    "ADM006", "admission.exemptNamespaces names no team namespace (team namespaces are always checked).",
    "exemptNamespaces: [legacy-ml]", "exemptNamespaces: [nlp-train]   # a team namespace", Severity.WARNING)


def _team_namespaces(policy: Policy) -> dict[str, str]:
    out: dict[str, str] = {}
    for team in policy.teams:
        spec = team.model.spec
        for ns in spec.namespaces:
            out.setdefault(ns.name, team.name)
        if spec.serving:
            out.setdefault(serving_namespace(team.name, spec.serving_namespace), team.name)
    return out


def check_admission(policy: Policy) -> Iterator[Diagnostic]:
    # Imported here: compiler.lower imports compiler.validate.semantic, which imports this module.
    from compiler.lower.common import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_TEAM

    src = policy.fleet_src
    adm = policy.fleet.spec.admission
    base = ("spec", "admission")
    missing = [k for k in (LABEL_TEAM, LABEL_MODEL, LABEL_DATA_CLASS) if k not in adm.required_labels]
    if missing:
        yield AUDIT_LABELS.diag(f"admission.requiredLabels lacks {', '.join(missing)}",
                                src.locate(base + ("requiredLabels",), key=True),
                                hint="workloads without them cannot be attributed to a team, model and data class")
    declared = [d.name for d in policy.fleet.spec.data_classes]
    for key, values in adm.allowed_values.items():
        loc = src.locate(base + ("allowedValues", key), key=True)
        if key not in adm.required_labels:
            yield UNUSED_ALLOWED.diag(f"allowedValues names {key!r}, which is not a required label, so admission "
                                      "never checks it", loc, hint=f"add {key} to admission.requiredLabels or drop it")
        if key == LABEL_DATA_CLASS:
            for i, v in enumerate(values):
                if v not in declared:
                    yield UNKNOWN_DATA_CLASS.diag(
                        f"allowed data class {v!r} is not declared under spec.dataClasses",
                        src.locate(base + ("allowedValues", key, i)), hint=f"declared: {', '.join(declared)}")
    for team in policy.teams:
        spec = team.model.spec
        if (spec.namespaces or spec.serving) and not spec.groups:
            yield NO_GROUPS.diag(f"team {team.name!r} has namespaces but no identity groups: no RoleBinding is "
                                 "generated, so nobody may submit there", team.src.locate(("spec", "owners")),
                                 hint="add groups: [<your identity provider group>] (distinct from code owners)")
        if not spec.namespaces:
            continue
        team_values = adm.allowed_values.get(LABEL_TEAM)
        if LABEL_TEAM in adm.required_labels and team_values is not None and team.name not in team_values:
            yield UNSATISFIABLE.diag(
                f"allowedValues for {LABEL_TEAM} leave out team {team.name!r}: its GPU jobs would always be denied",
                src.locate(base + ("allowedValues", LABEL_TEAM), key=True), hint=f"add {team.name} to the list")
        dc_values = adm.allowed_values.get(LABEL_DATA_CLASS)
        if LABEL_DATA_CLASS in adm.required_labels and dc_values is not None:
            for i, dc in enumerate(spec.data_classes):
                if dc in declared and dc not in dc_values:
                    yield UNSATISFIABLE.diag(
                        f"team {team.name!r} declares data class {dc!r}, which allowedValues for {LABEL_DATA_CLASS} "
                        "leave out: its jobs on that data would always be denied",
                        team.src.locate(("spec", "dataClasses", i)),
                        hint=f"add {dc} to admission.allowedValues in fleet.yaml or drop it from the team")
    owned = _team_namespaces(policy)
    for i, ns in enumerate(adm.exempt_namespaces):
        if ns in owned:
            yield EXEMPT_TEAM_NS.diag(f"exempt namespace {ns!r} belongs to team {owned[ns]!r}; the GPU backstop never "
                                      "applies to team namespaces and their own rules still do",
                                      src.locate(base + ("exemptNamespaces", i)), hint="drop it from exemptNamespaces")
