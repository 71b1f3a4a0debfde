"""Serving rules SERVE002-SERVE018: each mutation of the demo yields its rule at the expected line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import compile_dir, copy_demo, find, line_of, mutate, policy_at

from compiler.diagnostics import Diagnostic, Severity

SECOND_ON_H200 = """
    - name: chat-small
      cluster: onprem
      pool: h200-serve
      model: meta-llama/Llama-3.1-8B-Instruct
      dataClass: internal
      tensorParallel: 2
      replicas: {min: 5, max: 6}
      maxModelLen: 8192
      sla: {tpotP95Ms: 50, concurrentSequences: 8}
"""
SEARCH_CHAT_SAME_GATEWAY = """
    - name: chat
      cluster: onprem
      pool: h200-serve
      model: meta-llama/Llama-3.1-8B-Instruct
      dataClass: public
      replicas: {min: 2, max: 2}
      maxModelLen: 4096
      sla: {tpotP95Ms: 50, concurrentSequences: 8}
      expose: {gateway: inference-gateway, gatewayNamespace: gateway-system}
"""
L40S_FULL = "          serving: true\n          cut:\n            mode: full\n          karpenter"
L40S_TS = ("          serving: true\n          cut:\n            mode: timeslicing\n            replicas: 4\n"
           "          karpenter")

# (case, file, old, new, rule, severity, (file, needle on the expected line, occurrence))
CASES = [
    ("kv exceeds memory", "teams/nlp.yaml", "concurrentSequences: 32", "concurrentSequences: 2000",
     "SERVE002", Severity.ERROR, ("teams/nlp.yaml", "maxModelLen: 8192", 1)),
    ("weights exceed memory", "teams/nlp.yaml", "tensorParallel: 4", "tensorParallel: 1",
     "SERVE002", Severity.ERROR, ("teams/nlp.yaml", "tensorParallel: 1", 1)),
    ("tp does not divide heads", "teams/nlp.yaml", "tensorParallel: 4", "tensorParallel: 3",
     "SERVE003", Severity.ERROR, ("teams/nlp.yaml", "tensorParallel: 3", 1)),
    ("tp larger than node", "teams/nlp.yaml", "tensorParallel: 4", "tensorParallel: 16",
     "SERVE004", Severity.ERROR, ("teams/nlp.yaml", "tensorParallel: 16", 1)),
    ("min replicas over pool", "teams/nlp.yaml", "replicas: {min: 2, max: 4}", "replicas: {min: 5, max: 6}",
     "SERVE005", Severity.ERROR, ("teams/nlp.yaml", "replicas: {min: 5", 1)),
    ("replicas fragment the nodes", "teams/nlp.yaml",
     "architecture: llama-3.1-70b\n      dtype: bf16\n      dataClass: pii\n      tensorParallel: 4\n"
     "      replicas: {min: 2, max: 4}",
     "architecture: {parametersB: 10, layers: 40, attentionHeads: 48, kvHeads: 12, headDim: 128}\n"
     "      dtype: bf16\n      dataClass: pii\n      tensorParallel: 3\n      replicas: {min: 5, max: 5}",
     "SERVE005", Severity.ERROR, ("teams/nlp.yaml", "replicas: {min: 5", 1)),  # 15 <= 16 GPUs, but 2 per node
    ("max replicas over pool", "teams/nlp.yaml", "replicas: {min: 2, max: 4}", "replicas: {min: 2, max: 5}",
     "SERVE005", Severity.WARNING, ("teams/nlp.yaml", "replicas: {min: 2, max: 5}", 1)),
    ("pool sum over capacity", "teams/nlp.yaml", "        storageClass: fast-nvme\n",
     "        storageClass: fast-nvme\n" + SECOND_ON_H200, "SERVE006", Severity.ERROR,
     ("teams/nlp.yaml", "replicas: {min: 5, max: 6}", 1)),
    ("tpot below bandwidth floor", "teams/nlp.yaml", "tpotP95Ms: 50", "tpotP95Ms: 5",
     "SERVE007", Severity.ERROR, ("teams/nlp.yaml", "tpotP95Ms: 5", 1)),
    ("unknown architecture key", "teams/nlp.yaml", "architecture: llama-3.1-70b", "architecture: llama-3.1-71b",
     "SERVE008", Severity.ERROR, ("teams/nlp.yaml", "architecture: llama-3.1-71b", 1)),
    ("unknown hub id without architecture", "teams/search.yaml",
     "      model: meta-llama/Llama-3.1-8B-Instruct\n      architecture: llama-3.1-8b\n",
     "      model: acme/secret-model\n", "SERVE008", Severity.ERROR, ("teams/search.yaml", "acme/secret-model", 1)),
    ("time-sliced serving pool", "fleet.yaml", L40S_FULL, L40S_TS,
     "SERVE009", Severity.ERROR, ("teams/search.yaml", "pool: l40s-serve", 1)),
    ("single replica", "teams/search.yaml", "replicas: {min: 2, max: 6}", "replicas: {min: 1, max: 6}",
     "SERVE010", Severity.WARNING, ("teams/search.yaml", "replicas: {min: 1", 1)),
    ("min above max", "teams/nlp.yaml", "replicas: {min: 2, max: 4}", "replicas: {min: 4, max: 2}",
     "SERVE011", Severity.ERROR, ("teams/nlp.yaml", "replicas: {min: 4", 1)),
    ("autoscaling without room", "teams/search.yaml", "replicas: {min: 2, max: 6}", "replicas: {min: 2, max: 2}",
     "SERVE012", Severity.WARNING, ("teams/search.yaml", "autoscaling:", 1)),
    ("serving priority below a tier", "fleet.yaml", "  defaults:\n    budget:",
     "  defaults:\n    servingPriorityValue: 500\n    budget:", "SERVE013", Severity.ERROR,
     ("fleet.yaml", "servingPriorityValue: 500", 1)),
    ("keda without prometheus", "teams/search.yaml",
     "        prometheusAddress: http://prometheus-operated.monitoring.svc:9090\n", "",
     "SERVE014", Severity.ERROR, ("teams/search.yaml", "autoscaling:", 1)),
    ("hpa cannot scale to zero", "teams/search.yaml",
     "replicas: {min: 2, max: 6}\n      maxModelLen: 4096", "replicas: {min: 0, max: 6}\n      maxModelLen: 4096",
     "SERVE014", None, None),
    ("name twice in a team", "teams/nlp.yaml", "        storageClass: fast-nvme\n",
     "        storageClass: fast-nvme\n" + SECOND_ON_H200.replace("chat-small", "chat").replace("min: 5", "min: 2"),
     "SERVE015", Severity.ERROR, ("teams/nlp.yaml", "name: chat", 2)),
    ("same name on one gateway", "teams/search.yaml", "monitoring.svc:9090\n",
     "monitoring.svc:9090\n" + SEARCH_CHAT_SAME_GATEWAY, "SERVE015",
     Severity.ERROR, ("teams/search.yaml", "- name: chat", 1)),
    ("name starts with a digit", "teams/search.yaml", "name: query-rewrite", "name: 8b-rewrite",
     "SERVE015", Severity.ERROR, ("teams/search.yaml", "name: 8b-rewrite", 1)),
    ("cache smaller than weights", "teams/nlp.yaml", "size: 400Gi", "size: 100Gi",
     "SERVE016", Severity.WARNING, ("teams/nlp.yaml", "size: 100Gi", 1)),
    ("context beyond the model", "teams/search.yaml", "maxModelLen: 4096", "maxModelLen: 200000",
     "SERVE017", Severity.ERROR, ("teams/search.yaml", "maxModelLen: 200000", 1)),
    ("label value not allowed", "fleet.yaml", "  admission:\n    requiredLabels:",
     "  admission:\n    allowedValues:\n      gpupolicy.dev/data-class: [public, internal]\n    requiredLabels:",
     "SERVE018", Severity.ERROR, ("teams/nlp.yaml", "dataClass: pii", 1)),
]

# rules whose finding is arithmetic: the message carries the numbers
NUMERIC = {"SERVE002", "SERVE003", "SERVE004", "SERVE005", "SERVE006", "SERVE007", "SERVE011", "SERVE012",
           "SERVE013", "SERVE016", "SERVE017"}


def validate(root: Path) -> list[Diagnostic]:
    return policy_at(root)[1]


@pytest.mark.parametrize(("case", "rel", "old", "new", "rule", "severity", "where"), CASES, ids=[c[0] for c in CASES])
def test_serving_rule(tmp_path: Path, case: str, rel: str, old: str, new: str, rule: str,
                      severity: Severity | None, where: tuple[str, str, int] | None) -> None:
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    if case == "hpa cannot scale to zero":
        mutate(root, rel, "kind: keda", "kind: hpa")
    diags = validate(root)
    hits = [d for d in diags if d.code == rule]
    assert hits, f"{case}: no {rule} among {[(d.code, d.message) for d in diags]}"
    if where is not None:
        wfile, needle, occurrence = where
        line = line_of(root, wfile, needle, occurrence)
        located = [d for d in hits if d.location and d.location.file.endswith(wfile) and d.location.line == line]
        assert located, f"{case}: {rule} not on {wfile}:{line}: {[(str(d.location), d.message) for d in hits]}"
        d = located[0]
        if severity is not None:
            assert d.severity is severity, d
        assert d.hint, f"{case}: {rule} has no hint"
        if rule in NUMERIC:
            assert any(ch.isdigit() for ch in d.message), f"{case}: no numbers in {d.message!r}"


def test_demo_has_no_serving_findings() -> None:
    from conftest import REPO

    diags = validate(REPO)
    assert not [d for d in diags if d.code.startswith("SERVE")], diags


def test_unsourced_bandwidth_only_warns(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "model: l40s", "model: a30")  # A30: 933 GB/s, no source in the catalog
    mutate(root, "teams/search.yaml", "tpotP95Ms: 40", "tpotP95Ms: 10")  # floor 16.06 GB / 933 GB/s = 17.2 ms
    tpot = [d for d in validate(root) if d.code == "SERVE007"]
    assert tpot and tpot[0].severity is Severity.WARNING and "unsourced" in tpot[0].message
    assert tpot[0].location is not None
    assert tpot[0].location.line == line_of(root, "teams/search.yaml", "tpotP95Ms: 10")


def test_memory_message_carries_the_arithmetic(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/nlp.yaml", "concurrentSequences: 32", "concurrentSequences: 2000")
    d = next(d for d in validate(root) if d.code == "SERVE002")
    assert "131.42 GiB" in d.message and "320 KiB/token" in d.message and "505.44 GiB" in d.message
    assert d.hint is not None and "149 sequences" in d.hint


def test_every_serving_rule_is_registered() -> None:
    from compiler.rules import all_rules

    rules = all_rules()
    for n in range(1, 19):
        rule = rules[f"SERVE{n:03d}"]
        assert rule.summary and rule.passing and rule.failing


def test_gated_model_needs_a_hub_token(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/search.yaml", "      secrets:\n        hubToken: {name: hf-token, key: token}", "")
    d = find(compile_dir(root).diagnostics, "SERVE019")
    assert d.severity.value == "warning" and "meta-llama/Llama-3.1-8B-Instruct is a gated repository" in d.message
    assert d.location is not None and d.location.line == line_of(root, "teams/search.yaml", "model: meta-llama")
    mutate(root, "teams/search.yaml", "model: meta-llama/Llama-3.1-8B-Instruct", "model: Qwen/Qwen2.5-7B-Instruct")
    mutate(root, "teams/search.yaml", "architecture: llama-3.1-8b", "architecture: qwen2.5-7b")
    assert not [x for x in compile_dir(root).diagnostics if x.code == "SERVE019"]  # Qwen is not gated
