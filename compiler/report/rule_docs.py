"""docs/rules/: one page per rule, generated from the registry (as ruff's rule pages), plus an index.

Each diagnostic links its page (``compiler.diagnostics.rule_url``), so the page says what a reader
of a finding needs: what the rule checks and why (its summary, the docstrings of its check and of
the module that declares it), PASS and FAIL examples, who fixes it where, and whether and how it
can be waived (``compiler.validate.waivers``). ``gpupolicy rules --docs docs/rules`` (``make docs``)
writes them; ``tests/test_rule_docs.py`` fails when the committed pages differ from what this renders.
``make docs`` also writes compiler/rules_index.json (``compiler.report.rule_index``), the list that
``gpupolicy rules`` prints without importing the registry.

Rule text is compiler source, not policy input, but it is still escaped for markdown: summaries
name paths such as ``teams/<team>.yaml``, which GitHub would otherwise take for an HTML tag.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import yaml

from compiler.diagnostics import AREAS, Rule, Scope
from compiler.escape import md_fence, text
from compiler.validate.waivers import why_not_waivable

HEADER = ("<!-- Generated from the rule registry (compiler/rules.py) by `gpupolicy rules --docs docs/rules` "
          "(make docs); do not edit. -->")
PAGE = re.compile(r"^[A-Z]{2,8}\d{3}\.md$")  # what the writer may replace or remove in a directory

AREA_TITLES: Mapping[str, str] = {
    "LOAD": "Reading the policy files",
    "SCHEMA": "Each file against the language",
    "FLEET": "Fleet and team structure, references, waivers",
    "KUEUE": "Quotas, cohorts and Kueue's limits",
    "MIG": "MIG layouts against the GPU catalog",
    "DRA": "Dynamic Resource Allocation: device classes and claims",
    "SERVE": "Serving deployments: fit, replicas, storage",
    "ADM": "Admission and tenancy",
    "GITOPS": "Delivery: ArgoCD, MultiKueue, sync safety",
    "VERIFY": "The rendered objects against CRDs, CEL and Kueue's webhooks",
    "OPS": "What ArgoCD syncs must also run",
}

SCOPES: Mapping[Scope, str] = {
    Scope.FILE: "one policy file alone; fix it at the reported line of that file",
    Scope.FLEET: "fleet.yaml and what derives from it; the platform team fixes it there",
    Scope.TEAM: "one team file against the fleet; the team fixes it in its own file",
    Scope.POLICY: "the fleet and every team together; the error sits where the fix most likely belongs, with an "
                  "`info` note on each other file that contributes",
    Scope.OUTPUT: "the rendered objects in out/; the finding names the object, the fix is in the policy that renders it",
}

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_SPECIAL = re.compile(r"([\\*_\[\]|~#!])")


def _inline(s: str) -> str:
    """One line of prose: code spans kept (nothing renders inside them), everything else inert."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(s):
        out.append(_escape(s[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_escape(s[pos:]))
    return "".join(out)


def _escape(s: str) -> str:
    s = text(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", s)


def _prose(doc: str) -> list[str]:
    """A docstring as markdown lines: dedented, each line escaped, paragraphs kept."""
    lines = [_inline(line) if line.strip() else "" for line in inspect.cleandoc(doc).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def declaring_module(rule: Rule) -> ModuleType | None:
    """The module that declares ``rule``: it holds the rule and lists it in its ``RULES``."""
    for name in sorted(sys.modules):
        module = sys.modules[name]
        if not name.startswith("compiler.") or module is None:
            continue
        if any(v is rule for v in vars(module).values()) and any(r is rule for r in getattr(module, "RULES", ())):
            return module
    return None


def _source_path(module: ModuleType) -> str:
    return module.__name__.replace(".", "/") + ".py"


def render_page(rule: Rule) -> str:
    module = declaring_module(rule)
    lines = [HEADER, "", f"# {rule.id}", "", _inline(rule.summary), "",
             "| | |", "|---|---|",
             f"| Area | [{rule.area}](README.md#{rule.area.lower()}): {_escape(AREA_TITLES[rule.area])} |",
             f"| Severity | {rule.severity.value} |",
             f"| Scope | `{rule.scope.value}`: {_inline(SCOPES[rule.scope])} |"]
    if module is not None:
        lines.append(f"| Declared in | `{_source_path(module)}` |")
    if rule.check is not None:
        lines.append(f"| Check | `{rule.check.__name__}` |")
    if rule.team_part is not None:
        lines.append(f"| Per team | `{rule.team_part.__name__}`: reads the fleet and one team, kept with that team |")
    lines.append(f"| Waivable | {'no' if why_not_waivable(rule.id) else 'yes'} |")
    lines += ["", "## What it checks and why", ""]
    for check in (rule.check, rule.team_part):
        if check is not None and check.__doc__:
            lines += [*_prose(check.__doc__), ""]
    if module is not None and module.__doc__:
        lines += [f"From `{_source_path(module)}`:", "", *[f"> {x}" if x else ">" for x in _prose(module.__doc__)], ""]
    lines += ["## Examples", "", "Passes:", "", md_fence(rule.passing, _language(rule.passing)), "",
              "Fails:", "", md_fence(rule.failing, _language(rule.failing)), ""]
    lines += ["## How to fix", "",
              f"A {rule.id} finding is located at file:line:col and its message names the objects involved; most "
              "carry a `hint:` line saying what to change in that case. Compare with the passing example above. "
              f"Scope `{rule.scope.value}`: {_inline(SCOPES[rule.scope])}.", ""]
    lines += ["## How to waive", "", *_waiving(rule)]
    return "\n".join(lines).rstrip("\n") + "\n"


def _language(example: str) -> str:
    """``yaml`` for an example that is a YAML mapping or list, else ``text`` (a command line, prose)."""
    try:
        data = yaml.safe_load(example)
    except yaml.YAMLError:
        return "text"  # a FAIL example may be broken YAML on purpose (LOAD rules)
    return "yaml" if isinstance(data, (dict, list)) else "text"


def _waiving(rule: Rule) -> list[str]:
    why = why_not_waivable(rule.id)
    if why is not None:
        return [f"{rule.id} cannot be waived: {_inline(why)}."]
    example = (f"spec:\n  waivers:\n    - rule: {rule.id}\n      team: vision           # and/or cluster: onprem; "
               "or scope: fleet (everywhere)\n      owner: \"@acme/ml-platform\"\n"
               "      reason: why this is acceptable until then\n      expires: \"2027-03-31\"")
    return ["A waiver in `policies/fleet.yaml` (owned and reviewed by the platform team) accepts findings of "
            f"{rule.id} for a team and/or a cluster until a date. A waived finding is reported as `info`, saying by "
            "whom, why and until when, and no longer fails the run; an expired waiver is an error (FLEET017), one "
            "that covers nothing a warning (FLEET018). REPORT.md lists every waiver.", "",
            md_fence(example, "yaml")]


def render_index(rules: Mapping[str, Rule]) -> str:
    lines = [HEADER, "", "# Rules", "",
             f"Every rule gpupolicy can report, {len(rules)} in all, by area. Each diagnostic names its rule ID and "
             "links its page; `gpupolicy rules --examples` prints the same list in a terminal. Findings can be "
             "accepted for a while with a waiver in fleet.yaml (each page says whether and how).", ""]
    for area in AREAS:
        in_area = [r for r in rules.values() if r.area == area]
        if not in_area:
            continue
        lines += [f"## {area}", "", _escape(AREA_TITLES[area]), "", "| rule | severity | summary |", "|---|---|---|"]
        lines += [f"| [{r.id}]({r.id}.md) | {r.severity.value} | {_inline(r.summary)} |" for r in in_area]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_rule_docs(rules: Mapping[str, Rule] | None = None) -> dict[str, str]:
    """File name -> content of every page of docs/rules/."""
    if rules is None:
        from compiler.rules import all_rules  # the registry imports every stage

        rules = all_rules()
    pages = {f"{rid}.md": render_page(rule) for rid, rule in rules.items()}
    pages["README.md"] = render_index(rules)
    return pages


def write_rule_docs(directory: Path) -> tuple[int, int]:
    """Write every page into ``directory`` and remove rule pages no rule has any more; (written, removed)."""
    pages = render_rule_docs()
    directory.mkdir(parents=True, exist_ok=True)
    removed = 0
    for old in sorted(directory.glob("*.md")):
        if PAGE.match(old.name) and old.name not in pages:
            old.unlink()
            removed += 1
    for name, content in pages.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
    return len(pages), removed

