"""What the synced fleet runs, for REPORT.md and the bootstrap report: per cluster, how its pools get
nodes, what the node agents tolerate, which MIG/DRA ordering holds, how serving scales and on which
scrape, which GPU classes sit idle, and the prerequisites gpupolicy does not install. Only what the
rendered objects provide (the OPS rules, ``compiler.verify.ops``, check the objects say so)."""

from __future__ import annotations

from compiler.policy.drivers import driver_plan
from compiler.policy.graph import Policy
from compiler.policy.node_agents import contract_taints
from compiler.policy.node_contract import pool_contracts
from compiler.serving.plan import deployments
from compiler.validate.ops import idle_classes


def static_pools(policy: Policy, cluster: str) -> list[str]:
    """Karpenter pools rendered with ``replicas`` (``compiler.policy.node_contract.on_demand_pool``)."""
    if policy.clusters[cluster].provisioner != "karpenter":
        return []
    return [pc.pool for pc in pool_contracts(policy, cluster) if not pc.on_demand]


def prerequisites(policy: Policy, cluster: str) -> list[str]:
    """What must exist on (or beside) the cluster for the rendered objects to work, beyond CRDs."""
    c = policy.clusters[cluster]
    out: list[str] = []
    drivers = driver_plan(policy, cluster)
    if drivers.host_pools:
        declared = sorted({p.driver for p in c.pools if p.name in drivers.host_pools and p.driver})
        out.append(f"the GPU driver ({', '.join(f'`{d}`' for d in declared)}) on the nodes of pools "
                   f"{', '.join(f'`{p}`' for p in drivers.host_pools)}: the GPU Operator installs none there"
                   + ("" if drivers.operator_pools else " (its driver is off on this cluster)"))
    if c.provisioner == "karpenter":
        classes = sorted({p.karpenter.node_class for p in c.pools if p.karpenter is not None})
        if classes:
            out.append(f"Karpenter `EC2NodeClass` {', '.join(f'`{n}`' for n in classes)} (referenced by the "
                       "NodePools, not rendered: until it exists the NodePools are not Ready and the `nodes` "
                       "Application blocks its wave)")
        static = static_pools(policy, cluster)
        if static:
            out.append(f"Karpenter controller with feature gate `StaticCapacity=true` (static NodePools "
                       f"{', '.join(f'`{p}`' for p in static)}: Karpenter cannot launch on demand for "
                       "time-sliced, MIG or DRA capacity)")
    scaled = [r for r in deployments(policy, cluster) if r.dep.autoscaling is not None]
    if scaled:
        out.append("Prometheus Operator with a Prometheus that selects the rendered PodMonitors in serving "
                   "namespaces and answers at each KEDA trigger's `serverAddress` (KEDA itself for `keda`, "
                   "a custom-metrics adapter for `hpa`)")
    for r in deployments(policy, cluster):
        e = r.dep.expose
        if e is None:
            continue
        gw = f"Gateway `{e.gateway}`" + (f" in `{e.gateway_namespace}`" if e.gateway_namespace else "")
        what = [gw, "Body-Based Routing (the HTTPRoute matches `X-Gateway-Model-Name`, which only BBR sets)"]
        if e.inference_pool and e.endpoint_picker is None:
            what.append("an implementation that picks InferencePool endpoints itself (no endpoint picker "
                        "is rendered or referenced)")
        elif e.endpoint_picker is not None:
            what.append(f"the endpoint picker Service `{e.endpoint_picker.name}` (not rendered)")
        out.append(f"serving `{r.team.name}/{r.dep.name}`: " + "; ".join(what))
    out += _serving_references(policy, cluster)
    return out


def _serving_references(policy: Policy, cluster: str) -> list[str]:
    """What the serving objects name and gpupolicy never renders: the Secrets (a reference, never a
    value: the hub token and image pull secrets; the team's serving Role cannot create them, so the
    platform or a secrets controller must), the model caches' StorageClasses and existing claims.
    Until a Secret exists the vLLM pods stay in CreateContainerConfigError (or ImagePullBackOff);
    until a StorageClass does, the cache PVC and the pods stay Pending."""
    secrets: dict[tuple[str, str], set[str]] = {}  # (namespace, Secret) -> what needs it
    classes: dict[str, set[str]] = {}
    claims: dict[tuple[str, str], set[str]] = {}
    for r in deployments(policy, cluster):
        who, ns, d = f"`{r.team.name}/{r.dep.name}`", r.namespace, r.dep
        if d.secrets.hub_token is not None:
            secrets.setdefault((ns, d.secrets.hub_token.name), set()).add(
                f"{who}'s hub token, key `{d.secrets.hub_token.key}`")
        for name in d.secrets.image_pull_secrets:
            secrets.setdefault((ns, name), set()).add(f"{who}'s image pull secret")
        if d.cache.existing_claim is not None:
            claims.setdefault((ns, d.cache.existing_claim), set()).add(who)
        elif d.cache.storage_class is not None:
            classes.setdefault(d.cache.storage_class, set()).add(who)
    out = [f"Secret `{name}` in `{ns}` ({'; '.join(sorted(what))}): gpupolicy references it, never its value"
           for (ns, name), what in sorted(secrets.items())]
    out += [f"StorageClass `{sc}` (model cache of {', '.join(sorted(who))})" for sc, who in sorted(classes.items())]
    out += [f"PersistentVolumeClaim `{name}` in `{ns}` (existing model cache of {', '.join(sorted(who))})"
            for (ns, name), who in sorted(claims.items())]
    return out


def runtime_section(policy: Policy) -> list[str]:
    lines = ["## What the synced fleet runs", ""]
    mode = policy.fleet.spec.admission.modes.backstop
    lines += [("GPU backstop `Deny`: namespaces gpupolicy does not manage cannot request GPUs." if mode == "Deny" else
               f"GPU backstop `{mode}`: namespaces gpupolicy does not manage **can** still request GPUs "
               "(the binding only warns or audits; OPS006)."), ""]
    idle = idle_classes(policy)
    for cluster in sorted(policy.clusters):
        c = policy.clusters[cluster]
        if not c.pools:
            continue
        lines.append(f"### `{cluster}`")
        lines.append("")
        taints = ", ".join(f"`{k}:{e}`" for k, e in contract_taints(policy, cluster)) or "none"
        agents = "GPU Operator operands, NFD worker" + (", DRA kubelet plugin" if c.dra else "")
        lines.append(f"- node agents ({agents}) tolerate the chart defaults and every pool taint ({taints})")
        if c.provisioner == "karpenter":
            static = static_pools(policy, cluster)
            dynamic = sorted(p.name for p in c.pools if p.name not in static)
            lines.append(f"- Karpenter: static pools (fixed `replicas`) {', '.join(f'`{p}`' for p in static) or 'none'}; "
                         f"on-demand pools {', '.join(f'`{p}`' for p in dynamic) or 'none'}; nodes never expire "
                         "and are not replaced for drift or repacked while running work")
        else:
            lines.append(f"- nodes: provisioned outside gpupolicy (`{c.provisioner}`), per the node contract")
        mig = sorted(p.name for p in c.pools if p.cut.mode == "mig")
        if mig and c.dra:
            lines.append(f"- MIG pools {', '.join(f'`{p}`' for p in mig)}: the DRA kubelet plugin runs only where "
                         "MIG Manager reports `nvidia.com/mig.config.state=success`, so it publishes the applied slices")
        for r in deployments(policy, cluster):
            a = r.dep.autoscaling
            how = ("fixed at " + str(r.dep.replicas.min) + " replicas (no autoscaler; `replicas.max` only "
                   "reserves pool capacity)") if a is None else (
                f"{a.kind} scales {r.dep.replicas.min}..{r.dep.replicas.max} on `vllm:num_requests_waiting`, "
                "scraped by the rendered PodMonitor")
            lines.append(f"- serving `{r.team.name}/{r.dep.name}`: {how}")
        for cid, units in sorted(idle.get(cluster, {}).items()):
            lines.append(f"- idle: `{cid}` ({units} units) is budgeted by no team; no queue admits it (OPS005)")
        pre = prerequisites(policy, cluster)
        if pre:
            lines.append("- prerequisites gpupolicy does not install: " + "; ".join(pre))
        lines.append("")
    return lines
