"""Seed 000 claims from hand-made notebook numbers: the verdicts follow from intervals and nulls."""

from __future__ import annotations

import pandas as pd

from kit.core.claims import check_consistent
from kit.mui.claims import REQUIRED_IDS, utility_law_claims


def _results(pooled_ci_high=-1.0, r2=0.5):
    fit = {"slope": -3.0, "ci_low": -5.0, "ci_high": pooled_ci_high, "r2": r2, "n": 30}
    return {
        "published_law_fit": {"all": {"slope": 2.0, "ci_low": -2.0, "ci_high": 6.0, "r2": 0.01, "n": 124}},
        "tiny_law_fit_per_task": {"all": fit, **{t: {"slope": -1.0, "r2": 0.2, "n": 8} for t in "abcd"}},
        "published_pur_max_abs_diff": 0.03, "published_pur_cells_recomputed": 42,
        "tiny_rank_per_task": {"pur": {t: {"spearman": 0.8} for t in "abcd"},
                               "performance": {t: {"spearman": 0.5 + 0.01 * i} for i, t in enumerate("abcd")}},
        "masking": {"drop_key_a": 10.0, "drop_random_a": 1.0, "k_max": 4},
    }


def test_utility_law_claims_cover_the_required_ids_and_follow_the_numbers():
    curves = pd.DataFrame([{"pool": p, "n": 8, "repeat": r, "mui": m + 0.1 * r}
                           for r in range(4) for p, m in (("add", 1.0), ("code", 1.2), ("mixed", 2.0))])
    corr = {"chunk_mui_correct": [1.0, 1.01, 0.99], "chunk_mui_incorrect": [1.0, 0.99, 1.02]}
    claims = {c.id: c for c in utility_law_claims(_results(), curves, corr, n_boot=200)}
    assert set(REQUIRED_IDS["01_utility_law"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["law.tiny_pooled"].verdict == "supported"          # CI [-5, -1] below 0
    assert claims["law.published_pooled"].verdict == "inconclusive"  # CI [-2, 6] holds 0
    assert "weak fit" in claims["law.published_pooled"].why
    sign = claims["law.tiny_per_task_sign"]  # 4 of 4 negative: Wilson [0.51, 1] just clears 1/2
    assert sign.verdict == "supported" and 0.5 < sign.ci_low < 0.52
    assert claims["pur.ranking_vs_performance"].verdict == "supported"
    assert claims["pur.table1_recomputed"].verdict == "supported"    # 0.03 within the 0.05 rounding tolerance
    assert claims["diversity.mixed_grows_faster"].verdict == "supported"
    assert claims["correctness.no_difference"].verdict == "supported"  # within +-10% of mean MUI
    assert claims["masking.key_vs_random"].verdict == "inconclusive", "no interval: a point excludes nothing"
    bad = {c.id: c for c in utility_law_claims(_results(pooled_ci_high=2.0), None, None)}
    assert bad["law.tiny_pooled"].verdict == "inconclusive"
    assert bad["diversity.mixed_grows_faster"].verdict == "not testable here"


def test_multi_token_claims_follow_the_numbers():
    from kit.mui.claims import multi_token_claims

    none = {c.id: c for c in multi_token_claims(None)}
    assert set(none) == {"law.multi_token", "correctness.no_difference_multi_token"}
    assert {c.verdict for c in none.values()} == {"not testable here"}
    reason = "inconclusive: only 1 model(s) answer a multi-token family above 0%"
    one = {c.id: c for c in multi_token_claims({"law": {"slope": None, "not_testable": reason},
                                                "ci": {"per_sample_correct": [1.0, 1.02, 0.98, 1.0],
                                                       "per_sample_incorrect": [1.0, 0.99, 1.01, 1.0]}},
                                               n_boot=200)}
    assert one["law.multi_token"].verdict == "not testable here" and one["law.multi_token"].why == reason
    eq = one["correctness.no_difference_multi_token"]
    check_consistent(eq)
    assert eq.verdict == "supported" and abs(eq.null_high - 0.1) < 1e-9  # 10% of the mean per-sample MUI 1.0
    assert "response length" in eq.why
    apart = {c.id: c for c in multi_token_claims({"law": {"slope": -2.0, "ci_low": -3.0, "ci_high": -1.0, "r2": 0.6, "n": 8},
                                                  "ci": {"per_sample_correct": [2.0, 2.1, 1.9, 2.0],
                                                         "per_sample_incorrect": [1.0, 1.1, 0.9, 1.0]}}, n_boot=200)}
    assert apart["law.multi_token"].verdict == "supported"
    assert apart["correctness.no_difference_multi_token"].verdict == "contradicted"
    ck = {c.id: c for c in multi_token_claims({"law": {"slope": 0.5, "ci_low": -1.0, "ci_high": 2.0, "r2": 0.1, "n": 6,
                                                       "over": "checkpoints", "model": "zoo/base-xl", "n_models": 3,
                                                       "where": "across 3 training checkpoints of zoo/base-xl"}})}
    c = ck["law.multi_token"]
    check_consistent(c)
    assert c.verdict == "inconclusive" and "checkpoints of zoo/base-xl" in c.statement
    assert "3 checkpoints of one training run" in c.why and "weak fit" in c.why
