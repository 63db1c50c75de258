"""Seed 004 claims over hand-made settings: each claim decided on a clear case and inconclusive on a
null-equivalent one, the paper values taken from the table of the setting's task, stability
marks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kit.core.claims import check_consistent
from kit.neuronvote.claims import (
    REQUIRED_IDS,
    per_concept,
    setting_claims,
    shuffled_null,
    study_claims,
)
from kit.neuronvote.published import CHUNKING_BERT, POS_BERT
from kit.neuronvote.settings import Setting
from kit.neuronvote.study import StudyResult

VOTERS = ("probeless", "iou", "lasso", "ridge", "lca", "gaussian")
# Ridge after its last-layer drop of 0.1 ties IoU: Spearman varies
PAPER_NV = {
    "random": 0.02,
    "gaussian": 0.17,
    "lca": 0.51,
    "lasso": 0.47,
    "ridge": 0.415,
    "probeless": 0.60,
    "iou": 0.365,
    "meanselect": 0.30,
}


def _rows(values: dict, layers, n_concepts, rng, noise, drop_last=0.0, extra=()):
    rows = []
    for L in layers:
        for c in range(n_concepts):
            for m, v in values.items():
                x = v - (drop_last if L == layers[-1] and m in ("lca", "lasso", "ridge") else 0.0)
                nv = float(np.clip(x + noise * rng.normal(), 0, 1))
                ao = float(np.clip(x / 2 + noise * rng.normal(), 0, 1))
                rows.append((L, f"L{L}", f"c{c}", 10, m, "NeuronVote", nv, *extra))
                rows.append((L, f"L{L}", f"c{c}", 10, m, "AvgOverlap", ao, *extra))
    return rows


COLS = ["layer", "position", "concept", "s", "method", "metric", "score"]


def _setting(
    real: dict,
    shuffled: dict | None,
    name="encoder",
    paper=POS_BERT,
    layers=(0, 5),
    n=12,
    noise=0.01,
    drop_last=0.0,
    k=3,
    seed=0,
) -> Setting:
    rng = np.random.default_rng(seed)
    scores = pd.DataFrame(_rows(real, layers, n, rng, noise, drop_last), columns=COLS)
    sh = None
    if shuffled is not None:
        sh = pd.DataFrame(
            [
                r
                for j in range(1, k + 1)
                for r in _rows(shuffled, layers, n, rng, noise, extra=(j,))
            ],
            columns=COLS + ["shuffle"],
        )
    res = StudyResult("toy", "site", scores, pd.DataFrame(), voters=VOTERS, shuffled_scores=sh)
    prefix = "" if name == "encoder" else f"{name}."
    return Setting(
        name, prefix, f"toy {name}", res, pd.DataFrame(), paper, rests_on="hand-made numbers"
    )


SHUFFLED = {m: 0.10 for m in PAPER_NV}


def test_per_concept_means_over_layers_and_s():
    st = _setting(PAPER_NV, None, noise=0.0)
    t = per_concept(st.result.scores, "NeuronVote")
    assert t.shape == (12, len(PAPER_NV)) and abs(t.loc["c0", "random"] - 0.02) < 1e-12


def test_every_claim_decided_on_a_clear_case():
    st = _setting(PAPER_NV, SHUFFLED, drop_last=0.1)
    claims = {c.id: c for c in setting_claims(st, n_boot=300, n_null=300)}
    assert set(claims) == set(REQUIRED_IDS["05_neuronvote"])
    for c in claims.values():
        check_consistent(c)
        assert c.kind == "reproduction" and c.rests_on == "hand-made numbers"
        assert c.verdict == "supported", (c.id, c.why)
    assert claims["order.paper_agreement"].section == "Table 2"
    assert claims["agreement.beats_shuffled"].extra["p_value"] == pytest.approx(1 / 301)
    pv = claims["probeless.most_compatible"]
    assert pv.extra["best_other"] == "lca" and pv.ours == pytest.approx(
        0.60 - (0.51 - 0.1 / 2), abs=0.01
    )
    assert claims["layer.probing_trend"].ours == pytest.approx(-0.1, abs=0.01)


def test_null_equivalent_inputs_come_out_inconclusive():
    """Labels that add nothing (scores as on shuffled labels), Probeless tied with LCA, no layer
    change, methods in no particular order: no claim may be decided."""
    st = _setting({m: 0.10 for m in PAPER_NV}, SHUFFLED, noise=0.03, seed=1)
    claims = {c.id: c for c in setting_claims(st, n_boot=300, n_null=300)}
    for c in claims.values():
        check_consistent(c)
        assert c.verdict == "inconclusive", (c.id, c.verdict, c.why)


def test_agreement_above_random_but_not_above_shuffled_is_not_supported():
    """The old test (beats Random) passes on label-free agreement; the shuffled-label null does
    not."""
    geometry = {m: 0.30 for m in PAPER_NV} | {"random": 0.02}
    st = _setting(geometry, {m: 0.30 for m in PAPER_NV}, noise=0.02, seed=2)
    c = next(
        c for c in setting_claims(st, n_boot=300, n_null=300) if c.id == "agreement.beats_shuffled"
    )
    ao = per_concept(st.result.scores, "AvgOverlap")
    assert (ao[list(VOTERS)].mean(axis=1) > ao["random"] + 0.1).all(), (
        "far above Random's chance overlap"
    )
    assert c.verdict != "supported", c.why


def test_without_shuffles_the_shuffled_claims_are_not_testable():
    claims = {c.id: c for c in setting_claims(_setting(PAPER_NV, None), n_boot=100, n_null=100)}
    for cid in ("agreement.beats_shuffled", "meanselect.beats_shuffled"):
        assert claims[cid].verdict == "not testable here" and "shuffles: 0" in claims[cid].why


def test_paper_values_come_from_the_settings_table():
    chunk = {
        c.id: c
        for c in setting_claims(
            _setting(PAPER_NV, SHUFFLED, name="chunking", paper=CHUNKING_BERT),
            n_boot=100,
            n_null=100,
        )
    }
    order = chunk["chunking.order.paper_agreement"]
    assert order.section == "Table 6" and "Chunking" in order.statement
    assert "0.532" not in str(chunk["chunking.probeless.most_compatible"].paper_value), (
        "not POS Table 2"
    )
    assert "Chunking" in str(chunk["chunking.layer.probing_trend"].paper_value)
    dec = {
        c.id: c
        for c in setting_claims(
            _setting(PAPER_NV, SHUFFLED, name="decoder", paper=None), n_boot=100, n_null=100
        )
    }
    assert "decoder.order.paper_agreement" not in dec, (
        "no paper order for a setting the paper did not run"
    )
    assert set(dec) == {
        "decoder.agreement.beats_shuffled",
        "decoder.probeless.most_compatible",
        "decoder.layer.probing_trend",
    }
    assert all(c.paper_value is None for c in dec.values())


def test_shuffled_null_draws_one_copy_per_unit():
    """Two units with copies {0, 1} and {10, 20}: every draw's mean is one of the four
    combinations."""
    rows = [(0, "L0", "a", 10, "lca", "AvgOverlap", v, k) for k, v in ((1, 0.0), (2, 1.0))]
    rows += [(0, "L0", "b", 10, "lca", "AvgOverlap", v, k) for k, v in ((1, 10.0), (2, 20.0))]
    res = StudyResult(
        "toy",
        "site",
        pd.DataFrame(columns=COLS),
        pd.DataFrame(),
        shuffled_scores=pd.DataFrame(rows, columns=COLS + ["shuffle"]),
    )
    st = Setting("encoder", "", "toy", res, pd.DataFrame(), None, "")
    draws = shuffled_null(st, "AvgOverlap", ["lca"], n_null=400, seed=0)
    # K = 2: each copy's distance from its unit's mean (0.5 and 5) scaled by sqrt(2)
    a = 0.5 + np.sqrt(2) * np.array([-0.5, 0.5])
    b = 15.0 + np.sqrt(2) * np.array([-5.0, 5.0])
    expect = {round((x + y) / 2, 6) for x in a for y in b}
    assert draws.shape == (400,) and set(np.round(draws, 6)) == expect


@pytest.mark.parametrize("k", [2, 3])
def test_shuffled_null_band_is_as_wide_as_the_null_with_few_copies(k):
    """Units whose shuffled value is N(mu_u, 1): the null of the mean over U units has sd
    1 / sqrt(U). Picking one of K copies per unit without the scaling gives sd sqrt((K - 1) / K)
    times that (0.71 for K = 2); with it, the full width."""
    rng = np.random.default_rng(0)
    n_units = 200
    mu = rng.uniform(0, 1, n_units)
    widths = []
    for rep in range(20):  # average over independent sets of copies: the estimate is unbiased
        vals = mu[:, None] + rng.normal(0, 1, (n_units, k))
        rows = [
            (0, "L0", f"c{u}", 10, "lca", "AvgOverlap", vals[u, j], j + 1)
            for u in range(n_units)
            for j in range(k)
        ]
        res = StudyResult(
            "toy",
            "site",
            pd.DataFrame(columns=COLS),
            pd.DataFrame(),
            shuffled_scores=pd.DataFrame(rows, columns=COLS + ["shuffle"]),
        )
        st = Setting("encoder", "", "toy", res, pd.DataFrame(), None, "")
        draws = shuffled_null(st, "AvgOverlap", ["lca"], n_null=2000, seed=rep)
        assert draws is not None
        widths.append(np.var(draws))
    ratio = np.sqrt(np.mean(widths)) / (1 / np.sqrt(n_units))
    assert 0.93 < ratio < 1.07, ratio
    one = StudyResult(
        "toy",
        "site",
        pd.DataFrame(columns=COLS),
        pd.DataFrame(),
        shuffled_scores=pd.DataFrame(
            [(0, "L0", "a", 10, "lca", "AvgOverlap", 1.0, 1)], columns=COLS + ["shuffle"]
        ),
    )
    st1 = Setting("encoder", "", "toy", one, pd.DataFrame(), None, "")
    assert shuffled_null(st1, "AvgOverlap", ["lca"]) is None, "one copy: no spread to estimate"


def test_stability_marks_a_claim_that_flips_under_another_study_seed():
    st = _setting(PAPER_NV, SHUFFLED, drop_last=0.1)
    again = _setting(PAPER_NV | {"probeless": 0.40}, SHUFFLED, drop_last=0.1, seed=3).result.scores
    st.result.reseed_scores = pd.concat(
        [st.result.scores.assign(seed=0), again.assign(seed=1)], ignore_index=True
    )
    claims = {c.id: c for c in study_claims([st], seed=0, n_boot=200, n_null=200)}
    assert claims["probeless.most_compatible"].stability.startswith("flips under study seeds 1")
    assert claims["agreement.beats_shuffled"].stability.startswith("stable under study seeds 1")
    without = {
        c.id: c
        for c in study_claims([_setting(PAPER_NV, SHUFFLED)], seed=0, n_boot=100, n_null=100)
    }
    assert without["probeless.most_compatible"].stability.startswith(
        "stable under bootstrap and null-draw seeds"
    )


def test_orders_null_is_the_exact_distribution_over_all_orders():
    from kit.neuronvote.claims import orders_null

    null = orders_null([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    assert null.size == 720 and null.max() == pytest.approx(1.0) and null.min() == pytest.approx(-1)
    assert np.mean(null) == pytest.approx(0.0, abs=1e-12)
    # rho = 1 - 6 * 24 / 210 = 0.3143 (d² = 24) or better: 203 of the 720 orders (0.282); above
    # it (d² < 24): 179 (0.249)
    assert np.sum(null >= 1 - 6 * 24 / 210 - 1e-9) == 203 and np.sum(null > 0.3143) == 179
    # one order of 720 matches exactly
    assert np.sum(null >= 1 - 1e-9) == 1


def _order_claim(values: dict, seed=0, noise=0.01):
    st = _setting(values, None, noise=noise, seed=seed)
    return next(
        c
        for c in setting_claims(st, n_boot=300, n_null=100)
        if c.id.endswith("order.paper_agreement")
    )


def test_the_papers_own_order_is_supported_and_a_random_order_is_not():
    from kit.neuronvote import published

    paper = published.mean_scores(POS_BERT, "NeuronVote").to_dict()
    own = _order_claim(paper | {"meanselect": 0.30}, noise=0.01)
    check_consistent(own)
    # Ridge and IoU are 0.003 apart in the paper: resamples swap them (rho 0.943, 6 of 720)
    assert own.verdict == "supported" and own.extra["p_value"] <= 6 / 720, own.why
    assert own.extra["n_orders"] == 720 and own.null_high == pytest.approx(0.8286, abs=1e-3)
    rng = np.random.default_rng(5)
    for draw in range(20):
        perm = rng.permutation(VOTERS)
        shuffled = dict(PAPER_NV) | {m: PAPER_NV[v] for m, v in zip(VOTERS, perm)}
        c = _order_claim(shuffled, seed=draw)
        check_consistent(c)
        # a random order is supported only when it happens to land within the top 2.5% of orders
        if c.verdict == "supported":
            assert c.extra["p_value"] < 0.025
        assert c.verdict != "supported" or c.ours > 0.83, (draw, c.ours, c.why)
    # the order that reached 0.31 against 0 before: a quarter of all orders do as well
    import itertools

    from scipy.stats import spearmanr

    levels = sorted((PAPER_NV[v] for v in VOTERS), reverse=True)
    paper_rank = [paper[v] for v in VOTERS]
    perm = next(
        p
        for p in itertools.permutations(levels)
        if abs(spearmanr(p, paper_rank).statistic - 0.3143) < 1e-3
    )
    c = _order_claim(dict(PAPER_NV) | dict(zip(VOTERS, perm)))
    assert c.ours == pytest.approx(0.3143, abs=1e-3) and c.verdict == "inconclusive", c.why
    assert c.extra["p_value"] == pytest.approx(203 / 720)


def test_three_methods_cannot_be_decided_whatever_their_order():
    st = _setting(PAPER_NV, None)
    st.result.voters = ("probeless", "lca", "lasso")
    c = next(
        c for c in setting_claims(st, n_boot=200, n_null=100) if c.id == "order.paper_agreement"
    )
    assert c.verdict == "cannot be decided here" and "6 orders" in c.why
    check_consistent(c)


def test_probeless_claim_numbers_unchanged_by_the_shared_bootstrap_helper():
    # Expected values computed once by the code before it called kit.core.claims.bootstrap_claim
    # (its own bootstrap_ci then claim): the helper must draw the same resamples.
    from kit.neuronvote.claims import probeless_claim

    c = probeless_claim(_setting(PAPER_NV, None, noise=0.05, seed=7), seed=5, n_boot=200, n_null=10)
    assert (c.ours, c.ci_low, c.ci_high) == (
        0.09225286788137649,
        0.07744362811417008,
        0.10734155259924878,
    )
    assert c.verdict == "supported" and c.extra["best_other"] == "lca"


def test_order_claim_numbers_unchanged_by_the_shared_bootstrap_helper():
    # Expected values computed once by the code before order_claim called
    # kit.core.claims.bootstrap_claim (its own bootstrap_ci then claim): the helper must draw the
    # same resamples (noise 0.3: resamples reorder the methods, so the interval moves with the seed)
    st = _setting(PAPER_NV, None, noise=0.3, seed=7)
    c = next(
        c
        for c in setting_claims(st, seed=6, n_boot=200, n_null=10)
        if c.id == "order.paper_agreement"
    )
    assert (c.ours, c.ci_low, c.ci_high) == (0.942857142857143, 0.48571428571428577, 1.0)
    assert c.extra == {"p_value": 1 / 120, "n_orders": 720} and c.verdict == "inconclusive"
    assert c.null_how.endswith("(exact; 95% band; one-sided p 0.00833)")
