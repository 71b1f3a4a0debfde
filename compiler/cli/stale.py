"""Generated files that are not what the policies render (``gpupolicy check``).

out/, schemas/ and .github/CODEOWNERS are derived from the policies and committed beside them, so
a review sees what ArgoCD will sync. A hand edit to a generated file, or a policy change committed
without ``gpupolicy build``, makes the repository say one thing and the clusters receive another
at the next build: ``check`` compares the committed tree with an in-memory render and reports each
changed, missing or extra file as a GITOPS490 finding in every output format but ``text``, which
lists them as ``stale:`` lines.
"""

from __future__ import annotations

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define

STALE = define(
    "GITOPS490", "Generated files are what the policies render: out/, schemas/ and .github/CODEOWNERS are rebuilt "
    "with `gpupolicy build` and committed with the policy change (`gpupolicy check` compares them).",
    "gpupolicy build && git add policies out schemas .github/CODEOWNERS   # then commit",
    "a hand edit to out/onprem/kueue/clusterqueue._.vision.yaml, or a policy change without `gpupolicy build`",
    scope=Scope.OUTPUT)
RULES: tuple[Rule, ...] = (STALE,)
_STALE_WHAT = {"changed": "differs from what the policies render", "missing": "is not there; the policies render it",
               "extra": "is not rendered by the policies"}


def stale_findings(stale: list[tuple[str, str]]) -> list[Diagnostic]:
    """GITOPS490 on each stale generated file (``check``), so JSON, SARIF, JUnit and GitHub
    annotations carry them like any finding; the position comes with the other file-level ones."""
    return [STALE.diag(f"stale generated file: {path} {_STALE_WHAT[status]}", Location(path),
                       hint="run `gpupolicy build` and commit the result") for status, path in stale]
