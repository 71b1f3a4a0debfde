"""GITOPS404: REPORT.md, and the files its long tables go to, within the size GitHub renders.

REPORT.md is the people's view of the allocation, read on GitHub. GitHub renders a Markdown
preview only for files that are "small (generally less than 2 MB)"; larger or more complex ones
"may time out and either fall back to plain text or not be displayed at all" (docs.github.com,
"Repository limits", Text limits). With every table inline REPORT.md grew with teams times their
clusters (~1.3 KB per team: 1.3 MB at 1,000 teams on 20 clusters, 6.1 MB at 5,000), so its long
tables now go to files of their own (``compiler.report.report_tables``: 0.41 MB and at most
0.56 MB at 5,000 teams). A file can still reach the limit (one cluster's table of ~20,000 budget
entries); this warns, on the run that crosses it.
"""

from __future__ import annotations

from typing import Mapping

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, define
from compiler.policy.graph import Policy
from compiler.report.report_tables import REPORT, ROWS_INLINE, is_report_markdown

GITHUB_RENDER_BYTES = 2_000_000  # "generally less than 2 MB": the larger reading of MB would promise too much
TOO_LARGE = define(
    "GITOPS404", "The rendered REPORT.md and the files of its long tables (REPORT.<name>.md) are under the 2 MB "
    "GitHub renders as Markdown: over it GitHub shows a file as plain text or not at all.",
    "# 5,000 teams on 20 clusters: REPORT.md 0.41 MB, the largest table 0.56 MB",
    "# one cluster with ~20,000 budget entries: REPORT.cluster.<name>.md over 2 MB",
    Severity.WARNING, scope=Scope.OUTPUT)
RULES: tuple[Rule, ...] = (TOO_LARGE,)


def over_github_limit(rule: Rule, policy: Policy, size: int, limit: int, message: str, hint: str) -> list[Diagnostic]:
    """``rule``'s finding when a generated file of ``size`` bytes reaches the ``limit`` GitHub
    sets for it (GITOPS403 for CODEOWNERS, GITOPS404 for REPORT.md; ``message`` states the
    figures), located on the platform's owners in fleet.yaml: the team that reviews the repository
    and reads the report."""
    if size < limit:
        return []
    return [rule.diag(message, policy.fleet_src.locate(("spec", "platform", "owners")), hint=hint)]


def check_report_size(policy: Policy, sizes: Mapping[str, int], limit: int | None = None) -> list[Diagnostic]:
    """GITOPS404 from the rendered report files' sizes (``out/``-relative path -> bytes): on the
    largest of REPORT.md and the files its long tables went to (``REPORT.<name>.md``)."""
    limit = GITHUB_RENDER_BYTES if limit is None else limit
    size, path = max(((n, rel) for rel, n in sizes.items() if is_report_markdown(rel)), default=(0, REPORT))
    return over_github_limit(
        TOO_LARGE, policy, size, limit, f"out/{path} is {size:,} bytes for {len(policy.teams):,} teams, over the "
        f"{limit:,} GitHub renders as Markdown: GitHub shows it as plain text or not at all",
        hint=f"a table of more than {ROWS_INLINE:,} rows already has a file of its own (REPORT.<name>.md); this one is "
        "still too large: read it locally or as raw text; for one team, `gpupolicy explain <team>` shows its "
        "share, and out/allocation.json holds the same figures for tools")
