"""Competency Gaps (Bohacek et al., seed 002): SAE concept coverage of benchmarks and model gaps.

Everything here works on *length-normalised concept activations*: for one benchmark, an
items x concepts matrix ``acts`` (numpy array or scipy.sparse) whose entry (i, c) is

    s~_{c,i} = (1/|x_i|) * sum_j SAE(x_{i,j}, c)                                   (paper eq. 1)

built by :func:`concept_activations` from per-token SAE activations, stored sparsely.

Formulas (paper section 3):

- ``chi_bench(b,c) = sum_i s~_ci / ((1/|C|) sum_c' sum_i s~_c'i)``                   (eq. 2)
- ``X_bench(c) = (1/|B|) sum_b chi_bench(b,c)`` (chi is 0 where c is inactive)       (eq. 3)
- missing: ``X < eps`` (eps = 1e-5); under/over-represented: among the rest, at or below the
  empirical 10th / at or above the 90th percentile (numpy's linear interpolation)
- ``chi_model(b,c) = sum_i m_b(i) s~_ci / sum_i s~_ci``, undefined (NaN) if no item activates c (eq. 4)
- ``X_model(c)`` = mean of ``chi_model(b,c)`` over the benchmarks where it is defined (eq. 5)
- model gap: ``X_model < eps``; we also report the worst decile of the defined values.

Robustness (section 4.2.3): :func:`dropout_robustness` (100 reruns dropping 20% of items per
benchmark), :func:`adversarial_removal` (remove the most salient items of the best/worst
concepts, median X_model shift), :func:`jaccard_overlap` (covered-concept sets per benchmark).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from jaxtyping import Float
from torch import Tensor

from kit.core.checks import require_finite

EPSILON = 1e-5
"""The paper's epsilon for missing concepts and model gaps (section 3.1: e^-5 printed; 1e-5 used)."""

Acts = np.ndarray | sp.spmatrix | sp.sparray


# ----------------------------------------------------------------------------- eq. 1: aggregation


def item_concept_activation(feature_acts: Float[Tensor, "n_tokens d_sae"]) -> Float[Tensor, " d_sae"]:
    """Eq. 1 for one datapoint: the SAE activations summed over its tokens, divided by its length."""
    if feature_acts.ndim != 2 or feature_acts.shape[0] == 0:
        raise ValueError(f"feature_acts must be (n_tokens>0, d_sae), got shape {tuple(feature_acts.shape)}")
    require_finite("item_concept_activation feature_acts", feature_acts)
    return feature_acts.sum(0) / feature_acts.shape[0]


def segment_mean(token_values: Float[Tensor, "n_tokens d"], lengths: Sequence[int]) -> Float[Tensor, "n_items d"]:
    """Per-item mean of consecutive token rows (items laid end to end, ``lengths`` tokens each).

    One ``index_add_`` for the whole batch instead of a Python loop over items.
    """
    require_finite("segment_mean token_values", token_values)
    lengths_t = torch.as_tensor(list(lengths), dtype=torch.long, device=token_values.device)
    if (lengths_t <= 0).any():
        raise ValueError("every item needs at least one token (an empty text has no concept activation)")
    if int(lengths_t.sum()) != token_values.shape[0]:
        raise ValueError(f"lengths sum to {int(lengths_t.sum())} but there are {token_values.shape[0]} token rows")
    owner = torch.repeat_interleave(torch.arange(len(lengths_t), device=token_values.device), lengths_t)
    out = torch.zeros(len(lengths_t), token_values.shape[1], dtype=token_values.dtype, device=token_values.device)
    out.index_add_(0, owner, token_values)
    return out / lengths_t[:, None].to(token_values.dtype)


POOLINGS = ("mean", "last")
"""How an item's token activations become its concept activations: ``mean`` = eq. 1 (the paper's,
:func:`segment_mean`; the default everywhere); ``last`` = the item's last token only (our ablation,
:func:`segment_pool`: a contextual concept that lives at the last prompt position is not diluted)."""


def segment_pool(token_values: Float[Tensor, "n_tokens d"], lengths: Sequence[int],
                 pooling: str = "mean") -> Float[Tensor, "n_items d"]:
    """Per-item rows of consecutive token rows (items laid end to end, ``lengths`` tokens each), pooled
    by ``pooling`` (:data:`POOLINGS`): ``mean`` is :func:`segment_mean` (eq. 1), ``last`` each item's
    last row. Same checks as :func:`segment_mean` (which ``last`` runs too, so bad lengths fail alike)."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling={pooling!r}: allowed values: {', '.join(POOLINGS)}")
    mean = segment_mean(token_values, lengths)
    if pooling == "mean":
        return mean
    ends = torch.as_tensor(list(lengths), dtype=torch.long, device=token_values.device).cumsum(0) - 1
    return token_values[ends]


class SparseRows:
    """Accumulates length-normalised item rows into a CSR matrix, keeping only active concepts.

    Memory grows with items x active concepts, never items x tokens x d_sae.
    """

    def __init__(self, n_concepts: int):
        self.n_concepts = n_concepts
        self._indices: list[np.ndarray] = []
        self._data: list[np.ndarray] = []
        self._counts: list[int] = []

    def add(self, rows: Float[Tensor, "n_items d_sae"]) -> None:
        if rows.ndim != 2 or rows.shape[1] != self.n_concepts:
            raise ValueError(f"rows must be (n_items, {self.n_concepts}), got {tuple(rows.shape)}")
        rows = rows.detach()
        nz = rows.nonzero(as_tuple=False)  # row-major order, so indices come sorted per row
        values = rows[nz[:, 0], nz[:, 1]]
        counts = torch.bincount(nz[:, 0], minlength=rows.shape[0])
        self._indices.append(nz[:, 1].to(torch.int32).cpu().numpy())
        self._data.append(values.float().cpu().numpy())
        self._counts.extend(counts.cpu().tolist())

    def __len__(self) -> int:
        return len(self._counts)

    def to_csr(self) -> sp.csr_matrix:
        indptr = np.concatenate([[0], np.cumsum(self._counts, dtype=np.int64)])
        indices = np.concatenate(self._indices) if self._indices else np.zeros(0, np.int32)
        data = np.concatenate(self._data) if self._data else np.zeros(0, np.float32)
        return sp.csr_matrix((data, indices, indptr), shape=(len(self._counts), self.n_concepts))


def concept_activations(
    feature_batches: Iterable[tuple[Float[Tensor, "n_tokens d_sae"], Sequence[int]]], n_concepts: int
) -> sp.csr_matrix:
    """Stream (token feature activations of a batch of items laid end to end, item lengths) into
    a sparse items x concepts matrix of eq. 1's ``s~``. Only one batch is ever dense."""
    rows = SparseRows(n_concepts)
    for feats, lengths in feature_batches:
        rows.add(segment_mean(feats, lengths))
    return rows.to_csr()


# ----------------------------------------------------------------------------- eq. 2-5


def _check_acts(acts: Acts, what: str = "acts") -> Acts:
    if sp.issparse(acts):
        # float64 throughout: a float32 column sum beside a float64 numerator gives an all-correct
        # concept chi_model 0.9999997, and "best concepts" would be chosen by rounding
        acts = sp.csr_matrix(acts, dtype=np.float64)
        data = acts.data
    else:
        acts = np.asarray(acts, dtype=np.float64)
        data = acts
    if acts.ndim != 2:
        raise ValueError(f"{what} must be items x concepts (2-D), got {acts.ndim}-D")
    if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
        raise ValueError(f"{what} must be finite and non-negative (SAE activations after the nonlinearity)")
    return acts


def _col_sums(acts: Acts) -> np.ndarray:
    return np.asarray(acts.sum(axis=0), dtype=np.float64).ravel()


def chi_bench(acts: Acts) -> np.ndarray:
    """Eq. 2: coverage of every concept in one benchmark, relative to its mean concept activation.

    ``acts``: items x concepts (length-normalised, non-negative). Returns a 1-D array over
    concepts whose mean is 1. Raises if no concept is active at all (the ratio is 0/0).
    """
    acts = _check_acts(acts)
    totals = _col_sums(acts)
    mean_total = totals.sum() / acts.shape[1]
    if mean_total <= 0:
        raise ValueError("chi_bench: no concept is active on any item of this benchmark (0/0); "
                         "is the SAE reading the right hook, or are the texts empty?")
    return totals / mean_total


def chi_model(acts: Acts, scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Eq. 4: activation-weighted mean of the per-item score ``m_b(i)`` for every concept.

    ``acts``: items x concepts; ``scores``: per-item performance in [0, 1]. Returns a 1-D array
    over concepts, NaN where no item of the benchmark activates the concept (undefined).
    """
    acts = _check_acts(acts)
    m = np.asarray(scores, dtype=np.float64).ravel()
    if m.shape[0] != acts.shape[0]:
        raise ValueError(f"scores has {m.shape[0]} entries but acts has {acts.shape[0]} items")
    if m.size and (not np.all(np.isfinite(m)) or m.min() < 0 or m.max() > 1):
        raise ValueError("scores must be per-item performance m_b(i) in [0, 1] (normalise first)")
    totals = _col_sums(acts)
    weighted = np.asarray(acts.T @ m, dtype=np.float64).ravel()
    out = np.full(acts.shape[1], np.nan)
    active = totals > 0
    out[active] = weighted[active] / totals[active]
    return out


def _check_suite(acts_by_benchmark: Mapping[str, Acts]) -> int:
    if not acts_by_benchmark:
        raise ValueError("acts_by_benchmark is empty: give at least one benchmark")
    widths = {name: a.shape[1] for name, a in acts_by_benchmark.items()}
    if len(set(widths.values())) != 1:
        raise ValueError(f"all benchmarks must use the same concept dictionary; widths: {widths}")
    return next(iter(widths.values()))


X_BENCH_DENOMINATORS = ("all", "active")


def x_bench(acts_by_benchmark: Mapping[str, Acts], denominator: str = "all") -> np.ndarray:
    """Eq. 3: overall coverage of every concept in a benchmark suite.

    The paper writes two things: Eq. 3 prints ``1/|B| * sum over B_c`` (``denominator="all"``: the
    mean over all benchmarks, since chi_bench is 0 outside B_c), while its text says "the mean across
    B_c (all benchmarks where c is activated)" (``"active"``: the sum over B_c divided by |B_c|; 0
    for a concept no benchmark activates). No public code exists. Default ``"all"``: a concept that
    only one benchmark of the suite covers is under-represented in the suite, which is what a
    benchmark gap means; with ``"active"`` it would look as covered as one every benchmark has.
    """
    _check_suite(acts_by_benchmark)
    if denominator not in X_BENCH_DENOMINATORS:
        raise ValueError(f"denominator={denominator!r}; allowed values: {', '.join(X_BENCH_DENOMINATORS)}")
    chis = np.stack([chi_bench(a) for a in acts_by_benchmark.values()])
    if denominator == "all":
        return chis.mean(axis=0)
    n_active = (chis > 0).sum(axis=0)
    return np.divide(chis.sum(axis=0), n_active, out=np.zeros(chis.shape[1]), where=n_active > 0)


def x_model(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]]) -> np.ndarray:
    """Eq. 5: mean of ``chi_model`` over the benchmarks where it is defined; NaN where none is."""
    _check_suite(acts_by_benchmark)
    missing = [b for b in acts_by_benchmark if b not in scores_by_benchmark]
    if missing:
        raise ValueError(f"scores_by_benchmark lacks benchmark(s) {missing}; it has {list(scores_by_benchmark)}")
    chis = np.stack([chi_model(a, scores_by_benchmark[b]) for b, a in acts_by_benchmark.items()])
    defined = ~np.isnan(chis)
    n = defined.sum(0)
    out = np.full(chis.shape[1], np.nan)
    out[n > 0] = np.nansum(chis, axis=0)[n > 0] / n[n > 0]
    return out


# ----------------------------------------------------------------------------- classification

COVERAGE_CLASSES = ("missing", "under", "normal", "over")


def coverage_classes(x: np.ndarray, eps: float = EPSILON) -> np.ndarray:
    """Section 3.1: ``missing`` if x < eps; among the rest, ``under`` at or below the empirical
    10th percentile, ``over`` at or above the 90th, else ``normal``. Works for X_bench or chi_bench.
    """
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("coverage scores must not be NaN (chi_bench and X_bench are always defined)")
    out = np.full(x.shape, "normal", dtype=object)
    missing = x < eps
    out[missing] = "missing"
    rest = ~missing
    if rest.any():
        lo, hi = np.percentile(x[rest], [10, 90])
        out[rest & (x <= lo)] = "under"
        out[rest & (x >= hi)] = "over"
    return out


def model_gap_classes(x: np.ndarray, eps: float = EPSILON) -> np.ndarray:
    """Section 3.2: ``gap`` if X_model < eps; ``worst-decile`` at or below the 10th percentile of
    the other defined values; ``best-decile`` at or above the 90th; ``undefined`` where NaN."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, "normal", dtype=object)
    defined = ~np.isnan(x)
    out[~defined] = "undefined"
    gap = defined & (x < eps)
    out[gap] = "gap"
    rest = defined & ~gap
    if rest.any():
        lo, hi = np.percentile(x[rest], [10, 90])
        out[rest & (x <= lo)] = "worst-decile"
        out[rest & (x >= hi)] = "best-decile"
    return out


def chi_bench_table(acts_by_benchmark: Mapping[str, Acts]) -> pd.DataFrame:
    """concepts x benchmarks DataFrame of ``chi_bench``."""
    _check_suite(acts_by_benchmark)
    return pd.DataFrame({b: chi_bench(a) for b, a in acts_by_benchmark.items()})


def chi_model_table(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """concepts x benchmarks DataFrame of ``chi_model`` (NaN where undefined)."""
    _check_suite(acts_by_benchmark)
    return pd.DataFrame({b: chi_model(a, scores_by_benchmark[b]) for b, a in acts_by_benchmark.items()})


def missing_fraction(acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON) -> pd.Series:
    """Figure 13: per benchmark, the fraction of the dictionary with ``chi_bench < eps``."""
    table = chi_bench_table(acts_by_benchmark)
    return (table < eps).mean(axis=0)


def profile_difference(acts_a: Acts, scores_a: Sequence[float], scores_b: Sequence[float],
                       acts_b: Acts | None = None) -> np.ndarray:
    """``chi_model`` of model A minus model B on the same benchmark (NaN where either is undefined).

    ``acts_b`` defaults to ``acts_a`` (same prompts, concepts read from the prompt only), which
    isolates the difference in per-item correctness.
    """
    return chi_model(acts_a, scores_a) - chi_model(acts_a if acts_b is None else acts_b, scores_b)


# ----------------------------------------------------------------------------- robustness


def covered_sets(acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON) -> dict[str, np.ndarray]:
    """Per benchmark, the boolean mask of covered (not missing: ``chi_bench >= eps``) concepts."""
    return {b: chi_bench(a) >= eps for b, a in acts_by_benchmark.items()}


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|A and B| / |A or B| of two boolean masks; 1.0 when both are empty (identical sets)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    union = (a | b).sum()
    return 1.0 if union == 0 else float((a & b).sum() / union)


def jaccard_overlap(acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON) -> pd.DataFrame:
    """Figure 14: benchmarks x benchmarks Jaccard similarity of their covered-concept sets."""
    sets = covered_sets(acts_by_benchmark, eps)
    names = list(sets)
    return pd.DataFrame([[jaccard(sets[r], sets[c]) for c in names] for r in names], index=names, columns=names)


def _subset(acts_by_benchmark, scores_by_benchmark, keep: Mapping[str, np.ndarray]):
    acts = {b: a[keep[b]] for b, a in acts_by_benchmark.items()}
    scores = None if scores_by_benchmark is None else {
        b: np.asarray(scores_by_benchmark[b])[keep[b]] for b in acts_by_benchmark}
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
        return float(np.nanmean(self.std_x_model)) if np.isfinite(self.std_x_model).any() else float("nan")


def dropout_robustness(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]] | None,
                       n_reruns: int = 100, drop_frac: float = 0.2, seed: int = 0) -> DropoutRobustness:
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


def salient_items(acts_by_benchmark: Mapping[str, Acts], concepts: Sequence[int], n_items: int) -> dict[str, np.ndarray]:
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


def adversarial_removal(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]],
                        n_concepts: int = 100, n_items: int = 100, repeats: int = 10, subsample: float = 0.9,
                        seed: int = 0) -> AdversarialRemoval:
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
        keep = {b: np.sort(rng.choice(a.shape[0], max(1, int(round(a.shape[0] * subsample))), replace=False))
                for b, a in acts_by_benchmark.items()}
        acts, scores = _subset(acts_by_benchmark, scores_by_benchmark, keep)
        xm = x_model(acts, scores)
        med = float(np.nanmedian(xm))
        defined = np.flatnonzero(~np.isnan(xm))
        order = defined[np.argsort(xm[defined], kind="stable")]
        for which, concepts in (("worst", order[:n_concepts]), ("best", order[::-1][:n_concepts])):
            remove = salient_items(acts, concepts, n_items)
            kept = {b: ~remove[b] for b in acts}
            acts2, scores2 = _subset(acts, scores, kept)
            shift = float(np.nanmedian(x_model(acts2, scores2))) - med
            getattr(result, f"shift_{which}").append(shift)
    result.removed_frac = n_items / max(1, total)
    return result


# ----------------------------------------------------------------------------- summary table


def concept_table(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]] | None = None,
                  labels: Sequence[str] | None = None, eps: float = EPSILON) -> pd.DataFrame:
    """One row per concept: label, X_bench, coverage class, X_model and model-gap class (if scores)."""
    n = _check_suite(acts_by_benchmark)
    xb = x_bench(acts_by_benchmark)
    df = pd.DataFrame({"concept": np.arange(n), "label": list(labels) if labels is not None else [""] * n,
                       "x_bench": xb, "coverage": coverage_classes(xb, eps)})
    if scores_by_benchmark:
        scored = {b: a for b, a in acts_by_benchmark.items() if b in scores_by_benchmark}
        xm = x_model(scored, scores_by_benchmark) if scored else np.full(n, np.nan)
        df["x_model"] = xm
        df["model_gap"] = model_gap_classes(xm, eps)
    return df


def top_bottom(df: pd.DataFrame, column: str, n: int = 5) -> pd.DataFrame:
    """Best and worst ``n`` concepts by ``column`` (NaN excluded), with a ``rank`` column."""
    d = df.dropna(subset=[column]).sort_values(column, kind="stable")
    best = d.iloc[::-1].head(n).assign(rank="best")
    worst = d.head(n).assign(rank="worst")
    return pd.concat([best, worst], ignore_index=True)


# ----------------------------------------------------------------------------- significance (ours)


def concept_support(acts_by_benchmark: Mapping[str, Acts]) -> np.ndarray:
    """Per concept, how many items (over all benchmarks) activate it at all (``s~_ci > 0``)."""
    _check_suite(acts_by_benchmark)
    return sum(np.asarray((_check_acts(a) > 0).sum(axis=0)).ravel().astype(np.int64)
               for a in acts_by_benchmark.values())


def bh_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of ``p`` (NaN entries are not tests: they stay NaN and do not count).

    ``q_(i) = min_{j >= i} p_(j) * m / j`` over the m finite p-values sorted increasingly, capped at 1.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return q
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    raw = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(raw[::-1])[::-1])
    return q


GAP_TEST_CLASSES = ("gap", "weak", "strong", "not significant", "too few items", "undefined")


@dataclass
class GapTest:
    """Per-concept test of X_model against the model's own accuracy (:func:`gap_test`)."""

    x_model: np.ndarray
    support: np.ndarray
    """Items (all benchmarks) that activate the concept."""
    null_mean: np.ndarray
    """Mean X_model under shuffled correctness (about the accuracy the concept's items would get by chance)."""
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
        return pd.DataFrame({"concept": np.arange(n), "label": list(labels) if labels is not None else [""] * n,
                             "support": self.support, "x_model": self.x_model, "null_mean": self.null_mean,
                             "p_low": self.p_low, "q_low": self.q_low, "p_high": self.p_high, "q_high": self.q_high,
                             "class": self.classes(eps)})


def gap_test(acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, Sequence[float]],
             n_perm: int = 1000, min_support: int = 5, alpha: float = 0.05, seed: int = 0,
             chunk: int = 250) -> GapTest:
    """Is a concept's X_model lower (or higher) than the model's accuracy explains? (ours; the paper has no test)

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
    rng = np.random.default_rng(seed)
    mats = {}
    for b, a in acts_by_benchmark.items():
        a = _check_acts(a)
        totals = _col_sums(a)
        mats[b] = (sp.csr_matrix(a.T) if sp.issparse(a) else a.T, totals, np.asarray(scores_by_benchmark[b], float))
    n_defined = sum((t > 0).astype(int) for _, t, _ in mats.values())
    below, above, total = np.zeros(n), np.zeros(n), np.zeros(n)
    tol = 1e-12  # float ties (e.g. an all-wrong concept at exactly 0) count as "as extreme"
    for start in range(0, n_perm, chunk):
        p = min(chunk, n_perm - start)
        acc = np.zeros((n, p))
        for at, totals, m in mats.values():
            perm = np.stack([rng.permutation(m) for _ in range(p)], axis=1)
            chi = np.asarray(at @ perm, dtype=np.float64)
            acc += np.divide(chi, totals[:, None], out=np.zeros_like(chi), where=totals[:, None] > 0)
        null = acc / np.maximum(n_defined, 1)[:, None]
        below += (null <= xm[:, None] + tol).sum(1)
        above += (null >= xm[:, None] - tol).sum(1)
        total += null.sum(1)
    p_low = np.where(tested, (1 + below) / (1 + n_perm), np.nan)
    p_high = np.where(tested, (1 + above) / (1 + n_perm), np.nan)
    null_mean = np.where(~np.isnan(xm), total / n_perm, np.nan)
    return GapTest(xm, support, null_mean, p_low, p_high, bh_qvalues(p_low), bh_qvalues(p_high), n_perm,
                   min_support, alpha)
