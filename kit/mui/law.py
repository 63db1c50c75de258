"""The Utility Law and PUR (seed 000, §2-3.2, Eq. 7, Table 1): the law fit (MUI ~ log
performance, the paper's form; the inverse as an option), PUR, rank agreement with a reference
order, and notebook 01's law grid (performance and MUI per model and task) with its ranking section.

Models are asked through :mod:`kit.subjects` (world and Hugging Face alike); the metric itself lives
in :mod:`kit.mui.metric`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat, cast

import numpy as np
import pandas as pd

from kit.core.checks import require_finite
from kit.mui.metric import subject_mui

Numbers = float | int | np.ndarray | Sequence[float | int]
"""A number or a 1-d collection of numbers (list, numpy array; pass pandas columns as
``.to_numpy()``)."""

LAW_FORMS = ("mui_vs_log_perf", "perf_vs_log_mui")
"""The Utility Law's regression: ``mui_vs_log_perf`` is the paper's form, ``MUI = -alpha ln(P) +
beta`` (P in %; MUI-Eval's figure prints alpha 4.632, beta 28.305, so MUI -> 6.97% at P = 100 and ->
inf at P -> 0); ``perf_vs_log_mui`` is the inverse regression ``performance = a + b ln(MUI)``."""

PAPER_LAW = {"alpha": 4.632, "beta": 28.305, "mui_at_100": 6.97}
"""Published constants (MUI-Eval's ``figures/Utility_Law.png`` / §3.2's 6.97%): labels, never
results."""


@dataclass
class LawFit:
    """OLS fit of the Utility Law in one of :data:`LAW_FORMS`: ``y = intercept + slope * ln(x)``.

    ``mui_vs_log_perf`` (default): y = MUI, x = performance, so slope = -alpha, intercept = beta.
    ``perf_vs_log_mui``: y = performance, x = MUI. The law predicts slope < 0 in both forms.
    """

    slope: float
    """Coefficient of ln(x)."""
    intercept: float
    """Constant term."""
    ci_low: float
    """Lower end of the 95% confidence interval of the slope."""
    ci_high: float
    """Upper end of the 95% confidence interval of the slope."""
    r2: float
    """R^2 of the fit."""
    n: int
    """Number of (MUI, performance) points."""
    pvalue: float
    """Two-sided p-value of the slope."""
    form: str = "perf_vs_log_mui"
    """Which regression (:data:`LAW_FORMS`)."""

    @property
    def alpha(self) -> float:
        """The paper's alpha (``MUI = -alpha ln P + beta``); NaN for the inverse form."""
        return -self.slope if self.form == "mui_vs_log_perf" else float("nan")

    @property
    def beta(self) -> float:
        """The paper's beta; NaN for the inverse form."""
        return self.intercept if self.form == "mui_vs_log_perf" else float("nan")

    def mui_at(self, performance: float = 100.0) -> float:
        """MUI the law gives at ``performance`` (%): the paper's 'limit' at 100 (6.97% in §3.2).
        For the inverse form, the fitted line solved for MUI."""
        if self.form == "mui_vs_log_perf":
            return float(self.intercept + self.slope * np.log(performance))
        return (
            float(np.exp((performance - self.intercept) / self.slope))
            if self.slope
            else float("nan")
        )

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        """y at x (MUI at performance x for the paper's form, performance at MUI x for the
        inverse)."""
        return self.intercept + self.slope * np.log(np.asarray(x, dtype=float))


def fit_law(performance: Numbers, mui: Numbers, form: str = "mui_vs_log_perf") -> LawFit:
    """Fit the Utility Law with statsmodels OLS (:data:`LAW_FORMS`; default the paper's
    ``MUI = -alpha ln(P) + beta``); needs >= 3 points, performance > 0 and MUI > 0 (both in %)."""
    import statsmodels.api as sm

    if form not in LAW_FORMS:
        raise ValueError(f"form={form!r}; allowed values: {', '.join(LAW_FORMS)}")
    perf = require_finite("fit_law performance", np.asarray(performance, dtype=float))
    m = require_finite("fit_law mui", np.asarray(mui, dtype=float))
    if perf.shape != m.shape or perf.ndim != 1:
        raise ValueError(f"performance {perf.shape} and mui {m.shape} must be 1-d of equal length")
    if len(perf) < 3:
        raise ValueError(f"fit_law needs at least 3 points, got {len(perf)}")
    if (m <= 0).any():
        raise ValueError(
            "mui must be > 0 everywhere (the law is in log MUI or fits MUI on log performance)"
        )
    if form == "mui_vs_log_perf" and (perf <= 0).any():
        raise ValueError(
            "performance must be > 0 everywhere for form='mui_vs_log_perf' (the law is in ln P)"
        )
    y, x = (m, perf) if form == "mui_vs_log_perf" else (perf, m)
    res = sm.OLS(y, sm.add_constant(np.log(x))).fit()
    lo, hi = res.conf_int(0.05)[1]
    return LawFit(
        slope=float(res.params[1]),
        intercept=float(res.params[0]),
        ci_low=float(lo),
        ci_high=float(hi),
        r2=float(res.rsquared),
        n=len(y),
        pvalue=float(res.pvalues[1]),
        form=form,
    )


def fit_law_fixed_effects(
    df: pd.DataFrame,
    group: str,
    perf: str = "performance",
    m: str = "mui",
    form: str = "mui_vs_log_perf",
) -> LawFit | None:
    """The Utility Law pooled over groups (benchmarks, tasks) with a fixed effect per group:
    ``y_gi = a_g + slope * ln(x_gi) + e`` (benchmarks differ in MUI scale, so a pooled fit
    without them mixes the between-benchmark spread into the slope).

    ``df``: one row per (model, group) with ``perf`` and ``m`` in %; rows with MUI <= 0 (or
    performance <= 0 in the paper's form, outside ln P) are left out, and so are groups with fewer
    than 2 usable rows (they carry no within-group information). The within estimator: y and ln x
    demeaned per group, ``slope = sum(xd yd) / sum(xd^2)``, residual variance on ``n - G - 1``
    degrees of freedom, a t 95% interval. ``r2`` is the **within** R^2 (``1 - SSR / sum(yd^2)``),
    ``intercept`` the mean of the group intercepts. None when fewer than 3 usable rows, or no
    residual degrees of freedom, or ln x does not vary within any group.
    """
    from scipy import stats

    if form not in LAW_FORMS:
        raise ValueError(f"form={form!r}; allowed values: {', '.join(LAW_FORMS)}")
    d = df[(df[m] > 0) & df[perf].notna() & ((df[perf] > 0) if form == "mui_vs_log_perf" else True)]
    d = d[d.groupby(group)[m].transform("size") >= 2]
    y_col, x_col = (m, perf) if form == "mui_vs_log_perf" else (perf, m)
    y = d[y_col].to_numpy(float)
    x = np.log(d[x_col].to_numpy(float))
    g = d[group].to_numpy()
    n, n_groups = len(y), len(set(g))
    dof = n - n_groups - 1
    if n < 3 or dof < 1:
        return None
    frame = pd.DataFrame({"g": g, "x": x, "y": y})
    xd = x - frame.groupby("g")["x"].transform("mean").to_numpy()
    yd = y - frame.groupby("g")["y"].transform("mean").to_numpy()
    sxx = float(xd @ xd)
    if sxx <= 0:
        return None
    slope = float(xd @ yd) / sxx
    resid = yd - slope * xd
    ssr, syy = float(resid @ resid), float(yd @ yd)
    se = float(np.sqrt(ssr / dof / sxx))
    t = float(stats.t.ppf(0.975, dof))
    p = float(2 * stats.t.sf(abs(slope) / se, dof)) if se > 0 else 0.0
    intercepts = frame.assign(a=y - slope * x).groupby("g")["a"].mean()
    return LawFit(
        slope=slope,
        intercept=float(intercepts.mean()),
        ci_low=slope - t * se,
        ci_high=slope + t * se,
        r2=1 - ssr / syy if syy > 0 else float("nan"),
        n=n,
        pvalue=p,
        form=form,
    )


def within_slope(y: np.ndarray, x: np.ndarray, codes: np.ndarray) -> float:
    """The within-group OLS slope of ``y`` on ``x`` (both demeaned per group ``codes``, integers
    from 0): :func:`fit_law_fixed_effects`'s estimator in numpy, for a thousand bootstrap refits.
    NaN when ``x`` does not vary within any group."""
    size = np.maximum(np.bincount(codes), 1)
    xd = x - (np.bincount(codes, x) / size)[codes]
    yd = y - (np.bincount(codes, y) / size)[codes]
    sxx = float(xd @ xd)
    return float(xd @ yd) / sxx if sxx > 0 else float("nan")


def law_cluster_ci(
    df: pd.DataFrame,
    group: str,
    cluster: str = "model",
    perf: str = "performance",
    m: str = "mui",
    form: str = "mui_vs_log_perf",
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float, int] | None:
    """A 95% percentile interval of the within-``group`` slope (:func:`fit_law_fixed_effects`)
    that resamples whole ``cluster`` s (models) with replacement, every point of a drawn model
    together, and refits each draw: one model's points on several tasks share the model, so they
    are not independent evidence, and the points' t interval is too narrow when models differ
    (:func:`kit.core.stats.bootstrap_groups_ci` with the models as clusters). Returns ``(low,
    high, number of clusters)``; None when the fit itself is undefined or fewer than 3 clusters
    (a bootstrap over 2 models has 3 distinct draws)."""
    from kit.core.stats import bootstrap_groups_ci

    if cluster not in df:
        raise ValueError(f"cluster={cluster!r} is not a column; columns: {', '.join(df.columns)}")
    if fit_law_fixed_effects(df, group, perf, m, form) is None:
        return None
    # the rows fit_law_fixed_effects uses (a group with one row adds nothing to the within slope)
    d = df[(df[m] > 0) & df[perf].notna() & ((df[perf] > 0) if form == "mui_vs_log_perf" else True)]
    n_clusters = int(d[cluster].nunique())
    if n_clusters < 3:
        return None
    y_col, x_col = (m, perf) if form == "mui_vs_log_perf" else (perf, m)
    y, x = d[y_col].to_numpy(float), np.log(d[x_col].to_numpy(float))
    codes = pd.factorize(d[group])[0]

    def slope(g: list[tuple[np.ndarray, ...]]) -> float:
        idx = g[0][0]
        return within_slope(y[idx], x[idx], codes[idx])

    _, lo, hi = bootstrap_groups_ci(
        slope,
        [(np.arange(len(d)),)],
        n_boot=n_boot,
        seed=seed,
        clusters=[d[cluster].astype(str).to_numpy()],
    )
    return lo, hi, n_clusters


def fe_record(
    fit: LawFit | None,
    group: str,
    n_groups: int,
    clustered: tuple[float, float, int] | None = None,
    cluster: str = "model",
) -> dict[str, Any]:
    """What ``results.json`` keeps of a fixed-effects fit (:func:`fit_law_fixed_effects`): slope,
    interval, within R^2 (``r2_within``; also as ``r2``), n and the number of groups; with
    ``clustered`` (:func:`law_cluster_ci`) also the interval that resamples ``cluster`` s
    (``cluster_ci_low``, ``cluster_ci_high``, ``n_clusters``), the one the law's claim reads."""
    if fit is None:
        return {"slope": None, "n": 0, "fixed_effects": group, "n_groups": n_groups}
    out = {
        "slope": fit.slope,
        "ci_low": fit.ci_low,
        "ci_high": fit.ci_high,
        "r2": fit.r2,
        "r2_within": fit.r2,
        "n": fit.n,
        "pvalue": fit.pvalue,
        "fixed_effects": group,
        "n_groups": n_groups,
    }
    if clustered is not None:
        out.update(
            cluster=cluster,
            cluster_ci_low=clustered[0],
            cluster_ci_high=clustered[1],
            n_clusters=clustered[2],
        )
    return out


def fe_law_record(
    df: pd.DataFrame, group: str, form: str = "mui_vs_log_perf", cluster: str = "model"
) -> dict[str, Any]:
    """:func:`fe_record` of the fit with a fixed effect per ``group`` and its interval clustered
    by ``cluster`` (:func:`law_cluster_ci`, 1000 draws, seed 0)."""
    return fe_record(
        fit_law_fixed_effects(df, group, form=form),
        group,
        int(df[group].nunique()),
        law_cluster_ci(df, group, cluster, form=form),
        cluster,
    )


def pur(performance: Numbers, mui: Numbers, alpha: float = 0.5) -> float | np.ndarray:
    """Performance-to-utilization ratio (Eq. 7): ``performance / MUI**alpha`` (alpha 0.5 reproduces
    Table 1 from Table 5)."""
    m = require_finite("pur mui", np.asarray(mui, dtype=float))
    if (m <= 0).any():
        raise ValueError("mui must be > 0 for PUR")
    if alpha < 0:
        raise ValueError(f"alpha={alpha} must be >= 0")
    out = require_finite("pur performance", np.asarray(performance, dtype=float)) / m**alpha
    return float(out) if out.ndim == 0 else out


def rank_agreement(
    scores_by_dataset: Mapping[str, Mapping[str, SupportsFloat]], reference_order: Sequence[str]
) -> dict[str, Any]:
    """Spearman and Kendall of a score against a reference ranking, per dataset and summarised.

    ``scores_by_dataset``: dataset -> {model: score} (higher = better); ``reference_order``:
    models best first. Models missing from a dataset are skipped there. Returns
    ``{"per_dataset": {ds: {"spearman", "kendall"}}, "spearman_mean", "kendall_mean"`` (in %),
    ``"spearman_var", "kendall_var"`` (population variance of the coefficients x 100, Table 1's
    Δ numbers), ``"n_datasets"``}``. A dataset where the score is constant has undefined
    coefficients (NaN) and is left out of the mean and variance.
    """
    from scipy.stats import kendalltau, spearmanr

    if len(set(reference_order)) != len(reference_order):
        raise ValueError("reference_order has duplicate models")
    ref_rank = {m: i for i, m in enumerate(reference_order)}
    per: dict[str, dict[str, float]] = {}
    for ds, scores in scores_by_dataset.items():
        models = [m for m in reference_order if m in scores]
        unknown = set(scores) - set(ref_rank)
        if unknown:
            raise ValueError(f"dataset {ds!r}: models {sorted(unknown)} are not in reference_order")
        if len(models) < 3:
            raise ValueError(f"dataset {ds!r}: need >= 3 models to rank, got {len(models)}")
        s = require_finite(
            f"rank_agreement scores of dataset {ds!r} ({', '.join(models)})",
            np.array([scores[m] for m in models], dtype=float),
        )
        r = -np.array([ref_rank[m] for m in models], dtype=float)  # higher = better on both sides
        if np.ptp(s) == 0:  # a constant score ranks nothing: undefined, not 0
            per[ds] = {"spearman": float("nan"), "kendall": float("nan")}
            continue
        per[ds] = {
            "spearman": float(spearmanr(s, r).statistic),  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
            "kendall": float(kendalltau(s, r).statistic),  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
        }
    sp = np.array([v["spearman"] for v in per.values()])
    kd = np.array([v["kendall"] for v in per.values()])
    if np.isnan(sp).all():
        nan = float("nan")
        return {
            "per_dataset": per,
            "spearman_mean": nan,
            "spearman_var": nan,
            "kendall_mean": nan,
            "kendall_var": nan,
            "n_datasets": 0,
        }
    return {
        "per_dataset": per,
        "spearman_mean": float(100 * np.nanmean(sp)),
        "spearman_var": float(100 * np.nanvar(sp)),
        "kendall_mean": float(100 * np.nanmean(kd)),
        "kendall_var": float(100 * np.nanvar(kd)),
        "n_datasets": int((~np.isnan(sp)).sum()),
    }


def law_fits(
    df: pd.DataFrame,
    by: str = "benchmark",
    perf: str = "performance",
    m: str = "mui",
    form: str = "mui_vs_log_perf",
) -> pd.DataFrame:
    """:func:`kit.mui.law.fit_law` per group of ``df`` (plus ``all`` pooled): slope, CI, R^2, n, and
    for the paper's form alpha, beta and the MUI the fit gives at P = 100."""
    rows = []
    groups = list(df.groupby(by)) + [("all", df)]
    for name, g in groups:
        g = g[(g[m] > 0) & g[perf].notna() & ((g[perf] > 0) if form == "mui_vs_log_perf" else True)]
        if len(g) < 3 or g[m].nunique() < 2 or g[perf].nunique() < 2:
            rows.append({by: name, "n": len(g)})
            continue
        f = fit_law(g[perf].to_numpy(), g[m].to_numpy(), form=form)
        rows.append(
            {
                by: name,
                "slope": f.slope,
                "intercept": f.intercept,
                "ci_low": f.ci_low,
                "ci_high": f.ci_high,
                "r2": f.r2,
                "pvalue": f.pvalue,
                "n": f.n,
                "form": form,
                "alpha": f.alpha,
                "beta": f.beta,
                "mui_at_100": f.mui_at(100.0),
            }
        )
    # every column even when no group could be fitted (e.g. 0% performance everywhere)
    cols = [
        by,
        "slope",
        "intercept",
        "ci_low",
        "ci_high",
        "r2",
        "pvalue",
        "n",
        "form",
        "alpha",
        "beta",
        "mui_at_100",
    ]
    return pd.DataFrame(rows, columns=cols)


def _by_dataset(
    df: pd.DataFrame, col: str, model: str = "model", dataset: str = "benchmark"
) -> dict[str, dict[str, float]]:
    d = df.dropna(subset=[col])
    return cast(dict, {b: dict(zip(g[model], g[col])) for b, g in d.groupby(dataset)})  # str keys


def default_models(world: str, include_contaminated: bool = True) -> list[str]:
    """Every zoo member except training checkpoints (``@step-``) and sparse fine-tunes (near-copies
    of base-m, for notebook 03); optionally without contaminated ones."""
    from kit import world as kworld

    names = [m for m in kworld.members(world, sparse=False) if "@" not in m]
    if not include_contaminated:
        names = [m for m in names if not any(t in m for t in ("-test-", "-syn-"))]
    return names


def evaluate_grid(
    models: Sequence[str],
    tasks: Sequence[str],
    n_items: int,
    n_fresh: int,
    world: str,
    device: str = "cpu",
    score: str = "score",
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    batch_size: int = 32,
    seed: int = 0,
    max_new_tokens: int = 1,
    max_batch_tokens: int = 8192,
    dtype: str | None = None,
    prompt_style: str = "instructed",
    loaded: Mapping[str, Any] | None = None,
    jobs: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Performance (test accuracy %), true capability (fresh accuracy %) and MUI per (model, task).

    Each model is a :class:`kit.subjects.Subject` (``prompt_style``: real benchmarks' answer-format
    instructions, :mod:`kit.data.prompts`). MUI is measured on its own greedy responses to the test
    items (Eq. 5): world models in ``batch_size`` rows, Hugging Face models teacher-forced in
    batches of ``max_batch_tokens`` padded tokens with a per-item cache. Fresh accuracy needs items
    the model never saw (the world's ``fresh`` split; NaN for real benchmarks). ``dtype``: Hugging
    Face models' weight dtype (world models are float32). Returns columns model, task, group,
    performance, fresh, mui, n_items, and per cell the accuracy's Wilson interval (``perf_low``,
    ``perf_high``, in %), chance, parse failures and truncated responses. ``loaded``: subjects the
    caller already holds, by name (the notebook's focus model), used instead of loading them again
    (a real model's load is most of a small run's time). ``jobs``: None measures the models here,
    one after another; else ``run_jobs``'s engine options (``engine_options(cfg)``), one job per
    model (:func:`kit.subjects.sweep.rows_per_model`: the same rows on every engine).
    """
    from kit.subjects.sweep import rows_per_model

    rows = rows_per_model(
        grid_rows,
        models,
        {"device": device, "world": world, "dtype": dtype, "prompt_style": prompt_style},
        {
            "tasks": list(tasks),
            "n_items": n_items,
            "n_fresh": n_fresh,
            "score": score,
            "threshold": threshold,
            "k": k,
            "frac": frac,
            "batch_size": batch_size,
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "max_batch_tokens": max_batch_tokens,
        },
        jobs,
        loaded,
    )
    return pd.DataFrame(rows)


def grid_rows(
    subject,
    name: str,
    tasks: Sequence[str],
    n_items: int,
    n_fresh: int,
    score: str,
    threshold: str,
    k: int | None,
    frac: float | None,
    batch_size: int,
    seed: int,
    max_new_tokens: int,
    max_batch_tokens: int,
) -> list[dict[str, Any]]:
    """:func:`evaluate_grid`'s rows of one model (``subject``, called ``name``)."""
    rows = []
    for task in tasks:
        ans = subject.answer(task, subject.items(task, "test", n_items, seed), max_new_tokens)
        replicates: dict[str, Any] = {}
        if subject.kind == "world":
            m = subject_mui(subject, ans, score, threshold, k, frac, batch_size, max_batch_tokens)
        else:  # the same MUI as subject_mui, from the per-item sets it unions, plus replicates
            replicates, m = _hf_cell_replicates(
                subject, ans, score, threshold, k, frac, batch_size, max_batch_tokens, seed
            )
        fresh = subject.fresh_items(task, n_fresh, seed) if n_fresh > 0 else None
        fresh_acc = (
            np.nan if fresh is None else 100 * subject.answer(task, fresh, max_new_tokens).accuracy
        )
        rows.append(
            {
                "model": name,
                "task": task,
                "group": subject.group(task),
                "performance": 100 * ans.accuracy,
                "fresh": fresh_acc,
                "mui": m,
                "n_items": ans.n,
                **ans.table_fields(),
                **replicates,
            }
        )
    return rows


def _hf_cell_replicates(
    subject, ans, score, threshold, k, frac, batch_size, max_batch_tokens, seed
) -> tuple[dict[str, Any], float]:
    """A Hugging Face model's cell: its MUI (the union of the cached per-item key neurons, as
    :func:`kit.mui.metric.subject_mui`) and paired bootstrap replicates of performance and MUI
    (:mod:`kit.mui.size_pair`: the same item draws for every model of the grid), with the item ids
    that pair them."""
    from kit.mui.metric import mui_from_items, per_item_key_neurons
    from kit.mui.size_pair import cell_replicates, item_boot_indices

    keys = per_item_key_neurons(
        subject, ans, score, threshold, k, frac, batch_size, max_batch_tokens
    )
    m = mui_from_items(subject.model, keys)
    cfg = subject.model.cfg
    if ans.n < 2:
        return {}, m
    perf_boot, mui_boot = cell_replicates(
        ans.correct, keys, cfg.n_layers * cfg.d_mlp, item_boot_indices(ans.n, seed=seed)
    )
    reps = {
        "item_ids": [str(it.id) for it in ans.items],
        "perf_boot": [round(x, 4) for x in perf_boot],
        "mui_boot": [round(x, 5) for x in mui_boot],
    }
    return reps, m


def pur_ranking(
    grid: pd.DataFrame, alpha: float = 0.5, reference_order: Sequence[str] | None = None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Rank agreement of performance and of PUR with the true order, per task as in Table 1.

    The true order is ``reference_order`` if given, else mean fresh-item accuracy over tasks
    (ties broken by name). Returns (summary, the grid with a ``pur`` column).
    """
    g = grid.copy()
    g["pur"] = cast(
        "list[float]",  # scalars in, floats out
        [pur(p, m, alpha) if m > 0 else np.nan for p, m in zip(g.performance, g.mui)],
    )
    if reference_order is None:
        true = (
            g.groupby("model")
            .fresh.mean()
            .reset_index()
            .sort_values(["fresh", "model"], ascending=[False, True])
        )
        ref = true.model.tolist()
    else:
        ref = list(reference_order)
    summary = {
        "reference_order": ref,
        "performance": rank_agreement(_by_dataset(g, "performance", dataset="task"), ref),
        "pur": rank_agreement(_by_dataset(g, "pur", dataset="task"), ref),
    }
    if reference_order is None:
        # a second truth: each task's own fresh-item order (ties broken by name)
        for col in ("performance", "pur"):
            coefs = {}
            for task, t in g.groupby("task"):
                order = t.sort_values(["fresh", "model"], ascending=[False, True]).model.tolist()
                coefs[task] = rank_agreement(cast(dict, {task: dict(zip(t.model, t[col]))}), order)[
                    "per_dataset"
                ][task]
            sp = np.array([c["spearman"] for c in coefs.values()])
            kd = np.array([c["kendall"] for c in coefs.values()])
            summary[f"{col}_vs_task_truth"] = {
                "per_dataset": coefs,
                "spearman_mean": float(100 * np.nanmean(sp)),
                "spearman_var": float(100 * np.nanvar(sp)),
                "kendall_mean": float(100 * np.nanmean(kd)),
                "kendall_var": float(100 * np.nanvar(kd)),
            }
    return summary, g


def fmt_fit(row: pd.Series | Mapping) -> str:
    if pd.isna(row.get("slope", np.nan)):
        return f"n={row.get('n', 0)}: too few points to fit"
    return (
        f"slope {row['slope']:.2f} [95% CI {row['ci_low']:.2f}, {row['ci_high']:.2f}], "
        f"R²={row['r2']:.2f}, n={int(row['n'])}"
    )


def base_models(models: Sequence[str]) -> list[str]:
    """Models that are not fine-tunes or checkpoints (no ``+`` or ``@`` in the name)."""
    return [m for m in models if "+" not in m and "@" not in m]


def _rank_row(label: str, summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "ranking by": label,
        "spearman": summary["spearman_mean"],
        "spearman_var": summary["spearman_var"],
        "kendall": summary["kendall_mean"],
        "kendall_var": summary["kendall_var"],
    }


def tiny_rank_section(
    grid: pd.DataFrame,
    fits_task: pd.DataFrame,
    fits_group: pd.DataFrame,
    alpha: float,
    reference_order: Sequence[str] | None,
    n_models: int,
    n_tasks: int,
    form: str = "mui_vs_log_perf",
):
    """§2 (tiny world): the law per task and group, pooled with a fixed effect per task
    (``tiny_law_fit_fe``), and PUR vs performance ranking against the fresh-item truth. The
    verdicts are the claims' (:mod:`kit.mui.claims`); the findings here state numbers only."""
    from kit.core.findings import Section

    rank_summary, grid_pur = pur_ranking(grid, alpha, reference_order)
    keys = [
        k
        for k in ("performance", "pur", "performance_vs_task_truth", "pur_vs_task_truth")
        if k in rank_summary
    ]
    table = pd.DataFrame([_rank_row(k, rank_summary[k]) for k in keys])
    record: dict[str, Any] = dict(
        tiny_law_fit_per_task={
            r.task: {k: r.get(k) for k in ("slope", "ci_low", "ci_high", "r2", "n")}
            for _, r in fits_task.iterrows()
        },
        tiny_law_fit_fe=fe_law_record(grid, "task", form=form),
        tiny_law_fit_per_group={
            r.group: {k: r.get(k) for k in ("slope", "ci_low", "ci_high", "r2", "n")}
            for _, r in fits_group.iterrows()
        },
        tiny_rank_agreement={
            k: {kk: vv for kk, vv in rank_summary[k].items() if kk != "per_dataset"} for k in keys
        },
        tiny_rank_per_task={k: rank_summary[k]["per_dataset"] for k in keys},
        tiny_reference_order=rank_summary["reference_order"],
        tiny_grid=grid_pur.to_dict(orient="records"),
    )
    pooled = fits_task[fits_task.task == "all"].iloc[0]
    per_task = fits_task[fits_task.task != "all"]
    neg, n_fit = int((per_task.slope < 0).sum()), int(per_task.slope.notna().sum())
    perf, pur_ = rank_summary["performance"], rank_summary["pur"]
    own = (
        "; against each task's own fresh-item order: performance "
        f"{rank_summary['performance_vs_task_truth']['spearman_mean']:.1f}, PUR "
        f"{rank_summary['pur_vs_task_truth']['spearman_mean']:.1f}"
        if "pur_vs_task_truth" in rank_summary
        else ""
    )
    findings = [
        f"Tiny world ({n_models} models x {n_tasks} tasks): pooled law fit {fmt_fit(pooled)} "
        f"(no task effects; with a fixed effect per task: {fmt_fit(record['tiny_law_fit_fe'])}, R² "
        f"within); {neg} of {n_fit} per-task slopes are negative (the paper's law predicts "
        "negative; "
        + (
            "form MUI = -α ln P + β, so cells with 0% performance, outside ln P, are left out)."
            if fits_task.get("form", pd.Series(["mui_vs_log_perf"]))
            .dropna()
            .eq("mui_vs_log_perf")
            .all()
            else "form performance = a + b ln MUI)."
        ),
        f"Tiny-world ranking vs fresh-item truth: performance Spearman {perf['spearman_mean']:.1f} "
        f"(Kendall {perf['kendall_mean']:.1f}), PUR Spearman {pur_['spearman_mean']:.1f} "
        f"(Kendall {pur_['kendall_mean']:.1f}){own}.",
    ]
    return Section(
        record=record,
        findings=findings,
        tables={"rank": table},
        data={"reference_order": rank_summary["reference_order"]},
    )


def focus_model(models: Sequence[str], preferred: str | None = None) -> str:
    """The model of sections 3.6-3.8: ``preferred``, else ``zoo/base-m`` if listed, else the
    first."""
    if preferred:
        return preferred
    return "zoo/base-m" if "zoo/base-m" in models else models[0]
