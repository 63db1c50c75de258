"""Seed 002 claims (kit.cg.claims): every claim comes out inconclusive on a null-equivalent input
and decided on one with a real effect; kinds, ids and stability marks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import claims as cgc
from kit.cg import planted as P
from kit.cg.nulls import model_nulls
from kit.cg.study import CGStudy
from kit.cg.suite import Suite
from kit.configs.competency_gaps import Config
from kit.core.claims import check_consistent, mark_stability


def _nulls(suite_of, tied: bool):
    acts, scores = suite_of(tied)
    return model_nulls(
        "m",
        acts,
        scores,
        adv_n_concepts=3,
        adv_n_items=20,
        adv_repeats=2,
        n_reruns=5,
        n_draws=100,
        n_splits=5,
    )


def test_model_claims_inconclusive_on_noise_and_decided_on_real_gaps(model_suite_of):
    noise = {
        c.id: c
        for c in cgc.model_claims(_nulls(model_suite_of, False), {"n_gaps_significant": 0}, "noise")
    }
    real = {
        c.id: c
        for c in cgc.model_claims(_nulls(model_suite_of, True), {"n_gaps_significant": 2}, "tied")
    }
    assert set(noise) == set(real) == set(cgc.MODEL_IDS)
    for cid in ("model_gaps.vs_shuffled", "model_gaps.significant", "model_gaps.split_half"):
        assert noise[cid].verdict == "inconclusive", (cid, noise[cid].why)
        assert real[cid].verdict == "supported", (cid, real[cid].why)
    for c in [*noise.values(), *real.values()]:
        check_consistent(c)
        assert c.kind == "reproduction" and c.rests_on
    assert real["model_gaps.vs_shuffled"].extra["p_value"] == pytest.approx(1 / 101)
    assert "100 draws" in real["model_gaps.vs_shuffled"].null_how


def test_gap_count_cannot_be_decided_when_no_gap_has_the_support_to_be_tested(model_suite_of):
    # the tiny run's Llama: 111 gaps, none active on 5 items: no discovery is possible
    none = {
        "n_gaps_significant": 0,
        "n_gaps_with_support": 0,
        "n_gaps_paper": 111,
        "min_support": 5,
    }
    (c,) = [
        c
        for c in cgc.model_claims(_nulls(model_suite_of, False), none, "x")
        if c.id == "model_gaps.significant"
    ]
    assert c.verdict == "cannot be decided here" and "none of the 111 gaps" in c.why, c.why
    check_consistent(c)
    some = {
        "n_gaps_significant": 0,
        "n_gaps_with_support": 4,
        "n_gaps_paper": 111,
        "min_support": 5,
    }
    (c,) = [
        c
        for c in cgc.model_claims(_nulls(model_suite_of, False), some, "x")
        if c.id == "model_gaps.significant"
    ]
    assert c.verdict == "inconclusive"


def test_robustness_claims_decide_against_a_null_that_can_fail(model_suite_of):
    n = _nulls(model_suite_of, True)
    # the real gaps make X_model exactly 0 under any dropout: less spread than shuffled correctness
    (drop,) = [
        c for c in cgc.model_claims(n, None, "t") if c.id == "robustness.dropout_vs_shuffled"
    ]
    assert drop.verdict == "supported", drop.why
    # fed a value inside its null band, the adversarial claim must come out inconclusive
    n.adv_worst = float(np.median(n.adv_worst_null))
    (adv,) = [c for c in cgc.model_claims(n, None, "t") if c.id == "robustness.adversarial_worst"]
    assert adv.verdict == "inconclusive"
    n.adv_worst = float(np.max(n.adv_worst_null)) + 1.0
    (adv,) = [c for c in cgc.model_claims(n, None, "t") if c.id == "robustness.adversarial_worst"]
    assert adv.verdict == "supported" and adv.margin > 0


def test_a_model_without_per_item_variation_is_not_testable_with_its_cause():
    claims = cgc.model_claims(None, None, "t", "[gemma]", "every scored answer is wrong (40 items)")
    assert {c.id for c in claims} == {f"{i}[gemma]" for i in cgc.MODEL_IDS}
    assert all(c.verdict == "not testable here" and "wrong" in c.why for c in claims)
    assert cgc._constant_scores({"a": np.zeros(4), "b": np.zeros(2)}).startswith(
        "every scored answer is wrong"
    )
    assert cgc._constant_scores({"a": np.array([0.0, 1.0])}) == ""


def _planted_runs(planted_suite_of, fails: bool):
    s, planted = planted_suite_of(fails)
    r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=400, min_support=5)
    r.summary.update(
        gap="g", sae="sae", sae_hook="blocks.1.hook_resid_post", pooling="mean", chance=0.25
    )
    return {"last/mean": (r, ""), "world/mean": (None, "same site")}


def test_planted_claims_decided_with_a_gap_and_inconclusive_without(planted_suite_of):
    with_gap = {c.id: c for c in cgc.planted_claims(_planted_runs(planted_suite_of, True))}
    assert set(with_gap) == set(cgc.PLANTED_IDS)
    assert with_gap["planted_gap.recovered"].verdict == "supported", with_gap[
        "planted_gap.recovered"
    ].why
    assert with_gap["planted_gap.setup_drop"].verdict == "supported"
    assert with_gap["planted_gap.setup_drop"].kind == "set-up check"
    assert with_gap["planted_gap.profile_points"].verdict == "supported"
    without = {c.id: c for c in cgc.planted_claims(_planted_runs(planted_suite_of, False))}
    assert without["planted_gap.recovered"].verdict == "inconclusive", (
        "nothing found: nothing decided"
    )
    assert without["planted_gap.setup_drop"].verdict == "inconclusive"
    assert without["planted_gap.profile_points"].verdict in ("inconclusive", "not testable here")
    for c in [*with_gap.values(), *without.values()]:
        check_consistent(c)
    none = cgc.planted_claims({"world/mean": (None, "world not built")})
    assert [c.verdict for c in none] == ["not testable here"] * 3 and "world not built" in none[
        0
    ].why


def test_recovered_band_is_the_hypergeometric_range_bonferroni_over_settings(planted_suite_of):
    runs = _planted_runs(planted_suite_of, True)
    r = runs["last/mean"][0]
    s = r.summary
    one, four = cgc.recovered_claim("x", r, 1), cgc.recovered_claim("x", r, 4)
    from scipy import stats

    dist = stats.hypergeom(s["n_tested"], s["n_planted_concepts_tested"], s["n_found"])
    assert (one.null_low, one.null_high) == (dist.ppf(0.025), dist.ppf(0.975))
    assert four.null_high == dist.ppf(1 - 0.05 / 8) and "Bonferroni over 4" in four.null_how
    r.summary = {**s, "n_planted_concepts_tested": 0, "max_planted_share": 0.3}
    assert cgc.recovered_claim("x", r, 1).verdict == "not testable here"


def _study(model_suite_of, planted_suite_of, tied: bool) -> CGStudy:
    acts, scores = model_suite_of(tied)
    labels = [f"c{i}" for i in range(20)]
    lengths = {b: np.full(a.shape[0], 12) for b, a in acts.items()}
    suites = {}
    for name in ("small", "big"):
        s = Suite(
            name,
            labels,
            dict(acts),
            {b: [""] * a.shape[0] for b, a in acts.items()},
            {"m": acts},
            {"m": scores},
            n_tokens=lengths,
        )
        s.text_acts, s.text_tokens, s.text_source = (
            sp.csr_matrix(np.eye(20)),
            np.full(20, 12),
            "text",
        )
        suites[name] = s
    cfg = Config(
        world="micro",
        null_perms=100,
        claim_reruns=5,
        adv_n_concepts=3,
        adv_n_items=20,
        adv_repeats=2,
        gap_n_perm=100,
        size_draws=100,
        swap_draws=2,
    )
    st = CGStudy(cfg, ["small", "big"], suites)
    st.nulls["m"] = model_nulls("m", acts, scores, cfg.eps, 3, 20, 2, 5, 0.2, 5, 0, 100, 5)
    st.planted = _planted_runs(planted_suite_of, tied)
    return st


def test_cg_claims_over_a_study_cover_the_required_ids_and_mark_stability(
    model_suite_of, planted_suite_of
):
    st = _study(model_suite_of, planted_suite_of, True)
    claims = cgc.cg_claims(st)
    ids = [c.id for c in claims]
    assert set(cgc.REQUIRED_IDS["04_competency_gaps"]) <= set(ids) and len(ids) == len(set(ids))
    by = {c.id: c for c in claims}
    assert by["sae_swap.missing_frac_rank"].verdict == "not testable here", (
        "2 benchmarks: no swap computed"
    )
    assert by["benchmark_gaps.missing_alive"].verdict == "not testable here", (
        "no equal-size coverage computed"
    )
    reruns = cgc.stability_reruns(st, [1])
    mark_stability(claims, reruns, "seed 1")
    assert by["model_gaps.vs_shuffled"].stability == "stable under seed 1"
    for c in claims:
        check_consistent(c)


def test_adversarial_claims_name_a_zero_median_as_their_cause(model_suite_of):
    """A model that answers almost nothing (Gemma-3-270M on the real suite, 2.4%) has median
    X_model 0: the shifts in % of it are undefined, and the claims say so instead of 'our value
    could not be computed'."""
    from dataclasses import replace

    n = _nulls(model_suite_of, True)
    assert np.isfinite(n.median_x_model) and n.median_x_model != 0
    ok = {c.id: c for c in cgc.model_claims(n, None, "t")}
    zero = replace(n, median_x_model=0.0, adv_best=float("nan"), adv_worst=float("nan"))
    bad = {c.id: c for c in cgc.model_claims(zero, None, "t")}
    for cid in ("robustness.adversarial_best", "robustness.adversarial_worst"):
        assert ok[cid].verdict != "not testable here", ok[cid].why
        assert bad[cid].verdict == "not testable here" and "median X_model" in bad[cid].why
        check_consistent(bad[cid])
    assert (
        bad["robustness.dropout_vs_shuffled"].verdict
        == ok["robustness.dropout_vs_shuffled"].verdict
    )


def test_band_claim_numbers_unchanged_by_the_shared_null_band_helper():
    # Expected values computed once by the code before it called kit.core.claims.band_claim
    # (its own null_band then claim): the helper must read the same band.
    draws = np.random.default_rng(21).normal(size=40)
    c = cgc._band_claim("toy", "§1", "s", 1.9, draws, "greater", "how", "r", 0.04, figure="f")
    assert (c.ours, c.null, c.null_low, c.null_high) == (
        1.9,
        0.1282900285018807,
        -1.697096462907567,
        1.6990285209859235,
    )
    assert c.verdict == "supported" and c.extra == {"p_value": 0.04}


def test_setup_claim_numbers_unchanged_by_the_shared_mean_diff_helper():
    # Expected values computed once by the code before setup_claim called
    # kit.core.claims.mean_diff_claim (its own mean_diff_ci then claim): the same paired resamples
    # of the planted items (25 of "b"; "c" plants none)
    from types import SimpleNamespace

    g = np.random.default_rng(3)
    parent = {"b": g.random(40) + 0.3, "c": g.random(10)}
    member = {"b": g.random(40), "c": g.random(10)}
    summary = dict(
        parent="p", member="m", gap="g", sae="s", sae_hook="h", pooling="mean", chance=0.25
    )
    r = SimpleNamespace(
        summary=summary,
        suite=SimpleNamespace(model_scores={"p": parent, "m": member}),
        planted={"b": np.arange(40) < 25, "c": np.zeros(10, bool)},
    )
    c = cgc.setup_claim("setup", r, seed=4)  # pyright: ignore[reportArgumentType]  (duck-typed)
    assert c.ours == pytest.approx(np.mean(parent["b"][:25] - member["b"][:25]), abs=1e-15)
    assert (c.ours, c.ci_low, c.ci_high) == (
        0.22067375751424856,
        0.07112353304903904,
        0.389907201829677,
    )
    assert c.verdict == "supported" and c.kind == "set-up check" and c.extra == {"chance": 0.25}
