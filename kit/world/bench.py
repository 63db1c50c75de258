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
  4 x 64 tokens: native time over pinned time;
- ``pinned/smollm2_scoring_vs_native``: teacher-forced scoring (one forward pass, the
  log-probability of every next token) of :data:`SMOLLM2` on 4 x 64 tokens: native time over
  pinned time; a ``skipped`` line naming the install command where the model is not installed.

Each ratio is the pinned environment's speed as a fraction of the machine's (1.0: free). The
training step and the scoring also report their floor: matrix-product FLOPs per step (counted by
``torch.utils.flop_counter``, forward and backward), the rate they ran at and its share of the same
environment's GEMM rate (the efficiency: 1.0 would be every step spent in GEMMs at full rate); the
docs' timings page tabulates them (``docs/records/floors.json``).
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
SMOLLM2 = "real/smollm2-135m-instruct"


def _cpu_seconds(fn, repeat: int) -> float:
    fn()
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def _gemm_flops(fn) -> int:
    """FLOPs of the matrix products ``fn()`` runs (forward and backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return counter.get_total_flops()


def _smollm2_scoring(g) -> tuple[float, int] | str:
    """(CPU s, FLOPs) of one teacher-forced scoring pass of SmolLM2 on 4 x 64 tokens, or why not."""
    import torch

    from kit.models.load import load_model
    from kit.models.real import RealModelMissing

    try:
        lm = cast("HookedModel", load_model(SMOLLM2))
    except RealModelMissing as e:
        return str(e).splitlines()[0]
    tokens = torch.randint(0, lm.cfg.d_vocab, (4, 64), generator=g)

    def score():
        with torch.inference_mode():
            logp = lm(tokens).log_softmax(-1)
            return logp[:, :-1].gather(-1, tokens[:, 1:, None])

    return _cpu_seconds(score, 2), _gemm_flops(score)


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
    stream = train.batches_from_items(items, 64)
    # the same 5 batches timed, then counted (a step's FLOPs follow its batch's lengths)
    warm_up, fixed = next(stream), [next(stream) for _ in range(5)]
    batches = iter([warm_up, *fixed])
    step = _cpu_seconds(lambda: train.train_loop(model, opt, batches, 1, lambda s: 1e-3, ""), 5)
    batches = iter(fixed)
    step_flops = _gemm_flops(lambda: train.train_loop(model, opt, batches, 5, lambda s: 1e-3, ""))
    step_flops /= 5
    from kit.models.load import load_model

    lm = cast("HookedModel", load_model(model_name))
    tokens = torch.randint(0, lm.cfg.d_vocab, (4, 64), generator=g)
    with torch.no_grad():
        forward = _cpu_seconds(lambda: lm(tokens), 3)
    scoring = _smollm2_scoring(g)
    out = {
        "gemm_gflops": flops / seconds / 1e9,
        "train_step_s": step,
        "train_step_gflop": step_flops / 1e9,
        "forward_s": forward,
    }
    if isinstance(scoring, str):
        return {**out, "smollm2_missing": scoring}
    return {**out, "smollm2_scoring_s": scoring[0], "smollm2_scoring_gflop": scoring[1] / 1e9}


def _floor(r: dict, what: str) -> str:
    """``what``'s FLOPs, rate and efficiency (rate / the environment's GEMM rate) in ``r``."""
    rate = r[f"{what}_gflop"] / r[f"{what}_s"]
    return (
        f"{r[f'{what}_gflop']:.2f} GFLOP, {rate:.1f} GFLOP/s, efficiency "
        f"{rate / r['gemm_gflops']:.2f}"
    )


def _child(mode: str, model_name: str) -> dict:
    from kit.core.pinned import PINNED_ENV, child_json

    env = {**os.environ, "TQDM_DISABLE": "1"}
    if mode in ("pinned", "mkl"):  # mkl: the pins, but torch's own kernels (MKL CNR:COMPATIBLE)
        env.update(PINNED_ENV)
    else:
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    return child_json("kit.world.bench", mode, model_name, env=env, tag=_TAG)[0]


def run(model: str = DEFAULT_MODEL, device: str = "cpu") -> list[BenchLine | str]:
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
            f"MKL CNR:COMPATIBLE {mkl['train_step_s']:.3f}, native {native['train_step_s']:.3f}; "
            f"floor pinned {_floor(pinned, 'train_step')}, native {_floor(native, 'train_step')}",
        ),
        BenchLine(
            "pinned/forward_vs_native",
            native["forward_s"] / pinned["forward_s"],
            f"{model} on 4 x 64 tokens, CPU s: pinned {pinned['forward_s']:.3f}, MKL "
            f"CNR:COMPATIBLE {mkl['forward_s']:.3f}, native {native['forward_s']:.3f}",
        ),
        _scoring_line(pinned, mkl, native),
    ]


def _scoring_line(pinned: dict, mkl: dict, native: dict) -> BenchLine | str:
    name = "pinned/smollm2_scoring_vs_native"
    if "smollm2_missing" in pinned:
        return f"{name}: skipped ({SMOLLM2} is not installed: {pinned['smollm2_missing']})"
    return BenchLine(
        name,
        native["smollm2_scoring_s"] / pinned["smollm2_scoring_s"],
        f"{SMOLLM2} teacher-forced on 4 x 64 tokens, CPU s: pinned "
        f"{pinned['smollm2_scoring_s']:.3f}, MKL CNR:COMPATIBLE {mkl['smollm2_scoring_s']:.3f}, "
        f"native {native['smollm2_scoring_s']:.3f}; floor pinned "
        f"{_floor(pinned, 'smollm2_scoring')}, native {_floor(native, 'smollm2_scoring')}",
    )


if __name__ == "__main__":
    print(_TAG + json.dumps(_measure(sys.argv[1], sys.argv[2])), flush=True)
