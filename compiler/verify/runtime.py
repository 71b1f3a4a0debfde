"""A model of the fleet at run time, read from what ArgoCD will sync, for the OPS rules.

Built per cluster from the **rendered** objects (the chart Applications' ``helm.valuesObject``,
Karpenter NodePools, Kueue ResourceFlavors, the RBAC objects of cluster components, the
Applications' waves and sync options, the inventory of every ``out/`` file) plus the pinned
upstream charts' defaults, never from the lowering functions that produced them: the OPS rules
(``compiler.verify.ops``) are an independent check of what those functions emit.

- **pools**: per pool, the taints its nodes carry (the NodePool's ``template.spec.taints`` on
  Karpenter clusters, else the node contract) and how nodes come: ``static`` (declared nodes,
  or a Karpenter NodePool with ``replicas``) or ``dynamic`` (Karpenter launches on demand).
- **agents**: the node agents every GPU node needs (``compiler.policy.node_agents``), with the
  tolerations and affinity the rendered values give them, else the chart defaults.
- **grants**: per ServiceAccount, the (group, resource, verb) the upstream assets grant plus what
  rendered ClusterRoleBindings add; **needs**: what each agent's rendered configuration uses.
- **admitted**: per pool, the resources Kueue may admit on it (a ResourceFlavor selecting it).
- **waves**: per component Application its sync wave; where each namespace comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import intern
from typing import Any, Callable, Iterable

from compiler.model.inventory import FileRow, Inventory
from compiler.model.manifest import Manifest
from compiler.model.targets import COMPONENT_WAVES, DEFAULT_WAVE
from compiler.policy.graph import BUILTIN_NAMESPACES, Policy
from compiler.policy.labels import LABEL_POOL
from compiler.policy.node_agents import (
    CHART_DEFAULT_TOLERATIONS,
    DRA_KUBELET_PLUGIN,
    GPU_OPERATOR_OPERANDS,
    NFD_WORKER,
    Toleration,
)
from compiler.policy.node_contract import pool_contracts

WAVE = "argocd.argoproj.io/sync-wave"
COMPONENT_LABEL = "gpupolicy.dev/component"
CLUSTER_LABEL = "gpupolicy.dev/cluster"
GPU_OPERATOR_APP = "gpu-operator-chart"
DRA_DRIVER_APP = "dra-driver-chart"

DCGM_EXPORTER = "dcgm-exporter"
# gpu-operator v26.7.0 assets/state-dcgm-exporter/0100_service_account.yaml, created in the operator's
# namespace (the chart Application's destination); grants are keyed "<namespace>/<name>".
DCGM_SA = "nvidia-dcgm-exporter"
Grant = tuple[str, str, str]  # (API group, resource, verb)
# What the GPU Operator grants the exporter's ServiceAccount cluster-wide (v26.7.0
# assets/state-dcgm-exporter/0210_clusterrole.yaml + 0310_clusterrolebinding.yaml): read pods.
OPERATOR_GRANTS: dict[str, frozenset[Grant]] = {
    DCGM_SA: frozenset({("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch")}),
}


@dataclass(frozen=True)
class PoolRuntime:
    name: str
    serving: bool
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    provisioning: str  # "static" | "dynamic" | "none" (Karpenter cluster, no NodePool)
    admitted: tuple[str, ...] = ()  # resources Kueue may admit here (a flavor selects the pool)


@dataclass(frozen=True)
class NodeAgent:
    name: str
    installed_by: str  # the Application (component label) whose values configure it
    tolerations: tuple[Toleration, ...]
    affinity: dict[str, Any] | None  # None: the chart default
    pools: tuple[str, ...]  # pools it must run on


@dataclass(frozen=True)
class Need:
    service_account: str
    grants: frozenset[Grant]
    why: str


def allows(granted: set[Grant], need: Grant) -> bool:
    """RBAC's rule match (k8s.io/apiserver ``rbac.RuleAllows``): ``*`` matches any group, resource, verb."""
    g, r, v = need
    return any(gg in (g, "*") and rr in (r, "*") and vv in (v, "*") for gg, rr, vv in granted)


@dataclass
class ClusterRuntime:
    name: str
    dra: bool
    provisioner: str
    pools: dict[str, PoolRuntime] = field(default_factory=dict)
    agents: dict[str, NodeAgent] = field(default_factory=dict)
    grants: dict[str, set[Grant]] = field(default_factory=dict)
    needs: list[Need] = field(default_factory=list)
    waves: dict[str, int] = field(default_factory=dict)  # component -> wave of its Application
    created: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # ns -> Applications creating it
    # what OPS004 reads of the files (``ClusterFiles``): enough to prove every object in time, else
    # it reads the rows (``namespace_facts``, ``paths``)
    classes: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)
    opened: set[tuple[str, str]] = field(default_factory=set)
    rows: Callable[[], list[FileRow]] = field(default=list, compare=False, repr=False)
    scaled: set[tuple[str, str]] = field(default_factory=set)  # (namespace, Deployment) an autoscaler reads
    scrapers: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name) of Pod/ServiceMonitors
    nodepools: dict[str, dict[str, Any]] = field(default_factory=dict)  # pool -> NodePool spec
    kubelet_plugin_affinity: dict[str, Any] | None = None
    flavors: dict[str, tuple[str, tuple[Toleration, ...]]] = field(default_factory=dict)  # flavor -> (pool, tolerations)
    mig_pools: tuple[str, ...] = ()

    def file_wave(self, component: str) -> int:
        """The wave of a component's files: its Application's, else the component's default."""
        return self.waves.get(component, COMPONENT_WAVES.get(component, DEFAULT_WAVE))

    def sources(self, ns: str, made_here: Iterable[tuple[str, int]] = ()) -> list[tuple[str, int]]:
        """What creates a namespace, in order: Applications (``CreateNamespace=true``), then
        ``made_here`` (its Namespace files), then the API server (the built-in namespaces)."""
        out = [*self.created.get(ns, ()), *made_here]
        if ns in BUILTIN_NAMESPACES:  # systemNamespaces are exempt from admission, not known to exist
            out.append(("(exists)", -100))
        return out

    def in_time(self) -> bool:
        """Whether the reduced facts prove every namespaced object's namespace created in time
        (OPS004): each class has a creator of its own part that is its component or syncs in an
        earlier wave, each open pair an Application or the API server that does. Those creators
        are some of the namespace's, so a proof holds for all of them; no proof decides nothing."""
        for component, creators in self.classes:
            wave = self.waves.get(component)
            if wave is not None and not any(c == component or self.file_wave(c) < wave for c in creators):
                return False
        for component, ns in self.opened:
            wave = self.waves.get(component)
            if wave is not None and not any(c == component or w < wave for c, w in self.sources(ns)):
                return False
        return True

    def namespace_facts(self) -> tuple[dict[str, list[tuple[str, int]]], set[tuple[str, str]]]:
        """Read from every row of the cluster: namespace -> what creates it (``sources``, its
        Namespace files in file order), and the (component, namespace) pairs of the namespaced
        objects."""
        names, namespaced, _ = _scan(self.rows(), self.name).get(self.name, ([], set(), set()))
        made: dict[str, list[tuple[str, int]]] = {}
        for component, name in names:
            made.setdefault(name, []).append((component, self.file_wave(component)))
        spaces = {*self.created, *made, *BUILTIN_NAMESPACES}
        return {ns: self.sources(ns, made.get(ns, ())) for ns in spaces}, namespaced

    def paths(self) -> dict[tuple[str, str], list[str]]:
        """The files behind each (component, namespace) pair, in file order (read from the rows)."""
        return namespaced_paths(self.rows(), self.name)


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _apps(argocd: Iterable[Manifest], cluster: str) -> dict[str, dict[str, Any]]:
    out = {}
    for m in argocd:
        labels = _get(m.obj, "metadata", "labels") or {}
        if m.kind == "Application" and labels.get(CLUSTER_LABEL) == cluster and labels.get(COMPONENT_LABEL):
            out[str(labels[COMPONENT_LABEL])] = m.obj
    return out


def _wave(app: dict[str, Any]) -> int:
    return int(_get(app, "metadata", "annotations", WAVE) or DEFAULT_WAVE)


def _values(app: dict[str, Any] | None) -> dict[str, Any]:
    return (_get(app, "spec", "source", "helm", "valuesObject") or {}) if app else {}


def _agent(name: str, app_key: str, values: dict[str, Any], path: tuple[str, ...], pools: tuple[str, ...],
           affinity: dict[str, Any] | None = None) -> NodeAgent:
    rendered = _get(values, *path)
    tol = tuple(rendered) if isinstance(rendered, list) else CHART_DEFAULT_TOLERATIONS[name]
    return NodeAgent(name, app_key, tol, affinity, pools)


def _taints(items: Any) -> tuple[tuple[str, str, str], ...]:
    return tuple((str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", ""))) for t in items or [])




# What the model reads of one cluster's out/ files, parsed from their paths, for a run of files (a
# "part": the fleet's, a team unit's, a block of units'), reduced so that merging parts costs
# what they differ in, not their files (issue 21):
#
# - classes: (component, creators) of the namespaced objects whose namespace a Namespace file of
#   the same part creates, ``creators`` being the components of those Namespace files (sorted).
#   A team's objects sit in its own namespaces, created by its own unit, so a part of any size
#   has a handful (5 per cluster at 5,000 teams, against 200,000 (component, namespace) pairs);
# - open: (component, namespace) of the namespaced objects whose namespace no Namespace file of
#   the part creates (a chart's objects in the namespace its Application creates);
# - scrapers: (namespace, name) of the Pod/ServiceMonitors.
#
# OPS004 decides from these alone when they prove every object in time (``ClusterRuntime.in_time``);
# else it reads every row of the cluster (``ClusterRuntime.namespace_facts``), as it would without
# them. Unions of sets: the facts of consecutive parts merge (``merge_facts``) into a superset of
# no less proof, and a team unit's are computed once and stored with the unit
# (compiler.pipeline.stages).
ClusterFiles = tuple[set[tuple[str, tuple[str, ...]]], set[tuple[str, str]], set[tuple[str, str]]]
FileFacts = dict[str, ClusterFiles]  # cluster -> its files' facts


def _scan(rows: Iterable[FileRow], only: str | None = None
          ) -> dict[str, tuple[list[tuple[str, str]], set[tuple[str, str]], set[tuple[str, str]]]]:
    """Per cluster (``only``: that one): its Namespace files as (component, namespace) in file
    order, the (component, namespace) pairs of its namespaced objects, its Pod/ServiceMonitors."""
    out: dict[str, tuple[list[tuple[str, str]], set[tuple[str, str]], set[tuple[str, str]]]] = {}
    for relpath, cluster, ns, _ in rows:
        if only is not None and cluster != only:
            continue
        facts = out.get(cluster)
        if facts is None:
            facts = out[cluster] = ([], set(), set())
        parts = relpath.split("/")
        component, base = intern(parts[1]), parts[-1]  # interned: marshal stores a unit's once
        kind, _, rest = base.partition(".")
        if kind == "namespace":
            facts[0].append((component, intern(rest[len("_."):-len(".yaml")])))
        elif ns:
            facts[1].add((component, ns))
            if kind in ("podmonitor", "servicemonitor"):
                facts[2].add((ns, rest[len(ns) + 1:-len(".yaml")]))
    return out


def file_facts(rows: Iterable[FileRow]) -> FileFacts:
    out: FileFacts = {}
    for cluster, (names, namespaced, scrapers) in _scan(rows).items():
        creators: dict[str, set[str]] = {}
        for component, name in names:
            creators.setdefault(name, set()).add(component)
        made = {name: tuple(sorted(by)) for name, by in creators.items()}
        classes: set[tuple[str, tuple[str, ...]]] = set()
        opened: set[tuple[str, str]] = set()
        for component, ns in namespaced:
            by = made.get(ns)
            if by is None:
                opened.add((component, ns))
            else:
                classes.add((component, by))
        out[cluster] = (classes, opened, scrapers)
    return out


def namespaced_paths(rows: Iterable[FileRow], cluster: str) -> dict[tuple[str, str], list[str]]:
    """The paths behind the (component, namespace) pairs on one cluster, in file order."""
    out: dict[tuple[str, str], list[str]] = {}
    for relpath, c, ns, _ in rows:
        if c == cluster and ns:
            parts = relpath.split("/")
            if parts[-1].partition(".")[0] != "namespace":
                out.setdefault((parts[1], ns), []).append(relpath)
    return out


def merge_facts(parts: Iterable[FileFacts]) -> FileFacts:
    """The facts of the parts' files, merged. The parts are left as they are."""
    out: FileFacts = {}
    for part in parts:
        for cluster, (classes, opened, scrapers) in part.items():
            mine = out.get(cluster)
            if mine is None:
                out[cluster] = (set(classes), set(opened), set(scrapers))
                continue
            mine[0].update(classes)
            mine[1].update(opened)
            mine[2].update(scrapers)
    return out


def cluster_runtime(policy: Policy, cluster: str, fresh: list[Manifest], inventory: Inventory,
                    files: ClusterFiles | None = None) -> ClusterRuntime:
    """One cluster's model; ``files`` are the facts of that cluster's inventory rows (``file_facts``;
    read from every row if None)."""
    c = policy.clusters[cluster]
    rt = ClusterRuntime(cluster, c.dra, c.provisioner)
    mine = [m for m in fresh if m.cluster == cluster]
    rt.nodepools = {str(_get(m.obj, "metadata", "name")): m.obj.get("spec") or {}
                    for m in mine if m.kind == "NodePool"}
    admitted: dict[str, set[str]] = {}
    for m in mine:
        if m.kind == "ResourceFlavor":
            pool = (_get(m.obj, "spec", "nodeLabels") or {}).get(LABEL_POOL)
            if pool:  # Kueue injects the flavor's tolerations into admitted pods (node agent "kueue")
                rt.flavors[m.name] = (str(pool), tuple(_get(m.obj, "spec", "tolerations") or ()))
            cls = policy.classes.get(cluster, {}).get(m.name)
            if pool and cls is not None:
                admitted.setdefault(str(pool), set()).add(cls.resource)  # gpupolicy.dev/<class> on DRA
    for pc in pool_contracts(policy, cluster):
        taints = set(_taints([t.as_dict() for t in pc.taints]))
        if c.provisioner == "karpenter":
            np = rt.nodepools.get(pc.pool)
            taints |= set(_taints(_get(np, "template", "spec", "taints")))
            how = "none" if np is None else ("static" if np.get("replicas") is not None else "dynamic")
        else:
            how = "static"
        rt.pools[pc.pool] = PoolRuntime(pc.pool, pc.serving, tuple(sorted(taints)), how,
                                        tuple(sorted(admitted.get(pc.pool, ()))))
    rt.mig_pools = tuple(sorted(p.name for p in c.pools if p.cut.mode == "mig"))

    apps = _apps(fresh, cluster)
    gpu_values = _values(apps.get(GPU_OPERATOR_APP))
    all_pools = tuple(sorted(rt.pools))
    if GPU_OPERATOR_APP in apps:
        rt.agents[GPU_OPERATOR_OPERANDS] = _agent(GPU_OPERATOR_OPERANDS, GPU_OPERATOR_APP, gpu_values,
                                                  ("daemonsets", "tolerations"), all_pools)
        rt.agents[NFD_WORKER] = _agent(NFD_WORKER, GPU_OPERATOR_APP, gpu_values,
                                       ("node-feature-discovery", "worker", "tolerations"), all_pools)
        exporter = _get(gpu_values, "dcgmExporter") or {}
        operator_ns = _get(apps[GPU_OPERATOR_APP], "spec", "destination", "namespace")
        sa = f"{operator_ns}/{DCGM_SA}"
        if exporter.get("enabled", True) is not False:
            rt.grants.setdefault(sa, set()).update(OPERATOR_GRANTS[DCGM_SA])
            env = {str(e.get("name")): str(e.get("value")) for e in exporter.get("env") or []}
            if exporter.get("enablePodLabels"):
                rt.needs.append(Need(sa, frozenset(("", "pods", v) for v in ("get", "list", "watch")),
                                     "dcgmExporter.enablePodLabels: the exporter watches pods for their labels"))
            if env.get("KUBERNETES_ENABLE_DRA", "").lower() == "true":
                rt.needs.append(Need(sa, frozenset(("resource.k8s.io", "resourceslices", v) for v in ("list", "watch")),
                                     "dcgmExporter KUBERNETES_ENABLE_DRA=true: the exporter waits for a ResourceSlice "
                                     "informer before serving metrics"))
    if DRA_DRIVER_APP in apps:
        dra_values = _values(apps[DRA_DRIVER_APP])
        rt.kubelet_plugin_affinity = _get(dra_values, "kubeletPlugin", "affinity")
        rt.agents[DRA_KUBELET_PLUGIN] = _agent(DRA_KUBELET_PLUGIN, DRA_DRIVER_APP, dra_values,
                                               ("kubeletPlugin", "tolerations"), all_pools,
                                               rt.kubelet_plugin_affinity)
    for m in mine:  # rendered RBAC of cluster components binding upstream ServiceAccounts
        if m.kind == "ClusterRoleBinding":
            role = next((r for r in mine if r.kind == "ClusterRole" and r.name == _get(m.obj, "roleRef", "name")), None)
            for subject in m.obj.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount" and role is not None:
                    granted = rt.grants.setdefault(f"{subject.get('namespace')}/{subject.get('name')}", set())
                    for rule in role.obj.get("rules") or []:
                        granted.update((g, r, v) for g in rule.get("apiGroups") or [] for r in rule.get("resources") or []
                                       for v in rule.get("verbs") or [])

    # waves: each component Application's; namespaces from CreateNamespace (Namespace objects:
    # ``classes`` and ``opened``, and the rows when those prove nothing)
    for key, app in apps.items():
        rt.waves[key] = _wave(app)
        options = _get(app, "spec", "syncPolicy", "syncOptions") or []
        if "CreateNamespace=true" in options:
            ns = _get(app, "spec", "destination", "namespace")
            if ns:
                rt.created.setdefault(str(ns), []).append((key, _wave(app)))
    classes, opened, scrapers = files if files is not None else \
        file_facts(inventory.files).get(cluster, (set(), set(), set()))
    rt.classes.update(classes)
    rt.opened.update(opened)
    rt.rows = lambda: inventory.files
    rt.scrapers.update(scrapers)
    for (fc, _), folder in inventory.folders.items():
        if fc == cluster:
            rt.scaled |= folder.scaled
    return rt


def fleet_runtime(policy: Policy, fresh: list[Manifest], inventory: Inventory,
                  facts: FileFacts | None = None) -> dict[str, ClusterRuntime]:
    """Every cluster's model; ``facts`` are those of every inventory row (``file_facts``, or merged
    from the parts of the inventory's pieces), read from the rows if None."""
    if facts is None:
        facts = file_facts(inventory.files)  # one pass over every out/ file, not one per cluster
    by_cluster: dict[str, list[Manifest]] = {}
    for m in fresh:
        by_cluster.setdefault(m.cluster, []).append(m)
    argocd = by_cluster.get("argocd", [])
    return {c: cluster_runtime(policy, c, by_cluster.get(c, []) + argocd, inventory, facts.get(c, (set(), set(), set())))
            for c in sorted(policy.clusters)}
