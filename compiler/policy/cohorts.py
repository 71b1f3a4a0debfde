"""The cohort forest of each cluster and the GPUs no team is guaranteed: which departments become
Cohorts (those with a queue, plus their ancestors), the forest's roots, the spare capacity per
class, the Cohort that holds it (when the queues sit under one root) and what queues may borrow
of it. Read by lowering (``compiler.lower.kueue``), the capacity rules, the report, ``explain``,
``admit`` and CODEOWNERS.
"""

from __future__ import annotations

from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.policy.memo import per_policy
from compiler.policy.team_facts import team_departments
from compiler.policy.versions import KUEUE_API


@per_policy  # asked by every question about the cluster's cohorts (a copy each time)
def used_departments(policy: Policy, cluster: str) -> list[str]:
    """Departments with a queue on the cluster, plus their ancestors (parents must exist)."""
    depts = policy.departments
    need: set[str] = set()
    for dept in sorted(team_departments(policy).get(cluster, ())):
        cur: str | None = dept
        while cur is not None and cur in depts and cur not in need:
            need.add(cur)
            cur = depts[cur].parent
    return sorted(need)


def spare_capacity(policy: Policy, cluster: str) -> dict[str, int]:
    """Class id -> GPUs of its training pools that no team is guaranteed, for the classes some
    team queues on (only those classes are flavors of a ClusterQueue, so only they can borrow)."""
    out: dict[str, int] = {}
    for cid, cls in policy.classes.get(cluster, {}).items():
        if not cls.training_pools or not policy.allocation.budgeted(cluster, cid):
            continue
        free = cls.capacity - policy.allocation.guaranteed_total(cluster, cid)
        if free > 0:
            out[cid] = free
    return out


def root_departments(policy: Policy, cluster: str) -> list[str]:
    """The roots of the cluster's cohort forest (Kueue lends only within one tree)."""
    return [d for d in used_departments(policy, cluster) if policy.departments[d].parent is None]


def spare_cohort(policy: Policy, cluster: str) -> str | None:
    """The Cohort that holds the cluster's spare capacity: the root of its department tree, when
    the cluster's queues sit under exactly one root."""
    roots = root_departments(policy, cluster)
    return roots[0] if len(roots) == 1 else None


def borrowable_spare(policy: Policy, cluster: str) -> dict[str, int]:
    """``spare_capacity`` when a Cohort holds it (queues may borrow it), else nothing."""
    return spare_capacity(policy, cluster) if spare_cohort(policy, cluster) else {}


def spare_cohort_files(policy: Policy) -> list[str]:
    """``out/``-relative paths of the Cohorts that hold unguaranteed GPUs (CODEOWNERS shares them:
    their quota changes with any team's guarantee)."""
    out = []
    for cluster in sorted(policy.clusters):
        holder = spare_cohort(policy, cluster)
        if holder and spare_capacity(policy, cluster):
            cohort = {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": holder}}
            out.append(Manifest(cluster, "kueue", cohort).relpath)
    return out
