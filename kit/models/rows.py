"""Token rows of prompt + response for teacher-forced passes (:mod:`kit.models.internals`,
:func:`kit.mui.metric.item_tokens`): a module of its own so that MUI and the internals runner both
use it without importing each other."""

from __future__ import annotations

import warnings
from typing import Sequence

import torch
from jaxtyping import Bool, Int
from torch import Tensor

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
