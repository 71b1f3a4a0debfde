"""Serving rules SERVE002-SERVE018: a deployment fits its GPUs, its pool and its SLA.

SERVE001 (serving only on serving pools) lives in ``compiler.validate.teams``. Each rule here
is located at the key of the team file that decides it, with the numbers in the message.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define, did_you_mean, per_team
from compiler.policy.cuts import cut_mode
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import LABEL_DATA_CLASS, LABEL_MODEL, LABEL_TEAM
from compiler.serving.architectures import ARCHITECTURES, gated_hub_id
from compiler.serving.plan import Resolved, deployments, model_label, resolve
from compiler.serving.sizing import GIB, KIB, pool_gpus, tp_problem

MEMORY = define(
    "SERVE002", "A replica's weights plus the KV cache for maxModelLen x concurrentSequences fit GPU memory x "
    "tensorParallel x gpuMemoryUtilization.",
    "# llama-3.1-70b bf16 on 4 x H200: 131 GiB weights + 80 GiB KV <= 505 GiB",
    "# llama-3.1-70b bf16 on 1 x L40S: 131 GiB of weights alone exceed 40 GiB", scope=Scope.POLICY)
TP_HEADS = define(
    "SERVE003", "tensorParallel divides the model's attention heads, and its KV heads divide or are divided by it "
    "(vLLM asserts both).",
    "architecture: llama-3.1-70b   # 64 heads, 8 KV heads\ntensorParallel: 4",
    "architecture: llama-3.1-70b\ntensorParallel: 3", scope=Scope.POLICY)
TP_NODE = define(
    "SERVE004", "tensorParallel is at most the pool's GPUs per node: a vLLM replica runs on one node here.",
    "pool: h200-serve   # 8 GPUs per node\ntensorParallel: 4",
    "pool: l40s-serve   # 4 GPUs per node\ntensorParallel: 8", scope=Scope.POLICY)
REPLICAS_POOL = define(
    "SERVE005", "replicas.min x tensorParallel fits the serving pool's GPUs, whole replicas per node (error); "
    "replicas.max x tensorParallel should too (warning: autoscaling stalls with pending pods).",
    "# pool of 16 GPUs\ntensorParallel: 4\nreplicas: {min: 2, max: 4}",
    "# pool of 16 GPUs\ntensorParallel: 4\nreplicas: {min: 5, max: 6}", scope=Scope.POLICY)
POOL_SUM = define(
    "SERVE006", "All deployments on one serving pool fit it together: the sum of min replicas x TP fits (error), "
    "the sum of max replicas x TP should (warning).",
    "# pool of 8 GPUs: a {min: 2, TP 2} + b {min: 4, TP 1} = 8",
    "# pool of 8 GPUs: a {min: 3, TP 2} + b {min: 4, TP 1} = 10", scope=Scope.POLICY)
TPOT = define(
    "SERVE007", "The TPOT p95 target is not below the memory-bandwidth floor (weight bytes per GPU / bandwidth); "
    "a warning when the GPU's bandwidth figure is unsourced.",
    "# 70B bf16, TP 4 on H200 (4.8 TB/s): floor 7.3 ms\nsla: {tpotP95Ms: 50}",
    "# 70B bf16, TP 1 on L40S (864 GB/s): floor 163 ms\nsla: {tpotP95Ms: 50}", scope=Scope.POLICY)
ARCH = define(
    "SERVE008", "A deployment's architecture is known: a built-in catalog key, an inline architecture, or a hub id "
    "the catalog lists.",
    "architecture: llama-3.1-8b", "architecture: llama-3.1-9b", scope=Scope.POLICY)
FULL_CARD = define(
    "SERVE009", "Serving pools are cut as full cards: no time-slicing or MPS (no memory or fault isolation) and no "
    "MIG (vLLM tensor parallelism cannot span MIG instances).",
    "- name: h200-serve\n  serving: true\n  cut: {mode: full}",
    "- name: l4-serve\n  serving: true\n  cut: {mode: timeslicing, replicas: 4}", scope=Scope.POLICY)
SINGLE_REPLICA = define(
    "SERVE010", "A serving deployment keeps at least two replicas: with one, a node drain either blocks or takes "
    "the model down.",
    "replicas: {min: 2, max: 4}", "replicas: {min: 1, max: 4}", Severity.WARNING, scope=Scope.POLICY)
MIN_MAX = define(
    "SERVE011", "replicas.min is at most replicas.max.",
    "replicas: {min: 2, max: 4}", "replicas: {min: 4, max: 2}", scope=Scope.POLICY)
IDLE_AUTOSCALER = define(
    "SERVE012", "Autoscaling needs room: replicas.max is above replicas.min.",
    "replicas: {min: 2, max: 6}\nautoscaling: {kind: keda}", "replicas: {min: 2, max: 2}\nautoscaling: {kind: keda}",
    Severity.WARNING, scope=Scope.POLICY)
PRIORITY = define(
    "SERVE013", "The serving PriorityClass value is above every priority tier, so serving pods are never the "
    "first preempted.",
    "defaults: {servingPriorityValue: 1000000}\npriorities: [{name: production, value: 1000}]",
    "defaults: {servingPriorityValue: 500}\npriorities: [{name: production, value: 1000}]", scope=Scope.POLICY)
AUTOSCALER = define(
    "SERVE014", "Autoscaling can work: KEDA needs a prometheusAddress to read vllm:num_requests_waiting, and an HPA "
    "needs replicas.min >= 1.",
    "autoscaling: {kind: keda, prometheusAddress: 'http://prometheus.monitoring:9090'}",
    "autoscaling: {kind: keda}   # no prometheusAddress", scope=Scope.POLICY)
NAMES = define(
    "SERVE015", "Serving names start with a letter (they name a Service) and are unique: within a team and cluster, "
    "and among deployments exposed through one Gateway (the name is the served model name routes match on); the "
    "serving namespace a team's name gives (<team>-serving) is a DNS label of at most 63 characters.",
    "# nlp: chat; search: query-rewrite (same gateway)", "# nlp: chat; vision: chat (same gateway)", scope=Scope.POLICY)
CACHE = define(
    "SERVE016", "The model cache volume holds the weights.",
    "# 8B bf16 (15 GiB)\ncache: {size: 50Gi}", "# 70B bf16 (131 GiB)\ncache: {size: 100Gi}", Severity.WARNING,
    scope=Scope.POLICY)
CONTEXT = define(
    "SERVE017", "maxModelLen is within the model's context length (vLLM refuses to start otherwise).",
    "architecture: llama-3.1-8b   # 131072\nmaxModelLen: 8192",
    "architecture: qwen2.5-7b   # 32768\nmaxModelLen: 65536", scope=Scope.POLICY)
LABELS = define(
    "SERVE018", "The labels serving pods carry (team, model, data class) satisfy the fleet's admission allowedValues.",
    "allowedValues: {gpupolicy.dev/data-class: [public, pii]}\n# serving dataClass: pii",
    "allowedValues: {gpupolicy.dev/data-class: [public]}\n# serving dataClass: pii", scope=Scope.POLICY)

GATED = define(
    "SERVE019", "A model from a gated hub repository has a hub token (vLLM's download fails with 401 without one).",
    "model: meta-llama/Llama-3.1-8B-Instruct\nsecrets: {hubToken: {name: hf-token, key: token}}",
    "model: meta-llama/Llama-3.1-8B-Instruct   # no secrets.hubToken", Severity.WARNING, scope=Scope.POLICY)


RULES: tuple[Rule, ...] = (
    MEMORY, TP_HEADS, TP_NODE, REPLICAS_POOL, POOL_SUM, TPOT, ARCH, FULL_CARD, SINGLE_REPLICA, MIN_MAX,
    IDLE_AUTOSCALER, PRIORITY, AUTOSCALER, NAMES, CACHE, CONTEXT, LABELS, GATED,
)

_QUANTITY = re.compile(r"^(\d+)(Mi|Gi|Ti)$")
_UNITS = {"Mi": 1 << 20, "Gi": GIB, "Ti": 1 << 40}


def _gib(v: float) -> str:
    return f"{v / GIB:.2f} GiB"


@checks(*RULES)  # not split: one pass over the resolved deployments, whose sizing several rules share
def check_serving(policy: Policy) -> Iterator[Diagnostic]:
    """Across teams: the deployments sharing a pool fit it together, deployment names and their
    Gateway routes do not collide, and the serving priority is above every tier."""
    resolved = list(deployments(policy))
    yield from _check_pool_sums(resolved)
    yield from _check_names(resolved)
    yield from _check_priority(policy)


# A deployment alone reads the fleet and its team only: the 1,100 deployments of 5,000 teams took
# ~0.04 s of every run inside the policy-scope check; as its per-team part a store keeps them.
@per_team(*RULES)
def serving_per_team(policy: Policy, team: Team) -> Iterator[Diagnostic]:
    """Each of a team's deployments alone: its weights and KV cache fit its GPUs, tensor
    parallelism suits the model and the node, its replicas fit the pool, its latency bound meets
    its SLA, its model cache and labels are usable."""
    for i, dep in enumerate(team.model.spec.serving):
        yield from _check_one(policy, resolve(policy, team, i, dep))


def _check_one(policy: Policy, r: Resolved) -> Iterator[Diagnostic]:
    d, src, base = r.dep, r.team.src, r.path
    at = lambda *keys: src.locate(base + keys)  # noqa: E731 - short locators
    at_key = lambda *keys: src.locate(base + keys, key=True)  # noqa: E731 - mapping-valued keys
    if d.replicas.min > d.replicas.max:
        yield MIN_MAX.diag(f"serving {d.name!r}: replicas.min {d.replicas.min} > replicas.max {d.replicas.max}",
                           at("replicas", "min"), hint="raise max or lower min")
    if d.replicas.min == 1:
        yield SINGLE_REPLICA.diag(
            f"serving {d.name!r} runs one replica at minimum: its PodDisruptionBudget (maxUnavailable 1) lets a "
            "node drain take the model down, and a stricter one would block the drain",
            at("replicas", "min"), hint="set replicas.min to 2 or more to keep serving through drains and rollouts")
    if d.autoscaling is not None:
        if d.replicas.max <= d.replicas.min:
            yield IDLE_AUTOSCALER.diag(f"serving {d.name!r} autoscales between {d.replicas.min} and "
                                       f"{d.replicas.max} replicas: nothing to scale", at_key("autoscaling"),
                                       hint="raise replicas.max or drop autoscaling")
        if d.autoscaling.kind == "keda" and d.autoscaling.prometheus_address is None:
            yield AUTOSCALER.diag(f"serving {d.name!r}: KEDA scales on vllm:num_requests_waiting from Prometheus "
                                  "but no prometheusAddress is set", at_key("autoscaling"),
                                  hint="add autoscaling.prometheusAddress, e.g. http://prometheus-operated.monitoring"
                                  ".svc:9090")
        if d.autoscaling.kind == "hpa" and d.replicas.min < 1:
            yield AUTOSCALER.diag(f"serving {d.name!r}: an HPA cannot scale to zero (minReplicas >= 1)",
                                  at("replicas", "min"), hint="set replicas.min >= 1 or use kind: keda")
    yield from _check_labels(policy, r)
    if d.secrets.hub_token is None and gated_hub_id(d.model):
        yield GATED.diag(f"serving {d.name!r}: {d.model} is a gated repository on the Hugging Face hub, and no hub "
                         "token is given: the pods cannot download the weights (401)", at("model"),
                         hint="add secrets: {hubToken: {name: <Secret in the serving namespace>, key: token}} for an "
                         "account that accepted the model's licence")
    if r.arch is None:
        if d.architecture is not None:
            yield ARCH.diag(f"serving {d.name!r}: unknown architecture {d.architecture!r}", at("architecture"),
                            hint=did_you_mean(str(d.architecture), ARCHITECTURES) or
                            f"known: {', '.join(ARCHITECTURES)}; or give parametersB, layers, attentionHeads, "
                            "kvHeads, headDim inline")
        else:
            yield ARCH.diag(f"serving {d.name!r}: model {d.model!r} is not in the architecture catalog, so it cannot "
                            "be sized", at("model"), hint=f"set architecture: one of {', '.join(ARCHITECTURES)}, "
                            "or parametersB, layers, attentionHeads, kvHeads, headDim inline")
    else:
        problem = tp_problem(r.arch, d.tensor_parallel)
        if problem is not None:
            valid = [tp for tp in (1, 2, 4, 8, 16) if tp_problem(r.arch, tp) is None]
            yield TP_HEADS.diag(f"serving {d.name!r}: tensorParallel {d.tensor_parallel} does not fit "
                                f"{r.arch.key}: {problem}", at("tensorParallel"),
                                hint=f"valid sizes: {', '.join(map(str, valid))}")
        if r.arch.max_context is not None and d.max_model_len > r.arch.max_context:
            yield CONTEXT.diag(f"serving {d.name!r}: maxModelLen {d.max_model_len} exceeds {r.arch.key}'s context "
                               f"of {r.arch.max_context} tokens", at("maxModelLen"),
                               hint=f"lower maxModelLen to {r.arch.max_context} or less")
    if r.pool is None or r.cluster is None:
        return  # FLEET002 / SERVE001 report unknown clusters and pools
    gpus = pool_gpus(r.pool)
    if not cut_mode(r.pool.cut).serves:
        yield FULL_CARD.diag(f"serving {d.name!r}: pool {r.pool.name!r} is cut as {r.pool.cut.mode}; serving needs "
                             "whole cards", at("pool"),
                             hint="cut serving pools with mode: full (time-slicing/MPS share memory with no "
                             "isolation, and vLLM cannot run tensor parallel over MIG instances)")
    if d.tensor_parallel > r.pool.gpus_per_node:
        yield TP_NODE.diag(f"serving {d.name!r}: tensorParallel {d.tensor_parallel} > {r.pool.gpus_per_node} GPUs per "
                           f"node of pool {r.pool.name!r}", at("tensorParallel"),
                           hint="a replica must fit one node; lower tensorParallel or use a pool with more GPUs "
                           "per node")
    # A replica's GPUs sit on one node, so a pool hosts nodes x floor(GPUs per node / TP) replicas.
    tp = d.tensor_parallel
    slots = r.pool.nodes * (r.pool.gpus_per_node // tp)
    where = (f"pool {r.pool.name!r} has {gpus} GPUs ({r.pool.nodes} nodes x {r.pool.gpus_per_node}), room for "
             f"{slots} replicas of {tp} GPUs")
    if tp <= r.pool.gpus_per_node and d.replicas.min > slots:
        yield REPLICAS_POOL.diag(f"serving {d.name!r}: {d.replicas.min} min replicas x TP {tp} = "
                                 f"{d.replicas.min * tp} GPUs but {where}", at("replicas", "min"),
                                 hint=f"at most {slots} replicas fit")
    elif tp <= r.pool.gpus_per_node and d.replicas.max > slots:
        yield REPLICAS_POOL.diag(f"serving {d.name!r}: {d.replicas.max} max replicas x TP {tp} = "
                                 f"{d.replicas.max * tp} GPUs but {where}; scaling past {slots} replicas leaves "
                                 "pods pending", at("replicas", "max"), severity=Severity.WARNING,
                                 hint=f"lower replicas.max to {slots} or grow the pool")
    s = r.sizing
    if s is None:
        return
    if not s.fits:
        fit_tp = s.tp_needed(r.pool.gpus_per_node)
        if s.weight_bytes > s.budget:
            hint = (f"tensorParallel {fit_tp} fits" if fit_tp else "no tensorParallel on this pool fits; use a GPU "
                    "with more memory or a smaller dtype")
            loc = at("tensorParallel")
        else:
            hint = (f"the budget holds {s.max_sequences} sequences of {d.max_model_len} tokens: lower "
                    "sla.concurrentSequences or maxModelLen" + (f", or use tensorParallel {fit_tp}" if fit_tp else ""))
            loc = at("maxModelLen")
        yield MEMORY.diag(
            f"serving {d.name!r}: weights {_gib(s.weight_bytes)} ({s.arch.parameters_b:.2f}B x {d.dtype}) + KV "
            f"{_gib(s.kv_needed)} ({s.kv_per_token / KIB:g} KiB/token x {d.max_model_len} tokens x {s.sequences} "
            f"sequences) = {_gib(s.need)} exceed {s.tp} x {_gib(s.gpu_memory_bytes)} x {s.utilization:g} = "
            f"{_gib(s.budget)} on {s.gpu.id}", loc, hint=hint)
    bound = s.tpot_bound_ms
    if bound is None:
        yield TPOT.diag(f"serving {d.name!r}: {s.gpu.id} has no memory bandwidth in the catalog; the TPOT target "
                        "cannot be checked", at("sla", "tpotP95Ms"), severity=Severity.WARNING,
                        hint="add memoryBandwidthGbps (with a source) for the model in the fleet catalog")
    elif d.sla.tpot_p95_ms < bound:
        sourced = s.bandwidth_sourced
        yield TPOT.diag(
            f"serving {d.name!r}: tpotP95Ms {d.sla.tpot_p95_ms:g} is below the memory-bandwidth floor of "
            f"{bound:.1f} ms ({s.weight_bytes / 1e9:.1f} GB of weights / TP {s.tp} / {s.bandwidth_gbps:g} GB/s on "
            f"{s.gpu.id}{'' if sourced else ', bandwidth figure unsourced'})", at("sla", "tpotP95Ms"),
            severity=None if sourced else Severity.WARNING,
            hint="raise tensorParallel, use a smaller dtype or a faster GPU, or relax the target")
    if d.cache.existing_claim is None:
        m = _QUANTITY.match(d.cache.size)
        if m and int(m.group(1)) * _UNITS[m.group(2)] < s.weight_bytes:
            yield CACHE.diag(f"serving {d.name!r}: model cache {d.cache.size} is smaller than the weights "
                             f"({_gib(s.weight_bytes)})", at("cache", "size"),
                             hint=f"size the cache at {int(s.weight_bytes * 1.2 // GIB) + 1}Gi or more")


def _check_labels(policy: Policy, r: Resolved) -> Iterator[Diagnostic]:
    allowed = policy.fleet.spec.admission.allowed_values
    d = r.dep
    for key, value, field in ((LABEL_TEAM, r.team.name, "name"), (LABEL_MODEL, model_label(d.model), "model"),
                              (LABEL_DATA_CLASS, d.data_class, "dataClass")):
        if key in allowed and value not in allowed[key]:
            yield LABELS.diag(f"serving {d.name!r}: pods would carry {key}={value}, which admission does not allow "
                              f"(allowed: {', '.join(allowed[key])})", r.team.src.locate(r.path + (field,)),
                              hint=f"add {value!r} to admission.allowedValues[{key!r}] in fleet.yaml")


def _check_pool_sums(resolved: list[Resolved]) -> Iterator[Diagnostic]:
    by_pool: dict[tuple[str, str], list[Resolved]] = defaultdict(list)
    for r in resolved:
        if r.pool is not None:
            by_pool[(r.dep.cluster, r.dep.pool)].append(r)
    for (cluster, pool_name), rs in sorted(by_pool.items()):
        if len(rs) < 2:
            continue  # a single deployment is SERVE005's
        pool = rs[0].pool
        assert pool is not None
        gpus = pool_gpus(pool)
        for attr, key, severity in (("min", "min", None), ("max", "max", Severity.WARNING)):
            total = sum(getattr(r.dep.replicas, attr) * r.dep.tensor_parallel for r in rs)
            if total <= gpus:
                continue
            parts = ", ".join(f"{r.team.name}/{r.dep.name} {getattr(r.dep.replicas, attr)}x{r.dep.tensor_parallel}"
                              for r in rs)
            last = rs[-1]
            yield POOL_SUM.diag(f"pool {pool_name!r} on {cluster!r} has {gpus} GPUs but its deployments need {total} "
                                f"at {attr} replicas ({parts})", last.team.src.locate(last.path + ("replicas", key)),
                                severity=severity, hint=f"free {total - gpus} GPUs or grow the pool")
            if severity is None:
                break  # the max sum is at least the min sum: one diagnostic per pool


def _check_names(resolved: list[Resolved]) -> Iterator[Diagnostic]:
    seen: dict[tuple[str, str, str], Resolved] = {}
    routes: dict[tuple[str, str, str], Resolved] = {}  # (cluster, gateway, name)
    long: set[str] = set()  # teams whose default serving namespace is too long (said once)
    for r in resolved:
        d = r.dep
        if len(r.namespace) > 63 and r.team.name not in long:  # a declared servingNamespace is a DNS label already
            long.add(r.team.name)
            yield NAMES.diag(f"team {r.team.name!r} serves in namespace {r.namespace!r}, {len(r.namespace)} characters: "
                             f"a namespace name is a DNS label of at most 63", r.team.src.locate(("spec", "serving"), key=True),
                             hint=f"set spec.servingNamespace (or shorten the team name to at most {63 - len('-serving')} "
                                  "characters)")
        key = (r.team.name, d.cluster, d.name)
        if key in seen:
            yield NAMES.diag(f"serving {d.name!r} is declared twice on {d.cluster!r}",
                             r.team.src.locate(r.path + ("name",)),
                             hint="deployments share a namespace per cluster: give each a distinct name")
        seen.setdefault(key, r)
        if not d.name[0].isalpha():
            yield NAMES.diag(f"serving {d.name!r} must start with a letter: it names a Service (DNS-1035 label)",
                             r.team.src.locate(r.path + ("name",)), hint=f"rename it, e.g. 'm-{d.name}'")
        if d.expose is None:
            continue
        gateway = f"{d.expose.gateway_namespace or r.namespace}/{d.expose.gateway}"
        rkey = (d.cluster, gateway, d.name)
        prev = routes.get(rkey)
        if prev is not None and prev.team.name != r.team.name:
            yield NAMES.diag(f"serving {d.name!r} and team {prev.team.name!r}'s deployment of the same name are both "
                             f"exposed through Gateway {gateway} on {d.cluster!r}; routes match on the name",
                             r.team.src.locate(r.path + ("name",)), hint="rename one of them")
        routes.setdefault(rkey, r)


def _check_priority(policy: Policy) -> Iterator[Diagnostic]:
    spec = policy.fleet.spec
    value = spec.defaults.serving_priority_value
    if not any(p.serving for c in spec.clusters for p in c.pools):
        return
    over = [p for p in spec.priorities if p.value >= value]
    if over:
        tiers = ", ".join(f"{p.name} {p.value}" for p in over)
        yield PRIORITY.diag(f"servingPriorityValue {value} is not above priority tiers {tiers}",
                            policy.fleet_src.locate(("spec", "defaults", "servingPriorityValue")),
                            hint=f"set defaults.servingPriorityValue above {max(p.value for p in over)}")
