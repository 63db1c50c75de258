"""``python -m kit bench patching``: dynamic patching speed, as ratios measured in one process.

1. ``patching/patched_vs_plain``: patched generation time / plain generation time of the same
   model on the same prompts (1.4% of the MLP neurons patched from a second model of the same
   shape). Target <= 2.2: a patched step is one step of each model plus an in-place overwrite.
2. ``patching/groups_vs_serial``: causal scoring of every adjacent-neuron group of one layer,
   batched (:func:`kit.shortcut.patching.group_patched_generate`, groups in batch rows, shared
   prompt prefix) vs one patched generation per group (the public code's loop). Target >= 10x.
3. ``patching/teacher_forced_vs_serial``: the same groups scored teacher-forced
   (:func:`kit.shortcut.patching.group_patched_logprobs`) vs the serial generations.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any, cast

import torch

from kit.core.bench import BenchLine, median_time
from kit.shortcut.patching import (
    generate,
    group_patched_generate,
    group_patched_logprobs,
    patched_generate,
)
from kit.shortcut.scores import PAPER_FRACTION, neuron_groups, random_neurons

if TYPE_CHECKING:
    from kit.models.tl import HookedModel


def _load(model: str, device: str, seed: int, dtype: str | None = None) -> HookedModel:
    from kit.models.load import load_model
    from kit.models.sources import form_of

    extra: dict[str, Any] = {"seed": seed} if form_of(model).random_init else {}
    return cast("HookedModel", load_model(model, device=device, dtype=dtype, **extra))


def run(
    model: str = "random/gpt2-small",
    device: str = "cpu",
    n_prompts: int = 4,
    prompt_len: int = 12,
    max_new_tokens: int = 3,
    group_size: int | None = None,
    layer: int | None = None,
    rounds: int = 4,
    dtype: str | None = None,
) -> list[BenchLine]:
    """Time the three workloads on ``model`` (a second model of the same shape patches it).

    ``group_size`` defaults to d_mlp / 16 (16 groups in the layer, e.g. 192 for GPT-2 small;
    the paper's 512 on 11008-wide LLaMA layers gives 21); ``layer`` defaults to the middle one.
    """
    if device == "cpu":
        torch.set_num_threads(1)  # shared 2-core machines: 2 OpenMP threads spin and run far slower
    m = _load(model, device, seed=0, dtype=dtype)
    from kit.models.sources import form_of

    if form_of(model).random_init:
        base = _load(model, device, seed=1, dtype=dtype)
    else:  # a real model patched by a perturbed copy of itself: same architecture, different values
        import copy

        base = copy.deepcopy(m)
        with torch.no_grad():
            for p in base.parameters():
                p.mul_(1.01)
    cfg = m.cfg
    assert cfg.d_mlp is not None  # patching needs MLP neurons
    model = model + (f" ({dtype})" if dtype else "")
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(10, cfg.d_vocab, (n_prompts, prompt_len), generator=g).to(device)
    # ragged, right-padded
    lengths = torch.tensor([prompt_len - (i % 4) for i in range(n_prompts)], device=device)
    n_patch = max(1, round(PAPER_FRACTION * cfg.n_layers * cfg.d_mlp))
    neurons = random_neurons(cfg.n_layers, cfg.d_mlp, n_patch, seed=0)
    lines = []

    # Interleaved rounds: on a shared machine the load drifts, and timing one side after the
    # other would put the drift into the ratio.
    _sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def timed(fn) -> float:
        _sync()
        t0 = time.perf_counter()
        fn()
        _sync()
        return time.perf_counter() - t0

    def plain_fn():
        return generate(m, tokens, max_new_tokens, lengths=lengths)

    def patch_fn():
        return patched_generate(m, base, tokens, neurons, max_new_tokens, lengths=lengths)

    plain_fn()  # warm-up
    patch_fn()
    pairs = [(timed(plain_fn), timed(patch_fn)) for _ in range(rounds)]
    t_plain = statistics.median(p for p, _ in pairs)
    t_patch = statistics.median(q for _, q in pairs)
    ratio = statistics.median(q / p for p, q in pairs)
    lines.append(
        BenchLine(
            "patching/patched_vs_plain",
            ratio,
            f"patched/plain generation time (median of {rounds} interleaved rounds), target <= "
            f"2.2; {model}, {n_prompts} prompts x {prompt_len} tokens, {max_new_tokens} new "
            f"tokens, {n_patch} neurons patched; plain {t_plain:.3f}s, patched {t_patch:.3f}s",
        )
    )

    group_size = group_size or max(1, cfg.d_mlp // 16)
    layer = cfg.n_layers // 2 if layer is None else layer
    groups = neuron_groups(cfg.n_layers, cfg.d_mlp, group_size, layers=[layer])

    # The serial loop costs the same for every group (same prompts, same work): each round times
    # the batched scoring of all groups and the serial generation of one group, interleaved;
    # serial time = median per-group time x number of groups. Keeps the default run ~2 minutes.
    def batched_fn():
        return group_patched_generate(m, base, tokens, groups, max_new_tokens, lengths=lengths)

    batched_fn()  # warm-up
    rounds_g = [
        (
            timed(batched_fn),
            timed(
                lambda g=groups[r % len(groups)]: patched_generate(
                    m, base, tokens, g, max_new_tokens, lengths=lengths
                )
            ),
        )
        for r in range(rounds)
    ]
    t_group = statistics.median(b for b, _ in rounds_g)
    t_serial = statistics.median(s for _, s in rounds_g) * len(groups)
    lines.append(
        BenchLine(
            "patching/groups_vs_serial",
            t_serial / t_group,
            f"serial/batched causal-scoring generation, target >= 10; {len(groups)} groups of "
            f"{group_size} in layer {layer} of {cfg.n_layers}; serial {t_serial:.2f}s (median "
            f"per-group time x {len(groups)}), batched {t_group:.2f}s ({rounds} interleaved "
            "rounds)",
        )
    )
    targets = torch.randint(10, cfg.d_vocab, (n_prompts,), generator=g).to(device)
    t_tf = median_time(
        lambda: group_patched_logprobs(m, base, tokens, lengths - 1, targets, groups),
        repeat=rounds,
        device=device,
    )
    lines.append(
        BenchLine(
            "patching/teacher_forced_vs_serial",
            t_serial / t_tf,
            f"serial generation / teacher-forced batched scoring of the same {len(groups)} groups; "
            f"teacher-forced {t_tf:.2f}s",
        )
    )
    return lines
