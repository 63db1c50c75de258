"""Seed 000 claims (kit.mui.claims) from hand-made notebook numbers: the verdicts follow from
intervals and nulls; for each claim kind a null-equivalent input that must come out inconclusive
and a decided one. Notebook 01's claims first, then notebook 02's."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kit.core.claims import check_consistent, decided
from kit.mui import claims as mc
from kit.mui import law
from kit.mui import trajectories as tr
from kit.mui.claims import REQUIRED_IDS, multi_token_claims, utility_law_claims

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


# --- notebook 01: the multi-token families, the growth curves, one law fit ----------------------


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


def _curves_two_sizes(top_mixed: list[float], top_single: list[float]):
    """Growth curves at n = 5 (the pool's size: every subset the same) and n = 3 (varying)."""
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
    up = mc._growth_claim(
        _curves_two_sizes([8.0, 8.5, 7.5, 8.0], [5.0, 5.5, 4.5, 5.0]), seed=0, n_boot=500
    )
    check_consistent(up)
    assert up.ours == 3.0 and up.verdict == "supported" and up.ci_low < up.ci_high
    assert "at n = 3 (the largest n with the most disjoint subsets whose MUI differ" in up.statement
    assert up.unit == "disjoint subsets"
    same = mc._growth_claim(
        _curves_two_sizes([5.0, 5.5, 4.5, 5.0], [5.0, 5.5, 4.5, 5.0]), seed=0, n_boot=500
    )
    assert same.ours == 0.0 and same.verdict == "inconclusive"
    # nowhere varying: the largest n, zero width, inconclusive as before
    flat = mc._growth_claim(_curves_two_sizes([8.0] * 4, [5.0] * 4), seed=0, n_boot=500)
    assert flat.ours == 3.0 and flat.verdict == "inconclusive"
    assert "at the largest n" in flat.statement


def test_growth_claim_prefers_more_disjoint_subsets_and_cannot_decide_on_two_a_side():
    # n = 6: two disjoint subsets a side (a pool of 12); n = 3: four; n = 12: one (the pool)
    rows = [("mixed", 12, 0, 9.0), ("a", 12, 0, 6.0)]
    rows += [("mixed", 6, r, 8.0 + r) for r in range(2)] + [("a", 6, r, 5.0 + r) for r in range(2)]
    rows += [("mixed", 3, r, 7.0 + r / 10) for r in range(4)]
    rows += [("a", 3, r, 4.0 + r / 10) for r in range(4)]
    curves = pd.DataFrame(rows, columns=["pool", "n", "repeat", "mui"])
    c = mc._growth_claim(curves, seed=0, n_boot=300)
    assert "at n = 3" in c.statement and c.verdict == "supported", c.why
    # only two subsets a side anywhere: 6 arrangements, p >= 1/6, the design cannot decide
    two = mc._growth_claim(curves[curves.n != 3], seed=0, n_boot=300)
    assert two.verdict == "cannot be decided here" and "2 against 2 units" in two.why


def test_law_claim_reads_the_model_clustered_interval_and_names_the_unit(clustered_grid):
    grid = clustered_grid
    rec = law.fe_law_record(grid, "task")
    assert rec["n_clusters"] == 8 and rec["cluster"] == "model"
    c = mc.fit_claim("law.x", rec, "synthetic", None)
    assert (c.ci_low, c.ci_high) == (rec["cluster_ci_low"], rec["cluster_ci_high"])
    assert c.unit == "models" and "bootstrap over 8 models" in c.interval_how
    assert c.extra["points_ci"] == [rec["ci_low"], rec["ci_high"]]
    plain = law.fe_record(law.fit_law_fixed_effects(grid, "task"), "task", 6)
    assert mc.fit_claim("law.y", plain, "synthetic", None).unit.startswith("points")


# --- notebook 02 ------------------------------------------------------------------------------
# the claims: a null-equivalent input and a decided one per kind ----------------------------


def _pairs(rates: dict[str, float], n_tasks: int = 8, domain: str = "ood") -> pd.DataFrame:
    rows = []
    for model, rate in rates.items():
        k = int(round(rate * n_tasks))
        for i in range(n_tasks):
            rows.append(
                {
                    "model": model,
                    "task": f"t{i}",
                    "domain": domain,
                    "direction": "collapsing" if i < k else "coarsening",
                }
            )
    return pd.DataFrame(rows)


def _series(directions: list[str], n_tasks: int, n_steps: int) -> pd.DataFrame:
    """Pre-training steps: every task's trajectory has ``n_steps`` steps, labelled from the list
    (cycled)."""
    rows = []
    for t in range(n_tasks):
        for s in range(1, n_steps + 1):
            rows.append(
                {
                    "task": f"t{t}",
                    "step": s,
                    "n_steps": n_steps,
                    "direction": directions[(t * n_steps + s - 1) % len(directions)],
                }
            )
    return pd.DataFrame(rows)


def _tables(
    pre: pd.DataFrame,
    spec: pd.DataFrame,
    cont: pd.DataFrame,
    ctrl: pd.DataFrame,
    source: str = "tiny world (test split)",
) -> mc.DirectionTables:
    return mc.DirectionTables(
        source,
        pre,
        spec,
        cont,
        ctrl,
        late_steps=1,
        rests_on={"pre-training": "one run", "contamination": "fine-tunes"},
    )


EMPTY = pd.DataFrame(columns=["model", "task", "domain", "direction"])


@pytest.mark.parametrize("kind", ["reproduction", "re-analysis"])
def test_direction_claim_null_equivalent_is_inconclusive_and_a_clear_one_decided(kind):
    q = mc.QUESTIONS[0]  # early accumulating
    # null-equivalent: perf rises at every step (the setting fixes it) and MUI's sign is a coin:
    # half accumulating, half evolving. Against 0.5 unconditioned on the sign it would pass nothing
    # either, but a "share of all changes that are accumulating" against 1/4 would have passed.
    coin = _tables(
        _series(["accumulating", "evolving"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY
    )
    c = mc.direction_claim(coin, q, "", kind)
    check_consistent(c)
    assert c.verdict == "inconclusive" and c.ours == pytest.approx(0.5) and c.kind == kind
    assert c.extra["p_value"] > 0.05 and c.rests_on == "one run"
    yes = _tables(_series(["accumulating"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY)
    c = mc.direction_claim(yes, q, "", kind)
    assert c.verdict == "supported" and c.ci_low > 0.5 and c.extra["clusters"] == 12
    no = _tables(_series(["evolving"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert mc.direction_claim(no, q, "", kind).verdict == "contradicted"
    # one cluster: even a perfect share decides nothing, and the design says so before the data
    one = _tables(_series(["accumulating"], n_tasks=1, n_steps=40), EMPTY, EMPTY, EMPTY)
    c = mc.direction_claim(one, q, "", kind)
    assert c.verdict == "cannot be decided here" and "even 1 of 1" in c.why
    check_consistent(c)
    # three clusters all the predicted way: Wilson's lower bound 0.439 is under 1/2 (the 02
    # in-domain contamination case); four: 0.510, so it can be decided
    three = _tables(_series(["accumulating"], n_tasks=3, n_steps=5), EMPTY, EMPTY, EMPTY)
    c = mc.direction_claim(three, q, "", kind)
    assert c.verdict == "cannot be decided here" and "0.439" in c.why
    four = _tables(_series(["accumulating"], n_tasks=4, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert mc.direction_claim(four, q, "", kind).verdict == "supported"
    # whatever the data: three clusters going the wrong way cannot be decided either
    wrong = _tables(_series(["evolving"], n_tasks=3, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert mc.direction_claim(wrong, q, "", kind).verdict == "cannot be decided here"


def test_direction_claim_not_testable_without_changes_of_the_predicted_sign():
    falling = _tables(
        _series(["coarsening", "collapsing"], n_tasks=4, n_steps=3), EMPTY, EMPTY, EMPTY
    )
    c = mc.direction_claim(falling, mc.QUESTIONS[0], "", "reproduction")
    assert c.verdict == "not testable here" and "performance rose" in c.why
    # a setting with no models at all says so (the real profile has no training checkpoints)
    nothing = _tables(EMPTY, EMPTY, EMPTY, EMPTY)
    c = mc.direction_claim(nothing, mc.QUESTIONS[0], "", "reproduction")
    assert c.verdict == "not testable here" and "no training checkpoints" in c.why


def test_one_specialised_fine_tune_cannot_be_decided_whatever_its_changes():
    """The real profile's one specialised fine-tune (+arc-train): the design (one unit) decides
    nothing, whether or not its changes go the way performance predicts."""
    in_domain = mc.QUESTIONS[2]
    assert in_domain.setting == "specialisation" and in_domain.subset == "in-domain"
    for direction in ("accumulating", "collapsing"):  # perf rose / perf fell in domain
        spec = pd.DataFrame(
            [
                {
                    "model": "real/s+arc-train",
                    "task": "arc_challenge",
                    "domain": "in-domain",
                    "direction": direction,
                },
                {
                    "model": "real/s+arc-train",
                    "task": "mmlu",
                    "domain": "ood",
                    "direction": "evolving",
                },
            ]
        )
        c = mc.direction_claim(_tables(EMPTY, spec, EMPTY, EMPTY), in_domain, "", "reproduction")
        check_consistent(c)
        assert c.verdict == "cannot be decided here", (direction, c.why)
        assert "too few fine-tunes" in c.why and "1 of 1" in c.why


@pytest.mark.parametrize("kind", ["reproduction", "re-analysis"])
def test_contamination_ood_against_controls_null_equivalent_and_decided(kind):
    same = mc.contamination_ood_claim(
        _pairs({f"c{i}": 0.375 for i in range(5)}),
        _pairs({f"u{i}": 0.375 for i in range(5)}),
        "w",
        "",
        kind,
        "x",
    )
    check_consistent(same)
    assert same.verdict == "inconclusive" and same.ours == pytest.approx(0.0) and same.kind == kind
    apart = mc.contamination_ood_claim(
        _pairs({f"c{i}": 0.875 for i in range(5)}),
        _pairs({f"u{i}": 0.125 for i in range(5)}),
        "w",
        "",
        kind,
        "x",
    )
    check_consistent(apart)
    assert apart.verdict == "supported" and apart.ours == pytest.approx(0.75)
    assert apart.extra["exact"] and apart.extra["p_value"] == pytest.approx(1 / math.comb(10, 5))
    # 4 contaminated vs 3 controls, perfectly apart: 35 arrangements cannot reach 2.5%
    few = mc.contamination_ood_claim(
        _pairs({f"c{i}": 1.0 for i in range(4)}),
        _pairs({f"u{i}": 0.0 for i in range(3)}),
        "w",
        "",
        kind,
        "x",
    )
    assert few.verdict == "cannot be decided here" and few.extra["p_value"] == pytest.approx(1 / 35)
    assert "35 label arrangements" in few.why
    # the real profile's 3 contaminated against 2 clean fine-tunes: p >= 1/10, whatever happens
    real = mc.contamination_ood_claim(
        _pairs({f"c{i}": 1.0 for i in range(3)}),
        _pairs({f"u{i}": 0.0 for i in range(2)}),
        "w",
        "",
        kind,
        "x",
    )
    assert real.verdict == "cannot be decided here" and "0.1 > 0.025" in real.why
    check_consistent(real)
    # changes of one model are not independent units: 32 changes of 4 models are 4 units
    assert len(few.extra["contaminated_rates"]) == 4
    none = mc.contamination_ood_claim(_pairs({"c0": 1.0}), EMPTY, "w", "", kind, "x")
    assert none.verdict == "not testable here"


def _leak_measurements(ft_test: float, ft_fresh: float, n: int = 200) -> pd.DataFrame:
    rows = [("base", "test", 40.0), ("base", "fresh", 40.0)]
    for i in range(3):
        rows += [(f"ft{i}", "test", ft_test), (f"ft{i}", "fresh", ft_fresh)]
    return pd.DataFrame(
        [{"model": m, "task": "add", "split": s, "perf": p, "n": n} for m, s, p in rows]
    )


def test_leak_set_up_check_null_equivalent_and_decided():
    fts = {f"ft{i}": "base" for i in range(3)}
    flat = mc.leak_claim(_leak_measurements(50.0, 50.0), fts, ["add"], "world")
    check_consistent(flat)
    assert (
        flat.kind == "set-up check"
        and flat.verdict == "inconclusive"
        and flat.ours == pytest.approx(0.0)
    )
    leak = mc.leak_claim(_leak_measurements(80.0, 45.0), fts, ["add"], "world")
    assert leak.verdict == "supported" and leak.ours == pytest.approx(35.0)

    # by hand: mean over 3 fine-tunes of (t_i - f_i) - (t_b - f_b); each fine-tune's accuracies
    # weigh 1/3, the base's 1 (it is subtracted once per fine-tune, divided by 3); 8 shares, each
    # with 2/8 extra successes in 4/8 extra trials (Price-Bonett)
    def adj(k):
        return (k + 0.25) / 200.5

    centre = 100 * ((adj(160) - adj(90)) - (adj(80) - adj(80)))
    var = 3 * (1 / 3) ** 2 * sum(adj(k) * (1 - adj(k)) for k in (160, 90)) / 200.5
    var += 2 * adj(80) * (1 - adj(80)) / 200.5
    assert leak.ci_high == pytest.approx(centre + 1.959964 * 100 * math.sqrt(var))
    assert leak.ci_low == pytest.approx(centre - 1.959964 * 100 * math.sqrt(var))
    no_fresh = mc.leak_claim(
        _leak_measurements(80.0, 45.0).query("split == 'test'"), fts, ["add"], "w"
    )
    assert no_fresh.verdict == "not testable here"


# --- the whole study ----------------------------------------------------------------------------


def _study(reseed: bool = True) -> tr.TrajectoryStudy:
    s = tr.Settings(
        checkpoints=["zoo/b@step-1", "zoo/b"],
        specialised={"zoo/m+math": "zoo/m"},
        specialised_targets={"zoo/m+math": "math"},
        contaminated={"zoo/m+math-test-x5": "zoo/m"},
        controls={"zoo/m+general": "zoo/m"},
        contaminated_tasks=["add"],
        tasks=["add", "code"],
    )
    groups = {"add": "math", "code": "code"}
    table = {
        "zoo/b@step-1": {"add": (10, 2.0), "code": (20, 3.0)},
        "zoo/b": {"add": (30, 3.0), "code": (25, 3.5)},
        "zoo/m": {"add": (40, 2.0), "code": (50, 3.0)},
        "zoo/m+math": {"add": (60, 3.0), "code": (30, 4.0)},
        "zoo/m+math-test-x5": {"add": (90, 2.5), "code": (40, 2.0)},
        "zoo/m+general": {"add": (41, 2.2), "code": (52, 3.1)},
    }
    meas = pd.DataFrame(
        [
            {
                "model": m,
                "task": t,
                "group": groups[t],
                "split": sp,
                "n": 100,
                "perf": p
                - (30 if sp == "fresh" and m == "zoo/m+math-test-x5" and t == "add" else 0),
                "mui": u,
            }
            for m, d in table.items()
            for t, (p, u) in d.items()
            for sp in ("test", "fresh")
        ]
    )
    from kit.mui import directions, published_trajectories

    study = tr.TrajectoryStudy(
        olmo_steps=directions.step_directions(
            published_trajectories.published_olmo(), series="task"
        ),
        published_specialised=directions.pair_directions(
            published_trajectories.published_specialised()
        ),
        published_contamination=directions.pair_directions(
            published_trajectories.published_contamination()
        ),
        settings=s,
        measurements=meas,
        directions=tr.analyse(meas, s, tol_perf=1.0),
    )
    study.rests_on = tr.rests_on(s, study.source)
    if reseed:
        study.reseeds[1] = (meas, tr.analyse(meas, s, tol_perf=1.0))
    return study


def test_study_claims_kinds_ids_and_stability():
    claims = {c.id: c for c in mc.study_claims(_study(), "test", late_steps=1)}
    assert set(REQUIRED_IDS["02_training_trajectories"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
        if c.id.startswith("paper."):
            assert c.kind == "re-analysis" and "Table" in c.rests_on and c.stability == ""
        elif c.id.startswith("setup."):
            assert c.kind == "set-up check"
        else:
            assert (
                c.kind == "reproduction"
                and c.rests_on
                and c.stability.startswith("stable under item draws")
            )
    # the leak of 30 points on 100 items a side is decided; the paper's late evolving changes
    # (9 of 10 over 6 benchmarks) are not, once the sign of the performance change is given
    assert claims["setup.leak_on_test_split"].verdict == "supported"
    assert claims["paper.corollary1.late_evolving"].verdict == "inconclusive"
    assert "checkpoints of one training run" in claims["corollary1.early_accumulating"].rests_on
    assert all(
        c.ci_low is not None or c.null_low is not None for c in claims.values() if decided(c)
    )


def test_study_claims_without_reseeds_leave_stability_unmarked():
    claims = mc.study_claims(_study(reseed=False), "test", late_steps=1)
    assert all(c.stability == "" for c in claims)


def test_rests_on_names_the_models():
    s = _study().settings
    r = tr.rests_on(s, "tiny world")
    assert "zoo/m+math-test-x5" in r["contamination"] and "zoo/m+general" in r["contamination"]
    assert "2 checkpoints of one training run (zoo/b)" in r["pre-training"]


def test_real_model_scope_counts_what_three_and_two_fine_tunes_can_decide():
    lines = mc.real_model_scope(["c1", "c2", "c3"], ["u1", "u2"])
    assert "10 label arrangements, so the smallest one-sided p-value is 0.1 > 0.025" in lines[3]
    assert "cannot be decided here" in lines[3]
    assert "Wilson 95% lower bound of 0.439" in lines[2] and "cannot be supported" in lines[2]
    many = mc.real_model_scope([f"c{i}" for i in range(8)], [f"u{i}" for i in range(8)])
    assert "cannot be decided" not in many[3] and "could be decided" in many[2]
    assert "specialisation: not testable" in lines[1], "no specialised fine-tune: nothing to test"
    # one specialised fine-tune is one unit: Wilson's lower bound for 1 of 1 is 0.207 (hand:
    # z^2 = 3.8415, (1 + z^2/2 - z sqrt(z^2/4)) / (1 + z^2) = 1 / 4.8415 = 0.2065)
    one = mc.real_model_scope(["c1", "c2", "c3"], ["u1", "u2"], ["u1"])
    assert "(u1) as units: 1 unit: even 1 of 1" in one[1]
    assert "0.207" in one[1] and "cannot be decided here" in one[1]
