"""Tests of kit.mui.law: the law fit, PUR, rank agreement (by hand and against Table 1), the law per
group and PUR ranking against the fresh-item truth, and notebook 01's task choices."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import kit.mui.law as ul
from kit.core.checks import NonFiniteError
from kit.mui import growth, law, masking


def test_fit_law_paper_form_by_hand():
    # MUI = -4.632 ln(P) + 28.305 exactly (the constants MUI-Eval's figure prints): the fit must
    # give them back, and MUI at P = 100 is 28.305 - 4.632 * ln(100) = 6.9738 (the paper's "6.97%").
    p = np.array([10.0, 20.0, 50.0, 80.0, 100.0])
    fit = law.fit_law(p, -4.632 * np.log(p) + 28.305)
    assert fit.form == "mui_vs_log_perf", "the paper's form is the default"
    assert fit.alpha == pytest.approx(4.632) and fit.beta == pytest.approx(28.305)
    assert (
        fit.mui_at(100) == pytest.approx(28.305 - 4.632 * math.log(100))
        and round(fit.mui_at(100), 2) == 6.97
    )
    assert fit.predict(50.0) == pytest.approx(-4.632 * math.log(50) + 28.305)
    with pytest.raises(ValueError, match="performance must be > 0"):
        law.fit_law([0.0, 2, 3], [1.0, 2, 3])
    with pytest.raises(ValueError, match="allowed values: mui_vs_log_perf, perf_vs_log_mui"):
        law.fit_law(p, p, form="linear")


def test_fit_law_recovers_a_log_law():
    m = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    fit = law.fit_law(3 + 2 * np.log(m), m, form="perf_vs_log_mui")
    assert math.isnan(fit.alpha) and fit.mui_at(3 + 2 * np.log(4.0)) == pytest.approx(4.0)
    assert fit.slope == pytest.approx(2.0) and fit.intercept == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0) and fit.n == 5
    noisy = law.fit_law(
        3 + 2 * np.log(m) + np.array([0.1, -0.2, 0.05, 0.1, -0.05]), m, form="perf_vs_log_mui"
    )
    assert noisy.ci_low < 2.0 < noisy.ci_high and 0.9 < noisy.r2 < 1.0
    with pytest.raises(ValueError, match="> 0"):
        law.fit_law([1, 2, 3], [1, 0, 2])


def test_pur_by_hand():
    assert law.pur(11.9, 5.4) == pytest.approx(11.9 / math.sqrt(5.4))
    assert law.pur(50.0, 4.0, alpha=1.0) == pytest.approx(12.5)
    np.testing.assert_allclose(law.pur(np.array([10.0, 20.0]), np.array([4.0, 16.0])), [5.0, 5.0])


def test_pur_reproduces_table1_from_table5():
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    t5 = load_table("000_table05_neuron_mui_main")
    m = t1[t1.row_type == "model"].merge(
        t5, left_on=["row_label", "benchmark"], right_on=["model", "benchmark"]
    )
    assert len(m) >= 40, "expected the 7 Table-1 models that Table 5 lists"
    diff = np.abs(
        law.pur(m.performance.to_numpy(), m.mui.to_numpy(), alpha=0.5) - m.pur_value.to_numpy()
    )
    assert diff.max() <= 0.1, f"PUR(alpha=0.5) misses Table 1 by up to {diff.max():.2f}"
    off = np.abs(
        law.pur(m.performance.to_numpy(), m.mui.to_numpy(), alpha=1.0) - m.pur_value.to_numpy()
    )
    assert off.max() > 1, "alpha=1 must not reproduce Table 1 (else this test proves nothing)"


def test_rank_agreement_by_hand():
    ref = ["a", "b", "c", "d"]
    perfect = law.rank_agreement({"x": {"a": 4, "b": 3, "c": 2, "d": 1}}, ref)
    assert perfect["spearman_mean"] == pytest.approx(100) and perfect[
        "kendall_mean"
    ] == pytest.approx(100)
    mixed = law.rank_agreement(
        {"x": {"a": 4, "b": 3, "c": 1, "d": 2}, "y": {"a": 1, "b": 2, "c": 3, "d": 4}}, ref
    )
    # x: one swap -> spearman 1 - 6*2/(4*15) = 0.8, kendall (5-1)/6; y reversed: -1, -1
    assert mixed["per_dataset"]["x"]["spearman"] == pytest.approx(0.8)
    assert mixed["per_dataset"]["x"]["kendall"] == pytest.approx(4 / 6)
    assert mixed["spearman_mean"] == pytest.approx(100 * (0.8 - 1) / 2)
    assert mixed["spearman_var"] == pytest.approx(100 * np.var([0.8, -1.0])), (
        "population variance x 100"
    )


def test_rank_agreement_reproduces_table1_summary():
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    rows = t1[t1.row_type == "model"]
    ref = rows.drop_duplicates("row_label").sort_values("reference_rank").row_label.tolist()
    got = {}
    for col in ("perf_value", "pur_value"):
        by_ds = {b: dict(zip(g.row_label, g[col])) for b, g in rows.groupby("benchmark")}
        got[col] = law.rank_agreement(by_ds, ref)
    summary = [
        round(got[c][k], 1)
        for k in ("spearman_mean", "spearman_var", "kendall_mean", "kendall_var")
        for c in ("perf_value", "pur_value")
    ]
    assert summary == [86.4, 88.6, 1.8, 1.0, 76.9, 80.6, 3.2, 1.2], (
        f"got {summary}: mean in %, population variance of the coefficients x 100"
    )


def test_rank_agreement_constant_score_is_undefined_not_zero():
    got = law.rank_agreement(
        {"x": {"a": 1, "b": 1, "c": 1}, "y": {"a": 3, "b": 2, "c": 1}}, ["a", "b", "c"]
    )
    assert math.isnan(got["per_dataset"]["x"]["spearman"]), (
        "a constant score cannot rank: NaN, left out of the mean"
    )
    assert got["spearman_mean"] == pytest.approx(100) and got["n_datasets"] == 1


def test_law_pur_and_rank_agreement_refuse_nan():
    with pytest.raises(NonFiniteError, match="fit_law performance"):
        law.fit_law([50.0, float("nan"), 70.0], [1.0, 2.0, 3.0])
    with pytest.raises(NonFiniteError, match="fit_law mui"):
        law.fit_law([50.0, 60.0, 70.0], [1.0, float("inf"), 3.0])
    with pytest.raises(NonFiniteError, match="pur mui"):
        law.pur([50.0, 60.0], [float("nan"), 4.0])
    with pytest.raises(NonFiniteError, match="pur performance"):
        law.pur([float("nan"), 60.0], [1.0, 4.0])
    with pytest.raises(NonFiniteError, match="dataset 'x'"):
        law.rank_agreement({"x": {"a": 1.0, "b": float("nan"), "c": 3.0}}, ["a", "b", "c"])


def test_law_fits_per_group_and_pooled():
    m = np.array([1.0, 2.0, 4.0, 8.0])
    df = pd.DataFrame(
        {
            "benchmark": ["a"] * 4 + ["b"] * 4,
            "mui": np.r_[m, m],
            "performance": np.r_[10 - 2 * np.log(m), 50 - 5 * np.log(m)],
        }
    )
    fits = ul.law_fits(df, form="perf_vs_log_mui").set_index("benchmark")
    assert fits.loc["a", "slope"] == pytest.approx(-2) and fits.loc["b", "slope"] == pytest.approx(
        -5
    )
    assert fits.loc["all", "n"] == 8
    p = np.array([10.0, 20.0, 40.0, 80.0])
    paper = ul.law_fits(
        pd.DataFrame({"benchmark": ["a"] * 4, "performance": p, "mui": 28.305 - 4.632 * np.log(p)})
    )
    row = paper.set_index("benchmark").loc["a"]
    assert row["alpha"] == pytest.approx(4.632) and row["beta"] == pytest.approx(28.305)
    assert round(row["mui_at_100"], 2) == 6.97, (
        "the default is the paper's form: MUI = -alpha ln P + beta"
    )
    flat = ul.law_fits(
        pd.DataFrame({"benchmark": ["c"] * 3, "mui": [1.0, 2, 3], "performance": [5.0, 5, 5]})
    )
    assert pd.isna(flat.set_index("benchmark").loc["c"].get("slope", np.nan)), (
        "constant performance: no fit"
    )


def test_task_choices_from_the_registry():
    tasks = ["add", "add2", "code", "facts", "boolean", "dyck"]
    assert growth.first_task_per_group(tasks) == ["add", "code", "facts", "boolean"]
    assert masking.masking_tasks(tasks, None, None) == ("add", "code")
    assert masking.masking_tasks(tasks, "facts", None) == ("facts", "add")
    assert ul.base_models(["zoo/base-s", "zoo/base-m+math", "zoo/base-l@step-3"]) == ["zoo/base-s"]
    assert law.focus_model(["zoo/base-s", "zoo/base-m"]) == "zoo/base-m"
    # capability groups, as the world's
    real = [
        "gsm8k",
        "math500",
        "humaneval",
        "mmlu/anatomy",
        "bbh/navigate",
    ]
    assert growth.first_task_per_group(real) == [
        "gsm8k",
        "humaneval",
        "mmlu/anatomy",
        "bbh/navigate",
    ]
    assert masking.masking_tasks(["mmlu", "gsm8k"], None, None) == ("gsm8k", "mmlu")


def test_pur_ranking_against_fresh_truth():
    grid = pd.DataFrame(
        {
            "model": ["A", "B", "C"],
            "task": ["t"] * 3,
            "fresh": [60.0, 50.0, 10.0],
            "performance": [40.0, 50.0, 10.0],
            "mui": [1.0, 4.0, 1.0],  # PUR: 40, 25, 10
        }
    )
    summary, g = ul.pur_ranking(grid)
    assert summary["reference_order"] == ["A", "B", "C"]
    assert g.pur.tolist() == pytest.approx([40.0, 25.0, 10.0])
    assert summary["pur"]["spearman_mean"] == pytest.approx(100.0)
    assert summary["performance"]["spearman_mean"] == pytest.approx(50.0), (
        "one swap of three: 1 - 6*2/24"
    )
    assert summary["pur_vs_task_truth"]["spearman_mean"] == pytest.approx(100.0)


def test_fit_law_fixed_effects_by_hand_and_against_dummies():
    # group a: ln P = 0, 1, 2 with MUI 1, 3, 6; group b: ln P = 0, 1 with MUI 10, 11.
    # Demeaned: a xd (-1, 0, 1), yd (-7/3, -1/3, 8/3); b xd (-.5, .5), yd (-.5, .5).
    # slope = (5 + 0.5) / (2 + 0.5) = 2.2; SSR = 16/15; within SS of y = 114/9 + 0.5; dof 5 - 2 - 1
    # = 2.
    import statsmodels.formula.api as smf

    df = pd.DataFrame(
        {"g": ["a", "a", "a", "b", "b"], "lnp": [0.0, 1, 2, 0, 1], "mui": [1.0, 3, 6, 10, 11]}
    )
    df["performance"] = np.exp(df.lnp)
    fit = law.fit_law_fixed_effects(df, "g")
    assert fit.slope == pytest.approx(2.2)
    assert fit.r2 == pytest.approx(1 - (16 / 15) / (114 / 9 + 0.5)), "R² within"
    ref = smf.ols("mui ~ lnp + C(g)", data=df).fit()
    assert fit.slope == pytest.approx(ref.params["lnp"])
    lo, hi = ref.conf_int().loc["lnp"]
    assert (fit.ci_low, fit.ci_high) == (pytest.approx(lo), pytest.approx(hi)), (
        "the dummy regression's interval"
    )
    # a constant shift of one group changes a pooled fit but not the within slope
    shifted = df.assign(mui=df.mui + np.where(df.g == "b", 50.0, 0.0))
    assert law.fit_law_fixed_effects(shifted, "g").slope == pytest.approx(2.2)
    # a group with one row carries no within information; too few rows: None
    assert law.fit_law_fixed_effects(df.iloc[:3], "g").n == 3
    assert law.fit_law_fixed_effects(df.iloc[[0, 1, 3]], "g") is None
    rec = law.fe_record(fit, "g", 2)
    assert rec["r2_within"] == rec["r2"] and rec["fixed_effects"] == "g" and rec["n_groups"] == 2
    assert law.fe_record(None, "g", 2)["slope"] is None


def test_model_clustered_law_interval_is_wider_than_the_points_interval(clustered_grid):
    grid = clustered_grid
    naive = law.fit_law_fixed_effects(grid, "task")
    assert naive is not None
    clustered = law.law_cluster_ci(grid, "task", "model")
    assert clustered is not None
    lo, hi, n = clustered
    assert n == 8
    # the bootstrap's numpy refit is fit_law_fixed_effects's estimator
    codes = pd.factorize(grid.task)[0]
    y, x = grid.mui.to_numpy(), np.log(grid.performance.to_numpy())
    assert law.within_slope(y, x, codes) == pytest.approx(naive.slope)
    assert lo <= naive.slope <= hi
    # 48 points but 8 independent models: the points' t interval is far too narrow
    assert hi - lo > 2 * (naive.ci_high - naive.ci_low)
    # without a model effect the two agree roughly (neither is more than twice the other)
    rng = np.random.default_rng(3)
    free = grid.assign(mui=20 - 2 * np.log(grid.performance) + rng.normal(0, 1.0, len(grid)))
    free_ci = law.law_cluster_ci(free, "task", "model")
    assert free_ci is not None
    flo, fhi, _ = free_ci
    f = law.fit_law_fixed_effects(free, "task")
    assert f is not None and 0.5 < (fhi - flo) / (f.ci_high - f.ci_low) < 2
    # resampling whole models: with every model's points moved as one, a draw holds each model's
    # rows together (same seed, same draws)
    assert law.law_cluster_ci(grid, "task", "model") == (lo, hi, n)
    assert law.law_cluster_ci(grid[grid.model.isin(["m0", "m1"])], "task") is None, (
        "two models: too few clusters to resample"
    )
    with pytest.raises(ValueError, match="cluster='family'"):
        law.law_cluster_ci(grid, "task", "family")
