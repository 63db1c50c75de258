"""Tests of kit.cg.robustness: dropout reruns and adversarial removal (seed 002, section 4.2.3)."""

from __future__ import annotations

import numpy as np

from kit.cg import robustness


def test_dropout_robustness_zero_std_when_items_identical():
    acts = {"a": np.tile([1.0, 2.0, 0.5], (20, 1)), "b": np.tile([0.5, 0.0, 1.0], (10, 1))}
    scores = {"a": np.ones(20), "b": np.zeros(10)}
    r = robustness.dropout_robustness(acts, scores, n_reruns=5, drop_frac=0.2)
    assert np.allclose(r.std_x_bench, 0) and np.allclose(r.std_x_model, 0)


def test_dropout_robustness_positive_std_with_heterogeneous_items():
    rng = np.random.default_rng(0)
    acts = {"a": rng.exponential(size=(30, 4))}
    scores = {"a": rng.integers(0, 2, 30)}
    r = robustness.dropout_robustness(acts, scores, n_reruns=20, drop_frac=0.2)
    assert r.mean_std_x_bench > 0 and r.mean_std_x_model > 0
    r2 = robustness.dropout_robustness(acts, scores, n_reruns=20, drop_frac=0.2)
    assert np.allclose(r.std_x_model, r2.std_x_model), "same seed must give the same reruns"


def test_salient_items_pick_items_of_chosen_concepts():
    acts = {
        "a": np.array([[5.0, 0.0], [0.0, 1.0], [1.0, 0.0]]),
        "b": np.array([[0.0, 3.0], [1.0, 0.0]]),
    }
    remove = robustness.salient_items(acts, [0], n_items=2)
    # shares for concept 0: a: 5/6, 0, 1/6; b: 0, 1/1 -> top two are b[1] (1.0) and a[0] (0.83)
    assert remove["a"].tolist() == [True, False, False] and remove["b"].tolist() == [False, True]


def test_adversarial_removal_moves_median_in_expected_direction():
    rng = np.random.default_rng(0)
    n, c = 200, 20
    acts = rng.exponential(size=(n, c)) * (rng.random((n, c)) < 0.3)
    # concept 0..4 are "easy": items using them are correct; 15..19 "hard"
    easy = acts[:, :5].sum(1) > 0.5
    hard = acts[:, 15:].sum(1) > 0.5
    scores = np.where(easy & ~hard, 1.0, np.where(hard & ~easy, 0.0, 0.5))
    r = robustness.adversarial_removal(
        {"a": acts}, {"a": scores}, n_concepts=5, n_items=30, repeats=3
    )
    assert np.mean(r.shift_best) < 0 < np.mean(r.shift_worst), (
        "removing the best concepts' items must lower median X_model and the worst ones' raise it"
    )
