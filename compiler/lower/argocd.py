"""ArgoCD delivery of ``out/``: rendered Applications in an app-of-apps per cluster.

**Why app-of-apps and not an ApplicationSet.** The compiler already knows every
(cluster, component) folder it wrote and every chart a cluster needs, so a generator would only
rediscover that. Rendering the Applications instead makes each one an ordinary file: reviewed in
the PR diff, owned by the platform in CODEOWNERS, verified against the Application CRD, and free
to differ per app (Helm values, ``ignoreDifferences``, sync options, waves) without
``templatePatch`` logic. Ordering *between* Applications works with sync waves on the children of
one parent, once Argo CD has a health check for Applications; an ApplicationSet would need
Progressive Syncs (beta, opt-in controller flag). The price is that the parents are admin-level
(they create Applications in Argo CD's namespace), which is why ``out/argocd/`` derives only from
the fleet file and is owned by the platform team.

**Layout** (names in ``compiler.policy.gitops_names``; P = ``spec.gitops.project``)::

    out/argocd/bootstrap/   AppProject P, Application P-<cluster> per cluster (applied by hand)
    out/argocd/<cluster>/   AppProjects P-<cluster>, P-<cluster>-addons; child Applications
    out/<cluster>/<component>/   what the child Applications sync

**Waves** (annotation ``argocd.argoproj.io/sync-wave`` on the children of a cluster's root;
declared in ``compiler.model.targets``):
-5 AppProjects; -4 chart installs (CRDs, controllers, webhooks); -3 cluster-scoped config and
namespaces (``namespaces``, ``nodes``, ``admission``, ``dra``, ``gpu-operator`` config); -2
``multikueue`` (AdmissionChecks before the queues naming them); -1 ``kueue`` (queues); 0
``serving`` and any component not listed (workloads last). A wave starts when the previous one
is synced and healthy, which needs the Application health check (``out/reports/``).

**Projects.** ``P-<cluster>`` keeps the component Applications on the cluster's API server
(``apiServer`` exactly as written; register the cluster in Argo CD under that URL), from this
repository only, out of every system namespace (kube-*, the cluster's ``systemNamespaces``, Argo
CD's and the charts' namespaces; denied with ``!`` patterns rather than listing team namespaces,
so that a namespace removed from the policy can still be pruned after the project, which syncs
first, changed), and to the kinds gpupolicy renders: every kind a lowering target declares
(``compiler/lower/targets.py``; rendered or not, again so the last object of a kind can be pruned)
plus any kind rendered regardless (``tests/test_targets.py`` keeps that set empty); cluster-scoped
kinds are allow-listed explicitly, ClusterRole(Binding) only while rendered (no target declares
them). ``P-<cluster>-addons`` keeps the chart
Applications to the pinned chart repositories and the charts' namespaces (plus ``kube-system``
for Kueue's visibility RoleBinding); charts install CRDs and webhooks, so their cluster-scoped
kinds are not narrowed.

**Sync policy.** Children: automated sync with prune and self-heal, ``ServerSideApply=true`` (large
CRDs, shared fields), ``PruneLast=true`` (a removed flavor is deleted after the queues that used
it were updated), ``CreateNamespace=false`` for rendered components (their Namespaces are
rendered), ``SkipDryRunOnMissingResource=true`` where a component holds custom resources,
Server-Side Diff (admission policies take part in the diff), bounded retries. The roots do *not*
use server-side apply: waves on an app-of-apps parent are ignored with it (argo-cd #13320,
#13667). Component Applications carry the resources finalizer (removing a component deletes its
objects) except ``namespaces``, whose deletion would delete everything inside; chart
Applications carry none (deleting one must not delete the CRDs and with them every CR).
Rendered objects always name their namespace, so a component Application's destination
namespace is only a default that must exist (argo-cd #14487): ``default``.
"""

from __future__ import annotations

from typing import Any

from compiler.lower.charts import Chart, cluster_charts
from compiler.lower.common import obj
from compiler.lower.targets import OWNED_KINDS
from compiler.model.inventory import Folder, Inventory
from compiler.model.manifest import Manifest
from compiler.model.targets import BUILTIN_GROUPS, CHART_WAVE, COMPONENT_WAVES, COMPONENTS, DEFAULT_WAVE, PROJECT_WAVE
from compiler.policy.gitops_names import (
    BOOTSTRAP,
    addons_project,
    app_name,
    cluster_project,
    root_project,
    server,
)
from compiler.policy.graph import ADDON_NAMESPACES, GPU_OPERATOR_NAMESPACE, Policy

ARGO_API = "argoproj.io/v1alpha1"
IN_CLUSTER = "https://kubernetes.default.svc"
WAVE = "argocd.argoproj.io/sync-wave"
FINALIZER = "resources-finalizer.argocd.argoproj.io"
LABEL_CLUSTER = "gpupolicy.dev/cluster"
LABEL_COMPONENT = "gpupolicy.dev/component"
RETRY = {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}}
# Waves, components, BUILTIN_GROUPS: compiler.model.targets. OWNED_KINDS: the kinds the targets declare
# (compiler.lower.targets); ClusterRole(Binding) is declared by none: allowed only while rendered.
KUBE_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def _argo(policy: Policy, kind: str, name: str, wave: int | None = None,
          labels: dict[str, str] | None = None) -> dict[str, Any]:
    ns = policy.fleet.spec.gitops.argocd_namespace
    annotations = {WAVE: str(wave)} if wave is not None else None
    return obj(ARGO_API, kind, name, namespace=ns, labels=labels, annotations=annotations)


def _manifest(policy: Policy, folder: str, o: dict[str, Any]) -> Manifest:
    return Manifest("argocd", folder, o, (policy.fleet_src.path,))


def _repo(policy: Policy, path: str) -> dict[str, Any]:
    g = policy.fleet.spec.gitops
    return {"repoURL": g.repo_url, "targetRevision": g.revision, "path": path}


def _kinds(folder: Folder, *, cluster_scoped: bool) -> list[dict[str, str]]:
    """The kinds the targets declare (rendered or not, so the last object of a kind can still be
    pruned after it left the render) plus any kind rendered without a declaration (a test forbids it)."""
    seen = {gk for gk, scoped in OWNED_KINDS.items() if scoped == cluster_scoped}
    seen |= {(g, k) for g, k, scoped in folder.kinds if scoped == cluster_scoped}
    return [{"group": g, "kind": k} for g, k in sorted(seen)]


def root_project_manifest(policy: Policy) -> Manifest:
    g = policy.fleet.spec.gitops
    p = _argo(policy, "AppProject", root_project(policy))
    p["spec"] = {
        "description": "gpupolicy app-of-apps roots: may only create Applications and AppProjects in Argo CD's "
                       "namespace (admin-level; out/argocd/ is owned by the platform team).",
        "sourceRepos": [g.repo_url],
        "destinations": [{"server": IN_CLUSTER, "namespace": g.argocd_namespace}],
        "clusterResourceWhitelist": [],
        "namespaceResourceWhitelist": [{"group": "argoproj.io", "kind": "AppProject"},
                                       {"group": "argoproj.io", "kind": "Application"}],
    }
    return _manifest(policy, BOOTSTRAP, p)


def root_app(policy: Policy, cluster: str) -> Manifest:
    g = policy.fleet.spec.gitops
    a = _argo(policy, "Application", app_name(policy, cluster), labels={LABEL_CLUSTER: cluster})
    a["spec"] = {
        "project": root_project(policy),
        "source": {**_repo(policy, f"{g.path}/argocd/{cluster}"), "directory": {"recurse": False}},
        "destination": {"server": IN_CLUSTER, "namespace": g.argocd_namespace},
        # No ServerSideApply here: it makes the parent ignore its children's waves (#13320).
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, "syncOptions": ["PruneLast=true"],
                       "retry": RETRY},
    }
    return _manifest(policy, BOOTSTRAP, a)


def component_project(policy: Policy, cluster: str, folder: Folder) -> Manifest:
    c = policy.clusters[cluster]
    srv = server(policy, cluster)
    # Namespaces are denied, not enumerated: a team namespace removed from the policy must still be
    # prunable by its Application after this project (an earlier wave) stopped listing it.
    rendered = folder.namespaces
    system = {*KUBE_NAMESPACES, *c.system_namespaces, policy.fleet.spec.gitops.argocd_namespace, *ADDON_NAMESPACES}
    denied = sorted(system - rendered - {GPU_OPERATOR_NAMESPACE})  # gpupolicy renders its ConfigMaps into it
    p = _argo(policy, "AppProject", cluster_project(policy, cluster), PROJECT_WAVE, {LABEL_CLUSTER: cluster})
    p["spec"] = {
        "description": f"gpupolicy components of cluster {cluster}: only its API server, no system namespace, "
                       "only the kinds gpupolicy renders.",
        "sourceRepos": [policy.fleet.spec.gitops.repo_url],
        "destinations": [{"server": srv, "namespace": f"!{ns}"} for ns in denied] + [{"server": srv, "namespace": "*"}],
        "clusterResourceWhitelist": _kinds(folder, cluster_scoped=True),
        "namespaceResourceWhitelist": _kinds(folder, cluster_scoped=False),
    }
    return _manifest(policy, cluster, p)


def chart_project(policy: Policy, cluster: str, charts: list[Chart]) -> Manifest:
    # The Kueue chart binds its visibility server to a Role that only exists in kube-system.
    namespaces = sorted({ch.namespace for ch in charts} | {"kube-system"})
    p = _argo(policy, "AppProject", addons_project(policy, cluster), PROJECT_WAVE, {LABEL_CLUSTER: cluster})
    p["spec"] = {
        "description": f"Upstream charts gpupolicy installs on cluster {cluster} at pinned versions. Charts "
                       "install CRDs, webhooks and cluster roles, so cluster-scoped kinds are not narrowed; "
                       "sources are the pinned chart repositories only.",
        "sourceRepos": sorted({ch.repo_url for ch in charts}),
        "destinations": [{"server": server(policy, cluster), "namespace": ns} for ns in namespaces],
        "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
    }
    return _manifest(policy, cluster, p)


def chart_app(policy: Policy, cluster: str, chart: Chart) -> Manifest:
    a = _argo(policy, "Application", app_name(policy, cluster, chart.key), CHART_WAVE,
              {LABEL_CLUSTER: cluster, LABEL_COMPONENT: chart.key})
    options = ["ServerSideApply=true", "CreateNamespace=true"]  # system namespaces are not rendered
    sync: dict[str, Any] = {"automated": {"prune": True, "selfHeal": True}}
    if chart.namespace_labels:
        sync["managedNamespaceMetadata"] = {"labels": dict(chart.namespace_labels)}
    if chart.ignore_differences:
        options.append("RespectIgnoreDifferences=true")
    sync["syncOptions"] = options
    sync["retry"] = RETRY
    spec: dict[str, Any] = {
        "project": addons_project(policy, cluster),
        "source": chart.source(),
        "destination": {"server": server(policy, cluster), "namespace": chart.namespace},
        "syncPolicy": sync,
    }
    if chart.ignore_differences:
        spec["ignoreDifferences"] = [dict(d) for d in chart.ignore_differences]
    a["spec"] = spec
    return _manifest(policy, cluster, a)


def component_app(policy: Policy, cluster: str, component: str, folder: Folder,
                  scaled: list[tuple[str, str]]) -> Manifest:
    g = policy.fleet.spec.gitops
    a = _argo(policy, "Application", app_name(policy, cluster, component), COMPONENT_WAVES.get(component, DEFAULT_WAVE),
              {LABEL_CLUSTER: cluster, LABEL_COMPONENT: component})
    a["metadata"]["annotations"]["argocd.argoproj.io/compare-options"] = "ServerSideDiff=true"
    if component != "namespaces":
        a["metadata"]["finalizers"] = [FINALIZER]
    options = ["CreateNamespace=false", "PruneLast=true", "ServerSideApply=true"]
    if any(g not in BUILTIN_GROUPS for g, _, _ in folder.kinds):
        options.append("SkipDryRunOnMissingResource=true")
    ignore = [{"group": "apps", "kind": "Deployment", "namespace": ns, "name": name, "jsonPointers": ["/spec/replicas"]}
              for ns, name in scaled if (ns, name) in folder.deployments]
    if ignore:
        options.append("RespectIgnoreDifferences=true")  # a sync must not reset the scaler's replicas
    spec: dict[str, Any] = {
        "project": cluster_project(policy, cluster),
        "source": _repo(policy, f"{g.path}/{cluster}/{component}"),
        "destination": {"server": server(policy, cluster), "namespace": "default"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, "syncOptions": options, "retry": RETRY},
    }
    if ignore:
        spec["ignoreDifferences"] = ignore
    a["spec"] = spec
    return _manifest(policy, cluster, a)


def _component_order(components: set[str]) -> list[str]:
    known = [c for c in COMPONENTS if c in components]
    return known + sorted(components - set(COMPONENTS))


def lower_argocd(policy: Policy, inventory: Inventory) -> list[Manifest]:
    """The ArgoCD objects for everything the other passes produced (they run first)."""
    out = [root_project_manifest(policy)]
    for cluster in sorted(policy.clusters):
        components = inventory.components(cluster)
        whole = inventory.cluster_folder(cluster)
        charts = cluster_charts(policy, cluster, kueue=any(g == "kueue.x-k8s.io" for g, _, _ in whole.kinds))
        if not components and not charts:
            continue  # nothing to deliver
        out.append(root_app(policy, cluster))
        out.append(component_project(policy, cluster, whole))
        if charts:
            out.append(chart_project(policy, cluster, charts))
        out.extend(chart_app(policy, cluster, ch) for ch in charts)
        scaled = sorted(whole.scaled)
        for component in _component_order(set(components)):
            out.append(component_app(policy, cluster, component, components[component], scaled))
    return out
