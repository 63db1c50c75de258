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
    df = C.record(run, [c, weak])
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
