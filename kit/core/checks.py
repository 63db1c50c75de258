"""Checks at the entry points of the metrics: a NaN or inf must stop a computation, not steer it.

``topk`` ranks NaN above every number and ``np.log``/OLS/Spearman turn one NaN into NaN results,
so a model with a NaN weight would otherwise get a plausible-looking MUI with the NaN neuron as
its key neuron. ``require_finite`` fails first, naming what was not finite and where.
"""

from __future__ import annotations

from typing import TypeVar, cast

import numpy as np

T = TypeVar("T")


class NonFiniteError(ValueError):
    """Values that must be finite hold NaN or inf; the message names them and the first place."""


def require_finite(field: str, x: T) -> T:
    """Return ``x`` (a tensor, array, number or sequence of numbers) if every value is finite.

    Raises :class:`NonFiniteError` naming ``field``, how many values are NaN or inf, and the index
    of the first one (as a tuple over ``x``'s dimensions).
    """
    if hasattr(x, "detach"):  # a torch tensor: check where it lives, move only the verdict
        import torch

        t = cast(torch.Tensor, x)
        bad = ~torch.isfinite(t.detach())
        if not bool(bad.any()):
            return x
        n_bad, size, first = int(bad.sum()), bad.numel(), tuple(int(i) for i in bad.nonzero()[0])
        value = float(t.detach()[first]) if first else float(t.detach())
    else:
        arr = np.asarray(x, dtype=float)
        bad = ~np.isfinite(arr)
        if not bad.any():
            return x
        n_bad, size = int(bad.sum()), arr.size
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        value = float(arr[first]) if first else float(arr)
    where = f" at index {first}" if first else ""
    raise NonFiniteError(
        f"{field}: {n_bad} of {size} values are not finite (first: {value}{where}); "
        "check the model's weights and the inputs for NaN or inf"
    )
