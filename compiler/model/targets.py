"""What the lowering stage targets: output components and the kinds each lowering pass owns.

One place per fact. A **component** is a folder ``out/<cluster>/<component>/`` and the ArgoCD
Application that syncs it (SPEC §9); its sync wave and its position in the listing are declared
here, once, because stages before lowering (the GitOps naming checks) and after it (the bootstrap
report) read them too. A **target** is declared by the lowering module that renders it, next to its
passes (``TARGETS`` at the bottom of ``compiler/lower/kueue.py`` and the others, assembled in
``compiler/lower/targets.py``)::

    TARGETS = (
        Target("kueue", "kueue", "cluster", kinds=(Kind(KUEUE_API, "ResourceFlavor", "cluster"), ...),
               passes=(lower_flavors, lower_cohorts, lower_priorities)),
        Target("kueue-queues", "kueue", "team", kinds=(...), passes=(lower_team_queues,)),
    )

From the targets follow the lowering pass lists (``CLUSTER_PASSES``/``TEAM_PASSES``) and the kinds
ArgoCD's AppProjects allow-list (so the last object of a kind can still be pruned after it left the
render). ``tests/test_targets.py`` lowers the demo and every golden case and fails when a pass
emits a kind its target does not declare, in another component, with another scope or with other
owners than the target's CODEOWNERS scope says; and when a declared kind is not allowed in every
rendered AppProject. ``compiler/verify`` deliberately keeps its own tables (built-in cluster-scoped
kinds, CRD scopes): it is the independent check of what the declarations claim.

This module imports nothing from ``compiler``: every stage may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

KindScope = Literal["cluster", "namespaced"]
PassScope = Literal["cluster", "team"]

# -- delivery: ArgoCD sync waves (annotation argocd.argoproj.io/sync-wave on a root's children) ------
PROJECT_WAVE = -5  # AppProjects
CHART_WAVE = -4  # upstream chart installs: CRDs, controllers, webhooks
DEFAULT_WAVE = 0  # a component not declared below (workloads last)


@dataclass(frozen=True)
class Component:
    """One ``out/<cluster>/<component>/`` folder and its Application."""

    name: str
    wave: int


# In the order Applications are listed (not the sync order: that is the wave).
COMPONENT_TABLE: tuple[Component, ...] = (
    # Before every component with namespaced objects in team namespaces (RoleBindings, claim
    # templates, quotas at -3): Applications of one wave sync concurrently (OPS004).
    Component("namespaces", -4),
    Component("gpu-operator", -3),  # its config; the chart itself installs at CHART_WAVE
    Component("nodes", -3),
    Component("dra", -3),
    Component("kueue", -1),  # queues, after the AdmissionChecks that name them
    Component("admission", -3),
    Component("multikueue", -2),
    Component("serving", 0),
)
COMPONENTS: tuple[str, ...] = tuple(c.name for c in COMPONENT_TABLE)
COMPONENT_WAVES: dict[str, int] = {c.name: c.wave for c in COMPONENT_TABLE}

# API groups served by Kubernetes itself; anything else is a custom resource (its CRD must exist
# before an Application holding it syncs: SkipDryRunOnMissingResource, the report's prerequisites).
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "policy", "autoscaling", "rbac.authorization.k8s.io", "scheduling.k8s.io",
    "admissionregistration.k8s.io", "resource.k8s.io", "networking.k8s.io", "storage.k8s.io",
    "node.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "apiextensions.k8s.io",
})


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


@dataclass(frozen=True)
class Kind:
    """A kind a target renders, at the apiVersion it renders it, and its API scope."""

    api_version: str
    kind: str
    scope: KindScope = "namespaced"

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def cluster_scoped(self) -> bool:
        return self.scope == "cluster"

    @property
    def builtin(self) -> bool:
        return self.group in BUILTIN_GROUPS


@dataclass(frozen=True)
class Target:
    """What one group of lowering passes renders, declared next to the passes.

    ``scope`` says how the passes run and who owns their files: ``"cluster"`` passes take
    ``(policy, cluster)`` and render from the fleet file alone (CODEOWNERS: the platform);
    ``"team"`` passes take ``(policy, team, cluster)`` and render from one team file (its objects
    name that file among their sources, so CODEOWNERS gives them to the team, or the platform).
    ``passes`` run in the order given; targets run in the order ``compiler/lower/targets.py``
    lists them.
    """

    name: str
    component: str
    scope: PassScope
    kinds: tuple[Kind, ...]
    passes: tuple[Callable[..., Any], ...]

    @property
    def codeowners(self) -> Literal["platform", "team"]:
        return "team" if self.scope == "team" else "platform"

    def declares(self, api_version: str, kind: str, cluster_scoped: bool) -> bool:
        return any(k.api_version == api_version and k.kind == kind and k.cluster_scoped == cluster_scoped
                   for k in self.kinds)


def owned_kinds(targets: tuple[Target, ...]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> cluster-scoped?, for every kind any target declares."""
    return {(k.group, k.kind): k.cluster_scoped for t in targets for k in t.kinds}
