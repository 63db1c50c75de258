"""The CPU kernels a pinned process (:mod:`kit.core.pinned`) computes with instead of torch's own:
matrix products through numpy's OpenBLAS, and exact square roots.

Both are registered once per process for ``aten`` ops on the ``CPU`` dispatch key
(:func:`install`), so every caller - TransformerLens, Hugging Face models, sae_lens, autograd's
backward formulas, the optimizers - gets them without a change of its own.

- **Matrix products** (``mm``, ``addmm``, ``bmm`` and their ``out=`` and in-place forms: what
  ``F.linear``, ``torch.matmul`` and ``einsum`` and their gradients decompose into) run in numpy's
  bundled OpenBLAS, which the pins hold to its Haswell kernels (AVX2 + FMA, the same instructions
  and blocking on Intel and AMD) on one thread. torch's own GEMM is MKL, which gives the same bits
  on both vendors only in its ``CNR:COMPATIBLE`` mode: SSE2 code at about a quarter of the
  machine's rate (22 GFLOP/s against OpenBLAS's 60-86 on one core of an AMD EPYC). Other dtypes
  than fp32/fp64 are multiplied in fp32 and rounded once (bf16, fp16) or exactly (integers).
- **Square roots** (``sqrt``, ``sqrt_``, ``out=``; AdamW's ``_foreach_sqrt`` calls it per tensor)
  are numpy's IEEE-exact roots. torch sends ``sqrt`` to MKL's vector math (``vmsSqrt``), whose roots
  are not correctly rounded (17% of fp32 roots off by an ulp on an AMD EPYC) and were rounded
  differently on an Intel Xeon, whatever the CBWR mode: the one primitive of ``kit zoo fingerprint``
  that differed between the two. MKL's other vector functions (exp, log, tanh, erf, sin, cos) gave
  the same bits on both and are left alone. ``pow(x, 0.5)`` still calls MKL's kernel directly (no
  code here uses it; the fingerprint watches it).

Fused kernels that multiply matrices inside ATen (CPU flash attention of
``scaled_dot_product_attention``) still call MKL, in its reproducible mode.
"""

from __future__ import annotations

import warnings

_LIBRARY = None


def _numpy(t):
    """A numpy view (or copy) of a CPU tensor's values, any strides."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def _blas_dtype(*tensors):
    """(the dtype numpy multiplies in, the dtype torch returns) for these operands."""
    import torch

    out = tensors[0].dtype
    for t in tensors[1:]:
        out = torch.promote_types(out, t.dtype)
    if out in (torch.float16, torch.bfloat16):
        return torch.float32, out
    return out, out


def _product(a, b):
    """``a @ b`` of 2-D or batched 3-D CPU tensors, through numpy (OpenBLAS for floats)."""
    import numpy as np
    import torch

    work, result = _blas_dtype(a, b)
    x = _numpy(a if a.dtype == work else a.to(work))
    y = _numpy(b if b.dtype == work else b.to(work))
    out = torch.from_numpy(np.ascontiguousarray(np.matmul(x, y)))
    return out if out.dtype == result else out.to(result)


def _addmm(bias, a, b, beta=1, alpha=1):
    """``beta * bias + alpha * (a @ b)``: the product first, then scaled and added (BLAS's
    semantics: ``beta == 0`` ignores ``bias``, NaNs included)."""

    out = _product(a, b)
    if alpha != 1:
        out.mul_(alpha)
    if beta != 0:
        out.add_(bias.to(out.dtype), alpha=beta)
    return out


def _into(out, value):
    if out.shape != value.shape:
        out.resize_(value.shape)
    return out.copy_(value)


def _sqrt(x):
    """IEEE-exact square roots of a CPU tensor, computed by numpy (``sqrtps``/``sqrtpd``, correctly
    rounded on every CPU), in the dtype ``torch.sqrt`` returns, as a new contiguous tensor."""
    import numpy as np
    import torch

    if x.dtype in (torch.bfloat16, torch.float16):  # the exact fp32 root, rounded once
        return _sqrt(x.float()).to(x.dtype)
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.get_default_dtype())  # torch.sqrt of an integer tensor is a float tensor
    with np.errstate(invalid="ignore"):  # sqrt of a negative number is nan, as in torch
        out = np.asarray(np.sqrt(_numpy(x.contiguous())))
    return torch.from_numpy(out).reshape(x.shape)


def install() -> None:
    """Register the kernels above for this process (idempotent; they stay for its life)."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    import torch

    kernels = {
        "mm": lambda a, b: _product(a, b),
        "mm.out": lambda a, b, *, out: _into(out, _product(a, b)),
        "bmm": lambda a, b: _product(a, b),
        "bmm.out": lambda a, b, *, out: _into(out, _product(a, b)),
        "addmm": lambda bias, a, b, *, beta=1, alpha=1: _addmm(bias, a, b, beta, alpha),
        "addmm.out": lambda bias, a, b, *, beta=1, alpha=1, out: _into(
            out, _addmm(bias, a, b, beta, alpha)
        ),
        "addmm_": lambda self, a, b, *, beta=1, alpha=1: self.copy_(
            _addmm(self, a, b, beta, alpha)
        ),
        "sqrt": lambda x: _sqrt(x),
        "sqrt_": lambda x: x.copy_(_sqrt(x)),
        "sqrt.out": lambda x, *, out: _into(out, _sqrt(x)),
    }
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # torch warns once that it overrides a built-in kernel
        warnings.simplefilter("ignore")
        for name, fn in kernels.items():
            lib.impl(name, fn, "CPU")
    _LIBRARY = lib


def installed() -> bool:
    return _LIBRARY is not None


def sqrt_is_exact() -> bool:
    """True when ``torch.sqrt`` in this process returns correctly rounded fp32 roots (checked
    against numpy on 4096 values, of which an inexact kernel gets hundreds wrong)."""
    import numpy as np
    import torch

    x = torch.linspace(0.001, 1000.0, 4096)
    return bool(np.array_equal(torch.sqrt(x).numpy(), np.sqrt(x.numpy())))


def gemm_is_openblas() -> bool:
    """True when ``torch.mm`` in this process gives numpy's (OpenBLAS's) bits."""
    import numpy as np
    import torch

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(67, 129, generator=g), torch.randn(129, 35, generator=g)
    return bool(np.array_equal((a @ b).numpy(), a.numpy() @ b.numpy()))
