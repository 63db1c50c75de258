"""Seed 004 claims from a hand-made StudyResult: bootstrap over concepts, Random as the null."""

from __future__ import annotations

import pandas as pd

from kit.core.claims import check_consistent
from kit.neuronvote.claims import REQUIRED_IDS, neuronvote_claims, per_concept
from kit.neuronvote.study import StudyResult

PAPER_NV = {"random": 0.02, "gaussian": 0.17, "lca": 0.51, "lasso": 0.47, "ridge": 0.36, "probeless": 0.53, "iou": 0.37,
            "meanselect": 0.30}


def _result(layers=(0, 5), drop_last=0.1):
    rows = []
    for L in layers:
        for c in range(12):
            for j, (m, v) in enumerate(PAPER_NV.items()):  # small concept x method noise: intervals need spread
                nv = v - (drop_last if L == layers[-1] and m in ("lca", "lasso", "ridge") else 0) + 0.01 * ((c + j) % 3)
                rows.append((L, f"L{L}", f"c{c}", 10, m, "NeuronVote", nv))
                rows.append((L, f"L{L}", f"c{c}", 10, m, "AvgOverlap", nv / 2))
    scores = pd.DataFrame(rows, columns=["layer", "position", "concept", "s", "method", "metric", "score"])
    return StudyResult("toy", "site", scores, pd.DataFrame())


def test_per_concept_means_over_layers_and_s():
    t = per_concept(_result().scores, "NeuronVote")
    assert t.shape == (12, len(PAPER_NV)) and abs(t.loc["c0", "random"] - 0.02) < 1e-12


def test_neuronvote_claims_follow_the_numbers():
    claims = {c.id: c for c in neuronvote_claims(_result(), n_boot=200)}
    assert set(REQUIRED_IDS["05_neuronvote"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["order.paper_agreement"].ours > 0.9
    assert claims["order.random_lowest"].verdict == "supported"
    trend = claims["layer.probing_trend"]  # the layers differ only by the planted drop: every concept -0.1
    assert abs(trend.ours + 0.1) < 1e-9 and trend.verdict == "inconclusive" and "zero width" in trend.why
    assert claims["meanselect.above_random"].verdict == "supported"
    one = {c.id: c for c in neuronvote_claims(_result(layers=(0,)), n_boot=50, prefix="d.")}
    assert one["d.layer.probing_trend"].verdict == "not testable here"


def test_method_claims_against_random_union_over_seeds():
    from kit.neuronvote.claims import method_claims

    res = _result()
    claims = {c.id: c for c in method_claims(res, n_boot=200)}
    assert {"neuronvote.lca_above_random", "avgoverlap.gaussian_above_random"} <= set(claims)
    assert claims["neuronvote.lca_above_random"].verdict == "supported"
    assert abs(claims["neuronvote.lca_above_random"].ours - (per_concept(res.scores, "NeuronVote")["lca"]
                                                              - per_concept(res.scores, "NeuronVote")["random"]).mean()) < 1e-12
    # A second seed under which LCA collapses to Random's level: the union interval reaches 0, so no support.
    bad = res.scores.copy()
    rnd = bad[bad.method == "random"].set_index(["layer", "concept", "s", "metric"]).score
    lca = bad.method == "lca"
    bad.loc[lca, "score"] = [rnd[(r.layer, r.concept, r.s, r.metric)] + (0.01 if r.concept == "c0" else -0.001)
                             for r in bad[lca].itertuples()]
    res.reseed_scores = pd.concat([res.scores.assign(seed=0), bad.assign(seed=1)], ignore_index=True)
    two = {c.id: c for c in method_claims(res, n_boot=200)}
    c = two["neuronvote.lca_above_random"]
    assert c.verdict != "supported" and c.ci_low <= 0 and "2 study seeds" in c.interval_how
    assert len(c.extra["seed_means"]) == 2
    for c in two.values():
        check_consistent(c)
