"""A small built-in catalog of model architectures, enough to size a vLLM deployment.

Figures are the ``config.json`` values on the Hugging Face hub (layers = ``num_hidden_layers``,
heads = ``num_attention_heads``, KV heads = ``num_key_value_heads``, head dim =
``hidden_size / num_attention_heads`` or ``head_dim``). Parameter counts are computed from the
same config's tensor shapes (embeddings + per-layer q/k/v/o, gated MLP, norms, untied LM head),
because model cards round them; each entry's ``source`` says which config and which shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model.team import ModelArchitecture, ServingDeployment


@dataclass(frozen=True)
class Architecture:
    key: str  # catalog key, or "custom" for an inline ModelArchitecture
    parameters_b: float
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_context: int | None = None  # max_position_embeddings; None = unknown (no check)
    hub_ids: tuple[str, ...] = ()
    source: str = ""
    # The hub ids are gated repositories: downloads need a token of an account that accepted the
    # licence (Meta's Llama licence; Mistral's contact-sharing gate since April 2024).
    gated: bool = False

    @property
    def parameters(self) -> int:
        return round(self.parameters_b * 1e9)


_LLAMA_31_70B_SHAPES = ("hidden 8192, 80 layers, 64 heads, 8 KV heads, intermediate 28672, vocab 128256, untied; "
                        "parameters computed = 70,553,706,496")

ARCHITECTURES: dict[str, Architecture] = {
    a.key: a
    for a in (
        Architecture(
            "llama-3.1-8b", 8.030261248, 32, 32, 8, 128, 131072,
            ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
             "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
            "huggingface.co/meta-llama/Llama-3.1-8B-Instruct config.json: hidden 4096, 32 layers, 32 heads, "
            "8 KV heads, intermediate 14336, vocab 128256, untied; parameters computed = 8,030,261,248",
            gated=True,
        ),
        Architecture(
            "llama-3.1-70b", 70.553706496, 80, 64, 8, 128, 131072,
            ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
             "meta-llama/Meta-Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct"),
            "huggingface.co/meta-llama/Llama-3.1-70B-Instruct config.json: " + _LLAMA_31_70B_SHAPES,
            gated=True,
        ),
        Architecture(
            "llama-3.3-70b", 70.553706496, 80, 64, 8, 128, 131072,
            ("meta-llama/Llama-3.3-70B-Instruct",),
            "huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json (same shapes as Llama 3.1 70B): "
            + _LLAMA_31_70B_SHAPES,
            gated=True,
        ),
        Architecture(
            "mistral-7b", 7.248023552, 32, 32, 8, 128, 32768,
            ("mistralai/Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3"),
            "huggingface.co/mistralai/Mistral-7B-Instruct-v0.3 config.json: hidden 4096, head_dim 128, 32 layers, "
            "32 heads, 8 KV heads, intermediate 14336, vocab 32768, untied, no sliding window; "
            "parameters computed = 7,248,023,552 (v0.1 with vocab 32000: 7.24B)",
            gated=True,
        ),
        Architecture(
            "qwen2.5-7b", 7.615616512, 28, 28, 4, 128, 32768,
            ("Qwen/Qwen2.5-7B-Instruct",),
            "huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json: hidden 3584, 28 layers, 28 heads, 4 KV heads, "
            "intermediate 18944, vocab 152064, QKV bias, untied; parameters computed = 7,615,616,512 "
            "(card: 7.61B); max_position_embeddings 32768 (YaRN rope scaling extends it, set an explicit "
            "architecture to skip the context check)",
        ),
        Architecture(
            "qwen2.5-72b", 72.706203648, 80, 64, 8, 128, 32768,
            ("Qwen/Qwen2.5-72B-Instruct",),
            "huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json: hidden 8192, 80 layers, 64 heads, 8 KV heads, "
            "intermediate 29568, vocab 152064, QKV bias, untied; parameters computed = 72,706,203,648 "
            "(card: 72.7B); max_position_embeddings 32768",
        ),
    )
}


def gated_hub_id(model: str) -> bool:
    """``model`` is a catalogued hub id whose repository is gated."""
    arch = by_hub_id(model)
    return arch is not None and arch.gated


def by_hub_id(model: str) -> Architecture | None:
    low = model.lower()
    return next((a for a in ARCHITECTURES.values() if low in (h.lower() for h in a.hub_ids)), None)


def resolve_architecture(dep: ServingDeployment) -> Architecture | None:
    """The deployment's architecture: an inline one, a catalog key, or (unset) its hub id.
    ``None`` when none of these is known (SERVE008 reports it)."""
    arch = dep.architecture
    if isinstance(arch, ModelArchitecture):
        return Architecture("custom", arch.parameters_b, arch.layers, arch.attention_heads, arch.kv_heads,
                            arch.head_dim, source="declared in the team file")
    if isinstance(arch, str):
        return ARCHITECTURES.get(arch)
    return by_hub_id(dep.model)
