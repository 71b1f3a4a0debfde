"""Version compatibility (docs/misconfigurations.md, family "versions"): every pinned component and
every rendered API version against what each cluster runs, checked at the line that pins it.

- KUEUE301: the Kueue a cluster runs serves the API gpupolicy writes (``kueue.x-k8s.io/v1beta2``
  and the ``config.kueue.x-k8s.io/v1beta2`` Configuration, both from Kueue v0.15.0).
- FLEET301: the cluster's Kubernetes serves the built-in APIs the output uses
  (``admissionregistration.k8s.io/v1`` ValidatingAdmissionPolicy, GA in 1.30).
- SERVE301: the vLLM image knows the model's architecture (Llama 3.1's ``rope_scaling``).
- SERVE302 / SERVE303: the dtype runs on the serving GPU (bf16 needs compute capability 8.0;
  fp8 weights and activations 8.9).
- SERVE306: dtype int8 / int4 names a checkpoint already quantized so: vLLM quantizes to FP8 on
  load (``--quantization fp8``) but never to int8 or int4; those weights come from the checkpoint
  (AWQ, GPTQ, compressed-tensors W8A8/W4A16, bitsandbytes), so a 16-bit checkpoint sized at 4
  bits loads at 16 and runs out of memory at start (compiler.lower.serving.DTYPE_ARGS).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, checks, define
from compiler.model.fleet import Cluster
from compiler.policy.graph import Policy
from compiler.policy.versions import (
    DEFAULT_KUEUE,
    DEFAULT_VLLM_IMAGE,
    KUEUE_API,
    kueue_version,
    version_tuple,
    vllm_image,
)
from compiler.serving.plan import Resolved, deployments

KUEUE_V1BETA2 = (0, 15, 0)
MIN_KUBERNETES = (1, 30)

KUEUE_API_TOO_NEW = define(
    "KUEUE301", "The Kueue a cluster runs serves the API gpupolicy writes: kueue.x-k8s.io/v1beta2 objects and a "
    "config.kueue.x-k8s.io/v1beta2 Configuration need Kueue v0.15.0 or newer.",
    "versions: {kueue: v0.19.2}", "versions: {kueue: v0.14.3}   # no matches for kind ClusterQueue in v1beta2",
    scope=Scope.FLEET)
KUBE_TOO_OLD = define(
    "FLEET301", "A cluster's Kubernetes serves the built-in APIs gpupolicy renders: ValidatingAdmissionPolicy "
    "admissionregistration.k8s.io/v1 is GA in 1.30.",
    'kubernetesVersion: "1.30"', 'kubernetesVersion: "1.29"   # VAP v1 not served', scope=Scope.FLEET)
VLLM_TOO_OLD = define(
    "SERVE301", "The vLLM image is new enough for the model's architecture (Llama 3.1 and 3.3 need vLLM 0.5.3 or "
    "newer, the release that added their rope_scaling).",
    "vllmImage: vllm/vllm-openai:v0.11.0\n# architecture: llama-3.1-70b",
    "vllmImage: vllm/vllm-openai:v0.5.0\n# architecture: llama-3.1-70b", scope=Scope.POLICY)
BF16_UNSUPPORTED = define(
    "SERVE302", "dtype bf16 runs only on GPUs of compute capability 8.0 or newer (vLLM refuses to start on "
    "Turing and Volta).",
    "dtype: bf16   # pool of H100 (9.0)", "dtype: bf16   # pool of T4 (7.5): use fp16", scope=Scope.POLICY)
FP8_EMULATED = define(
    "SERVE303", "dtype fp8 is native from compute capability 8.9 (Ada, Hopper); below it vLLM falls back to "
    "weight-only FP8 kernels or refuses the model.",
    "dtype: fp8   # H100 (9.0)", "dtype: fp8   # A100 (8.0)", Severity.WARNING, scope=Scope.POLICY)

QUANTIZED_CHECKPOINT = define(
    "SERVE306", "dtype int8 or int4 names a checkpoint quantized so (AWQ, GPTQ, W8A8, W4A16, bitsandbytes): vLLM "
    "quantizes nothing to int8 or int4 on load, so a 16-bit checkpoint sized at 4 bits loads at 16.",
    "model: hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4\ndtype: int4",
    "model: meta-llama/Llama-3.1-70B-Instruct   # bf16 weights\ndtype: int4", Severity.WARNING, scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (KUEUE_API_TOO_NEW, KUBE_TOO_OLD, VLLM_TOO_OLD, BF16_UNSUPPORTED, FP8_EMULATED,
                           QUANTIZED_CHECKPOINT)

# What hub ids of int8/int4 checkpoints say about their weights (names are how hubs publish them)
QUANTIZED_MARKERS = ("awq", "gptq", "int4", "int8", "w4a16", "w8a8", "w8a16", "4bit", "8bit", "bnb", "quantized",
                     "fp4", "nf4", "marlin", "exl2")

# Minimum vLLM release per built-in architecture key, with the reason shown to the author.
VLLM_MINIMUM: dict[str, tuple[tuple[int, int, int], str]] = {
    "llama-3.1-8b": ((0, 5, 3), "Llama 3.1's rope_scaling (rope_type llama3), vllm-project/vllm#6689"),
    "llama-3.1-70b": ((0, 5, 3), "Llama 3.1's rope_scaling (rope_type llama3), vllm-project/vllm#6689"),
    "llama-3.3-70b": ((0, 5, 3), "Llama 3.3 uses Llama 3.1's rope_scaling (rope_type llama3)"),
}


def _version_path(policy: Policy, ci: int, cluster: Cluster, attr: str, key: str) -> tuple[Location, str]:
    """Where a cluster's pin is written (``attr`` of the model, ``key`` in YAML): its own versions, else
    the fleet's (else gpupolicy's default: the fleet's ``versions`` key, or ``spec``)."""
    if getattr(cluster.versions, attr) is not None:
        return policy.fleet_src.locate(("spec", "clusters", ci, "versions", key)), f"cluster {cluster.name!r}"
    if getattr(policy.fleet.spec.versions, attr) is not None:
        return policy.fleet_src.locate(("spec", "versions", key)), "the fleet"
    return policy.fleet_src.locate(("spec", "clusters", ci, "name")), "gpupolicy's default"


@checks(KUEUE_API_TOO_NEW)
def check_kueue_api(policy: Policy) -> Iterator[Diagnostic]:
    """One error per pin (a cluster's, or the fleet's for every cluster without one), naming its clusters.
    A pin a DRA cluster uses is DRA013's (Kueue v0.18 there), reported once, by that rule."""
    pins: dict[Location, tuple[str, str, list[str], bool]] = {}
    for ci, c in enumerate(policy.fleet.spec.clusters):
        version = kueue_version(policy, c)
        have = version_tuple(version)
        if have is None or have >= KUEUE_V1BETA2:
            continue
        loc, who = _version_path(policy, ci, c, "kueue", "kueue")
        _, _, names, dra = pins.setdefault(loc, (version, who, [], False))
        names.append(c.name)
        pins[loc] = (version, who, names, dra or c.dra)
    for loc, (version, who, names, dra) in pins.items():
        if dra:
            continue
        clusters = ", ".join(repr(n) for n in names)
        yield KUEUE_API_TOO_NEW.diag(
            f"Kueue {version} (pinned by {who}) runs on {clusters}, but gpupolicy writes {KUEUE_API} objects "
            "(ClusterQueue spec.cohortName, Cohort, LocalQueue) and a config.kueue.x-k8s.io/v1beta2 Configuration, "
            "served from Kueue v0.15.0: the sync fails with 'no matches for kind' and the controller rejects its "
            "configuration", loc,
            hint=f"pin Kueue v0.15.0 or newer (gpupolicy's default is {DEFAULT_KUEUE}); upgrade Kueue before the "
                 "queues, then migrate stored objects with Kueue's hack/migrate-to-v1beta2.sh")


@checks(KUBE_TOO_OLD)
def check_kubernetes(policy: Policy) -> Iterator[Diagnostic]:
    for ci, c in enumerate(policy.fleet.spec.clusters):
        have = version_tuple(c.kubernetes_version)
        if have is None or have[:2] >= MIN_KUBERNETES:
            continue
        yield KUBE_TOO_OLD.diag(
            f"cluster {c.name!r} runs Kubernetes {c.kubernetes_version}, but the admission policies gpupolicy "
            "renders are ValidatingAdmissionPolicy admissionregistration.k8s.io/v1, served from 1.30 (beta and "
            "off by default before): GPU workloads would be admitted unchecked",
            policy.fleet_src.locate(("spec", "clusters", ci, "kubernetesVersion")),
            hint='upgrade the cluster to 1.30 or newer and write the version quoted, e.g. kubernetesVersion: "1.30"')


def _image_tag(image: str) -> tuple[int, int, int] | None:
    ref = image.split("@", 1)[0]
    if ":" not in ref.rsplit("/", 1)[-1]:
        return None
    return version_tuple(ref.rsplit(":", 1)[1])


@checks(VLLM_TOO_OLD)
def check_vllm_version(policy: Policy) -> Iterator[Diagnostic]:
    """One error per pin (the fleet's or a cluster's), naming every deployment it breaks; a note on each
    team file whose deployment it breaks."""
    index = {c.name: i for i, c in enumerate(policy.fleet.spec.clusters)}
    broken: dict[Location, list[tuple[str, Resolved, str, tuple[int, int, int], str]]] = {}
    for r in deployments(policy):
        if r.cluster is None or r.arch is None or r.arch.key not in VLLM_MINIMUM:
            continue
        image = vllm_image(policy, r.cluster)
        have = _image_tag(image)
        need, why = VLLM_MINIMUM[r.arch.key]
        if have is None or have >= need:
            continue
        loc, who = _version_path(policy, index[r.cluster.name], r.cluster, "vllm_image", "vllmImage")
        broken.setdefault(loc, []).append((image, r, who, need, why))
    for loc, items in broken.items():
        image, _, who, _, why = items[0]
        need = max(i[3] for i in items)
        wanted = ".".join(map(str, need))
        names = ", ".join(f"{r.team.name}/{r.dep.name} ({r.arch.key if r.arch else '?'})" for _, r, _, _, _ in items)
        yield VLLM_TOO_OLD.diag(
            f"{image} (pinned by {who}) is older than vLLM {wanted}, which {names} need: {why}; the engine stops "
            "at start with \"rope_scaling must be a dictionary with two fields\"", loc,
            hint=f"pin a vLLM image of v{wanted} or newer (gpupolicy's default: {DEFAULT_VLLM_IMAGE})")
        for _, r, _, _, _ in items:
            yield VLLM_TOO_OLD.diag(
                f"serving {r.dep.name!r} needs vLLM {wanted} or newer; the fleet pins {image}",
                r.team.src.locate(r.path + ("model",)), severity=Severity.INFO,
                hint="related: the image is pinned in the fleet file, reported there")


def _capability(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


@checks(BF16_UNSUPPORTED)
def check_bf16(policy: Policy) -> Iterator[Diagnostic]:
    for r in deployments(policy):
        if r.gpu is None or r.dep.dtype != "bf16" or _capability(r.gpu.compute_capability) >= (8, 0):
            continue
        yield BF16_UNSUPPORTED.diag(
            f"serving {r.dep.name!r} loads weights as bf16 on pool {r.dep.pool!r} ({r.gpu.display_name}, compute "
            f"capability {r.gpu.compute_capability}); vLLM stops with \"Bfloat16 is only supported on GPUs with "
            "compute capability of at least 8.0\"", r.team.src.locate(r.path + ("dtype",)),
            hint="set dtype: fp16 (vLLM --dtype half) or serve from a pool of Ampere or newer GPUs")


@checks(QUANTIZED_CHECKPOINT)
def check_quantized_checkpoint(policy: Policy) -> Iterator[Diagnostic]:
    for r in deployments(policy):
        if r.dep.dtype not in ("int8", "int4") or any(m in r.dep.model.lower() for m in QUANTIZED_MARKERS):
            continue
        yield QUANTIZED_CHECKPOINT.diag(
            f"serving {r.dep.name!r} is sized with {r.dep.dtype} weights, but {r.dep.model!r} does not name a "
            f"checkpoint quantized to {r.dep.dtype}: vLLM loads the weights as the checkpoint holds them (it "
            "quantizes only to fp8 on load), so a 16-bit checkpoint needs about 4x (int4) or 2x (int8) the memory "
            "sized", r.team.src.locate(r.path + ("dtype",)),
            hint="name the quantized checkpoint (e.g. an AWQ, GPTQ or W8A8 repository of the model), or size it as "
                 "it is published (dtype: bf16, or fp8, which vLLM quantizes on load)")


@checks(FP8_EMULATED)
def check_fp8(policy: Policy) -> Iterator[Diagnostic]:
    for r in deployments(policy):
        if r.gpu is None or r.dep.dtype != "fp8" or _capability(r.gpu.compute_capability) >= (8, 9):
            continue
        yield FP8_EMULATED.diag(
            f"serving {r.dep.name!r} uses fp8 on {r.gpu.display_name} (compute capability "
            f"{r.gpu.compute_capability}): FP8 W8A8 needs 8.9 (Ada, Hopper); here vLLM runs weight-only FP8 "
            "(Marlin) at bf16 speed, so the TPOT the SLA assumes is not reached", r.team.src.locate(r.path + ("dtype",)),
            hint="use dtype: bf16 (and size for it), or a pool of L4/L40S/H100 or newer")
