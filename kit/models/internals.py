"""Teacher-forced internals over prompt + response, batched by a token budget, cached per item.

Given responses (from :mod:`kit.models.generate`, lm-eval logs or the published files), the
internals are forward passes over ``prompt + response``:

- :func:`teacher_forced_rows`: token ids and the response span of each item, the prompt in the
  chat template when the responses were generated with it, truncated to the model's context with
  a warning (the prompt loses its left end first, then the response its right end);
- :func:`kit.models.rows.token_budget_batches`: length-sorted batches whose padded size ``rows x longest`` stays
  within ``max_batch_tokens`` (an item longer than the budget runs alone);
- :class:`kit.models.cache.ItemCache`: per-item records per (model, benchmark, settings), so a
  killed run resumes;
- :func:`mui_key_neurons`: per-item key neurons (MUI, seed 000 Eq. 4) through all of that, and
  :func:`mui_from_items`, the dataset's MUI (Eq. 5) from the cached per-item sets.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from kit.models.cache import ItemCache, map_items
from kit.models.rows import pad_rows, teacher_forced_rows, token_budget_batches  # noqa: F401 (re-exported: the rows live apart from MUI)


def mui_key_neurons(model, prompts: Sequence[str], responses: Sequence[str], ids: Sequence[Any] | None = None,
                    max_batch_tokens: int = 8192, chat: bool | None = False, cache: ItemCache | None = None,
                    progress: bool = False, **mui_kwargs: Any) -> list[list[int]]:
    """Per item, its key neurons (flat indices ``layer * d_mlp + i``) under
    :func:`kit.mui.metric.utilization`'s ``score`` / ``threshold`` / ``k`` (``mui_kwargs``),
    teacher-forced in token-budget batches and cached per item."""
    from kit.mui.metric import utilization

    rows = teacher_forced_rows(model, prompts, responses, chat=chat)
    ids = list(range(len(rows))) if ids is None else list(ids)
    if len(set(map(str, ids))) != len(ids):
        raise ValueError("ids must be unique (they key the per-item cache)")
    pad = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0

    def compute(batch: list[int]) -> list[list[int]]:
        tokens, mask = pad_rows([rows[i] for i in batch], pad)
        res = utilization(model, tokens, mask, per_sample=True, batch_size=len(batch), **mui_kwargs)
        return [torch.nonzero(m.flatten()).flatten().tolist() for m in res.sample_masks]

    return map_items(ids, compute, token_budget_batches([len(r[0]) for r in rows], max_batch_tokens),
                     cache=cache, progress=progress)


def cached_items_mui(model, items: Sequence[Any], responses: Sequence[str], benchmark: str, settings: dict,
                     max_batch_tokens: int = 8192, chat: bool | None = None, **mui_kwargs: Any) -> float:
    """MUI (%) of ``items`` (objects with ``prompt`` and ``id``) answered by ``responses``: key neurons
    by :func:`mui_key_neurons`, cached per item under (the model's directory or name, ``benchmark``,
    ``settings``): the caller's settings name everything that decides the responses and the scores."""
    cache = ItemCache(getattr(model, "kit_path", None) or getattr(model, "kit_name", "model"), benchmark,
                      {**settings, "dtype": str(model.cfg.dtype)})
    keys = mui_key_neurons(model, [it.prompt for it in items], responses, ids=[it.id for it in items],
                           max_batch_tokens=max_batch_tokens, chat=chat, cache=cache, **mui_kwargs)
    return mui_from_items(model, keys)


def mui_from_items(model, key_neurons: Sequence[Sequence[int]]) -> float:
    """MUI (Eq. 5, in %) of the union of per-item key-neuron sets."""
    union = set().union(*map(set, key_neurons)) if key_neurons else set()
    return 100.0 * len(union) / (model.cfg.n_layers * model.cfg.d_mlp)
