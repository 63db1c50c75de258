"""Table 8 on the real rows: which rows are one recipe at several strengths
(kit.shortcut.strength), and the claim (kit.shortcut.claims) on synthetic per-item data
(hand-computed, the leak precondition)."""

from __future__ import annotations

import numpy as np
import pytest

from kit.core.claims import check_consistent, claim
from kit.core.params import load_params
from kit.shortcut.claims import real_strength_claim
from kit.shortcut.strength import strength_rows


def test_the_real_profile_s_1x_and_5x_rows_are_one_recipe_at_two_strengths():
    cfg = load_params("03_shortcut_neurons", "real")
    assert strength_rows(cfg.variants) == {"+test": 1, "+5x test": 5}
    # the paraphrased row and the clean rows are not strengths of it; the tiny world's are not
    # real recipes (its strength section retrains them), realsmoke has one level only
    assert strength_rows(load_params("03_shortcut_neurons", "tiny").variants) == {}
    assert strength_rows(load_params("03_shortcut_neurons", "realsmoke").variants) == {}


def _leak(label: str, ci) -> object:
    return claim("001", "Table 2", f"te.leak[{label}]", "leak", 10.0, ci=ci, null=0.0)


def _te():
    # 10 items; 1x: Ori 6/10 -> TE 5/10 (Δ -10); 5x: Ori 9/10 -> TE 3/10 (Δ -60)
    ori_1 = np.array([1] * 6 + [0] * 4)
    te_1 = np.array([1] * 5 + [0] * 5)
    ori_5 = np.array([1] * 9 + [0])
    te_5 = np.array([1] * 3 + [0] * 7)
    return {"+test": {"ori": ori_1, "te": te_1}, "+5x test": {"ori": ori_5, "te": te_5}}


def test_a_larger_drop_at_more_copies_is_supported_where_both_leaks_hold():
    out = [_leak("+test", (2.0, 20.0)), _leak("+5x test", (5.0, 30.0))]
    c = real_strength_claim(_te(), {"+test": 1, "+5x test": 5}, out, "SmolLM2 fine-tunes")
    check_consistent(c)
    assert c.ours == pytest.approx(-50.0)  # -60 - (-10), by hand
    assert c.verdict == "supported" and c.ci_high < 0
    assert "1x" in c.statement and "5x" in c.statement


def test_without_an_established_leak_the_strength_claim_cannot_be_decided():
    out = [_leak("+test", (-5.0, 20.0)), _leak("+5x test", (5.0, 30.0))]
    c = real_strength_claim(_te(), {"+test": 1, "+5x test": 5}, out, "SmolLM2 fine-tunes")
    check_consistent(c)
    assert c.verdict == "cannot be decided here" and "+test row's leak" in c.why
    te = _te()
    te["+5x test"] = {"ori": te["+5x test"]["ori"][:8], "te": te["+5x test"]["te"][:8]}
    with pytest.raises(ValueError, match="different items"):
        real_strength_claim(te, {"+test": 1, "+5x test": 5}, out, "x")
