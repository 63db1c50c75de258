"""Hand-computed cases for kit.cg.metrics (Competency Gaps, seed 002, section 3), and the parts of
kit.cg.robustness and kit.cg.significance that read the same hand-computed matrices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from kit.cg import metrics as cg
from kit.cg import robustness, significance

# Two items, three concepts. Column sums: [3, 1, 0]; mean concept total = 4/3.
A = np.array([[1.0, 1.0, 0.0], [2.0, 0.0, 0.0]])


# Second benchmark: column sums [0, 2, 2]; mean = 4/3.
B = np.array([[0.0, 2.0, 1.0], [0.0, 0.0, 1.0]])


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    torch.manual_seed(0)


def test_item_activation_is_sum_over_tokens_divided_by_length():
    feats = torch.tensor([[1.0, 0.0], [3.0, 2.0], [2.0, 1.0]])
    out = cg.item_concept_activation(feats)
    assert torch.allclose(out, torch.tensor([2.0, 1.0])), (
        "eq. 1: s~ = (sum over tokens)/|x_i|, not the max or the sum"
    )


def test_segment_mean_splits_items_laid_end_to_end():
    feats = torch.tensor([[1.0, 0.0], [3.0, 2.0], [2.0, 1.0], [4.0, 4.0]])
    out = cg.segment_mean(feats, [3, 1])
    assert torch.allclose(out, torch.tensor([[2.0, 1.0], [4.0, 4.0]]))
    with pytest.raises(ValueError, match="lengths sum"):
        cg.segment_mean(feats, [2, 1])
    with pytest.raises(ValueError, match="at least one token"):
        cg.segment_mean(feats, [4, 0])


def test_segment_pool_last_takes_each_items_last_token_in_a_batch_of_different_lengths():
    # three items laid end to end, 3, 1 and 2 tokens: rows 0-2, 3, 4-5; their last tokens are rows
    # 2, 3, 5
    feats = torch.tensor([[1.0, 0.0], [3.0, 2.0], [2.0, 1.0], [4.0, 4.0], [0.0, 5.0], [6.0, 0.0]])
    last = cg.segment_pool(feats, [3, 1, 2], "last")
    assert torch.equal(last, torch.tensor([[2.0, 1.0], [4.0, 4.0], [6.0, 0.0]]))
    assert torch.allclose(
        cg.segment_pool(feats, [3, 1, 2], "mean"),
        torch.tensor([[2.0, 1.0], [4.0, 4.0], [3.0, 2.5]]),
    )
    assert torch.equal(cg.segment_pool(feats, [3, 1, 2]), cg.segment_mean(feats, [3, 1, 2])), (
        "default = eq. 1"
    )
    with pytest.raises(ValueError, match="pooling='max': allowed values: mean, last"):
        cg.segment_pool(feats, [3, 1, 2], "max")
    with pytest.raises(ValueError, match="lengths sum"):
        cg.segment_pool(feats, [3, 1, 1], "last")


def test_concept_activations_streams_into_sparse_rows():
    b1 = (torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 2.0], [0.0, 0.0, 0.0]]), [2, 1])
    b2 = (torch.tensor([[0.0, 6.0, 0.0]]), [1])
    m = cg.concept_activations([b1, b2], n_concepts=3)
    assert sp.issparse(m) and m.shape == (3, 3)
    assert np.allclose(m.toarray(), [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 6.0, 0.0]])
    assert m.nnz == 3, "only active concepts may be stored (sparse rows)"


def test_chi_bench_hand_computed():
    # eq. 2: column sums / mean column sum = [3, 1, 0] / (4/3)
    assert np.allclose(cg.chi_bench(A), [9 / 4, 3 / 4, 0.0])
    assert np.isclose(cg.chi_bench(A).mean(), 1.0), (
        "chi_bench is relative to the average concept: its mean is 1"
    )


def test_chi_bench_same_for_sparse_and_dense():
    assert np.allclose(cg.chi_bench(sp.csr_matrix(A)), cg.chi_bench(A))


def test_chi_bench_rejects_benchmark_without_activation_and_negative_acts():
    with pytest.raises(ValueError, match="no concept is active"):
        cg.chi_bench(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        cg.chi_bench(-A)


def test_x_bench_is_mean_over_all_benchmarks():
    # chi(B) = [0, 2, 2]/(4/3) = [0, 1.5, 1.5]; X = mean([2.25, .75, 0], [0, 1.5, 1.5])
    assert np.allclose(cg.x_bench({"a": A, "b": B}), [1.125, 1.125, 0.75])


def test_x_bench_active_denominator_is_the_texts_mean_over_b_c():
    # chi(A) = [2.25, .75, 0], chi(B) = [0, 1.5, 1.5]: concept 0 is active in A only, 1 in both, 2
    # in B only
    assert np.allclose(cg.x_bench({"a": A, "b": B}, denominator="active"), [2.25, 1.125, 1.5])
    none = np.zeros((2, 3))
    none[0, 0] = 1.0
    assert cg.x_bench({"a": none}, denominator="active")[1] == 0.0, (
        "no activating benchmark: missing, not NaN"
    )
    with pytest.raises(ValueError, match="allowed values: all, active"):
        cg.x_bench({"a": A}, denominator="mean")


def test_chi_model_all_correct_concept_is_exactly_one_for_float32_sparse_acts():
    rng = np.random.default_rng(0)
    acts = sp.csr_matrix(rng.random((500, 4)).astype(np.float32))
    out = cg.chi_model(acts, np.ones(500))
    assert (out == 1.0).all(), f"an all-correct concept must be exactly 1.0, got {out}"


def test_x_bench_weights_benchmarks_equally_regardless_of_size():
    big = np.vstack([A] * 50)
    assert np.allclose(cg.x_bench({"a": big, "b": B}), cg.x_bench({"a": A, "b": B})), (
        "X_bench must weigh every benchmark equally (eq. 3), not pool items"
    )


def test_chi_model_hand_computed_and_undefined():
    # item scores m = [1, 0]: concept 0: (1*1 + 0*2)/3 = 1/3; concept 1: 1/1; concept 2: undefined
    out = cg.chi_model(A, [1, 0])
    assert np.isclose(out[0], 1 / 3) and np.isclose(out[1], 1.0)
    assert np.isnan(out[2]), (
        "chi_model must be NaN (undefined) where no item activates the concept, not 0"
    )


def test_chi_model_validates_scores():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cg.chi_model(A, [2, 0])
    with pytest.raises(ValueError, match="2 items"):
        cg.chi_model(A, [1, 0, 1])


def test_x_model_means_over_defined_benchmarks_only():
    # chi_model(A, [1,0]) = [1/3, 1, nan]; chi_model(B, [0,1]) = [nan, 0, 1/2]
    out = cg.x_model({"a": A, "b": B}, {"a": [1, 0], "b": [0, 1]})
    assert np.allclose(out, [1 / 3, 0.5, 0.5]), (
        "X_model averages only where chi_model is defined (eq. 5); NaN must not count as 0"
    )


def test_x_model_nan_when_no_benchmark_activates():
    out = cg.x_model({"a": A}, {"a": [1, 1]})
    assert np.isnan(out[2]) and np.allclose(out[:2], [1, 1])


def test_x_model_requires_scores_for_each_benchmark():
    with pytest.raises(ValueError, match="lacks benchmark"):
        cg.x_model({"a": A, "b": B}, {"a": [1, 0]})


def test_coverage_classes_decile_rule():
    # 1 missing + 10 values 1..10: 10th pct of the rest = 1.9 -> only 1 is under; 90th = 9.1 -> only
    # 10 over
    x = np.array([0.0] + list(range(1, 11)), dtype=float)
    cls = cg.coverage_classes(x)
    assert cls[0] == "missing"
    assert list(np.flatnonzero(cls == "under")) == [1]
    assert list(np.flatnonzero(cls == "over")) == [10]
    assert (cls[2:10] == "normal").all()


def test_coverage_classes_percentiles_exclude_missing():
    # with missing zeros included the 10th percentile would be 0 and nothing would be "under"
    x = np.array([0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], dtype=float)
    cls = cg.coverage_classes(x)
    assert (cls == "under").sum() == 1 and cls[5] == "under", (
        "deciles are computed among the non-missing concepts only"
    )


def test_coverage_classes_inclusive_at_percentile():
    # 10th percentile of [1, 2, 3, 4, 5, 6, 7, 8, 9, 1]: two ties at 1 -> both under ("at or below")
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 1], dtype=float)
    assert (cg.coverage_classes(x) == "under").sum() == 2


def test_coverage_epsilon_boundary():
    x = np.array([0.99e-5, 1e-5, 1, 2, 3])
    cls = cg.coverage_classes(x)
    assert cls[0] == "missing" and cls[1] != "missing", "missing is strictly X < eps"


def test_model_gap_classes():
    x = np.array([np.nan, 0.0, *np.linspace(0.1, 1.0, 10)])
    cls = cg.model_gap_classes(x)
    assert cls[0] == "undefined" and cls[1] == "gap"
    assert cls[2] == "worst-decile" and cls[-1] == "best-decile"
    assert (cls[3:-1] == "normal").all()


def test_missing_fraction_per_benchmark():
    frac = cg.missing_fraction({"a": A, "b": B})
    assert np.isclose(frac["a"], 1 / 3) and np.isclose(frac["b"], 1 / 3)


def test_jaccard_overlap_hand_computed():
    # covered: a = {0, 1}, b = {1, 2} -> J = 1/3
    j = robustness.jaccard_overlap({"a": A, "b": B})
    assert np.isclose(j.loc["a", "b"], 1 / 3) and np.isclose(j.loc["a", "a"], 1.0)


def test_profile_difference():
    d = cg.profile_difference(A, [1, 0], [0, 1])
    assert np.allclose(d[:2], [1 / 3 - 2 / 3, 1.0]) and np.isnan(d[2])


def test_concept_table_columns():
    df = cg.concept_table({"a": A, "b": B}, {"a": [1, 0], "b": [0, 1]}, labels=["x", "y", "z"])
    assert list(df.columns) == ["concept", "label", "x_bench", "coverage", "x_model", "model_gap"]
    assert df.loc[2, "label"] == "z"
    tb = cg.top_bottom(df, "x_model", n=1)
    assert tb.loc[0, "concept"] == 2 and tb.loc[1, "concept"] == 0


def test_item_concept_activation_refuses_nan():
    """A NaN SAE activation used to make the item's concept vector NaN silently."""
    from kit.core.checks import NonFiniteError

    acts = torch.ones(3, 4)
    acts[1, 2] = float("nan")
    with pytest.raises(NonFiniteError, match=r"feature_acts.*index \(1, 2\)"):
        cg.item_concept_activation(acts)
    with pytest.raises(NonFiniteError, match="token_values"):
        cg.segment_mean(acts, [1, 2])


def test_concept_support_counts_active_items_over_benchmarks():
    assert significance.concept_support({"a": A, "b": sp.csr_matrix(B)}).tolist() == [2, 2, 2]


def test_gap_test_validates_its_settings():
    with pytest.raises(ValueError, match="min_support"):
        significance.gap_test({"a": A}, {"a": [1, 0]}, min_support=0)
    with pytest.raises(ValueError, match="alpha"):
        significance.gap_test({"a": A}, {"a": [1, 0]}, alpha=1.5)
