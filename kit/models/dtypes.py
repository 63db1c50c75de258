"""The dtype names kit accepts (``dtype=`` of every loader and config) and their torch dtypes.

Its own module so that :mod:`kit.models.generate` reads them without importing
:mod:`kit.models.load` (which resolves fine-tune names through modules that use generate)."""

from __future__ import annotations

DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}
"""Accepted name -> torch's name."""


def torch_dtype(dtype: str | None):
    """``"bf16"`` / ``"bfloat16"`` ... -> ``torch.bfloat16``; None -> float32. Unknown names
    fail."""
    import torch  # lazy: the names are read by configs that need no torch

    if dtype is None:
        return torch.float32
    if str(dtype).removeprefix("torch.") not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not allowed; allowed: {', '.join(DTYPES)}")
    return getattr(torch, DTYPES[str(dtype).removeprefix("torch.")])
