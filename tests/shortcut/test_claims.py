"""Seed 001 claims: per-item accuracies that reproduce Table 2, and verdicts from bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kit.core.claims import check_consistent
from kit.data.paper_tables import load_table
from kit.shortcut import claims as scc
from kit.shortcut import evaluate
from kit.shortcut import items as shortcut_items
from kit.shortcut import ranking


def _world_model(seed: int):
    from kit.world.train import Arch, make_model

    m = make_model(Arch(1, 32, 2, 64, n_ctx=64), seed=seed)
    m.cfg.model_name = f"zoo/test-{seed}"
    return m.eval()


def test_item_correct_is_the_per_item_twin_of_accuracies():
    base, other = _world_model(0), _world_model(1)
    test = shortcut_items.task_data(base, shortcut_items.study_items("add", "test", 16))
    fresh = shortcut_items.task_data(base, shortcut_items.study_items("add", "fresh", 12))
    neurons = [(0, i) for i in range(0, 64, 2)]
    per_item = scc.item_correct(other, base, test, [[], neurons])
    assert per_item.shape == (2, 16) and set(np.unique(per_item)) <= {0.0, 1.0}
    assert np.allclose(per_item.mean(1), evaluate.accuracies(other, base, test, [[], neurons]))
    te = scc.te_items({"Vanilla": base, "+x": other}, base, test, fresh, neurons)
    assert (te["Vanilla"]["ori"] == te["Vanilla"]["te"]).all(), "patching the base with itself changes nothing"
    assert te["+x"]["ref"].shape == (12,)


def _te(n=100, con_drop=30, clean_change=0, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for label, drop in (("+test", con_drop), ("+5x test", con_drop), ("Vanilla", clean_change), ("+train", clean_change)):
        ori = (rng.random(n) < 0.6).astype(float)
        te = ori.copy()
        te[np.flatnonzero(ori)[:drop]] = 0.0  # the first `drop` correct items become wrong
        ref = (rng.random(n) < 0.6 - drop / n).astype(float)
        out[label] = {"ori": ori, "te": te, "ref": ref}
    return out


def _table2(te):
    return pd.DataFrame([{"variant": v, "ori": 100 * d["ori"].mean(), "te": 100 * d["te"].mean(),
                          "ref": 100 * d["ref"].mean()} for v, d in te.items()])


def test_shortcut_claims_follow_the_intervals():
    te = _te()
    side = {("+test", "add2"): np.ones((2, 50))}
    sparsity = np.stack([np.zeros(60), np.r_[np.ones(40), np.zeros(20)]])  # located 0%, random 67%
    claims = {c.id: c for c in scc.shortcut_claims(te, ["+test", "+5x test"], side, sparsity, _table2(te),
                                                   load_table("001_table09_real_world_models"), 3, n_boot=300)}
    assert set(scc.REQUIRED_IDS["03_shortcut_neurons"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["te.contaminated_drop"].verdict == "supported" and claims["te.contaminated_drop"].ours == -30.0
    assert claims["te.delta[+test]"].verdict == "supported"
    assert claims["te.toward_ref"].verdict == "supported"
    # clean models: nothing changes -> zero-width interval, which supports nothing
    assert claims["te.clean_unchanged"].verdict == "inconclusive" and "zero width" in claims["te.clean_unchanged"].why
    assert claims["sparsity.located_vs_random"].verdict == "supported"
    assert "Table 2" in claims["te.contaminated_drop"].paper_value
    assert claims["te.a2_train_split"].verdict == "not testable here"  # no "+train split" label in _te
    leak = claims["te.leak[+test]"]  # Ori - Ref by hand from the same arrays
    assert leak.ours == pytest.approx(100 * (te["+test"]["ori"].mean() - te["+test"]["ref"].mean()))
    assert leak.ours > 15 and leak.verdict == "supported" and "te.leak[Vanilla]" not in claims


def test_reporting_claims_a2_clean_models_and_the_largest_side_effect():
    """Issue 19 item 4: the A2 row, clean models moved away from Ref, the largest side-effect cell."""
    te = _te(con_drop=30, clean_change=0)
    te["+train split"] = {k: v.copy() for k, v in te["+train"].items()}
    rng = np.random.default_rng(3)
    for label in ("+train", "+train split", "Vanilla"):  # TE lifts clean models 25 items above Ori, Ref stays near Ori
        d = te[label]
        d["te"] = d["ori"].copy()
        d["te"][np.flatnonzero(d["ori"] == 0)[:25]] = 1.0
        d["ref"] = (rng.random(100) < d["ori"].mean()).astype(float)
    side = {("+test", "add2"): np.ones((2, 50)),
            ("+5x test", "facts-mc"): np.stack([np.r_[np.zeros(30), np.ones(20)], np.ones(50)])}  # +60 points
    claims = {c.id: c for c in scc.shortcut_claims(te, ["+test", "+5x test"], side, None, _table2(te),
                                                   load_table("001_table09_real_world_models"), 3, n_boot=300)}
    a2 = claims["te.a2_train_split"]
    assert a2.ours == pytest.approx(25.0) and a2.verdict == "contradicted", "A2 rises here: the paper's drop is contradicted"
    away = claims["te.clean_toward_ref"]
    assert away.ours < -15 and away.verdict == "contradicted"
    big = claims["side_effects.largest_cell"]
    assert big.ours == pytest.approx(60.0) and big.verdict == "contradicted" and "facts-mc" in big.statement


def test_small_deltas_are_inconclusive_and_a_mismatch_with_table2_fails():
    te = _te(n=40, con_drop=1)
    claims = {c.id: c for c in scc.shortcut_claims(te, ["+test"], {}, None, _table2(te),
                                                   load_table("001_table09_real_world_models"), 3, n_boot=300)}
    assert claims["te.delta[+test]"].verdict == "inconclusive", "1 item of 40 must not count as a TE effect"
    assert claims["side_effects.unchanged"].verdict == "not testable here"
    bad = _table2(te).assign(ori=lambda d: d.ori + 5)
    with pytest.raises(ValueError, match="differs from Table 2"):
        scc.shortcut_claims(te, ["+test"], {}, None, bad, load_table("001_table09_real_world_models"), 3)


def test_rule_choice_claim_reads_the_interval_against_the_public_sum():
    # 8 items: the chosen veto drops M_con on all eight (100 pts), the public sum on one (12.5); M_un unchanged
    con = np.array([[1] * 8, [0, 1, 1, 1, 1, 1, 1, 1], [0] * 8], float)  # rows: unpatched, sum, veto
    un = np.zeros((3, 8))
    rules = pd.DataFrame({"rule": ["sum (exact)", "veto (exact)"], "objective": [12.5, 100.0]})
    rules.attrs["items"] = {"con": con, "un": un}
    c = scc.rule_choice_claim(ranking.rule_intervals(rules, "veto (exact)", n_boot=300), "veto (exact)")
    assert c.id == "rules.chosen_vs_public" and c.ours == 87.5 and c.verdict == "supported"
    assert 0 < c.ci_low <= 87.5 <= c.ci_high <= 100
    assert scc.rule_choice_claim(ranking.rule_intervals(rules, "sum (exact)"), "sum (exact)").verdict == "not testable here"
    assert scc.rule_choice_claim(None, "sum (exact)").verdict == "not testable here"
    same = rules.copy()
    same.attrs["items"] = {"con": np.stack([con[0], con[1], con[1]]), "un": un}
    assert scc.rule_choice_claim(ranking.rule_intervals(same, "veto (exact)"), "veto (exact)").verdict == "inconclusive"


def test_cheater_claims_hand_computed():
    """Table 12: a cheater leaking 30 points that TE removes is supported on both; a clean row kept is 'within'."""
    n = 200
    ori_c = np.r_[np.ones(100), np.zeros(100)]          # 50%
    te_c = np.r_[np.ones(40), np.zeros(160)]            # 20%: Δacc -30
    ref_c = np.r_[np.ones(80), np.zeros(320)]           # 20%: leak +30
    clean = np.r_[np.ones(40), np.zeros(160)]
    te = {"Normal": {"ori": clean, "te": clean.copy(), "ref": np.r_[np.ones(80), np.zeros(320)]},
          "PT-Cheater": {"ori": ori_c, "te": te_c, "ref": ref_c}}
    table = pd.DataFrame([{"variant": k, "ori": 100 * d["ori"].mean(), "te": 100 * d["te"].mean(),
                           "ref": 100 * d["ref"].mean()} for k, d in te.items()])
    out = {c.id: c for c in scc.cheater_claims(te, ["PT-Cheater"], table, n_boot=300)}
    assert set(out) == {"cheaters.delta[Normal]", "cheaters.leak[PT-Cheater]", "cheaters.delta[PT-Cheater]"}
    for c in out.values():
        check_consistent(c)
    assert out["cheaters.leak[PT-Cheater]"].ours == pytest.approx(30.0)
    assert out["cheaters.delta[PT-Cheater]"].ours == pytest.approx(-30.0)
    assert out["cheaters.delta[Normal]"].ours == 0.0
    assert out["cheaters.leak[PT-Cheater]"].verdict == out["cheaters.delta[PT-Cheater]"].verdict == "supported"
    assert "-17.5" in str(out["cheaters.delta[PT-Cheater]"].paper_value)
    bad = table.assign(ori=table.ori + 1)
    with pytest.raises(ValueError, match="differs from Table 12"):
        scc.cheater_claims(te, ["PT-Cheater"], bad)
