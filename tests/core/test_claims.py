"""The verdict rule of the claims ledger, on hand-computed cases."""

from __future__ import annotations

import pytest

from kit.core import claims as C


@pytest.mark.parametrize("ci,null,null_range,direction,expected", [
    ((0.1, 0.3), 0.0, None, "greater", "supported"),
    ((-0.1, 0.3), 0.0, None, "greater", "inconclusive"),
    ((-0.3, -0.1), 0.0, None, "greater", "contradicted"),
    ((-0.3, -0.1), 0.0, None, "less", "supported"),
    ((0.1, 0.3), None, (0.0, 0.2), "greater", "inconclusive"),   # interval overlaps the null band
    ((0.25, 0.3), None, (0.0, 0.2), "greater", "supported"),
    ((-1.0, 1.0), None, (-2.0, 2.0), "within", "supported"),     # equivalence: inside the tolerance
    ((-1.0, 3.0), None, (-2.0, 2.0), "within", "inconclusive"),
    ((2.5, 3.0), None, (-2.0, 2.0), "within", "contradicted"),
])
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

    c = C.claim("001", "Table 2", "te.delta", "TE lowers accuracy", -3.0, ci=(-5.0, -1.0), null=0.0, direction="less")
    assert c.verdict == "supported" and "predicted side" in c.why
    C.check_consistent(c)
    bad = c.row() | {"verdict": "supported", "ci_high": 1.0}
    with pytest.raises(ValueError, match="inconclusive"):
        C.check_consistent(bad)
    weak = C.weaken(C.claim("003", "MIB", "mib", "x", 0.9, ci=(0.8, 1.0), null=0.5), "passes by construction")
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
    d = C.claim("000", "T1", "p", "recomputed", 0.04, ci=(0.04, 0.04), null_range=(0, 0.05), direction="within",
                interval_how="deterministic recomputation")
    assert d.verdict == "supported"
