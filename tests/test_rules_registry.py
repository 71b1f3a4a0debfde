"""The rule registry: every rule has a stable ID, a scope, a one-line summary and PASS/FAIL examples;
every ID the code can emit is registered; every semantic rule has its own check; every rule is tested."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from conftest import REPO, UNREGISTERED

import compiler
from compiler.diagnostics import Diagnostic, Rule, Scope
from compiler.rules import AREAS, RULES, all_rules, get
from compiler.validate import driver

ID = re.compile(r"(%s)\d{3}" % "|".join(AREAS))
SOURCES = sorted((REPO / "compiler").rglob("*.py"))


def test_every_rule_is_documented() -> None:
    rules = all_rules()
    assert len(rules) >= 120
    for rid, rule in rules.items():
        assert ID.fullmatch(rid) and rule.area == rid[:-3]
        assert rule.summary.strip() and "\n" not in rule.summary, rid
        assert rule.passing.strip() and rule.failing.strip(), rid
        assert rule.passing != rule.failing, rid
        assert isinstance(rule.scope, Scope), rid
    assert {rid[:-3] for rid in rules} == set(AREAS)


def test_registry_is_explicit() -> None:
    assert len(RULES) == len(all_rules())  # no ID declared twice
    assert "VERIFY900" in all_rules()
    with pytest.raises(KeyError):
        get("FLEET999")
    with pytest.raises(ValueError):
        Rule("FLEET01", "s", "p", "f", Diagnostic("FLEET001", "").severity, Scope.FLEET)


def _literals(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.value, n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and ID.fullmatch(n.value)]


def test_every_rule_id_literal_is_registered() -> None:
    """A rule ID written anywhere in compiler/ (declared, compared, emitted) is in the registry."""
    rules = all_rules()
    missing = [f"{p.relative_to(REPO)}:{line}: {rid}" for p in SOURCES for rid, line in _literals(p) if rid not in rules]
    assert not missing, missing


def test_every_rule_object_is_registered() -> None:
    """Every ``Rule`` any compiler module holds is the registered one, and every module's ``RULES`` is
    in the registry (a module that declares rules but is not imported by compiler.rules fails here)."""
    registered = {id(r) for r in RULES}
    seen = 0
    for info in pkgutil.walk_packages(compiler.__path__, "compiler."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Rule):
                seen += 1
                assert id(value) in registered, f"{info.name}.{name} ({value.id}) is not in compiler.rules.RULES"
        for rule in getattr(module, "RULES", ()):
            assert id(rule) in registered, f"{info.name}.RULES has {rule.id}, which compiler.rules does not import"
    assert seen >= len(RULES)


def test_semantic_rules_have_checks_by_scope() -> None:
    """Each rule the validate driver runs has a check of its own scope; team checks take (policy, team)."""
    for rule in driver.RULES:
        if rule.scope in driver.RUN_SCOPES:
            assert rule.check is not None, f"{rule.id} ({rule.scope.value}) has no check"
            params = list(inspect.signature(rule.check).parameters)
            assert len(params) == (2 if rule.scope is Scope.TEAM else 1), (rule.id, params)
        else:
            assert rule.check is None, rule.id  # emitted by a later stage (GITOPS006 over the objects)
    assert not [r.id for r in RULES if r.check is not None and r not in driver.RULES]
    one_rule = [r for r in driver.RULES if r.check and sum(o.check is r.check for o in driver.RULES) == 1]
    assert len(one_rule) >= 30  # one check per rule is the norm; serving, DRA, MultiKueue bundle a pass


def test_every_rule_has_a_test() -> None:
    """Each rule ID appears in at least one test besides this file (yamllint: tests mirror rules)."""
    here = Path(__file__).resolve()
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(here.parent.glob("*.py")) if p != here)
    untested = [rid for rid in all_rules() if not re.search(rf"\b{rid}\b", text)]
    assert not untested, untested


def test_unregistered_diagnostic_fails_the_test() -> None:
    """The autouse guard in conftest.py records a diagnostic with an unregistered ID."""
    start = len(UNREGISTERED)
    Diagnostic("FLEET999", "not a rule")
    assert UNREGISTERED[start:] == ["FLEET999"]
    del UNREGISTERED[start:]
