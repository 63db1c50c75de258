"""Speed of the circuit audits, as ratios in one process (``python -m kit bench audits``).

- ``audits/head_patch_vs_forward``: one head's mean-ablation patch (hooked forward) vs the plain
  forward pass on the same batch (the floor is ~1: patching costs one forward per head);
- ``audits/edge_patch_vs_forward``: one edge patch (split q/k/v inputs) vs the plain forward;
- ``audits/mib_curve_naive_vs_ours``: the MIB curve recomputing m(N), m(empty) and every threshold's
  circuit afresh (the public sketch's loop) vs ours (both computed once, repeated head sets
  cached): > 1 means ours is faster;
- ``audits/random_circuit_nulls_naive_vs_ours``: EX1's random-circuit null with each draw's three
  passes (full, ablated, circuit only: :func:`psychophysics.circuit_logit_diffs`) vs ours (the full
  pass once, one ablated pass per draw), the d' values checked equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from kit.core.bench import BenchLine, median_time

from . import circuits, mib, psychophysics

if TYPE_CHECKING:
    from kit.models.tl import HookedModel

DEFAULT_MODEL = "random/gpt2-small"
N_NULL_DRAWS = 5


def _batch(model, n: int, seq: int, seed: int = 0) -> circuits.IOIBatch:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, model.cfg.d_vocab, (n, seq), generator=g)
    io, s = torch.randint(0, model.cfg.d_vocab, (2, n), generator=g)
    return circuits.IOIBatch(
        tokens, torch.full((n,), seq - 1), io, s, [str(i) for i in range(n)], [""] * n
    )


def _naive_curve(model, batch, means, edges, thresholds):
    # the sketch: per threshold, recompute the full and empty runs and the circuit run
    out = []
    for t in thresholds:
        n = max(1, int(t * len(edges)))
        heads = circuits.edges_to_heads(edges[:n])
        m_full = float(circuits.run_heads(model, batch, means).mean())
        m_empty = circuits.circuit_performance(model, batch, means, [])
        out.append(
            mib.faithfulness(
                circuits.circuit_performance(model, batch, means, heads), m_full, m_empty
            )
        )
    return out


def run(
    model: str = DEFAULT_MODEL, device: str = "cpu", n_prompts: int = 4, seq: int = 12
) -> list[BenchLine]:
    import kit

    if device == "cpu":
        torch.set_num_threads(1)  # shared CPUs: oversubscribed threads make timings noise
    m = cast("HookedModel", kit.load_model(model, device=device))  # an LM here
    batch = _batch(m, n_prompts, seq)
    means = circuits.head_means(m, batch)
    dev = next(m.parameters()).device

    t_fwd = median_time(lambda: m(batch.tokens.to(dev)), repeat=2, device=device)
    t_head = median_time(
        lambda: circuits.run_heads(m, batch, means, ablate=[(0, 0)]), repeat=2, device=device
    )
    pairs = circuits.graph_edges(m.cfg.n_layers, m.cfg.n_heads)
    sample = pairs[:: max(1, len(pairs) // 4)][:4]
    t_edges = median_time(
        lambda: circuits.edge_scores(m, batch, means, edges=sample),
        repeat=1,
        warmup=0,
        device=device,
    )
    # the edge run includes one clean cached forward; per edge it is (t - t_fwd) / len(sample)
    t_edge = max(t_edges - t_fwd, 1e-9) / len(sample)

    fake_edges = [circuits.Edge(a, b, float(-i)) for i, (a, b) in enumerate(pairs)]
    thresholds = (0.001, 0.01, 0.1, 0.5, 1.0)  # a subset keeps the default run short
    t_naive = median_time(
        lambda: _naive_curve(m, batch, means, fake_edges, thresholds),
        repeat=1,
        warmup=0,
        device=device,
    )
    t_ours = median_time(
        lambda: mib.faithfulness_curve(m, batch, means, fake_edges, thresholds),
        repeat=1,
        warmup=0,
        device=device,
    )
    shape = f"{model}, {n_prompts}x{seq} tokens, {len(pairs)} edges"
    t_nulls_naive, t_nulls_ours, same = _random_circuit_nulls(m, batch, means, device)
    return [
        BenchLine(
            "audits/random_circuit_nulls_naive_vs_ours",
            t_nulls_naive / t_nulls_ours,
            f"{N_NULL_DRAWS} random circuits' d': three passes each {t_nulls_naive:.2f} s vs the "
            f"full pass shared {t_nulls_ours:.2f} s; same d': {same}; {shape}",
        ),
        BenchLine(
            "audits/head_patch_vs_forward",
            t_head / t_fwd,
            f"one head mean-ablated {t_head * 1e3:.1f} ms vs forward {t_fwd * 1e3:.1f} ms; {shape}",
        ),
        BenchLine(
            "audits/edge_patch_vs_forward",
            t_edge / t_fwd,
            f"one edge patched {t_edge * 1e3:.1f} ms vs forward {t_fwd * 1e3:.1f} ms; {shape}",
        ),
        BenchLine(
            "audits/mib_curve_naive_vs_ours",
            t_naive / t_ours,
            f"naive {t_naive:.2f} s vs ours {t_ours:.2f} s over {len(thresholds)} thresholds; "
            f"{shape}",
        ),
    ]


def _random_circuit_nulls(m, batch, means, device: str) -> tuple[float, float, bool]:
    import numpy as np

    circuit = [(0, 0)]
    scales = [0.5, 1.0]

    def naive() -> list[float]:
        out = []
        for heads in psychophysics.random_circuits(m, circuit, N_NULL_DRAWS, seed=0):
            lds = psychophysics.circuit_logit_diffs(m, batch, means, heads)
            d = psychophysics.dprime_audit(lds["full"].numpy(), lds["ablated"].numpy())
            out.append(d.value)
        return out

    def ours() -> list[float]:
        ex1 = psychophysics.dprime_audit(np.ones(4), -np.ones(4))
        ex11 = psychophysics.weber_audit({"0.0": {"1.0": [1.0, 1.0]}}, scales)
        psychophysics.attach_random_circuit_nulls(
            m, batch, means, circuit, ex1, ex11, scales, [1.0], 0.05, n=0, n_dprime=N_NULL_DRAWS
        )
        return list(ex1.null_values)

    t_naive = median_time(naive, repeat=1, warmup=0, device=device)
    t_ours = median_time(ours, repeat=1, warmup=0, device=device)
    return t_naive, max(t_ours, 1e-9), naive() == ours()
