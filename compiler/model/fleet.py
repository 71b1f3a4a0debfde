"""The platform team's fleet file (``policies/fleet.yaml``, kind ``Fleet``)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Field, HttpUrl, WithJsonSchema

from compiler.catalog import GpuModelSpec
from compiler.model.acknowledge import AcknowledgedRemoval
from compiler.model.common import (
    Amount,
    Count,
    Description,
    DnsLabel,
    DnsSubdomain,
    LabelKey,
    LabelValue,
    Metadata,
    Strict,
    informational,
    shadowed,
)
from compiler.model.waivers import Waiver

# Kubernetes 1.20 to 1.40, as written in the JSON Schema too (tests/test_schema_parity.py).
KUBE_VERSION = r"^1\.(2[0-9]|3[0-9]|40)$"
# What an API server is reached at: http(s), a host name, IPv4 or [IPv6] host, an optional port up to
# 65535 and path; no user, query or fragment. Checked before pydantic's URL parsing, so the JSON
# Schema's pattern (an editor has no URL parser) and the compiler accept the same strings.
API_SERVER = (r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
              r"(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*)"
              r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
              r"(/[-A-Za-z0-9._~%!$&'()*+,;=:@/]*)?$")


def _kube_version(v: str) -> str:
    if not re.fullmatch(KUBE_VERSION, v):
        raise ValueError(f"{v!r} is not a Kubernetes minor version such as '1.34' (1.20 to 1.40)")
    return v


def _api_server_text(v: object) -> object:
    if isinstance(v, str) and (len(v) > 2083 or not re.fullmatch(API_SERVER, v)):
        raise ValueError(f"{v!r} is not an API server URL: http(s)://host[:port][/path]")
    return v  # anything else: HttpUrl says what is wrong


KubeVersion = Annotated[str, AfterValidator(_kube_version),
                        WithJsonSchema({"type": "string", "pattern": KUBE_VERSION})]
ApiServer = Annotated[HttpUrl, BeforeValidator(_api_server_text),
                      WithJsonSchema({"type": "string", "format": "uri", "pattern": API_SERVER, "maxLength": 2083})]
SemVer = Annotated[str, Field(pattern=r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")]
ImageRef = Annotated[str, Field(pattern=r"^[a-z0-9.\-/:_]+(@sha256:[a-f0-9]{64})?$", max_length=255)]
# A CODEOWNERS owner: @user, @org/team or an e-mail address, and nothing a CODEOWNERS line could
# read otherwise (a leading '#' starts a comment: '#x@a.bc' would leave the line without owners).
Owner = Annotated[str, Field(pattern=r"^(@[A-Za-z0-9][A-Za-z0-9-]{0,38}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,99})?"
                                     r"|[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                                     r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,63})$")]


class Versions(Strict):
    """Pinned versions of what gpupolicy installs; each may be overridden per cluster."""

    kueue: SemVer | None = None
    gpu_operator: SemVer | None = None
    dra_driver: SemVer | None = None
    vllm_image: ImageRef | None = None


class FullCut(Strict):
    """Whole cards: one ``nvidia.com/gpu`` per device."""

    mode: Literal["full"]


class MigDevices(Strict):
    """``gpus`` devices of a node cut into these profile counts (devices may differ in a node)."""

    gpus: Annotated[int, Field(ge=1, le=16)]
    profiles: dict[str, Annotated[int, Field(ge=1, le=7)]]


class MigCut(Strict):
    """MIG partitions: a named mig-parted layout or explicit per-device profile counts."""

    mode: Literal["mig"]
    layout: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$", max_length=63)] | None = None
    devices: list[MigDevices] | None = None
    strategy: Literal["single", "mixed"] = "mixed"


class TimeSlicingCut(Strict):
    """Time-slicing: every GPU advertised ``replicas`` times; no memory or fault isolation."""

    mode: Literal["timeslicing"]
    replicas: Annotated[int, Field(ge=2, le=64)]
    rename_by_default: bool = True
    fail_requests_greater_than_one: bool = True


class MpsCut(Strict):
    """CUDA MPS: ``replicas`` clients per GPU with per-client memory and compute limits."""

    mode: Literal["mps"]
    replicas: Annotated[int, Field(ge=2, le=48)]
    rename_by_default: bool = True


Cut = Annotated[Union[FullCut, MigCut, TimeSlicingCut, MpsCut], Field(discriminator="mode")]


class KarpenterPool(Strict):
    node_class: DnsLabel
    instance_types: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")]] = []
    capacity_type: Literal["on-demand", "spot", "reserved"] = "on-demand"


class NodePool(Strict):
    name: DnsLabel
    model: DnsLabel
    nodes: Annotated[int, Field(ge=1, le=10_000)]
    gpus_per_node: Annotated[int, Field(ge=1, le=16)]
    cut: Cut
    serving: bool = False
    driver: Annotated[str, Field(pattern=r"^\d{3}(\.\d+)*$")] | None = None
    node_labels: dict[LabelKey, LabelValue] = {}
    karpenter: KarpenterPool | None = None


class MultiKueueRole(Strict):
    role: Literal["manager", "worker"]
    workers: list[DnsLabel] = []
    kubeconfig_secret: DnsLabel | None = None


FeatureGateName = Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]{1,99}$")]
CelExpression = Annotated[str, Field(min_length=1, max_length=10 * 1024)]  # DeviceClass limit: 10 Ki


class FeatureGates(Strict):
    """Feature gates a cluster runs with beyond its versions' defaults; they gate DRA paths."""

    kubernetes: dict[FeatureGateName, bool] = {}  # control plane + kubelets, e.g. DRAExtendedResource
    dra_driver: dict[FeatureGateName, bool] = {}  # NVIDIA DRA driver chart `featureGates`, e.g. DynamicMIG


class CustomDeviceClass(Strict):
    """A DeviceClass the platform team writes (DRA clusters); its claims count against ``class``."""

    name: DnsSubdomain
    class_: Annotated[DnsSubdomain, Field(alias="class")]
    selectors: Annotated[list[CelExpression], Field(min_length=1, max_length=32)]
    description: Description | None = informational(
        "free text for readers; a DeviceClass has no description field to carry it")


class Cluster(Strict):
    name: DnsLabel
    kubernetes_version: KubeVersion
    api_server: ApiServer
    region: Annotated[str, Field(pattern=r"^[a-z0-9-]+$", max_length=63)]
    residency: DnsLabel
    provisioner: Literal["none", "karpenter", "cluster-api"] = "none"
    dra: bool = False
    versions: Versions = Versions()
    system_namespaces: list[DnsLabel] = []
    multikueue: MultiKueueRole | None = None
    pools: list[NodePool] = []
    feature_gates: FeatureGates = FeatureGates()
    device_classes: list[CustomDeviceClass] = []  # DRA only; proven against the pools (compiler.dra)


def _inherited(amount: str) -> Any:
    return shadowed(None, f"Fleet:spec.departments[].defaults.{amount}", f"Team:spec.budgets[].{amount}",
                    description=f"Inherited by budgets that set no {amount}; a department nearer the team, or the "
                    "budget itself, wins. Unset: fall through to the next level.")


class BudgetDefaults(Strict):
    """Defaults for team budgets: unset here means 'fall through to the next level'."""

    guaranteed: Count | None = _inherited("guaranteed")
    borrow: Amount | None = _inherited("borrow")
    lend: Amount | None = _inherited("lend")


class DepartmentCap(Strict):
    cluster: DnsLabel
    class_: Annotated[str, Field(alias="class")]
    max: Count


class Department(Strict):
    name: DnsLabel
    parent: DnsLabel | None = None
    weight: Annotated[float, Field(ge=0, le=1_000_000)] = 1.0
    caps: list[DepartmentCap] = []
    defaults: BudgetDefaults | None = None


class PriorityTier(Strict):
    name: DnsLabel
    value: Annotated[int, Field(ge=-2_147_483_648, le=1_000_000_000)]
    description: Annotated[str, Field(max_length=2048)] | None = None
    # The tier of teams that set no `priority` (compiler.policy.priorities); `defaults.priority` wins.
    default: bool = shadowed(False, "Fleet:spec.defaults.priority", description=(
        "The tier of teams that set no priority, unless spec.defaults.priority names one (which wins; ADM011 "
        "warns when the two differ)."))
    # Protected tier: only these teams may use it (their `priority` or `allowedPriorities`). Unset:
    # every team whose own tier is at or above it. Team files are owned by their teams, so this,
    # in the platform's fleet file, is what stops a team from raising its own priority (ADM007).
    reserved_for: list[DnsLabel] | None = None


class DataClass(Strict):
    name: DnsLabel
    description: Description | None = informational("free text for the people who classify data")
    residency: list[DnsLabel] | None = None  # allowed residency zones; unset = anywhere


Mode = Literal["Deny", "Warn", "Audit"]


class AdmissionModes(Strict):
    required_labels: Mode = "Deny"
    queue_name: Mode = "Deny"
    serving_isolation: Mode = "Deny"
    backstop: Mode = "Deny"
    # Tiers a team may use (Kueue label, pod priorityClassName) and the serving PriorityClass
    # outside serving namespaces (compiler.lower.admission_priority).
    priority: Mode = "Deny"
    # Who may change gpupolicy's Namespace labels; Warn by default so a mis-named ArgoCD
    # service account never blocks a sync.
    namespace_labels: Mode = "Warn"


class Admission(Strict):
    required_labels: list[LabelKey] = [
        "gpupolicy.dev/team",
        "gpupolicy.dev/model",
        "gpupolicy.dev/data-class",
    ]
    allowed_values: dict[LabelKey, list[LabelValue]] = {}
    modes: AdmissionModes = AdmissionModes()
    exempt_namespaces: list[DnsLabel] = []
    # Users (e.g. system:serviceaccount:<ns>:<name>) besides ArgoCD's controller and the
    # platform groups that may set gpupolicy.dev/* labels on Namespaces.
    label_writers: list[Annotated[str, Field(min_length=1, max_length=253)]] = []


class GitOps(Strict):
    repo_url: Annotated[str, Field(pattern=r"^(https://|ssh://|git@)[^\s]+$", max_length=512)]
    revision: Annotated[str, Field(pattern=r"^[A-Za-z0-9._/-]+$", max_length=255)] = "main"
    path: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$")] = "out"
    argocd_namespace: DnsLabel = "argocd"
    project: DnsLabel = "gpupolicy"


class Platform(Strict):
    owners: Annotated[list[Owner], Field(min_length=1)]
    groups: list[Annotated[str, Field(min_length=1, max_length=253)]] = []


class Defaults(Strict):
    budget: BudgetDefaults = BudgetDefaults()
    priority: DnsLabel | None = None
    serving_priority_value: Annotated[int, Field(ge=1, le=1_000_000_000)] = 1_000_000


class FleetSpec(Strict):
    platform: Platform
    versions: Versions = Versions()
    gitops: GitOps
    catalog: dict[DnsLabel, GpuModelSpec] = {}
    clusters: Annotated[list[Cluster], Field(min_length=1, max_length=100)]
    departments: Annotated[list[Department], Field(min_length=1, max_length=5000)]
    priorities: list[PriorityTier] = []
    data_classes: Annotated[list[DataClass], Field(min_length=1)]
    admission: Admission = Admission()
    defaults: Defaults = Defaults()
    # Removals a sync cannot undo, accepted on purpose (GITOPS302); listed in REPORT.md.
    acknowledged_removals: list[AcknowledgedRemoval] = []
    waivers: list[Waiver] = []  # accepted findings, with owner, reason and expiry (compiler.validate.waivers)


class FleetFile(Strict):
    api_version: Literal["gpupolicy.dev/v1alpha1"]
    kind: Literal["Fleet"]
    metadata: Metadata
    spec: FleetSpec
