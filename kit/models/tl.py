"""The one adapter to TransformerLens: every TransformerLens internal the project uses is here.

Everything else in ``kit`` reads and patches models through these functions, by TransformerLens's
hook names (``blocks.{L}.mlp.hook_post`` is the input of ``W_out`` / ``down_proj``;
``blocks.{L}.hook_resid_pre``, ``blocks.{L}.attn.hook_z``...). Moving to ``TransformerBridge`` or to
transformer-lens 4 (where ``HookedTransformer`` is gone) changes this file, not the methods.
A lint test (``tests/models/test_tl_boundary.py``) keeps it that way.

What is here: hook points (:func:`hook_names`, :func:`check_hooks`), running with hooks, a cache
or gradients (:func:`hooks`, :func:`run_with_hooks`, :func:`run_with_cache`,
:func:`run_with_grads`), the block loop (:func:`iter_mlp_post`), partial forwards and KV caches
(:func:`forward`, :func:`new_kv_cache`, :func:`repeat_kv_cache`), the last position's logits
(:func:`last_logits`), raw weights (:func:`mlp_in`, :func:`mlp_out`, :func:`unembed`,
:func:`attn_out`, :func:`mlp_neuron_params`), split q/k/v inputs (:func:`split_qkv_input`) and
model construction (:func:`build_model`, :func:`official_model_names`, :func:`hf_to_tl_config`,
:func:`hooked_from_hf`: any Hugging Face directory of a supported architecture into a
``HookedTransformer`` with raw weights).

Why ``HookedTransformer`` and not TransformerLens 3.9's ``TransformerBridge``: the bridge wraps the
HF module and gives raw weights and the same hook names, but delegates the forward to HF, so it
has no ``start_at_layer`` and no TransformerLens KV cache (NotImplementedError), which dynamic
patching needs (two models stepping in lockstep, each with its own cache). A ``HookedTransformer``
built from the HF config and the HF weights without processing gives the HF logits (tests check
1e-4 on every twin) and every internal the methods use.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from kit.models.architectures import ARCHITECTURES, MOE_REASON, tl_config

if TYPE_CHECKING:
    # The language-model type behind this adapter, for annotations elsewhere (which import it
    # under TYPE_CHECKING from here, so TransformerLens stays imported in this file only).
    from transformer_lens import HookedTransformer as HookedModel  # noqa: F401 (for annotations elsewhere)

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
        if name not in known and ".mlp.hook_" in name:
            require_dense_mlp(model, f"{field} {name!r}")
        if name not in known:
            layer0 = [n for n in known if n.startswith("blocks.0.")] or list(known)[:12]
            raise ValueError(
                f"{field} {name!r} does not exist in this model; allowed e.g.: {', '.join(layer0)} "
                "(and the same under blocks.1., blocks.2., ...)"
            )


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
    """``model(tokens, **kwargs)`` with ``fwd_hooks`` active (logits unless ``return_type`` says
    otherwise)."""
    with hooks(model, fwd_hooks):
        return model(tokens, **kwargs)


def run_with_cache(
    model, tokens: Tensor, names: Iterable[str] | Callable[[str], bool], **kwargs: Any
) -> tuple[Tensor | None, dict[str, Tensor]]:
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


def run_with_grads(
    model,
    tokens: Tensor,
    names: Iterable[str],
    metric: Callable[[Tensor], Tensor],
) -> tuple[Tensor, dict[str, Tensor], dict[str, Tensor]]:
    """``(metric value, {name: activation}, {name: d metric / d activation})`` from one forward
    pass and one backward pass: ``metric`` maps the logits to a scalar; the gradient is taken with
    respect to the activations at ``names`` only (no parameter's ``.grad`` is written, frozen
    parameters are fine). An activation that does not depend on anything requiring a gradient
    starts the graph there (detached and marked), so it gets its gradient too. Everything returned
    is detached."""
    wanted = _names(model, names)
    store: dict[str, Tensor] = {}

    def keep(act, hook):
        if not act.requires_grad:  # nothing upstream is tracked: no path through it is lost
            act = act.detach().requires_grad_(True)
        store[hook.name] = act
        return act

    with torch.enable_grad():
        logits = run_with_hooks(model, tokens, [(n, keep) for n in wanted])
        value = metric(logits)
        grads = torch.autograd.grad(value, [store[n] for n in wanted], allow_unused=True)
    acts = {n: store[n].detach() for n in wanted}
    # unused: the metric does not depend on it (e.g. a padded position's hook): a zero gradient
    out = {n: torch.zeros_like(acts[n]) if g is None else g.detach() for n, g in zip(wanted, grads)}
    return value.detach(), acts, out


# ---------------------------------------------------------------------------------------------
# forwards: the block loop, partial forwards, KV caches, the last position's logits


def iter_mlp_post(
    model, tokens: Int[Tensor, "batch seq"]
) -> Iterator[tuple[int, Float[Tensor, "batch seq d_mlp"]]]:
    """Run the blocks one by one, yielding ``(layer, blocks.{L}.mlp.hook_post activations)``.

    Stops before the final norm and the unembedding (MUI scores do not need logits). The
    activations come from the real hook point, so hooks others registered still apply.
    """
    captured: dict[int, Tensor] = {}

    def keep(act, hook):
        captured[int(hook.name.split(".")[1])] = act.detach()
        return act

    require_dense_mlp(model, "reading MLP neuron activations (blocks.L.mlp.hook_post)")
    names = [f"blocks.{L}.mlp.hook_post" for L in range(model.cfg.n_layers)]
    with torch.no_grad(), hooks(model, [(n, keep) for n in names]):
        resid, _, shortformer, attention_mask = model.input_to_embed(tokens)
        for L, block in enumerate(model.blocks):
            resid = block(resid, shortformer_pos_embed=shortformer, attention_mask=attention_mask)
            if L not in captured:
                raise RuntimeError(
                    f"blocks.{L}.mlp.hook_post did not fire: is this model's MLP hooked?"
                )
            yield L, captured.pop(L)


def forward(
    model,
    tokens: Tensor,
    *,
    attention_mask: Tensor | None = None,
    kv_cache=None,
    start_at_layer: int | None = None,
    stop_at_layer: int | None = None,
    return_type: str = "logits",
) -> Tensor:
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
    (with a 50k vocabulary the full unembedding of every prompt position costs as much as the
    blocks)."""
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
    require_dense_mlp(model, "reading W_in")
    return model.blocks[layer].mlp.W_in


def mlp_out(model, layer: int) -> Float[Tensor, "d_mlp d_model"]:
    """``W_out`` of layer ``layer``: row i is what neuron i writes to the residual stream."""
    require_dense_mlp(model, "reading W_out (MLP neurons)")
    return model.blocks[layer].mlp.W_out


def unembed(model) -> Float[Tensor, "d_model d_vocab"]:
    return model.W_U


def attn_out(model, layer: int, head: int) -> Float[Tensor, "d_head d_model"]:
    return model.W_O[layer, head]


def mlp_neuron_params(model) -> Iterator[tuple[int, Tensor, Tensor, Tensor]]:
    """``(layer, W_in [d_model, d_mlp], b_in [d_mlp], W_out [d_mlp, d_model])`` per layer: the
    parameters a neuron owns (its ``W_in`` column, ``b_in`` entry and ``W_out`` row)."""
    require_dense_mlp(model, "reading MLP neuron parameters")
    for L, block in enumerate(model.blocks):
        yield L, block.mlp.W_in, block.mlp.b_in, block.mlp.W_out


# ---------------------------------------------------------------------------------------------
# construction


def build_model(
    device: str = "cpu", dtype: torch.dtype = torch.float32, tokenizer=None, **cfg: Any
):
    """A freshly initialised ``HookedTransformer`` from config fields (``n_layers``,
    ``d_model``...)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = HookedTransformerConfig(**cfg, device=device, dtype=dtype)
    return (
        HookedTransformer(config, tokenizer=tokenizer)
        if tokenizer is not None
        else HookedTransformer(config)
    )


SUPPORTED_ARCHITECTURES = tuple(ARCHITECTURES)
"""``config.json`` model types of causal LMs kit converts (:mod:`kit.models.architectures`)."""


def hf_to_tl_config(hf_config, n_ctx: int | None = None) -> dict[str, Any]:
    """``HookedTransformerConfig`` fields for a ``transformers`` decoder config, read from the
    config (:func:`kit.models.architectures.tl_config`); unsupported configs raise ``ValueError``
    naming why."""
    return tl_config(hf_config, n_ctx=n_ctx)


def hooked_from_hf(
    hf_model,
    tokenizer,
    path: str,
    *,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    n_devices: int = 1,
    process_weights: bool = False,
    n_ctx: int | None = None,
):
    """A ``HookedTransformer`` holding ``hf_model``'s weights (``hf_model`` loaded from the local
    directory ``path``).

    ``process_weights=False`` (the default) keeps the raw weights: ``W_out`` is
    ``down_proj.weight.T`` and ``W_U`` is ``lm_head.weight.T``, as the papers' code reads them.
    ``True`` applies TransformerLens's default processing (fold_ln, center_writing_weights,
    center_unembed, fold_value_biases), which leaves the logits unchanged but changes ``W_out .
    W_U`` and so MUI.
    """
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.loading_from_pretrained import get_pretrained_state_dict
    from transformer_lens.utilities.architectures import POST_NORM_ARCHITECTURES

    fields = hf_to_tl_config(hf_model.config, n_ctx=n_ctx)
    name = str(path).rstrip("/").split("/")[-1]
    cfg = HookedTransformerConfig(
        **fields,
        model_name=name,
        tokenizer_name=str(path),
        device=device,
        dtype=dtype,
        n_devices=n_devices,
        init_weights=False,
        from_checkpoint=False,
    )
    state = get_pretrained_state_dict(str(path), cfg, hf_model, dtype=dtype)
    if cfg.original_architecture == "Olmo2ForCausalLM" and cfg.n_key_value_heads is not None:
        _olmo2_grouped_kv(state, hf_model, cfg)
    model = HookedTransformer(
        cfg, tokenizer=tokenizer, move_to_device=False, default_padding_side="right"
    )
    _own_tokenizer(model, tokenizer)
    # TransformerLens refuses these for post-norm blocks (OLMo-2) and soft-capped logits (Gemma-2).
    post_norm = cfg.original_architecture in POST_NORM_ARCHITECTURES
    softcap = cfg.output_logits_soft_cap > 0
    model.load_and_process_state_dict(
        state,
        fold_ln=process_weights and not post_norm,
        center_writing_weights=process_weights and not post_norm,
        center_unembed=process_weights and not softcap,
        fold_value_biases=process_weights,
        refactor_factored_attn_matrices=False,
    )
    model.move_model_modules_to_device()
    return model.eval()


def adds_bos(tokenizer) -> bool:
    """Whether ``tokenizer(text)`` (special tokens on, as generation encodes a prompt) starts with
    the BOS token: Llama-2's and Gemma's tokenizers do, GPT-2's, Qwen's and SmolLM2's do not."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    special = tokenizer("a")["input_ids"]
    return special[:1] == [bos] and special[1:][: len(plain)] == plain


def _own_tokenizer(model, tokenizer) -> None:
    """Make the model directory's own tokenizer the one the ``HookedTransformer`` holds, and its
    default BOS the one that tokenizer adds.

    TransformerLens 3.9's ``set_tokenizer`` swaps in a copy loaded with ``add_bos_token=True``, and
    keeps ``default_prepend_bos=True`` for most architectures: every text it (and kit's
    :func:`kit.models.generate.encode` through ``model.tokenizer``) tokenises gets a BOS, also where
    the model's own tokenizer adds none (SmolLM2: ``"Question: hi"`` -> ``[1, 17872, 42, 15876]``
    instead of ``[17872, 42, 15876]``), so the tokens scored were not the tokens generated nor
    lm-evaluation-harness's. With the model's own tokenizer, generation (the Hugging Face copy),
    teacher-forced rows, option log-likelihoods and ``to_tokens`` tokenise alike; an explicit
    ``to_tokens(..., prepend_bos=True)`` still writes a BOS.
    """
    added = adds_bos(tokenizer)
    model.tokenizer = tokenizer
    tokenizer.padding_side = "right"
    # TransformerLens's own fallbacks (its attention masks read pad_token_id)
    if tokenizer.eos_token is None:
        tokenizer.eos_token = "<|endoftext|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token is None:
        tokenizer.bos_token = tokenizer.eos_token
    model.cfg.tokenizer_prepends_bos = added
    model.cfg.default_prepend_bos = added


def _olmo2_grouped_kv(state: dict[str, Tensor], hf_model, cfg) -> None:
    """TransformerLens 3.9's OLMo-2 converter splits k/v into ``n_heads`` heads (OLMo-2 7B/13B have
    as many KV heads as query heads); with grouped-query attention (OLMo-2 32B) the attention module
    expects ``_W_K`` / ``_W_V`` of ``n_key_value_heads`` heads. Rebuild those from the HF weights
    (the k_norm over all KV heads is already the right size)."""
    import einops

    for L, layer in enumerate(hf_model.model.layers):
        for name, proj in (("K", layer.self_attn.k_proj), ("V", layer.self_attn.v_proj)):
            state.pop(f"blocks.{L}.attn.W_{name}", None)
            state.pop(f"blocks.{L}.attn.b_{name}", None)
            state[f"blocks.{L}.attn._W_{name}"] = einops.rearrange(
                proj.weight, "(n h) m -> n m h", n=cfg.n_key_value_heads
            )
            state[f"blocks.{L}.attn._b_{name}"] = torch.zeros(
                cfg.n_key_value_heads, cfg.d_head, dtype=cfg.dtype
            )


def is_moe(model) -> bool:
    """Whether ``model``'s MLPs are mixtures of experts (Mixtral, OLMoE, gpt-oss)."""
    return bool(getattr(model.cfg, "num_experts", None))


def require_dense_mlp(model, method: str = "this method") -> None:
    """Raise :class:`NotImplementedError` naming the reason when ``method`` needs the paper's MLP
    neurons (one ``W_out`` row and one ``hook_post`` column each) and ``model`` is a mixture of
    experts."""
    if is_moe(model):
        name = getattr(model, "kit_name", None) or model.cfg.model_name
        raise NotImplementedError(
            f"{method} is refused on {name} ({model.cfg.original_architecture}, "
            f"{model.cfg.num_experts} experts, {model.cfg.experts_per_token} per token): "
            f"{MOE_REASON}. Logits, hooks, generation and residual-"
            "stream SAEs work on it."
        )


def official_model_names() -> list[str]:
    """The Hugging Face ids TransformerLens knows how to convert."""
    from transformer_lens.supported_models import OFFICIAL_MODEL_NAMES

    return list(OFFICIAL_MODEL_NAMES)
