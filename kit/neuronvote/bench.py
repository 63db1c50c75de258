"""``python -m kit bench neuronvote``: time every ranking method on all concepts of one layer.

Lines printed (ratios measured in this process):

- ``neuronvote/<method>_vs_probeless``: seconds of the method over all concepts / Probeless's;
- ``neuronvote/gaussian_naive_vs_fast``: the public toolkit's greedy loop (refactorise each
  candidate subset: O(d (k^3 + N k^2)) per step) over ours (rank-one updates: O(C (N + k) d) per
  step) for the same first greedy steps on the same data, rankings checked equal;
- ``neuronvote/neurox_probe_torch_vs_numpy``: NeuroX's probe training (torch autograd and
  ``torch.optim.Adam``, one step per 32-word mini-batch) over the same Adam steps written out
  in numpy, on the same data, weights checked equal;
- ``neuronvote/all_methods_vs_forward``: all methods on all concepts / the encoder forward pass
  that produced the word vectors;
- ``neuronvote/reseed_scores_fresh_vs_reused``: the score-ranked methods (Probeless, IoU, ...)
  under a study's reseeds with their scores computed again over kept and only re-ranked
  (``rank_all(..., scores=)``, what a unit does), rankings checked equal;
- ``neuronvote/random_draws_naive_vs_ours``: Random's further draws scored by AvgOverlap and
  NeuronVote over every method per draw (the voters' sets and Borda consensus formed again each
  time) over the consensus formed once, numbers checked equal.

``model``: ``minilm`` (default) or another encoder (real UD EWT POS concepts at its middle
layer), or any other model name (``random/gpt2-small``, ``random/llama-1b``...), for which
synthetic word vectors of that model's width are used (no tokenizer is needed for timing).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kit.core.bench import BenchLine, median_time
from kit.neuronvote import methods as nv

BENCH_TAGS = ("NN", "IN", "DT", "JJ", "NNP", "RB", "VB", "CC")
MAX_PER_CLASS = 150
GAUSSIAN_STEPS = 100
NAIVE_STEPS = 8


def _encoder_data(model: str, device: str):
    from kit.models.encoders import load_encoder
    from kit.neuronvote import concepts as concepts
    from kit.neuronvote.study import first_middle_last

    sentences = concepts.load_sentences("ud_ewt")
    tasks = concepts.build_concept_tasks(sentences, BENCH_TAGS, max_per_class=MAX_PER_CLASS, seed=0)
    sentences, tasks = concepts.compact(sentences, tasks)
    enc = load_encoder(model, device=device)
    layer = first_middle_last(enc.n_layers)[1]
    site = f"blocks.{layer}.hook_resid_post"
    words = [list(s.words) for s in sentences]
    t0 = time.perf_counter()
    vectors = enc.word_activations(words, site).numpy()
    forward_s = time.perf_counter() - t0
    data = [
        (t.concept, *(lambda a: (a["x_train"], a["y_train"]))(t.arrays(vectors))) for t in tasks
    ]
    return data, forward_s, f"{model} {site}, {len(tasks)} POS concepts"


def _synthetic_data(model: str):
    from kit.models.load import RANDOM_SHAPES
    from kit.models.sources import form_of

    form = form_of(model)
    shape = form.rest(model) if form.random_init else model
    d = RANDOM_SHAPES[shape]["d_model"] if shape in RANDOM_SHAPES else 768
    rng = np.random.default_rng(0)
    data = []
    for i, tag in enumerate(BENCH_TAGS[:4]):
        n = 2 * MAX_PER_CLASS * 7 // 10
        x = rng.normal(size=(n, d))
        y = np.array([0, 1] * (n // 2))
        x[:, (7 * i) % d] += 2.0 * y
        data.append((tag, x, y))
    return data, None, f"synthetic vectors, width {d} (as {model}), {len(data)} concepts"


def run(model: str = "minilm", device: str = "cpu") -> list[BenchLine]:
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):  # single-threaded BLAS: comparable ratios on a shared CPU
        return _run(model, device)


def _run(model: str, device: str) -> list[BenchLine]:
    from kit.models.load import ENCODERS
    from kit.models.sources import form_of

    form = form_of(model)
    is_encoder = model in ENCODERS or not (form.random_init or form.world_member)
    try:
        data, forward_s, what = (
            _encoder_data(model, device) if is_encoder else _synthetic_data(model)
        )
    except OSError:  # a hub encoder without network: time on synthetic vectors instead
        data, forward_s, what = _synthetic_data(model)
    n, d = data[0][1].shape
    kwargs: dict[str, Any] = dict(gaussian_max_neurons=GAUSSIAN_STEPS)
    times = {}
    for m in nv.METHODS:
        times[m] = median_time(
            lambda m=m: [nv.rank_neurons(x, y, m, **kwargs) for _, x, y in data], repeat=1, warmup=0
        )
    lines = []
    base = max(times["probeless"], 1e-9)
    for m in nv.METHODS:
        if m == "probeless":
            continue
        extra = (
            f", Gaussian greedy steps={GAUSSIAN_STEPS}, O(C (N+k) d) per step"
            if m == "gaussian"
            else ""
        )
        lines.append(
            BenchLine(
                f"neuronvote/{m}_vs_probeless",
                times[m] / base,
                f"{nv.DISPLAY[m]} {times[m]:.3f}s vs Probeless {times['probeless']:.4f}s over "
                f"{what}, N={n} train words, d={d}{extra}",
            )
        )
    _, x, y = data[0]
    fast_s = median_time(
        lambda: nv.gaussian_ranking(x, y, max_neurons=NAIVE_STEPS), repeat=1, warmup=0
    )
    t0 = time.perf_counter()
    naive = nv.gaussian_ranking_naive(x, y, max_neurons=NAIVE_STEPS)
    naive_s = time.perf_counter() - t0
    same = bool(
        np.array_equal(naive, nv.gaussian_ranking(x, y, max_neurons=NAIVE_STEPS)[:NAIVE_STEPS])
    )
    lines.append(
        BenchLine(
            "neuronvote/gaussian_naive_vs_fast",
            naive_s / max(fast_s, 1e-9),
            f"first {NAIVE_STEPS} greedy steps, N={n}, d={d}: naive {naive_s:.2f}s "
            f"(O(d (k^3 + N k^2)) per step) vs rank-one {fast_s:.3f}s (O(C (N+k) d) per step); "
            f"same neurons: {same}",
        )
    )
    t0 = time.perf_counter()
    ref = nv.neurox_probe_weights(x, y, 0.01, 0.01, seed=0, engine="torch")
    torch_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fast = nv.neurox_probe_weights(x, y, 0.01, 0.01, seed=0)
    numpy_s = time.perf_counter() - t0
    lines.append(
        BenchLine(
            "neuronvote/neurox_probe_torch_vs_numpy",
            torch_s / max(numpy_s, 1e-9),
            f"NeuroX LCA probe, 10 epochs of 32-word batches, N={n}, d={d}: torch autograd "
            f"{torch_s:.2f}s vs numpy Adam {numpy_s:.3f}s; max |dW| "
            f"{float(np.abs(ref - fast).max()):.1e}",
        )
    )
    lines += _reuse_lines(x, y, n, d)
    total = sum(times.values())
    if forward_s:
        lines.append(
            BenchLine(
                "neuronvote/all_methods_vs_forward",
                total / forward_s,
                f"all {len(nv.METHODS)} methods on all concepts {total:.2f}s vs the encoder "
                f"forward for their words {forward_s:.2f}s ({what})",
            )
        )
    return lines


def _reuse_lines(x, y, n: int, d: int) -> list[BenchLine]:
    """What a unit no longer recomputes: the seed-free scores under each reseed, and the voters'
    consensus under each of Random's draws (each checked to give the same numbers)."""
    from kit.neuronvote import units as nv_units

    scored = [m for m in nv.METHODS if "scores" in nv.RANKING_METHODS[m].extra]
    seeds = range(1, 4)
    fresh_s = median_time(
        lambda: [nv.rank_all(x, y, scored, seed=s, definitions="neurox") for s in seeds], repeat=3
    )
    memo: dict = {}
    nv.rank_all(x, y, scored, seed=0, definitions="neurox", scores=memo)  # the study seed's pass
    reused_s = median_time(
        lambda: [
            nv.rank_all(x, y, scored, seed=s, definitions="neurox", scores=memo) for s in seeds
        ],
        repeat=3,
    )
    same = all(
        np.array_equal(a, b)
        for s in seeds
        for a, b in zip(
            nv.rank_all(x, y, scored, seed=s, definitions="neurox").values(),
            nv.rank_all(x, y, scored, seed=s, definitions="neurox", scores=memo).values(),
        )
    )
    voters = list(nv.PAPER_METHODS)
    rng = np.random.default_rng(0)
    rankings = {m: rng.permutation(d).tolist() for m in voters}
    draws = [rng.permutation(d).tolist() for _ in range(19)]
    s_top = min(30, d)

    def naive():
        return [
            [fn({**rankings, "random": r}, s_top, voters=voters)["random"] for r in draws]
            for fn in (nv.avg_overlap, nv.neuron_vote)
        ]

    def ours():
        return [
            nv_units._draw_scores(metric, rankings, voters, s_top, draws)
            for metric in ("AvgOverlap", "NeuronVote")
        ]

    naive_s, ours_s = median_time(naive), median_time(ours)
    return [
        BenchLine(
            "neuronvote/reseed_scores_fresh_vs_reused",
            fresh_s / max(reused_s, 1e-9),
            f"{', '.join(scored)} (neurox) ranked under {len(seeds)} reseeds, N={n}, d={d}: "
            f"scores computed again {fresh_s:.3f}s vs kept and re-ranked {reused_s:.4f}s; "
            f"same rankings: {same}",
        ),
        BenchLine(
            "neuronvote/random_draws_naive_vs_ours",
            naive_s / max(ours_s, 1e-9),
            f"AvgOverlap and NeuronVote of {len(draws)} Random draws against {len(voters)} "
            f"voters, top-{s_top} of d={d}: every method scored per draw {naive_s:.4f}s vs the "
            f"voters' sets and Borda consensus formed once {ours_s:.4f}s; same numbers: "
            f"{naive() == ours()}",
        ),
    ]
