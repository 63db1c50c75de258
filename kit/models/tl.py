"""The one adapter to TransformerLens: every TransformerLens internal the project uses is here.

Everything else in ``kit`` reads and patches models through these functions, by TransformerLens's
hook names (``blocks.{L}.mlp.hook_post`` is the input of ``W_out`` / ``down_proj``;
``blocks.{L}.hook_resid_pre``, ``blocks.{L}.attn.hook_z``...). Moving to ``TransformerBridge`` or to
transformer-lens 4 (where ``HookedTransformer`` is gone) changes this file, not the methods.
A lint test (``tests/models/test_tl_boundary.py``) keeps it that way.

What is here: hook points (:func:`hook_names`, :func:`check_hooks`), running with hooks or a cache
(:func:`hooks`, :func:`run_with_hooks`, :func:`run_with_cache`), the block loop
(:func:`iter_mlp_post`), partial forwards and KV caches (:func:`forward`, :func:`new_kv_cache`,
:func:`repeat_kv_cache`), the last position's logits (:func:`last_logits`), raw weights
(:func:`mlp_in`, :func:`mlp_out`, :func:`unembed`, :func:`attn_out`, :func:`mlp_neuron_params`),
split q/k/v inputs (:func:`split_qkv_input`) and model construction (:func:`build_model`,
:func:`official_model_names`, :func:`hf_to_tl_config`, :func:`hooked_from_hf`: any Hugging Face
directory of a supported architecture into a ``HookedTransformer`` with raw weights).

Why ``HookedTransformer`` and not TransformerLens 3.9's ``TransformerBridge``: the bridge wraps the
HF module and gives raw weights and the same hook names, but delegates the forward to HF, so it
has no ``start_at_layer`` and no TransformerLens KV cache (NotImplementedError), which dynamic
patching needs (two models stepping in lockstep, each with its own cache). A ``HookedTransformer``
built from the HF config and the HF weights without processing gives the HF logits (tests check
1e-4 on every twin) and every internal the methods use.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

Hook = tuple[str, Callable]
"""``(hook name, fn(activation, hook) -> activation or None)``, as TransformerLens takes them."""


# ---------------------------------------------------------------------------------------------
# hook points


def hook_names(model) -> list[str]:
    """Every hook point of ``model``, in model order."""
    return list(model.hook_dict)


def check_hooks(model, names: Iterable[str], field: str = "hook") -> None:
    """Raise ``ValueError`` naming the first unknown hook and a few allowed ones."""
    known = model.hook_dict
    for name in names:
        if name not in known:
            layer0 = [n for n in known if n.startswith("blocks.0.")] or list(known)[:12]
            raise ValueError(f"{field} {name!r} does not exist in this model; allowed e.g.: {', '.join(layer0)} "
                             "(and the same under blocks.1., blocks.2., ...)")


def _names(model, names: Iterable[str] | Callable[[str], bool]) -> list[str]:
    if callable(names):
        return [n for n in model.hook_dict if names(n)]
    names = list(names)
    check_hooks(model, names)
    return names


@contextmanager
def hooks(model, fwd_hooks: Sequence[Hook]) -> Iterator[None]:
    """Add forward hooks for the duration of the block and remove exactly those afterwards.

    Hooks added before are left in place (unlike ``HookedTransformer.hooks``, which resets all);
    an exception raised inside a hook propagates, after cleanup. Unknown names raise first.
    """
    check_hooks(model, [name for name, _ in fwd_hooks])
    added = []
    try:
        for name, fn in fwd_hooks:
            hp = model.hook_dict[name]
            hp.add_hook(fn, dir="fwd")
            added.append((hp, hp.fwd_hooks[-1]))
        yield
    finally:
        for hp, handle in added:
            handle.hook.remove()
            hp.fwd_hooks.remove(handle)


def run_with_hooks(model, tokens: Tensor, fwd_hooks: Sequence[Hook], **kwargs: Any) -> Tensor:
    """``model(tokens, **kwargs)`` with ``fwd_hooks`` active (logits unless ``return_type`` says otherwise)."""
    with hooks(model, fwd_hooks):
        return model(tokens, **kwargs)


def run_with_cache(model, tokens: Tensor, names: Iterable[str] | Callable[[str], bool],
                   **kwargs: Any) -> tuple[Tensor | None, dict[str, Tensor]]:
    """``(output, {hook name: activation})`` for ``names`` (a list, or a predicate over hook names).

    ``kwargs`` go to the forward (``stop_at_layer``, ``attention_mask``, ``return_type``...). The
    activations are detached; no gradient flows through them.
    """
    wanted = _names(model, names)
    store: dict[str, Tensor] = {}

    def keep(act, hook):
        store[hook.name] = act.detach()

    out = run_with_hooks(model, tokens, [(n, keep) for n in wanted], **kwargs)
    return out, store


# ---------------------------------------------------------------------------------------------
# forwards: the block loop, partial forwards, KV caches, the last position's logits


def iter_mlp_post(model, tokens: Int[Tensor, "batch seq"]) -> Iterator[tuple[int, Float[Tensor, "batch seq d_mlp"]]]:
    """Run the blocks one by one, yielding ``(layer, blocks.{L}.mlp.hook_post activations)``.

    Stops before the final norm and the unembedding (MUI scores do not need logits). The
    activations come from the real hook point, so hooks others registered still apply.
    """
    captured: dict[int, Tensor] = {}

    def keep(act, hook):
        captured[int(hook.name.split(".")[1])] = act.detach()
        return act

    names = [f"blocks.{L}.mlp.hook_post" for L in range(model.cfg.n_layers)]
    with torch.no_grad(), hooks(model, [(n, keep) for n in names]):
        resid, _, shortformer, attention_mask = model.input_to_embed(tokens)
        for L, block in enumerate(model.blocks):
            resid = block(resid, shortformer_pos_embed=shortformer, attention_mask=attention_mask)
            if L not in captured:
                raise RuntimeError(f"blocks.{L}.mlp.hook_post did not fire: is this model's MLP hooked?")
            yield L, captured.pop(L)


def forward(model, tokens: Tensor, *, attention_mask: Tensor | None = None, kv_cache=None,
            start_at_layer: int | None = None, stop_at_layer: int | None = None,
            return_type: str = "logits") -> Tensor:
    """One forward pass: token ids (or, with ``start_at_layer``, the residual stream entering that
    layer) to logits, or to the residual stream entering ``stop_at_layer``; ``kv_cache`` (from
    :func:`new_kv_cache`) is extended in place."""
    kwargs: dict[str, Any] = {"return_type": return_type}
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    if kv_cache is not None:
        kwargs["past_kv_cache"] = kv_cache
    if start_at_layer is not None:
        kwargs["start_at_layer"] = start_at_layer
    if stop_at_layer is not None:
        kwargs["stop_at_layer"] = stop_at_layer
    return model(tokens, **kwargs)


def new_kv_cache(model, batch: int):
    """An empty KV cache for ``batch`` rows."""
    from transformer_lens import TransformerLensKeyValueCache

    return TransformerLensKeyValueCache.init_cache(model.cfg, model.cfg.device, batch)


def repeat_kv_cache(cache, times: int) -> None:
    """Expand a KV cache built on P rows to ``times * P`` rows (group-major), in place."""
    for entry in cache.entries:
        entry.past_keys = entry.past_keys.repeat(times, 1, 1, 1)
        entry.past_values = entry.past_values.repeat(times, 1, 1, 1)
    cache.previous_attention_mask = cache.previous_attention_mask.repeat(times, 1)


def kv_cache_attention_mask(cache) -> Tensor:
    """The attention mask of everything a KV cache holds so far."""
    return cache.previous_attention_mask


def last_logits(model, resid: Float[Tensor, "row pos d_model"]) -> Float[Tensor, "row 1 d_vocab"]:
    """Final norm and unembedding of the last position only: a prompt pass needs no other logits
    (with a 50k vocabulary the full unembedding of every prompt position costs as much as the blocks)."""
    from transformer_lens.utilities.activation_functions import apply_softcap

    x = resid[:, -1:]
    if model.cfg.normalization_type is not None:
        x = model.ln_final(x)
    return apply_softcap(model.unembed(x), model.cfg.output_logits_soft_cap)


@contextmanager
def split_qkv_input(model) -> Iterator[None]:
    """Give every head its own q/k/v input hooks (``blocks.L.hook_{q,k,v}_input``) for the block."""
    old = model.cfg.use_split_qkv_input
    model.set_use_split_qkv_input(True)
    try:
        yield
    finally:
        model.set_use_split_qkv_input(old)


# ---------------------------------------------------------------------------------------------
# raw weights (as stored: what a method that reads weights must see)


def mlp_in(model, layer: int) -> Float[Tensor, "d_model d_mlp"]:
    return model.blocks[layer].mlp.W_in


def mlp_out(model, layer: int) -> Float[Tensor, "d_mlp d_model"]:
    """``W_out`` of layer ``layer``: row i is what neuron i writes to the residual stream."""
    return model.blocks[layer].mlp.W_out


def unembed(model) -> Float[Tensor, "d_model d_vocab"]:
    return model.W_U


def attn_out(model, layer: int, head: int) -> Float[Tensor, "d_head d_model"]:
    return model.W_O[layer, head]


def mlp_neuron_params(model) -> Iterator[tuple[int, Tensor, Tensor, Tensor]]:
    """``(layer, W_in [d_model, d_mlp], b_in [d_mlp], W_out [d_mlp, d_model])`` per layer: the
    parameters a neuron owns (its ``W_in`` column, ``b_in`` entry and ``W_out`` row)."""
    for L, block in enumerate(model.blocks):
        yield L, block.mlp.W_in, block.mlp.b_in, block.mlp.W_out


# ---------------------------------------------------------------------------------------------
# construction


def build_model(device: str = "cpu", dtype: torch.dtype = torch.float32, tokenizer=None, **cfg: Any):
    """A freshly initialised ``HookedTransformer`` from config fields (``n_layers``, ``d_model``...)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = HookedTransformerConfig(**cfg, device=device, dtype=dtype)
    return HookedTransformer(config, tokenizer=tokenizer) if tokenizer is not None else HookedTransformer(config)


# Hugging Face model_type -> how its config maps onto HookedTransformerConfig. TransformerLens's own
# converter (loading_from_pretrained.convert_hf_model_config) picks Llama and Gemma-2 configs by
# *name* ("llama" anywhere in a local path, and an HF cache path has it) and has no config-based
# Gemma-2 / OLMo-2 branch, so local directories of those fail; this reads the HF config instead.
SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "gemma2", "olmo2", "gpt2")


def hf_to_tl_config(hf_config) -> dict[str, Any]:
    """``HookedTransformerConfig`` fields for a ``transformers`` decoder config (see ``SUPPORTED_ARCHITECTURES``)."""
    from transformer_lens.loading_from_pretrained import _apply_llama3_rope_scaling, _get_rope_theta

    kind = hf_config.model_type
    arch = (hf_config.architectures or [None])[0]
    if kind == "gpt2":
        return dict(d_model=hf_config.n_embd, d_head=hf_config.n_embd // hf_config.n_head, n_heads=hf_config.n_head,
                    d_mlp=hf_config.n_inner or 4 * hf_config.n_embd, n_layers=hf_config.n_layer,
                    n_ctx=hf_config.n_positions, eps=hf_config.layer_norm_epsilon, d_vocab=hf_config.vocab_size,
                    act_fn=hf_config.activation_function, use_attn_scale=getattr(hf_config, "scale_attn_weights", True),
                    scale_attn_by_inverse_layer_idx=hf_config.scale_attn_by_inverse_layer_idx,
                    normalization_type="LN", original_architecture="GPT2LMHeadModel")
    if kind not in SUPPORTED_ARCHITECTURES:
        raise ValueError(f"model_type {kind!r} ({arch}) is not supported by kit's TransformerLens loader; "
                         f"allowed: {', '.join(SUPPORTED_ARCHITECTURES)}")
    n_heads = hf_config.num_attention_heads
    d_head = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // n_heads
    n_kv = getattr(hf_config, "num_key_value_heads", None) or n_heads
    cfg: dict[str, Any] = dict(
        d_model=hf_config.hidden_size, d_head=d_head, n_heads=n_heads, d_mlp=hf_config.intermediate_size,
        n_layers=hf_config.num_hidden_layers, n_ctx=hf_config.max_position_embeddings, eps=hf_config.rms_norm_eps,
        d_vocab=hf_config.vocab_size, act_fn=getattr(hf_config, "hidden_act", None) or hf_config.hidden_activation,
        n_key_value_heads=n_kv if n_kv != n_heads else None, normalization_type="RMS",
        positional_embedding_type="rotary", rotary_dim=d_head, rotary_adjacent_pairs=False,
        rotary_base=_get_rope_theta(hf_config), final_rms=True, gated_mlp=True,
        original_architecture={"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                               "gemma2": "Gemma2ForCausalLM", "olmo2": "Olmo2ForCausalLM"}[kind])
    if kind == "llama":
        _apply_llama3_rope_scaling(cfg, hf_config)
    if kind == "qwen2":
        cfg.update(use_attn_scale=True, tokenizer_prepends_bos=True, default_prepend_bos=False)
    if kind == "mistral" and hf_config.sliding_window:
        cfg.update(use_local_attn=True, window_size=hf_config.sliding_window, attn_types=["local"] * cfg["n_layers"])
    if kind == "olmo2":
        if n_kv != n_heads:  # TransformerLens's OLMo-2 weight conversion has no grouped-query attention
            raise ValueError(f"OLMo-2 with num_key_value_heads={n_kv} != num_attention_heads={n_heads} is not supported")
        cfg.update(attn_types=["global"] * cfg["n_layers"])
    if kind == "gemma2":
        types = getattr(hf_config, "layer_types", None) or ["sliding_attention", "full_attention"] * (cfg["n_layers"] // 2)
        cfg.update(use_attn_scale=True, attn_scale=float(hf_config.query_pre_attn_scalar) ** 0.5,
                   use_local_attn=True, window_size=hf_config.sliding_window,
                   attn_types=["local" if t == "sliding_attention" else "global" for t in types],
                   attn_scores_soft_cap=hf_config.attn_logit_softcapping or -1.0,
                   output_logits_soft_cap=hf_config.final_logit_softcapping or -1.0,
                   use_normalization_before_and_after=True)
    return cfg


def hooked_from_hf(hf_model, tokenizer, path: str, *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                   n_devices: int = 1, process_weights: bool = False):
    """A ``HookedTransformer`` holding ``hf_model``'s weights (``hf_model`` loaded from the local
    directory ``path``).

    ``process_weights=False`` (the default) keeps the raw weights: ``W_out`` is ``down_proj.weight.T``
    and ``W_U`` is ``lm_head.weight.T``, as the papers' code reads them. ``True`` applies
    TransformerLens's default processing (fold_ln, center_writing_weights, center_unembed,
    fold_value_biases), which leaves the logits unchanged but changes ``W_out . W_U`` and so MUI.
    """
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.loading_from_pretrained import POST_NORM_ARCHITECTURES, get_pretrained_state_dict

    fields = hf_to_tl_config(hf_model.config)
    name = str(path).rstrip("/").split("/")[-1]
    cfg = HookedTransformerConfig(**fields, model_name=name, tokenizer_name=str(path), device=device, dtype=dtype,
                                  n_devices=n_devices, init_weights=False, from_checkpoint=False)
    state = get_pretrained_state_dict(str(path), cfg, hf_model, dtype=dtype)
    model = HookedTransformer(cfg, tokenizer=tokenizer, move_to_device=False, default_padding_side="right")
    # TransformerLens refuses these for post-norm blocks (OLMo-2) and soft-capped logits (Gemma-2).
    post_norm = cfg.original_architecture in POST_NORM_ARCHITECTURES
    softcap = cfg.output_logits_soft_cap > 0
    model.load_and_process_state_dict(
        state, fold_ln=process_weights and not post_norm, center_writing_weights=process_weights and not post_norm,
        center_unembed=process_weights and not softcap, fold_value_biases=process_weights,
        refactor_factored_attn_matrices=False)
    model.move_model_modules_to_device()
    return model.eval()


def official_model_names() -> list[str]:
    """The Hugging Face ids TransformerLens knows how to convert."""
    from transformer_lens.loading_from_pretrained import OFFICIAL_MODEL_NAMES

    return list(OFFICIAL_MODEL_NAMES)
