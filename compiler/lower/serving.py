"""Serving on reserved pools: vLLM Deployments outside Kueue, in each team's serving namespace.

Per cluster: the ``gpupolicy-serving`` PriorityClass. Per deployment: the model-cache PVC, a
DRA ResourceClaimTemplate (DRA clusters), the vLLM Deployment, its Service and
PodDisruptionBudget, optional KEDA ScaledObject or HPA, and with ``expose`` an InferencePool
plus HTTPRoute. Pods select the pool's nodes by the two reservation labels and tolerate its
taint (SPEC §9); they never carry a Kueue queue-name label.
"""

from __future__ import annotations

from typing import Any

from compiler.lower.common import obj
from compiler.lower.namespaces import KEEP_ON_PRUNE
from compiler.model.fleet import NodePool
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.classes import class_id
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import (
    LABEL_DATA_CLASS,
    LABEL_MODEL,
    LABEL_POOL,
    LABEL_PURPOSE,
    LABEL_TEAM,
    SERVING_NODE_LABEL,
    SERVING_TAINT_KEY,
)
from compiler.policy.priorities import SERVING_PRIORITY_CLASS
from compiler.policy.versions import vllm_image
from compiler.serving.plan import Resolved, deployments, model_label, resolve
from compiler.serving.sizing import startup_budget_seconds

PRIORITY_CLASS = SERVING_PRIORITY_CLASS  # only serving namespaces may use it (compiler.lower.admission_priority)
PORT = 8000
SERVICE_PORT = 80
MONITORING_API = "monitoring.coreos.com/v1"
CACHE_MOUNT = "/data"
CPU_PER_GPU = 4
MEMORY_GIB_PER_GPU = 16
SHM_SIZE = "20Gi"  # production-stack's default shmSize; NCCL between TP ranks uses /dev/shm
MODEL_HEADER = "X-Gateway-Model-Name"  # set by Body-Based Routing from the request's "model"
ANNOTATION_MODEL_ID = "gpupolicy.dev/model-id"
# GPU nodes are often tainted nvidia.com/gpu:NoSchedule; the ExtendedResourceToleration plugin
# only adds this for device-plugin requests, not for DRA claims.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# vLLM --dtype takes torch dtypes; quantized weights come from the checkpoint (int8/int4) or
# from --quantization fp8 (dynamic FP8 weights), with 16-bit activations either way.
DTYPE_ARGS: dict[str, list[str]] = {
    "bf16": ["--dtype", "bfloat16"],
    "fp16": ["--dtype", "float16"],
    "fp8": ["--dtype", "auto", "--quantization", "fp8"],
    "int8": ["--dtype", "auto"],
    "int4": ["--dtype", "auto"],
}


def selector_labels(name: str) -> dict[str, str]:
    """Immutable Deployment selector; also the Service and InferencePool selector."""
    return {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": name}


def lower_serving_priority(policy: Policy, cluster: str) -> list[Manifest]:
    c = policy.clusters[cluster]
    if not any(p.serving for p in c.pools) and not any(True for _ in deployments(policy, cluster)):
        return []
    pc = obj("scheduling.k8s.io/v1", "PriorityClass", PRIORITY_CLASS, labels={LABEL_PURPOSE: "serving"})
    pc["value"] = policy.fleet.spec.defaults.serving_priority_value
    pc["globalDefault"] = False
    # Serving pods select only reserved nodes, so preemption can only evict strays there; that is
    # what reserving the pool means. SERVE013 keeps the value above every priority tier.
    pc["preemptionPolicy"] = "PreemptLowerPriority"
    pc["description"] = "gpupolicy: vLLM serving on reserved pools (outside Kueue)"
    return [Manifest(cluster, "serving", pc, (policy.fleet_src.path,))]


def lower_serving(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    out: list[Manifest] = []
    sources = (policy.fleet_src.path, team.path)
    for i, dep in enumerate(team.model.spec.serving):  # this team's only: the pass runs per team
        if dep.cluster != cluster:
            continue
        r = resolve(policy, team, i, dep)
        if r.pool is None:
            continue
        out.extend(Manifest(cluster, "serving", o, sources) for o in serving_objects(policy, r))
    return out


def serving_objects(policy: Policy, r: Resolved) -> list[dict[str, Any]]:
    d, ns, pool = r.dep, r.namespace, r.pool
    assert pool is not None and r.cluster is not None
    labels = {LABEL_TEAM: r.team.name, LABEL_PURPOSE: "serving", **selector_labels(d.name)}
    objs: list[dict[str, Any]] = []
    claim = d.cache.existing_claim or f"{d.name}-model-cache"
    if d.cache.existing_claim is None:
        pvc = obj("v1", "PersistentVolumeClaim", claim, namespace=ns, labels=labels, annotations=KEEP_ON_PRUNE)
        mode = d.cache.access_mode or ("ReadWriteMany" if d.replicas.max > 1 else "ReadWriteOnce")
        pvc["spec"] = {"accessModes": [mode], "resources": {"requests": {"storage": d.cache.size}}}
        if d.cache.storage_class:
            pvc["spec"]["storageClassName"] = d.cache.storage_class
        objs.append(pvc)
    if r.cluster.dra:
        rct = obj("resource.k8s.io/v1", "ResourceClaimTemplate", f"{d.name}-gpus", namespace=ns, labels=labels)
        # One claim for all TP GPUs: the scheduler allocates them together on one node.
        rct["spec"] = {"spec": {"devices": {"requests": [{
            "name": "gpus",
            "exactly": {"deviceClassName": class_id(pool.model, "full"), "allocationMode": "ExactCount",
                        "count": d.tensor_parallel},
        }]}}}
        objs.append(rct)
    objs.append(_deployment(policy, r, ns, pool, labels, claim))
    svc = obj("v1", "Service", d.name, namespace=ns, labels=labels)
    svc["spec"] = {"type": "ClusterIP", "selector": selector_labels(d.name),
                   "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}]}
    objs.append(svc)
    pdb = obj("policy/v1", "PodDisruptionBudget", d.name, namespace=ns, labels=labels)
    # maxUnavailable 1 (not minAvailable = min replicas): a drain may always evict one replica, so
    # drains never block, and with replicas > 1 the others keep serving while it reschedules.
    # AlwaysAllow lets drains evict replicas that are not Ready (stuck loading, crash-looping),
    # which would otherwise count as already-disrupted and block the drain.
    pdb["spec"] = {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(d.name)},
                   "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    objs.append(pdb)
    objs.extend(_autoscaler(r, ns, labels))
    objs.extend(_exposure(r, ns, labels))
    return objs


PROGRESS_MARGIN_SECONDS = 900  # scheduling and pulling the vLLM image (~10 GB), beyond the startup probe


def _placement(name: str, pool: NodePool) -> dict[str, Any]:
    """Where a deployment's pods run: its serving pool's nodes (their label and taint), and its
    replicas on different nodes when the pool allows (preferred: a pool of fewer nodes still
    schedules them all), so one node's failure or drain never takes every replica at once."""
    return {
        "nodeSelector": {LABEL_POOL: pool.name, SERVING_NODE_LABEL: pool.name},
        "tolerations": [
            {"key": SERVING_TAINT_KEY, "operator": "Equal", "value": pool.name, "effect": "NoSchedule"},
            dict(GPU_TOLERATION),
        ],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": selector_labels(name)},
                                               "topologyKey": "kubernetes.io/hostname"}}]}},
    }


def _rollout(weights: float) -> dict[str, Any]:
    """How a Deployment rolls out. No surge: a reserved pool is sized for its replicas, a surge pod
    would wait for GPUs. A rollout that makes no progress for progressDeadlineSeconds (600 s by
    default, apps/v1 DeploymentSpec) is marked ProgressDeadlineExceeded and Argo CD shows the app
    Degraded; a replica may take its whole startup budget (a cold 70B: ~49 minutes) plus its
    scheduling and the vLLM image pull, so the deadline is that budget and 15 minutes more."""
    return {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "progressDeadlineSeconds": startup_budget_seconds(weights) + PROGRESS_MARGIN_SECONDS}


def _deployment(policy: Policy, r: Resolved, ns: str, pool: NodePool, labels: dict[str, str],
                claim: str) -> dict[str, Any]:
    d = r.dep
    assert r.cluster is not None
    tp = d.tensor_parallel
    sizing = r.sizing
    weights = sizing.weight_bytes if sizing is not None else 0.0
    pod_labels = {
        **selector_labels(d.name),
        LABEL_TEAM: r.team.name,
        LABEL_MODEL: model_label(d.model),
        LABEL_DATA_CLASS: d.data_class,
        LABEL_PURPOSE: "serving",
        "inference.networking.k8s.io/engine-type": "vllm",
    }
    args = ["--model", d.model, "--served-model-name", d.name, "--tensor-parallel-size", str(tp),
            "--max-model-len", str(d.max_model_len), "--gpu-memory-utilization", f"{d.gpu_memory_utilization:g}",
            "--max-num-seqs", str(d.sla.concurrent_sequences), *DTYPE_ARGS[d.dtype], "--port", str(PORT)]
    env: list[dict[str, Any]] = [{"name": "HF_HOME", "value": CACHE_MOUNT}]
    if d.secrets.hub_token is not None:
        ref = d.secrets.hub_token
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}})
    # Burstable QoS (a BestEffort pod is evicted first under node pressure), per GPU rank: CPU for
    # the API server and worker, host memory for the process; no limits, so loading may burst
    # (weights stream through the page cache, which a request need not reserve).
    requests: dict[str, Any] = {"cpu": str(CPU_PER_GPU * tp), "memory": f"{MEMORY_GIB_PER_GPU * tp}Gi"}
    resources: dict[str, Any] = {"requests": requests}
    if r.cluster.dra:
        resources["claims"] = [{"name": "gpus"}]
    else:
        gpu_res = _gpu_resource(policy, r)
        requests[gpu_res] = tp
        resources["limits"] = {gpu_res: tp}
    mounts = [{"name": "model-cache", "mountPath": CACHE_MOUNT}]
    volumes: list[dict[str, Any]] = [{"name": "model-cache", "persistentVolumeClaim": {"claimName": claim}}]
    if tp > 1:
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
        volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}})
    period = 10
    container: dict[str, Any] = {
        "name": "vllm",
        "image": vllm_image(policy, r.cluster),
        "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        "args": args,
        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
        "env": env,
        "resources": resources,
        "volumeMounts": mounts,
        "startupProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": period,
                         "failureThreshold": startup_budget_seconds(weights) // period},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "failureThreshold": 3},
    }
    pod_spec: dict[str, Any] = {
        "priorityClassName": PRIORITY_CLASS,
        **_placement(d.name, pool),
        # A Service named "vllm" would inject VLLM_PORT=tcp://..., which vLLM reads as its own setting.
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 60,
    }
    if d.secrets.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": n} for n in d.secrets.image_pull_secrets]
    if r.cluster.dra:
        pod_spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": f"{d.name}-gpus"}]
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = volumes
    dep = obj("apps/v1", "Deployment", d.name, namespace=ns,
              labels={**labels, LABEL_MODEL: model_label(d.model), LABEL_DATA_CLASS: d.data_class},
              annotations={ANNOTATION_MODEL_ID: d.model})
    spec: dict[str, Any] = {}
    if d.autoscaling is None:
        spec["replicas"] = d.replicas.min
    # else: replicas left to the autoscaler, so a sync never resets what it scaled to
    spec["selector"] = {"matchLabels": selector_labels(d.name)}
    spec.update(_rollout(weights))
    spec["template"] = {"metadata": {"labels": pod_labels, "annotations": {ANNOTATION_MODEL_ID: d.model}},
                        "spec": pod_spec}
    dep["spec"] = spec
    return dep


def _gpu_resource(policy: Policy, r: Resolved) -> str:
    assert r.pool is not None
    cls = policy.classes.get(r.dep.cluster, {}).get(class_id(r.pool.model, "full"))
    return cls.resource if cls is not None else "nvidia.com/gpu"


def _autoscaler(r: Resolved, ns: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    d, a = r.dep, r.dep.autoscaling
    if a is None:
        return []
    if a.kind == "keda":
        so = obj("keda.sh/v1alpha1", "ScaledObject", d.name, namespace=ns, labels=labels)
        query = f'sum(vllm:num_requests_waiting{{namespace="{ns}",model_name="{d.name}"}})'
        so["spec"] = {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": d.name},
            "minReplicaCount": d.replicas.min,
            "maxReplicaCount": d.replicas.max,
            "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
                "serverAddress": a.prometheus_address or "",
                "query": query,
                "threshold": str(a.waiting_requests_target),
                # KEDA's default (true) reads an empty result as zero load: a metric nobody scrapes
                # would never scale. false makes it an error the ScaledObject reports
                # (kedacore/keda pkg/scalers/prometheus_scaler.go, ignoreNullValues).
                "ignoreNullValues": "false",
            }}],
        }
        return [so, _pod_monitor(r, ns, labels)]
    hpa = obj("autoscaling/v2", "HorizontalPodAutoscaler", d.name, namespace=ns, labels=labels)
    # Needs a custom-metrics adapter exposing vLLM's vllm:num_requests_waiting gauge per pod
    # under this name (metric names with ':' are not valid in the custom metrics API path).
    hpa["spec"] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": d.name},
        "minReplicas": max(1, d.replicas.min),
        "maxReplicas": d.replicas.max,
        "metrics": [{"type": "Pods", "pods": {"metric": {"name": "vllm_num_requests_waiting"},
                                              "target": {"type": "AverageValue",
                                                         "averageValue": str(a.waiting_requests_target)}}}],
    }
    return [hpa, _pod_monitor(r, ns, labels)]


def _pod_monitor(r: Resolved, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    """The scrape of vLLM's ``/metrics`` the autoscaler's query reads (``vllm:num_requests_waiting``):
    a Prometheus Operator PodMonitor (``monitoring.coreos.com/v1``, CRD in the prerequisites) on the
    container port ``http``. The Prometheus the trigger queries must select PodMonitors in serving
    namespaces (its ``podMonitorSelector``/``podMonitorNamespaceSelector``); OPS009 checks that every
    autoscaled Deployment has one."""
    pm = obj(MONITORING_API, "PodMonitor", r.dep.name, namespace=ns, labels=labels)
    pm["spec"] = {"selector": {"matchLabels": selector_labels(r.dep.name)},
                  "podMetricsEndpoints": [{"port": "http", "path": "/metrics"}]}
    return pm


def _exposure(r: Resolved, ns: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    d, e = r.dep, r.dep.expose
    if e is None:
        return []
    out: list[dict[str, Any]] = []
    if e.inference_pool:
        pool = obj("inference.networking.k8s.io/v1", "InferencePool", d.name, namespace=ns, labels=labels)
        spec: dict[str, Any] = {"selector": {"matchLabels": selector_labels(d.name)},
                                "targetPorts": [{"number": PORT}]}
        if e.endpoint_picker is not None:
            ref: dict[str, Any] = {"group": "", "kind": "Service", "name": e.endpoint_picker.name,
                                   "port": {"number": e.endpoint_picker.port}}
            if e.endpoint_picker.failure_mode is not None:
                ref["failureMode"] = e.endpoint_picker.failure_mode
            spec["endpointPickerRef"] = ref
        pool["spec"] = spec
        out.append(pool)
        backend: dict[str, Any] = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": d.name}
    else:
        backend = {"group": "", "kind": "Service", "name": d.name, "port": SERVICE_PORT}
    parent: dict[str, Any] = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": e.gateway}
    if e.gateway_namespace is not None:
        parent["namespace"] = e.gateway_namespace
    route = obj("gateway.networking.k8s.io/v1", "HTTPRoute", d.name, namespace=ns, labels=labels)
    # Several models share a Gateway; requests are told apart by the model name Body-Based
    # Routing copies from the OpenAI "model" field into this header (--served-model-name).
    route["spec"] = {
        "parentRefs": [parent],
        "rules": [{
            "matches": [{"path": {"type": "PathPrefix", "value": "/"},
                         "headers": [{"type": "Exact", "name": MODEL_HEADER, "value": d.name}]}],
            "backendRefs": [backend],
        }],
    }
    out.append(route)
    return out


TARGETS = (
    Target("serving-priority", "serving", "cluster", passes=(lower_serving_priority,), kinds=(
        Kind("scheduling.k8s.io/v1", "PriorityClass", "cluster"),
    )),
    Target("serving", "serving", "team", passes=(lower_serving,), kinds=(
        Kind("v1", "PersistentVolumeClaim"),
        Kind("resource.k8s.io/v1", "ResourceClaimTemplate"),
        Kind("apps/v1", "Deployment"),
        Kind("v1", "Service"),
        Kind("policy/v1", "PodDisruptionBudget"),
        Kind("keda.sh/v1alpha1", "ScaledObject"),
        Kind("autoscaling/v2", "HorizontalPodAutoscaler"),
        Kind(MONITORING_API, "PodMonitor"),
        Kind("inference.networking.k8s.io/v1", "InferencePool"),
        Kind("gateway.networking.k8s.io/v1", "HTTPRoute"),
    )),
)
