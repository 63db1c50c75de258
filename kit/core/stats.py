"""Intervals, nulls and set overlap shared by every paper package and the claims ledger.

- intervals: :func:`bootstrap_ci` (paired percentile bootstrap over items),
  :func:`bootstrap_groups_ci` (stratified, optionally by cluster), :func:`mean_diff_ci`,
  :func:`t_interval` (repeats over seeds), :func:`welch_interval` (two small independent samples),
  :func:`wilson_interval` (shares; :func:`clustered_wilson` with clusters as the units),
  :func:`newcombe_diff` (a difference of two shares);
- nulls: :func:`permutation_null` (shuffled labels, optionally within groups),
  :func:`rank_permutation_null` (Spearman against every or random orders),
  :func:`label_permutation_null` (a difference of means over every arrangement of two groups'
  labels; :func:`smallest_p`, the smallest p-value it can give), :func:`null_band` and
  :func:`order_band` (a null's central range, interpolated or from its order statistics),
  :func:`seed_repeats`;
- :func:`jaccard`: the overlap of two sets, with the two-empty-sets case chosen by the caller.

Every interval is ``(point, low, high)`` at ``level`` (default :data:`LEVEL`, 95%).

The libraries that own these statistics compute them: resamples and percentile intervals by
``scipy.stats.bootstrap``, permutation nulls by ``scipy.stats.permutation_test``, the Wilson
interval by statsmodels' ``proportion_confint``. Written here only what no library offers: the
cluster bootstrap's mapping of resampled clusters to items (scipy resamples the cluster labels),
shuffles within groups (scipy has no strata), label permutations with a side of one unit (scipy
refuses them) and Price and Bonett's interval of a contrast of more than two shares.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike

LEVEL = 0.95


def _percentile_interval(
    stat: Callable[..., float], units: Sequence[np.ndarray], n_boot: int, seed: int, level: float
) -> tuple[float, float]:
    """``scipy.stats.bootstrap`` (percentile method, a ``numpy`` Generator seeded by ``seed``) of
    ``stat(*indices)`` over resamples of each index array of ``units`` (drawn independently, with
    replacement): the interval over the finite replicates. scipy's own interval is NaN as soon as
    one replicate is (a resample where the statistic is undefined); the replicates it draws are
    kept and the non-finite ones dropped, with numpy's linear quantiles, which is what scipy's
    percentile interval computes when every replicate is finite."""
    import warnings

    from scipy.stats import bootstrap

    def one(*idx: np.ndarray) -> float:
        # apply_along_axis fixes the output dtype from the first call: always a float
        return float(stat(*(np.asarray(i, dtype=np.intp) for i in idx)))

    with warnings.catch_warnings():  # scipy warns when the interval of a NaN replicate is NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        res = bootstrap(
            tuple(units),
            one,
            n_resamples=n_boot,
            vectorized=False,
            paired=False,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    reps = np.asarray(res.bootstrap_distribution, dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    return float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a))


def bootstrap_ci(
    stat: Callable[..., float], *arrays, n_boot: int = 1000, seed: int = 0, level: float = LEVEL
) -> tuple[float, float, float]:
    """Paired percentile bootstrap over items: every array is resampled with the SAME item
    indices (they are columns of one item table, along their first axis). Returns
    ``(stat(arrays), low, high)``.

    ``scipy.stats.bootstrap`` draws the item indices (``n_boot`` x n from
    ``numpy.random.default_rng(seed)``: the same resamples the hand loop this replaced drew, so the
    numbers did not move). Non-finite replicates (a resample where the statistic is undefined) are
    dropped.
    """
    arrays = [np.asarray(a) for a in arrays]
    n = {len(a) for a in arrays}
    if len(n) != 1:
        raise ValueError(
            "paired bootstrap needs arrays of one length (one row per item); got lengths "
            f"{sorted(n)}"
        )
    n = n.pop()
    if n < 2:
        raise ValueError(f"bootstrap needs at least 2 items, got {n}")
    point = float(stat(*arrays))
    lo, hi = _percentile_interval(
        lambda idx: stat(*(a[idx] for a in arrays)), [np.arange(n)], n_boot, seed, level
    )
    return point, lo, hi


def bootstrap_groups_ci(
    stat: Callable[[list[tuple[np.ndarray, ...]]], float],
    groups: Sequence[Sequence],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
    clusters: Sequence[ArrayLike | None] | None = None,
) -> tuple[float, float, float]:
    """Stratified paired bootstrap: ``groups`` is a list of item tables (tuples of equal-length
    arrays, e.g. per model the Ori and TE correctness of its test items); each replicate resamples
    the items of every group independently and calls ``stat`` on the list of resampled groups.

    ``clusters`` (one entry per group, each None or a label per item): the group's items are
    resampled by cluster, whole clusters with replacement (a clustered bootstrap: items that share
    a content are not independent evidence), so a replicate may hold more or fewer items.

    ``scipy.stats.bootstrap`` (percentile, seeded Generator) resamples each group's units (its
    items, or its cluster labels) independently; turning resampled clusters back into their items
    is ours, since scipy resamples observations, not clusters. A group of one unit is held fixed
    (every resample of it is itself; scipy refuses samples of one). The resamples differ from the
    hand loop this replaced (it drew group by group within each replicate), so intervals of more
    than one group moved (one group: the same draws)."""
    groups = [tuple(np.asarray(a) for a in g) for g in groups]
    for g in groups:
        if len({len(a) for a in g}) != 1 or len(g[0]) < 1:
            raise ValueError("each group must hold non-empty arrays of one length")
    if clusters is not None and len(clusters) != len(groups):
        raise ValueError(f"clusters needs one entry per group ({len(groups)}), got {len(clusters)}")
    members = []  # per group: the item indices of each unit (an item, or a cluster)
    for k, g in enumerate(groups):
        c = None if clusters is None else clusters[k]
        if c is None:
            members.append([np.array([i]) for i in range(len(g[0]))])
            continue
        c = np.asarray(c)
        if c.shape != (len(g[0]),):
            raise ValueError(f"clusters[{k}] has {c.shape} labels for {len(g[0])} items")
        members.append([np.flatnonzero(c == u) for u in np.unique(c)])
    point = float(stat(groups))
    drawn = [k for k, m in enumerate(members) if len(m) > 1]
    if not drawn:  # nothing to resample: every replicate is the statistic itself
        return (point, point, point) if np.isfinite(point) else (point, float("nan"), float("nan"))

    def resampled(*units: np.ndarray) -> float:
        sample = list(groups)
        for k, u in zip(drawn, units):
            idx = np.concatenate([members[k][j] for j in u])
            sample[k] = tuple(a[idx] for a in groups[k])
        return stat(sample)

    units = [np.arange(len(members[k])) for k in drawn]
    lo, hi = _percentile_interval(resampled, units, n_boot, seed, level)
    return point, lo, hi


def mean_diff_ci(
    a: ArrayLike, b: ArrayLike | None = None, paired: bool = True, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``a - b`` with a bootstrap interval: paired over items (same index = same item), or
    for independent samples each side resampled on its own. ``b=None``: the mean of ``a``."""
    a = np.asarray(a, dtype=float)
    if b is None:
        return bootstrap_ci(np.mean, a, n_boot=n_boot, seed=seed)
    b = np.asarray(b, dtype=float)
    if paired:
        return bootstrap_ci(lambda x, y: float(np.mean(x - y)), a, b, n_boot=n_boot, seed=seed)
    return bootstrap_groups_ci(
        lambda g: float(np.mean(g[0][0]) - np.mean(g[1][0])), [(a,), (b,)], n_boot=n_boot, seed=seed
    )


def t_interval(values: Iterable[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and Student-t interval of a few repeats (seeds, reseeds). One value: no interval
    (NaN)."""
    from scipy.stats import t

    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(v.mean())
    if v.size < 2:
        return m, float("nan"), float("nan")
    half = float(t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half


def welch_interval(a: ArrayLike, b: ArrayLike, level: float = LEVEL) -> tuple[float, float, float]:
    """Difference of means ``mean(a) - mean(b)`` of two independent small samples (trained vs
    control reseeds) with Welch's t interval. Needs 2+ values a side; equal zero variance gives a
    zero-width interval."""
    from scipy.stats import t

    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        raise ValueError(
            f"welch_interval needs at least 2 values per side, got {a.size} and {b.size}"
        )
    d = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    dof = (va + vb) ** 2 / (
        (va**2 / (a.size - 1) if va else 0) + (vb**2 / (b.size - 1) if vb else 0)
    )
    half = float(t.ppf(0.5 + level / 2, dof) * se)
    return d, d - half, d + half


def wilson_interval(k: float, n: int, level: float = LEVEL) -> tuple[float, float, float]:
    """Share ``k/n`` with the Wilson score interval (sound for small n and shares near 0 or 1):
    statsmodels' ``proportion_confint(method="wilson")``. ``k`` may be fractional (a share times a
    number of clusters)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return float("nan"), float("nan"), float("nan")
    if not 0 <= k <= n:
        raise ValueError(f"k={k} must lie in [0, n={n}]")
    lo, hi = cast(tuple[float, float], proportion_confint(k, n, alpha=1 - level, method="wilson"))
    # the bounds are in [0, 1] by construction; the clip only removes float round-off
    return k / n, max(0.0, float(lo)), min(1.0, float(hi))


def clustered_wilson(share: float, clusters: int) -> tuple[float, float]:
    """Wilson 95% interval of ``share`` with the number of clusters as the sample size (each cluster
    one unit: the design effect at its largest, so the interval holds however correlated the changes
    of a cluster are)."""
    _, lo, hi = wilson_interval(share * clusters, clusters)
    return lo, hi


def newcombe_diff(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """Difference of two proportions ``k1/n1 - k2/n2`` with Newcombe's hybrid score 95% interval
    (Newcombe 1998, method 10: Wilson intervals of each side combined): statsmodels'
    ``confint_proportions_2indep(method="newcomb")``. Independent samples; on positively
    correlated ones (the same items) it is conservative."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    for k, n in ((k1, n1), (k2, n2)):
        if n <= 0 or not 0 <= k <= n:
            raise ValueError(f"a share needs n > 0 and 0 <= k <= n; got k={k}, n={n}")
    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
    return k1 / n1 - k2 / n2, float(lo), float(hi)


def proportions_contrast_interval(
    terms: Sequence[tuple[float, float, int]], level: float = LEVEL
) -> tuple[float, float, float]:
    """A linear contrast ``sum c_i * k_i / n_i`` of independent binomial shares with Price and
    Bonett's adjusted Wald interval (Comput. Stat. Data Anal. 45, 2004): each of the ``m`` shares
    gets ``2/m`` extra successes in ``4/m`` extra trials for the interval (Agresti-Caffo's
    "add one success and one failure" when ``m = 2``), so the interval keeps its coverage at small
    ``n`` and at shares of 0 or 1, where the plain Wald interval has zero width. ``terms``:
    ``(c_i, k_i, n_i)``. Returns the plain contrast and the interval (centred on the adjusted
    contrast).

    Written here: statsmodels' ``confint_proportions_2indep(method="agresti-caffo")`` is this
    interval for a difference of two shares only; the contrasts used here have four."""
    from scipy.stats import norm

    if not terms:
        raise ValueError("terms is empty: a contrast needs at least one share")
    m = len(terms)
    z = float(norm.ppf(0.5 + level / 2))
    point, centre, var = 0.0, 0.0, 0.0
    for c, k, n in terms:
        if n <= 0 or not 0 <= k <= n:
            raise ValueError(f"a share needs n > 0 and 0 <= k <= n; got k={k}, n={n}")
        n_adj = n + 4 / m
        p_adj = (k + 2 / m) / n_adj
        point += c * k / n
        centre += c * p_adj
        var += c * c * p_adj * (1 - p_adj) / n_adj
    half = z * math.sqrt(var)
    return point, centre - half, centre + half


def permutation_null(
    stat: Callable[[np.ndarray], float],
    labels: ArrayLike,
    n_perm: int = 200,
    seed: int = 0,
    groups: ArrayLike | None = None,
) -> np.ndarray:
    """``stat`` of ``n_perm`` shuffles of ``labels`` (within each group of ``groups`` when given:
    e.g. correctness shuffled within each benchmark). Returns the null distribution (finite
    values).

    Without groups: ``scipy.stats.permutation_test``'s null distribution (one sample, pairings:
    the order of the labels permuted; every order when there are at most ``n_perm``). Within
    groups the shuffles are ours: scipy has no stratified permutation."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    if groups is None:
        from scipy.stats import permutation_test

        res = permutation_test(
            (labels,),
            lambda y: float(stat(y)),
            permutation_type="pairings",
            vectorized=False,
            n_resamples=n_perm,
            rng=rng,
        )
        out = np.asarray(res.null_distribution, dtype=float)
        return out[np.isfinite(out)]
    groups = np.asarray(groups)
    if groups.shape[0] != labels.shape[0]:
        raise ValueError(f"groups has {groups.shape[0]} entries but labels has {labels.shape[0]}")
    idx_by_group = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    out = []
    for _ in range(n_perm):
        perm = labels.copy()
        for idx in idx_by_group:
            perm[idx] = labels[rng.permutation(idx)]
        out.append(stat(perm))
    out = np.asarray(out, dtype=float)
    return out[np.isfinite(out)]


MAX_EXACT_ORDERS = 8
"""Most entries whose orders a rank null enumerates exactly (8! = 40,320); beyond it, draws."""


def rank_permutation_null(
    a: ArrayLike, b: ArrayLike, n_perm: int = 5000, seed: int = 0
) -> tuple[float, np.ndarray]:
    """Spearman of ``a`` and ``b`` and its permutation distribution:
    ``scipy.stats.permutation_test`` over the orders of ``b`` (``pairings``), every order for up
    to :data:`MAX_EXACT_ORDERS` entries (exact), else ``n_perm`` orders drawn from
    ``numpy.random.default_rng(seed)`` (12 benchmarks have 479M orders; scipy's draws differ from
    the hand loop this replaced, so sampled nulls moved). Ties take average ranks; NaN where a
    side is constant."""
    from scipy.stats import permutation_test, rankdata

    ra = rankdata(np.asarray(a, float))
    rb = rankdata(np.asarray(b, float))
    if ra.shape != rb.shape:
        raise ValueError(f"a and b need one length, got {ra.size} and {rb.size}")
    ac = ra - ra.mean()
    n = ra.size

    def spearman(r: np.ndarray, axis: int = -1) -> np.ndarray:
        # Pearson of the ranks (an order of b's values is the same order of its ranks), one
        # formula for the observed value and every draw, so the observed order is one of the draws
        # to the last bit (scipy.stats.spearmanr agrees within 1e-15)
        rc = r - r.mean(axis=axis, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            c = (rc @ ac) / (n - 1)
            c = c / np.sqrt((rc * rc).sum(axis=axis) / (n - 1)) / np.sqrt(ac @ ac / (n - 1))
        return np.clip(c, -1, 1)

    rho = float(spearman(rb))
    res = permutation_test(
        (rb,),
        spearman,
        permutation_type="pairings",
        vectorized=True,
        # scipy documents n_resamples=inf as "every order" (its annotation says int)
        n_resamples=cast(int, np.inf) if len(rb) <= MAX_EXACT_ORDERS else n_perm,
        rng=np.random.default_rng(seed),
    )
    null = np.asarray(res.null_distribution, dtype=float)
    return rho, null[np.isfinite(null)]


MAX_EXACT_ARRANGEMENTS = 20_000
"""Most label arrangements :func:`label_permutation_null` enumerates exactly; beyond it, draws."""


def label_permutation_null(
    treated: Sequence[float], control: Sequence[float], n_perm: int = 10_000, seed: int = 0
) -> tuple[float, np.ndarray, bool]:
    """Difference of means ``mean(treated) - mean(control)`` and its distribution under every
    arrangement of the labels over the units (exact when there are at most
    :data:`MAX_EXACT_ARRANGEMENTS` arrangements, else ``n_perm`` seeded draws). Returns
    ``(observed, null, exact)``.

    Written here rather than with ``scipy.stats.permutation_test``: scipy refuses a side of one
    unit, which the smallest designs have (one contaminated fine-tune against the rest)."""
    import itertools

    a, b = np.asarray(treated, float), np.asarray(control, float)
    pooled, n_a = np.concatenate([a, b]), len(a)
    observed = float(a.mean() - b.mean())
    total = pooled.sum()
    n_arr = math.comb(len(pooled), n_a)
    if n_arr <= MAX_EXACT_ARRANGEMENTS:
        picks = (list(c) for c in itertools.combinations(range(len(pooled)), n_a))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        picks = (rng.choice(len(pooled), n_a, replace=False) for _ in range(n_perm))
        exact = False
    null = []
    for idx in picks:
        s = pooled[idx].sum()
        null.append(s / n_a - (total - s) / (len(pooled) - n_a))
    return observed, np.asarray(null, float), exact


def smallest_p(n_treated: int, n_control: int) -> float:
    """Smallest one-sided p-value an exact label permutation over ``n_treated + n_control``
    units can give: one arrangement in C(n, n_treated)."""
    return 1.0 / math.comb(n_treated + n_control, n_treated)


def order_band(null: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Central ``level`` band of a null distribution read from its order statistics (``lower`` and
    ``higher`` quantiles, never interpolated): an observed value beyond it has an exact one-sided
    p-value under (1 - level) / 2, and with too few arrangements no value can be beyond it."""
    a = (1 - level) / 2
    return float(np.quantile(null, a, method="lower")), float(
        np.quantile(null, 1 - a, method="higher")
    )


def null_band(samples: Iterable[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and central ``level`` range of a null distribution (permutations, random controls)."""
    s = np.asarray([x for x in samples if x is not None and np.isfinite(x)], dtype=float)
    if s.size == 0:
        return float("nan"), float("nan"), float("nan")
    a = (1 - level) / 2
    return float(s.mean()), float(np.quantile(s, a)), float(np.quantile(s, 1 - a))


def seed_repeats(fn: Callable[[int], float], seeds: Sequence[int]) -> list[float]:
    """``fn(seed)`` for every seed (a random-model control, a rerun of a pipeline)."""
    return [float(fn(int(s))) for s in seeds]


def jaccard(a: set | np.ndarray, b: set | np.ndarray, empty: float | None = None) -> float:
    """Jaccard index ``|A & B| / |A | B|`` of two sets: Python sets, or boolean masks of one shape
    (``True`` = member; any shape, compared elementwise).

    Two empty sets give ``0 / 0``, which has no value by the formula; ``empty`` is what the caller
    returns then, chosen where that case can occur: ``1.0`` when two empty sets count as identical
    (covered-concept sets of two benchmarks, the cores of two runs) or ``float("nan")`` when there
    is nothing to compare (two explanations that both name no token). ``empty=None`` (the default)
    raises instead of choosing.
    """
    if isinstance(a, (set, frozenset)) or isinstance(b, (set, frozenset)):
        inter, union = len(set(a) & set(b)), len(set(a) | set(b))
    else:
        a, b = np.asarray(a, bool), np.asarray(b, bool)
        if a.shape != b.shape:
            raise ValueError(f"jaccard of two masks needs one shape, got {a.shape} and {b.shape}")
        inter, union = (a & b).sum(), (a | b).sum()
    if union == 0:
        if empty is None:
            raise ValueError(
                "jaccard of two empty sets is 0/0: pass empty=1.0 (identical) or empty=nan "
                "(undefined)"
            )
        return float(empty)
    return float(inter / union)
