"""The verdict rule of the claims ledger, on hand-computed cases."""

from __future__ import annotations

import pytest

from kit.core import claims as C


@pytest.mark.parametrize(
    "ci,null,null_range,direction,expected",
    [
        ((0.1, 0.3), 0.0, None, "greater", "supported"),
        ((-0.1, 0.3), 0.0, None, "greater", "inconclusive"),
        ((-0.3, -0.1), 0.0, None, "greater", "contradicted"),
        ((-0.3, -0.1), 0.0, None, "less", "supported"),
        # interval overlaps the null band
        (
            (0.1, 0.3),
            None,
            (0.0, 0.2),
            "greater",
            "inconclusive",
        ),
        ((0.25, 0.3), None, (0.0, 0.2), "greater", "supported"),
        # equivalence: inside the tolerance
        (
            (-1.0, 1.0),
            None,
            (-2.0, 2.0),
            "within",
            "supported",
        ),
        ((-1.0, 3.0), None, (-2.0, 2.0), "within", "inconclusive"),
        ((2.5, 3.0), None, (-2.0, 2.0), "within", "contradicted"),
    ],
)
def test_verdict_rule(ci, null, null_range, direction, expected):
    ours = sum(ci) / 2
    assert C.decide(ours, ci, null, null_range, direction)[0] == expected


def test_a_point_without_interval_is_never_supported():
    # 58 gaps vs 61 with shuffled labels: one number against one number excludes nothing
    verdict, why = C.decide(58, None, 61, None, "greater")
    assert verdict == "inconclusive" and "no interval" in why
    # but a point outside a permutation band is a permutation test
    assert C.decide(80, None, 61, (50, 72), "greater")[0] == "supported"
    assert C.decide(58, None, 61, (50, 72), "greater")[0] == "inconclusive"


def test_match_and_not_testable():
    assert C.decide(0.5, (0.4, 0.6), None, None, "match", paper_value=0.55)[0] == "supported"
    assert C.decide(0.5, (0.4, 0.6), None, None, "match", paper_value=0.7)[0] == "contradicted"
    assert C.decide(float("nan"), None, 0, None, "greater")[0] == "not testable here"
    assert C.decide(1.0, (0, 2), 0, None, "greater", not_testable="no SAE")[1] == "no SAE"
    with pytest.raises(ValueError, match="direction"):
        C.decide(1.0, None, 0, None, "bigger")


def test_claim_record_and_consistency(tmp_path):
    from kit.core.notebook import NotebookRun

    c = C.claim(
        "001",
        "Table 2",
        "te.delta",
        "TE lowers accuracy",
        -3.0,
        ci=(-5.0, -1.0),
        null=0.0,
        direction="less",
    )
    assert c.verdict == "supported" and "predicted side" in c.why
    C.check_consistent(c)
    bad = c.row() | {"verdict": "supported", "ci_high": 1.0}
    with pytest.raises(ValueError, match="inconclusive"):
        C.check_consistent(bad)
    weak = C.weaken(
        C.claim("003", "MIB", "mib", "x", 0.9, ci=(0.8, 1.0), null=0.5), "passes by construction"
    )
    assert weak.verdict == "inconclusive" and "by construction" in weak.why
    C.check_consistent(weak)  # demoting is always allowed
    with pytest.raises(ValueError, match="ci low"):
        C.claim("001", "s", "x", "x", 1.0, ci=(2.0, 0.0), null=0.0)
    run = NotebookRun("03_shortcut_neurons", "smoke", None, tmp_path)
    df = C.record(run, [c, weak]).frame
    assert list(df.verdict) == ["supported", "inconclusive"]
    import json

    saved = json.loads((tmp_path / "results.json").read_text())["claims"]
    assert saved[0]["notebook"] == "03_shortcut_neurons" and saved[0]["ci_low"] == -5.0
    with pytest.raises(ValueError, match="duplicate"):
        C.record(run, [c, c])


def test_zero_width_interval_supports_nothing_unless_deterministic():
    c = C.claim("000", "§3.6", "g", "mixed > single", 2.0, ci=(2.0, 2.0), null=0.0)
    assert c.verdict == "inconclusive" and "zero width" in c.why
    d = C.claim(
        "000",
        "T1",
        "p",
        "recomputed",
        0.04,
        ci=(0.04, 0.04),
        null_range=(0, 0.05),
        direction="within",
        interval_how="deterministic recomputation",
    )
    assert d.verdict == "supported"


@pytest.mark.parametrize("kind", C.KINDS)
def test_every_kind_is_inconclusive_on_a_null_equivalent_input_and_decided_otherwise(kind):
    null_like = C.claim("000", "s", "x", "x", 0.01, ci=(-0.2, 0.22), null=0.0, kind=kind)
    assert null_like.verdict == "inconclusive" and not C.decided(null_like)
    clear = C.claim("000", "s", "x", "x", 0.5, ci=(0.3, 0.7), null=0.0, kind=kind)
    assert C.decided(clear)
    assert clear.verdict == ("pass" if kind == "audit" else "supported")
    wrong = C.claim("000", "s", "x", "x", -0.5, ci=(-0.7, -0.3), null=0.0, kind=kind)
    assert wrong.verdict == ("fail" if kind == "audit" else "contradicted")
    for c in (null_like, clear, wrong):
        C.check_consistent(c)


def test_audits_never_read_supported_and_bad_kinds_are_refused():
    a = C.claim(
        "003",
        "M07",
        "m07",
        "test-retest r >= 0.8",
        0.9,
        ci=(0.85, 0.95),
        null_range=(0.0, 0.8),
        kind="audit",
    )
    assert a.verdict == "pass"
    with pytest.raises(ValueError, match="verdict 'supported'"):
        C.check_consistent(a.row() | {"verdict": "supported"})
    assert C.weaken(a, "decided by construction").verdict == "inconclusive"
    with pytest.raises(ValueError, match="kind='replication'.*reproduction"):
        C.claim("000", "s", "x", "x", 1.0, kind="replication")


@pytest.mark.parametrize(
    "ci,null,null_range,direction,paper_value,expected",
    [
        ((0.2, 0.4), 0.0, None, "greater", None, 0.2),  # low end above the null
        ((0.2, 0.4), None, (0.1, 0.3), "greater", None, -0.1),  # overlaps the band: negative
        ((-0.4, -0.2), 0.0, None, "less", None, 0.2),
        ((-1.0, 1.5), None, (-2.0, 2.0), "within", None, 0.5),  # nearer edge: 2.0 - 1.5
        ((0.4, 0.6), None, None, "match", 0.55, 0.05),  # paper value 0.05 inside the top end
    ],
)
def test_margin_by_hand(ci, null, null_range, direction, paper_value, expected):
    assert C.margin(sum(ci) / 2, ci, null, null_range, direction, paper_value) == pytest.approx(
        expected
    )


def test_fragile_marks_a_verdict_that_holds_by_a_hair():
    # margin 0.01 of width 0.48
    hair = C.claim("002", "s", "x", "x", 0.5, ci=(0.26, 0.74), null=0.25)
    assert hair.verdict == "supported" and hair.fragile
    assert not C.claim("002", "s", "x", "x", 0.5, ci=(0.4, 0.6), null=0.25).fragile


def test_fragile_marks_a_contradiction_by_a_hair():
    """A contradiction a hair under its null is fragile (its predicted-side margin, -0.5, is
    not)."""
    hair = C.claim("000", "s", "x", "x", 0.0, ci=(0.0, 0.49), null=0.5)
    assert hair.verdict == "contradicted" and hair.margin == pytest.approx(-0.5) and hair.fragile
    far = C.claim("000", "s", "x", "x", 0.0, ci=(0.0, 0.2), null=0.5)
    assert far.verdict == "contradicted" and not far.fragile
    band = C.claim(
        "000", "s", "x", "x", 3.0, ci=(2.05, 4.0), null_range=(-2.0, 2.0), direction="within"
    )
    assert band.verdict == "contradicted" and band.fragile


def test_stability_marks_flips_and_findings_say_no_more_than_the_verdict():
    first = [
        C.claim(
            "001", "s", "a", "TE lowers accuracy", -3.0, ci=(-5.0, -1.0), null=0.0, direction="less"
        ),
        C.claim(
            "001",
            "s",
            "b",
            "TE spares clean models",
            0.5,
            ci=(-1.0, 2.0),
            null_range=(-2.0, 2.0),
            direction="within",
        ),
    ]
    rerun = [
        C.claim(
            "001", "s", "a", "TE lowers accuracy", -1.0, ci=(-3.0, 1.0), null=0.0, direction="less"
        ),
        C.claim(
            "001",
            "s",
            "b",
            "TE spares clean models",
            0.4,
            ci=(-1.0, 1.9),
            null_range=(-2.0, 2.0),
            direction="within",
        ),
    ]
    C.mark_stability(first, [rerun], "bootstrap seed 1")
    assert first[0].stability.startswith("flips") and "inconclusive" in first[0].stability
    assert first[1].stability.startswith("stable")
    text = C.finding(first[0])
    assert "**supported**" in text and "flips" in text and "margin 1" in text
    nt = C.claim("001", "s", "c", "x", None, not_testable="all accuracies 0 on these items")
    assert C.finding(nt).endswith("all accuracies 0 on these items.")


def test_an_interval_that_is_a_point_up_to_rounding_supports_nothing():
    """Bootstrap draws of identical values (a deterministic pipeline) give an interval that is one
    value up to the last bit: it saw no variation, so it decides nothing."""
    c = C.claim("003", "s", "x", "x", 0.9999999999999998, ci=(0.9999999999999998, 1.0), null=0.9)
    assert c.verdict == "inconclusive" and "zero width" in c.why
    assert C.claim("003", "s", "x", "x", 0.99, ci=(0.98, 1.0), null=0.9).verdict == "supported"


def test_permutation_floor_is_the_smallest_p_against_alpha():
    # one definition of the smallest p: the floor speaks exactly where smallest_p is above alpha
    from kit.core.stats import smallest_p

    for n_a in range(1, 8):
        for n_b in range(1, 8):
            for alpha in (0.01, 0.025, 0.05):
                why = C.permutation_floor(n_a, n_b, alpha)
                assert (why is None) == (smallest_p(n_a, n_b) <= alpha), (n_a, n_b, alpha)
    # C(6, 3) = 20 arrangements: p = 0.05, above 0.025 and not above 0.05
    assert "20 label arrangements" in str(C.permutation_floor(3, 3))
    assert C.permutation_floor(3, 3, 0.05) is None


def test_a_design_that_cannot_reach_alpha_cannot_be_decided_whatever_the_numbers():
    # 3 against 2 models: C(5, 3) = 10 arrangements, so p >= 0.1 even for the most extreme one
    why = C.permutation_floor(3, 2)
    assert why is not None and "0.1 > 0.025" in why
    assert C.permutation_floor(4, 4) is None  # 1 / 70 = 0.014
    # numbers that would be "supported" under the interval rule
    c = C.claim("000", "s", "x", "x", 0.9, ci=(0.8, 1.0), null=0.0, undecidable=why)
    assert c.verdict == C.UNDECIDABLE and c.why == why and c.margin is None and not C.decided(c)
    C.check_consistent(c)
    audit = C.claim(
        "003", "s", "y", "y", 0.9, ci=(0.8, 1.0), null=0.0, kind="audit", undecidable=why
    )
    assert audit.verdict == C.UNDECIDABLE
    C.check_consistent(audit)
    with pytest.raises(ValueError, match="without a reason"):
        C.check_consistent(c.row() | {"why": ""})
    # not testable (this machine cannot run it) wins over a design that could not decide it
    assert C.claim("000", "s", "z", "z", None, not_testable="no GPU", undecidable=why).verdict == (
        "not testable here"
    )
    assert C.finding(c).endswith(f"{why}.")


def test_design_floors_by_hand():
    # k! orders: 3! = 6 -> 1/6 > 0.05; 4! = 24 -> 1/24 < 0.05
    assert "6 orders" in (C.orders_floor(3) or "") and C.orders_floor(4) is None
    # Wilson 3 of 3: centre (1 + z²/6) / (1 + z²/3), lower 0.4385 < 0.5; 4 of 4: 0.5101 > 0.5
    assert "0.439" in (C.wilson_floor(3, 0.5) or "") and C.wilson_floor(4, 0.5) is None
    # 20 items: one changed answer is 5 points; Binomial(20, 1/20)'s 97.5% quantile is 3 -> 15
    assert "15 points" in (C.equivalence_floor(20, 2.0) or "")
    # 5 cells sharing 20 items each: 15 / 5 = 3 > 2 still; 200 items: Binomial(200, 1/200) -> 3
    # draws of 0.5 points = 1.5 <= 2
    assert C.equivalence_floor(20, 2.0, cells=5) is not None
    assert C.equivalence_floor(200, 2.0) is None


def test_mark_undecidable_keeps_the_numbers_and_excludes_null_reads_them_before_weakening():
    c = C.weaken(
        C.claim("001", "s", "d", "d", -5.0, ci=(-8.0, -2.0), null=0.0, direction="less"), "built in"
    )
    assert c.verdict == "inconclusive" and C.excludes_null(c)  # weakened, but the drop is there
    flat = C.claim("001", "s", "l", "l", 1.0, ci=(-1.0, 3.0), null=0.0)
    assert not C.excludes_null(flat)
    point = C.claim("001", "s", "p", "p", 1.0, ci=(1.0, 1.0), null=0.0)
    assert not C.excludes_null(point)  # a zero-width interval establishes nothing
    C.mark_undecidable(c, "the row's leak is not established")
    assert c.verdict == C.UNDECIDABLE and c.why.startswith("the row's leak") and c.ours == -5.0
    C.check_consistent(c)
    nt = C.claim("001", "s", "n", "n", None, not_testable="no rows")
    assert C.mark_undecidable(nt, "x").verdict == "not testable here"


@pytest.mark.parametrize(
    "ci,expected",
    [
        ((-0.63, 1.12), "not replicated"),  # holds 0, entirely above the paper's -7.1
        ((-30.0, -10.0), "replicated"),  # an effect inside the paper's range
        ((-6.0, -2.0), "smaller than the paper's"),  # an effect, above every printed one
        ((-10.0, 1.0), "undetermined"),  # holds both 0 and part of the paper's range
        ((1.0, 3.0), "not replicated"),  # the wrong side
        ((-60.0, -55.0), "replicated"),  # larger than the paper's: the effect is there
    ],
)
def test_versus_paper_by_hand(ci, expected):
    # the paper's Table 2: TE's Δacc on contaminated models -49.8 to -7.1 points
    assert C.versus_paper(ci, (-49.8, -7.1), 0.0, None, "less") == expected
    c = C.claim(
        "001",
        "T2",
        "t",
        "t",
        sum(ci) / 2,
        ci=ci,
        null=0.0,
        direction="less",
        paper_effect=(-7.1, -49.8),
    )
    assert c.vs_paper == expected and (c.paper_effect_low, c.paper_effect_high) == (-49.8, -7.1)
    C.check_consistent(c)
    with pytest.raises(ValueError, match="against the paper"):
        C.check_consistent(
            c.row() | {"vs_paper": "replicated" if expected != "replicated" else "not replicated"}
        )


def test_versus_paper_greater_and_bad_direction():
    assert C.versus_paper((0.5, 0.9), (0.3, 0.4), 0.0, None, "greater") == "replicated"
    assert (
        C.versus_paper((0.05, 0.2), (0.3, 0.4), 0.0, None, "greater") == "smaller than the paper's"
    )
    assert C.versus_paper((0.05, 0.2), (0.3, 0.4), None, (0.0, 0.1), "greater") == "not replicated"
    assert C.versus_paper(None, (0.3, 0.4), 0.0, None, "greater") == "undetermined"
    with pytest.raises(ValueError, match="direction='within'"):
        C.versus_paper((0.0, 1.0), (0.3, 0.4), 0.0, None, "within")


def test_unchanged_with_nothing_changed_cannot_be_decided():
    # every item kept its answer: Δacc 0 [0, 0] inside ±2 says nothing about "unchanged"
    c = C.claim(
        "001", "T2", "u", "u", 0.0, ci=(0.0, 0.0), null_range=(-2.0, 2.0), direction="within"
    )
    assert c.verdict == C.UNDECIDABLE and "zero width" in c.why
    C.check_consistent(c)
    # a deterministic recomputation is still read as it is
    d = C.claim(
        "000",
        "T1",
        "p",
        "p",
        0.04,
        ci=(0.04, 0.04),
        null_range=(0, 0.05),
        direction="within",
        interval_how="deterministic recomputation",
    )
    assert d.verdict == "supported"
    # clusters of 10 items resampled together: 20 clusters of 200 items, one changed answer is
    # 0.5 points, drawn up to Binomial(20, 1/20)'s 97.5% quantile, 3 times: 1.5 <= 2
    assert C.equivalence_floor(200, 2.0, n_units=20) is None
    assert C.equivalence_floor(200, 1.0, n_units=20) is not None


def test_weakening_drops_a_replication_but_keeps_a_non_replication():
    built_in = C.claim(
        "001",
        "T2",
        "d",
        "d",
        -20.0,
        ci=(-23.0, -16.0),
        null=0.0,
        direction="less",
        paper_effect=(-49.8, -7.1),
    )
    assert built_in.vs_paper == "replicated"
    C.weaken(built_in, "by construction")
    assert built_in.verdict == "inconclusive" and built_in.vs_paper == ""
    C.check_consistent(built_in)
    flat = C.claim(
        "001",
        "T2",
        "f",
        "f",
        0.4,
        ci=(-0.8, 1.5),
        null=0.0,
        direction="less",
        paper_effect=(-49.8, -7.1),
    )
    assert C.weaken(flat, "by construction").vs_paper == "not replicated"


def test_bootstrap_claim_against_null_draws_by_hand():
    import numpy as np

    from kit.core.stats import bootstrap_ci

    x = np.array([0.5, 0.6, 0.7, 0.8])
    draws = np.linspace(0.0, 0.4, 41)  # all below the mean 0.65
    c = C.bootstrap_claim("004", "s", "b", "b", np.mean, x, n_boot=200, seed=3, null_draws=draws)
    est = bootstrap_ci(np.mean, x, n_boot=200, seed=3)
    assert (c.ours, c.ci_low, c.ci_high) == est
    assert c.null_low == pytest.approx(0.01) and c.null_high == pytest.approx(0.39)
    # no draw reaches 0.65: p = (1 + 0) / (41 + 1)
    assert c.extra["p_value"] == pytest.approx(1 / 42) and c.extra["null_mean"] == pytest.approx(
        0.2
    )
    assert c.verdict == "supported"
    # "less": the draws at or below the estimate count
    low = C.bootstrap_claim(
        "004",
        "s",
        "l",
        "l",
        np.mean,
        x,
        n_boot=200,
        seed=3,
        null_draws=draws + 0.5,
        direction="less",
    )
    assert low.extra["p_value"] == pytest.approx((1 + np.sum(draws + 0.5 <= 0.65)) / 42)
    plain = C.bootstrap_claim("004", "s", "p", "p", np.mean, x, n_boot=200, seed=3, null=0.0)
    assert plain.null == 0.0 and "p_value" not in plain.extra


def test_bootstrap_groups_claim_resamples_groups_and_clusters_by_hand():
    import numpy as np

    from kit.core.stats import bootstrap_groups_ci

    # two tables resampled on their own (test items, fresh items); the test items in 3 contents
    test, fresh = np.array([1.0, 1, 0, 1, 0, 1]), np.array([0.0, 1, 0, 0])
    contents = np.array(["a", "a", "b", "b", "c", "c"])

    def leak(g):
        return float(g[0][0].mean() - g[1][0].mean())

    groups = [(test,), (fresh,)]
    c = C.bootstrap_groups_claim(
        "001", "s", "g", "g", leak, groups, clusters=[contents, None], n_boot=200, seed=2, null=0.0
    )
    est = bootstrap_groups_ci(leak, groups, n_boot=200, seed=2, clusters=[contents, None])
    assert (c.ours, c.ci_low, c.ci_high) == est and c.ours == pytest.approx(4 / 6 - 1 / 4)
    # against draws: their band and the one-sided p-value, as bootstrap_claim reads them
    draws = np.linspace(0.0, 0.4, 41)  # 0.4 of them at or above 0.4167: none
    d = C.bootstrap_groups_claim(
        "001", "s", "d", "d", leak, groups, n_boot=200, seed=2, null_draws=draws
    )
    assert d.null_low == pytest.approx(0.01) and d.extra["p_value"] == pytest.approx(1 / 42)


def test_band_claim_reads_the_nulls_mean_and_central_band_by_hand():
    import numpy as np

    # 0, 0.01, ..., 0.40 and one nan (dropped): mean 0.2, 2.5% / 97.5% quantiles 0.01 / 0.39
    draws = np.append(np.linspace(0.0, 0.4, 41), np.nan)
    c = C.band_claim("004", "s", "b", "b", 0.65, draws, direction="greater", p_value=1 / 42)
    assert c.ours == 0.65 and c.null == pytest.approx(0.2)
    assert c.null_low == pytest.approx(0.01) and c.null_high == pytest.approx(0.39)
    assert c.ci_low is None and c.extra == {"p_value": pytest.approx(1 / 42)}
    assert c.verdict == "supported"
    inside = C.band_claim("004", "s", "i", "i", 0.3, draws, direction="greater")
    assert inside.verdict == "inconclusive"


def test_mean_diff_claim_is_the_mean_difference_with_its_bootstrap_interval_by_hand():
    import numpy as np

    from kit.core.stats import bootstrap_ci, mean_diff_ci

    a, b = np.array([3.0, 4.0, 5.0, 6.0]), np.array([1.0, 1.5, 2.0, 2.5])
    # paired: mean(a - b) = mean(2, 2.5, 3, 3.5) = 2.75, the draws of a paired bootstrap over items
    c = C.mean_diff_claim("000", "s", "d", "d", a, b, n_boot=200, seed=3, null=0.0)
    assert c.ours == pytest.approx(2.75)
    assert (c.ours, c.ci_low, c.ci_high) == bootstrap_ci(
        lambda x, y: float(np.mean(x - y)), a, b, n_boot=200, seed=3
    )
    assert c.verdict == "supported" and c.direction == "greater"
    # independent samples: mean(a) - mean(b[:3]) = 4.5 - 1.5, each side resampled on its own
    u = C.mean_diff_claim(
        "000", "s", "u", "u", a, b[:3], paired=False, n_boot=200, seed=3, null=0.0, direction="less"
    )
    assert u.ours == pytest.approx(4.5 - 1.5)
    assert (u.ours, u.ci_low, u.ci_high) == mean_diff_ci(a, b[:3], paired=False, n_boot=200, seed=3)
    assert u.verdict == "contradicted" and u.direction == "less"
    within = C.mean_diff_claim(
        "000",
        "s",
        "w",
        "w",
        a,
        a + 0.01,
        paired=False,
        n_boot=200,
        seed=3,
        null_range=(-5.0, 5.0),
        direction="within",
    )
    assert within.verdict == "supported"


@pytest.mark.parametrize(
    "how, unit",
    [
        ("bootstrap over 12 contents (200 test items)", "contents"),
        ("paired bootstrap over the 40 planted items", "planted items"),
        ("OLS 95% CI of the slope across checkpoints", "checkpoints"),
        ("Welch t over 3 runs per arm", "runs per arm"),
        ("deterministic count", ""),
        ("", ""),
    ],
)
def test_the_resampled_unit_is_read_from_how_the_interval_was_made(how, unit):
    assert C.resampling_unit(how) == unit
    c = C.claim("000", "§1", "x", "x", 1.0, ci=(0.5, 1.5), null=0.0, interval_how=how)
    assert c.unit == unit and c.row()["unit"] == unit
    named = C.claim("000", "§1", "y", "y", 1.0, ci=(0.5, 1.5), interval_how=how, unit="models")
    assert named.unit == "models", "a unit given by the caller wins"
    assert C.table([c, named])["resampled unit"].tolist() == [unit, "models"]
