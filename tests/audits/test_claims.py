"""Seed 003 claims: audits beside untrained controls, MIB beside a degenerate curve."""

from __future__ import annotations

import pytest

from kit.audits.claims import REQUIRED_IDS, audit_claims, degenerate_cpr
from kit.audits.result import AuditResult
from kit.core.claims import check_consistent

THRESHOLDS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]


def test_degenerate_cpr_by_hand():
    # f = 0 up to 0.2, 1 from 0.5: area = 0.3 * 0.5 (ramp 0.2 -> 0.5) + 0.5 * 1 = 0.65, span 0.999
    assert degenerate_cpr(THRESHOLDS) == pytest.approx(0.65 / 0.999)
    assert degenerate_cpr([0.0, 1.0], cut=1.0) == pytest.approx(0.5)


def _r(metric, value, **values):
    return AuditResult(metric=metric, name=metric, value=value, values=values, pass_condition="x > 0.3",
                       passed=value is not None and value > 0.3)


def test_audit_claims_show_the_null_and_flag_by_construction():
    results = [_r("M07", 0.308), _r("M08", 0.6), _r("M10", 0.67),
               _r("EX24", 0.1, runs=[0.68, 0.69, 0.67], control_runs=[0.67, 0.68, 0.675]),
               _r("MIB", 0.9, threshold=THRESHOLDS), _r("EX1", 0.0)]
    controls = {"M07": [0.28, 0.29, 0.286], "M08": [0.1, 0.12, 0.11], "M10": [0.69, 0.70, 0.71]}
    claims = {c.id: c for c in audit_claims(results, controls)}
    assert set(REQUIRED_IDS["06_measurement_audits"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["M07.vs_untrained"].verdict == "supported"   # 0.308 above [0.28, 0.29]
    assert claims["M08.vs_untrained"].verdict == "supported"
    assert claims["M10.vs_untrained"].verdict == "supported"   # lower polysemanticity than untrained
    assert claims["EX24.vs_untrained"].verdict == "inconclusive"  # 0.68 vs 0.675: noise
    mib = claims["MIB.vs_degenerate"]
    assert mib.verdict == "inconclusive" and "by construction" in mib.why
    assert claims["EX1.audit"].verdict == "not testable here" and "failed" in claims["EX1.audit"].why
    none = {c.id: c for c in audit_claims(results[:1], None)}
    assert none["M07.vs_untrained"].verdict == "not testable here"
