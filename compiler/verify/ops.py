"""OPS rules over the rendered fleet: what ArgoCD syncs must also *run* (``compiler.verify.runtime``
is the model they read). Output scope: ``compiler.pipeline.stages`` calls ``check_runtime`` after
lowering, with the cluster- and delivery-scope objects and the merged inventory. The OPS rules
the policy alone decides are in ``compiler.validate.ops``.

Each rule, with the upstream behaviour it relies on:

- OPS001 every taint a pool's nodes carry is tolerated by every node agent that must run there
  (GPU Operator operands, NFD worker, DRA kubelet plugin): Kubernetes' TaintToleration filter
  keeps a DaemonSet pod off a node whose ``NoSchedule`` taint it does not tolerate (the
  DaemonSet controller simulates that filter, ``pkg/controller/daemon/daemon_controller.go``
  ``predicates``), so a serving node without the agents has no driver, no GFD labels, no
  ``nvidia.com/gpu`` and no ResourceSlice. Defaults: gpu-operator v26.7.0
  ``deployments/gpu-operator/values.yaml`` (``daemonsets.tolerations``,
  ``node-feature-discovery.worker.tolerations``), dra-driver-nvidia-gpu v0.4.1
  ``deployments/helm/dra-driver-nvidia-gpu/values.yaml`` (``kubeletPlugin.tolerations``). Kueue
  ResourceFlavors too: Kueue adds a flavor's ``tolerations`` to the pods it admits on it
  (kubernetes-sigs/kueue ``pkg/podset/podset.go`` ``FromAssignment``: the flavor's nodeLabels and tolerations), so a flavor
  that selects a tainted pool without tolerating the taint admits pods that never schedule.
- OPS002 every ServiceAccount has the verbs its rendered configuration needs: the DCGM exporter's
  pod labels need pods get/list/watch (granted: gpu-operator v26.7.0
  ``assets/state-dcgm-exporter/0210_clusterrole.yaml``); its DRA mode
  (``KUBERNETES_ENABLE_DRA``) lists and watches ResourceSlices before serving HTTP
  (NVIDIA/dcgm-exporter ``internal/pkg/transformation/dra.go``) and nothing grants that.
- OPS003 every resource Kueue may admit (a ResourceFlavor selects the pool) is one the cluster's
  provisioner can create or a static pool holds: Karpenter launches only for what its
  scheduling simulation sees in instance types (``nvidia.com/gpu``; not time-sliced
  ``nvidia.com/gpu.shared``, MIG ``nvidia.com/mig-*`` or DRA claims: kubernetes-sigs/karpenter#729,
  karpenter v1.14.1 ``pkg/controllers/provisioning/scheduling``), so such pools must be static
  (NodePool ``replicas``, karpenter v1.14.1 ``pkg/apis/crds/karpenter.sh_nodepools.yaml``).
- OPS004 every namespaced object's namespace exists before its Application syncs: created by a
  Namespace of an Application in an earlier wave, by the same Application, or by an
  Application's ``CreateNamespace=true`` in an earlier wave. Argo CD's app-of-apps waits between
  waves only; Applications of one wave sync concurrently (argo-cd v3.5.1
  ``docs/user-guide/sync-waves.md``; inside one Application Namespaces go first,
  ``gitops-engine/pkg/sync/sync_tasks.go`` kind order).
- OPS007 Karpenter never disrupts a GPU node running work for expiry, drift or repacking:
  ``template.spec.expireAfter: Never`` (the CRD default is ``720h``, and expiration ignores
  budgets) and a budget of ``0`` nodes for ``Drifted`` and ``Underutilized``
  (``karpenter.sh_nodepools.yaml`` ``disruption.budgets``).
- OPS009 every Deployment an autoscaler scales on a Prometheus metric has a scraper: a
  PodMonitor or ServiceMonitor named after it in its namespace (Prometheus Operator; KEDA's
  prometheus trigger otherwise queries an empty series).
- OPS010 on DRA clusters with MIG pools the DRA kubelet plugin runs only where MIG Manager has
  applied the layout (``nvidia.com/mig.config.state=success``) or no layout is set: the plugin
  publishes the MIG devices it finds at start-up and is not restarted by MIG Manager
  (dra-driver-nvidia-gpu v0.4.1 ``cmd/gpu-kubelet-plugin/device_state.go``,
  ``nvlib.go enumerateAllPossibleDevices``; NVIDIA/k8s-dra-driver-gpu#473).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.policy.graph import Policy
from compiler.policy.labels import LABEL_MIG_CONFIG
from compiler.policy.node_agents import tolerates
from compiler.policy.node_contract import MIG_STATE
from compiler.verify.runtime import ClusterRuntime, FileFacts, allows, fleet_runtime

GPU = "nvidia.com/gpu"

TAINTS = define(
    "OPS001", "Every taint of a pool's nodes is tolerated by every node agent that must run there "
    "(GPU Operator operands, NFD worker, DRA kubelet plugin).",
    "# serving pool tainted gpupolicy.dev/serving=h200-serve:NoSchedule\n"
    "daemonsets: {tolerations: [{key: nvidia.com/gpu, operator: Exists}, {key: gpupolicy.dev/serving, operator: Exists}]}",
    "# serving pool tainted gpupolicy.dev/serving=h200-serve:NoSchedule\n"
    "daemonsets: {tolerations: [{key: nvidia.com/gpu, operator: Exists}]}   # no driver on serving nodes",
    scope=Scope.OUTPUT)
GRANTS = define(
    "OPS002", "Every component's ServiceAccount has the verbs its configuration needs.",
    "dcgmExporter: {enablePodLabels: true}   # operator grants pods get/list/watch",
    "dcgmExporter: {env: [{name: KUBERNETES_ENABLE_DRA, value: 'true'}]}   # no resourceslices grant",
    scope=Scope.OUTPUT)
PROVISIONABLE = define(
    "OPS003", "Every resource Kueue may admit is one the cluster's provisioner can create or a static pool holds.",
    "# Karpenter, time-sliced pool l4-dev\nkind: NodePool\nspec: {replicas: 6, limits: {nodes: 6}}",
    "# Karpenter, time-sliced pool l4-dev (nvidia.com/gpu.shared)\nkind: NodePool\nspec: {limits: {nvidia.com/gpu: 24}}",
    scope=Scope.OUTPUT)
NAMESPACE_WAVE = define(
    "OPS004", "Every namespaced object's namespace is created in an earlier sync wave, or by its own Application.",
    "namespaces: wave -4   # Namespace nlp-train\nadmission: wave -3   # RoleBinding in nlp-train",
    "namespaces: wave -3   # Namespace nlp-train\nadmission: wave -3   # RoleBinding in nlp-train, synced concurrently",
    scope=Scope.OUTPUT)
DISRUPTION = define(
    "OPS007", "Karpenter never expires, drift-replaces or repacks a GPU node running work (expireAfter: Never, "
    "a 0-node budget for Drifted and Underutilized).",
    "template: {spec: {expireAfter: Never}}\ndisruption: {budgets: [{nodes: '0', reasons: [Drifted, Underutilized]}]}",
    "template: {spec: {}}   # expireAfter defaults to 720h; drift evicts multi-day jobs",
    scope=Scope.OUTPUT)
SCRAPER = define(
    "OPS009", "Every Deployment an autoscaler scales on a Prometheus metric has a PodMonitor or ServiceMonitor.",
    "kind: ScaledObject   # query vllm:num_requests_waiting\n---\nkind: PodMonitor   # same name and namespace",
    "kind: ScaledObject   # query vllm:num_requests_waiting, nothing scrapes vLLM",
    scope=Scope.OUTPUT)
MIG_ORDER = define(
    "OPS010", "On DRA clusters with MIG pools the DRA kubelet plugin runs only on nodes whose MIG layout is "
    "applied (nvidia.com/mig.config.state=success) or that take none.",
    "kubeletPlugin: {affinity: ...[{key: nvidia.com/mig.config.state, operator: In, values: [success]}]}",
    "kubeletPlugin: {}   # starts before MIG Manager, advertises whole GPUs",
    scope=Scope.OUTPUT)

RULES: tuple[Rule, ...] = (TAINTS, GRANTS, PROVISIONABLE, NAMESPACE_WAVE, DISRUPTION, SCRAPER, MIG_ORDER)


def _where(cluster: str, what: str) -> Location:
    return Location(f"out/{cluster}/{what}")


def check_taints(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    for agent in rt.agents.values():
        for pool in agent.pools:
            for key, value, effect in rt.pools[pool].taints:
                if effect in ("NoSchedule", "NoExecute") and not tolerates(agent.tolerations, key, value, effect):
                    yield TAINTS.diag(
                        f"{rt.name}: node agent {agent.name} (values of {agent.installed_by}) does not tolerate "
                        f"{key}={value}:{effect} of pool {pool!r}: its nodes get no {agent.name}",
                        _where(rt.name, pool), hint="add a toleration for the taint key (operator Exists) to the agent")
    for flavor, (pool, tolerations) in sorted(rt.flavors.items()):
        for key, value, effect in rt.pools[pool].taints if pool in rt.pools else ():
            if effect in ("NoSchedule", "NoExecute") and not tolerates(tolerations, key, value, effect):
                yield TAINTS.diag(f"{rt.name}: ResourceFlavor {flavor} selects pool {pool!r} but does not tolerate "
                                  f"{key}={value}:{effect}: workloads Kueue admits there stay Pending",
                                  _where(rt.name, f"kueue/resourceflavor._.{flavor}.yaml"),
                                  hint="add the taint's toleration to the flavor")


def check_grants(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    for need in rt.needs:
        granted = rt.grants.get(need.service_account, set())
        missing = sorted(g for g in need.grants if not allows(granted, g))
        if missing:
            shown = ", ".join(f"{v} {g or 'core'}/{r}" for g, r, v in missing)
            yield GRANTS.diag(f"{rt.name}: ServiceAccount {need.service_account} lacks {shown} ({need.why})",
                              _where(rt.name, "gpu-operator"),
                              hint="grant it with a ClusterRole and ClusterRoleBinding, or turn the feature off")


def check_provisionable(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    if rt.provisioner != "karpenter":
        return
    for pool in rt.pools.values():
        if not pool.admitted:
            continue
        if pool.provisioning == "none":
            yield PROVISIONABLE.diag(f"{rt.name}: Kueue admits {', '.join(pool.admitted)} on pool {pool.name!r} but no "
                                     "NodePool provisions it", _where(rt.name, "nodes"))
            continue
        odd = [r for r in pool.admitted if r != GPU or rt.dra]
        if pool.provisioning == "dynamic" and odd:
            yield PROVISIONABLE.diag(
                f"{rt.name}: Kueue admits {', '.join(odd)} on pool {pool.name!r}, whose NodePool scales on demand, "
                "but Karpenter cannot launch a node for that resource (it sees only nvidia.com/gpu of instance "
                "types): admitted workloads stay Pending",
                _where(rt.name, f"nodes/nodepool._.{pool.name}.yaml"),
                hint="make the NodePool static (spec.replicas) or cut the pool as full cards")


def check_namespace_waves(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    """OPS004. After a one-team edit the reduced facts prove every object in time (a few classes per
    cluster instead of 200,000 (component, namespace) pairs at 5,000 teams, issue 21); only when they
    do not are the cluster's rows read, and each pair decided on its namespace's creators."""
    if rt.in_time():
        return
    sources_of, namespaced = rt.namespace_facts()
    waves = rt.waves
    pairs: list[tuple[str, str]] = []
    for component, ns in namespaced:  # the verdict is the pair's
        wave = waves.get(component)
        if wave is None:
            continue
        for src, w in sources_of.get(ns, ()):
            if w < wave or src == component:
                break
        else:
            pairs.append((component, ns))
    paths = rt.paths() if pairs else {}  # a finding names each file: read from the rows
    late = [(relpath, component, ns) for component, ns in pairs for relpath in paths.get((component, ns), ())]
    for relpath, component, ns in sorted(late):
        wave = rt.waves[component]
        made = ", ".join(f"{src} (wave {w})" for src, w in sources_of.get(ns, [])) or "nothing"
        yield NAMESPACE_WAVE.diag(
            f"{relpath}: namespace {ns!r} is created by {made}, not before {component} (wave {wave}) syncs",
            Location(f"out/{relpath}"),
            hint="render the Namespace in an earlier wave (component namespaces) or in the same component")


def check_disruption(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    for pool, spec in sorted(rt.nodepools.items()):
        tmpl = (spec.get("template") or {}).get("spec") or {}
        problems = []
        if tmpl.get("expireAfter") != "Never":
            problems.append(f"expireAfter is {tmpl.get('expireAfter', '720h (default)')}")
        budgets = (spec.get("disruption") or {}).get("budgets") or [{"nodes": "10%"}]
        for reason in ("Drifted", "Underutilized"):
            if not any(str(b.get("nodes")) == "0" and (not b.get("reasons") or reason in b["reasons"])
                       and "schedule" not in b for b in budgets):
                problems.append(f"no 0-node budget for {reason}")
        if problems:
            yield DISRUPTION.diag(f"{rt.name}: NodePool {pool}: {'; '.join(problems)}: Karpenter may evict running "
                                  "training jobs or model servers", _where(rt.name, f"nodes/nodepool._.{pool}.yaml"),
                                  hint="expireAfter: Never and budgets [{nodes: '0', reasons: [Drifted, Underutilized]}]")


def check_scrapers(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    for ns, dep in sorted(rt.scaled - rt.scrapers):
        yield SCRAPER.diag(f"{rt.name}: Deployment {ns}/{dep} is autoscaled on a Prometheus metric that nothing "
                           "scrapes (no PodMonitor/ServiceMonitor)", _where(rt.name, "serving"),
                           hint="render a PodMonitor for its pods' metrics port")


def _gated(term: dict[str, object]) -> bool:
    exprs = term.get("matchExpressions") or []
    assert isinstance(exprs, list)
    return any((e.get("key") == LABEL_MIG_CONFIG and e.get("operator") == "DoesNotExist")
               or (e.get("key") == MIG_STATE and e.get("operator") == "In" and e.get("values") == ["success"])
               for e in exprs)


def check_mig_order(rt: ClusterRuntime) -> Iterator[Diagnostic]:
    if not rt.dra or not rt.mig_pools:
        return
    terms = (((rt.kubelet_plugin_affinity or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    if not terms or not all(_gated(t) for t in terms):
        yield MIG_ORDER.diag(
            f"{rt.name}: MIG pools {', '.join(rt.mig_pools)} on a DRA cluster, but the DRA kubelet plugin may start "
            "before MIG Manager applies the layout and never sees the slices",
            _where(rt.name, "dra"),
            hint="kubeletPlugin.affinity: every term requires nvidia.com/mig.config.state=success or no nvidia.com/mig.config")


CHECKS = (check_taints, check_grants, check_provisionable, check_namespace_waves, check_disruption,
          check_scrapers, check_mig_order)


def check_runtime(policy: Policy, fresh: list[Manifest], inventory: Inventory,
                  facts: FileFacts | None = None) -> list[Diagnostic]:
    """Every OPS rule over the rendered objects of every cluster (``facts``: see ``fleet_runtime``)."""
    out: list[Diagnostic] = []
    for rt in fleet_runtime(policy, fresh, inventory, facts).values():
        for check in CHECKS:
            out.extend(check(rt))
    return out
