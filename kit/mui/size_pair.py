"""The Utility Law within one model family: does the larger of two sizes score higher with a lower
MUI (seed 000 §2, Fig. 3: MUI falls as performance rises)?

Two models of one family (Qwen2.5-Coder-0.5B- and 1.5B-Instruct) answer the same items of each
benchmark; each grid cell carries bootstrap replicates of its performance and MUI drawn with one
item-index matrix (:func:`item_boot_indices`: the same seed and item count give the same draws for
every model), so replicate ``b`` of both models resamples the same items and the difference is a
paired bootstrap over items. A dataset's MUI is a union over items: a resample with repeats has
fewer distinct items and a smaller union, so the MUI replicates are centred on the observed value
(their mean shift removed) before the percentile interval is read; performance replicates (a mean
over items, unbiased) are read as they are: centring them would move an interval's edge off a
difference of exactly 0 that a third of the resamples give at n = 6.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kit.core.claims import ALPHA, Claim, claim

PAPER = "000"
SECTION = "§2, Fig. 3 (within one family)"
N_BOOT = 1000


def item_boot_indices(n: int, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """``[n_boot, n]`` item indices drawn with replacement: the same for every model of a grid
    (same ``n`` and ``seed``), so replicates pair across models."""
    if n < 2:
        raise ValueError(f"a bootstrap over items needs n >= 2 items, got n={n}")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def cell_replicates(
    correct: Sequence[bool], key_neurons: Sequence[Sequence[int]], n_neurons: int, idx: np.ndarray
) -> tuple[list[float], list[float]]:
    """Bootstrap replicates of one cell's performance (% correct) and MUI (% of ``n_neurons`` =
    n_layers x d_mlp in the union of the resampled items' key neurons), one per row of ``idx``."""
    correct_a = np.asarray(correct, dtype=float)
    if len(correct_a) != len(key_neurons) or idx.shape[1] != len(correct_a):
        raise ValueError(
            f"correct ({len(correct_a)}), key_neurons ({len(key_neurons)}) and the index matrix's "
            f"items ({idx.shape[1]}) must count the same items"
        )
    sets = [set(k) for k in key_neurons]
    perf = [float(100 * correct_a[row].mean()) for row in idx]
    mui = [
        100.0 * len(set().union(*(sets[i] for i in set(row.tolist())))) / n_neurons for row in idx
    ]
    return perf, mui


def _cells(grid: Sequence[Mapping[str, Any]], model: str) -> dict[str, Mapping[str, Any]]:
    return {str(r["task"]): r for r in grid if r["model"] == model}


def _centred_interval(diffs: np.ndarray, observed: float) -> tuple[float, float]:
    """Percentile interval of the replicate differences, shifted so their mean is ``observed``."""
    shifted = diffs - diffs.mean() + observed
    return float(np.quantile(shifted, ALPHA / 2)), float(np.quantile(shifted, 1 - ALPHA / 2))


def size_pair_claims(
    grid: Sequence[Mapping[str, Any]], small: str, large: str, rests_on: str = ""
) -> list[Claim]:
    """Two claims on the pair (``small``, ``large``) from the law grid's records (``tiny_grid``:
    model, task, performance, mui, ``item_ids``, ``perf_boot``, ``mui_boot``), mean over the
    benchmarks both answered:

    - ``pair.larger_scores_higher``: performance(large) - performance(small) > 0 (points);
    - ``pair.larger_lower_mui``: MUI(large) - MUI(small) < 0 (MUI points), the law's prediction
      for the model that scores higher.

    Not testable when a model has no cell, or the cells lack replicates (a tiny-world grid) or were
    asked different items."""
    rests = rests_on or f"{small} and {large}: their own greedy answers to the same items"
    a, b = _cells(grid, small), _cells(grid, large)
    tasks = sorted(set(a) & set(b))
    cause = None
    if not tasks:
        cause = f"no benchmark answered by both {small} and {large}"
    elif any("mui_boot" not in a[t] or "mui_boot" not in b[t] for t in tasks):
        cause = "the grid has no bootstrap replicates (only a Hugging Face model's cells have them)"
    elif any(list(a[t]["item_ids"]) != list(b[t]["item_ids"]) for t in tasks):
        cause = "the two models were asked different items"
    if cause:
        return [
            claim(PAPER, SECTION, cid, text, None, not_testable=cause, rests_on=rests)
            for cid, text in (
                ("pair.larger_scores_higher", f"{large} scores higher than {small}"),
                ("pair.larger_lower_mui", f"{large} has a lower MUI than {small}"),
            )
        ]
    how = (
        f"paired bootstrap over items ({len(a[tasks[0]]['mui_boot'])} replicates, the same item "
        f"draws for both models), mean over {len(tasks)} benchmark(s) ({', '.join(tasks)})"
    )
    out = []
    for cid, col, direction, text, unit in (
        (
            "pair.larger_scores_higher",
            "performance",
            "greater",
            f"Within one family, the larger model scores higher: performance of {large} minus "
            f"{small} on the same items",
            "points of accuracy",
        ),
        (
            "pair.larger_lower_mui",
            "mui",
            "less",
            f"Within one family, the larger model uses a smaller share of its neurons: MUI of "
            f"{large} minus {small} on their own answers to the same items",
            "MUI points",
        ),
    ):
        observed = float(np.mean([float(b[t][col]) - float(a[t][col]) for t in tasks]))
        boot = "perf_boot" if col == "performance" else "mui_boot"
        diffs = np.mean(
            [np.asarray(b[t][boot], float) - np.asarray(a[t][boot], float) for t in tasks], axis=0
        )
        # performance replicates are unbiased (a mean over items): their plain percentiles; only
        # MUI's union shrinks under a resample with repeats, so only its replicates are centred
        ci = (
            _centred_interval(diffs, observed)
            if col == "mui"
            else (float(np.quantile(diffs, ALPHA / 2)), float(np.quantile(diffs, 1 - ALPHA / 2)))
        )
        out.append(
            claim(
                PAPER,
                SECTION,
                cid,
                f"{text} ({unit})",
                observed,
                ci=ci,
                null=0.0,
                null_how="no difference between the sizes",
                direction=direction,
                paper_value="higher performance with lower MUI (the law's slope)",
                interval_how=how + ("; MUI replicates centred" if col == "mui" else ""),
                rests_on=rests,
            )
        )
    return out
