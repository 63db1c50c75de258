"""Shuffled-correctness nulls of one model's Competency-Gaps statistics (ours; the paper has none).

The control: the per-item scores ``m_b(i)`` permuted within each benchmark keep the model's accuracy
but break any tie between concepts and failures. A statistic of the real model is only evidence of
concept-level structure where it lies beyond the same statistic of its shuffled copies.

Every statistic is computed for a **score matrix** per benchmark, ``Float[ndarray, "items draws"]``
whose column 0 is the model's own scores and columns ``1..n`` shuffled copies
(:func:`score_matrix`), by one vectorised function, so the observed value and its null come from
the same code on the same splits, reruns and subsamples:

- :func:`x_model_columns`: X_model (eq. 5) per column;
- gap count (X_model < eps), :func:`split_half_columns` (Spearman over concepts between two random
  halves of the items, concepts with minimum support, averaged over splits),
  :func:`dropout_columns` (mean per-concept std of X_model over reruns dropping a share of items);
- the adversarial removal (:func:`kit.cg.robustness.adversarial_removal`) per column.

:func:`model_nulls` gathers them into a :class:`ModelNulls`; the verdicts compare column 0 with the
2.5-97.5% range of the others (at least 100 draws, so that the range is a 95% band).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from kit.cg.metrics import EPSILON, Acts, _check_acts, _check_suite, _col_sums
from kit.cg.robustness import adversarial_removal
from kit.cg.significance import concept_support
from kit.core.stats import null_band

MIN_DRAWS = 100
"""Fewest shuffled copies a null band is made of: with fewer, a 2.5-97.5% range is not a 95%
band."""


def score_matrix(
    scores: Mapping[str, ArrayLike], n_perm: int, seed: int = 0
) -> dict[str, np.ndarray]:
    """Per benchmark ``Float[ndarray, "items 1+n_perm"]``: column 0 the scores, then ``n_perm``
    copies permuted within the benchmark (seeded)."""
    rng = np.random.default_rng(seed)
    out = {}
    for b, s in scores.items():
        s = np.asarray(s, dtype=np.float64)
        out[b] = np.column_stack([s] + [rng.permutation(s) for _ in range(n_perm)])
    return out


def _prepared(acts: Mapping[str, Acts]) -> dict[str, Acts]:  # CSR matrices
    _check_suite(acts)
    return {b: sp.csr_matrix(_check_acts(a)) for b, a in acts.items()}


def x_model_columns(
    acts: Mapping[str, Acts],
    S: Mapping[str, np.ndarray],
    rows: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """``Float[ndarray, "concepts columns"]``: X_model (eq. 5) of every score column, on ``rows`` of
    each benchmark (default all). NaN where no benchmark defines the concept (on those rows)."""
    num, den = None, None
    for b, a in acts.items():
        a = a if rows is None else a[rows[b]]
        s = S[b] if rows is None else S[b][rows[b]]
        totals = _col_sums(a)
        chi = np.asarray(a.T @ s, dtype=np.float64)
        ok = totals > 0
        chi = np.divide(chi, totals[:, None], out=np.zeros_like(chi), where=ok[:, None])
        num = chi if num is None else num + chi
        den = ok.astype(int) if den is None else den + ok
    assert num is not None and den is not None  # acts holds at least one benchmark
    out = np.full(num.shape, np.nan)
    out[den > 0] = num[den > 0] / den[den > 0, None]
    return out


def _spearman_columns(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman of ``x[:, j]`` and ``y[:, j]`` for every column (no NaN inside), NaN where
    constant."""
    if x.shape[0] < 3:
        return np.full(x.shape[1], np.nan)
    rx, ry = rankdata(x, axis=0), rankdata(y, axis=0)
    rx, ry = rx - rx.mean(0), ry - ry.mean(0)
    den = np.sqrt((rx**2).sum(0) * (ry**2).sum(0))
    return np.divide((rx * ry).sum(0), den, out=np.full(x.shape[1], np.nan), where=den > 0)


def split_half_columns(
    acts: Mapping[str, Acts],
    S: Mapping[str, np.ndarray],
    n_splits: int = 20,
    min_support: int = 1,
    seed: int = 0,
) -> np.ndarray:
    """Per score column: the mean over ``n_splits`` random splits (every benchmark's items halved)
    of the Spearman over concepts between X_model on the two halves, over the concepts defined on
    both halves and active on at least ``min_support`` items of the suite."""
    acts = _prepared(acts)
    keep = concept_support(acts) >= min_support
    rng = np.random.default_rng(seed)
    width = next(iter(S.values())).shape[1]
    total, count = np.zeros(width), np.zeros(width)
    for _ in range(n_splits):
        halves: list[dict[str, np.ndarray]] = [{}, {}]
        for b, a in acts.items():
            perm = rng.permutation(a.shape[0])
            halves[0][b], halves[1][b] = (
                np.sort(perm[: a.shape[0] // 2]),
                np.sort(perm[a.shape[0] // 2 :]),
            )
        xa, xb = (x_model_columns(acts, S, h) for h in halves)
        # definedness depends on the items only
        ok = np.isfinite(xa[:, 0]) & np.isfinite(xb[:, 0]) & keep
        rho = _spearman_columns(xa[ok], xb[ok])
        good = np.isfinite(rho)
        total[good] += rho[good]
        count[good] += 1
    return np.divide(total, count, out=np.full(width, np.nan), where=count > 0)


def dropout_columns(
    acts: Mapping[str, Acts],
    S: Mapping[str, np.ndarray],
    n_reruns: int = 20,
    drop_frac: float = 0.2,
    seed: int = 0,
) -> np.ndarray:
    """Per score column: :func:`kit.cg.robustness.dropout_robustness`'s mean std of X_model (reruns
    each dropping ``drop_frac`` of every benchmark's items; per-concept std over the reruns where it
    is defined, at least 2; mean over concepts)."""
    if n_reruns < 2:
        raise ValueError(f"n_reruns={n_reruns}: need at least 2 reruns for a standard deviation")
    acts = _prepared(acts)
    rng = np.random.default_rng(seed)
    s1 = s2 = n = None
    for _ in range(n_reruns):
        rows = {
            b: np.sort(
                rng.choice(
                    a.shape[0], max(1, int(round(a.shape[0] * (1 - drop_frac)))), replace=False
                )
            )
            for b, a in acts.items()
        }
        x = x_model_columns(acts, S, rows)
        ok = np.isfinite(x)
        x = np.where(ok, x, 0.0)
        s1 = x if s1 is None else s1 + x
        s2 = x**2 if s2 is None else s2 + x**2
        n = ok.astype(int) if n is None else n + ok
    assert s1 is not None and s2 is not None and n is not None  # n_reruns >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n >= 2, np.maximum(s2 / n - (s1 / n) ** 2, 0.0), np.nan)
        std = np.sqrt(var)
    defined = np.isfinite(std).any(axis=1)
    return np.nanmean(std[defined], axis=0) if defined.any() else np.full(std.shape[1], np.nan)


@dataclass
class ModelNulls:
    """One model's statistics beside their shuffled-correctness nulls (:func:`model_nulls`).

    Each observed value is column 0 of the same computation whose other columns make its null."""

    model: str
    n_draws: int
    eps: float
    gaps: int
    """Concepts with X_model < eps (the paper's model gaps)."""
    gaps_null: np.ndarray
    split_half: float
    """Mean split-half Spearman, concepts on >= ``min_support`` items."""
    split_half_null: np.ndarray
    split_half_all: float
    """The same over all concepts defined on both halves (shown, not a claim)."""
    dropout: float
    dropout_null: np.ndarray
    adv_best: float
    """Mean median-X_model shift (% of the median) removing the best concepts' salient items."""
    adv_best_null: np.ndarray
    adv_worst: float
    adv_worst_null: np.ndarray
    min_support: int = 5
    n_splits: int = 20
    n_reruns: int = 20
    median_x_model: float = float("nan")
    """The model's median X_model over concepts: the adversarial shifts are percentages of it."""

    def p_value(self, which: str, direction: str) -> float:
        """Empirical one-sided p of ``which`` (gaps, split_half, dropout, adv_best, adv_worst):
        ``(1 + #{null as or more extreme}) / (1 + draws)``."""
        x, null = getattr(self, which), getattr(self, f"{which}_null")
        null = null[np.isfinite(null)]
        if not np.isfinite(x) or null.size == 0:
            return float("nan")
        extreme = null >= x if direction == "greater" else null <= x
        return float((1 + extreme.sum()) / (1 + null.size))

    def table(self) -> pd.DataFrame:
        """Each observed value beside its null (mean, 95% range, empirical p) and whether it lies
        beyond the range on the side the claim predicts."""
        rows = []
        for key, what, direction in (
            ("gaps", "model gaps (X_model < eps), count", "greater"),
            (
                "split_half",
                f"split-half Spearman, concepts on >= {self.min_support} items",
                "greater",
            ),
            ("dropout", "dropout: mean std of X_model", "less"),
            ("adv_best", "adversarial removal, best concepts: median shift %", "less"),
            ("adv_worst", "adversarial removal, worst concepts: median shift %", "greater"),
        ):
            m, lo, hi = null_band(getattr(self, f"{key}_null"))
            x = float(getattr(self, key))
            beats = bool(np.isfinite(x) and (x > hi if direction == "greater" else x < lo))
            rows.append(
                {
                    "quantity": what,
                    "observed": x,
                    "null": f"shuffled correctness, {self.n_draws} draws",
                    "null mean": m,
                    "null 2.5%": lo,
                    "null 97.5%": hi,
                    "p": self.p_value(key, direction),
                    "beats null": beats,
                }
            )
        return pd.DataFrame(rows)


def model_nulls(
    model: str,
    acts: Mapping[str, Acts],
    scores: Mapping[str, ArrayLike],
    eps: float = EPSILON,
    adv_n_concepts: int = 100,
    adv_n_items: int = 100,
    adv_repeats: int = 10,
    n_reruns: int = 20,
    drop_frac: float = 0.2,
    min_support: int = 5,
    seed: int = 0,
    n_draws: int = 200,
    n_splits: int = 20,
) -> ModelNulls:
    """Every statistic of one model and its null from ``n_draws`` (>= :data:`MIN_DRAWS`)
    shuffled-correctness copies (:func:`score_matrix` with ``seed``; splits, reruns and subsamples
    seeded from ``seed`` too, shared by the observed value and its null)."""
    if n_draws < MIN_DRAWS:
        raise ValueError(f"n_draws={n_draws}: a 95% null band needs at least {MIN_DRAWS} draws")
    acts = _prepared(acts)
    S = score_matrix({b: scores[b] for b in acts}, n_draws, seed)
    x = x_model_columns(acts, S)
    gaps = np.sum(np.isfinite(x) & (x < eps), axis=0).astype(float)
    half = split_half_columns(acts, S, n_splits, min_support, seed)
    half_all = split_half_columns(
        {b: a for b, a in acts.items()}, {b: s[:, :1] for b, s in S.items()}, n_splits, 1, seed
    )
    drop = dropout_columns(acts, S, n_reruns, drop_frac, seed)
    adv = [
        adversarial_removal(
            acts,
            {b: s[:, j] for b, s in S.items()},
            adv_n_concepts,
            adv_n_items,
            adv_repeats,
            seed=seed + j,
        )
        for j in range(n_draws + 1)
    ]
    best = np.array([a.mean_shift_best_pct for a in adv])
    worst = np.array([a.mean_shift_worst_pct for a in adv])
    return ModelNulls(
        model,
        n_draws,
        eps,
        int(gaps[0]),
        gaps[1:],
        float(half[0]),
        half[1:],
        float(half_all[0]),
        float(drop[0]),
        drop[1:],
        float(best[0]),
        best[1:],
        float(worst[0]),
        worst[1:],
        min_support,
        n_splits,
        n_reruns,
        adv[0].median_before,
    )
