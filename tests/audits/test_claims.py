"""Seed 003 claims (kind ``audit``): every audit's pass condition read against the null it carries,
with enough null draws, weakened where the verdict is decided by construction."""

from __future__ import annotations

import numpy as np
import pytest

from kit.audits.claims import MIN_DRAWS, REQUIRED_IDS, audit_claims, empirical_p, study_claims
from kit.audits.result import AuditInputs, AuditResult
from kit.core.claims import check_consistent


def _draws(lo, hi, n=100, seed=0):
    return list(np.random.default_rng(seed).uniform(lo, hi, n))


def _r(metric, value, null=(), passed=None, diagnostic=False, **values):
    r = AuditResult(
        metric=metric,
        name=metric,
        value=value,
        values=values,
        pass_condition="x > 0.3",
        passed=value is not None and value > 0.3 if passed is None else passed,
        diagnostic=diagnostic,
        inputs=AuditInputs(model="zoo/base-m", n=40),
    )
    return r.with_null(null, "test null", passed=bool(null) and min(null) > 0.3) if len(null) else r


def _claims(results, seed=0):
    out = {c.id: c for c in audit_claims(results, seed)}
    for c in out.values():
        check_consistent(c)
        assert c.kind == "audit" and c.verdict in (
            "pass",
            "fail",
            "inconclusive",
            "not testable here",
        )
        assert c.rests_on, f"{c.id} says what it rests on"
    return out


def test_empirical_p_by_hand():
    assert empirical_p([0.1, 0.2, 0.3], 0.25, "greater") == pytest.approx(2 / 4)  # 1 draw >= 0.25
    assert empirical_p([0.1, 0.2, 0.3], 0.05, "less") == pytest.approx(1 / 4)  # none <= 0.05
    assert empirical_p([0.1] * 19, 0.5, "greater") == pytest.approx(1 / 20)


def test_a_null_equivalent_input_is_inconclusive_and_a_clear_one_decided():
    """The ledger's test per kind: an audit whose value is a draw of its own null is inconclusive;
    one far beyond it passes (or fails on the wrong side)."""
    null = _draws(0.2, 0.28)
    same = _claims([_r("M07", float(np.median(null)), null, passed=False)])["M07.vs_null"]
    assert same.verdict == "inconclusive"
    beyond = _claims([_r("M07", 0.6, null)])["M07.vs_null"]
    assert beyond.verdict == "pass" and beyond.extra["p_value"] < 0.05 and beyond.margin > 0
    wrong = _claims([_r("M12", 0.5, _draws(0.0, 0.1), passed=False)])["M12.vs_null"]
    assert wrong.verdict == "fail", "mismatch above the untrained SAEs' is the wrong side"


def test_a_few_null_draws_cannot_decide():
    few = _claims([_r("M07", 0.9, [0.28, 0.29, 0.286])])["M07.vs_null"]
    assert few.verdict == "inconclusive" and "inconclusive: 3 null draws" in few.why
    enough = _claims([_r("M07", 0.9, _draws(0.28, 0.29, MIN_DRAWS))])["M07.vs_null"]
    assert enough.verdict == "pass"


def test_passes_the_audit_cannot_back_are_weakened():
    null = _draws(0.0, 0.1)
    decided = _r("MIB", 0.9, null).decided("every head is in from 5% of the edges")
    report = _r("M10", 0.05, _draws(0.6, 0.8), diagnostic=True)
    failing = _r("EX1", 0.25, null, passed=False)  # beats its null, fails the page's threshold
    c = _claims([decided, report, failing])
    assert c["MIB.vs_null"].verdict == "inconclusive" and "by construction" in c["MIB.vs_null"].why
    assert c["M10.vs_null"].verdict == "inconclusive" and "report-only" in c["M10.vs_null"].why
    assert c["EX1.vs_null"].verdict == "inconclusive" and "audit FAIL" in c["EX1.vs_null"].why
    matched = AuditResult(
        metric="EX11", name="x", value=1.0, pass_condition="all heads", passed=True
    )
    matched.with_null([0.5] * 50, "random circuits", passed=True)
    assert _claims([matched])["EX11.vs_null"].verdict == "inconclusive"


def test_ex2_dif_within_label_noise_passes_and_beyond_it_fails():
    noise = _draws(0.05, 0.4)
    assert _claims([_r("EX2", 0.2, noise, passed=True)])["EX2.vs_null"].verdict == "pass"
    big = _claims([_r("EX2", 3.0, noise, passed=False)])["EX2.vs_null"]
    assert big.verdict == "fail" and big.extra["p_value"] < 0.05


def test_ex24_trained_vs_untrained_by_welch():
    same = _r("EX24", 0.1, runs=[0.68, 0.69, 0.67], control_runs=[0.67, 0.68, 0.675])
    far = _r(
        "EX24", 0.01, passed=True, runs=[0.9, 0.91, 0.92, 0.9], control_runs=[0.5, 0.52, 0.51, 0.5]
    )
    assert _claims([same])["EX24.vs_null"].verdict == "inconclusive"
    assert _claims([far])["EX24.vs_null"].verdict == "pass"


def test_ex25_coherence_is_tested_against_the_threshold_not_the_shuffle():
    rng = np.random.default_rng(0)
    base = rng.normal(size=40)
    noisy = np.stack([base + rng.normal(scale=3.0, size=40) for _ in range(4)])  # coherence ~0.1
    clean = np.stack([base + rng.normal(scale=0.01, size=40) for _ in range(4)])  # coherence ~1
    same = np.stack([base] * 4)  # deterministic
    out = []
    for mat in (noisy, clean, same):
        r = AuditResult(
            metric="EX25",
            name="Reproducibility (x)",
            value=0.0,
            pass_condition="coherence > 0.9",
            passed=True,
            values={"per_id": mat, "min_coherence": 0.9},
            inputs=AuditInputs(n=40),
        )
        out.append(_claims([r])["EX25.vs_null"])
    assert out[0].verdict == "fail", "coherence ~0.1 is below the page's 0.9"
    assert out[1].verdict == "pass"
    assert out[2].verdict == "inconclusive" and "zero width" in out[2].why, (
        "a deterministic pipeline's interval has zero width: it decides nothing"
    )


def test_mib_log_scale_cpr_is_read_against_its_own_null():
    r = _r(
        "MIB",
        1.0,
        _draws(0.94, 0.96),
        cpr_log=0.913,
        null_cpr_log=_draws(0.42, 0.47),
        cpr_log_floor=0.167,
    ).decided("every head is in from 0.5 of the edges")
    c = _claims([r])
    lin, log = c["MIB.vs_null"], c["MIB.log_vs_null"]
    assert (
        lin.verdict == "inconclusive"
        and "by construction" in lin.why
        and "by construction" not in log.why
    )
    assert log.verdict == "pass" and log.ours == 0.913 and "0.17" in log.why
    worse = _claims(
        [_r("MIB", 1.0, _draws(0.9, 0.95), cpr_log=0.40, null_cpr_log=_draws(0.44, 0.47))]
    )
    assert worse["MIB.log_vs_null"].verdict == "fail", "below random rankings: the wrong side"


def test_circuit_audits_on_a_model_that_does_not_do_the_task_are_not_testable():
    no = {"does_task": False, "mean_logit_diff": -0.01}
    null = _draws(0.0, 0.2)
    c_no, c_ok = audit_claims(
        [
            _r("EX1", 2.0, null, task_signal=no),
            _r("EX1", 2.0, null, task_signal={**no, "does_task": True}),
        ]
    )
    check_consistent(c_no)
    assert c_no.verdict == "not testable here" and "does not do the task" in c_no.why
    assert c_ok.verdict == "pass", (
        "the same numbers on a model that does the task are read against the null"
    )
    assert _claims([_r("EX1", 2.0)])["EX1.vs_null"].verdict == "not testable here"


def test_stability_resamples_the_null_draws_and_marks_flips():
    clear = _r("M07", 0.9, _draws(0.2, 0.3))
    edge = _r("M11", 0.3, _draws(0.0, 0.3, 40))  # p ~ 0.02-0.05: a resample may flip it
    claims = {c.id: c for c in study_claims([clear, edge], reseeds=(1, 2, 3, 4, 5))}
    assert claims["M07.vs_null"].stability.startswith("stable under null draws resampled")
    assert claims["M11.vs_null"].stability, "every claim is checked"
    assert set(REQUIRED_IDS["06_measurement_audits"]) >= {
        "M07.vs_null",
        "EX24.vs_null",
        "MIB.log_vs_null",
    }


def test_mib_with_edges_off_gives_both_claims_not_testable_with_the_reason():
    r = AuditResult(
        metric="MIB",
        name="MIB faithfulness curve",
        value=None,
        pass_condition="CPR > 0.5",
        values={"not_run": "edge patching was not run: off (circuit_edges: off)"},
        passed=False,
        diagnostic=True,
    )
    c = _claims([r])
    assert c["MIB.vs_null"].verdict == c["MIB.log_vs_null"].verdict == "not testable here"
    assert "circuit_edges: off" in c["MIB.log_vs_null"].why
    plain = _claims([_r("MIB", 0.9, _draws(0.0, 0.2))])
    assert plain["MIB.log_vs_null"].verdict == "not testable here", "no log-scale CPR computed"


def test_rests_on_names_the_world_for_its_members():
    (c,) = audit_claims([_r("M07", 0.9, _draws(0.2, 0.3))], world="tiny")
    assert (
        c.rests_on.startswith("the tiny world's members; model zoo/base-m")
        and "n = 40" in c.rests_on
    )


def test_vs_null_numbers_unchanged_by_the_shared_null_band_helper():
    # Expected values computed once by the code before it called kit.core.claims.band_claim
    # (its own null_band then claim): the helper must read the same band.
    from types import SimpleNamespace

    from kit.audits.claims import _vs_null

    draws = np.random.default_rng(21).normal(size=40).tolist()
    r = SimpleNamespace(metric="M")
    c = _vs_null(r, "toy", "s", 2.5, draws, "greater", "how", kind="audit")
    assert (c.ours, c.null, c.null_low, c.null_high) == (
        2.5,
        0.1282900285018807,
        -1.697096462907567,
        1.6990285209859235,
    )
    assert c.verdict == "pass" and c.extra == {"p_value": 1 / 41, "n_null_draws": 40}


def test_ex25_numbers_unchanged_by_the_shared_bootstrap_helper():
    # Expected values computed once by the code before EX25's claim called
    # kit.core.claims.bootstrap_claim (coherence_interval then claim); the claim's interval is
    # still coherence_interval's
    from kit.audits.claims import N_BOOT
    from kit.audits.stability import coherence_interval

    g = np.random.default_rng(11)
    base = g.normal(size=30)
    mat = np.stack([base + g.normal(scale=0.3, size=30) for _ in range(3)])
    r = AuditResult(
        metric="EX25",
        name="Reproducibility (x)",
        value=0.0,
        pass_condition="coherence > 0.9",
        passed=True,
        values={"per_id": mat, "min_coherence": 0.9},
        inputs=AuditInputs(n=30),
    )
    c = _claims([r], seed=2)["EX25.vs_null"]
    assert (c.ours, c.ci_low, c.ci_high) == (
        0.892324805339266,
        0.7758241632388598,
        0.9494411277575541,
    )
    assert (c.ours, c.ci_low, c.ci_high) == coherence_interval(mat, n_boot=N_BOOT, seed=2)
    assert c.verdict == "inconclusive"
