"""Shuffled-correctness nulls (kit.cg.nulls): the vectorised statistics equal their one-column
definitions, and real concept-failure ties beat the null while noise does not."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import metrics as cgm
from kit.cg import nulls as N
from kit.cg.robustness import dropout_robustness


def test_score_matrix_keeps_column_zero_and_accuracy():
    S = N.score_matrix({"a": [1, 0, 1, 1], "b": [0, 1]}, 5, seed=3)
    assert S["a"].shape == (4, 6) and S["a"][:, 0].tolist() == [1, 0, 1, 1]
    assert (S["a"].sum(0) == 3).all() and (S["b"].sum(0) == 1).all(), (
        "a permutation keeps the accuracy"
    )


def test_x_model_columns_equal_eq5_per_column(model_suite_of):
    acts, scores = model_suite_of(True)
    S = N.score_matrix(scores, 3, seed=1)
    x = N.x_model_columns({b: sp.csr_matrix(a) for b, a in acts.items()}, S)
    for j in range(4):
        ref = cgm.x_model(acts, {b: s[:, j] for b, s in S.items()})
        assert np.allclose(x[:, j], ref, equal_nan=True)
    rows = {"b1": np.arange(0, 200, 2), "b2": np.arange(50)}
    x = N.x_model_columns({b: sp.csr_matrix(a) for b, a in acts.items()}, S, rows)
    ref = cgm.x_model({b: acts[b][rows[b]] for b in acts}, {b: S[b][rows[b], 2] for b in acts})
    assert np.allclose(x[:, 2], ref, equal_nan=True)


def test_dropout_columns_column_zero_is_the_papers_dropout_std(model_suite_of):
    acts, scores = model_suite_of(False)
    S = N.score_matrix(scores, 2, seed=1)
    got = N.dropout_columns(acts, S, n_reruns=7, drop_frac=0.2, seed=4)
    ref = dropout_robustness(acts, scores, n_reruns=7, drop_frac=0.2, seed=4).mean_std_x_model
    assert got[0] == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="at least 2 reruns"):
        N.dropout_columns(acts, S, n_reruns=1)


def test_spearman_columns_by_hand():
    x = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([[10.0, 30.0], [20.0, 20.0], [30.0, 10.0]])
    assert N._spearman_columns(x, y) == pytest.approx([1.0, -1.0])
    assert np.isnan(N._spearman_columns(x, np.ones((3, 2)))).all(), (
        "a constant column has no rank correlation"
    )


def test_model_nulls_separate_real_gaps_from_noise(model_suite_of):
    real = N.model_nulls(
        "m",
        *model_suite_of(True),
        adv_n_concepts=3,
        adv_n_items=20,
        adv_repeats=2,
        n_reruns=5,
        n_draws=100,
        n_splits=5,
    )
    assert (
        real.gaps == 2
        and real.gaps_null.shape == (100,)
        and real.gaps > np.quantile(real.gaps_null, 0.975)
    )
    assert real.split_half > 0.8 > np.quantile(real.split_half_null, 0.975)
    assert real.p_value("gaps", "greater") == pytest.approx(1 / 101)
    noise = N.model_nulls(
        "m",
        *model_suite_of(False),
        adv_n_concepts=3,
        adv_n_items=20,
        adv_repeats=2,
        n_reruns=5,
        n_draws=100,
        n_splits=5,
    )
    lo, hi = np.quantile(noise.split_half_null, [0.025, 0.975])
    assert lo <= noise.split_half <= hi, "a profile of noise sits inside its own null"
    t = real.table().set_index("quantity")
    assert t.loc["model gaps (X_model < eps), count", "beats null"]
    with pytest.raises(ValueError, match="at least 100 draws"):
        N.model_nulls("m", *model_suite_of(True), n_draws=10)
