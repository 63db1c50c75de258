"""Robustness of Competency Gaps' coverage (seed 002, section 4.2.3): covered-concept sets and their
Jaccard overlap across benchmarks (Figure 14), :func:`dropout_robustness` (reruns dropping a share
of each benchmark's items) and :func:`adversarial_removal` (removing the most salient items of the
best / worst concepts, median X_model shift).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from kit.cg.metrics import (
    EPSILON,
    Acts,
    _check_acts,
    _check_suite,
    _col_sums,
    chi_bench,
    x_bench,
    x_model,
)
from kit.core.stats import jaccard


def covered_sets(
    acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON
) -> dict[str, np.ndarray]:
    """Per benchmark, the boolean mask of covered (not missing: ``chi_bench >= eps``) concepts."""
    return {b: chi_bench(a) >= eps for b, a in acts_by_benchmark.items()}


def jaccard_overlap(acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON) -> pd.DataFrame:
    """Figure 14: benchmarks x benchmarks Jaccard similarity of their covered-concept sets."""
    sets = covered_sets(acts_by_benchmark, eps)
    names = list(sets)
    return pd.DataFrame(
        [[jaccard(sets[r], sets[c], empty=1.0) for c in names] for r in names],
        index=names,
        columns=names,
    )


def _subset(acts_by_benchmark, scores_by_benchmark, keep: Mapping[str, np.ndarray]):
    acts = {b: a[keep[b]] for b, a in acts_by_benchmark.items()}
    scores = (
        None
        if scores_by_benchmark is None
        else {b: np.asarray(scores_by_benchmark[b])[keep[b]] for b in acts_by_benchmark}
    )
    return acts, scores


@dataclass
class DropoutRobustness:
    """Per-concept standard deviation of X_bench / X_model over reruns on random subsets."""

    n_reruns: int
    drop_frac: float
    std_x_bench: np.ndarray
    std_x_model: np.ndarray

    @property
    def mean_std_x_bench(self) -> float:
        return float(np.mean(self.std_x_bench))

    @property
    def mean_std_x_model(self) -> float:
        return (
            float(np.nanmean(self.std_x_model))
            if np.isfinite(self.std_x_model).any()
            else float("nan")
        )


def dropout_robustness(
    acts_by_benchmark: Mapping[str, Acts],
    scores_by_benchmark: Mapping[str, ArrayLike] | None,
    n_reruns: int = 100,
    drop_frac: float = 0.2,
    seed: int = 0,
) -> DropoutRobustness:
    """Section 4.2.3: rerun the analysis ``n_reruns`` times, each time dropping ``drop_frac`` of the
    items of every benchmark at random; the per-concept std (ddof=0) over reruns.

    X_model's std is taken over the reruns where it is defined for that concept.
    """
    if n_reruns < 2:
        raise ValueError(f"n_reruns={n_reruns}: need at least 2 reruns for a standard deviation")
    if not 0 < drop_frac < 1:
        raise ValueError(f"drop_frac={drop_frac}: must be in (0, 1)")
    rng = np.random.default_rng(seed)
    xb, xm = [], []
    for _ in range(n_reruns):
        keep = {}
        for b, a in acts_by_benchmark.items():
            n = a.shape[0]
            n_keep = max(1, int(round(n * (1 - drop_frac))))
            keep[b] = np.sort(rng.choice(n, n_keep, replace=False))
        acts, scores = _subset(acts_by_benchmark, scores_by_benchmark, keep)
        xb.append(x_bench(acts))
        if scores is not None:
            xm.append(x_model(acts, scores))
    std_xm = np.full(_check_suite(acts_by_benchmark), np.nan)
    if xm:
        stack = np.stack(xm)
        counts = (~np.isnan(stack)).sum(0)
        with warnings.catch_warnings():  # all-NaN columns (concept never defined) are expected
            warnings.simplefilter("ignore", RuntimeWarning)
            std_xm = np.where(counts >= 2, np.nanstd(stack, axis=0), np.nan)
    return DropoutRobustness(n_reruns, drop_frac, np.std(np.stack(xb), axis=0), std_xm)


def salient_items(
    acts_by_benchmark: Mapping[str, Acts], concepts: ArrayLike, n_items: int
) -> dict[str, np.ndarray]:
    """The ``n_items`` datapoints across all benchmarks most associated with ``concepts``.

    Saliency of item i = sum over the chosen concepts of its share of that concept's activation
    in its benchmark (``s~_ci / sum_i' s~_ci'``), so every concept counts once per benchmark,
    whatever its scale. Returns per benchmark a boolean mask of the items to remove.
    """
    concepts = np.asarray(concepts, dtype=int)
    pool = []
    for b, a in acts_by_benchmark.items():
        a = _check_acts(a)
        sub = a[:, concepts]
        totals = _col_sums(sub)
        inv = np.where(totals > 0, 1.0 / np.where(totals > 0, totals, 1), 0.0)
        sal = np.asarray(sub @ inv, dtype=np.float64).ravel()
        pool.extend((s, b, i) for i, s in enumerate(sal))
    pool.sort(key=lambda t: -t[0])
    remove = {b: np.zeros(a.shape[0], bool) for b, a in acts_by_benchmark.items()}
    for s, b, i in pool[:n_items]:
        if s > 0:
            remove[b][i] = True
    return remove


@dataclass
class AdversarialRemoval:
    """Median X_model shifts after removing the items most salient for the best/worst concepts."""

    n_concepts: int
    n_items: int
    repeats: int
    median_before: float
    shift_best: list[float] = field(default_factory=list)
    """Per repeat: median X_model after removing items of the best concepts, minus before."""
    shift_worst: list[float] = field(default_factory=list)
    removed_frac: float = 0.0

    @property
    def mean_shift_best_pct(self) -> float:
        return float(100 * np.mean(self.shift_best) / self.median_before)

    @property
    def mean_shift_worst_pct(self) -> float:
        return float(100 * np.mean(self.shift_worst) / self.median_before)


def adversarial_removal(
    acts_by_benchmark: Mapping[str, Acts],
    scores_by_benchmark: Mapping[str, ArrayLike],
    n_concepts: int = 100,
    n_items: int = 100,
    repeats: int = 10,
    subsample: float = 0.9,
    seed: int = 0,
) -> AdversarialRemoval:
    """Section 4.2.3's adversarial ablation.

    Each repeat draws a random ``subsample`` of every benchmark (the source of variation between
    repeats; the paper does not say what varied), ranks concepts by X_model on it, removes the
    ``n_items`` items most salient (:func:`salient_items`) for the ``n_concepts`` best concepts
    and, separately, for the worst ones, and records the shift of the median X_model. Removing
    the best concepts' items should lower the median, removing the worst ones' raise it.
    """
    rng = np.random.default_rng(seed)
    base = x_model(acts_by_benchmark, scores_by_benchmark)
    result = AdversarialRemoval(n_concepts, n_items, repeats, float(np.nanmedian(base)))
    total = sum(a.shape[0] for a in acts_by_benchmark.values())
    for _ in range(repeats):
        keep = {
            b: np.sort(
                rng.choice(a.shape[0], max(1, int(round(a.shape[0] * subsample))), replace=False)
            )
            for b, a in acts_by_benchmark.items()
        }
        acts, scores = _subset(acts_by_benchmark, scores_by_benchmark, keep)
        assert scores is not None  # scores_by_benchmark is given
        xm = x_model(acts, scores)
        med = float(np.nanmedian(xm))
        defined = np.flatnonzero(~np.isnan(xm))
        order = defined[np.argsort(xm[defined], kind="stable")]
        for which, concepts in (("worst", order[:n_concepts]), ("best", order[::-1][:n_concepts])):
            remove = salient_items(acts, concepts, n_items)
            kept = {b: ~remove[b] for b in acts}
            acts2, scores2 = _subset(acts, scores, kept)
            assert scores2 is not None
            shift = float(np.nanmedian(x_model(acts2, scores2))) - med
            getattr(result, f"shift_{which}").append(shift)
    result.removed_frac = n_items / max(1, total)
    return result
