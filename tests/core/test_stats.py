"""kit.core.stats: the interval, null and overlap helpers, on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kit.core import stats


def test_wilson_interval_hand_case():
    # k=2, n=4, z=1.95996: centre 0.5, half = z*sqrt(0.0625 + z^2/64)/(1 + z^2/4) = 0.3825...
    p, lo, hi = stats.wilson_interval(2, 4)
    z = 1.959963984540054
    half = z * math.sqrt(0.25 / 4 + z * z / 64) / (1 + z * z / 4)
    assert p == 0.5 and lo == pytest.approx(0.5 - half) and hi == pytest.approx(0.5 + half)
    assert stats.wilson_interval(0, 5)[1] == 0.0


def test_t_and_welch_intervals_hand_case():
    m, lo, hi = stats.t_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(0.975, 2) = 4.3027
    assert m == 2.0 and hi - m == pytest.approx(4.302652729911275 / math.sqrt(3))
    assert math.isnan(stats.t_interval([1.0])[1])
    d, lo, hi = stats.welch_interval([1.0, 1.0], [0.0, 0.0])
    assert (d, lo, hi) == (1.0, 1.0, 1.0)  # no spread: a zero-width interval
    d, lo, hi = stats.welch_interval([0.5, 0.5, 0.75], [0.75, 0.5, 1.0])
    assert d == pytest.approx(-1 / 6) and lo < d < hi


def test_paired_bootstrap_keeps_items_together():
    a = np.arange(50, dtype=float)
    point, lo, hi = stats.bootstrap_ci(lambda x, y: float(np.mean(x - y)), a, a + 2.0, n_boot=200)
    assert point == lo == hi == -2.0  # paired: the difference is the same for every resample
    point, lo, hi = stats.mean_diff_ci(a, a + 2.0, paired=False, n_boot=200)
    assert point == -2.0 and lo < -2.0 < hi  # unpaired: the spread of a shows up
    with pytest.raises(ValueError, match="one length"):
        stats.bootstrap_ci(np.mean, a, a[:3])
    # deterministic under its seed
    assert stats.bootstrap_ci(np.mean, a, seed=3) == stats.bootstrap_ci(np.mean, a, seed=3)


def test_bootstrap_groups_and_permutation_null():
    groups = [(np.ones(10), np.zeros(10)), (np.ones(5), np.ones(5))]
    point, lo, hi = stats.bootstrap_groups_ci(
        lambda g: float(np.mean([np.mean(x - y) for x, y in g])), groups, n_boot=100
    )
    assert point == lo == hi == 0.5
    # shuffling within groups keeps each group's label counts: a per-group sum is invariant
    labels = np.array([1, 1, 0, 0, 1, 0])
    grp = np.array([0, 0, 0, 1, 1, 1])
    null = stats.permutation_null(lambda y: float(y[grp == 0].sum()), labels, n_perm=30, groups=grp)
    assert set(null) == {2.0}
    mean, lo, hi = stats.null_band(np.arange(101, dtype=float))
    assert (mean, lo, hi) == pytest.approx((50.0, 2.5, 97.5))
    assert stats.seed_repeats(lambda s: s * 2, [1, 2]) == [2.0, 4.0]


def test_rank_permutation_null_is_exact():
    rho, null = stats.rank_permutation_null([1, 2, 3, 4], [10, 20, 30, 40])
    assert rho == 1.0 and len(null) == 24 and np.isclose(null.mean(), 0.0)


def test_rank_permutation_null_samples_past_eight_entries():
    """Twelve benchmarks (the default suite) have 479M orders: the null is sampled, seeded."""
    a = np.arange(12.0)
    rho, null = stats.rank_permutation_null(a, a[::-1], n_perm=400, seed=1)
    assert rho == -1.0 and len(null) == 400 and abs(null.mean()) < 0.1
    assert np.array_equal(null, stats.rank_permutation_null(a, a[::-1], n_perm=400, seed=1)[1])


def test_jaccard_by_hand_and_the_empty_set_rule():
    assert stats.jaccard({1, 2}, {2, 3}) == pytest.approx(1 / 3)
    assert stats.jaccard(np.array([1, 1, 0], bool), np.array([0, 1, 1], bool)) == pytest.approx(
        1 / 3
    )
    # two empty sets: 0/0, the caller's choice (covered concepts, cores: identical; explanations:
    # undefined)
    assert stats.jaccard(set(), set(), empty=1.0) == 1.0
    assert stats.jaccard(np.zeros(3, bool), np.zeros(3, bool), empty=1.0) == 1.0
    assert math.isnan(stats.jaccard(set(), set(), empty=float("nan")))
    assert stats.jaccard({1}, set(), empty=1.0) == 0.0, (
        "one empty set is disjoint from the other, not identical"
    )
    with pytest.raises(ValueError, match="empty"):
        stats.jaccard(set(), set())
    with pytest.raises(ValueError, match="shape"):
        stats.jaccard(np.zeros(3, bool), np.zeros(4, bool))


def test_proportions_contrast_interval_by_hand():
    # Agresti-Caffo for two shares (m = 2: one extra success and one extra failure each):
    # 9/10 - 1/10 -> (10/12 - 2/12) +- 1.96 * sqrt(2 * (10/12)(2/12) / 12)
    point, low, high = stats.proportions_contrast_interval([(1.0, 9, 10), (-1.0, 1, 10)])
    half = 1.959964 * math.sqrt(2 * (10 / 12) * (2 / 12) / 12)
    assert point == pytest.approx(0.8)
    assert (low, high) == pytest.approx((8 / 12 - half, 8 / 12 + half))
    # all-or-nothing shares: plain Wald would give a zero-width interval, this one does not
    _, low, high = stats.proportions_contrast_interval([(1.0, 4, 4), (-1.0, 0, 4)])
    assert high - low > 0.5 and low < 1.0
    with pytest.raises(ValueError, match="terms is empty"):
        stats.proportions_contrast_interval([])
    with pytest.raises(ValueError, match="k=5, n=4"):
        stats.proportions_contrast_interval([(1.0, 5, 4)])


# --- the library statistics against the formulas they replaced ---------------------------------


def _wilson_by_hand(k: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval written out (the formula kit computed before statsmodels)."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_wilson_interval_is_statsmodels_and_the_score_formula(level):
    for n in (1, 2, 3, 7, 40, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n, n / 2.5}):
            if not 0 <= k <= n:
                continue
            p, lo, hi = stats.wilson_interval(k, n, level)
            assert p == k / n
            assert (lo, hi) == pytest.approx(_wilson_by_hand(k, n, level), abs=1e-12)
    with pytest.raises(ValueError, match="k=6"):
        stats.wilson_interval(6, 5)
    assert all(math.isnan(x) for x in stats.wilson_interval(0, 0))


def test_bootstrap_ci_draws_what_the_hand_loop_drew():
    """scipy.stats.bootstrap with a seeded Generator draws n_boot x n item indices in one call:
    the same resamples as ``rng.integers(0, n, (n_boot, n))``, so the interval is the hand
    loop's percentile interval to the last bit (a NaN replicate dropped)."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=23), rng.normal(size=23)

    def stat(a, b):
        return float(np.mean(a - b)) if a[0] < 1.5 else float("nan")  # some resamples undefined

    idx = np.random.default_rng(11).integers(0, 23, size=(300, 23))
    reps = np.array([stat(x[i], y[i]) for i in idx])
    reps = reps[np.isfinite(reps)]
    assert 0 < reps.size < 300, "the case must have some undefined replicates"
    want = (stat(x, y), np.quantile(reps, 0.025), np.quantile(reps, 0.975))
    assert stats.bootstrap_ci(stat, x, y, n_boot=300, seed=11) == pytest.approx(want, abs=1e-12)
    # rows of a 2-D array are items too (the runs x ids matrix of a coherence claim)
    m = rng.normal(size=(23, 4))
    got = stats.bootstrap_ci(lambda r: float(r[:, 0].mean()), m, n_boot=300, seed=11)
    assert got == pytest.approx(stats.bootstrap_ci(np.mean, m[:, 0], n_boot=300, seed=11))


def test_bootstrap_groups_ci_resamples_like_scipy_by_group_and_by_cluster():
    """Each group's units drawn in one (n_boot, n_units) call, group after group (scipy's order);
    a cluster's items always travel together; a group of one unit stays fixed."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=9), rng.normal(size=6)
    clusters_b = np.array([0, 0, 1, 1, 2, 2])
    single = (np.array([4.0]),)

    def stat(g):
        return float(np.mean(g[0][0]) - np.mean(g[1][0]) + g[2][0][0])

    draws = np.random.default_rng(7)
    ia = draws.integers(0, 9, size=(200, 9))
    ib = draws.integers(0, 3, size=(200, 3))
    members = [np.flatnonzero(clusters_b == u) for u in range(3)]
    reps = [
        np.mean(a[i]) - np.mean(b[np.concatenate([members[u] for u in j])]) + 4.0
        for i, j in zip(ia, ib)
    ]
    got = stats.bootstrap_groups_ci(
        stat, [(a,), (b,), single], n_boot=200, seed=7, clusters=[None, clusters_b, None]
    )
    want = (stat([(a,), (b,), single]), np.quantile(reps, 0.025), np.quantile(reps, 0.975))
    assert got == pytest.approx(want, abs=1e-12)
    # nothing to resample: the statistic itself, no spread
    assert stats.bootstrap_groups_ci(lambda g: float(g[0][0][0]), [single]) == (4.0, 4.0, 4.0)


def test_rank_permutation_null_is_every_order_by_spearmanr():
    import itertools

    from scipy.stats import spearmanr

    a, b = [3.0, 1.0, 2.0, 2.0, 5.0], [0.5, 0.1, 0.9, 0.3, 0.3]  # ties on both sides
    rho, null = stats.rank_permutation_null(a, b)
    by_hand = [spearmanr(a, list(o)).statistic for o in itertools.permutations(b)]  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    assert rho == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    assert np.sort(null) == pytest.approx(np.sort(by_hand), abs=1e-12)


def test_permutation_null_without_groups_is_scipys_every_order():
    import itertools

    labels = np.array([1.0, 0.0, 0.0, 2.0])
    null = stats.permutation_null(lambda y: float(y[0] * 10 + y[1]), labels, n_perm=100)
    by_hand = [o[0] * 10 + o[1] for o in itertools.permutations(labels)]
    assert sorted(null) == sorted(by_hand), "4! = 24 orders <= n_perm: all of them, exactly"
    drawn = stats.permutation_null(lambda y: float(y[0]), np.arange(10.0), n_perm=50, seed=1)
    assert drawn.size == 50 and set(drawn) <= set(range(10))
    again = stats.permutation_null(lambda y: float(y[0]), np.arange(10.0), n_perm=50, seed=1)
    assert np.array_equal(drawn, again)


def test_clustered_wilson_uses_the_number_of_clusters_as_the_sample_size():
    lo, hi = stats.clustered_wilson(0.75, 8)
    assert (lo, hi) == pytest.approx(stats.wilson_interval(6, 8)[1:])
    # the same share over 2 clusters is much wider
    lo2, hi2 = stats.clustered_wilson(0.75, 2)
    assert lo2 < lo and hi2 >= hi


def test_label_permutation_null_is_exact_by_hand():
    # units 1, 0 (treated) vs 0 (control): arrangements of 2 treated among 3 values
    obs, null, exact = stats.label_permutation_null([1.0, 0.0], [0.0])
    assert exact and obs == pytest.approx(0.5)
    # {1,0}|0 -> 0.5, {1,0}|0 (the other 0) -> 0.5, {0,0}|1 -> -1
    assert sorted(null.tolist()) == pytest.approx([-1.0, 0.5, 0.5])
    lo, hi = stats.order_band(np.array([-1.0, 0.5, 0.5]))
    assert (lo, hi) == (-1.0, 0.5)


def test_order_band_cannot_be_beaten_with_too_few_arrangements():
    # 4 vs 3 models: 35 arrangements, the most extreme has p = 1/35 > 0.025
    obs, null, exact = stats.label_permutation_null([1, 1, 1, 1], [0, 0, 0])
    assert exact and null.size == math.comb(7, 4) and obs == null.max()
    assert stats.order_band(null)[1] == obs, "the band's top is the maximum: nothing lies beyond it"


def test_smallest_p_is_one_arrangement_in_all():
    assert stats.smallest_p(3, 2) == pytest.approx(0.1)  # C(5, 3) = 10
    assert stats.smallest_p(1, 1) == pytest.approx(0.5)


def test_newcombe_interval_of_a_difference_of_accuracies():
    # Newcombe (1998), Table II: 56/70 - 48/80 = 0.2000, method 10 (hybrid score) [0.0524, 0.3339]
    d, lo, hi = stats.newcombe_diff(56, 70, 48, 80)
    assert abs(d - 0.2) < 1e-12 and abs(lo - 0.0524) < 5e-4 and abs(hi - 0.3339) < 5e-4


def test_newcombe_interval_is_statsmodels_and_the_wilson_combination():
    for k1, n1, k2, n2 in [(56, 70, 48, 80), (0, 10, 0, 10), (10, 10, 3, 12), (1, 3, 2, 2)]:
        p1, l1, u1 = stats.wilson_interval(k1, n1)
        p2, l2, u2 = stats.wilson_interval(k2, n2)
        d = p1 - p2
        want = (d, d - np.hypot(p1 - l1, u2 - p2), d + np.hypot(u1 - p1, p2 - l2))
        assert stats.newcombe_diff(k1, n1, k2, n2) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="k=4, n=3"):
        stats.newcombe_diff(4, 3, 1, 2)
