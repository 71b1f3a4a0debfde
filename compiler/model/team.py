"""An ML team's file (``policies/teams/<team>.yaml``, kind ``Team``)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from compiler.model.acknowledge import AcknowledgedRemoval
from compiler.model.common import Amount, Count, DnsLabel, DnsSubdomain, Metadata, Strict, informational
from compiler.model.fleet import Owner

Isolation = Literal["shared", "isolated", "exclusive"]


class TeamNamespace(Strict):
    """A training namespace of the team and the clusters it exists on."""

    name: DnsLabel
    clusters: Annotated[list[DnsLabel], Field(min_length=1)]


class Budget(Strict):
    """GPUs of one class on one cluster. Each amount: unset = inherit, 0 = none,
    N = up to N, ``unlimited`` = no limit (not allowed for ``guaranteed``)."""

    cluster: DnsLabel
    class_: Annotated[DnsSubdomain, Field(alias="class")]
    guaranteed: Count | None = None
    borrow: Amount | None = None
    lend: Amount | None = None


class ModelArchitecture(Strict):
    parameters_b: Annotated[float, Field(gt=0, le=10_000)]
    layers: Annotated[int, Field(ge=1, le=1000)]
    attention_heads: Annotated[int, Field(ge=1, le=1024)]
    kv_heads: Annotated[int, Field(ge=1, le=1024)]
    head_dim: Annotated[int, Field(ge=1, le=1024)]


class ServingReplicas(Strict):
    min: Annotated[int, Field(ge=0, le=1000)]
    max: Annotated[int, Field(ge=1, le=1000)]


class Sla(Strict):
    tpot_p95_ms: Annotated[float, Field(gt=0, le=100_000)]
    concurrent_sequences: Annotated[int, Field(ge=1, le=100_000)]
    # Recorded, not sized: time to first token depends on prefill and queueing (SPEC §4), which the
    # compiler does not model; the TPOT bound above is what the sizing checks enforce.
    ttft_p95_ms: Annotated[float, Field(gt=0, le=1_000_000)] | None = informational(
        "time to first token depends on prefill and queueing, which the compiler does not model "
        "(SPEC §4); only tpotP95Ms is checked against the GPU's memory bandwidth")


class SecretRef(Strict):
    name: DnsSubdomain
    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)]


class ServingSecrets(Strict):
    hub_token: SecretRef | None = None
    image_pull_secrets: list[DnsSubdomain] = []


class ModelCache(Strict):
    size: Annotated[str, Field(pattern=r"^[1-9][0-9]*(Mi|Gi|Ti)$")] = "200Gi"
    storage_class: DnsSubdomain | None = None
    existing_claim: DnsSubdomain | None = None
    # unset: ReadWriteMany when replicas.max > 1 (replicas share the cache across nodes), else ReadWriteOnce
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] | None = None


class EndpointPicker(Strict):
    """The Service of an Endpoint Picker (EPP) the InferencePool delegates endpoint choice to."""

    name: DnsLabel
    port: Annotated[int, Field(ge=1, le=65535)] = 9002
    failure_mode: Literal["FailOpen", "FailClose"] | None = None


class Exposure(Strict):
    inference_pool: bool = True
    gateway: DnsSubdomain
    gateway_namespace: DnsLabel | None = None
    # unset: no endpointPickerRef (optional since GIE v1.5); the gateway implementation picks endpoints
    endpoint_picker: EndpointPicker | None = None


class Autoscaling(Strict):
    kind: Literal["hpa", "keda"] = "keda"
    waiting_requests_target: Annotated[int, Field(ge=1, le=10_000)] = 5
    prometheus_address: Annotated[str, Field(pattern=r"^https?://[^\s]+$")] | None = None


class ServingDeployment(Strict):
    name: DnsLabel
    cluster: DnsLabel
    pool: DnsLabel
    model: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)?$", max_length=200)]
    architecture: Union[DnsSubdomain, ModelArchitecture] | None = None
    dtype: Literal["bf16", "fp16", "fp8", "int8", "int4"] = "bf16"
    data_class: DnsLabel
    tensor_parallel: Annotated[int, Field(ge=1, le=16)] = 1
    replicas: ServingReplicas
    max_model_len: Annotated[int, Field(ge=256, le=10_000_000)]
    gpu_memory_utilization: Annotated[float, Field(ge=0.1, le=0.99)] = 0.9
    sla: Sla
    expose: Exposure | None = None
    secrets: ServingSecrets = ServingSecrets()
    cache: ModelCache = ModelCache()
    autoscaling: Autoscaling | None = None


class TeamSpec(Strict):
    owners: Annotated[list[Owner], Field(min_length=1)]
    groups: list[Annotated[str, Field(min_length=1, max_length=253)]] = []
    department: DnsLabel
    isolation: Isolation
    data_classes: Annotated[list[DnsLabel], Field(min_length=1)]
    # The team's tier: the default its jobs are told to use; unset = the fleet's default tier.
    priority: DnsLabel | None = None
    # Tiers its jobs may name (Kueue label kueue.x-k8s.io/priority-class, pod priorityClassName);
    # unset = its tier and every lower one that is not reserved for other teams.
    allowed_priorities: Annotated[list[DnsLabel], Field(min_length=1)] | None = None
    fair_share_weight: Annotated[float, Field(ge=0, le=1_000_000)] | None = None
    namespaces: list[TeamNamespace] = []
    serving_namespace: DnsLabel | None = None
    budgets: list[Budget] = []
    serving: list[ServingDeployment] = []
    # Removals of this team's own queues a sync cannot undo, accepted on purpose (GITOPS302).
    acknowledged_removals: list[AcknowledgedRemoval] = []


class TeamFile(Strict):
    api_version: Literal["gpupolicy.dev/v1alpha1"]
    kind: Literal["Team"]
    metadata: Metadata
    spec: TeamSpec
