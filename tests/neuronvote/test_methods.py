"""kit.neuronvote.methods: hand-computed consensus metrics, planted-neuron recovery, fast == naive
Gaussian."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kit.neuronvote import methods as nv


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)


# ------------------------------------------------------------------ AvgOverlap (eq. 8)


def test_overlap_is_iou():
    assert nv.overlap({1, 2, 3}, {2, 3, 4}) == pytest.approx(2 / 4)
    assert nv.overlap({1}, {2}) == 0.0
    assert nv.overlap([5, 6], [6, 5]) == 1.0


def test_avg_overlap_hand_computed():
    # s = 2: A = {0,1}, B = {1,2}, C = {3,4}
    # o(A,B) = 1/3, o(A,C) = 0, o(B,C) = 0
    rankings = {"A": [0, 1, 9, 8], "B": [1, 2, 9, 8], "C": [3, 4, 9, 8]}
    got = nv.avg_overlap(rankings, 2)
    assert got["A"] == pytest.approx((1 / 3 + 0) / 2)
    assert got["B"] == pytest.approx((1 / 3 + 0) / 2)
    assert got["C"] == pytest.approx(0.0)


def test_avg_overlap_uses_only_top_s_and_voters():
    rankings = {"A": [0, 1, 2], "B": [0, 2, 1], "R": [2, 1, 0]}
    # s=1: A={0}, B={0}, R={2}. With voters A,B: A vs {B} = 1; R vs {A,B} = 0; B vs {A} = 1.
    got = nv.avg_overlap(rankings, 1, voters=["A", "B"])
    assert got == {"A": 1.0, "B": 1.0, "R": 0.0}, "a non-voter must be scored against voters only"
    # With all as voters, A is compared with B and R: (1 + 0) / 2.
    assert nv.avg_overlap(rankings, 1)["A"] == pytest.approx(0.5)


# ------------------------------------------------------------------ NeuronVote (eq. 9)


def test_borda_points_s_minus_index():
    # s = 3. V1 = [5, 6, 7] -> 5:3, 6:2, 7:1. V2 = [7, 5, 8] -> 7:3, 5:2, 8:1.
    # totals: 5:5, 7:4, 6:2, 8:1 -> top-3 = [5, 7, 6]
    rankings = {"V1": [5, 6, 7, 0], "V2": [7, 5, 8, 0]}
    assert nv.borda_top(rankings, 3) == [5, 7, 6], (
        "points must be s - index (index 0-based); sorted descending"
    )


def test_neuron_vote_leave_one_out_hand_computed():
    # s = 2. A = [0, 1], B = [0, 2], C = [3, 4].
    # NeuronVote_A: voters B, C: points 0:2, 2:1, 3:2, 4:1. Tie 0 vs 3 (2 points, 1 vote each) ->
    # smaller id 0;
    #   tie 2 vs 4 -> 2. S_best = {0, 2}; o({0,1}, {0,2}) = 1/3.
    # NeuronVote_B: voters A, C: 0:2, 1:1, 3:2, 4:1 -> {0, 1}; o({0,2}, {0,1}) = 1/3.
    # NeuronVote_C: voters A, B: 0:4, 1:1, 2:1 -> 0, then tie 1 vs 2 -> 1: {0, 1}; o({3,4}, {0,1}) =
    # 0.
    rankings = {"A": [0, 1, 5], "B": [0, 2, 5], "C": [3, 4, 5]}
    got = nv.neuron_vote(rankings, 2)
    assert got["A"] == pytest.approx(1 / 3)
    assert got["B"] == pytest.approx(1 / 3)
    assert got["C"] == pytest.approx(0.0)


def test_neuron_vote_excludes_the_method_itself():
    # Two methods, disjoint top-2 sets. Leave-one-out: each is compared with the other's top-2 -> 0.
    # Had A voted too, the aggregate of A and B would be {0, 2} (ties by id) and A would score 1/3.
    rankings = {"A": [0, 1, 5], "B": [2, 3, 5]}
    got = nv.neuron_vote(rankings, 2)
    assert got == {"A": 0.0, "B": 0.0}, (
        "leave-one-out broken: a method must not vote for its own neurons"
    )


def test_neuron_vote_vote_count_breaks_point_ties():
    # s = 2. A = [0, 1]; B = C = D = [2, 3].
    # NeuronVote_B: voters A, C, D -> 2:4, 3:2 (2 voters), 0:2 (1 voter), 1:1 -> S_best = {2, 3} ->
    # 1.
    rankings = {"A": [0, 1, 9], "B": [2, 3, 9], "C": [2, 3, 9], "D": [2, 3, 9]}
    got = nv.neuron_vote(rankings, 2)
    assert got["B"] == 1.0 and got["A"] == 0.0


def test_neuron_vote_tie_rule_points_then_votes_then_index():
    # s = 3. V1 = [9, 1, 2] -> 9:3, 1:2, 2:1; V2 = [3, 2, 1] -> 3:3, 2:2, 1:1. Totals: 9:3, 3:3,
    # 1:3, 2:3. All tie on points; 1 and 2 are named by two voters -> first (1 before 2 by index);
    # then 3 before 9.
    rankings = {"V1": [9, 1, 2], "V2": [3, 2, 1]}
    assert nv.borda_top(rankings, 3) == [1, 2, 3], (
        "tie rule: more points, then more voters, then smaller id"
    )


def test_neuron_vote_non_voter_scored_against_all_voters():
    rankings = {"A": [0, 1], "B": [0, 1], "R": [0, 5]}
    got = nv.neuron_vote(rankings, 2, voters=["A", "B"])
    assert got["R"] == pytest.approx(1 / 3)  # S_best(A,B) = {0,1}; o({0,5},{0,1}) = 1/3
    assert got["A"] == 1.0


def test_consensus_input_errors():
    with pytest.raises(ValueError, match="s"):
        nv.neuron_vote({"A": [0, 1], "B": [1, 0]}, 0)
    with pytest.raises(ValueError, match="fewer than s"):
        nv.avg_overlap({"A": [0, 1], "B": [1, 0]}, 3)
    with pytest.raises(ValueError, match="repeats"):
        nv.avg_overlap({"A": [0, 0], "B": [1, 0]}, 2)
    with pytest.raises(ValueError, match="no ranking"):
        nv.neuron_vote({"A": [0, 1], "B": [1, 0]}, 1, voters=["A", "Z"])


# ------------------------------------------------------------------ pairwise overlap


def test_pairwise_overlap_matrix():
    rankings = {"A": [0, 1, 2, 3], "B": [1, 0, 3, 2], "C": [2, 3, 0, 1]}
    m = nv.pairwise_overlap(rankings, 2)
    assert isinstance(m, pd.DataFrame) and list(m.index) == ["A", "B", "C"]
    assert m.loc["A", "B"] == 1.0 and m.loc["A", "C"] == 0.0 and m.loc["B", "C"] == 0.0
    assert (np.diag(m.values) == 1).all() and np.allclose(m.values, m.values.T)
    # Averaged over s = 1, 2: o_1(A,B) = 0 ({0} vs {1}), o_2(A,B) = 1 -> 0.5
    assert nv.pairwise_overlap(rankings, [1, 2]).loc["A", "B"] == pytest.approx(0.5)


# ------------------------------------------------------------------ methods: formulas


def test_probeless_and_meanselect_hand_computed():
    x = np.array([[1.0, 0.0], [3.0, 4.0], [0.0, 1.0], [0.0, 1.0]])
    y = np.array([1, 1, 0, 0])
    # neuron 0: mu_C = 2, mu_notC = 0 -> 2; neuron 1: mu_C = 2, mu_notC = 1 -> 1
    np.testing.assert_allclose(nv.probeless_scores(x, y), [2.0, 1.0])
    # MeanSelect divides by the concept range: neuron 0 range 2 -> 1; neuron 1 range 4 -> 0.25
    np.testing.assert_allclose(nv.meanselect_scores(x, y), [1.0, 0.25])


def test_iou_hand_computed():
    # 4 words, concept = words 0, 1. Percentile 50 of neuron 0 = 1.5 -> on for words 0, 1 (3, 2).
    x = np.array([[3.0, 0.0], [2.0, 5.0], [1.0, 4.0], [0.0, 0.0]])
    y = np.array([1, 1, 0, 0])
    got = nv.iou_scores(x, y, percentile=50)
    # neuron 0: mask {0,1} == concept -> 1. neuron 1: threshold 2 -> mask {1, 2}; inter {1}, union
    # {0,1,2} -> 1/3
    np.testing.assert_allclose(got, [1.0, 1 / 3])


def test_iou_ap_matches_sklearn():
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(1)
    x = rng.normal(size=(80, 6))
    y = (rng.random(80) < 0.4).astype(int)
    x[:, 2] += 2 * y
    want = [average_precision_score(y, x[:, j]) for j in range(6)]
    np.testing.assert_allclose(
        nv.iou_ap_scores(x, y), want, err_msg="NeuroX's IoU is average precision"
    )


def test_probe_penalty_mapping():
    # Lasso: C = 1/(N l1), l1_ratio 1; Ridge: C = 1/(2 N l2), ratio 0; LCA: C = 1/(N (l1 + 2 l2)),
    # ratio 1/3.
    assert nv.probe_penalty("lasso", 100, 0.01, 0.01) == pytest.approx((1.0, 1.0))
    assert nv.probe_penalty("ridge", 100, 0.01, 0.01) == pytest.approx((0.5, 0.0))
    assert nv.probe_penalty("lca", 100, 0.01, 0.01) == pytest.approx((1 / 3, 1 / 3))
    with pytest.raises(ValueError, match="allowed"):
        nv.probe_penalty("probeless", 100)


def test_rank_by_score_ties_are_seeded_not_index_order():
    scores = np.zeros(50)
    scores[7] = 1.0
    a, b = nv.rank_by_score(scores, seed=0), nv.rank_by_score(scores, seed=1)
    assert a[0] == 7 and b[0] == 7
    assert not np.array_equal(a[1:], np.sort(a[1:])), (
        "ties must not fall back to neuron-index order"
    )
    assert not np.array_equal(a, b) and np.array_equal(a, nv.rank_by_score(scores, seed=0))


# ------------------------------------------------------------------ methods: planted neuron


def planted(n: int = 400, d: int = 30, neuron: int = 17, seed: int = 0):
    """Gaussian noise; neuron ``neuron`` is shifted up by 3 sd for concept words."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.zeros(n, dtype=int)
    y[: n // 2] = 1
    rng.shuffle(y)
    x[:, neuron] += 3.0 * y
    return x, y, neuron


@pytest.mark.parametrize("method", [m for m in nv.METHODS if m != "random"])
def test_each_method_ranks_planted_neuron_first(method):
    x, y, neuron = planted()
    ranking = nv.rank_neurons(x, y, method, iou_percentile=50)
    assert sorted(ranking.tolist()) == list(range(x.shape[1])), (
        f"{method} must return a full permutation"
    )
    assert ranking[0] == neuron, (
        f"{method} did not find the planted concept neuron (got {ranking[:5]})"
    )


def test_random_is_a_seeded_permutation():
    x, y, _ = planted()
    r0 = nv.rank_neurons(x, y, "random", seed=3)
    assert sorted(r0.tolist()) == list(range(30)) and np.array_equal(
        r0, nv.rank_neurons(x, y, "random", seed=3)
    )


def test_probeless_ranks_by_magnitude_both_directions():
    x, y, neuron = planted()
    x[:, 4] -= 5.0 * y  # strongly *lower* for the concept
    assert nv.rank_neurons(x, y, "probeless")[0] == 4, (
        "Probeless ranks |mu_C - mu_notC|, negative shifts included"
    )


def test_rank_neurons_rejects_bad_input():
    x, y, _ = planted()
    with pytest.raises(ValueError, match="allowed"):
        nv.rank_neurons(x, y, "iou2")
    with pytest.raises(ValueError, match="binary"):
        nv.rank_neurons(x, np.zeros_like(y), "probeless")
    with pytest.raises(ValueError, match="labels"):
        nv.rank_neurons(x, y[:-1], "probeless")


# ------------------------------------------------------------------ Gaussian: fast == naive


def test_gaussian_fast_equals_naive_greedy():
    rng = np.random.default_rng(2)
    n, d = 150, 9
    x = rng.normal(size=(n, d))
    y = (rng.random(n) < 0.5).astype(int)
    x[:, 3] += 1.2 * y
    x[:, 6] = 0.7 * x[:, 3] + 0.5 * rng.normal(size=n)  # correlated with the concept neuron
    x[:, 1] -= 0.6 * y
    fast = nv.gaussian_ranking(x, y)
    naive = nv.gaussian_ranking_naive(x, y)
    np.testing.assert_array_equal(
        fast,
        naive,
        err_msg="rank-one updates diverge from refactorising each subset "
        "(conditional variance / residual update wrong?)",
    )
    # Stopping early keeps the greedy prefix and still returns a full ranking.
    early = nv.gaussian_ranking(x, y, max_neurons=4)
    np.testing.assert_array_equal(early[:4], naive[:4])
    assert sorted(early.tolist()) == list(range(d))


def test_gaussian_map_covariance_positive_definite_when_d_exceeds_n():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 40))
    y = np.array([0, 1] * 10)
    fit = nv.gaussian_map_params(x, y)
    for c in (0, 1):
        for idx in ([3], list(range(40))):
            assert np.linalg.eigvalsh(fit.cov(c, idx)).min() > 0, (
                "MAP prior must keep covariances positive definite"
            )
    assert sorted(nv.gaussian_ranking(x, y, max_neurons=5).tolist()) == list(range(40))


def test_gaussian_subset_map_covariance_is_not_shrunk_by_d():
    """A subset's MAP covariance comes from its marginal prior: for one neuron it must be close to
    that neuron's class variance, not ~n/(n + 2d) of it (the full-d divisor's over-confidence)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 100)) * 2.0  # variance 4
    y = np.array([0, 1] * 100)
    fit = nv.gaussian_map_params(x, y)
    assert fit.cov(0, [5])[0, 0] == pytest.approx(4.0, rel=0.25)
    # hand check of the divisor: nu0 - d + 2m + n_c + 2 with nu0 = d + 2, m = 1, n_c = 100 -> 106
    assert fit.denominator(0, 1) == pytest.approx(106.0)


# ------------------------------------------------------------------ classifier accuracy


def test_classifier_accuracy_informative_vs_noise_neurons():
    x, y, neuron = planted(n=600)
    tr, te = slice(0, 400), slice(400, 600)
    good = nv.classifier_accuracy(x[tr], y[tr], x[te], y[te], [neuron])
    bad = nv.classifier_accuracy(x[tr], y[tr], x[te], y[te], [0, 1])
    assert good > 0.85 and bad < 0.65, (
        f"accuracy on the planted neuron {good:.2f} vs noise {bad:.2f}"
    )
    with pytest.raises(ValueError, match="indices"):
        nv.classifier_accuracy(x[tr], y[tr], x[te], y[te], [99])


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("method", ["lasso", "ridge", "lca"])
def test_probes_find_planted_neuron_raw_or_standardised(method, standardize):
    x, y, neuron = planted()
    x[:, 0] *= 50.0  # a high-variance noise neuron: must not win just by its scale
    ranking = nv.rank_neurons(x, y, method, probe_standardize=standardize)
    assert ranking[0] == neuron, f"{method} (standardize={standardize}) top neurons {ranking[:5]}"


# ------------------------------------------------------------------ the neurox definition set


def test_iou_ap_handles_ties_and_threshold_like_sklearn():
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=(60, 5)), 1)  # many ties
    y = (rng.random(60) < 0.5).astype(int)
    x[:, 0] = 0.0
    x[:30, 0] = 0.03  # below the NeuroX threshold: zeroed, so one tie group with AP = base rate
    for thr in (0.0, 0.05):
        xt = np.where(np.abs(x) < thr, 0.0, x)
        want = [average_precision_score(y, xt[:, j]) for j in range(5)]
        np.testing.assert_allclose(
            nv.iou_ap_scores(x, y, threshold=thr),
            want,
            err_msg=f"tied activations must form one threshold (sklearn), thr={thr}",
        )
    assert nv.iou_ap_scores(x, y, threshold=0.05)[0] == pytest.approx(y.mean())
    # Hand case: scores [3, 2, 2, 1], labels [1, 0, 1, 0]: thresholds 3 (P 1, R 1/2), 2 (P 2/3, R 1)
    # -> AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
    assert nv.iou_ap_scores(np.array([[3.0], [2], [2], [1]]), [1, 0, 1, 0])[0] == pytest.approx(
        5 / 6
    )


def test_neurox_weight_mass_ordering_hand_computed():
    # Class 0 |w| = [4, 3, 2, 1] (mass 10), class 1 |w| = [0, 0, 0, 10]. Stride 10:
    # p = 0 selects the top neuron of each class: {0, 3}; neuron 1 joins at p = 0.5 (4 < 5 <= 7),
    # neuron 2 at p = 0.8 (7 < 8 <= 9).
    w = np.array([[4.0, -3.0, 2.0, 1.0], [0.0, 0.0, 0.0, -10.0]])
    order = nv.neurox_weight_mass_ordering(w, search_stride=10)
    assert set(order[:2].tolist()) == {0, 3} and order[2:].tolist() == [1, 2]


def test_method_seeds_independent_per_method_and_task():
    seeds = {(m, c): nv.method_seed(0, m, c, 1) for m in nv.METHODS for c in ("NN", "VB")}
    assert len(set(seeds.values())) == len(seeds), (
        "every method and concept needs its own tie-break stream"
    )
    assert nv.method_seed(0, "lasso", "NN", 1) == nv.method_seed(0, "lasso", "NN", 1)
    assert nv.method_seed(1, "lasso", "NN", 1) != nv.method_seed(0, "lasso", "NN", 1)


def test_rank_all_tie_orders_differ_between_methods():
    # Lasso leaves most weights at 0; with one shared seed its tie order equalled Random's.
    x, y, neuron = planted()
    ranks = nv.rank_all(x, y, ["lasso", "lca", "random"], seed=0, task=("NN", 0), lambda1=0.05)
    assert not np.array_equal(ranks["lasso"][5:], ranks["lca"][5:])
    assert not np.array_equal(ranks["random"], ranks["lasso"])


def test_gaussian_neurox_prior_hand_computed():
    # Class 1 rows (1, 2), (3, 2); class 0 rows (0, 0), (2, 4). d = 2, nu0 = 4.
    x = np.array([[1.0, 2.0], [3.0, 2.0], [0.0, 0.0], [2.0, 4.0]])
    y = np.array([1, 1, 0, 0])
    fit = nv.gaussian_map_params(x, y, prior="neurox")
    np.testing.assert_allclose(
        fit.means, [[1.0, 2.0], [2.0, 2.0]], err_msg="NeuroX's MAP mean is the class mean"
    )
    # class 1: Lambda0 = diag(var ddof 1) = diag(2, 0); S = [[2, 0], [0, 0]] -> scatter diag(4, 0).
    np.testing.assert_allclose(fit.scatter[1], [[4.0, 0.0], [0.0, 0.0]])
    # class 0: var = (2, 8); S = [[2, 4], [4, 8]] -> [[4, 4], [4, 16]].
    np.testing.assert_allclose(fit.scatter[0], [[4.0, 4.0], [4.0, 16.0]])
    # divisor nu0 + n_c + d + 2 = 4 + 2 + 2 + 2 = 10, whatever the subset size.
    assert fit.denominator(0, 1) == fit.denominator(0, 2) == 10.0
    with pytest.raises(ValueError, match="allowed: paper_text, neurox"):
        nv.gaussian_map_params(x, y, prior="mle")


def test_gaussian_neurox_prior_fast_equals_naive():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(120, 8))
    y = (rng.random(120) < 0.5).astype(int)
    x[:, 2] += 1.0 * y
    x[:, 5] = 0.6 * x[:, 2] + 0.5 * rng.normal(size=120)
    np.testing.assert_array_equal(
        nv.gaussian_ranking(x, y, prior="neurox"), nv.gaussian_ranking_naive(x, y, prior="neurox")
    )


@pytest.mark.parametrize("method", ["iou", "lasso", "ridge", "lca", "gaussian"])
def test_neurox_definitions_find_planted_neuron(method):
    x, y, neuron = planted()
    # NeuroX's weight-mass ordering admits each class's top neuron at its first step, in no order.
    top = 2 if method in ("lasso", "ridge", "lca") else 1
    assert neuron in nv.rank_neurons(x, y, method, definitions="neurox")[:top]
    with pytest.raises(ValueError, match="definitions"):
        nv.rank_neurons(x, y, method, definitions="code")


def test_neurox_mode_equals_the_neurox_package():
    """kit's ``neurox`` definitions against PyPI ``neurox`` (1.0.9 ships probes and Probeless; its
    IoU and Gaussian are only on GitHub). Skipped when neurox is not installed: its pins (torch
    1.8, numpy 1.19) do not resolve on Python 3.11, so it is not a test dependency."""
    import torch

    try:  # absent, or installed with --no-deps and missing one of its own imports: skip, not fail
        from neurox.interpretation import linear_probe as lp
        from neurox.interpretation import probeless as pl
    except ImportError as e:
        pytest.skip(f"neurox is not importable ({e})")

    x, y, _ = planted(n=200, d=12, neuron=5)
    x = x.astype(np.float32)
    # Probeless: NeuroX's tag-wise ranking of the concept class.
    want = pl.get_neuron_ordering_for_tag(x, y, {"C": 1, "O": 0}, "C")
    np.testing.assert_array_equal(nv.rank_neurons(x, y, "probeless")[:6], want[:6])
    for method, l1, l2 in (("lasso", 0.01, 0.0), ("ridge", 0.0, 0.01), ("lca", 0.01, 0.01)):
        torch.manual_seed(7)
        probe = lp.train_logistic_regression_probe(x, y, lambda_l1=l1, lambda_l2=l2)
        theirs = list(probe.parameters())[0].detach().double().numpy()
        ours = nv.neurox_probe_weights(x, y, l1, l2, seed=7)
        np.testing.assert_allclose(
            ours,
            theirs,
            rtol=1e-5,
            atol=1e-6,
            err_msg=f"{method}: NeuroX loss, init or batch order differs",
        )
        order, cutoffs = lp.get_neuron_ordering(probe, {"O": 0, "C": 1})
        mine = nv.neurox_weight_mass_ordering(ours)
        for a, b in zip([0] + cutoffs[:-1], cutoffs):  # same neurons between consecutive cutoffs
            assert set(mine[a:b].tolist()) == set(order[a:b])


def test_gaussian_chunked_scoring_equals_naive():
    """Chunks of a few rows (boundaries inside the data, the residual update applied per chunk)
    must give the same greedy path as refactorising each subset."""
    rng = np.random.default_rng(11)
    n, d = 103, 7
    x = rng.normal(size=(n, d))
    y = (rng.random(n) < 0.4).astype(int)
    x[:, 2] += 1.1 * y
    x[:, 4] = 0.8 * x[:, 2] + 0.4 * rng.normal(size=n)
    naive = nv.gaussian_ranking_naive(x, y)
    for rows in (1, 7, 50, 1000):
        np.testing.assert_array_equal(
            nv.gaussian_ranking(x, y, chunk_rows=rows), naive, err_msg=f"chunk_rows={rows}"
        )
    with pytest.raises(ValueError, match="chunk_rows"):
        nv.gaussian_ranking(x, y, chunk_rows=0)


def test_neurox_probe_numpy_engine_equals_torch_autograd():
    """The written-out Adam steps (softmax CE, sign(W), W/|W|) against torch autograd +
    torch.optim.Adam."""
    x, y, _ = planted(n=130, d=9, neuron=4)
    for l1, l2 in ((0.01, 0.0), (0.0, 0.01), (0.01, 0.01), (0.0, 0.0)):
        fast = nv.neurox_probe_weights(x, y, l1, l2, seed=3, epochs=3)
        ref = nv.neurox_probe_weights(x, y, l1, l2, seed=3, epochs=3, engine="torch")
        np.testing.assert_allclose(fast, ref, rtol=1e-5, atol=1e-6, err_msg=f"l1={l1} l2={l2}")
    with pytest.raises(ValueError, match="engine"):
        nv.neurox_probe_weights(x, y, engine="jax")


@pytest.mark.parametrize("definitions", nv.DEFINITIONS)
def test_rank_all_reuses_seed_free_scores_with_the_same_rankings(definitions):
    # A study's reseeds rank the same words again: the methods that rank by a score and a seeded
    # tie-break keep their score (kept in ``scores``) and give the rankings of a fresh computation.
    rng = np.random.default_rng(5)
    x = rng.normal(size=(120, 16))
    x[:, :4] = np.round(x[:, :4])  # tied activations, so the tie-break matters
    y = np.array([0, 1] * 60)
    x[:, 6] += 1.5 * y
    methods = ["probeless", "iou", "iou_ap", "meanselect", "ridge", "random"]
    memo: dict[str, np.ndarray] = {}
    for seed in (0, 1, 2):
        fresh = nv.rank_all(
            x, y, methods, seed=seed, task=("C", 0), definitions=definitions, iou_percentile=70.0
        )
        reused = nv.rank_all(
            x,
            y,
            methods,
            seed=seed,
            task=("C", 0),
            scores=memo,
            definitions=definitions,
            iou_percentile=70.0,
        )
        assert list(fresh) == list(reused)
        for m in methods:
            np.testing.assert_array_equal(fresh[m], reused[m], err_msg=f"{m}, seed {seed}")
    assert set(memo) == {"probeless", "iou", "iou_ap", "meanselect"}, "only seed-free scores kept"
    np.testing.assert_array_equal(memo["probeless"], nv.probeless_scores(x, y))
    with pytest.raises(ValueError, match="definitions"):
        nv.rank_all(x, y, ["probeless"], scores={}, definitions="nope")
