"""Seed 003 claims: every audit read against the null it carries, by-construction verdicts flagged."""

from __future__ import annotations

from kit.audits.claims import REQUIRED_IDS, audit_claims
from kit.audits.result import AuditResult
from kit.core.claims import check_consistent


def _r(metric, value, null=(), passed=None, **values):
    r = AuditResult(metric=metric, name=metric, value=value, values=values, pass_condition="x > 0.3",
                    passed=value is not None and value > 0.3 if passed is None else passed)
    return r.with_null(null, "test null", passed=bool(null) and min(null) > 0.3) if null else r


def test_audit_claims_read_each_null_and_flag_by_construction():
    results = [_r("M07", 0.308, [0.28, 0.29, 0.286]), _r("M10", 0.67, [0.69, 0.70, 0.71]),
               _r("EX24", 0.1, runs=[0.68, 0.69, 0.67], control_runs=[0.67, 0.68, 0.675]),
               _r("MIB", 0.9, [0.85, 0.95, 0.9]).decided("every head is in from 5% of the edges"),
               _r("M12", 0.0, [0.0, 0.0]), _r("M12", 0.4, [0.1, 0.2]), _r("EX1", 2.0)]
    claims = {c.id: c for c in audit_claims(results)}
    for c in claims.values():
        check_consistent(c)
    assert claims["M07.vs_null"].verdict == "supported"   # 0.308 above [0.28, 0.29]
    assert claims["M10.vs_null"].verdict == "supported"   # lower polysemanticity than untrained
    assert claims["EX24.vs_null"].verdict == "inconclusive"  # 0.68 vs 0.675: noise
    mib = claims["MIB.vs_null"]
    assert mib.verdict == "inconclusive" and "by construction" in mib.why and "says nothing" in mib.why
    assert claims["M12.vs_null"].verdict == "inconclusive", "0 against a null of [0, 0]"
    assert claims["M12.vs_null.2"].verdict == "contradicted", "mismatch above the untrained SAEs' is the wrong side"
    assert claims["EX1.vs_null"].verdict == "not testable here" and "no null" in claims["EX1.vs_null"].why
    assert set(REQUIRED_IDS["06_measurement_audits"]) >= {"M07.vs_null", "EX24.vs_null", "MIB.vs_null"}
    assert "MIB.log_vs_null" not in claims, "no log-scale CPR computed: no log claim"


def test_mib_log_scale_cpr_is_read_against_its_own_null_when_the_linear_one_is_decided():
    # the tiny world's base-xl numbers: linear CPR decided by saturation, log CPR 0.913 vs random 0.42-0.47
    r = _r("MIB", 1.0, [0.955, 0.946, 0.94], cpr_log=0.913, null_cpr_log=[0.470, 0.436, 0.421],
           cpr_log_floor=0.167).decided("every head is in from 0.5 of the edges")
    claims = {c.id: c for c in audit_claims([r])}
    lin, log = claims["MIB.vs_null"], claims["MIB.log_vs_null"]
    check_consistent(log)
    assert "by construction" in lin.why and "by construction" not in log.why
    assert log.verdict == "supported" and log.ours == 0.913 and "0.17" in log.why
    worse = {c.id: c for c in audit_claims([_r("MIB", 1.0, [0.9, 0.95], cpr_log=0.40,
                                                  null_cpr_log=[0.47, 0.44])])}
    assert worse["MIB.log_vs_null"].verdict == "contradicted", "below random rankings: the wrong side"


def test_circuit_audits_on_a_model_that_does_not_do_the_task_are_not_testable():
    no = {"does_task": False, "mean_logit_diff": -0.01}
    r = _r("EX1", 2.0, [0.1, 0.2], task_signal=no)
    ok = _r("EX1", 2.0, [0.1, 0.2], task_signal={**no, "does_task": True})
    c_no, c_ok = audit_claims([r, ok])
    check_consistent(c_no)
    assert c_no.verdict == "not testable here" and "does not do the task" in c_no.why
    assert c_ok.verdict == "supported", "the same numbers on a model that does the task are read against the null"
