"""``--format sarif``: the diagnostics as a SARIF 2.1.0 log, the format GitHub code scanning reads.

One run; ``tool.driver`` names gpupolicy and describes every rule that appears, from the registry
(``compiler.rules``: summary, PASS/FAIL examples, the rule's page as ``helpUri``). Locations are
relative to the repository root under the ``%SRCROOT%`` base, the name SARIF producers use for
the checkout (sarif-sdk, GitHub's upload-sarif resolves relative URIs against the checkout), so
the log carries no absolute path of the machine that made it.

GitHub code scanning needs a ``region.startLine`` on every result it shows in a file
(``microsoft/sarif-sdk`` rule GH1003, ``src/Sarif.Multitool.Library/Rules/GH1003.ProvideRequiredRegionProperties.cs``):
findings about a whole file arrive here placed at the document start
(``render.place_file_findings``); a finding about a file that does not exist (a missing fleet.yaml,
a generated file ``check`` finds gone) has no position to give and gets line 1, where the file would
begin, without a column: its result then has the region GH1003 asks for (an error of that rule's
validator) and still names the path, where a notification would drop it from code scanning.
A result without any location makes the upload fail, the run's other results with it ("expected
at least one location": github/codeql-action issues 1738 and 2459), so a finding located nowhere
is a tool notification of the run's invocation instead (``toolExecutionNotifications``, SARIF
3.20.21), which code scanning does not show but does not reject; gpupolicy's own findings all
have a file (the Kubernetes version findings name the fleet file's ``kubernetesVersion``).
Validated against the OASIS schema (errata01) in tests/test_formats.py.
"""

from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import quote

from compiler.diagnostics import HOMEPAGE, Diagnostic, Rule, Severity, rule_url

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("gpupolicy")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def rule_descriptor(rule: Rule) -> dict[str, Any]:
    """A ``reportingDescriptor``: what code scanning shows beside an alert (short description on
    top, the help below it, the link to the rule's page)."""
    text = f"{rule.summary}\n\nPasses:\n{rule.passing}\n\nFails:\n{rule.failing}\n\nSee {rule_url(rule.id)}"
    markdown = (f"{rule.summary}\n\nPasses:\n\n```yaml\n{rule.passing}\n```\n\nFails:\n\n```yaml\n{rule.failing}\n```"
                f"\n\n[{rule.id}]({rule_url(rule.id)})")
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary} (area {rule.area}, reads the {rule.scope.value})"},
        "help": {"text": text, "markdown": markdown},
        "helpUri": rule_url(rule.id),
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": [rule.area, rule.scope.value]},
    }


def _unregistered(code: str) -> dict[str, Any]:
    return {"id": code, "shortDescription": {"text": code}, "helpUri": rule_url(code)}


def _result(d: Diagnostic, index: int) -> dict[str, Any]:
    text = d.message + (f" (hint: {d.hint})" if d.hint else "")
    out: dict[str, Any] = {"ruleId": d.code, "ruleIndex": index, "level": LEVELS[d.severity], "message": {"text": text}}
    if d.location is not None:
        physical: dict[str, Any] = {"artifactLocation": {"uri": quote(d.location.file, safe="/"), "uriBaseId": SRCROOT}}
        line = d.location.line
        physical["region"] = {"startLine": line, "startColumn": max(d.location.col, 1)} if line > 0 else {"startLine": 1}
        out["locations"] = [{"physicalLocation": physical}]
    if d.path:
        out["properties"] = {"path": d.path}
    return out


def sarif_log(diags: Sequence[Diagnostic]) -> dict[str, Any]:
    from compiler.rules import all_rules  # every stage's rule module: only when SARIF is asked for

    registry = all_rules()
    codes = sorted({d.code for d in diags})
    index = {code: i for i, code in enumerate(codes)}
    rules = [rule_descriptor(registry[c]) if c in registry else _unregistered(c) for c in codes]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gpupolicy", "version": _version(), "informationUri": HOMEPAGE,
                                "rules": rules}},
            "columnKind": "unicodeCodePoints",  # columns count characters, as the YAML loader does
            "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": [
                _notification(d, index[d.code]) for d in diags if not _located(d)]}],
            "results": [_result(d, index[d.code]) for d in diags if _located(d)],
        }],
    }


def _located(d: Diagnostic) -> bool:
    return d.location is not None and bool(d.location.file)


def _notification(d: Diagnostic, index: int) -> dict[str, Any]:
    """A finding located nowhere, as a notification naming its rule (``associatedRule``)."""
    text = d.message + (f" (hint: {d.hint})" if d.hint else "")
    return {"level": LEVELS[d.severity], "message": {"text": text},
            "associatedRule": {"id": d.code, "index": index}}
