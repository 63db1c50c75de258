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
:func:`official_model_names`, :func:`hooked_from_pretrained`).
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


def official_model_names() -> list[str]:
    """The Hugging Face ids TransformerLens knows how to convert."""
    from transformer_lens.loading_from_pretrained import OFFICIAL_MODEL_NAMES

    return list(OFFICIAL_MODEL_NAMES)


def hooked_from_pretrained(name: str, device: str = "cpu", dtype: str = "float32",
                           checkpoint_value: int | None = None, **kwargs: Any):
    """``HookedTransformer.from_pretrained`` (called by ``kit.models.hub``, the network boundary)."""
    from transformer_lens import HookedTransformer

    if checkpoint_value is not None:
        kwargs["checkpoint_value"] = checkpoint_value
    return HookedTransformer.from_pretrained(name, device=device, dtype=dtype, **kwargs)
