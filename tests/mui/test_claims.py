"""Seed 000 claims from hand-made notebook numbers: the verdicts follow from intervals and nulls."""

from __future__ import annotations

import pandas as pd

from kit.core.claims import check_consistent
from kit.mui.claims import REQUIRED_IDS, utility_law_claims

FE = {"fixed_effects": "task", "n_groups": 4}


def _results(pooled_ci_high=-1.0, r2=0.5, band_ratio=0.8):
    fit = {"slope": -3.0, "ci_low": -5.0, "ci_high": pooled_ci_high, "r2": r2, "n": 30, **FE}
    return {
        "published_law_fit_fe": {
            "slope": 2.0,
            "ci_low": -2.0,
            "ci_high": 6.0,
            "r2": 0.01,
            "n": 124,
            "fixed_effects": "benchmark",
            "n_groups": 7,
        },
        "published_law_fit_per_model": {
            "slope": -2.0,
            "ci_low": -3.0,
            "ci_high": -1.0,
            "r2": 0.7,
            "n": 8,
        },
        "tiny_law_fit_fe": fit,
        "tiny_law_fit_per_task": {
            "all": {"slope": 0.1, "ci_low": -1, "ci_high": 1, "r2": 0.0, "n": 32},
            **{t: {"slope": -1.0, "r2": 0.2, "n": 8} for t in "abcd"},
        },
        "published_pur_max_band_ratio": band_ratio,
        "published_pur_outside_band": int(band_ratio > 1),
        "published_pur_max_abs_diff": 0.03,
        "published_pur_cells_recomputed": 48,
        "tiny_rank_per_task": {
            "pur": {t: {"spearman": 0.8} for t in "abcd"},
            "performance": {t: {"spearman": 0.5 + 0.01 * i} for i, t in enumerate("abcd")},
        },
        "masking": {
            "drop_key_a": 60.0,
            "drop_random_a": 1.0,
            "acc_key_a": 30.0,
            "acc_random_a": 89.0,
            "n_eval_a": 100,
            "k_max": 4,
            "task_a": "add",
            "random_repeats": 3,
        },
        "tiny_grid": [
            {"model": m, "task": t}
            for m in ("zoo/base-s", "zoo/base-m", "zoo/base-m+add-test-x1")
            for t in "abcd"
        ],
    }


def _curves(gap=1.0):
    return pd.DataFrame(
        [
            {"pool": p, "n": 8, "repeat": r, "mui": m + 0.1 * r}
            for r in range(4)
            for p, m in (("add", 1.0), ("code", 1.2), ("mixed", 1.1 + gap))
        ]
    )


def test_utility_law_claims_cover_the_required_ids_and_follow_the_numbers():
    corr = {"chunk_mui_correct": [1.0, 1.01, 0.99], "chunk_mui_incorrect": [1.0, 0.99, 1.02]}
    claims = {
        c.id: c
        for c in utility_law_claims(_results(), _curves(), corr, n_boot=200, focus="zoo/base-m")
    }
    assert set(REQUIRED_IDS["01_utility_law"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
        assert c.kind in ("reproduction", "re-analysis") and c.rests_on, c.id
    published = {"law.published_per_model", "law.published_pooled", "pur.table1_recomputed"}
    assert {i for i, c in claims.items() if c.kind == "re-analysis"} == published
    assert (
        "3 zoo models" in claims["law.tiny_pooled"].rests_on
        and "1 contaminated" in claims["law.tiny_pooled"].rests_on
    )
    assert claims["masking.key_vs_random"].rests_on.startswith("zoo/base-m")
    assert claims["law.tiny_pooled"].verdict == "supported"  # CI [-5, -1] below 0
    assert "R² within" in claims["law.tiny_pooled"].statement, (
        "the pooled fit has task fixed effects"
    )
    assert claims["law.published_pooled"].verdict == "inconclusive"  # CI [-2, 6] holds 0
    assert "weak fit" in claims["law.published_pooled"].why
    sign = claims["law.tiny_per_task_sign"]  # 4 of 4 negative: Wilson [0.51, 1] just clears 1/2
    assert sign.verdict == "supported" and 0.5 < sign.ci_low < 0.52
    assert claims["pur.ranking_vs_performance"].verdict == "supported"
    assert claims["pur.table1_recomputed"].verdict == "supported"  # 0.8 of its rounding band
    assert claims["diversity.mixed_grows_faster"].verdict == "supported"
    assert claims["correctness.no_difference"].verdict == "supported"  # within +-10% of mean MUI
    assert claims["masking.key_vs_random"].verdict == "supported"  # 89% vs 30% on 100 items each
    bad = {c.id: c for c in utility_law_claims(_results(pooled_ci_high=2.0), None, None)}
    assert bad["law.tiny_pooled"].verdict == "inconclusive"
    assert bad["diversity.mixed_grows_faster"].verdict == "not testable here"


def test_a_recomputed_printed_value_is_contradicted_only_outside_its_rounding_band():
    inside = {c.id: c for c in utility_law_claims(_results(band_ratio=1.0), n_boot=50)}[
        "pur.table1_recomputed"
    ]
    outside = {c.id: c for c in utility_law_claims(_results(band_ratio=1.4), n_boot=50)}[
        "pur.table1_recomputed"
    ]
    assert inside.verdict == "supported" and outside.verdict == "contradicted"
    assert "rounding band" in inside.statement and inside.kind == "re-analysis"
    gone = _results()
    del gone["published_pur_max_band_ratio"]
    assert {c.id: c for c in utility_law_claims(gone, n_boot=50)}[
        "pur.table1_recomputed"
    ].verdict == "not testable here"


def _null_equivalent_results():
    """Every reproduction and re-analysis input at its null: slopes with intervals around 0, PUR as
    good as performance on every task, masking key neurons no worse than random ones."""
    r = _results(pooled_ci_high=3.0, r2=0.01)
    r["published_law_fit_per_model"] = {
        "slope": 0.1,
        "ci_low": -2.0,
        "ci_high": 2.2,
        "r2": 0.01,
        "n": 8,
    }
    r["tiny_law_fit_per_task"] = {
        t: {"slope": (-1.0) ** i, "r2": 0.2, "n": 8} for i, t in enumerate("abcd")
    }
    r["tiny_rank_per_task"] = {
        "pur": {t: {"spearman": 0.5 + 0.1 * (i % 2)} for i, t in enumerate("abcd")},
        "performance": {t: {"spearman": 0.6 - 0.1 * (i % 2)} for i, t in enumerate("abcd")},
    }
    r["masking"].update(drop_key_a=5.0, drop_random_a=4.0, acc_key_a=80.0, acc_random_a=81.0)
    return r


def test_each_claim_kind_is_inconclusive_on_null_equivalent_input_and_decided_otherwise():
    # spread > 10%
    corr_same = {
        "chunk_mui_correct": [0.8, 1.2, 1.0],
        "chunk_mui_incorrect": [1.2, 0.8, 1.0],
    }
    null = {
        c.id: c
        for c in utility_law_claims(
            _null_equivalent_results(), _curves(gap=0.0), corr_same, n_boot=300
        )
    }
    decided = {
        c.id: c
        for c in utility_law_claims(
            _results(),
            _curves(),
            {"chunk_mui_correct": [1.0, 1.01, 0.99], "chunk_mui_incorrect": [1.0, 0.99, 1.02]},
            n_boot=300,
        )
    }
    for cid in ("law.published_per_model", "law.published_pooled"):  # re-analysis
        assert null[cid].kind == "re-analysis" and null[cid].verdict == "inconclusive", cid
    assert decided["law.published_per_model"].verdict == "supported"
    for cid in (
        "law.tiny_pooled",
        "law.tiny_per_task_sign",
        "pur.ranking_vs_performance",
        "diversity.mixed_grows_faster",
        "correctness.no_difference",
        "masking.key_vs_random",
    ):
        assert null[cid].kind == "reproduction", cid
        assert null[cid].verdict == "inconclusive", (cid, null[cid].why)
        assert decided[cid].verdict in ("supported", "contradicted"), (cid, decided[cid].why)


def test_findings_say_no_more_than_the_verdicts_and_stability_marks_flips():
    from kit.core.claims import findings, mark_stability
    from kit.mui.claims import stability_reruns

    r = _null_equivalent_results()
    claims = utility_law_claims(r, n_boot=200)
    text = {c.id: f for c, f in zip(claims, [findings([c])[0] for c in claims])}
    assert "**inconclusive**" in text["pur.ranking_vs_performance"]
    assert "closer to the true order than performance" in text["pur.ranking_vs_performance"]
    reruns = stability_reruns(r, None, None, None, seeds=[1, 2], n_boot=200)
    mark_stability(claims, reruns, "bootstrap seeds 1, 2")
    by = {c.id: c for c in claims}
    assert by["law.tiny_pooled"].stability.startswith("stable"), (
        "a fit has no resampling: it cannot flip"
    )
    assert all(c.stability for c in claims if c.verdict != "not testable here")
