"""Token rows of prompt + response for teacher-forced passes: the rows every reader of a model's
internals over its responses uses (MUI in :mod:`kit.mui.metric`, the subjects' ``tokens``), kept
here so that the generic layers never import a paper package.

- :func:`teacher_forced_rows` / :func:`pad_rows`: ids of prompt (+ chat template) + response;
- :func:`item_tokens`: right-padded rows and response mask of items answered by responses (the
  tiny world's word tokens for its models, :func:`teacher_forced_rows` otherwise);
- :func:`token_budget_batches`: length-sorted batches within a padded-token budget.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from kit.core import providers
from kit.models.generate import encode, prompt_text, use_chat


def teacher_forced_rows(
    model,
    prompts: Sequence[str],
    responses: Sequence[str],
    chat: bool | None = False,
    system_prompt: str | None = None,
) -> list[tuple[list[int], int]]:
    """``(ids, n_prompt)`` per item: ids of prompt (+ chat template) followed by the response.

    The response is tokenised after the prompt text (``encode(prompt + response)``), so merges
    across the boundary behave as at generation time; ``n_prompt`` counts the prompt's own tokens.
    """
    if len(prompts) != len(responses):
        raise ValueError(
            f"prompts ({len(prompts)}) and responses ({len(responses)}) must have the same length"
        )
    if not prompts:
        raise ValueError("prompts is empty: nothing to score")
    tok = model.tokenizer
    chat = use_chat(tok, chat)
    n_ctx = int(model.cfg.n_ctx)
    rows = []
    for i, (p, r) in enumerate(zip(prompts, responses)):
        text = prompt_text(tok, p, chat, system_prompt)
        head = encode(tok, text)
        ids = encode(tok, text + r) if r else head
        n_prompt = len(head)
        if len(ids) > n_ctx:
            # The response is what is scored: cut the prompt's left end first (keeping one token,
            # the position that predicts the first response token), then the response's tail.
            cut = min(len(ids) - n_ctx, max(n_prompt - 1, 0))
            ids, n_prompt = ids[cut:], n_prompt - cut
            tail = max(len(ids) - n_ctx, 0)
            ids = ids[:n_ctx]
            warnings.warn(
                f"item {i}: prompt + response is longer than the model's context ({n_ctx} tokens); "
                f"dropped {cut} prompt tokens from the left"
                + (f" and {tail} response tokens from the right" if tail else ""),
                stacklevel=2,
            )
        rows.append((ids, n_prompt))
    return rows


def pad_rows(
    rows: Sequence[tuple[list[int], int]], pad_id: int
) -> tuple[Int[Tensor, "batch seq"], Bool[Tensor, "batch seq"]]:
    """Right-padded tokens and the response mask (True at response tokens)."""
    width = max(len(ids) for ids, _ in rows)
    tokens = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for r, (ids, n) in enumerate(rows):
        tokens[r, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        mask[r, n : len(ids)] = True
    return tokens, mask


def token_budget_batches(lengths: Sequence[int], max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped so that ``len(batch) * max(length in batch) <= max_batch_tokens`` (an item
    longer than the budget forms its own batch). Sorted by length: padding stays small."""
    if max_batch_tokens < 1:
        raise ValueError(f"max_batch_tokens={max_batch_tokens} must be >= 1")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[i] <= max_batch_tokens:
            batches[-1].append(i)  # sorted: lengths[i] is the batch's longest
        else:
            batches.append([i])
    return batches


WORLD_TOKENIZER = "kit-world-wordlevel"
"""The ``name_or_path`` of the tiny world's word-level tokenizer."""

_PROMPT_TOKENS: dict[str, Callable[[Any, Sequence[Any]], tuple[Tensor, Tensor]]] = {}


def register_prompt_tokens(
    tokenizer: str, fn: Callable[[Any, Sequence[Any]], tuple[Tensor, Tensor]]
) -> None:
    """How the prompts of models with word-level tokenizer ``tokenizer`` (its ``name_or_path``)
    become ids: ``fn(model, items)`` -> (right-padded ``<bos> prompt`` ids, lengths). The tiny
    world registers its own (``kit.world.prompt_tokens``): this layer never imports it."""
    _PROMPT_TOKENS[tokenizer] = fn


def _prompt_tokens(model) -> Callable[[Any, Sequence[Any]], tuple[Tensor, Tensor]]:
    name = getattr(getattr(model, "tokenizer", None), "name_or_path", "")
    if name not in _PROMPT_TOKENS:
        providers.ensure()
    return _PROMPT_TOKENS[name]


def is_world_model(model) -> bool:
    """Whether ``model`` speaks the tiny world's word-level vocabulary (``kit.world`` tokenizer)."""
    return getattr(getattr(model, "tokenizer", None), "name_or_path", "") == WORLD_TOKENIZER


def item_tokens(
    model, items: Sequence[Any], responses: Sequence[str]
) -> tuple[Int[Tensor, "batch seq"], Bool[Tensor, "batch seq"]]:
    """Right-padded prompt+response tokens and the mask of the response tokens.

    World models (the world's word-level tokenizer): ``kit.world.prompt_tokens`` (BOS +
    prompt words) followed by the response's words. Other models:
    :func:`teacher_forced_rows` with the chat template when the tokenizer has
    one (as :func:`kit.models.generate.respond` generates): the prompt and prompt+response are
    tokenised and the response is everything after the prompt's tokens (as the public code does,
    so BPE merges across the boundary behave the same), cut to the context with a warning.
    An empty response gives a row with no response token (it contributes nothing to MUI).
    """
    if len(items) != len(responses):
        raise ValueError(
            f"items ({len(items)}) and responses ({len(responses)}) must have the same length"
        )
    if len(items) == 0:
        raise ValueError("items is empty: MUI needs at least one sample")
    rows, n_prompt = [], []
    if is_world_model(model):
        toks, lengths = _prompt_tokens(model)(model, items)
        vocab = model.tokenizer.get_vocab()
        for i, r in enumerate(responses):
            p = toks[i, : int(lengths[i])].tolist()
            unknown = [w for w in r.split() if w not in vocab]
            if unknown:
                raise ValueError(f"response {i} has words outside the world vocabulary: {unknown}")
            rows.append(p + [vocab[w] for w in r.split()])
            n_prompt.append(len(p))
    else:
        # the text the responses were generated from: the chat template when the tokenizer has one
        for ids, n in teacher_forced_rows(model, [it.prompt for it in items], responses, chat=None):
            rows.append(ids)
            n_prompt.append(n)
    tok = getattr(model, "tokenizer", None)
    pad = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, (r, n) in enumerate(zip(rows, n_prompt)):
        tokens[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, n : len(r)] = True
    return tokens, mask
