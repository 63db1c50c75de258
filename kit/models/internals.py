"""Teacher-forced rows of prompt + response, batched by a token budget (re-exported from
:mod:`kit.models.rows`, where they live).

The per-item MUI key neurons that used to sit here (cached per item, in token-budget batches)
are MUI and live with it: :func:`kit.mui.metric.mui_key_neurons`,
:func:`kit.mui.metric.mui_from_items`, :func:`kit.mui.metric.cached_items_mui`.
"""

from __future__ import annotations

from kit.models.rows import pad_rows, teacher_forced_rows, token_budget_batches

__all__ = ["pad_rows", "teacher_forced_rows", "token_budget_batches"]
