"""GitOps naming conventions (ArgoCD objects, ``out/`` folders) and the rules that keep them apart.

Names, with ``P`` = ``spec.gitops.project`` (default ``gpupolicy``):

- AppProject ``P`` (bootstrap): may only create Applications and AppProjects in Argo CD's namespace;
- Application ``P-<cluster>`` (bootstrap, one per cluster): the app-of-apps root, syncs
  ``<path>/argocd/<cluster>/``;
- AppProject ``P-<cluster>``: the lane of the cluster's rendered components;
- AppProject ``P-<cluster>-addons``: the lane of the upstream charts installed on the cluster;
- Application ``P-<cluster>-<component>`` syncs ``<path>/<cluster>/<component>/``;
- Application ``P-<cluster>-<chart>`` installs a chart (``kueue-chart``, ``gpu-operator-chart``,
  ``dra-driver-chart``).

Kept in its own module (no lowering imports) so the semantic checks can use it.
"""

from __future__ import annotations

from typing import Iterator
from urllib.parse import urlsplit

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.model.targets import COMPONENTS
from compiler.policy.graph import Policy

BOOTSTRAP = "bootstrap"  # out/argocd/bootstrap: applied once by hand, synced by nothing
CHART_KEYS = ("kueue-chart", "gpu-operator-chart", "dra-driver-chart")
_PARTS = (*COMPONENTS, *CHART_KEYS)  # the per-cluster Applications besides the root
# out/ folders gpupolicy owns besides the clusters' own.
RESERVED = frozenset({"argocd", "reports", BOOTSTRAP})
MAX_TRACKED_NAME = 63  # label-based resource tracking puts the app name in a label value

CLUSTER_NAME = define(
    "GITOPS010",
    "Cluster names keep out/ folders and ArgoCD names apart: not `argocd`, `reports` or `bootstrap`, and "
    "not `<other cluster>-<component>`.",
    "clusters:\n- name: onprem\n- name: cloud",
    "clusters:\n- name: onprem\n- name: onprem-kueue   # root app collides with onprem's kueue app",
    scope=Scope.FLEET,
)
LONG_NAME = define(
    "GITOPS011",
    "Generated Application names fit in 63 characters, so label-based resource tracking keeps working.",
    "gitops: {project: gpupolicy}   # gpupolicy-onprem-gpu-operator-chart",
    "gitops: {project: a-very-long-project-name-of-forty-characters}",
    Severity.WARNING,
    scope=Scope.FLEET,
)


RULES: tuple[Rule, ...] = (CLUSTER_NAME, LONG_NAME)


def server(policy: Policy, cluster: str) -> str:
    """The API server URL as written in the fleet file (Argo CD matches its cluster Secrets by the
    exact string; the parsed URL would drop a default port such as ``:443``), minus a bare "/"."""
    spec = policy.fleet.spec
    index = next(i for i, c in enumerate(spec.clusters) if c.name == cluster)
    try:
        url = str(policy.fleet_src.data["spec"]["clusters"][index]["apiServer"])
    except (KeyError, IndexError, TypeError):
        url = str(spec.clusters[index].api_server)
    return url[:-1] if url.endswith("/") and urlsplit(url).path == "/" else url


def root_project(policy: Policy) -> str:
    return policy.fleet.spec.gitops.project


def cluster_project(policy: Policy, cluster: str) -> str:
    return f"{root_project(policy)}-{cluster}"


def addons_project(policy: Policy, cluster: str) -> str:
    return f"{root_project(policy)}-{cluster}-addons"


def app_name(policy: Policy, cluster: str, part: str | None = None) -> str:
    """Root app of a cluster (``part`` None), or its component / chart app."""
    base = f"{root_project(policy)}-{cluster}"
    return base if part is None else f"{base}-{part}"


@checks(CLUSTER_NAME)
def check_cluster_names(policy: Policy) -> Iterator[Diagnostic]:
    names = [c.name for c in policy.fleet.spec.clusters]
    for ci, name in enumerate(names):
        loc = policy.fleet_src.locate(("spec", "clusters", ci, "name"))
        if name in RESERVED:
            yield CLUSTER_NAME.diag(f"cluster name {name!r} is reserved: out/{name}/ holds gpupolicy's own files",
                                    loc, hint="rename the cluster")
            continue
        for other in names:
            for part in _PARTS:
                if other != name and name == f"{other}-{part}":
                    yield CLUSTER_NAME.diag(
                        f"cluster {name!r}: its root Application would be named like cluster {other!r}'s "
                        f"{part} Application ({app_name(policy, name)})", loc, hint="rename the cluster")


@checks(LONG_NAME)
def check_tracked_names(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        if c.name in RESERVED:
            continue  # GITOPS001
        longest = max((app_name(policy, c.name, p) for p in _PARTS), key=len)
        if len(longest) > MAX_TRACKED_NAME:
            yield LONG_NAME.diag(
                f"Application {longest!r} is {len(longest)} characters; label-based tracking allows "
                f"{MAX_TRACKED_NAME}", policy.fleet_src.locate(("spec", "clusters", ci, "name")),
                hint="shorten spec.gitops.project or the cluster name, or keep Argo CD's default "
                "annotation-based tracking")
