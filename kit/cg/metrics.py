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
- ``chi_model(b,c) = sum_i m_b(i) s~_ci / sum_i s~_ci``, undefined (NaN) if no item activates c (eq.
  4)
- ``X_model(c)`` = mean of ``chi_model(b,c)`` over the benchmarks where it is defined (eq. 5)
- model gap: ``X_model < eps``; we also report the worst decile of the defined values.

Robustness (section 4.2.3) is in :mod:`kit.cg.robustness`, our per-concept significance test in
:mod:`kit.cg.significance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from jaxtyping import Float
from numpy.typing import ArrayLike
from torch import Tensor

from kit.core.checks import require_finite

EPSILON = 1e-5
"""The paper's epsilon for missing concepts and model gaps (section 3.1: e^-5 printed; 1e-5
used)."""

if TYPE_CHECKING:
    # scipy ships no annotations: its sparse classes' shape, sum, T and indexing are inferred from
    # its source as missing or Optional, so for the checker a sparse matrix is untyped
    Acts = np.ndarray | Any
    CSR = Any
else:
    Acts = np.ndarray | sp.spmatrix | sp.sparray
    CSR = sp.csr_matrix


def item_concept_activation(
    feature_acts: Float[Tensor, "n_tokens d_sae"],
) -> Float[Tensor, " d_sae"]:
    """Eq. 1 for one datapoint: the SAE activations summed over its tokens, divided by its
    length."""
    if feature_acts.ndim != 2 or feature_acts.shape[0] == 0:
        raise ValueError(
            f"feature_acts must be (n_tokens>0, d_sae), got shape {tuple(feature_acts.shape)}"
        )
    require_finite("item_concept_activation feature_acts", feature_acts)
    return feature_acts.sum(0) / feature_acts.shape[0]


def segment_mean(
    token_values: Float[Tensor, "n_tokens d"], lengths: Sequence[int]
) -> Float[Tensor, "n_items d"]:
    """Per-item mean of consecutive token rows (items laid end to end, ``lengths`` tokens each).

    One ``index_add_`` for the whole batch instead of a Python loop over items.
    """
    require_finite("segment_mean token_values", token_values)
    lengths_t = torch.as_tensor(list(lengths), dtype=torch.long, device=token_values.device)
    if (lengths_t <= 0).any():
        raise ValueError(
            "every item needs at least one token (an empty text has no concept activation)"
        )
    if int(lengths_t.sum()) != token_values.shape[0]:
        raise ValueError(
            f"lengths sum to {int(lengths_t.sum())} but there are {token_values.shape[0]} token "
            "rows"
        )
    owner = torch.repeat_interleave(
        torch.arange(len(lengths_t), device=token_values.device), lengths_t
    )
    out = torch.zeros(
        len(lengths_t), token_values.shape[1], dtype=token_values.dtype, device=token_values.device
    )
    out.index_add_(0, owner, token_values)
    return out / lengths_t[:, None].to(token_values.dtype)


POOLINGS = ("mean", "last")
"""How an item's token activations become its concept activations: ``mean`` = eq. 1 (the paper's,
:func:`segment_mean`; the default everywhere); ``last`` = the item's last token only (our ablation,
:func:`segment_pool`: a contextual concept that lives at the last prompt position is not
diluted)."""


def segment_pool(
    token_values: Float[Tensor, "n_tokens d"], lengths: Sequence[int], pooling: str = "mean"
) -> Float[Tensor, "n_items d"]:
    """Per-item rows of consecutive token rows (items laid end to end, ``lengths`` tokens each),
    pooled by ``pooling`` (:data:`POOLINGS`): ``mean`` is :func:`segment_mean` (eq. 1), ``last``
    each item's last row. Same checks as :func:`segment_mean` (which ``last`` runs too, so bad
    lengths fail alike)."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling={pooling!r}: allowed values: {', '.join(POOLINGS)}")
    mean = segment_mean(token_values, lengths)
    if pooling == "mean":
        return mean
    ends = (
        torch.as_tensor(list(lengths), dtype=torch.long, device=token_values.device).cumsum(0) - 1
    )
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

    def to_csr(self) -> CSR:
        indptr = np.concatenate([[0], np.cumsum(self._counts, dtype=np.int64)])
        indices = np.concatenate(self._indices) if self._indices else np.zeros(0, np.int32)
        data = np.concatenate(self._data) if self._data else np.zeros(0, np.float32)
        return sp.csr_matrix((data, indices, indptr), shape=(len(self._counts), self.n_concepts))


def concept_activations(
    feature_batches: Iterable[tuple[Float[Tensor, "n_tokens d_sae"], Sequence[int]]],
    n_concepts: int,
) -> CSR:
    """Stream (token feature activations of a batch of items laid end to end, item lengths) into
    a sparse items x concepts matrix of eq. 1's ``s~``. Only one batch is ever dense."""
    rows = SparseRows(n_concepts)
    for feats, lengths in feature_batches:
        rows.add(segment_mean(feats, lengths))
    return rows.to_csr()


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
        raise ValueError(
            f"{what} must be finite and non-negative (SAE activations after the nonlinearity)"
        )
    return acts


def _col_sums(acts: Acts) -> np.ndarray:
    return np.asarray(acts.sum(axis=0), dtype=np.float64).ravel()


def chi_bench(acts: Acts) -> np.ndarray:
    """Eq. 2: coverage of every concept in one benchmark, relative to its mean concept activation.

    ``acts``: items x concepts (length-normalised, non-negative). Returns a 1-D array over
    concepts whose mean is 1. Raises if no concept is active at all (the ratio is 0/0).

    >>> import numpy as np
    >>> acts = np.array([[1.0, 0.0, 1.0], [3.0, 0.0, 1.0]])   # 2 items x 3 concepts
    >>> chi_bench(acts)                 # column sums 4, 0, 2 over their mean 2
    array([2., 0., 1.])
    """
    acts = _check_acts(acts)
    totals = _col_sums(acts)
    mean_total = totals.sum() / acts.shape[1]
    if mean_total <= 0:
        raise ValueError(
            "chi_bench: no concept is active on any item of this benchmark (0/0); "
            "is the SAE reading the right hook, or are the texts empty?"
        )
    return totals / mean_total


def chi_model(acts: Acts, scores: ArrayLike) -> np.ndarray:
    """Eq. 4: activation-weighted mean of the per-item score ``m_b(i)`` for every concept.

    ``acts``: items x concepts; ``scores``: per-item performance in [0, 1]. Returns a 1-D array
    over concepts, NaN where no item of the benchmark activates the concept (undefined).

    >>> import numpy as np
    >>> acts = np.array([[1.0, 0.0, 1.0], [3.0, 0.0, 1.0]])
    >>> chi_model(acts, [1.0, 0.0])     # item 0 right, item 1 wrong: 1/4, undefined, 1/2
    array([0.25,  nan, 0.5 ])
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
    mean over all benchmarks, since chi_bench is 0 outside B_c), while its text says "the mean
    across B_c (all benchmarks where c is activated)" (``"active"``: the sum over B_c divided by
    |B_c|; 0 for a concept no benchmark activates). No public code exists. Default ``"all"``: a
    concept that only one benchmark of the suite covers is under-represented in the suite, which is
    what a benchmark gap means; with ``"active"`` it would look as covered as one every benchmark
    has.

    >>> import numpy as np
    >>> suite = {"a": np.array([[1.0, 0.0, 1.0]]), "b": np.array([[1.0, 1.0, 0.0]])}
    >>> x_bench(suite)                   # chi_bench (1.5, 0, 1.5) and (1.5, 1.5, 0), averaged
    array([1.5 , 0.75, 0.75])
    >>> x_bench(suite, "active")         # over the benchmarks that activate each concept
    array([1.5, 1.5, 1.5])
    """
    _check_suite(acts_by_benchmark)
    if denominator not in X_BENCH_DENOMINATORS:
        raise ValueError(
            f"denominator={denominator!r}; allowed values: {', '.join(X_BENCH_DENOMINATORS)}"
        )
    chis = np.stack([chi_bench(a) for a in acts_by_benchmark.values()])
    if denominator == "all":
        return chis.mean(axis=0)
    n_active = (chis > 0).sum(axis=0)
    return np.divide(chis.sum(axis=0), n_active, out=np.zeros(chis.shape[1]), where=n_active > 0)


def x_model(
    acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, ArrayLike]
) -> np.ndarray:
    """Eq. 5: mean of ``chi_model`` over the benchmarks where it is defined; NaN where none is.

    >>> import numpy as np
    >>> suite = {"a": np.array([[1.0, 0.0], [1.0, 0.0]]), "b": np.array([[1.0, 2.0]])}
    >>> x_model(suite, {"a": [1.0, 0.0], "b": [1.0]})   # concept 1: defined on b only
    array([0.75, 1.  ])
    """
    _check_suite(acts_by_benchmark)
    missing = [b for b in acts_by_benchmark if b not in scores_by_benchmark]
    if missing:
        raise ValueError(
            f"scores_by_benchmark lacks benchmark(s) {missing}; it has {list(scores_by_benchmark)}"
        )
    chis = np.stack([chi_model(a, scores_by_benchmark[b]) for b, a in acts_by_benchmark.items()])
    defined = ~np.isnan(chis)
    n = defined.sum(0)
    out = np.full(chis.shape[1], np.nan)
    out[n > 0] = np.nansum(chis, axis=0)[n > 0] / n[n > 0]
    return out


COVERAGE_CLASSES = ("missing", "under", "normal", "over")


def coverage_classes(x: np.ndarray, eps: float = EPSILON) -> np.ndarray:
    """Section 3.1: ``missing`` if x < eps; among the rest, ``under`` at or below the empirical
    10th percentile, ``over`` at or above the 90th, else ``normal``. Works for X_bench or chi_bench.

    >>> import numpy as np
    >>> coverage_classes(np.array([0.0, 0.5, 1.0, 1.0, 1.5])).tolist()
    ['missing', 'under', 'normal', 'normal', 'over']
    """
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError(
            "coverage scores must not be NaN (chi_bench and X_bench are always defined)"
        )
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
    the other defined values; ``best-decile`` at or above the 90th; ``undefined`` where NaN.

    >>> import numpy as np
    >>> model_gap_classes(np.array([0.0, np.nan, 0.2, 0.6, 0.6, 0.9])).tolist()
    ['gap', 'undefined', 'worst-decile', 'normal', 'normal', 'best-decile']
    """
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


def chi_model_table(
    acts_by_benchmark: Mapping[str, Acts], scores_by_benchmark: Mapping[str, ArrayLike]
) -> pd.DataFrame:
    """concepts x benchmarks DataFrame of ``chi_model`` (NaN where undefined)."""
    _check_suite(acts_by_benchmark)
    return pd.DataFrame(
        {b: chi_model(a, scores_by_benchmark[b]) for b, a in acts_by_benchmark.items()}
    )


def missing_fraction(acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON) -> pd.Series:
    """Figure 13: per benchmark, the fraction of the dictionary with ``chi_bench < eps``."""
    table = chi_bench_table(acts_by_benchmark)
    return (table < eps).mean(axis=0)


def profile_difference(
    acts_a: Acts, scores_a: Sequence[float], scores_b: Sequence[float], acts_b: Acts | None = None
) -> np.ndarray:
    """``chi_model`` of model A minus model B on the same benchmark (NaN where either is undefined).

    ``acts_b`` defaults to ``acts_a`` (same prompts, concepts read from the prompt only), which
    isolates the difference in per-item correctness.
    """
    return chi_model(acts_a, scores_a) - chi_model(acts_a if acts_b is None else acts_b, scores_b)


def concept_table(
    acts_by_benchmark: Mapping[str, Acts],
    scores_by_benchmark: Mapping[str, ArrayLike] | None = None,
    labels: Sequence[str] | None = None,
    eps: float = EPSILON,
) -> pd.DataFrame:
    """One row per concept: label, X_bench, coverage class, X_model and model-gap class (if
    scores)."""
    n = _check_suite(acts_by_benchmark)
    xb = x_bench(acts_by_benchmark)
    df = pd.DataFrame(
        {
            "concept": np.arange(n),
            "label": list(labels) if labels is not None else [""] * n,
            "x_bench": xb,
            "coverage": coverage_classes(xb, eps),
        }
    )
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
