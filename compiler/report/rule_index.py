"""compiler/rules_index.json: every rule's ID, area, severity, scope, summary and examples, generated
from the registry so that ``gpupolicy rules`` lists them without importing it.

Importing ``compiler.rules`` imports every module that declares a rule and, with them, pydantic and the
policy models: ~0.2 s, most of ``gpupolicy rules``' start-up (issue #21 wants any command's start-up
at most 0.15 s); reading this file takes a millisecond. ``make docs`` writes it with docs/rules/
(``python -m compiler.report.rule_index``), and tests/test_rules_index.py fails when it differs from
what the registry gives, as tests/test_rule_docs.py does for the pages. An index that is missing or
not in this shape (a damaged install) is not an error: the rules then come from the registry.

This module imports only the standard library and ``compiler.diagnostics`` (itself standard library
only); the registry is imported inside the functions that need it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

if TYPE_CHECKING:
    from compiler.diagnostics import Rule

INDEX = Path(__file__).resolve().parent.parent / "rules_index.json"  # compiler/rules_index.json

# "pass" is a keyword, hence the functional form; the keys and their order are those of
# ``gpupolicy rules --format json`` (which adds each rule's page URL).
RuleEntry = TypedDict("RuleEntry", {"id": str, "area": str, "severity": str, "scope": str, "summary": str,
                                    "pass": str, "fail": str})
FIELDS = tuple(RuleEntry.__annotations__)


def entries(rules: Mapping[str, Rule]) -> list[RuleEntry]:
    """The index of ``rules``, in registry order (the order ``gpupolicy rules`` prints)."""
    return [{"id": r.id, "area": r.area, "severity": r.severity.value, "scope": r.scope.value,
             "summary": r.summary, "pass": r.passing, "fail": r.failing} for r in rules.values()]


def render_index(rules: Mapping[str, Rule] | None = None) -> str:
    """The content of compiler/rules_index.json: one entry per rule, human-diffable."""
    if rules is None:
        from compiler.rules import all_rules  # the registry imports every stage

        rules = all_rules()
    return json.dumps(entries(rules), indent=2, ensure_ascii=False) + "\n"


def parse_index(content: str) -> list[RuleEntry] | None:
    """The entries of an index file, or None when it is not JSON of exactly the index's shape."""
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    for item in data:
        if not (isinstance(item, dict) and tuple(item) == FIELDS and all(isinstance(v, str) for v in item.values())):
            return None
    return cast("list[RuleEntry]", data)


def rule_entries(path: Path = INDEX) -> list[RuleEntry]:
    """Every rule, from the index when it is readable, else from the registry (slower, same answer)."""
    try:
        parsed = parse_index(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        parsed = None
    if parsed is not None:
        return parsed
    from compiler.rules import all_rules

    return entries(all_rules())


def write_index(path: Path = INDEX) -> bool:
    """Write the index to ``path`` when its content would change; whether it did."""
    content = render_index()
    if path.is_file() and path.read_text(encoding="utf-8") == content:
        return False
    path.write_text(content, encoding="utf-8")
    return True


def main() -> int:
    """``python -m compiler.report.rule_index`` (``make docs``): refresh compiler/rules_index.json."""
    changed = write_index()
    print(f"gpupolicy: {INDEX.name} {'written' if changed else 'up to date'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
