"""kit.cg.coverage: the suite- and model-level calls agree with the formulas they bundle."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import coverage as C
from kit.cg import metrics as M


def _suite(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    acts = {}
    for b, n in (("a", 12), ("b", 7), ("c", 9)):
        x = rng.exponential(size=(n, 20)) * (rng.random((n, 20)) < 0.3)
        x[:, 0] = 0.0  # concept 0 never fires: missing, and undefined for every model
        acts[b] = sp.csr_matrix(x)
    return acts


def test_coverage_hand_computed():
    suite = {"a": np.array([[1.0, 0.0, 3.0, 0.0]]), "b": np.array([[2.0, 2.0, 0.0, 0.0]])}
    cov = C.benchmark_coverage(suite)
    # chi_bench: (1, 0, 3, 0) / 1 and (2, 2, 0, 0) / 1; X_bench their mean
    np.testing.assert_allclose(cov.chi_bench["a"], [1, 0, 3, 0])
    np.testing.assert_allclose(cov.x_bench, [1.5, 1.0, 1.5, 0.0])
    assert cov.missing.tolist() == [3]
    assert cov.missing_per_benchmark.to_dict() == {"a": 0.5, "b": 0.5}


def test_coverage_and_gaps_match_the_concept_table():
    acts = _suite()
    rng = np.random.default_rng(1)
    correct = {b: rng.integers(0, 2, a.shape[0]).astype(float) for b, a in acts.items()}
    table = M.concept_table(acts, correct)
    cov, gaps = C.benchmark_coverage(acts), C.model_gaps(acts, correct)
    np.testing.assert_array_equal(cov.x_bench, table["x_bench"].to_numpy())
    assert cov.classes.tolist() == table["coverage"].tolist()
    np.testing.assert_array_equal(gaps.x_model, table["x_model"].to_numpy())
    assert gaps.classes.tolist() == table["model_gap"].tolist()
    assert 0 in cov.missing and gaps.classes[0] == "undefined"
    assert gaps.accuracy.to_dict() == pytest.approx({b: c.mean() for b, c in correct.items()})


def test_model_gaps_names_the_missing_benchmark():
    acts = _suite()
    with pytest.raises(ValueError, match="correct_by_benchmark lacks benchmark.*'c'"):
        C.model_gaps(acts, {"a": np.ones(12), "b": np.ones(7)})


def test_benchmark_concepts_rejects_an_empty_suite():
    with pytest.raises(ValueError, match="texts_by_benchmark is empty"):
        C.benchmark_concepts(None, None, {})
