"""Dynamic neuron patching during generation (seed 001, section 3.3, "dynamic patching").

At every decoding step the *patching* model runs on the current sequence, and the chosen MLP
neurons of the *patched* model (``blocks.{L}.mlp.hook_post[..., i]``, the input of ``W_out``; for
gated MLPs that is ``act(gate) * up``) take the patching model's values at the same positions.
Both models keep their own KV cache, so a step costs one single-token forward of each model,
and the patched values of earlier positions live on in the patched model's cache exactly as if
the whole sequence had been recomputed with the patch (tested). The patching model runs only up
to the last patched layer; nothing above it can influence the copied values.

Padding: pass ``attention_mask`` (1 = real token) or ``lengths`` whenever rows differ in length.
Either side is accepted: right-padded rows (the tiny world's ``prompt_tokens``) are re-aligned to
the left internally, because batched KV-cache decoding needs every row's last prompt token in the
last column; the output keeps the caller's layout (right padding: prompt, generated tokens, then
pads; left padding: pads, prompt, generated tokens). Without a mask every row is taken as real.

Public code's defects avoided here: exceptions inside hooks propagate (hooks are registered by
:func:`hooked`, which removes them on the way out, and nothing catches); neuron indices are
checked against each model's ``cfg.d_mlp`` up front; groups are scored many per pass
(:func:`group_patched_generate`) instead of one whole benchmark generation per group.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Callable, Sequence

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from kit.core.progress import progress_bar
from kit.models import tl

Neuron = tuple[int, int]
"""(layer, index) over ``blocks.{layer}.mlp.hook_post``."""


def hook_name(layer: int) -> str:
    """TransformerLens name of the MLP neuron activations of ``layer``."""
    return f"blocks.{layer}.mlp.hook_post"


def check_neurons(model, neurons: Sequence[Neuron], field: str = "neurons") -> list[Neuron]:
    """Validate (layer, index) pairs against ``model.cfg``; returns them as a list of int pairs."""
    n_layers, d_mlp = model.cfg.n_layers, model.cfg.d_mlp
    out = []
    for k, pair in enumerate(neurons):
        try:
            layer, idx = (int(pair[0]), int(pair[1]))
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"{field}[{k}]={pair!r} is not a (layer, index) pair") from None
        if not 0 <= layer < n_layers:
            raise ValueError(
                f"{field}[{k}]: layer={layer} outside 0..{n_layers - 1} (model has {n_layers} "
                "layers)"
            )
        if not 0 <= idx < d_mlp:
            raise ValueError(f"{field}[{k}]: index={idx} outside 0..{d_mlp - 1} (d_mlp={d_mlp})")
        out.append((layer, idx))
    return out


def _check_compatible(model, patching_model) -> None:
    for field in ("n_layers", "d_mlp"):
        a, b = getattr(model.cfg, field), getattr(patching_model.cfg, field)
        if a != b:
            raise ValueError(
                f"patching_model.cfg.{field}={b} differs from model.cfg.{field}={a}: "
                "patch a model only with a model of the same architecture"
            )


def group_masks(
    model, groups: Sequence[Sequence[Neuron]], n_prompts: int, field: str = "groups"
) -> dict[int, Bool[Tensor, "row d_mlp"]]:
    """Per-layer row masks for ``len(groups) * n_prompts`` rows laid out group-major
    (row ``g * n_prompts + p`` = group ``g`` on prompt ``p``). Layers no group touches are
    absent."""
    d_mlp, device = model.cfg.d_mlp, model.cfg.device
    masks: dict[int, Tensor] = {}
    for g, group in enumerate(groups):
        for layer, idx in check_neurons(model, group, f"{field}[{g}]"):
            if layer not in masks:
                masks[layer] = torch.zeros(len(groups), d_mlp, dtype=torch.bool, device=device)
            masks[layer][g, idx] = True
    return {L: m.repeat_interleave(n_prompts, dim=0) for L, m in sorted(masks.items())}


def mask_from_lengths(lengths: Int[Tensor, "batch"], pos: int) -> Int[Tensor, "batch pos"]:  # noqa: F821 (jaxtyping shape name)
    """Right-padding attention mask: row i has ``lengths[i]`` ones, then zeros."""
    return (torch.arange(pos, device=lengths.device)[None, :] < lengths[:, None]).long()


def padding_side(attention_mask: Int[Tensor, "batch pos"]) -> str:
    """``"left"``, ``"right"`` or ``"none"``; raises if some row's ones are not one contiguous run
    touching an edge, or a row is empty."""
    m = attention_mask.bool()
    lengths = m.sum(1)
    if bool((lengths == 0).any()):
        raise ValueError("attention_mask: some row has no real token (all zeros)")
    if bool(m.all()):
        return "none"
    pos = m.shape[1]
    right = mask_from_lengths(lengths, pos).bool()
    left = right.flip(1)
    if bool((m == right).all()):
        return "right"
    if bool((m == left).all()):
        return "left"
    raise ValueError(
        "attention_mask: each row must be a contiguous run of ones at the left (right "
        "padding) or at the right (left padding); got holes or padding on both sides"
    )


def _right_to_left(tokens: Tensor, lengths: Tensor) -> Tensor:
    pos = tokens.shape[1]
    shift = (pos - lengths)[:, None]
    idx = (torch.arange(pos, device=tokens.device)[None, :] - shift) % pos
    return tokens.gather(1, idx)


def _pick_next(
    logits: Float[Tensor, "row d_vocab"],
    do_sample: bool,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator,
) -> Int[Tensor, "row"]:  # noqa: F821 (jaxtyping shape name)
    if not do_sample:
        return logits.argmax(-1)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = logits.sort(-1, descending=True)
        probs = sorted_logits.softmax(-1)
        # keep the smallest prefix whose mass reaches top_p (the first token always stays)
        drop = probs.cumsum(-1) - probs >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    probs = logits.softmax(-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


class _Patcher:
    """Forward hooks: capture the patching model's activations; overwrite the patched model's."""

    def __init__(self, masks: dict[int, Tensor]):
        self.masks = masks
        self.captured: dict[int, Tensor] = {}

    def capture_hooks(self) -> list[tuple[str, Callable]]:
        def capture(act, hook, layer):
            self.captured[layer] = act
            return act

        return [(hook_name(L), _bind(capture, L)) for L in self.masks]

    def patch_hooks(self) -> list[tuple[str, Callable]]:
        def patch(act, hook, layer):
            src = self.captured[layer]
            mask = self.masks[layer]
            rows = act.shape[0]
            if src.shape[0] != rows:
                # patching values computed once on the P distinct prompts, broadcast over groups
                times = rows // src.shape[0]
                act4 = act.view(times, src.shape[0], *act.shape[1:])
                m4 = mask.view(times, src.shape[0], 1, -1)
                return torch.where(m4, src[None].to(act.dtype), act4).view_as(act)
            if src.shape != act.shape:
                raise RuntimeError(
                    f"{hook_name(layer)}: patching activations have shape {tuple(src.shape)} but "
                    f"the patched model's are {tuple(act.shape)}"
                )
            return torch.where(mask[:, None, :], src.to(act.dtype), act)

        return [(hook_name(L), _bind(patch, L)) for L in self.masks]


hooked = tl.hooks
"""Forward hooks for a ``with`` block, removing exactly those afterwards
(:func:`kit.models.tl.hooks`)."""


def _bind(fn, layer):
    def hook(act, hook):
        return fn(act, hook, layer)

    return hook


@torch.inference_mode()
def _generate_rows(
    model,
    patching_model,
    tokens: Tensor,
    attention_mask: Tensor,
    masks: dict[int, Tensor],
    n_groups: int,
    max_new_tokens: int,
    *,
    do_sample: bool,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator,
    stop_token_ids: Sequence[int],
    stop_strings: Sequence[str],
    tokenizer,
    pad_token_id: int,
) -> Int[Tensor, "row new"]:
    """Core loop on LEFT-padded prompts (P rows). Returns the new tokens of ``n_groups * P``
    rows."""
    P = tokens.shape[0]
    rows = n_groups * P
    patcher = _Patcher(masks) if (masks and patching_model is not None) else None
    pcache = tl.new_kv_cache(patching_model, P) if patcher else None
    first_layer = min(masks) if patcher else 0
    last_layer = max(masks) if patcher else 0
    split = (
        n_groups > 1
        and first_layer > 0
        and model.cfg.positional_embedding_type in ("standard", "rotary")
    )
    cache = tl.new_kv_cache(model, P if split else rows)

    hooks = patcher.patch_hooks() if patcher else []
    with ExitStack() as stack:
        # hooks live for the whole generation: registering them per step costs more than a step
        stack.enter_context(tl.hooks(model, hooks))
        if patcher:
            stack.enter_context(tl.hooks(patching_model, patcher.capture_hooks()))
            # Prompt pass. The patching model sees the same P prompts for every group: run it once.
            # only the layers up to the last patched one are needed from the patching model
            tl.forward(
                patching_model,
                tokens,
                attention_mask=attention_mask,
                kv_cache=pcache,
                stop_at_layer=last_layer + 1,
            )
            if n_groups > 1:
                tl.repeat_kv_cache(pcache, n_groups)
        n_layers = model.cfg.n_layers
        if n_groups == 1:
            resid = tl.forward(
                model, tokens, attention_mask=attention_mask, kv_cache=cache, stop_at_layer=n_layers
            )
        elif split:
            # Layers below the first patched one see identical inputs in every group: run them once.
            resid = tl.forward(
                model,
                tokens,
                attention_mask=attention_mask,
                kv_cache=cache,
                stop_at_layer=first_layer,
            )
            tl.repeat_kv_cache(cache, n_groups)
            resid = tl.forward(
                model,
                resid.repeat(n_groups, 1, 1),
                start_at_layer=first_layer,
                stop_at_layer=n_layers,
                kv_cache=cache,
                attention_mask=tl.kv_cache_attention_mask(cache),
            )
        else:
            resid = tl.forward(
                model,
                tokens.repeat(n_groups, 1),
                attention_mask=attention_mask.repeat(n_groups, 1),
                kv_cache=cache,
                stop_at_layer=n_layers,
            )
        logits = tl.last_logits(model, resid)
        if patcher:
            patcher.captured.clear()

        stop_ids = torch.tensor(list(stop_token_ids), dtype=torch.long, device=tokens.device)
        finished = torch.zeros(rows, dtype=torch.bool, device=tokens.device)
        new: list[Tensor] = []
        ones = torch.ones(rows, 1, dtype=attention_mask.dtype, device=tokens.device)
        for step in range(max_new_tokens):
            nxt = _pick_next(logits[:, -1], do_sample, temperature, top_k, top_p, generator)
            nxt = torch.where(finished, torch.full_like(nxt, pad_token_id), nxt)
            new.append(nxt)
            if len(stop_ids):
                finished |= torch.isin(nxt, stop_ids)
            if stop_strings:
                finished |= _hits_stop_string(
                    torch.stack(new, 1), finished, stop_strings, tokenizer, pad_token_id
                )
            if step == max_new_tokens - 1 or bool(finished.all()):
                break
            step_in = nxt[:, None]
            if patcher:
                tl.forward(
                    patching_model,
                    step_in,
                    attention_mask=ones,
                    kv_cache=pcache,
                    stop_at_layer=last_layer + 1,
                )
            logits = tl.forward(model, step_in, attention_mask=ones, kv_cache=cache)
            if patcher:
                patcher.captured.clear()
    out = torch.full((rows, max_new_tokens), pad_token_id, dtype=torch.long, device=tokens.device)
    if new:
        out[:, : len(new)] = torch.stack(new, 1)
    return out


def _hits_stop_string(
    gen: Tensor, finished: Tensor, stop_strings: Sequence[str], tokenizer, pad_token_id: int
) -> Tensor:
    hit = torch.zeros_like(finished)
    for r in torch.nonzero(~finished).flatten().tolist():
        text = tokenizer.decode(gen[r].tolist())
        hit[r] = any(s in text for s in stop_strings)
    return hit


def prompt_chunks(n_prompts: int, max_rows: int) -> list[tuple[int, int]]:
    """``[start, stop)`` slices of at most ``max_rows`` prompts covering ``0..n_prompts``: a forward
    then holds at most ``max_rows`` rows (groups x prompts), however many prompts a benchmark
    has."""
    if max_rows < 1:
        raise ValueError(f"max_rows={max_rows} must be >= 1")
    return [(s, min(s + max_rows, n_prompts)) for s in range(0, n_prompts, max_rows)]


def _trim_left(tokens: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Drop the leading columns that are padding in every row of a left-padded slice."""
    first = int(tokens.shape[1] - mask.sum(1).max())
    return tokens[:, first:], mask[:, first:]


def group_patched_generate(
    model,
    patching_model,
    tokens: Int[Tensor, "batch pos"],
    groups: Sequence[Sequence[Neuron]],
    max_new_tokens: int,
    *,
    attention_mask: Int[Tensor, "batch pos"] | None = None,
    lengths: Int[Tensor, "batch"] | None = None,  # noqa: F821 (jaxtyping shape name)
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    stop_token_ids: Sequence[int] = (),
    stop_strings: Sequence[str] = (),
    tokenizer=None,
    pad_token_id: int | None = None,
    max_rows: int = 4096,
) -> Int[Tensor, "group batch pos_plus_new"]:
    """Dynamic patching of many neuron groups at once: one batched generation per chunk of groups.

    Row ``g * batch + p`` decodes prompt ``p`` with group ``g``'s neurons patched, so every group
    gets its own continuation (and its own patching-model run on that continuation); the
    prompt pass of the patching model, and of the patched model's layers below the first patched
    layer, is shared by all groups. ``max_rows`` caps the rows of every forward: prompts are taken
    ``max_rows`` at a time (:func:`prompt_chunks`), and groups ``max_rows // prompts`` at a time.
    Seeded sampling draws per chunk, so sampled continuations depend on ``max_rows`` (greedy ones do
    not).

    Returns ``Int[Tensor, "group batch pos+max_new_tokens"]``; ``[g]`` is what
    :func:`patched_generate` returns for ``neurons=groups[g]`` (up to float rounding of batched
    matmuls, which can differ from the unbatched ones in the last bit).
    """
    if tokens.ndim != 2:
        raise ValueError(
            f"tokens must be Int[Tensor, 'batch pos'], got shape {tuple(tokens.shape)}"
        )
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 0")
    if do_sample and not temperature > 0:
        raise ValueError(f"temperature={temperature} must be > 0 when do_sample=True")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p={top_p} must be in (0, 1]")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k} must be >= 1")
    if max_rows < 1:
        raise ValueError(f"max_rows={max_rows} must be >= 1")
    groups = [list(g) for g in groups]
    if not groups:
        raise ValueError("groups is empty: pass at least one group (an empty group means no patch)")
    if patching_model is not None and patching_model is not model:
        _check_compatible(model, patching_model)
    for g, group in enumerate(groups):
        check_neurons(model, group, f"groups[{g}]")
    if stop_strings:
        tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
        if tokenizer is None:
            raise ValueError(
                "stop_strings need a tokenizer: pass tokenizer= or use a model with one"
            )
    if pad_token_id is None:
        tok = getattr(model, "tokenizer", None)
        pad_token_id = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0

    device = model.cfg.device
    tokens = tokens.to(device)
    P, T = tokens.shape
    if attention_mask is not None and lengths is not None:
        raise ValueError("pass attention_mask or lengths, not both")
    if lengths is not None:
        lengths = torch.as_tensor(lengths, device=device)
        if lengths.shape != (P,) or bool((lengths < 1).any()) or bool((lengths > T).any()):
            raise ValueError(f"lengths must be Int[Tensor, 'batch'] with values in 1..{T}")
        attention_mask = mask_from_lengths(lengths, T)
    if attention_mask is None:
        attention_mask = torch.ones_like(tokens)
    attention_mask = attention_mask.to(device).long()
    if attention_mask.shape != tokens.shape:
        raise ValueError(
            f"attention_mask shape {tuple(attention_mask.shape)} != tokens shape "
            f"{tuple(tokens.shape)}"
        )
    side = padding_side(attention_mask)
    row_len = attention_mask.sum(1)
    if side == "right":
        left_tokens = _right_to_left(tokens, row_len)
        left_mask = _right_to_left(attention_mask, row_len)
    else:
        left_tokens, left_mask = tokens, attention_mask

    # The identity cases are plain greedy decoding by definition, not "patch with equal values".
    plain = patching_model is None or patching_model is model
    generator = None
    if do_sample:
        generator = torch.Generator(device=device)
        generator.manual_seed(0 if seed is None else seed)

    kwargs: dict[str, Any]
    kwargs = dict(
        do_sample=do_sample,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        generator=generator,
        stop_token_ids=stop_token_ids,
        stop_strings=stop_strings,
        tokenizer=tokenizer,
        pad_token_id=pad_token_id,
    )
    parts = []
    chunks = prompt_chunks(P, max_rows)
    # one bar over the groups (eq. 4 patches every group of a model): a single group is no loop
    bar = (
        progress_bar(desc="patched groups", total=len(groups) * len(chunks), unit="group")
        if len(groups) > 1
        else None
    )
    for p0, p1 in chunks:  # never more than max_rows rows in one forward
        rows_tok, rows_mask = _trim_left(left_tokens[p0:p1], left_mask[p0:p1])
        Pc = p1 - p0
        per_chunk = max(1, max_rows // Pc)
        outs = []
        for start in range(0, len(groups), per_chunk):
            chunk = groups[start : start + per_chunk]
            if bar is not None:
                bar.update(len(chunk))
            masks = {} if plain else group_masks(model, chunk, Pc)
            if not masks:  # no group in this chunk patches anything: decode once, copy per group
                gen = _generate_rows(
                    model, None, rows_tok, rows_mask, {}, 1, max_new_tokens, **kwargs
                )
                gen = gen.repeat(len(chunk), 1)
            else:
                gen = _generate_rows(
                    model,
                    patching_model,
                    rows_tok,
                    rows_mask,
                    masks,
                    len(chunk),
                    max_new_tokens,
                    **kwargs,
                )
            outs.append(gen.view(len(chunk), Pc, max_new_tokens))
        parts.append(torch.cat(outs, 0))
    if bar is not None:
        bar.close()
    gen = torch.cat(parts, 1)  # [group, P, new]
    G = gen.shape[0]
    if side == "right":
        assert pad_token_id is not None  # set above when not given
        out = torch.full((G, P, T + max_new_tokens), pad_token_id, dtype=torch.long, device=device)
        out[:, :, :T] = tokens
        idx = (row_len[:, None] + torch.arange(max_new_tokens, device=device)[None, :]).expand(
            G, P, -1
        )
        out.scatter_(2, idx, gen)
        return out
    return torch.cat([tokens.expand(G, P, T), gen], dim=2)


def patched_generate(
    model,
    patching_model,
    tokens: Int[Tensor, "batch pos"],
    neurons: Sequence[Neuron],
    max_new_tokens: int,
    **kwargs,
) -> Int[Tensor, "batch pos_plus_new"]:
    """Generate with ``model`` while ``neurons`` take ``patching_model``'s values, step by step.

    Args:
        model: the patched ``HookedTransformer`` (the model under test).
        patching_model: the model whose activations are copied in (the base model ``M0``);
            ``None`` or ``model`` itself means no patch.
        tokens: ``Int[Tensor, "batch pos"]`` prompts (BOS included if the model expects one).
        neurons: (layer, index) pairs over ``blocks.{layer}.mlp.hook_post``; ``[]`` means no patch.
        max_new_tokens: tokens generated per row (no early stop unless asked).
        **kwargs: ``attention_mask`` or ``lengths`` (padding, either side, see the module doc),
            ``do_sample``/``temperature``/``top_k``/``top_p``/``seed`` (seeded sampling),
            ``stop_token_ids``/``stop_strings`` (rows that stop are filled with ``pad_token_id``;
            the stopping token is kept), ``tokenizer``, ``pad_token_id``.

    Returns:
        ``Int[Tensor, "batch pos+max_new_tokens"]``: the prompt, then the new tokens, in the
        caller's padding layout. With ``neurons=[]`` or ``patching_model is model`` it is exactly
        plain greedy decoding of ``model`` (:func:`generate`).
    """
    return group_patched_generate(
        model, patching_model, tokens, [list(neurons)], max_new_tokens, **kwargs
    )[0]


def generate(
    model, tokens: Int[Tensor, "batch pos"], max_new_tokens: int, **kwargs
) -> Int[Tensor, "batch pos_plus_new"]:
    """Plain (unpatched) KV-cache decoding of ``model`` with the same options as
    :func:`patched_generate`."""
    return patched_generate(model, None, tokens, [], max_new_tokens, **kwargs)


def group_patched_logprobs(
    model,
    patching_model,
    tokens: Int[Tensor, "batch pos"],
    target_pos: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    targets: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    groups: Sequence[Sequence[Neuron]],
    max_rows: int = 4096,
) -> tuple[Float[Tensor, "group batch"], Bool[Tensor, "group batch"]]:
    """Teacher-forced fast option: log-prob (and argmax hit) of a reference token, per group.

    The sequence is fixed (no generation), so the patching model runs once on the prompts and
    the patched model's layers below the first patched layer run once too; only the layers from
    there on run per group. ``tokens`` must be right-padded or unpadded (causal attention makes
    padding after ``target_pos`` irrelevant); ``target_pos[i]`` is the position whose next-token
    prediction should be ``targets[i]`` (for a prompt: its last position, ``length - 1``).

    For single-token answers, the argmax hit equals greedy exact match of the first generated
    token, so this is exact-match scoring at a fraction of the cost.
    """
    lp, top = group_patched_first_token(
        model, patching_model, tokens, target_pos, targets, groups, max_rows
    )
    return lp, top == targets.to(top.device)[None, :]


@torch.inference_mode()
def group_patched_first_token(
    model,
    patching_model,
    tokens: Int[Tensor, "batch pos"],
    target_pos: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    targets: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    groups: Sequence[Sequence[Neuron]],
    max_rows: int = 4096,
) -> tuple[Float[Tensor, "group batch"], Int[Tensor, "group batch"]]:
    """:func:`group_patched_logprobs` with the argmax token itself instead of its hit: the
    log-prob of ``targets[i]`` and the greedy next token at ``target_pos[i]``, per group. At a
    prompt's last position the argmax is the first token greedy decoding would give, so one pass
    gives both the teacher-forced score and a one-token answer."""
    _check_compatible(model, patching_model)
    groups = [list(g) for g in groups]
    device = model.cfg.device
    tokens, target_pos, targets = tokens.to(device), target_pos.to(device), targets.to(device)
    if tokens.shape[0] > max_rows:  # at most max_rows rows per forward: prompts in slices
        parts = [
            group_patched_first_token(
                model, patching_model, tokens[a:b], target_pos[a:b], targets[a:b], groups, max_rows
            )
            for a, b in prompt_chunks(tokens.shape[0], max_rows)
        ]
        return torch.cat([p[0] for p in parts], 1), torch.cat([p[1] for p in parts], 1)
    P = tokens.shape[0]
    rows_idx = torch.arange(P, device=device)
    per_chunk = max(1, max_rows // P)
    lps, tops = [], []
    for start in range(0, len(groups), per_chunk):
        chunk = groups[start : start + per_chunk]
        masks = group_masks(model, chunk, P)
        G = len(chunk)
        n_layers = model.cfg.n_layers
        if not masks:
            resid = tl.forward(model, tokens, stop_at_layer=n_layers)[rows_idx, target_pos]
            resid = resid.repeat(G, 1)
        else:
            patcher = _Patcher(masks)
            with tl.hooks(patching_model, patcher.capture_hooks()):
                tl.forward(patching_model, tokens, stop_at_layer=max(masks) + 1)
            first = min(masks)
            with tl.hooks(model, patcher.patch_hooks()):
                if first > 0 and model.cfg.positional_embedding_type in ("standard", "rotary"):
                    # layers below the first patched one are the same for every group: run them once
                    resid = tl.forward(model, tokens, stop_at_layer=first)
                    resid = tl.forward(
                        model, resid.repeat(G, 1, 1), start_at_layer=first, stop_at_layer=n_layers
                    )
                else:
                    resid = tl.forward(model, tokens.repeat(G, 1), stop_at_layer=n_layers)
            resid = resid[torch.arange(G * P, device=device), target_pos.repeat(G)]
        # unembed only the scored positions (a 50k vocabulary costs as much as the blocks)
        logits = tl.last_logits(model, resid[:, None, :])[:, 0]
        logp = logits.float().log_softmax(-1)
        tgt = targets.repeat(G)
        lps.append(logp.gather(1, tgt[:, None])[:, 0].view(G, P))
        tops.append(logp.argmax(-1).view(G, P))
    return torch.cat(lps, 0), torch.cat(tops, 0)
