"""Offline evaluation of ValidatingAdmissionPolicies + Bindings against one admission request.

Enough of the API server's semantics to test gpupolicy's policies and to answer "would this job
be admitted": resource rules (operations, groups, resources, scope; versions are taken as
converted under ``matchPolicy: Equivalent``), namespace and object selectors of the policy and
the binding, ``matchConditions`` (any false skips the policy; otherwise an error applies the
failure policy; no ``variables`` there), ``variables`` bound lazily (a variable is evaluated
when an expression refers to it, once, and its error surfaces only if the expression needs
it), ``validations`` (all must hold; ``messageExpression`` falls back to ``message``, then to
"failed expression"), ``auditAnnotations``, ``failurePolicy`` and the binding's
``validationActions``. Not modelled: params, ``authorizer``, CEL cost limits, type checking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from compiler.cel import CelError, admission_request, compile_expr

_VAR_REF = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")
_PLURALS = {"Endpoints": "endpoints"}


@dataclass(frozen=True)
class Violation:
    message: str
    reason: str = "Invalid"
    expression: str = ""
    error: bool = False  # an evaluation error under failurePolicy Fail, not a false validation


@dataclass
class Outcome:
    policy: str
    binding: str
    actions: tuple[str, ...]
    violations: list[Violation] = field(default_factory=list)
    audit: dict[str, str] = field(default_factory=dict)

    @property
    def denies(self) -> bool:
        return bool(self.violations) and "Deny" in self.actions


@dataclass
class Decision:
    outcomes: list[Outcome]

    @property
    def allowed(self) -> bool:
        return not any(o.denies for o in self.outcomes)

    @property
    def denials(self) -> list[str]:
        return [v.message for o in self.outcomes if o.denies for v in o.violations]

    @property
    def warnings(self) -> list[str]:
        return [v.message for o in self.outcomes if "Warn" in o.actions for v in o.violations]

    @property
    def audit(self) -> dict[str, str]:
        return {k: v for o in self.outcomes for k, v in o.audit.items()}


def resource_of(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    kind = str(obj.get("kind", ""))
    return group, version, _PLURALS.get(kind, kind.lower() + "s")


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        ok = {"In": key in labels and labels[key] in values, "NotIn": key not in labels or labels[key] not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def _rule_matches(rule: Mapping[str, Any], op: str, res: tuple[str, str, str], namespaced: bool) -> bool:
    group, _, resource = res
    ops, groups, resources = rule.get("operations", []), rule.get("apiGroups", []), rule.get("resources", [])
    scope = rule.get("scope", "*")
    return ((op in ops or "*" in ops) and (group in groups or "*" in groups)
            and (resource in resources or "*" in resources)
            and (scope == "*" or scope == ("Namespaced" if namespaced else "Cluster")))


def _matches(match: Mapping[str, Any] | None, op: str, res: tuple[str, str, str], ns_labels: Mapping[str, str] | None,
             obj_labels: Iterable[Mapping[str, str]], need_rules: bool) -> bool:
    match = match or {}
    rules = match.get("resourceRules")
    namespaced = ns_labels is not None and res[2] != "namespaces"
    if rules is not None or need_rules:
        if not any(_rule_matches(r, op, res, namespaced) for r in rules or []):
            return False
    if any(_rule_matches(r, op, res, namespaced) for r in match.get("excludeResourceRules") or []):
        return False
    if ns_labels is not None and not selector_matches(match.get("namespaceSelector"), ns_labels):
        return False
    sel = match.get("objectSelector")
    return not sel or any(selector_matches(sel, labels) for labels in obj_labels)


class _Scope:
    """Lazily bound ``variables``: each evaluated on first reference, in declaration order."""

    def __init__(self, specs: list[Mapping[str, str]], base: dict[str, Any]) -> None:
        self.order = [s["name"] for s in specs]
        self.exprs = {s["name"]: s["expression"] for s in specs}
        self.base = base
        self.values: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def _bind(self, name: str, before: int | None = None) -> None:
        if name in self.values or name in self.errors or name not in self.exprs:
            return
        idx = self.order.index(name)
        if before is not None and idx >= before:
            self.errors[name] = f"variable {name!r} is declared after its use"
            return
        try:
            self.values[name] = self.evaluate(self.exprs[name], before=idx)
        except CelError as exc:
            self.errors[name] = f"variable {name!r}: {exc}"

    def evaluate(self, expr: str, before: int | None = None) -> Any:
        refs = _VAR_REF.findall(expr)
        for ref in refs:
            self._bind(ref, before)
        visible = {k: v for k, v in self.values.items() if before is None or self.order.index(k) < before}
        try:
            return compile_expr(expr).evaluate({**self.base, "variables": visible})
        except CelError as exc:
            failed = [self.errors[r] for r in refs if r in self.errors]
            raise CelError(failed[0] if failed else str(exc), expr) from None


def _message(check: Mapping[str, Any], scope: _Scope) -> str:
    me = check.get("messageExpression")
    if me:
        try:
            text = scope.evaluate(me)
            if isinstance(text, str) and text.strip() and "\n" not in text:
                return text
        except CelError:
            pass
    return str(check.get("message") or f"failed expression: {check['expression']}")


def evaluate(
    policy: Mapping[str, Any], binding: Mapping[str, Any], obj: Mapping[str, Any] | None, *,
    old: Mapping[str, Any] | None = None, operation: str = "CREATE", namespace: Mapping[str, Any] | None = None,
    user: str = "", groups: Iterable[str] = (),
) -> Outcome | None:
    """Evaluate one policy through one binding; ``None`` when it does not apply to the request."""
    spec, bspec = policy["spec"], binding["spec"]
    subject = obj if obj is not None else old or {}
    res = resource_of(subject)
    ns_labels: dict[str, str] | None = None
    if subject.get("kind") == "Namespace":
        ns_labels = dict((subject.get("metadata") or {}).get("labels") or {})
    elif namespace is not None:
        meta = namespace.get("metadata") or {}
        ns_labels = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta.get("name", "")}
    obj_labels = [dict((o.get("metadata") or {}).get("labels") or {}) for o in (obj, old) if o is not None]
    if not _matches(spec.get("matchConstraints"), operation, res, ns_labels, obj_labels, need_rules=True):
        return None
    if not _matches(bspec.get("matchResources"), operation, res, ns_labels, obj_labels, need_rules=False):
        return None
    request = admission_request(subject, operation, user)
    request["userInfo"]["groups"] = list(groups)
    request["resource"] = {"group": res[0], "version": res[1], "resource": res[2]}
    if namespace is not None:
        request["namespace"] = (namespace.get("metadata") or {}).get("name", "")
    base = {"object": obj, "oldObject": old, "request": request, "params": None, "namespaceObject": namespace}
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    out = Outcome(policy["metadata"]["name"], binding["metadata"]["name"], tuple(bspec.get("validationActions", [])))
    no_vars = _Scope([], base)  # matchConditions see no variables
    errors = []
    for cond in spec.get("matchConditions") or []:
        try:
            if no_vars.evaluate(cond["expression"]) is False:
                return None
        except CelError as exc:
            errors.append(f"matchCondition {cond['name']!r}: {exc}")
    if errors:
        if not fail:
            return None
        out.violations.append(Violation(errors[0], "InternalError", error=True))
        return out
    scope = _Scope(list(spec.get("variables") or []), base)
    for check in spec.get("validations") or []:
        try:
            ok = scope.evaluate(check["expression"])
            if not isinstance(ok, bool):
                raise CelError(f"validation returned {type(ok).__name__}, not bool", check["expression"])
        except CelError as exc:
            if fail:
                out.violations.append(Violation(f"expression {check['expression'][:60]!r} failed: {exc}",
                                                "InternalError", check["expression"], error=True))
            continue
        if not ok:
            out.violations.append(Violation(_message(check, scope), check.get("reason", "Invalid"), check["expression"]))
    for ann in spec.get("auditAnnotations") or []:
        try:
            value = scope.evaluate(ann["valueExpression"])
        except CelError as exc:
            if fail:
                out.violations.append(Violation(f"auditAnnotation {ann['key']!r}: {exc}", "InternalError", error=True))
            continue
        if isinstance(value, str) and value:
            out.audit[f"{out.policy}/{ann['key']}"] = value
    return out


def admit(objects: Iterable[Mapping[str, Any]], obj: Mapping[str, Any] | None, **request: Any) -> Decision:
    """Run every (policy, binding) pair among ``objects`` (VAPs and bindings) on one request."""
    objects = list(objects)
    policies = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ValidatingAdmissionPolicy"}
    outcomes = []
    for b in objects:
        if b.get("kind") != "ValidatingAdmissionPolicyBinding":
            continue
        p = policies.get(b["spec"]["policyName"])
        if p is not None:
            o = evaluate(p, b, obj, **request)
            if o is not None:
                outcomes.append(o)
    return Decision(outcomes)
