"""One root cause, one error (issue 20): a pool whose cut is rejected (a MIG layout that does not
exist for its GPU, profiles that do not fit) provides no GPU classes, and every budget, cap and
serving reference to those classes would otherwise be reported as "no GPU class" in files nobody
touched. The policy records such pools (``Policy.unresolved``); reference rules skip classes they
would have provided, and the pipeline still runs the semantic rules when the only errors are these
(so an unrelated over-capacity error is not hidden either).
"""

from __future__ import annotations

from typing import Iterable

from compiler.diagnostics import Diagnostic, Severity
from compiler.model.fleet import Cluster
from compiler.policy.cuts import cut_mode
from compiler.policy.graph import Policy

# Rules whose errors reject a pool's cut and leave the rest of the policy whole.
CUT_AREAS = ("MIG",)


def cut_mode_prefix(model: str, mode: str) -> str:
    """What every class ID of a pool of ``model`` cut by ``mode`` starts with (SPEC §9)."""
    return {"mig": f"{model}-mig-", "timeslicing": f"{model}-ts", "mps": f"{model}-mps"}.get(mode, model)


def unresolved_pools(cluster: Cluster, rejected: Iterable[str]) -> frozenset[tuple[str, str]]:
    """(cluster, class-ID prefix) of the named pools of ``cluster``."""
    names = set(rejected)
    return frozenset((cluster.name, cut_mode_prefix(p.model, cut_mode(p.cut).name)) for p in cluster.pools
                     if p.name in names)


def unresolved(policy: Policy, cluster: str, class_id: str) -> bool:
    """Whether ``class_id`` may be a class of a pool whose cut was rejected (so its absence is not news)."""
    return any(c == cluster and class_id.startswith(prefix) for c, prefix in policy.unresolved)


def recoverable(diags: Iterable[Diagnostic]) -> bool:
    """True when every error rejects a pool's cut only: the semantic rules can still run."""
    errors = [d for d in diags if d.severity is Severity.ERROR]
    return bool(errors) and all(d.code.startswith(CUT_AREAS) for d in errors)
