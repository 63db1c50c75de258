"""Seed 002 claims: controls that separate a real concept-failure tie from noise."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from kit.cg import claims as cgc
from kit.cg.suite import Suite
from kit.core.claims import check_consistent


def _suite(tied: bool, n=200, d=20, seed=0):
    """Two benchmarks; concept c is active on items c, c+d, ... . With ``tied`` the model fails
    exactly the items of concepts 0-4 (real gaps); otherwise it fails random items at the same rate."""
    rng = np.random.default_rng(seed)
    acts, scores = {}, {}
    for b in ("b1", "b2"):
        rows = np.arange(n)
        dense = np.zeros((n, d))
        dense[rows, rows % d] = 1.0
        dense[rows, (rows * 7 + 3) % d] += 0.1  # a weak second concept per item
        acts[b] = sp.csr_matrix(dense)
        fail = (rows % d) < 5 if tied else rng.random(n) < 0.25
        scores[b] = (~fail).astype(float)
    labels = [f"c{i}" for i in range(d - 1)] + ["(dead)"]
    return Suite("big", labels, acts, {b: [""] * n for b in acts}, {"m": acts}, {"m": scores})


def test_gap_null_and_split_half_separate_real_gaps_from_noise():
    real, noise = _suite(True), _suite(False)
    null = cgc.gap_null(real.acts, real.model_scores["m"], n_perm=20)
    assert null.shape == (20,)
    # concepts whose every item fails are gaps; shuffled correctness almost never makes one
    assert cgc.n_gaps(real.acts, real.model_scores["m"]) == 2 and null.mean() < 1
    tied = cgc.split_half(real.acts, real.model_scores["m"], n_splits=10)
    rand = cgc.split_half(noise.acts, noise.model_scores["m"], n_splits=10)
    assert tied.mean() > 0.8 and abs(rand.mean()) < 0.4, "split-half must see a real profile and not noise"


def test_cg_claims_verdicts_follow_their_nulls():
    s = _suite(True)
    results = {"coverage": {"big": {"frac_missing_alive": 0.0, "missing_frac_per_benchmark": {"b1": 0.1, "b2": 0.2}}},
               "robustness": {"adv_shift_best_pct": -1.0, "adv_shift_worst_pct": 1.0}}
    results["significance"] = {"m": {"n_gaps_significant": 2}}
    claims = {c.id: c for c in cgc.cg_claims({"big": s}, "big", "big", "m", results, 1e-5, 3, 20, 2,
                                             n_perm=20, n_adv_perm=5, n_splits=10, n_reruns=5)}
    assert set(cgc.REQUIRED_IDS["04_competency_gaps"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["model_gaps.split_half"].verdict == "supported"
    assert claims["model_gaps.significant"].verdict == "supported" and claims["model_gaps.significant"].ours == 2
    assert claims["sae_swap.missing_frac_rank"].verdict == "not testable here"
    assert claims["model_gaps.vs_shuffled"].null_low is not None, "the shuffled null is shown beside the count"


def test_null_table_puts_each_observation_beside_its_null():
    real = _suite(True)
    acts, scores = real.acts, real.model_scores["m"]
    nulls = cgc.model_nulls(acts, scores, 1e-5, 3, 20, 2, n_reruns=5, drop_frac=0.2, min_support=5, n_perm=20,
                            n_adv_perm=5, n_splits=10, n_drop_perm=5)
    assert set(nulls) == {"gaps", "split_half", "split_half_supported", "dropout", "adv_best", "adv_worst"}
    t = cgc.null_table({"gaps": cgc.n_gaps(acts, scores), "dropout": 0.0}, nulls).set_index("quantity")
    assert t.loc["model gaps (X_model < eps), count", "beats null"], "2 real gaps vs a shuffled null near 0"
    assert t.loc["dropout: mean std of X_model", "beats null"]
    assert t.loc["split-half Spearman, all concepts", "beats null"]
    noise = _suite(False)
    nn = cgc.model_nulls(noise.acts, noise.model_scores["m"], 1e-5, 3, 20, 2, 5, 0.2, 5, n_perm=20, n_adv_perm=5,
                         n_splits=10, n_drop_perm=5)
    tn = cgc.null_table({"gaps": cgc.n_gaps(noise.acts, noise.model_scores["m"])}, nn).set_index("quantity")
    assert not tn.loc["split-half Spearman, all concepts", "beats null"], "a profile of noise must not pass"


