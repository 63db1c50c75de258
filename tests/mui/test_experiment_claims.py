"""Tests of kit.mui.experiment_claims: the multi-token claims and §3.8's interval of a
difference of accuracies, from hand-made numbers."""

from __future__ import annotations

import numpy as np
import pytest

from kit.core.claims import check_consistent
from kit.mui.experiment_claims import multi_token_claims, newcombe_diff

FE = {"fixed_effects": "task", "n_groups": 4}


def test_multi_token_claims_follow_the_numbers():
    none = {c.id: c for c in multi_token_claims(None)}
    assert set(none) == {"law.multi_token", "correctness.no_difference_multi_token"}
    assert {c.verdict for c in none.values()} == {"not testable here"}
    reason = "inconclusive: only 1 model(s) answer a multi-token family above 0%"
    one = {
        c.id: c
        for c in multi_token_claims(
            {
                "law": {"slope": None, "not_testable": reason},
                "ci": {
                    "per_sample_correct": [1.0, 1.02, 0.98, 1.0],
                    "per_sample_incorrect": [1.0, 0.99, 1.01, 1.0],
                },
            },
            n_boot=200,
        )
    }
    assert (
        one["law.multi_token"].verdict == "not testable here"
        and one["law.multi_token"].why == reason
    )
    eq = one["correctness.no_difference_multi_token"]
    check_consistent(eq)
    # 10% of the mean per-sample MUI 1.0
    assert eq.verdict == "supported" and abs(eq.null_high - 0.1) < 1e-9
    assert "response length" in eq.why
    apart = {
        c.id: c
        for c in multi_token_claims(
            {
                "law": {"slope": -2.0, "ci_low": -3.0, "ci_high": -1.0, "r2": 0.6, "n": 8},
                "ci": {
                    "per_sample_correct": [2.0, 2.1, 1.9, 2.0],
                    "per_sample_incorrect": [1.0, 1.1, 0.9, 1.0],
                },
            },
            n_boot=200,
        )
    }
    assert apart["law.multi_token"].verdict == "supported"
    assert apart["correctness.no_difference_multi_token"].verdict == "contradicted"
    ck = {
        c.id: c
        for c in multi_token_claims(
            {
                "law": {
                    "slope": 0.5,
                    "ci_low": -1.0,
                    "ci_high": 2.0,
                    "r2": 0.1,
                    "n": 6,
                    "over": "checkpoints",
                    "model": "zoo/base-xl",
                    "n_models": 3,
                    "where": "across 3 training checkpoints of zoo/base-xl",
                    "per_task_fit": {
                        "sort-list": {
                            "slope": 2.0,
                            "ci_low": 1.0,
                            "ci_high": 3.0,
                            "r2": 0.9,
                            "n": 3,
                        },
                        "add-steps": {
                            "slope": 0.5,
                            "ci_low": -1.0,
                            "ci_high": 2.0,
                            "r2": 0.1,
                            "n": 3,
                        },
                    },
                }
            }
        )
    }
    assert ck["law.multi_token"].verdict == "not testable here", (
        "one run's checkpoints are not the cross-model law"
    )
    assert "not independent models" in ck["law.multi_token"].why
    up, flat = ck["corollary1.checkpoints[sort-list]"], ck["corollary1.checkpoints[add-steps]"]
    for c in (up, flat):
        check_consistent(c)
        assert c.kind == "reproduction" and "one training run of zoo/base-xl" in c.rests_on
    assert (
        up.verdict == "supported" and "accumulating" in up.statement and "not independent" in up.why
    )
    assert flat.verdict == "inconclusive", "a family's slope whose interval holds 0"
    fe = {
        c.id: c
        for c in multi_token_claims(
            {
                "law": {
                    "slope": -2.0,
                    "ci_low": -3.0,
                    "ci_high": -1.0,
                    "r2": 0.6,
                    "n": 8,
                    "fe": {"slope": 1.0, "ci_low": -1.0, "ci_high": 3.0, "r2": 0.05, "n": 8, **FE},
                }
            }
        )
    }
    assert fe["law.multi_token"].verdict == "inconclusive", (
        "the claim reads the fit with family effects"
    )


def test_newcombe_interval_of_a_difference_of_accuracies():
    # Newcombe (1998), Table II: 56/70 - 48/80 = 0.2000, method 10 (hybrid score) [0.0524, 0.3339]
    d, lo, hi = newcombe_diff(56, 70, 48, 80)
    assert abs(d - 0.2) < 1e-12 and abs(lo - 0.0524) < 5e-4 and abs(hi - 0.3339) < 5e-4


def test_newcombe_interval_is_statsmodels_and_the_wilson_combination():
    from kit.core.stats import wilson_interval

    for k1, n1, k2, n2 in [(56, 70, 48, 80), (0, 10, 0, 10), (10, 10, 3, 12), (1, 3, 2, 2)]:
        p1, l1, u1 = wilson_interval(k1, n1)
        p2, l2, u2 = wilson_interval(k2, n2)
        d = p1 - p2
        want = (d, d - np.hypot(p1 - l1, u2 - p2), d + np.hypot(u1 - p1, p2 - l2))
        assert newcombe_diff(k1, n1, k2, n2) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="k=4, n=3"):
        newcombe_diff(4, 3, 1, 2)


def _curves(top_mixed: list[float], top_single: list[float]):
    """Growth curves at n = 5 (the pool's size: every subset the same) and n = 3 (varying)."""
    import pandas as pd

    rows = []
    for r in range(4):
        rows += [
            ("mixed", 5, r, 9.0),
            ("a", 5, r, 6.0),
            ("b", 5, r, 6.0),
            ("mixed", 3, r, top_mixed[r]),
            ("a", 3, r, top_single[r]),
            ("b", 3, r, top_single[r]),
        ]
    return pd.DataFrame(rows, columns=["pool", "n", "repeat", "mui"])


def test_growth_claim_is_read_where_random_subsets_differ():
    """At a pool's own size every random subset is the whole pool (a zero-width interval that
    decides nothing); the claim reads the largest n whose subsets vary and says so."""
    from kit.mui.experiment_claims import _growth_claim

    up = _growth_claim(_curves([8.0, 8.5, 7.5, 8.0], [5.0, 5.5, 4.5, 5.0]), seed=0, n_boot=500)
    check_consistent(up)
    assert up.ours == 3.0 and up.verdict == "supported" and up.ci_low < up.ci_high
    assert "at n = 3 (the largest n with the most disjoint subsets whose MUI differ" in up.statement
    assert up.unit == "disjoint subsets"
    same = _growth_claim(_curves([5.0, 5.5, 4.5, 5.0], [5.0, 5.5, 4.5, 5.0]), seed=0, n_boot=500)
    assert same.ours == 0.0 and same.verdict == "inconclusive"
    # nowhere varying: the largest n, zero width, inconclusive as before
    flat = _growth_claim(_curves([8.0] * 4, [5.0] * 4), seed=0, n_boot=500)
    assert flat.ours == 3.0 and flat.verdict == "inconclusive"
    assert "at the largest n" in flat.statement


def test_growth_claim_prefers_more_disjoint_subsets_and_cannot_decide_on_two_a_side():
    import pandas as pd

    from kit.mui.experiment_claims import _growth_claim

    # n = 6: two disjoint subsets a side (a pool of 12); n = 3: four; n = 12: one (the pool)
    rows = [("mixed", 12, 0, 9.0), ("a", 12, 0, 6.0)]
    rows += [("mixed", 6, r, 8.0 + r) for r in range(2)] + [("a", 6, r, 5.0 + r) for r in range(2)]
    rows += [("mixed", 3, r, 7.0 + r / 10) for r in range(4)]
    rows += [("a", 3, r, 4.0 + r / 10) for r in range(4)]
    curves = pd.DataFrame(rows, columns=["pool", "n", "repeat", "mui"])
    c = _growth_claim(curves, seed=0, n_boot=300)
    assert "at n = 3" in c.statement and c.verdict == "supported", c.why
    # only two subsets a side anywhere: 6 arrangements, p >= 1/6, the design cannot decide
    two = _growth_claim(curves[curves.n != 3], seed=0, n_boot=300)
    assert two.verdict == "cannot be decided here" and "2 against 2 units" in two.why
