"""``--format junit``: the diagnostics as a JUnit XML report, which GitLab (``artifacts:reports:junit``),
Jenkins (``junit`` step) and Azure Pipelines (``PublishTestResults``, JUnit) show as test results.

One ``testsuite`` per file, one ``testcase`` per rule per file (name: the rule ID, classname: the
file), with a ``failure`` when the rule fails the run there: an error, or a warning under
``--strict``. Warnings and notes that do not fail the run are passing test cases whose
``system-out`` lists them. A clean run is one suite with one passing case, so CI shows a test ran.
The shape follows the Jenkins/Ant ``junit.xsd`` subset all three read: ``testsuites`` >
``testsuite`` (name, tests, failures, errors, skipped) > ``testcase`` (name, classname) >
``failure`` (message, type) with the details as text; at most one ``failure`` per case. GitLab
reads ``testsuites`` > ``testsuite`` > ``testcase`` (name, classname, file, time), a case with a
``failure`` child as failed and its text as the output shown (``gitlabhq/gitlabhq``,
``lib/gitlab/ci/parsers/test/junit.rb`` at 028d8ac9); it ignores a passing case's ``system-out``.

XML is built with ElementTree, which escapes markup; characters XML 1.0 cannot carry at all
(control characters, lone surrogates) are shown as ``\\xNN`` / ``\\uNNNN`` first (``escape.text``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Sequence

from compiler import escape
from compiler.diagnostics import Diagnostic, Severity, rule_url

_NOT_XML = re.compile(r"[\ud800-\udfff\ufffe\uffff]")
NO_FILE = "<policy>"


def _xml(s: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group(0)):04x}", escape.text(s))


def _fails(d: Diagnostic, strict: bool) -> bool:
    return d.severity is Severity.ERROR or (strict and d.severity is Severity.WARNING)


def _line(d: Diagnostic) -> str:
    where = f"{d.location.line}:{d.location.col}: " if d.location is not None and d.location.line > 0 else ""
    hint = f" (hint: {_xml(d.hint)})" if d.hint else ""
    return f"{where}{d.severity.value}: {_xml(d.message)}{hint}"


def _case(suite: ET.Element, file: str, code: str, found: list[Diagnostic], strict: bool) -> bool:
    case = ET.SubElement(suite, "testcase", name=code, classname=_xml(file), time="0")
    if found[0].location is not None and found[0].location.file:
        case.set("file", _xml(file))
        if found[0].location.line > 0:
            case.set("line", str(found[0].location.line))
    details = "\n".join(_line(d) for d in found) + f"\nsee {rule_url(code)}"
    failing = [d for d in found if _fails(d, strict)]
    if failing:
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        failure = ET.SubElement(case, "failure", message=_xml(failing[0].message) + more,
                                type=failing[0].severity.value)
        failure.text = details
    else:
        ET.SubElement(case, "system-out").text = details
    return bool(failing)


def junit_xml(diags: Sequence[Diagnostic], *, strict: bool = False) -> str:
    by_file: dict[str, dict[str, list[Diagnostic]]] = defaultdict(lambda: defaultdict(list))
    for d in diags:
        by_file[d.location.file if d.location is not None and d.location.file else NO_FILE][d.code].append(d)
    root = ET.Element("testsuites", name="gpupolicy")
    total = failed = 0
    for file in sorted(by_file):
        suite = ET.SubElement(root, "testsuite", name=_xml(file), errors="0", skipped="0", time="0")
        cases = by_file[file]
        fails = sum(_case(suite, file, code, cases[code], strict) for code in sorted(cases))
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(fails))
        total += len(cases)
        failed += fails
    if not by_file:
        suite = ET.SubElement(root, "testsuite", name="gpupolicy", tests="1", failures="0", errors="0",
                              skipped="0", time="0")
        ET.SubElement(suite, "testcase", name="no findings", classname="gpupolicy", time="0")
        total = 1
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
