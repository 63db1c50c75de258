"""Tests of kit.mui.regression: the training takeaway of a checkpoint series."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.mui import regression

# --- regression report ------------------------------------------------------------------------


def _series():
    rows = [
        # checkpoint, task, perf, mui
        ("A", "t1", 10.0, 5.0),
        ("A", "t2", 20.0, 5.0),
        ("B", "t1", 20.0, 4.0),
        ("B", "t2", 30.0, 6.0),  # evolving, accumulating -> continue
        ("C", "t1", 30.0, 5.0),
        ("C", "t2", 25.0, 7.0),  # accumulating, coarsening -> rebalance
        ("D", "t1", 20.0, 4.0),
        ("D", "t2", 30.0, 8.0),  # collapsing, accumulating -> halt
        ("E", "t1", 19.5, 3.95),
        ("E", "t2", 30.4, 8.02),  # noise only
    ]
    return pd.DataFrame(rows, columns=["checkpoint", "task", "perf", "mui"])


def test_regression_report_takeaways():
    rep = regression.regression_report(_series(), tol_perf=1.0, tol_mui=0.1)
    assert list(rep["from"]) == ["A", "B", "C", "D"], (
        "checkpoints keep their order of first appearance"
    )
    assert list(rep["takeaway"]) == ["continue", "rebalance", "halt", "continue"]
    assert rep.iloc[1]["flagged"] == "t2:coarsening" and rep.iloc[2]["flagged"] == "t1:collapsing"
    assert rep.iloc[3]["flat"] == 2 and rep.iloc[3]["reason"] == "no change beyond tolerance"
    assert "rebalance" in rep.iloc[1]["reason"] and "halt" in rep.iloc[2]["reason"]


def test_regression_report_tolerance_silences_noise():
    # without tolerance the noisy last step reads as collapsing on t1 -> a false "halt"
    rep0 = regression.regression_report(_series())
    assert rep0.iloc[3]["takeaway"] == "halt" and rep0.iloc[3]["collapsing"] == 1
    rep = regression.regression_report(_series(), tol_perf=1.0, tol_mui=0.1)
    assert rep.iloc[3]["takeaway"] == "continue"


def test_regression_report_order_and_detail():
    s = _series()
    s["order"] = s["checkpoint"].map({"A": 5, "B": 4, "C": 3, "D": 2, "E": 1})
    rep = regression.regression_report(s, order="order")
    assert list(rep["from"]) == ["E", "D", "C", "B"]
    det = regression.regression_report(_series(), detail=True)
    assert len(det) == 8 and set(det.columns) >= {"task", "direction", "takeaway"}
    with pytest.raises(ValueError, match="lacks column"):
        regression.regression_report(_series().drop(columns="task"))
    with pytest.raises(ValueError, match=r"tasks lack checkpoints \{'t2': \['C'\]\}"):
        regression.regression_report(_series().drop(index=5))
