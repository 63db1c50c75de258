"""Seed 001 claims: per-item accuracies that reproduce Table 2, and verdicts from bootstrap
intervals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from kit.core.claims import check_consistent
from kit.data.paper_tables import load_table
from kit.shortcut import claims as scc
from kit.shortcut import ranking
from kit.shortcut.evidence import Evidence


def _te(n=100, con_drop=30, clean_change=0, seed=0, leak=True):
    """Per-item Table 2 rows: contaminated rows lose ``con_drop`` correct items under TE, Ref sits
    ``con_drop`` points lower (``leak``); clean rows change by ``clean_change`` items."""
    rng = np.random.default_rng(seed)
    out = {}
    for label, drop in (
        ("+test", con_drop),
        ("+5x test", con_drop),
        ("Vanilla", clean_change),
        ("+train", clean_change),
    ):
        ori = (rng.random(n) < 0.6).astype(float)
        te = ori.copy()
        te[np.flatnonzero(ori)[:drop]] = 0.0  # the first `drop` correct items become wrong
        ref = (rng.random(n) < 0.6 - (drop / n if leak else 0)).astype(float)
        out[label] = {"ori": ori, "te": te, "ref": ref}
    return out


def _noise(n=100, seed=0):
    """Null-equivalent rows: TE flips as many right answers wrong as wrong ones right, Ref = Ori's
    rate."""
    rng = np.random.default_rng(seed)
    out = {}
    for label in ("+test", "+5x test", "Vanilla", "+train"):
        ori = (rng.random(n) < 0.5).astype(float)
        te = ori.copy()
        te[np.flatnonzero(ori == 1)[:8]] = 0.0
        te[np.flatnonzero(ori == 0)[:8]] = 1.0
        out[label] = {"ori": ori, "te": te, "ref": rng.permutation(ori)}
    return out


def _table2(te):
    return pd.DataFrame(
        [
            {
                "variant": v,
                "ori": 100 * d["ori"].mean(),
                "te": 100 * d["te"].mean(),
                "ref": 100 * d["ref"].mean(),
            }
            for v, d in te.items()
        ]
    )


def _evidence(te, **kw):
    """Evidence on ``te``; by default no test item located the neurons (they were located on
    others), so every claim reads them all."""
    n = len(next(iter(te.values()))["ori"])
    args: dict[str, Any] = dict(
        test_locating=np.zeros(n, bool),
        te=te,
        contaminated=["+test", "+5x test"],
        table2=_table2(te),
        table9=load_table("001_table09_real_world_models"),
        n_patched=3,
        base_labels=["Vanilla"],
        rests_on="test rows",
    )
    args.update(kw)
    return Evidence(**args)


def _claims(ev, **kw):
    out = {c.id: c for c in scc.shortcut_claims(ev, n_boot=kw.pop("n_boot", 300), **kw)}
    for c in out.values():
        check_consistent(c)
    return out


def test_reproduction_claims_decided_on_a_drop_and_inconclusive_on_noise():
    te = _te()
    sparsity = np.vstack([np.zeros(60), np.tile(np.r_[np.ones(40), np.zeros(20)], (100, 1))])
    c = _claims(
        _evidence(
            te,
            te_full=_te(seed=1),
            full_contaminated=["+test", "+5x test"],
            sparsity=sparsity,
            sparsity_from=40,
        )
    )
    assert set(scc.REQUIRED_IDS["03_shortcut_neurons"]) <= set(c)
    assert (
        c["te.contaminated_drop"].verdict == "supported" and c["te.contaminated_drop"].ours == -30.0
    )
    assert (
        c["te.contaminated_drop"].kind == "reproduction"
        and c["te.contaminated_drop"].rests_on == "test rows"
    )
    assert (
        c["te.delta[+test]"].verdict == "supported"
        and c["te_full.contaminated_drop"].verdict == "supported"
    )
    # the base row is no claim (patching it from itself changes nothing by definition); duplicates
    # are gone
    assert (
        "te.delta[Vanilla]" not in c and "te.toward_ref" not in c and "te.a2_train_split" not in c
    )
    # clean rows over 100 items: one changed answer already moves a bootstrap interval 3 points,
    # past ±2, so "unchanged" can never be supported: the design cannot decide it
    assert (
        c["te.clean_unchanged"].verdict == "cannot be decided here"
        and "100 items: one changed answer moves the interval to 3 points"
        in c["te.clean_unchanged"].why
    )
    noise = _claims(
        _evidence(_noise(), te_full=_noise(seed=1), full_contaminated=["+test", "+5x test"])
    )
    for cid in ("te.contaminated_drop", "te.clean_toward_ref"):
        assert noise[cid].verdict == "inconclusive", (cid, noise[cid].why)
    # Ref = a permutation of Ori: no leak, so TE's change on those rows cannot be decided at all
    for cid in ("te.delta[+test]", "te_full.contaminated_drop"):
        assert noise[cid].verdict == "cannot be decided here", (cid, noise[cid].why)


def test_unchanged_cannot_be_decided_when_nothing_changed_or_the_patch_does_not_act():
    # 400 items: the design could support ±2 (one changed answer: 3 draws of 0.25 points)
    c = _claims(
        _evidence(
            _te(n=400),
            te_full=_te(n=400, seed=1, con_drop=0),
            full_contaminated=["+test", "+5x test"],
        )
    )
    # nothing changed on the clean row: a zero-width interval, which reads no equivalence
    assert c["te.clean_unchanged"].verdict == "cannot be decided here", c["te.clean_unchanged"].why
    assert "zero width" in c["te.clean_unchanged"].why
    # the full fine-tunes: the patch changes nothing on the contaminated rows either, so an
    # unchanged clean row cannot be told from an inert patch
    full = c["te_full.clean_unchanged"]
    assert full.verdict == "cannot be decided here" and "not shown to act" in full.why, full.why
    # where the clean rows do move a little and the patch acts, the equivalence is decided
    moved = _claims(_evidence(_te(n=400, clean_change=2)))
    assert moved["te.clean_unchanged"].verdict == "supported", moved["te.clean_unchanged"].why


def test_te_on_a_row_whose_leak_is_not_established_cannot_be_decided():
    # TE drops 30 items, but Ref sits as high as Ori: no inflated score to lower
    c = _claims(
        _evidence(
            _te(leak=False),
            te_full=_te(seed=1, leak=False),
            full_contaminated=["+test", "+5x test"],
        )
    )
    assert c["te.leak[+test]"].verdict != "supported"
    d = c["te.delta[+test]"]
    assert d.verdict == "cannot be decided here" and "leak is not established" in d.why, d.why
    assert d.ours == -30.0  # the numbers stay for display
    assert c["te_full.contaminated_drop"].verdict == "cannot be decided here"
    # with the leak, the same drop is decided
    assert _claims(_evidence(_te()))["te.delta[+test]"].verdict == "supported"


def _full_rows(flips: int) -> dict:
    """Full fine-tunes that leak 30 points (Ref 30 points under Ori) but lose only ``flips``
    correct answers under TE."""
    full = _te(seed=1)
    for label in ("+test", "+5x test"):
        d = full[label]
        d["te"] = d["ori"].copy()
        d["te"][np.flatnonzero(d["ori"])[:flips]] = 0.0
    return full


def test_full_fine_tune_te_read_against_the_papers_effect():
    cons = ["+test", "+5x test"]
    flat = _claims(_evidence(_te(), te_full=_full_rows(0), full_contaminated=cons))
    assert flat["te_full.leak"].verdict == "supported"
    # the paper's -49.8 to -7.1 points lie wholly below an interval at 0: not replicated, though
    # the test against 0 alone only says "inconclusive"
    drop = flat["te_full.contaminated_drop"]
    assert drop.verdict == "inconclusive" and drop.vs_paper == "not replicated", drop.why
    assert (drop.paper_effect_low, drop.paper_effect_high) == (-49.8, -7.1)
    small = _claims(_evidence(_te(), te_full=_full_rows(3), full_contaminated=cons))
    c = small["te_full.contaminated_drop"]
    assert c.verdict == "supported" and c.vs_paper == "smaller than the paper's", (
        c.ci_low,
        c.ci_high,
    )
    big = _claims(_evidence(_te(), te_full=_full_rows(30), full_contaminated=cons))
    c = big["te_full.contaminated_drop"]
    assert c.verdict == "supported" and c.vs_paper == "replicated"
    # no leak: no reading against the paper either
    no_leak = _claims(_evidence(_te(), te_full=_te(seed=1, leak=False), full_contaminated=cons))
    assert no_leak["te_full.contaminated_drop"].vs_paper == ""


def test_by_construction_weakens_the_sparse_rows_but_not_the_full_fine_tunes():
    why = "by construction: seeded sets"
    c = _claims(
        _evidence(
            _te(),
            by_construction=why,
            te_full=_te(seed=1),
            full_contaminated=["+test", "+5x test"],
            full_rests_on="full rows",
        )
    )
    for cid in ("te.contaminated_drop", "te.delta[+test]", "agreement.te_vs_ori"):
        assert why in c[cid].why and c[cid].verdict != "supported", cid
    assert (
        c["te_full.contaminated_drop"].verdict == "supported"
        and c["te_full.contaminated_drop"].rests_on == "full rows"
    )
    assert c["te.leak[+test]"].verdict == "supported", "a set-up check is no transfer: not weakened"
    none = _claims(_evidence(_te()))
    assert none["te_full.contaminated_drop"].verdict == "not testable here"


def test_set_up_checks_decided_on_a_leak_and_inconclusive_without_one():
    te = _te()
    c = _claims(_evidence(te))
    leak = c["te.leak[+test]"]  # Ori - Ref by hand from the same arrays
    assert leak.kind == "set-up check" and leak.verdict == "supported"
    assert leak.ours == pytest.approx(100 * (te["+test"]["ori"].mean() - te["+test"]["ref"].mean()))
    assert "te.leak[Vanilla]" not in c and c["rules.chosen_vs_public"].kind == "set-up check"
    flat = _noise()
    assert _claims(_evidence(flat))["te.leak[+test]"].verdict == "inconclusive", (
        "Ref = a permutation of Ori"
    )
    full = _claims(_evidence(te, te_full=_te(seed=1), full_contaminated=["+test", "+5x test"]))[
        "te_full.leak"
    ]
    assert full.kind == "set-up check" and full.verdict == "supported"


def test_re_analysis_of_table9_decided_and_inconclusive_when_te_is_ori():
    t9 = load_table("001_table09_real_world_models")
    c = _claims(_evidence(_te(), table9=t9))["agreement.table9"]
    assert c.kind == "re-analysis" and "Table 9" in c.rests_on
    # TE equal to the reference: a gain wherever Ori is not perfect
    better = t9.assign(te=t9.ref_mixeval)
    assert _claims(_evidence(_te(), table9=better))["agreement.table9"].verdict == "supported"
    same = t9.assign(te=t9.ori)  # TE = Ori: no gain in any resample
    assert _claims(_evidence(_te(), table9=same))["agreement.table9"].verdict == "inconclusive"


def test_sparsity_against_100_random_sets_on_held_out_items():
    rng = np.random.default_rng(0)
    rand = (rng.random((100, 80)) < 0.6).astype(float)
    # located: 5% of the held-out items vs random sets around 60%; the first 20 items (all right
    # with the located neurons patched, so a claim read on them would see 25%) located the neurons
    low = np.vstack([np.r_[np.ones(20), np.ones(3), np.zeros(57)], rand])
    first20 = np.arange(80) < 20
    c = _claims(_evidence(_te(n=80), sparsity=low, test_locating=first20))[
        "sparsity.located_vs_random"
    ]
    assert (
        c.verdict == "supported"
        and c.extra["n_null_draws"] == 100
        and c.extra["n_held_out"] == 60
        and c.extra["p_value"] == pytest.approx(1 / 101)
    )
    # the band and the estimate are read on the 60 held-out items only
    assert c.null_low == pytest.approx(np.quantile(100 * rand[:, 20:].mean(1), 0.025))
    assert (
        c.ours == 5.0
        and c.unit == "held-out test items"
        and "none of which located" in c.interval_how
    )
    like = np.vstack([(rng.random(80) < 0.6).astype(float), rand])  # located = one more random set
    assert (
        _claims(_evidence(_te(n=80), sparsity=like, test_locating=first20))[
            "sparsity.located_vs_random"
        ].verdict
        == "inconclusive"
    )


def test_claims_scored_on_their_locating_items_are_refused():
    """Every claim about the located neurons (TE on every row, the cheaters, their agreement with
    Ref, the sparsity null) fed only the items that located them, or items of which it is not
    recorded which located, cannot be decided: a clear win, were it read, is refused."""
    rng = np.random.default_rng(0)
    rand = (rng.random((100, 80)) < 0.6).astype(float)
    low = np.vstack([np.r_[np.ones(3), np.zeros(77)], rand])  # a clear win, were it read
    every = np.ones(80, bool)  # n_eval <= n_locate: every test item located the neurons
    located = ("te.", "te_full.", "cheaters.delta", "sparsity.", "agreement.te_vs_ori")
    for flags in (every, None):  # None: which items located is not recorded
        c = _claims(
            _evidence(
                _te(n=80),
                sparsity=low,
                test_locating=flags,
                te_full=_te(n=80, seed=1),
                full_contaminated=["+test", "+5x test"],
                cheaters={"PT-Cheater": _te(n=80, seed=2)["+test"]},
                cheaters_contaminated=["PT-Cheater"],
            )
        )
        sp = c["sparsity.located_vs_random"]
        assert sp.ours == 3.75 and sp.margin is None, "the numbers stay for display only"
        refused = [k for k in c if k.startswith(located) and ".leak" not in k]
        assert len(refused) >= 10 and "te.delta[+test]" in refused
        for k in refused:
            if c[k].verdict != "not testable here":
                assert c[k].verdict == "cannot be decided here", (k, c[k].why)
                assert "locating items" in c[k].why or "not recorded" in c[k].why, c[k].why
        # the same rows with the neurons located on other items: decided
        if flags is every:
            ok = _claims(_evidence(_te(n=80), sparsity=low, test_locating=~every))
            assert ok["te.delta[+test]"].verdict == "supported"
            assert ok["sparsity.located_vs_random"].verdict == "supported"
    assert c["te.leak[+test]"].verdict == "supported", "a leak is no claim about the neurons"
    with pytest.raises(ValueError, match="test_locating"):
        _claims(_evidence(_te(n=80), sparsity=low, test_locating=every[:10]))
    with pytest.raises(ValueError, match="sparsity"):
        _claims(_evidence(_te(n=80), sparsity=low, test_locating=every, sparsity_from=5))


def test_te_claims_read_the_held_out_items_only():
    """The first 30 items located the neurons and TE drops exactly those on every contaminated
    row: on the 70 held-out items it lowers nothing, so the drop is not supported; the cheaters,
    the full fine-tunes and the agreement with Ref read the same 70."""
    te = _te(n=100, con_drop=0)
    first = np.arange(100) < 30
    for d in (te["+test"], te["+5x test"]):
        d["te"] = np.where(first, 0.0, d["ori"])  # every locating item wrong under TE
        d["ref"] = np.r_[np.ones(20), np.zeros(80)]  # 20%: a leak of ~40 points
    ev = _evidence(
        te,
        test_locating=first,
        te_full={k: dict(v) for k, v in te.items()},
        full_contaminated=["+test", "+5x test"],
        cheaters={"PT-Cheater": dict(te["+test"])},
        cheaters_contaminated=["PT-Cheater"],
    )
    c = _claims(ev)
    for cid in ("te.delta[+test]", "te.contaminated_drop", "te_full.contaminated_drop"):
        assert c[cid].ours == 0.0 and c[cid].verdict != "supported", (cid, c[cid].why)
        assert "70 held-out test items" in c[cid].interval_how
        assert c[cid].extra["n_held_out"] == 70
    assert c["cheaters.delta[PT-Cheater]"].ours == 0.0
    assert c["te.leak[+test]"].ours == pytest.approx(
        100 * (te["+test"]["ori"][30:].mean() - te["+test"]["ref"].mean())
    )
    # read on every item, the same rows would show the drop the locating items carry
    every = _claims(_evidence(te))
    d = every["te.delta[+test]"]
    assert d.ours is not None and d.ours < -10 and d.verdict == "supported"


def test_locating_items_include_later_items_sharing_a_content():
    from kit.shortcut.evidence import locating_items

    assert locating_items(5, 2).tolist() == [True, True, False, False, False]
    # the fourth test item renders the first's content: not held out; the fifth is a new content
    shared = locating_items(5, 2, np.array(["a", "b", "c", "a", "d"]))
    assert shared.tolist() == [True, True, False, True, False]
    assert locating_items(3, 5).all(), "n_locate past the items: nothing held out"
    with pytest.raises(ValueError, match="clusters"):
        locating_items(3, 1, np.array(["a"]))
    rng = np.random.default_rng(1)
    rand = (rng.random((100, 5)) < 0.6).astype(float)
    clusters = np.array(["a", "b", "c", "a", "d"])
    ev = _evidence(
        _te(n=5, con_drop=1),
        sparsity=np.vstack([np.zeros(5), rand]),
        test_locating=shared,
        test_clusters=clusters,
        fresh_clusters=None,
    )
    held, refused = scc.held_out(ev)
    assert refused == "" and held.test_clusters is not None
    assert held.test_clusters.tolist() == ["c", "d"]
    c = scc._sparsity_claim(held, dict(n_boot=200, seed=0))
    assert "2 contents (2 held-out test items)" in c.interval_how


def test_sparsity_win_on_planted_neurons_is_weakened():
    rng = np.random.default_rng(0)
    rand = (rng.random((100, 80)) < 0.6).astype(float)
    low = np.vstack([np.r_[np.zeros(20), np.ones(3), np.zeros(57)], rand])
    c = _claims(
        _evidence(
            _te(n=80),
            sparsity=low,
            test_locating=np.arange(80) < 20,
            by_construction="the sparse rows train seeded sets",
        )
    )["sparsity.located_vs_random"]
    assert c.verdict == "inconclusive" and "planted" in c.why and "weakened" in c.rests_on
    assert c.ci_high is not None and c.null_low is not None and c.ci_high < c.null_low, (
        "its numbers still exclude the band: only the caveat weakens it"
    )


def test_side_effects_per_cell_absolute_and_a_corrected_maximum():
    base = np.r_[np.ones(1000), np.zeros(1000)]
    small = base.copy()
    small[:5], small[-5:] = 0, 1  # 5 flips each way: Δ 0, tiny spread
    quiet = {
        ("+test", "add2"): np.stack([base, small]),
        ("+train", "add2"): np.stack([base, np.roll(small, 7)]),
    }
    up, down = base.copy(), base.copy()
    up[1000:1120], down[:120] = 1, 0
    # the base row is no cell (0 by definition when real)
    quiet[("Vanilla", "add2")] = np.stack([base, up])
    c = _claims(_evidence(_te(), side=quiet))
    assert (
        c["side_effects.unchanged"].verdict == "supported"
        and c["side_effects.largest_cell"].verdict == "supported"
    )
    assert "over 2 (row, task) cells" in c["side_effects.unchanged"].statement
    # +6 and -6 points: a signed mean of 0 would hide them; |Δacc| does not
    loud = {("+test", "add2"): np.stack([base, up]), ("+train", "add2"): np.stack([base, down])}
    c = _claims(_evidence(_te(), side=loud))
    assert (
        c["side_effects.unchanged"].ours == pytest.approx(6.0)
        and c["side_effects.unchanged"].verdict == "contradicted"
    )
    big = c["side_effects.largest_cell"]
    assert (
        big.ours == pytest.approx(6.0)
        and big.verdict == "contradicted"
        and "Bonferroni (2 cells)" in big.interval_how
    )
    # 20 items (the real profile's side tasks): one flip moves a cell 5 points, so "unchanged
    # within ±2" can never be supported, whatever the flips: the design cannot decide it
    few = {
        ("+test", "add2"): np.stack(
            [base[990:1010], np.r_[base[990:1000], np.ones(1), base[1001:1010]]]
        )
    }
    c = _claims(_evidence(_te(), side=few))
    for cid in ("side_effects.largest_cell", "side_effects.unchanged"):
        assert c[cid].verdict == "cannot be decided here" and "20 items" in c[cid].why, c[cid].why
    still = {("+test", "add2"): np.stack([base[990:1010], base[990:1010]])}
    assert _claims(_evidence(_te(), side=still))["side_effects.unchanged"].verdict == (
        "cannot be decided here"
    )
    # a patch that does not act on its own target: unchanged side tasks say nothing
    inert = _claims(_evidence(_te(con_drop=0, leak=True), side=quiet))
    assert inert["side_effects.unchanged"].verdict == "cannot be decided here"
    assert "not shown to act" in inert["side_effects.unchanged"].why
    assert _claims(_evidence(_te()))["side_effects.unchanged"].verdict == "not testable here"


def test_rows_share_their_items_and_contents_resample_together():
    """Four rows on the same 50 items: the pooled interval resamples the items once (as wide as one
    row's); each item rendered 4 times (content clusters) is as wide as 50 items, not 200."""
    rng = np.random.default_rng(1)
    ori = (rng.random(50) < 0.5).astype(float)
    te = ori * (rng.random(50) < 0.5)
    rows = {v: {"ori": ori, "te": te, "ref": ori} for v in ("+test", "+5x test")}
    one = _claims(_evidence(rows, contaminated=["+test", "+5x test"]))
    width = one["te.contaminated_drop"].ci_high - one["te.contaminated_drop"].ci_low
    solo = one["te.delta[+test]"].ci_high - one["te.delta[+test]"].ci_low
    assert width == pytest.approx(solo, rel=0.05), "the same items count once, not once per row"
    rep = {v: {k: np.repeat(a, 4) for k, a in d.items()} for v, d in rows.items()}
    clusters = np.repeat(np.arange(50), 4)
    flat = _claims(_evidence(rep))["te.contaminated_drop"]
    clus = _claims(_evidence(rep, test_clusters=clusters, fresh_clusters=clusters))[
        "te.contaminated_drop"
    ]
    assert (clus.ci_high - clus.ci_low) > 1.6 * (flat.ci_high - flat.ci_low)
    assert (clus.ci_high - clus.ci_low) == pytest.approx(
        width, rel=0.25
    ) and "50 contents" in clus.interval_how


def test_a_mismatch_with_table2_fails_and_stability_is_marked():
    te = _te(n=40, con_drop=1)
    bad = _table2(te).assign(ori=lambda d: d.ori + 5)
    with pytest.raises(ValueError, match="differs from Table 2"):
        scc.shortcut_claims(_evidence(te, table2=bad))
    out = scc.claims_with_stability(_evidence(_te()), reseeds=[1, 2], n_boot=200)
    byid = {c.id: c for c in out}
    assert byid["te.contaminated_drop"].stability == "stable under bootstrap seeds 1, 2"
    assert all(c.stability for c in out if c.verdict != "not testable here")


def test_rule_choice_claim_reads_the_interval_against_the_public_sum():
    # 8 items: the chosen veto drops M_con on all eight (100 pts), the public sum on one (12.5);
    # M_un unchanged
    # rows: unpatched, sum, veto
    con = np.array([[1] * 8, [0, 1, 1, 1, 1, 1, 1, 1], [0] * 8], float)
    un = np.zeros((3, 8))
    rules = pd.DataFrame({"rule": ["sum (exact)", "veto (exact)"], "objective": [12.5, 100.0]})
    rules.attrs["items"] = {"con": con, "un": un}
    c = scc.rule_choice_claim(
        ranking.rule_intervals(rules, "veto (exact)", n_boot=300), "veto (exact)"
    )
    assert c.id == "rules.chosen_vs_public" and c.ours == 87.5 and c.verdict == "supported"
    assert 0 < c.ci_low <= 87.5 <= c.ci_high <= 100
    assert (
        scc.rule_choice_claim(ranking.rule_intervals(rules, "sum (exact)"), "sum (exact)").verdict
        == "not testable here"
    )
    assert scc.rule_choice_claim(None, "sum (exact)").verdict == "not testable here"
    same = rules.copy()
    same.attrs["items"] = {"con": np.stack([con[0], con[1], con[1]]), "un": un}
    assert (
        scc.rule_choice_claim(ranking.rule_intervals(same, "veto (exact)"), "veto (exact)").verdict
        == "inconclusive"
    )


def test_format_claims_hand_computed():
    """A2: a format costing Vanilla 30 points on 100 fresh items and the format model 0 is a +30
    advantage; TE lowering the format model's wrapped test score from 50% to 20% is a -30 Δacc."""

    def ones(k, n):
        return np.r_[np.ones(k), np.zeros(n - k)]

    fmt = {
        "fresh_plain": ones(40, 100),
        "fresh_format": ones(40, 100),
        "ori": ones(100, 200),
        "te": ones(40, 200),
        "ref": ones(40, 100),
        "plain": ones(80, 200),
    }
    van = {
        "fresh_plain": ones(40, 100),
        "fresh_format": ones(10, 100),
        "ori": ones(20, 200),
        "te": ones(20, 200),
        "ref": ones(40, 100),
        "plain": ones(80, 200),
    }
    out = {
        c.id: c
        for c in scc.format_claims(
            {"Vanilla": van, "+format train": fmt},
            "+format train",
            "Vanilla",
            np.zeros(200, bool),
            n_boot=300,
        )
    }
    assert set(out) == {"a2.format_advantage[+format train]", "a2.format_te[+format train]"}
    for c in out.values():
        check_consistent(c)
    adv, te = out["a2.format_advantage[+format train]"], out["a2.format_te[+format train]"]
    assert adv.ours == pytest.approx(30.0) and te.ours == pytest.approx(-30.0)
    assert adv.verdict == te.verdict == "supported" and "-6.5" in str(te.paper_value)
    # no format effect on either row; TE RAISES the score 20 points
    same = dict(van, fresh_format=van["fresh_plain"])
    flat = scc.format_claims(
        {
            "Vanilla": same,
            "+format train": dict(fmt, fresh_format=fmt["fresh_plain"], te=ones(140, 200)),
        },
        "+format train",
        "Vanilla",
        np.zeros(200, bool),
    )
    assert [(c.ours, c.verdict) for c in flat] == [
        (0.0, "inconclusive"),
        (pytest.approx(20.0), "contradicted"),
    ]
    with pytest.raises(ValueError, match="must be rows of per_item"):
        scc.format_claims({"Vanilla": van}, "+format train", "Vanilla", None)
    # TE read on its held-out wrapped items only: the first 100 (all right, all made wrong)
    # located the neurons, and on the other 100 TE changes nothing
    kept = scc.format_claims(
        {"Vanilla": van, "+format train": fmt},
        "+format train",
        "Vanilla",
        np.arange(200) < 100,
        n_boot=300,
    )[1]
    assert kept.ours == 0.0 and "100 held-out test items" in kept.interval_how
    for flags in (None, np.ones(200, bool)):  # not recorded, or every item located
        c = scc.format_claims(
            {"Vanilla": van, "+format train": fmt}, "+format train", "Vanilla", flags, n_boot=300
        )[1]
        assert c.verdict == "cannot be decided here" and c.ours == pytest.approx(-30.0), c.why


def test_cheater_claims_hand_computed_and_table2_models_claimed_once():
    """Table 12: a cheater leaking 30 points that TE removes is decided on both; a row that is a
    Table 2 model (Normal = +other data) is claimed there, not twice."""
    ori_c = np.r_[np.ones(100), np.zeros(100)]  # 50%
    te_c = np.r_[np.ones(40), np.zeros(160)]  # 20%: Δacc -30
    ref_c = np.r_[np.ones(80), np.zeros(320)]  # 20%: leak +30
    clean = np.r_[np.ones(40), np.zeros(160)]
    cheat = {
        "Normal": {"ori": clean, "te": clean.copy(), "ref": np.r_[np.ones(80), np.zeros(320)]},
        "PT-Cheater": {"ori": ori_c, "te": te_c, "ref": ref_c},
        "PT-Flat": {
            "ori": ori_c,
            "te": ori_c[::-1].copy(),
            "ref": np.r_[np.ones(200), np.zeros(200)],
        },
    }
    table = _table2(cheat)
    ev = _evidence(
        _te(n=200),  # Table 2's rows and the cheaters on the same 200 test items
        cheaters=cheat,
        table12=table,
        cheaters_contaminated=["PT-Cheater", "PT-Flat"],
        cheater_same_as={"Normal": "+other data"},
        cheaters_rests_on="cheater rows",
    )
    out = {k: v for k, v in _claims(ev).items() if k.startswith("cheaters.")}
    assert set(out) == {
        "cheaters.leak[PT-Cheater]",
        "cheaters.delta[PT-Cheater]",
        "cheaters.leak[PT-Flat]",
        "cheaters.delta[PT-Flat]",
    }
    assert (
        out["cheaters.leak[PT-Cheater]"].kind == "set-up check"
        and out["cheaters.leak[PT-Cheater]"].ours == 30.0
    )
    assert (
        out["cheaters.delta[PT-Cheater]"].ours == -30.0
        and out["cheaters.delta[PT-Cheater]"].verdict == "supported"
    )
    assert out["cheaters.delta[PT-Cheater]"].rests_on == "cheater rows"
    # PT-Flat leaks nothing (Ref as high as Ori): TE has no inflated score to lower
    assert out["cheaters.leak[PT-Flat]"].verdict == "inconclusive"
    flat = out["cheaters.delta[PT-Flat]"]
    assert flat.verdict == "cannot be decided here" and "leak is not established" in flat.why


def test_the_study_result_names_what_is_missing():
    """The typed study (kit.shortcut.result): fields filled by the sections; asking before they ran
    fails."""
    from types import SimpleNamespace

    from kit.shortcut import result

    study = result.ShortcutStudy(cfg=SimpleNamespace(), setup=None)
    with pytest.raises(ValueError, match="section 1 fills study.located"):
        study.shortcut
    with pytest.raises(ValueError, match="needs sections 1, 2 and 6"):
        result.measure_evidence(study)
    study.located, study.n_patched = SimpleNamespace(ranked=[(0, 3), (1, 2), (0, 1)]), 2
    assert study.shortcut == [(0, 3), (1, 2)]


def test_agreement_claim_numbers_unchanged_by_the_shared_bootstrap_helper():
    # Expected values computed once by the code before it called kit.core.claims.bootstrap_claim
    # (its own bootstrap_ci then claim): the helper must draw the same resamples.
    from kit.shortcut.claims import _agreement_claim

    rng = np.random.default_rng(11)
    ref = rng.normal(size=9)
    te, ori = ref + rng.normal(scale=0.5, size=9), rng.normal(size=9)
    c = _agreement_claim("agreement.te_vs_ori", "toy", te, ori, ref, dict(n_boot=200, seed=4), "f")
    assert (c.ours, c.ci_low, c.ci_high) == (0.6, -0.3764358108108106, 1.5044927536231882)
    assert c.verdict == "inconclusive" and c.null == 0.0 and c.extra == {}


def test_sparsity_null_too_small_to_reach_the_level_cannot_decide():
    rng = np.random.default_rng(0)
    flags = np.arange(80) < 20
    low = np.r_[np.zeros(20), np.ones(3), np.zeros(57)]

    def sparsity(n_sets):
        rand = (rng.random((n_sets, 80)) < 0.6).astype(float)
        ev = _evidence(_te(n=80), sparsity=np.vstack([low, rand]), test_locating=flags)
        return scc._sparsity_claim(scc.held_out(ev)[0], dict(n_boot=300, seed=0))

    for n_sets, verdict in ((20, "cannot be decided here"), (39, "supported")):
        c = sparsity(n_sets)
        assert c.verdict == verdict, (n_sets, c.why)
    assert "1/21 > 0.025" in sparsity(20).why


def test_mean_side_effect_interval_holds_its_estimate_where_a_percentile_one_does_not():
    """Two cells whose 200 flips up and 200 down (of 2000 items) cancel: each Δacc is 0, so the
    mean |Δacc| is 0. A percentile bootstrap of the mean |Δacc| draws |Δ*| > 0 in nearly every
    resample (|·| of a noisy change is biased upward): its interval starts above 0, excluding its
    own estimate. The claim's interval, read off the cells' intervals of Δacc, holds it."""
    from kit.core.stats import bootstrap_groups_ci

    base = np.r_[np.ones(1000), np.zeros(1000)]
    te = base.copy()
    te[:200], te[1000:1200] = 0, 1  # 200 right answers wrong, 200 wrong ones right: Δ = 0
    side = {
        ("+test", "add2"): np.stack([base, te]),
        ("+train", "add2"): np.stack([base, te[::-1].copy()]),
    }

    def mean_abs(g):
        return float(
            np.mean([abs(100 * np.mean(g[0][1] - g[0][0])), abs(100 * np.mean(g[0][3] - g[0][2]))])
        )

    groups = [tuple(a for k in side for a in side[k])]
    point, lo, hi = bootstrap_groups_ci(mean_abs, groups, n_boot=1000, seed=0)
    assert point == 0.0 and lo > point, "the percentile interval excludes its own estimate"
    c = scc._side_claims(_evidence(_te(), side=side), dict(n_boot=300, seed=0), 2.0)[0]
    assert c.id == "side_effects.unchanged" and c.ours == 0.0
    assert c.ours is not None and c.ci_low is not None and c.ci_high is not None
    assert c.ci_low == 0.0 <= c.ours <= c.ci_high, (c.ci_low, c.ci_high)

    # its upper end: the mean over cells of the larger |end| of each cell's Bonferroni (2 cells)
    # interval, drawn with 20 * 2 / 0.05 = 800 replicates (about 10 in each tail)
    def cell_ends(j):
        _, a, b = bootstrap_groups_ci(
            lambda g: 100 * np.mean(g[0][2 * j + 1] - g[0][2 * j]),
            groups,
            n_boot=800,
            seed=0,
            level=1 - 0.05 / 2,
        )
        return max(abs(a), abs(b))

    assert c.ci_high == pytest.approx((cell_ends(0) + cell_ends(1)) / 2)
