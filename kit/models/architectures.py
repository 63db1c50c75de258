"""Which Hugging Face causal LMs kit converts, how, and what each one can and cannot do.

In: a ``transformers`` config (``AutoConfig.from_pretrained(dir)``). Out: the fields of a
TransformerLens ``HookedTransformerConfig`` (:func:`tl_config`), read from the config itself,
never from the model's name or path (TransformerLens 3.9's own ``convert_hf_model_config``
picks Llama and Gemma configs by name: a local path with "llama" or "gemma" in it takes the
wrong branch), and a :class:`Capabilities` record saying which of kit's methods work on it.

The list is every causal architecture TransformerLens 3.9 converts into a ``HookedTransformer``
(``transformer_lens.loading_from_pretrained.get_pretrained_state_dict``, its weight converters
under ``transformer_lens/pretrained/weight_conversions``), except the two that exist only as
remote code (``QWenLMHeadModel``, the first Qwen; ``GPT2LMHeadCustomModel``, SantaCoder): kit
runs no code from a model repository, and :data:`REFUSED` says so by name. Each one here has a
tiny random twin (:mod:`kit.models.twins`) whose logits are tested against ``transformers``.

RoPE bases are read here (:func:`rope_theta`, :func:`rope_scaling`) rather than through
TransformerLens's private ``_get_rope_theta``: that one reads only the flat ``rope_theta`` and
answers 10000 for Gemma-3's per-layer-type ``rope_parameters`` (``{"full_attention":
{"rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}``), whose global base is 1e6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class UnsupportedArchitecture(ValueError):
    """A config kit cannot convert faithfully; the message names the field and why."""


@dataclass(frozen=True)
class Capabilities:
    """What kit's methods can do with one loaded model.

    ``works``: the methods that run (logits, hooks, generation, patching...); ``refused``:
    ``{method: reason}`` for those that do not, e.g. MUI on a mixture of experts."""

    architecture: str
    works: tuple[str, ...]
    refused: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        text = f"{self.architecture}: works: {', '.join(self.works)}"
        reasons: dict[str, list[str]] = {}
        for method, why in self.refused.items():
            reasons.setdefault(why, []).append(method)
        for why, methods in reasons.items():
            text += f"; refused: {', '.join(methods)}, because {why}"
        return text


DENSE_WORKS = (
    "logits",
    "hooks and caches",
    "generation",
    "activation patching",
    "MUI neuron scores",
    "shortcut-neuron patching",
    "SAEs on the residual stream",
)
MOE_WORKS = (
    "logits",
    "hooks and caches",
    "generation",
    "attention and residual patching",
    "SAEs on the residual stream",
)
MOE_REASON = (
    "a mixture-of-experts MLP has no single W_out per layer: the paper's neuron (one "
    "row of W_out read against W_U, one hook_post column) is defined per expert and "
    "only for the tokens routed to it, so neuron scores and neuron patching are not defined"
)
NEURON_METHODS = ("MUI neuron scores", "shortcut-neuron patching", "neuron masking")

ARCHITECTURES: dict[str, str] = {
    # model_type -> the HF class TransformerLens converts (its ``original_architecture``)
    "gpt2": "GPT2LMHeadModel",
    "gpt_neo": "GPTNeoForCausalLM",
    "gptj": "GPTJForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM",
    "opt": "OPTForCausalLM",
    "bloom": "BloomForCausalLM",
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "phi": "PhiForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration",
    "olmo": "OlmoForCausalLM",
    "olmo2": "Olmo2ForCausalLM",
    "olmo3": "Olmo3ForCausalLM",
    "olmoe": "OlmoeForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "apertus": "ApertusForCausalLM",
}
"""Every causal LM kit loads into a ``HookedTransformer``, by ``config.json``'s ``model_type``."""

MOE = ("mixtral", "olmoe", "gpt_oss")
"""Mixture-of-experts architectures: loaded, but the neuron methods refuse them
(:data:`MOE_REASON`)."""

REFUSED: dict[str, str] = {
    "QWenLMHeadModel": "the first Qwen exists only as remote code (trust_remote_code): kit runs no "
    "code from a model repository; Qwen1.5 and later are Qwen2ForCausalLM, which loads",
    "GPT2LMHeadCustomModel": "SantaCoder's GPT2LMHeadCustomModel exists only as remote code "
    "(trust_remote_code): kit runs no code from a model repository",
}
"""Architectures TransformerLens 3.9 converts that kit refuses, with the reason."""

N_CTX_CAP = 8192
"""Default cap on the positions a converted model holds. TransformerLens precomputes sin/cos tables
of ``n_ctx x d_head`` in every layer: at Llama-3.1's 131072 positions that is ~4 GB for 8B; the
caller can ask for more (``n_ctx=``)."""


def capabilities(model_type: str) -> Capabilities:
    """What works on a model of ``model_type`` (see :class:`Capabilities`)."""
    arch = ARCHITECTURES.get(model_type, model_type)
    if model_type in MOE:
        return Capabilities(arch, MOE_WORKS, {m: MOE_REASON for m in NEURON_METHODS})
    return Capabilities(arch, DENSE_WORKS)


# ---------------------------------------------------------------------------------------------
# RoPE: bases and scaling, read from the config (transformers 4 and 5 layouts)


def rope_parameters(hf_config, layer_type: str = "full_attention") -> dict[str, Any]:
    """The RoPE parameters of one layer type: ``{"rope_theta": ..., "rope_type": ..., "factor":
    ...}``.

    transformers 5 keeps them in ``rope_parameters``, flat (``{"rope_theta": 5e5, "rope_type":
    "llama3", ...}``) or per layer type (Gemma-3, OLMo-3: ``{"full_attention": {...},
    "sliding_attention": {...}}``); transformers 4 kept a top-level ``rope_theta`` and a
    ``rope_scaling`` dict. A missing entry of a per-layer-type dict falls back to the full one."""
    params = getattr(hf_config, "rope_parameters", None)
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        chosen = (
            params.get(layer_type) or params.get("full_attention") or next(iter(params.values()))
        )
        return dict(chosen)
    out = dict(params) if isinstance(params, dict) else {}
    scaling = getattr(hf_config, "rope_scaling", None)
    if isinstance(scaling, dict):
        out = {**scaling, **out}
    flat = getattr(hf_config, "rope_theta", None)
    if flat is not None and "rope_theta" not in out:
        out["rope_theta"] = flat
    return out


def rope_theta(hf_config, layer_type: str = "full_attention", default: float = 10000.0) -> float:
    """The RoPE base of ``layer_type`` layers (``full_attention`` or ``sliding_attention``)."""
    theta = rope_parameters(hf_config, layer_type).get("rope_theta")
    return float(theta) if theta is not None else float(default)


def partial_rotary(hf_config) -> float:
    """The fraction of each head that is rotated (Phi, GPT-NeoX/Pythia: ``partial_rotary_factor``,
    in ``rope_parameters`` under transformers 5, a top-level field or ``rotary_pct`` before)."""
    for value in (
        rope_parameters(hf_config).get("partial_rotary_factor"),
        getattr(hf_config, "partial_rotary_factor", None),
        getattr(hf_config, "rotary_pct", None),
    ):
        if value is not None:
            return float(value)
    return 1.0


def rope_scaling(hf_config, layer_type: str = "full_attention") -> dict[str, Any]:
    """``HookedTransformerConfig`` fields for the RoPE scaling of ``layer_type`` layers:
    ``llama3`` (NTK by parts), ``linear`` (Gemma-3 4B+ global layers), ``yarn`` (gpt-oss, OLMo-3);
    anything else (``dynamic``, ``longrope``...) is refused, naming the type: a
    ``HookedTransformer`` has no such scaling and would give wrong logits past the original
    context."""
    params = rope_parameters(hf_config, layer_type)
    kind = (params.get("rope_type") or params.get("type") or "default").lower()
    if kind == "default":
        return {}
    if kind == "llama3":
        return dict(
            use_NTK_by_parts_rope=True,
            NTK_original_ctx_len=params.get(
                "original_max_position_embeddings", hf_config.max_position_embeddings
            ),
            NTK_by_parts_low_freq_factor=params.get("low_freq_factor", 1.0),
            NTK_by_parts_high_freq_factor=params.get("high_freq_factor", 4.0),
            NTK_by_parts_factor=params.get("factor", 1.0),
        )
    if kind == "linear":
        return dict(rotary_scaling_factor=float(params.get("factor", 1.0)))
    if kind == "yarn":
        factor = float(params["factor"])
        attention = params.get("attention_factor")
        if attention is None:  # transformers' default: get_mscale(factor) = 0.1 ln(factor) + 1
            import math

            attention = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
        return dict(
            use_yarn_rope=True,
            yarn_factor=factor,
            yarn_attention_factor=float(attention),
            yarn_beta_fast=float(params.get("beta_fast") or 32.0),
            yarn_beta_slow=float(params.get("beta_slow") or 1.0),
            yarn_original_max_position_embeddings=params.get(
                "original_max_position_embeddings", 4096
            ),
            yarn_truncate=params.get("truncate", True),
        )
    raise UnsupportedArchitecture(
        f"rope_parameters rope_type={kind!r} ({layer_type}) is not supported: a HookedTransformer "
        "implements default, llama3, linear and yarn RoPE only"
    )


# ---------------------------------------------------------------------------------------------
# config conversion


def tl_config(hf_config, n_ctx: int | None = None) -> dict[str, Any]:
    """``HookedTransformerConfig`` fields for a ``transformers`` causal-LM config.

    ``n_ctx``: positions the converted model holds (default ``min(max_position_embeddings,
    N_CTX_CAP)``). Raises :class:`UnsupportedArchitecture` naming the field for configs that no
    TransformerLens converter handles faithfully (remote code, OLMo-1 with grouped-query
    attention, OPT-350m's projections, unsupported RoPE scaling...)."""
    arch = (getattr(hf_config, "architectures", None) or [None])[0]
    if arch in REFUSED:
        raise UnsupportedArchitecture(f"{arch}: {REFUSED[arch]}")
    kind = hf_config.model_type
    if kind not in ARCHITECTURES:
        raise UnsupportedArchitecture(
            f"model_type {kind!r} ({arch}) is not supported; allowed: {', '.join(ARCHITECTURES)}"
        )
    if kind == "gemma3":  # multimodal: the text model converts, the vision tower is not read
        cfg = _decoder(hf_config.text_config, "gemma3_text")
    else:
        cfg = _BUILDERS.get(kind, _decoder)(hf_config, kind)
    cfg["original_architecture"] = ARCHITECTURES[kind]
    longest = cfg.get("n_ctx") or N_CTX_CAP
    cfg["n_ctx"] = int(n_ctx) if n_ctx is not None else min(longest, N_CTX_CAP)
    return cfg


def _kv_heads(c, n_heads: int, always: bool) -> int | None:
    n_kv = getattr(c, "num_key_value_heads", None) or n_heads
    return n_kv if (always or n_kv != n_heads) else None


def _decoder(c, kind: str) -> dict[str, Any]:
    """RMSNorm, rotary, gated-MLP decoders: Llama, Mistral, Mixtral, Qwen2/3, Gemma 1/2/3,
    OLMo-2/3, OLMoE, gpt-oss, Apertus, Phi-3."""
    n_heads = c.num_attention_heads
    d_head = getattr(c, "head_dim", None) or c.hidden_size // n_heads
    # TransformerLens's OLMo-3 conversion splits heads by hidden_size // n_heads
    if kind == "olmo3":
        d_head = c.hidden_size // n_heads
    gemma = kind in ("gemma", "gemma2", "gemma3_text")
    # These converters need n_key_value_heads set even without grouping (they assert it).
    always_kv = gemma or kind in ("mixtral", "olmoe", "gpt_oss")
    n_kv = _kv_heads(c, n_heads, always_kv)
    cfg: dict[str, Any] = dict(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=n_heads,
        n_key_value_heads=n_kv,
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=c.max_position_embeddings,
        eps=getattr(c, "rms_norm_eps", None) or 1e-5,
        d_vocab=c.vocab_size,
        act_fn=getattr(c, "hidden_activation", None) or c.hidden_act,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=d_head,
        rotary_adjacent_pairs=False,
        rotary_base=rope_theta(c),
        final_rms=True,
        gated_mlp=True,
    )
    cfg.update(rope_scaling(c))
    bias = getattr(c, "attention_bias", False) or getattr(c, "mlp_bias", False)
    if bias and kind in (
        "llama",
        "mistral",
        "gemma",
        "gemma2",
        "gemma3_text",
        "olmo2",
        "olmo3",
        "qwen3",
    ):
        raise UnsupportedArchitecture(
            f"{kind} with attention_bias/mlp_bias=True: TransformerLens's {kind} "
            "conversion drops those biases (the logits would be wrong)"
        )
    layer_types = getattr(c, "layer_types", None)
    window = getattr(c, "sliding_window", None)
    if kind not in ("gemma2", "gemma3_text", "olmo3", "gpt_oss") and window:
        # transformers 5 names each layer's kind (Qwen2/3's max_window_layers become layer_types);
        # Mistral, Mixtral and Phi-3 window every layer when sliding_window is set.
        if layer_types and "sliding_attention" in layer_types:
            cfg.update(
                use_local_attn=True,
                window_size=window,
                attn_types=["local" if t == "sliding_attention" else "global" for t in layer_types],
            )
        elif not layer_types and kind in ("mistral", "mixtral", "phi3"):
            cfg.update(
                use_local_attn=True, window_size=window, attn_types=["local"] * c.num_hidden_layers
            )
    if kind == "qwen2":
        cfg.update(tokenizer_prepends_bos=True, default_prepend_bos=False)
    if kind == "qwen3":
        cfg.update(use_qk_norm=True, tokenizer_prepends_bos=True, default_prepend_bos=False)
    if kind == "phi3":
        if partial_rotary(c) != 1.0:
            raise UnsupportedArchitecture(
                "phi3 with partial_rotary_factor != 1: TransformerLens's Phi-3 "
                "conversion rotates the whole head"
            )
        cfg.update(parallel_attn_mlp=False)
    if gemma:
        scalar = getattr(c, "query_pre_attn_scalar", None) or d_head
        cfg.update(use_attn_scale=True, attn_scale=float(scalar) ** 0.5)
    if kind in ("gemma2", "gemma3_text"):
        types = layer_types or ["sliding_attention", "full_attention"] * (c.num_hidden_layers // 2)
        cfg.update(
            use_local_attn=True,
            window_size=window,
            attn_types=["local" if t == "sliding_attention" else "global" for t in types],
            attn_scores_soft_cap=getattr(c, "attn_logit_softcapping", None) or -1.0,
            output_logits_soft_cap=getattr(c, "final_logit_softcapping", None) or -1.0,
            use_normalization_before_and_after=True,
        )
    if kind == "gemma3_text":
        cfg.update(use_qk_norm=True)
        local = rope_theta(c, "sliding_attention")
        if local != cfg["rotary_base"]:
            cfg["rotary_base_local"] = local
        if rope_scaling(c, "sliding_attention"):
            raise UnsupportedArchitecture(
                "gemma3 with RoPE scaling on sliding_attention layers: a "
                "HookedTransformer scales global layers only"
            )
    if kind in ("olmo2", "olmo3", "olmoe"):
        cfg.update(attn_types=["global"] * c.num_hidden_layers)
    if kind == "olmo3":
        cfg.update(_olmo3_layers(c))
    if kind in ("olmoe", "mixtral", "gpt_oss"):
        cfg.update(
            num_experts=getattr(c, "num_local_experts", None) or c.num_experts,
            experts_per_token=c.num_experts_per_tok,
            # Mixtral and gpt-oss renormalise the top-k weights unconditionally (no config field)
            norm_topk_prob=getattr(c, "norm_topk_prob", True) if kind == "olmoe" else True,
        )
    if kind == "olmoe":
        cfg.update(clip_qkv=getattr(c, "clip_qkv", None))
    if kind == "gpt_oss":
        assert layer_types is not None  # GptOssConfig always lists them
        cfg.update(
            use_attention_sinks=True,
            use_local_attn=True,
            window_size=window,
            attn_types=["local" if t == "sliding_attention" else "global" for t in layer_types],
        )
    if kind == "apertus":
        cfg.update(gated_mlp=False, use_qk_norm=True)
    return cfg


def _olmo3_layers(c) -> dict[str, Any]:
    """OLMo-3: sliding and full layers, each with its own RoPE (YaRN on full layers only)."""
    out: dict[str, Any] = {}
    local = rope_theta(c, "sliding_attention", default=rope_theta(c))
    if local != rope_theta(c):
        out["rotary_base_local"] = local
    if rope_scaling(c).get("use_yarn_rope"):
        if rope_scaling(c, "sliding_attention"):
            raise UnsupportedArchitecture(
                "olmo3 with RoPE scaling on sliding_attention layers: a "
                "HookedTransformer applies YaRN to global layers only"
            )
        out["yarn_global_attn_only"] = True
    types = getattr(c, "layer_types", None)
    if types:
        out["attn_types"] = ["local" if t == "sliding_attention" else "global" for t in types]
        if "sliding_attention" in types and c.sliding_window:
            out.update(use_local_attn=True, window_size=c.sliding_window)
    return out


def _olmo(c, kind: str) -> dict[str, Any]:
    """OLMo-1: LayerNorm without parameters, no biases, optional clip_qkv."""
    if (getattr(c, "num_key_value_heads", None) or c.num_attention_heads) != c.num_attention_heads:
        raise UnsupportedArchitecture(
            "olmo (OLMo-1) with num_key_value_heads < num_attention_heads: "
            "TransformerLens's OLMo-1 conversion has no grouped-query attention"
        )
    cfg = _decoder(c, kind) | dict(
        normalization_type="LN",
        final_rms=False,
        eps=1e-5,
        n_key_value_heads=None,
        attn_types=["global"] * c.num_hidden_layers,
        clip_qkv=getattr(c, "clip_qkv", None),
    )
    return cfg


def _phi(c, kind: str) -> dict[str, Any]:
    """Phi-1/2: LayerNorm, parallel attention and MLP, partial rotary, biases."""
    d_head = c.hidden_size // c.num_attention_heads
    if getattr(c, "qk_layernorm", False):
        raise UnsupportedArchitecture(
            "phi with qk_layernorm=True: TransformerLens's Phi conversion has no q/k norm"
        )
    if (getattr(c, "num_key_value_heads", None) or c.num_attention_heads) != c.num_attention_heads:
        raise UnsupportedArchitecture(
            "phi with num_key_value_heads < num_attention_heads: TransformerLens's "
            "Phi conversion has no grouped-query attention"
        )
    return dict(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=c.num_attention_heads,
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=c.max_position_embeddings,
        eps=c.layer_norm_eps,
        d_vocab=c.vocab_size,
        act_fn=c.hidden_act,
        normalization_type="LN",
        positional_embedding_type="rotary",
        rotary_base=rope_theta(c),
        use_attn_scale=True,
        parallel_attn_mlp=True,
        default_prepend_bos=False,
        rotary_dim=round(partial_rotary(c) * d_head),
    ) | rope_scaling(c)


def _gpt2(c, kind: str) -> dict[str, Any]:
    return dict(
        d_model=c.n_embd,
        d_head=c.n_embd // c.n_head,
        n_heads=c.n_head,
        d_mlp=c.n_inner or 4 * c.n_embd,
        n_layers=c.n_layer,
        n_ctx=c.n_positions,
        eps=c.layer_norm_epsilon,
        d_vocab=c.vocab_size,
        act_fn=c.activation_function,
        use_attn_scale=getattr(c, "scale_attn_weights", True),
        scale_attn_by_inverse_layer_idx=c.scale_attn_by_inverse_layer_idx,
        normalization_type="LN",
    )


def _gpt_neo(c, kind: str) -> dict[str, Any]:
    return dict(
        d_model=c.hidden_size,
        d_head=c.hidden_size // c.num_heads,
        n_heads=c.num_heads,
        d_mlp=c.intermediate_size or 4 * c.hidden_size,
        n_layers=c.num_layers,
        n_ctx=c.max_position_embeddings,
        eps=c.layer_norm_epsilon,
        d_vocab=c.vocab_size,
        attn_types=c.attention_layers,
        act_fn=c.activation_function,
        use_attn_scale=False,
        use_local_attn=True,
        window_size=c.window_size,
        normalization_type="LN",
    )


def _gptj(c, kind: str) -> dict[str, Any]:
    return dict(
        d_model=c.n_embd,
        d_head=c.n_embd // c.n_head,
        n_heads=c.n_head,
        d_mlp=c.n_inner or 4 * c.n_embd,
        n_layers=c.n_layer,
        n_ctx=c.n_positions,
        eps=c.layer_norm_epsilon,
        d_vocab=c.vocab_size,
        act_fn=c.activation_function,
        parallel_attn_mlp=True,
        positional_embedding_type="rotary",
        rotary_dim=c.rotary_dim,
        rotary_adjacent_pairs=True,
        rotary_base=rope_theta(c),
        normalization_type="LN",
    )


def _gpt_neox(c, kind: str) -> dict[str, Any]:
    d_head = c.hidden_size // c.num_attention_heads
    pct = partial_rotary(c)
    return dict(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=c.num_attention_heads,
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=c.max_position_embeddings,
        eps=c.layer_norm_eps,
        d_vocab=c.vocab_size,
        act_fn=c.hidden_act,
        parallel_attn_mlp=getattr(c, "use_parallel_residual", True),
        positional_embedding_type="rotary",
        rotary_adjacent_pairs=False,
        rotary_dim=round(pct * d_head),
        rotary_base=rope_theta(c),
        normalization_type="LN",
        default_prepend_bos=False,
    ) | rope_scaling(c)


def _opt(c, kind: str) -> dict[str, Any]:
    if c.word_embed_proj_dim != c.hidden_size or not c.do_layer_norm_before:
        raise UnsupportedArchitecture(
            f"opt with word_embed_proj_dim={c.word_embed_proj_dim} != hidden_size={c.hidden_size} "
            f"or do_layer_norm_before={c.do_layer_norm_before} (OPT-350m): TransformerLens's OPT "
            "conversion has neither the projections nor post-norm blocks"
        )
    return dict(
        d_model=c.hidden_size,
        d_head=c.hidden_size // c.num_attention_heads,
        n_heads=c.num_attention_heads,
        d_mlp=c.ffn_dim,
        n_layers=c.num_hidden_layers,
        n_ctx=c.max_position_embeddings,
        eps=1e-5,
        d_vocab=c.vocab_size,
        act_fn=c.activation_function,
        normalization_type="LN",
    )


def _bloom(c, kind: str) -> dict[str, Any]:
    return dict(
        d_model=c.hidden_size,
        d_head=c.hidden_size // c.n_head,
        n_heads=c.n_head,
        d_mlp=4 * c.hidden_size,
        n_layers=c.n_layer,
        n_ctx=N_CTX_CAP,
        d_vocab=c.vocab_size,
        act_fn="gelu_fast",
        eps=c.layer_norm_epsilon,
        normalization_type="LN",
        post_embedding_ln=True,
        positional_embedding_type="alibi",
        default_prepend_bos=False,
    )


_BUILDERS = {
    "gpt2": _gpt2,
    "gpt_neo": _gpt_neo,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
    "bloom": _bloom,
    "phi": _phi,
    "olmo": _olmo,
}
