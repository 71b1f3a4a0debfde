"""Sizing arithmetic against hand-computed figures (fact sheet gitops-serving §3.5) and the
architecture catalog."""

from __future__ import annotations

import pytest
from conftest import REPO

from compiler.catalog import builtin_catalog
from compiler.load.source import load_policy_dir
from compiler.serving import (
    ARCHITECTURES,
    GIB,
    KIB,
    by_hub_id,
    kv_bytes_per_token,
    kv_heads_stored,
    kv_needed,
    memory_budget,
    serving_report,
    tp_problem,
    tpot_bound_ms,
    weight_bytes,
)
from compiler.validate import build_policy


def test_weights_8b_bf16_is_16_1_gb() -> None:
    a = ARCHITECTURES["llama-3.1-8b"]
    assert a.parameters == 8_030_261_248
    assert weight_bytes(a.parameters, "bf16") / 1e9 == pytest.approx(16.06, abs=0.005)  # "≈16.1 GB"


def test_weights_70b_bf16_is_141_gb() -> None:
    a = ARCHITECTURES["llama-3.1-70b"]
    assert weight_bytes(a.parameters, "bf16") / 1e9 == pytest.approx(141.1, abs=0.05)  # "≈141 GB"
    assert weight_bytes(a.parameters, "fp8") == a.parameters
    assert weight_bytes(a.parameters, "int4") == a.parameters / 2


def test_kv_per_token_8b_128_kib_70b_320_kib() -> None:
    l8, l70 = ARCHITECTURES["llama-3.1-8b"], ARCHITECTURES["llama-3.1-70b"]
    assert kv_bytes_per_token(l8.layers, l8.kv_heads, l8.head_dim) == 128 * KIB  # 2*32*8*128*2
    assert kv_bytes_per_token(l70.layers, l70.kv_heads, l70.head_dim) == 320 * KIB  # 2*80*8*128*2
    q7 = ARCHITECTURES["qwen2.5-7b"]
    assert kv_bytes_per_token(q7.layers, q7.kv_heads, q7.head_dim) == 56 * KIB  # 2*28*4*128*2


def test_kv_needed_and_budget() -> None:
    # 70B at 8192 tokens x 32 sequences: 320 KiB x 262144 tokens = 80 GiB exactly
    assert kv_needed(320 * KIB, 8192, 32) == 80 * GIB
    # 4 x 80 GiB at 0.9 = 288 GiB; minus 141.1 GB (131.4 GiB) of weights leaves ~156.6 GiB for KV
    budget = memory_budget(80 * GIB, 4, 0.9)
    assert budget == pytest.approx(288 * GIB)
    room = budget - weight_bytes(ARCHITECTURES["llama-3.1-70b"].parameters, "bf16")
    assert room / GIB == pytest.approx(156.6, abs=0.1)
    assert int(room // (320 * KIB)) // 8192 == 62  # full 8k sequences that fit


def test_kv_heads_replicated_when_tp_exceeds_them() -> None:
    assert kv_heads_stored(8, 4) == 8  # split: 2 per rank
    assert kv_heads_stored(8, 8) == 8
    assert kv_heads_stored(4, 8) == 8  # replicated: 1 per rank, twice the memory
    assert kv_heads_stored(8, 16) == 16


def test_tpot_bound_is_weights_per_gpu_over_bandwidth() -> None:
    w = weight_bytes(ARCHITECTURES["llama-3.1-70b"].parameters, "bf16")
    # 141.1 GB / 4 GPUs / 4800 GB/s = 7.35 ms
    assert tpot_bound_ms(w, 4, 4800) == pytest.approx(7.35, abs=0.01)
    w8 = weight_bytes(ARCHITECTURES["llama-3.1-8b"].parameters, "bf16")
    assert tpot_bound_ms(w8, 1, 864) == pytest.approx(18.59, abs=0.01)  # L40S


def test_tp_problem_follows_vllm_asserts() -> None:
    l70 = ARCHITECTURES["llama-3.1-70b"]  # 64 heads, 8 KV heads
    assert tp_problem(l70, 4) is None
    assert tp_problem(l70, 16) is None  # KV heads replicated 2x
    assert "attention heads" in (tp_problem(l70, 3) or "")
    q7 = ARCHITECTURES["qwen2.5-7b"]  # 28 heads, 4 KV heads
    assert tp_problem(q7, 4) is None
    assert tp_problem(q7, 8) is not None  # 28 % 8
    from compiler.serving.architectures import Architecture

    odd = Architecture("custom", 10, 40, 48, 12, 128)
    assert "KV heads" in (tp_problem(odd, 8) or "")  # 48 % 8 == 0 but 12 % 8 != 0


def test_catalog_entries_are_consistent() -> None:
    for key, a in ARCHITECTURES.items():
        assert a.key == key and a.source and a.hub_ids
        assert a.attention_heads % a.kv_heads == 0
        assert all(by_hub_id(h) is a for h in a.hub_ids)
    assert by_hub_id("META-LLAMA/Llama-3.1-8B-Instruct") is ARCHITECTURES["llama-3.1-8b"]
    assert by_hub_id("acme/unknown") is None
    for key in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b"):
        assert key in ARCHITECTURES


def test_demo_serving_report() -> None:
    sources, _ = load_policy_dir(REPO / "policies", REPO)
    policy, diags = build_policy(sources)
    assert policy is not None
    assert not [d for d in diags if d.code.startswith("SERVE")], diags
    rows = {r["name"]: r for r in serving_report(policy)}
    chat, qr = rows["chat"]["sizing"], rows["query-rewrite"]["sizing"]
    # chat: llama-3.1-70b bf16, TP 4 on H200 (NVML total 143771 MiB = 140.40 GiB)
    assert chat["weightsGiB"] == pytest.approx(131.42, abs=0.01)
    assert chat["kvPerTokenKiB"] == 320 and chat["kvNeededGiB"] == 80
    assert chat["budgetGiB"] == pytest.approx(143771 / 1024 * 4 * 0.9, abs=0.01)
    assert chat["tpotBoundMs"] == pytest.approx(7.35, abs=0.01) and chat["fits"]
    # query-rewrite: llama-3.1-8b bf16, TP 1 on L40S (46068 MiB = 44.99 GiB)
    assert qr["weightsGB"] == pytest.approx(16.06, abs=0.01)
    assert qr["kvNeededGiB"] == 8  # 128 KiB x 4096 x 16
    assert qr["budgetGiB"] == pytest.approx(46068 / 1024 * 0.9, abs=0.01)
    assert qr["tpotBoundMs"] == pytest.approx(18.59, abs=0.01)
    assert rows["chat"]["gpusAtMax"] == rows["chat"]["poolGpus"] == 16


def test_gpu_memory_prefers_nvml_total() -> None:
    from compiler.serving.sizing import gpu_memory

    cat = builtin_catalog()
    l40s = cat.get("l40s")
    assert l40s is not None and gpu_memory(l40s)[0] == 46068 << 20
    a30 = cat.get("a30")  # no NVML total catalogued: nominal GiB
    assert a30 is not None and gpu_memory(a30)[0] == 24 * GIB


def test_startup_budget_scales_with_weights() -> None:
    from compiler.serving.sizing import startup_budget_seconds

    small = startup_budget_seconds(16e9)
    large = startup_budget_seconds(141e9)
    assert 300 <= small < large <= 7200 and small % 60 == 0 and large % 60 == 0
    # a cold download of 70B bf16 weights (~131 GiB) at ~50 MiB/s needs ~45 minutes (issue 15)
    assert startup_budget_seconds(141e9) >= 45 * 60
