"""``python -m kit bench cg``: Competency Gaps concept activations, speed and memory.

Lines printed (ratios measured in this process):

- ``cg/sae_vs_forward``: SAE encoding + per-item aggregation into sparse rows (eq. 1), divided
  by the plain forward pass that produced the activations, on the same tokens (target <= 1.5);
- ``cg/naive_vs_ours``: the naive reference (a Python loop over items and tokens, one SAE call
  per token, dense items x d_sae rows) divided by ours, per item;
- ``cg/memory_10k``: peak resident memory added while aggregating 10,000 items x 64 tokens under
  a 16,384-concept TopK SAE (k=32) into CSR, in MiB (ratio = peak / 1 GiB; target < 1). The
  per-token top-k features are drawn at random (uniform indices: the least sparse case) instead
  of running an encoder, so the number isolates the aggregation's memory; the encoder's own
  memory is the model's business.
"""

from __future__ import annotations

import gc
import resource
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from kit.cg.metrics import SparseRows, segment_mean
from kit.core.bench import BenchLine, median_time
from kit.models import tl

if TYPE_CHECKING:
    from kit.models.tl import HookedModel

BENCH_WIDTH = 16_384
BENCH_K = 32


def synthetic_sae(
    d_in: int, d_sae: int = BENCH_WIDTH, k: int = BENCH_K, device: str = "cpu", seed: int = 0
):
    """A sae_lens TopK SAE with seeded random weights (the shape of a real 16k dictionary)."""
    from sae_lens import TopKSAE, TopKSAEConfig

    torch.manual_seed(seed)
    sae = TopKSAE(TopKSAEConfig(d_in=d_in, d_sae=d_sae, k=k, device=device))
    with torch.no_grad():
        for p in sae.parameters():
            if p.ndim == 2:
                p.normal_(0, 1 / np.sqrt(d_in))
    return sae.eval()


def _forward_fn(model: str, device: str):
    """(forward() -> per-item token activations, d_model, description)."""
    if model in ("minilm", "sentence-transformers/all-MiniLM-L6-v2"):
        from kit.models.encoders import load_encoder

        enc = load_encoder("minilm", device=device)
        try:
            from kit.data.benchmarks import load_benchmark

            texts = [it.prompt for it in load_benchmark("arc_challenge", "test")[:32]]
        except Exception:  # no data directory: any English text will do for timing
            texts = [("the quick brown fox jumps over the lazy dog " * 12).strip()] * 32
        site = "blocks.4.hook_resid_post"
        return (
            (lambda: enc.token_activations(texts, site, batch_size=32, max_length=128)),
            enc.d_model,
            f"minilm {site}, 32 ARC prompts",
        )
    from kit.models.load import load_model

    m = cast("HookedModel", load_model(model, device=device))  # an LM here
    site = f"blocks.{m.cfg.n_layers // 2}.hook_resid_post"
    n, length = (2, 64) if m.cfg.d_model >= 2048 else (8, 64)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, m.cfg.d_vocab, (n, length), generator=g).to(device)

    @torch.inference_mode()
    def fwd():
        _, cache = tl.run_with_cache(m, tokens, [site])
        return list(cache[site].float().cpu())

    return fwd, m.cfg.d_model, f"{model} {site}, {n}x{length} random tokens"


def _ours(sae, token_acts):
    from kit.cg.saes import encode_items

    rows = SparseRows(sae.cfg.d_sae)
    rows.add(encode_items(token_acts, {"s": sae})["s"])
    return rows.to_csr()


@torch.inference_mode()
def _naive(sae, token_acts):
    out = np.zeros((len(token_acts), sae.cfg.d_sae), dtype=np.float32)
    for i, acts in enumerate(token_acts):
        for tok in acts:
            out[i] += sae.encode(tok[None])[0].numpy()
        out[i] /= len(acts)
    return out


def _rss_peak_reset() -> bool:
    """Reset the kernel's peak-RSS counter for this process (Linux); False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _vm(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def memory_10k(
    n_items: int = 10_000,
    n_tokens: int = 64,
    d_sae: int = BENCH_WIDTH,
    k: int = BENCH_K,
    batch_items: int = 32,
    seed: int = 0,
) -> tuple[int, int]:
    """(peak bytes added, CSR bytes) aggregating ``n_items`` items into sparse rows (see module
    doc)."""
    gc.collect()
    reset = _rss_peak_reset()
    base = _vm("VmRSS")
    start_peak = base if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    g = torch.Generator().manual_seed(seed)
    rows = SparseRows(d_sae)
    for s in range(0, n_items, batch_items):
        b = min(batch_items, n_items - s)
        idx = torch.randint(0, d_sae, (b * n_tokens, k), generator=g)
        val = torch.rand(b * n_tokens, k, generator=g)
        feats = torch.zeros(b * n_tokens, d_sae).scatter_(1, idx, val)  # what a TopK encode returns
        rows.add(segment_mean(feats, [n_tokens] * b))
        del feats
    csr = rows.to_csr()
    peak = _vm("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    csr_bytes = csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
    return max(0, peak - start_peak), csr_bytes


def run(model: str = "minilm", device: str = "cpu") -> list[BenchLine]:
    torch.manual_seed(0)
    fwd, d_model, what = _forward_fn(model, device)
    sae = synthetic_sae(d_model, device=device)
    acts = fwd()
    n_tok = sum(len(a) for a in acts)
    t_fwd = median_time(fwd, repeat=3, device=device)
    t_ours = median_time(lambda: _ours(sae, acts), repeat=3, device=device)
    lines = [
        BenchLine(
            "cg/sae_vs_forward",
            t_ours / t_fwd,
            f"SAE {BENCH_WIDTH} (k={BENCH_K}) encode + aggregate {t_ours * 1e3:.0f} ms / forward "
            f"{t_fwd * 1e3:.0f} ms, {n_tok} tokens, {what}; target <= 1.5",
        )
    ]
    few = acts[:4]
    t0 = time.perf_counter()
    _naive(sae.cpu(), [a.cpu() for a in few])
    t_naive = (time.perf_counter() - t0) / len(few)
    sae.to(device)
    t_ours_item = median_time(lambda: _ours(sae, few), repeat=3, device=device) / len(few)
    lines.append(
        BenchLine(
            "cg/naive_vs_ours",
            t_naive / t_ours_item,
            f"per-token loop {t_naive * 1e3:.1f} ms/item vs ours {t_ours_item * 1e3:.2f} ms/item "
            f"({sum(len(a) for a in few)} tokens, {len(few)} items)",
        )
    )
    peak, csr_bytes = memory_10k()
    lines.append(
        BenchLine(
            "cg/memory_10k",
            peak / 2**30,
            f"peak +{peak / 2**20:.0f} MiB (CSR result {csr_bytes / 2**20:.0f} MiB) for 10,000 "
            f"items x 64 tokens, {BENCH_WIDTH} concepts, k={BENCH_K}; dense items x d_sae would be "
            f"{10_000 * BENCH_WIDTH * 4 / 2**20:.0f} MiB, tokens x d_sae "
            f"{640_000 * BENCH_WIDTH * 4 / 2**30:.0f} GiB; target < 1 GiB",
        )
    )
    return lines
