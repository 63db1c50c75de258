"""Our per-concept significance test of model gaps (not in seed 002): concept support, a
within-benchmark permutation test of each concept's chi_model, and Benjamini-Hochberg q-values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, cast

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike

from kit.cg.metrics import EPSILON, Acts, _check_acts, _check_suite, _col_sums, x_model


def concept_support(acts_by_benchmark: Mapping[str, Acts]) -> np.ndarray:
    """Per concept, how many items (over all benchmarks) activate it at all (``s~_ci > 0``)."""
    _check_suite(acts_by_benchmark)
    support = sum(
        np.asarray((_check_acts(a) > 0).sum(axis=0)).ravel().astype(np.int64)
        for a in acts_by_benchmark.values()
    )
    return cast(np.ndarray, support)  # a sum of arrays (one per benchmark)


def bh_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of ``p`` (NaN entries are not tests: they stay NaN and do not
    count): ``scipy.stats.false_discovery_control(method="bh")`` over the finite entries.

    ``q_(i) = min_{j >= i} p_(j) * m / j`` over the m finite p-values sorted increasingly, capped at
    1.
    """
    from scipy.stats import false_discovery_control

    p = np.asarray(p, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = false_discovery_control(p[ok], method="bh")
    return q


GAP_TEST_CLASSES = ("gap", "weak", "strong", "not significant", "too few items", "undefined")


@dataclass
class GapTest:
    """Per-concept test of X_model against the model's own accuracy (:func:`gap_test`)."""

    x_model: np.ndarray
    support: np.ndarray
    """Items (all benchmarks) that activate the concept."""
    null_mean: np.ndarray
    """Mean X_model under shuffled correctness (about the accuracy the concept's items would get by
    chance)."""
    p_low: np.ndarray
    """One-sided permutation p-value: X_model this low or lower by chance (NaN: not tested)."""
    p_high: np.ndarray
    q_low: np.ndarray
    """Benjamini-Hochberg q-values of ``p_low`` over the tested concepts."""
    q_high: np.ndarray
    n_perm: int
    min_support: int
    alpha: float

    def classes(self, eps: float = EPSILON) -> np.ndarray:
        """``gap``: X_model < eps and significantly low; ``weak``: significantly low but above eps;
        ``strong``: significantly high; ``not significant``; ``too few items`` (support below
        ``min_support``: not tested); ``undefined`` (no item activates it)."""
        out = np.full(self.x_model.shape, "not significant", dtype=object)
        out[self.support < self.min_support] = "too few items"
        out[np.isnan(self.x_model)] = "undefined"
        low = self.q_low <= self.alpha
        out[low] = "weak"
        out[low & (self.x_model < eps)] = "gap"
        out[self.q_high <= self.alpha] = "strong"
        return out

    def table(self, labels: Sequence[str] | None = None, eps: float = EPSILON) -> pd.DataFrame:
        n = len(self.x_model)
        return pd.DataFrame(
            {
                "concept": np.arange(n),
                "label": list(labels) if labels is not None else [""] * n,
                "support": self.support,
                "x_model": self.x_model,
                "null_mean": self.null_mean,
                "p_low": self.p_low,
                "q_low": self.q_low,
                "p_high": self.p_high,
                "q_high": self.q_high,
                "class": self.classes(eps),
            }
        )


def gap_test(
    acts_by_benchmark: Mapping[str, Acts],
    scores_by_benchmark: Mapping[str, ArrayLike],
    n_perm: int = 1000,
    min_support: int = 5,
    alpha: float = 0.05,
    seed: int = 0,
    chunk: int = 250,
) -> GapTest:
    """Is a concept's X_model lower (or higher) than the model's accuracy explains? (ours; the paper
    has no test)

    Null: correctness is unrelated to the concept, i.e. the per-item scores are exchangeable
    within each benchmark (accuracy kept). For every concept with at least ``min_support`` active
    items, X_model (eq. 5, the activation-weighted statistic itself) is compared with its value
    under ``n_perm`` within-benchmark permutations of the scores, shared by all concepts:
    ``p_low = (1 + #{null <= observed}) / (1 + n_perm)``; ``p_high`` likewise. Multiple testing:
    Benjamini-Hochberg over the tested concepts, each side at level ``alpha``. With binary
    activations on one benchmark this is Fisher's exact (hypergeometric) test of active x correct.

    A concept seen on k items of a model with accuracy a reaches at best p ~ (1 - a)^k, so the
    minimum-support rule only drops concepts that could never be significant.
    """
    if n_perm < 1:
        raise ValueError(f"n_perm={n_perm}: need at least 1 permutation")
    if min_support < 1:
        raise ValueError(f"min_support={min_support}: must be >= 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha}: must be in (0, 1)")
    n = _check_suite(acts_by_benchmark)
    xm = x_model(acts_by_benchmark, scores_by_benchmark)
    support = concept_support(acts_by_benchmark)
    tested = ~np.isnan(xm) & (support >= min_support)
    # the permutations are ours, not scipy.stats.permutation_test's: they are shuffled within each
    # benchmark (scipy has no strata) and one set of them serves every concept at once through a
    # sparse product (scipy would redo the permutations concept by concept)
    rng = np.random.default_rng(seed)
    mats = {}
    for b, a in acts_by_benchmark.items():
        a = _check_acts(a)
        totals = _col_sums(a)
        mats[b] = (
            sp.csr_matrix(a.T) if sp.issparse(a) else a.T,
            totals,
            np.asarray(scores_by_benchmark[b], float),
        )
    n_defined = sum((t > 0).astype(int) for _, t, _ in mats.values())
    below, above, total = np.zeros(n), np.zeros(n), np.zeros(n)
    tol = 1e-12  # float ties (e.g. an all-wrong concept at exactly 0) count as "as extreme"
    for start in range(0, n_perm, chunk):
        p = min(chunk, n_perm - start)
        acc = np.zeros((n, p))
        for at, totals, m in mats.values():
            perm = np.stack([rng.permutation(m) for _ in range(p)], axis=1)
            chi = np.asarray(at @ perm, dtype=np.float64)
            acc += np.divide(
                chi, totals[:, None], out=np.zeros_like(chi), where=totals[:, None] > 0
            )
        null = acc / np.maximum(n_defined, 1)[:, None]
        below += (null <= xm[:, None] + tol).sum(1)
        above += (null >= xm[:, None] - tol).sum(1)
        total += null.sum(1)
    p_low = np.where(tested, (1 + below) / (1 + n_perm), np.nan)
    p_high = np.where(tested, (1 + above) / (1 + n_perm), np.nan)
    null_mean = np.where(~np.isnan(xm), total / n_perm, np.nan)
    return GapTest(
        xm,
        support,
        null_mean,
        p_low,
        p_high,
        bh_qvalues(p_low),
        bh_qvalues(p_high),
        n_perm,
        min_support,
        alpha,
    )
