"""Teacher-forced internals over prompt + response, batched by a token budget, cached per item.

Given responses (from :mod:`kit.models.generate`, lm-eval logs or the published files), the
internals are forward passes over ``prompt + response``:

- :func:`teacher_forced_rows`: token ids and the response span of each item, the prompt in the
  chat template when the responses were generated with it, truncated to the model's context with
  a warning (the prompt loses its left end first, then the response its right end);
- :func:`kit.models.rows.token_budget_batches`: length-sorted batches whose padded size ``rows x
  longest`` stays within ``max_batch_tokens`` (an item longer than the budget runs alone);
- :class:`kit.models.cache.ItemCache`: per-item records per (model identity, benchmark, settings),
  each record bound to its item's prompt and response, every value checked (neuron ids in range
  for this model), so a killed run resumes and a changed model or response is recomputed;
- :func:`mui_key_neurons`: per-item key neurons (MUI, seed 000 Eq. 4) through all of that, and
  :func:`mui_from_items`, the dataset's MUI (Eq. 5) from the cached per-item sets.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from kit.models.cache import Check, ItemCache, map_items
from kit.models.identity import fingerprints, model_identity
from kit.models.rows import pad_rows, teacher_forced_rows, token_budget_batches  # noqa: F401 (re-exported: the rows live apart from MUI)


def mui_key_neurons(
    model,
    prompts: Sequence[str],
    responses: Sequence[str],
    ids: Sequence[Any] | None = None,
    max_batch_tokens: int = 8192,
    chat: bool | None = False,
    cache: ItemCache | None = None,
    progress: bool = False,
    **mui_kwargs: Any,
) -> list[list[int]]:
    """Per item, its key neurons (flat indices ``layer * d_mlp + i``) under
    :func:`kit.mui.metric.utilization`'s ``score`` / ``threshold`` / ``k`` (``mui_kwargs``),
    teacher-forced in token-budget batches and cached per item. A cached record is used only when
    it was made for this item's prompt and response and every id is a neuron of this model."""
    from kit.mui.metric import utilization

    rows = teacher_forced_rows(model, prompts, responses, chat=chat)
    ids = list(range(len(rows))) if ids is None else list(ids)
    if len(set(map(str, ids))) != len(ids):
        raise ValueError("ids must be unique (they key the per-item cache)")
    pad = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0

    def compute(batch: list[int]) -> list[list[int]]:
        tokens, mask = pad_rows([rows[i] for i in batch], pad)
        res = utilization(model, tokens, mask, per_sample=True, batch_size=len(batch), **mui_kwargs)
        assert res.sample_masks is not None  # per_sample=True
        return [torch.nonzero(m.flatten()).flatten().tolist() for m in res.sample_masks]

    return map_items(
        ids,
        compute,
        token_budget_batches([len(r[0]) for r in rows], max_batch_tokens),
        cache=cache,
        progress=progress,
        fingerprints=fingerprints(list(prompts), list(responses)),
        check=neuron_ids_check(model.cfg.n_layers * model.cfg.d_mlp),
    )


def neuron_ids_check(n_neurons: int) -> Check:
    """The check of a per-item key-neuron set: distinct ints in ``[0, n_neurons)``."""

    def check(value) -> str | None:
        if not isinstance(value, list) or not all(type(x) is int for x in value):
            return "not a list of neuron ids"
        if value and not (0 <= min(value) and max(value) < n_neurons):
            return f"neuron id outside [0, {n_neurons}) (n_layers x d_mlp of this model)"
        if len(set(value)) != len(value):
            return "repeated neuron ids"
        return None

    return check


def cached_items_mui(
    model,
    items: Sequence[Any],
    responses: Sequence[str],
    benchmark: str,
    settings: dict,
    max_batch_tokens: int = 8192,
    chat: bool | None = None,
    **mui_kwargs: Any,
) -> float:
    """MUI (%) of ``items`` (objects with ``prompt`` and ``id``) answered by ``responses``: key
    neurons by :func:`mui_key_neurons`, cached per item under (the model's identity: its files'
    content, ``benchmark``, ``settings``), each record bound to its item's prompt and response: the
    caller's settings name everything else that decides the scores."""
    name = getattr(model, "kit_path", None) or getattr(model, "kit_name", "model")
    cache = ItemCache(
        str(name),
        benchmark,
        {**settings, "dtype": str(model.cfg.dtype)},
        identity=model_identity(model),
    )
    keys = mui_key_neurons(
        model,
        [it.prompt for it in items],
        responses,
        ids=[it.id for it in items],
        max_batch_tokens=max_batch_tokens,
        chat=chat,
        cache=cache,
        **mui_kwargs,
    )
    return mui_from_items(model, keys)


def mui_from_items(model, key_neurons: Sequence[Sequence[int]]) -> float:
    """MUI (Eq. 5, in %) of the union of per-item key-neuron sets (flat ids ``layer * d_mlp + i``).

    An id outside the model's ``n_layers x d_mlp`` neurons raises ``ValueError``: a MUI above 100%
    (or from another model's ids) is never returned."""
    n = model.cfg.n_layers * model.cfg.d_mlp
    union = set().union(*map(set, key_neurons)) if key_neurons else set()
    bad = [i for i in union if not (isinstance(i, int) and 0 <= i < n)]
    if bad:
        raise ValueError(
            f"key neurons {sorted(map(str, bad))[:5]} are not neurons of this model "
            f"(flat ids in [0, {n}) = n_layers x d_mlp): they come from another model "
            "or a damaged cache"
        )
    return 100.0 * len(union) / n
