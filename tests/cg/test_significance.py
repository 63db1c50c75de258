"""Tests of kit.cg.significance: Benjamini-Hochberg q-values and the per-concept gap test."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import significance


def test_bh_qvalues_hand_computed_and_nan_is_not_a_test():
    # sorted p = .01, .02, .03, .5 (m = 4): raw .04, .04, .04, .5; the running min from the top
    # keeps them
    q = significance.bh_qvalues(np.array([0.03, np.nan, 0.01, 0.5, 0.02]))
    assert np.isnan(q[1])
    assert np.allclose(q[[0, 2, 3, 4]], [0.04, 0.04, 0.5, 0.04]), (
        "BH: q_(i) = min_{j>=i} p_(j) m / j over the tests only"
    )
    assert np.allclose(significance.bh_qvalues([0.04, 0.03]), [0.04, 0.04])


def test_gap_test_with_binary_activations_is_fishers_exact_test():
    from scipy.stats import hypergeom

    rng = np.random.default_rng(1)
    n = 40
    acts = np.zeros((n, 2))
    acts[:10, 0] = 1.0  # concept 0: items 0-9, 3 of them correct
    acts[:, 1] = 1.0  # concept 1: every item (X_model = accuracy: p about 1)
    scores = np.ones(n)
    scores[rng.choice(np.arange(10, n), 6, replace=False)] = 0
    scores[:10] = 0
    scores[:3] = 1
    t = significance.gap_test({"b": acts}, {"b": scores}, n_perm=20000, min_support=1, seed=0)
    exact = hypergeom.cdf(3, n, int(scores.sum()), 10)  # P(<= 3 correct among the 10 active items)
    assert abs(t.p_low[0] - exact) < 0.005, (
        "the permutation null of binary X_model is the hypergeometric"
    )
    assert t.p_low[1] == 1.0 and np.isclose(t.null_mean[1], scores.mean())


def test_gap_test_reports_only_gaps_that_beat_their_null():
    n, d = 200, 10
    rows = np.arange(n)
    acts = np.zeros((n, d))
    acts[rows, rows % d] = 1.0
    scores = np.ones(n)
    scores[rows % d == 0] = 0  # concept 0: all 20 items wrong, a real gap
    scores[[1, 11]] = 0  # concept 1: 2 of 20 wrong, what chance gives
    rare = np.zeros((n, 1))
    rare[[5, 15], 0] = 1.0  # concept 10: on 2 items only, both wrong
    scores[[5, 15]] = 0
    acts = np.hstack([acts, rare])
    t = significance.gap_test(
        {"b": sp.csr_matrix(acts)}, {"b": scores}, n_perm=500, min_support=5, seed=0
    )
    cls = t.classes()
    assert cls[0] == "gap" and t.q_low[0] <= 0.05
    assert cls[10] == "too few items" and np.isnan(t.p_low[10]), (
        "X_model 0 on 2 items is no evidence"
    )
    assert (cls[1:10] == "not significant").all()
    assert significance.gap_test(
        {"b": acts}, {"b": scores}, n_perm=500, min_support=5, seed=0
    ).p_low.tolist() == pytest.approx(t.p_low.tolist(), nan_ok=True), (
        "deterministic for a seed, dense or sparse"
    )


def test_bh_qvalues_equal_the_step_up_formula_written_out():
    """scipy.stats.false_discovery_control against BH by hand, NaN entries left out."""

    def by_hand(p):
        q = np.full(p.shape, np.nan)
        ok = np.flatnonzero(np.isfinite(p))
        order = ok[np.argsort(p[ok], kind="stable")]
        m = order.size
        raw = p[order] * m / np.arange(1, m + 1)
        q[order] = np.minimum(1.0, np.minimum.accumulate(raw[::-1])[::-1])
        return q

    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 200):
        p = rng.uniform(size=size) ** 3
        p[rng.uniform(size=size) < 0.2] = np.nan
        p[: size // 3] = np.round(p[: size // 3], 1)  # ties
        assert np.allclose(significance.bh_qvalues(p), by_hand(p), atol=1e-12, equal_nan=True)
    assert np.isnan(significance.bh_qvalues(np.array([np.nan, np.nan]))).all()
