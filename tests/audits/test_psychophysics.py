import numpy as np
import pytest
import torch
from scipy.stats import norm

from kit.audits import circuits as C
from kit.audits import psychophysics as P


def test_perfect_detector_hits_clip_bound():
    n = 40
    r = P.dprime_audit(np.ones(n), -np.ones(n))
    bound = 2 * norm.ppf(1 - 1 / (2 * n))
    assert r.value == pytest.approx(bound), (
        "hit=1, fa=0 must give d' = 2 Z(1 - 1/(2n)) (clipped rates)"
    )
    assert r.values["auc"] == 1.0 and r.passed


def test_dprime_decided_when_the_clip_bound_cannot_exceed_the_threshold():
    # n = 1 a side: rates clip to 0.5, so d' <= 0 + 0 = 0 <= 1 whatever the data
    r = P.dprime_audit(np.ones(1), -np.ones(1))
    assert r.values["clip_bound"] == pytest.approx(0.0) and not r.passed and not r.can_fail
    # n = 2 + 3: bound Z(3/4) + Z(5/6) = 0.674 + 0.967 = 1.64 > 1, so the verdict is open
    r = P.dprime_audit(np.ones(2), -np.ones(3))
    assert r.values["clip_bound"] == pytest.approx(norm.ppf(0.75) + norm.ppf(5 / 6)) and r.can_fail


def test_dprime_hand_computed():
    d, beta = P.dprime(norm.cdf(1.0), 0.5, 10_000, 10_000)
    assert d == pytest.approx(1.0) and beta == pytest.approx(-0.5)


def test_chance_detector_fails():
    x = np.linspace(-1, 1, 50)
    r = P.dprime_audit(x, x)
    assert r.value == pytest.approx(0.0) and r.values["auc"] == pytest.approx(0.5) and not r.passed


def test_roc_endpoints_and_auc_match():
    rng = np.random.default_rng(0)
    s, n = rng.normal(1, 1, 200), rng.normal(0, 1, 200)
    fpr, tpr = P.roc_curve(s, n)
    assert (fpr[0], tpr[0]) == (0, 0) and (fpr[-1], tpr[-1]) == (1, 1)
    assert np.trapezoid(tpr, fpr) == pytest.approx(P.auc(s, n), abs=1e-9)


def test_auc_and_roc_are_sklearns_and_the_mann_whitney_count():
    """roc_auc_score against P(s > n) + P(tie)/2 over every pair; sklearn's curve against the
    threshold sweep ``score > c`` over every observed value (which repeats its first point)."""
    rng = np.random.default_rng(3)
    s, n = np.round(rng.normal(0.5, 1, 40), 1), np.round(rng.normal(0, 1, 30), 1)  # ties
    pairs_s, pairs_n = s[:, None], n[None, :]
    by_hand = (pairs_s > pairs_n).mean() + 0.5 * (pairs_s == pairs_n).mean()
    assert P.auc(s, n) == pytest.approx(by_hand, abs=1e-12)
    cuts = np.concatenate([[np.inf], np.unique(np.concatenate([s, n]))[::-1], [-np.inf]])
    tpr = np.array([(s > c).mean() for c in cuts])
    fpr = np.array([(n > c).mean() for c in cuts])
    got_fpr, got_tpr = P.roc_curve(s, n)
    assert np.array_equal(got_fpr, fpr[1:]) and np.array_equal(got_tpr, tpr[1:])
    with pytest.raises(ValueError, match="signal and noise"):
        P.auc(s, np.array([]))


def test_cohens_d_hand_computed():
    assert P.cohens_d([1, 2, 3], [2, 3, 4]) == pytest.approx(-1.0)
    assert P.cohens_d([1, 1], [1, 1]) == 0.0


def test_dif_identical_groups_pass_and_shift_fails():
    v = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    g = ["frequent"] * 3 + ["rare"] * 3
    assert P.dif_audit(v, g).value == pytest.approx(0.0)
    shifted = v + np.array([0, 0, 0, 1, 1, 1])
    r = P.dif_audit(shifted, g)
    assert r.value == pytest.approx(1.0) and not r.passed
    with pytest.raises(ValueError, match="name group"):
        P.dif_audit(v, ["a"] * 6)
    assert r.null < r.value and len(r.null_values) == 20, "shuffled labels mostly remove the shift"
    const = P.dif_audit(np.ones(6), g)
    assert const.passed and not const.can_fail, "a constant circuit output passes by construction"


def test_random_circuits_same_size_outside(model):
    rc = P.random_circuits(model, [(0, 0), (1, 1)], 4, seed=0)
    assert all(len(h) == 2 and not {(0, 0), (1, 1)} & set(h) for h in rc)
    assert rc == P.random_circuits(model, [(0, 0), (1, 1)], 4, seed=0)


def test_jnd_detects_either_direction():
    scales = [0.5, 0.8, 0.9, 1.0]
    # an *increase* at 0.9 (an inhibitory head): the one-sided sketch would miss it
    assert P.jnd(scales, [3.0, 2.0, 1.1, 1.0], 1.0) == pytest.approx(0.1)
    assert P.jnd(scales, [0.5, 0.9, 0.97, 1.0], 1.0) == pytest.approx(0.2), (
        "3% is below the 5% threshold, 10% is above"
    )
    assert P.jnd(scales, [1.0, 1.0, 1.0, 1.0], 1.0) is None, "a constant response has no JND"


def test_weber_consistency():
    assert P.weber_consistency([0.1, 0.1]) == pytest.approx(1.0)
    assert P.weber_consistency([0.1, 0.3]) == pytest.approx(0.5)
    assert P.weber_consistency([0.1]) is None


def test_constant_response_head_has_no_jnd(ioi_items, make_model):
    m = make_model(seed=3)
    with torch.no_grad():
        m.blocks[1].attn.W_O[0].zero_()
    b = C.ioi_batch(m, ioi_items)
    means = C.head_means(m, b)
    curves = P.weber_curves(m, b, means, [(1, 0)])
    r = P.weber_audit(curves)
    assert r.values["detectable"] == {"1.0": False}
    assert not r.passed, "a head whose scaling changes nothing must fail 'all heads detectable'"
    ex1 = P.dprime_audit(np.ones(4), -np.ones(4))
    P.attach_random_circuit_nulls(
        m, b, means, [(1, 0)], ex1, r, P.WEBER_SCALES, P.WEBER_BASELINES, 0.05, n=2
    )
    assert len(ex1.null_values) == 2 and len(r.null_values) == 2
    assert r.can_fail == (not r.null_passed)


def test_circuit_logit_diffs_keys(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    out = P.circuit_logit_diffs(model, b, means, [(0, 0)])
    assert set(out) == {"full", "ablated", "circuit_only"}
    everything = P.circuit_logit_diffs(model, b, means, C.all_heads(model))
    assert torch.allclose(everything["full"], everything["circuit_only"]), (
        "circuit = all heads must equal the model"
    )


def test_random_circuit_nulls_and_weber_curves_run_each_pass_once(model, ioi_items, monkeypatch):
    # The full model's logit diffs are computed once for all of EX1's random circuits, and a Weber
    # factor b * s met twice (1.0 x 0.5 and 0.5 x 1.0) is run once: the same numbers as running
    # every draw's three passes and every (b, s) pair.
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    scales, baselines = [0.5, 0.8, 1.0], [1.0, 0.5]
    reference_d = []
    for heads in P.random_circuits(model, [(0, 0)], 3, seed=1):
        lds = P.circuit_logit_diffs(model, b, means, heads)
        reference_d.append(P.dprime_audit(lds["full"].numpy(), lds["ablated"].numpy()).value)
    reference_curves = {
        "0.1": {
            str(base): [
                float(C.run_heads(model, b, means, scale={(0, 1): base * s}).mean()) for s in scales
            ]
            for base in baselines
        }
    }
    calls = []
    real = P.run_heads

    def counting(*a, **k):
        calls.append(k)
        return real(*a, **k)

    monkeypatch.setattr(P, "run_heads", counting)
    assert P.weber_curves(model, b, means, [(0, 1)], scales, baselines) == reference_curves
    assert len(calls) == 5, "six (b, s) pairs, five distinct factors"
    calls.clear()
    ex1 = P.dprime_audit(np.ones(4), -np.ones(4))
    ex11 = P.weber_audit(reference_curves, scales)
    P.attach_random_circuit_nulls(
        model, b, means, [(0, 0)], ex1, ex11, scales, baselines, 0.05, n=0, seed=1, n_dprime=3
    )
    assert ex1.null_values == reference_d
    assert len(calls) == 1 + 3, "one full pass, then one ablated pass per random circuit"
