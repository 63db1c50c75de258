"""``python -m kit bench mui``: MUI scoring speed as ratios in one process.

Two workloads, batches of 4 like the public code: ``[short]`` (4 x 64 tokens, short answers as in
ARC/MMLU) and ``[long]`` (4 x 256); for models over 5e8 parameters 4 x 16 and 4 x 64. Per workload:

- ``mui/score_vs_forward[...]``: time of :func:`kit.mui.metric.utilization` (scores of every
  position, per-token top-k, union) / time of the plain forward pass (logits) on the same tokens;
  the detail gives both as tokens/s and, on a GPU, the peak memory allocated. Target <= 1.3. Any
  ``kit.load_model`` name: ``random/llama-8b`` (real shape), ``twin/<arch>`` (the real-model
  loading path), a Hugging Face id or directory (``--device cuda``).
- ``mui/speedup_vs_public[...]``: time of a faithful re-implementation of the public MUI-Eval
  scoring (``get_neuron.py``: batches of 4; activations at each layer's ``mlp.act_fn``,
  :func:`kit.mui.scores.act_fn_site`; per batch and layer the full ``d_mlp x vocab``
  projection ``W_out @ W_U``; a Python loop appending every response token's scores; per
  sample and layer a top-2000 over the flattened response with one ``.item()`` per kept entry)
  / time of :func:`kit.mui.metric.utilization` on the same tokens. Target >= 50. The ``d_mlp x
  vocab`` projection is timed on a slice of the vocabulary and scaled to the full vocabulary (the
  detail string says by how much); everything else of the public algorithm runs in full.
  The public cost is dominated by that projection, a fixed cost per batch, so the ratio is
  about ``d_mlp * vocab / (forward FLOPs per token * tokens per batch)``: it falls as
  responses get longer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from kit.core.bench import DEFAULT_MODEL, BenchLine
from kit.models import tl
from kit.mui.scores import act_fn_site

if TYPE_CHECKING:
    from kit.models.tl import HookedModel


def interleaved_medians(a, b, repeat: int, device: str = "cpu") -> tuple[float, float]:
    """Median seconds of ``a()`` and ``b()`` timed alternately (after one warm-up each), so a
    shared machine's changing load hits both sides alike."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    times: tuple[list[float], list[float]] = ([], [])
    a()  # one warm-up each
    b()
    for _ in range(repeat):
        for fn, out in ((a, times[0]), (b, times[1])):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            out.append(time.perf_counter() - t0)
    return float(np.median(times[0])), float(np.median(times[1]))


PUBLIC_BATCH = 4
"""``--batch_size`` default of the public get_neuron.py."""
PUBLIC_TOPK = 2000
"""Entries the public code keeps per sample and layer (``top_k = min(2000, total_neurons)``)."""


def _seq_lens(model) -> dict[str, int]:
    """Sequence lengths (batch of 4) for a short-answer and a long-response workload, sized so
    one plain forward takes a second or two on one CPU thread."""
    n_params = sum(p.numel() for p in model.parameters())
    lens = {"short": 16, "long": 64} if n_params > 5e8 else {"short": 64, "long": 256}
    # zoo models have short contexts (64 in the micro world): never exceed it
    n_ctx = model.cfg.n_ctx
    if lens["long"] > n_ctx:
        lens = {"short": max(2, n_ctx // 4), "long": n_ctx}
    return lens


def throughput(n_tokens: int, t_ours: float, t_fwd: float, device: str) -> str:
    """``"<scored> vs <forward> tokens/s"`` and, on a GPU, the peak memory allocated since the last
    reset."""
    text = f"{n_tokens / t_ours:,.0f} vs {n_tokens / t_fwd:,.0f} tokens/s"
    if device.startswith("cuda"):
        text += f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB"
    return text


def public_algorithm(
    model, tokens: torch.Tensor, response_mask: torch.Tensor, proj_cols: int
) -> float:
    """Run the public scoring loop once; returns seconds spent OUTSIDE the projection matmul
    plus the sliced projection time, and stores the per-layer sliced projection time on the
    function (``public_algorithm.t_proj_slice``) for scaling. Target ids are taken modulo
    ``proj_cols`` so the sliced projection can be gathered from (timing stand-in only)."""
    L = model.cfg.n_layers
    site, act_fn = act_fn_site(model)  # the public code hooks mlp.act_fn
    t0 = time.perf_counter()
    t_proj = 0.0
    W_U = tl.unembed(model)[:, :proj_cols].float()
    for start in range(0, tokens.shape[0], PUBLIC_BATCH):
        toks = tokens[start : start + PUBLIC_BATCH]
        mask = response_mask[start : start + PUBLIC_BATCH]
        with torch.no_grad():
            _, cache = tl.run_with_cache(model, toks, lambda n: n.endswith(f"mlp.{site}"))
        b_idx, p_idx = mask.nonzero(as_tuple=True)
        ids = toks[b_idx, p_idx] % proj_cols  # the public code gathers the token AT p (off by one)
        B = toks.shape[0]
        scores = [[[] for _ in range(B)] for _ in range(L)]
        acts_kept = [[[] for _ in range(B)] for _ in range(L)]
        for layer in range(L):
            tp = time.perf_counter()
            projection = tl.mlp_out(model, layer).float() @ W_U  # d_mlp x vocab (sliced)
            t_proj += time.perf_counter() - tp
            act = act_fn(cache[f"blocks.{layer}.mlp.{site}"][b_idx, p_idx, :])  # mlp.act_fn's
            prob = act * projection[:, ids].T
            for idx, b in enumerate(b_idx):
                scores[layer][int(b.item())].append(prob[idx])
                acts_kept[layer][int(b.item())].append(act[idx])
        for i in range(B):
            for layer in range(L):
                if not scores[layer][i]:
                    continue
                for rows in (scores[layer][i], acts_kept[layer][i]):
                    flat = torch.stack(rows).flatten()
                    vals, ind = flat.topk(min(PUBLIC_TOPK, flat.numel()))
                    width = rows[0].numel()
                    kept = [
                        {"layer": layer, "position": p, "neuron": n, "score": vals[j].item()}
                        for j, (p, n) in enumerate(
                            zip((ind // width).tolist(), (ind % width).tolist())
                        )
                    ]
                    del kept
    public_algorithm.t_proj_slice = t_proj / (L * -(-tokens.shape[0] // PUBLIC_BATCH))
    return time.perf_counter() - t0


def run(
    model: str = DEFAULT_MODEL, device: str = "cpu", dtype: str | None = None
) -> list[BenchLine]:
    from kit.models.load import load_model
    from kit.mui import metric as mui

    if device == "cpu":
        torch.set_num_threads(1)
    m = cast("HookedModel", load_model(model, device=device, dtype=dtype))  # an LM here
    model = model + (f" ({dtype})" if dtype else "")
    vocab, L = m.cfg.d_vocab, m.cfg.n_layers
    assert m.cfg.d_mlp is not None  # MUI scores MLP neurons
    cols = min(vocab, 4096 if m.cfg.d_mlp * m.cfg.d_model < 1e7 else 1024)
    lines = []
    for label, seq in _seq_lens(m).items():
        torch.manual_seed(0)
        batch = PUBLIC_BATCH
        tokens = torch.randint(4, vocab, (batch, seq), device=device)
        resp = torch.zeros(batch, seq, dtype=torch.bool, device=device)
        resp[:, seq // 4 :] = True  # prompt quarter, response three quarters

        def forward():
            with torch.no_grad():
                m(tokens, return_type="logits")

        def ours():
            mui.utilization(m, tokens, resp, batch_size=batch)

        # keeps the default run near two minutes on one CPU thread
        repeat = 3 if label == "short" else 2
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        t_fwd, t_ours = interleaved_medians(forward, ours, repeat, device)
        lines.append(
            BenchLine(
                f"mui/score_vs_forward[{label}]",
                t_ours / t_fwd,
                f"utilization(score, topk) / plain forward, {model} {batch}x{seq} tokens on "
                f"{device}: {t_ours:.3f}s vs {t_fwd:.3f}s (medians of {repeat}, timed "
                f"alternately); {throughput(batch * seq, t_ours, t_fwd, device)}; target <= 1.3",
            )
        )
        t_run = public_algorithm(m, tokens, resp, cols)
        t_slice = public_algorithm.t_proj_slice
        n_batches = -(-batch // PUBLIC_BATCH)
        t_public = t_run + n_batches * L * t_slice * (vocab / cols - 1)
        lines.append(
            BenchLine(
                f"mui/speedup_vs_public[{label}]",
                t_public / t_ours,
                f"public MUI-Eval scoring (re-implemented) / ours on {model} {batch}x{seq}: "
                f"{t_public:.2f}s vs {t_ours:.3f}s; public run in full except its d_mlp x vocab "
                f"projection, timed on {cols} of {vocab} vocab columns ({t_slice:.3f}s per layer "
                f"per batch) and scaled x{vocab / cols:.1f}; target >= 50"
                + (
                    ""
                    if label == "short"
                    else "; the per-batch projection amortises over longer responses, so this "
                    "ratio falls with length"
                ),
            )
        )
    return lines
