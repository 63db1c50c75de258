import math

import numpy as np
import pytest

from kit.audits import circuits as C
from kit.audits import mib as M


def test_cpr_of_perfect_curve_is_one():
    t = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    cpr, cmd = M.cpr_cmd(t, [1.0] * len(t))
    assert cpr == pytest.approx(1.0), (
        "f = 1 everywhere must give CPR = 1 (is the area divided by the threshold span?)"
    )
    assert cmd == pytest.approx(0.0)


def test_cpr_hand_computed_linear_curve():
    # f(t) = t on [0, 1]: area 1/2; CMD = area of 1 - t = 1/2
    cpr, cmd = M.cpr_cmd([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])
    assert cpr == pytest.approx(0.5) and cmd == pytest.approx(0.5)


def test_cmd_counts_overshoot_as_deficit():
    # f = 1.5 is as far from the model as f = 0.5: MIB's absolute deficit
    _, cmd_hi = M.cpr_cmd([0.1, 1.0], [1.5, 1.5])
    _, cmd_lo = M.cpr_cmd([0.1, 1.0], [0.5, 0.5])
    assert cmd_hi == pytest.approx(cmd_lo) == pytest.approx(0.5)


def test_log_scale_cpr_by_hand():
    # f = 0 at t = 0.01, 1 at 0.1 and 1: in ln t the ramp spans half the range -> area 0.25 + 0.5
    t, f = [0.01, 0.1, 1.0], [0.0, 1.0, 1.0]
    assert M.cpr_cmd(t, f, log_scale=True) == pytest.approx((0.75, 0.25))
    # linear: ramp 0.01..0.1 (0.045) + 0.9 over a span of 0.99
    assert M.cpr_cmd(t, f)[0] == pytest.approx(0.945 / 0.99)


def test_cpr_floor_is_what_saturation_gives_for_free():
    t = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    # every head is in from 10% of the edges: f = 1 there by construction, 0 assumed below
    sat = [x >= 0.1 for x in t]
    assert M.cpr_floor(t, sat) == pytest.approx((0.9 + 0.05 * 0.5) / 0.999)  # ramp 0.05 -> 0.1
    assert M.cpr_floor(t, sat, log_scale=True) == pytest.approx(
        (np.log(10) + 0.5 * np.log(2)) / np.log(1000)
    )
    assert M.cpr_floor(t, sat, log_scale=True) < 0.5 < M.cpr_floor(t, sat), (
        "only the linear CPR passes for free"
    )
    assert M.cpr_floor(t, [x >= 1.0 for x in t]) < 0.5


def test_cpr_rejects_unsorted_thresholds():
    with pytest.raises(ValueError, match="increasing"):
        M.cpr_cmd([0.5, 0.1], [1, 1])


def test_faithfulness_normalisation():
    assert M.faithfulness(3.0, 5.0, 1.0) == pytest.approx(0.5), (
        "f must be (m(C)-m(empty))/(m(N)-m(empty))"
    )
    assert M.faithfulness(1.0, 5.0, 1.0) == 0.0
    assert math.isnan(M.faithfulness(2.0, 1.0, 1.0))


def test_edges_sorted_by_score_and_curve_ignores_input_order(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    edges = C.edge_scores(model, b, means)
    assert [e.score for e in edges] == sorted([e.score for e in edges], reverse=True)
    by_layer = sorted(edges, key=lambda e: e.sender)  # the public sketch's order
    t = [0.05, 0.2, 1.0]
    a = M.faithfulness_curve(model, b, means, edges, t)
    c = M.faithfulness_curve(model, b, means, by_layer, t)
    assert a["f"] == c["f"], "the curve must rank edges by score itself"
    assert a["f"][-1] == pytest.approx(1.0), "all edges kept -> every head kept -> f = 1"


def test_mib_audit_result(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    edges = C.edge_scores(model, b, means)
    res, curve = M.mib_audit(model, b, means, edges, null_seeds=[1, 2])
    assert res.metric == "MIB" and np.isfinite(res.value)
    assert res.passed == (res.value > 0.5)
    v = res.values
    assert (
        np.isfinite(v["cpr_log"])
        and len(res.null_values) == 2
        and res.null_passed == (res.null > 0.5)
    )
    sat = [n == v["n_heads_total"] for n in v["n_heads"]]
    assert v["cpr_floor"] == pytest.approx(M.cpr_floor(v["threshold"], sat))
    assert res.can_fail == (v["cpr_floor"] <= 0.5)
    res.model_dump_json()


def test_mib_note_flags_degenerate_denominator():
    assert "nearly coincide" in M._mib_note(0.3, 0.50, 0.49)
    assert M._mib_note(0.8, 2.0, 0.1) == ""
    assert "undefined" in M._mib_note(float("nan"), 1.0, 1.0)
    assert "flipped" in M._mib_note(-0.5, 0.05, 0.15)
