"""REPORT.md: the waivers of fleet.yaml, the record of which findings the platform team accepted, who
answers for each, why and until when (``compiler.model.waivers``).

The section lists what the policy says, not whether a waiver has expired: REPORT.md is rendered
from the policy alone (and stored with it), while expiry depends on the day of the run and is an
error then (FLEET017). No waivers, no section, so a policy without any renders as before.
"""

from __future__ import annotations

from compiler import escape
from compiler.policy.graph import Policy


def waivers_section(policy: Policy) -> list[str]:
    waivers = policy.fleet.spec.waivers
    if not waivers:
        return []
    src = policy.fleet_src
    lines = ["## Waivers", "",
             f"Findings accepted on purpose in `{src.path}` (reviewed by its owners; an expired waiver fails the run, "
             "FLEET017). A waived finding is reported as `info` and does not fail the run.", "",
             "| rule | target | owner | reason | expires | declared at |", "|---|---|---|---|---|---|"]
    rows = sorted((w.expires, w.rule, i, w) for i, w in enumerate(waivers))
    for _, _, i, w in rows:
        loc = src.locate(("spec", "waivers", i))
        cells = (escape.md_code(w.rule, table=True), escape.md_text(w.target()), escape.md_code(w.owner, table=True),
                 escape.md_text(w.reason), w.expires, escape.md_code(f"{loc.file}:{loc.line}", table=True))
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]
