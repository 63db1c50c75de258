"""``python -m kit bench pinned``: what the pinned environment costs, as ratios of rates measured in
two fresh processes of one process tree: a pinned one (:mod:`kit.core.pinned`, with its kernels,
:mod:`kit.core.kernels`) and a native one (torch's defaults on one thread: MKL's own kernel choice,
oneDNN). Process CPU time, same shapes and data on both sides. Lines:

- ``pinned/gemm_vs_native``: fp32 GEMM rate (GFLOP/s, summed over the tiny world's shapes) pinned
  over native; ``pinned/gemm_vs_mkl_compatible``: pinned over MKL's reproducible mode alone (the
  pinned environment before its GEMMs went to OpenBLAS);
- ``pinned/train_step_vs_native``: a training step of a tiny-world base (``zoo/base-m``'s shape,
  batch 64, the world's loss, clipping and AdamW): native time over pinned time;
- ``pinned/forward_vs_native``: a forward pass of ``--model`` (default ``random/gpt2-small``) on
  4 x 64 tokens: native time over pinned time.

Each ratio is the pinned environment's speed as a fraction of the machine's (1.0: free).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, cast

from kit.core.bench import DEFAULT_MODEL, BenchLine

if TYPE_CHECKING:
    from kit.models.tl import HookedModel

SHAPES = [(1024, 96, 384), (1024, 384, 96), (2048, 128, 512), (2048, 512, 128), (512, 128, 1536)]
"""(rows, inner, cols) of the tiny world's products: tokens x d_model x d_mlp and back."""
_TAG = "kit-bench-pinned "


def _cpu_seconds(fn, repeat: int) -> float:
    fn()
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def _measure(mode: str, model_name: str) -> dict:
    """In a child process: the rates of this process's environment (``mode``: pinned, mkl,
    native)."""
    import random

    import torch

    from kit.world import train

    if mode == "pinned":
        from kit.core.pinned import enter_pinned

        enter_pinned()
    else:
        torch.set_num_threads(1)
        torch.backends.mkldnn.enabled = mode == "native"
    g = torch.Generator().manual_seed(0)
    flops = seconds = 0.0
    for m, k, n in SHAPES:
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        seconds += _cpu_seconds(lambda a=a, b=b: a @ b, 10)
        flops += 2 * m * k * n
    model = train.make_model(train.Arch(2, 96, 4, 384), seed=0)
    opt = train.make_optimizer(model, 1e-3)
    items = train.mixture_stream({"add": 1.0, "dyck": 1.0, "ioi": 1.0}, random.Random(0))
    batches = train.batches_from_items(items, 64)
    step = _cpu_seconds(lambda: train.train_loop(model, opt, batches, 1, lambda s: 1e-3, ""), 5)
    from kit.models.load import load_model

    lm = cast("HookedModel", load_model(model_name))
    tokens = torch.randint(0, lm.cfg.d_vocab, (4, 64), generator=g)
    with torch.no_grad():
        forward = _cpu_seconds(lambda: lm(tokens), 3)
    return {"gemm_gflops": flops / seconds / 1e9, "train_step_s": step, "forward_s": forward}


def _child(mode: str, model_name: str) -> dict:
    from kit.core.pinned import PINNED_ENV, child_json

    env = {**os.environ, "TQDM_DISABLE": "1"}
    if mode in ("pinned", "mkl"):  # mkl: the pins, but torch's own kernels (MKL CNR:COMPATIBLE)
        env.update(PINNED_ENV)
    else:
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    return child_json("kit.world.bench", mode, model_name, env=env, tag=_TAG)[0]


def run(model: str = DEFAULT_MODEL, device: str = "cpu") -> list[BenchLine]:
    if device != "cpu":
        raise ValueError("--device: the pinned environment is a CPU environment; allowed: cpu")
    pinned, mkl, native = (_child(m, model) for m in ("pinned", "mkl", "native"))
    gemm = (
        f"GFLOP/s over {len(SHAPES)} tiny-world shapes, one thread: pinned (OpenBLAS) "
        f"{pinned['gemm_gflops']:.1f}, MKL CNR:COMPATIBLE {mkl['gemm_gflops']:.1f}, native "
        f"{native['gemm_gflops']:.1f}"
    )
    return [
        BenchLine("pinned/gemm_vs_native", pinned["gemm_gflops"] / native["gemm_gflops"], gemm),
        BenchLine(
            "pinned/gemm_vs_mkl_compatible", pinned["gemm_gflops"] / mkl["gemm_gflops"], gemm
        ),
        BenchLine(
            "pinned/train_step_vs_native",
            native["train_step_s"] / pinned["train_step_s"],
            f"zoo/base-m's shape, batch 64, CPU s per step: pinned {pinned['train_step_s']:.3f}, "
            f"MKL CNR:COMPATIBLE {mkl['train_step_s']:.3f}, native {native['train_step_s']:.3f}",
        ),
        BenchLine(
            "pinned/forward_vs_native",
            native["forward_s"] / pinned["forward_s"],
            f"{model} on 4 x 64 tokens, CPU s: pinned {pinned['forward_s']:.3f}, MKL "
            f"CNR:COMPATIBLE {mkl['forward_s']:.3f}, native {native['forward_s']:.3f}",
        ),
    ]


if __name__ == "__main__":
    print(_TAG + json.dumps(_measure(sys.argv[1], sys.argv[2])), flush=True)
