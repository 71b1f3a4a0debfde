"""Kueue's manager Configuration (``config.kueue.x-k8s.io/v1beta2``), modelled strictly.

Kueue decodes its configuration file strictly (unknown fields stop the controller), then runs
``pkg/config/validation.go``. Both are replayed here against what gpupolicy generates, so a
bad Configuration is a build error, not a crash-looping controller after the sync. Field names
follow ``apis/config/v1beta2/configuration_types.go`` at Kueue v0.19.2.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define

BAD_CONFIG = define(
    "KUEUE010",
    "The generated Kueue Configuration decodes strictly and passes Kueue's own config validation.",
    "fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}",
    "fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}",
    scope=Scope.OUTPUT,
)


RULES: tuple[Rule, ...] = (BAD_CONFIG,)

# pkg/controller/jobs/*: the built-in integration names at v0.19.2.
FRAMEWORKS = frozenset({
    "batch/job", "deployment", "jobset.x-k8s.io/jobset", "kubeflow.org/jaxjob", "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset", "pod", "ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice",
    "sparkoperator.k8s.io/sparkapplication", "statefulset", "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
})
STRATEGY_SETS = (
    ["LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
)
Duration = str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class LabelSelectorRequirement(_Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(_Strict):
    matchLabels: dict[str, str] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


class Webhook(_Strict):
    port: int | None = None
    host: str | None = None
    certDir: str | None = None


class LeaderElection(_Strict):
    leaderElect: bool | None = None
    leaseDuration: Duration | None = None
    renewDeadline: Duration | None = None
    retryPeriod: Duration | None = None
    resourceLock: str | None = None
    resourceName: str | None = None
    resourceNamespace: str | None = None


class Metrics(_Strict):
    bindAddress: str | None = None
    enableClusterQueueResources: bool | None = None
    customLabels: list[dict[str, Any]] | None = None
    localQueueMetrics: dict[str, Any] | None = None


class Health(_Strict):
    healthProbeBindAddress: str | None = None
    readinessEndpointName: str | None = None
    livenessEndpointName: str | None = None


class Controller(_Strict):
    groupKindConcurrency: dict[str, int] | None = None
    cacheSyncTimeout: Duration | None = None


class RequeuingStrategy(_Strict):
    timestamp: Literal["Eviction", "Creation"] | None = None
    backoffLimitCount: int | None = None
    backoffBaseSeconds: int | None = None
    backoffMaxSeconds: int | None = None


class WaitForPodsReady(_Strict):
    timeout: Duration
    blockAdmission: bool | None = None
    requeuingStrategy: RequeuingStrategy | None = None
    recoveryTimeout: Duration | None = None


class ClientConnection(_Strict):
    qps: float | None = None
    burst: int | None = None


class Integrations(_Strict):
    frameworks: list[str] | None = None
    externalFrameworks: list[str] | None = None
    labelKeysToCopy: list[str] | None = None


class FairSharing(_Strict):
    preemptionStrategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]]


class AdmissionFairSharing(_Strict):
    usageHalfLifeTime: Duration
    usageSamplingInterval: Duration
    resourceWeights: dict[str, float] | None = None


class CelSelector(_Strict):
    expression: str


class DeviceSelector(_Strict):
    cel: CelSelector


class CounterSource(_Strict):
    name: str
    driver: str
    deviceSelector: DeviceSelector


class CapacitySource(_Strict):
    name: str
    driver: str
    deviceSelector: DeviceSelector


class DeviceClassSource(_Strict):
    counter: CounterSource | None = None
    capacity: CapacitySource | None = None


class DeviceClassMapping(_Strict):
    name: str = Field(max_length=253)
    deviceClassNames: list[str]
    sources: list[DeviceClassSource] | None = None


class Transformation(_Strict):
    input: str
    strategy: Literal["Retain", "Replace"] | None = None
    multiplyBy: str | None = None
    outputs: dict[str, int | str] | None = None


class Resources(_Strict):
    quotaCheckStrategy: Literal["BlockUndeclared", "IgnoreUndeclared"] | None = None
    excludeResourcePrefixes: list[str] | None = None
    transformations: list[Transformation] | None = None
    deviceClassMappings: list[DeviceClassMapping] | None = None


class Configuration(_Strict):
    apiVersion: Literal["config.kueue.x-k8s.io/v1beta2"]
    kind: Literal["Configuration"]
    namespace: str | None = None
    webhook: Webhook | None = None
    leaderElection: LeaderElection | None = None
    metrics: Metrics | None = None
    health: Health | None = None
    pprofBindAddress: str | None = None
    controller: Controller | None = None
    tls: dict[str, Any] | None = None
    manageJobsWithoutQueueName: bool = False
    managedJobsNamespaceSelector: LabelSelector | None = None
    internalCertManagement: dict[str, Any] | None = None
    waitForPodsReady: WaitForPodsReady | None = None
    clientConnection: ClientConnection | None = None
    integrations: Integrations | None = None
    multiKueue: dict[str, Any] | None = None
    fairSharing: FairSharing | None = None
    admissionFairSharing: AdmissionFairSharing | None = None
    resources: Resources | None = None
    featureGates: dict[str, bool] | None = None
    objectRetentionPolicies: dict[str, Any] | None = None
    visibilityServer: dict[str, Any] | None = None


def _selector_matches(sel: LabelSelector | None, labels: dict[str, str]) -> bool:
    if sel is None:
        return True  # Kueue's default selector is applied later; nothing to check here
    for k, v in (sel.matchLabels or {}).items():
        if labels.get(k) != v:
            return False
    for req in sel.matchExpressions or []:
        have = req.key in labels
        values = req.values or []
        if req.operator == "In" and not (have and labels[req.key] in values):
            return False
        if req.operator == "NotIn" and have and labels[req.key] in values:
            return False
        if req.operator == "Exists" and not have:
            return False
        if req.operator == "DoesNotExist" and have:
            return False
    return True


def problems(data: dict[str, Any]) -> list[str]:
    """Strict decoding plus the validation Kueue runs at start-up (the parts we can replay)."""
    try:
        cfg = Configuration.model_validate(data)
    except ValidationError as err:
        return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_url=False)]
    out: list[str] = []
    fs = cfg.fairSharing
    if fs is not None and list(fs.preemptionStrategies) not in [list(s) for s in STRATEGY_SETS]:
        out.append(f"fairSharing.preemptionStrategies {fs.preemptionStrategies} is not one of {list(STRATEGY_SETS)}")
    res = cfg.resources
    if res and res.quotaCheckStrategy == "IgnoreUndeclared" and res.excludeResourcePrefixes:
        out.append("resources: excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared")
    seen_classes: dict[str, str] = {}
    for m in (res.deviceClassMappings if res else None) or []:
        for dc in m.deviceClassNames:
            if dc in seen_classes and seen_classes[dc] != m.name:
                out.append(f"deviceClassMappings: DeviceClass {dc!r} mapped to {seen_classes[dc]!r} and {m.name!r}")
            seen_classes.setdefault(dc, m.name)
        for s in m.sources or []:
            if (s.counter is None) == (s.capacity is None):
                out.append(f"deviceClassMappings[{m.name}]: exactly one source type must be set per entry")
    frameworks = (cfg.integrations.frameworks if cfg.integrations else None) or []
    for f in frameworks:
        if f not in FRAMEWORKS:
            out.append(f"integrations.frameworks: {f!r} is not a built-in integration")
    if len(set(frameworks)) != len(frameworks):
        out.append("integrations.frameworks: duplicate entries")
    namespace = cfg.namespace or "kueue-system"
    for ns in ("kube-system", namespace):
        if cfg.managedJobsNamespaceSelector is not None and _selector_matches(
            cfg.managedJobsNamespaceSelector, {"kubernetes.io/metadata.name": ns}
        ):
            out.append(f"managedJobsNamespaceSelector should not match the {ns!r} namespace")
    return out


def check(data: dict[str, Any], cluster: str, where: Location) -> list[Diagnostic]:
    return [BAD_CONFIG.diag(f"Kueue Configuration for cluster {cluster!r}: {p}", where,
                            hint="this is generated; report it, or adjust the fleet settings that feed it")
            for p in problems(data)]
