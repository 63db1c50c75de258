"""Tests of kit.mui.directions: one change's direction, directions of steps and pairs, counts, and
the corollary checks and findings."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.mui import directions, published_trajectories


@pytest.mark.parametrize(
    "d_perf,d_mui,want",
    [
        (1, -1, "evolving"),
        (1, 1, "accumulating"),
        (-1, 1, "coarsening"),
        (-1, -1, "collapsing"),
        (0.0, 1, "flat"),
        (1, 0.0, "flat"),
    ],
)
def test_direction(d_perf, d_mui, want):
    assert directions.direction(d_perf, d_mui) == want


def test_direction_tolerance():
    assert directions.direction(0.4, 3, tol_perf=0.5) == "flat"
    assert directions.direction(0.6, 3, tol_perf=0.5) == "accumulating"


def points(rows):
    """(series, order, label, perf, mui) tuples -> the points frame step_directions reads."""
    return pd.DataFrame(rows, columns=["task", "order", "model", "perf", "mui"])


# --- labelling --------------------------------------------------------------------------------


def test_label_directions_quadrants():
    got = directions.label_directions([5, 5, -5, -5], [-1, 1, 1, -1])
    assert got == ["evolving", "accumulating", "coarsening", "collapsing"], (
        "quadrants are (Δperf, ΔMUI): evolving (+,-), accumulating (+,+), coarsening (-,+), "
        "collapsing (-,-)"
    )


def test_label_directions_tolerance_needs_both_coordinates():
    # perf change within its tolerance -> flat even though MUI moved a lot
    assert directions.label_directions([1.5], [3.0], tol_perf=2.0) == ["flat"]
    # MUI change within its tolerance -> flat even though performance moved a lot
    assert directions.label_directions([20.0], [-0.04], tol_mui=0.05) == ["flat"]
    # both beyond their tolerance -> a direction
    assert directions.label_directions([2.5], [-0.06], tol_perf=2.0, tol_mui=0.05) == ["evolving"]
    # with zero tolerance a tiny change is still a direction (the paper's reading of the tables)
    assert directions.label_directions([-0.6], [-0.1]) == ["collapsing"]


def test_label_directions_nan_is_flat_and_bad_input_fails():
    assert directions.label_directions([float("nan"), 1.0], [1.0, None]) == ["flat", "flat"]
    with pytest.raises(ValueError, match="tolerances"):
        directions.label_directions([1.0], [1.0], tol_perf=-1)
    with pytest.raises(ValueError, match="d_perf has 2 values but d_mui has 1"):
        directions.label_directions([1.0, 2.0], [1.0])


def test_step_directions_sorts_by_order_and_computes_deltas():
    # given out of order on purpose: the steps must follow `order`, not the row order
    p = points(
        [
            ("a", 300, "c3", 50.0, 4.0),
            ("a", 100, "c1", 10.0, 5.0),
            ("a", 200, "c2", 30.0, 6.0),
            ("b", 100, "c1", 40.0, 2.0),
            ("b", 200, "c2", 35.0, 1.0),
        ]
    )
    st = directions.step_directions(p, series="task")
    a = st[st["task"] == "a"].reset_index(drop=True)
    assert list(a["from"]) == ["c1", "c2"] and list(a["to"]) == ["c2", "c3"], (
        "steps must follow the order column"
    )
    assert list(a["d_perf"]) == [20.0, 20.0] and list(a["d_mui"]) == [1.0, -2.0]
    assert list(a["direction"]) == ["accumulating", "evolving"]
    assert list(a["step"]) == [1, 2] and list(a["n_steps"]) == [2, 2]
    b = st[st["task"] == "b"].iloc[0]
    assert b["direction"] == "collapsing" and b["d_perf"] == -5.0 and b["d_mui"] == -1.0


def test_step_directions_string_steps_are_not_sorted_lexically():
    # "step-1000" < "step-200" as strings: ordering must use the numeric order column
    p = points([("a", 1000, "step-1000", 30.0, 2.0), ("a", 200, "step-200", 10.0, 1.0)])
    st = directions.step_directions(p)
    assert st.iloc[0]["from"] == "step-200" and st.iloc[0]["direction"] == "accumulating"


def test_step_directions_rejects_duplicates_and_missing_columns():
    p = points([("a", 1, "x", 1.0, 1.0), ("a", 1, "y", 2.0, 2.0)])
    with pytest.raises(ValueError, match="several rows"):
        directions.step_directions(p)
    with pytest.raises(ValueError, match="lacks column"):
        directions.step_directions(p.drop(columns="mui"))


def test_pair_directions_and_counts():
    pairs = pd.DataFrame(
        {
            "model": ["ft"] * 4,
            "task": list("wxyz"),
            "domain": ["in-domain", "ood", "ood", "ood"],
            "perf": [60.0, 40.0, 10.0, 50.2],
            "mui": [3.0, 5.0, 1.0, 2.0],
            "base_perf": [50.0, 45.0, 20.0, 50.0],
            "base_mui": [2.0, 4.0, 2.0, 1.0],
        }
    )
    out = directions.pair_directions(pairs, tol_perf=0.5)
    assert list(out["d_perf"].round(6)) == [10.0, -5.0, -10.0, 0.2]
    assert list(out["direction"]) == ["accumulating", "coarsening", "collapsing", "flat"]
    counts = directions.direction_counts(out, by="domain").set_index("domain")
    assert counts.loc["ood", "coarsening"] == 1 and counts.loc["ood", "evolving"] == 0
    assert counts.loc["ood", "total"] == 3 and counts.loc["in-domain", "accumulating"] == 1
    assert directions.counts_dict(out) == {
        "evolving": 0,
        "accumulating": 1,
        "coarsening": 1,
        "collapsing": 1,
        "flat": 1,
        "total": 4,
    }
    overall = directions.direction_counts(out)
    assert (
        list(overall.columns) == [*directions.DIRECTIONS, "total"]
        and int(overall["total"].iloc[0]) == 4
    )


# --- corollary checks -------------------------------------------------------------------------


def test_corollary_checks_verdicts():
    pre = pd.DataFrame(
        {
            "step": [1, 2, 3, 1, 2, 3],
            "n_steps": [3] * 6,
            "direction": [
                "accumulating",
                "accumulating",
                "evolving",
                "coarsening",
                "accumulating",
                "flat",
            ],
        }
    )
    spec = pd.DataFrame(
        {
            "domain": ["in-domain", "ood", "ood"],
            "direction": ["accumulating", "coarsening", "collapsing"],
        }
    )
    cont = pd.DataFrame(
        {
            "domain": ["in-domain", "ood", "ood", "ood"],
            "task": ["t", "u", "v", "v"],
            "direction": ["evolving", "collapsing", "collapsing", "coarsening"],
        }
    )
    chk = directions.corollary_checks(pre, spec, cont, late_steps=1, ood_tasks=["u"]).set_index(
        ["setting", "subset"]
    )
    early = chk.loc[("pre-training", "early steps")]
    assert early["n"] == 4 and early["n_expected"] == 3 and early["verdict"] == "agrees"
    late = chk.loc[("pre-training", "late steps")]
    assert late["n"] == 2 and late["modal"] == "evolving/flat" and late["verdict"] == "tied", (
        "a tie for the most frequent direction must be reported as tied, not as agreement"
    )
    assert chk.loc[("specialisation", "ood"), "verdict"] == "tied"
    assert chk.loc[("contamination", "in-domain"), "verdict"] == "disagrees"
    assert chk.loc[("contamination", "ood"), "share_expected"] == pytest.approx(2 / 3)
    assert chk.loc[("contamination", "ood (u)"), "n"] == 1
    empty = directions.corollary_checks(specialised=spec.iloc[:0].assign(domain=[]))
    assert empty.empty


def test_corollary_findings_name_numbers_and_differences():
    a = directions.corollary_checks(
        specialised=pd.DataFrame({"domain": ["in-domain"], "direction": ["accumulating"]})
    )
    b = directions.corollary_checks(
        specialised=pd.DataFrame(
            {"domain": ["in-domain", "in-domain"], "direction": ["coarsening", "coarsening"]}
        )
    )
    text = "\n".join(directions.corollary_findings({"paper tables": a, "tiny world": b}))
    assert "1/1 (100%)" in text and "0/2 (0%)" in text
    assert "AGREES" in text and "DISAGREES" in text
    assert "same verdict on 0 of 1 claims" in text and "paper tables: agrees" in text
    with pytest.raises(ValueError, match="reference"):
        directions.corollary_findings({"x": a}, reference="y")


def test_float_noise_is_not_a_direction_at_zero_tolerance():
    # 0.1 + 0.2 != 0.3 in floating point: an unchanged MUI must stay flat
    p = points([("a", 1, "x", 10.0, 0.3), ("a", 2, "y", 20.0, 0.1 + 0.2)])
    assert directions.step_directions(p).iloc[0]["direction"] == "flat"
    pairs = pd.DataFrame(
        {"perf": [20.0], "mui": [0.1 + 0.2], "base_perf": [10.0], "base_mui": [0.3]}
    )
    assert directions.pair_directions(pairs).iloc[0]["direction"] == "flat"


def test_controls_must_not_collapse():
    ctrl = pd.DataFrame(
        {"domain": ["ood"] * 3, "direction": ["collapsing", "collapsing", "coarsening"]}
    )
    row = directions.corollary_checks(controls=ctrl).iloc[0]
    assert row["setting"] == "uncontaminated controls" and row["expected"] == "not collapsing"
    assert row["n_expected"] == 1 and row["verdict"] == "disagrees", (
        "collapsing among uncontaminated controls contradicts 'collapsing only under contamination'"
    )
    ok = directions.corollary_checks(
        controls=ctrl.assign(direction=["coarsening", "flat", "coarsening"])
    ).iloc[0]
    assert ok["verdict"] == "agrees" and ok["n_expected"] == 3


def test_strict_only_under_contamination_check_on_table9():
    # Sec. 3.3 says collapsing is only observed under contamination; Table 9's specialised
    # models are uncontaminated, and 4 of their 15 OOD changes collapse (read from the table, at
    # zero tolerance).
    spec = directions.pair_directions(published_trajectories.published_specialised())
    row = directions.corollary_checks(uncontaminated=spec).iloc[0]
    assert (row["expected"], row["n"], row["n"] - row["n_expected"]) == ("no collapsing", 15, 4)
    assert row["verdict"] == "disagrees", (
        "one collapsing change without contamination contradicts the strict claim"
    )
    clean = spec.assign(direction="coarsening")
    assert directions.corollary_checks(uncontaminated=clean).iloc[0]["verdict"] == "agrees"


def test_conditional_share_reads_only_changes_with_the_predicted_performance_sign():
    changes = pd.DataFrame(
        {
            "direction": [
                "accumulating",
                "evolving",
                "accumulating",
                "coarsening",
                "collapsing",
                "flat",
            ],
            "task": ["a", "a", "b", "b", "c", "c"],
        }
    )
    # accumulating predicts perf up: the perf-up changes are 2 accumulating + 1 evolving
    s = directions.conditional_share(changes, "accumulating", "task")
    assert (s["k"], s["m"], s["clusters"], s["n_changes"]) == (2, 3, 2, 6)
    assert s["share"] == pytest.approx(2 / 3)
    # coarsening predicts perf down: 1 coarsening + 1 collapsing
    s = directions.conditional_share(changes, "coarsening", "task")
    assert (s["k"], s["m"], s["clusters"]) == (1, 2, 2)
