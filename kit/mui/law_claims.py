"""Claims on the Utility Law's sign and PUR's ranking (seed 000, §2 and §3.5, notebook 01).

One law fit's claim (:func:`_fit_claim`: the slope's sign, also the multi-token families' in
:mod:`kit.mui.experiment_claims`), the re-analyses of the paper's printed tables (the law on
Table 5, Table 1's PUR recomputed within its rounding band: :func:`published_claims`) and the law
grid's claims (pooled fit with task effects, per-task signs, corollary 3's ranking). Every verdict
comes from :func:`kit.core.claims.claim`; notebook 01's claim list is assembled in
:mod:`kit.mui.claims`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from kit.core.claims import Claim, claim
from kit.core.stats import mean_diff_ci, wilson_interval

PAPER = "000"

TABLE5 = "the paper's Table 5 (performance and neuron MUI printed to one decimal)"
TABLE1 = "the paper's Tables 1 and 5 (PUR, performance and MUI printed to one decimal)"


def _fit_claim(
    id: str,
    fit: Mapping[str, Any] | None,
    where: str,
    figure: str | None,
    form: str = "mui_vs_log_perf",
    caveat: str = "",
    kind: str = "reproduction",
    rests_on: str = "",
    points: str = "points",
) -> Claim:
    """The law's sign on one fit. Both forms predict a negative slope: the paper's ``MUI = -alpha ln
    P
    + beta`` (slope -alpha) and the inverse ``P = a + b ln MUI`` (slope b). ``fit``: slope, ci_low,
    ci_high, r2 (``r2_within`` for a fixed-effects fit), n; a missing slope is "not testable". A
    fit with ``cluster_ci_low`` (:func:`kit.mui.law.law_cluster_ci`) is read on that interval,
    which resamples models, not points; the points' t interval stays in ``extra``. ``points``: what
    one point of a plain fit is (the unit of its OLS interval)."""
    fit = fit or {}
    r2 = fit.get("r2")
    within = "fixed_effects" in fit
    r2_name = "R² within" if within else "R²"
    what = (
        "MUI falls as performance rises (OLS slope of MUI % on ln P, i.e. -alpha, < 0"
        if form == "mui_vs_log_perf"
        else "performance falls as MUI rises (OLS slope of performance % on ln MUI < 0"
    )
    statement = (
        f"Utility Law, {where}: {what}; {r2_name} {r2:.2f}, n {fit.get('n')})"
        if r2 is not None
        else f"Utility Law, {where}: {what})"
    )
    if fit.get("slope") is None:
        return claim(
            PAPER,
            "§2, Fig. 3",
            id,
            statement,
            None,
            kind=kind,
            rests_on=rests_on,
            figure=figure,
            not_testable=fit.get("not_testable") or f"too few points to fit (n {fit.get('n', 0)})",
        )
    weak = (
        ""
        if r2 is None or r2 >= 0.3
        else f"weak fit: {r2_name} {r2:.2f}, the law explains little of the spread"
    )
    clustered = fit.get("cluster_ci_low") is not None
    if clustered:  # points of one model are not independent: the interval resamples models
        ci = (fit["cluster_ci_low"], fit["cluster_ci_high"])
        how = (
            f"percentile bootstrap over {fit.get('n_clusters')} {fit.get('cluster', 'model')}s "
            f"(all points of a {fit.get('cluster', 'model')} drawn together), refitting the "
            f"within-{fit['fixed_effects']} slope (fixed effect per {fit['fixed_effects']}, "
            f"{fit.get('n_groups')} groups)"
        )
        unit = f"{fit.get('cluster', 'model')}s"
    else:
        ci = (fit.get("ci_low"), fit.get("ci_high")) if fit.get("ci_low") is not None else None
        how = (
            "t 95% CI of the within-group slope (fixed effect per "
            f"{fit['fixed_effects']}, {fit.get('n_groups')} groups)"
            if within
            else "OLS 95% CI of the slope (statsmodels)"
        )
        unit = f"{points} (not clustered by model)" if within else points
    # the points' t interval, beside the clustered one the verdict reads
    beside: dict[str, Any] = (
        {"points_ci": [fit.get("ci_low"), fit.get("ci_high")]} if clustered else {}
    )
    return claim(
        PAPER,
        "§2, Fig. 3",
        id,
        statement,
        fit.get("slope"),
        ci=ci,
        null=0.0,
        null_how="no relation (slope 0)",
        direction="less",
        paper_value="-4.632 (MUI-Eval's figure: MUI = -4.632 ln P + 28.305)"
        if form == "mui_vs_log_perf"
        else "negative (inverse log relation)",
        interval_how=how,
        unit=unit,
        figure=figure,
        caveat="; ".join(x for x in (caveat, weak) if x),
        kind=kind,
        rests_on=rests_on,
        r2=r2,
        **beside,
    )


def published_claims(results: Mapping[str, Any]) -> list[Claim]:
    """Re-analyses of the paper's printed tables: the law on Table 5 (Figure 3's one point per
    model; pooled over benchmarks with a fixed effect per benchmark) and Table 1's PUR recomputed
    from Table 5 within the rounding band of its one-decimal numbers."""
    pooled = results.get("published_law_fit_fe")
    caveat = ""
    if pooled is None:  # a results.json from before the fixed-effects fit
        pooled, caveat = (
            results.get("published_law_fit", {}).get("all"),
            "pooled without benchmark effects",
        )
    out = [
        _fit_claim(
            "law.published_per_model",
            results.get("published_law_fit_per_model"),
            "published Table 5, Figure 3's view (one point per general model)",
            "fig3_published_per_model",
            kind="re-analysis",
            rests_on=TABLE5 + ", 8 general models",
            points="models (one point each)",
        ),
        _fit_claim(
            "law.published_pooled",
            pooled,
            "published Table 5, the 8 general models pooled over benchmarks with a fixed effect "
            "per benchmark",
            "fig2_published_law_general",
            caveat=caveat,
            kind="re-analysis",
            rests_on=TABLE5 + ", 8 general models",
        ),
    ]
    ratio = results.get("published_pur_max_band_ratio")
    n_cells = results.get("published_pur_cells_recomputed")
    out.append(
        claim(
            PAPER,
            "Table 1",
            "pur.table1_recomputed",
            "Table 1's PUR follows from Table 5 with alpha 0.5: largest |recomputed - printed| "
            f"over {n_cells} cells, as a share of each cell's rounding band "
            f"({results.get('published_pur_outside_band')}"
            " cells outside; max |diff| "
            f"{results.get('published_pur_max_abs_diff', float('nan')):.3f})",
            ratio,
            ci=None if ratio is None else (ratio, ratio),
            null_range=(0.0, 1.0),
            direction="within",
            null_how="inside the band: +-0.05 on Table 5's performance and MUI propagated through "
            "P / MUI^0.5, plus +-0.05 on the printed PUR (share <= 1)",
            paper_value="Table 1 PUR",
            interval_how="deterministic recomputation from printed values (no sampling noise)",
            figure="pur_recomputed_vs_table1",
            kind="re-analysis",
            rests_on=TABLE1,
            not_testable=None if ratio is not None else "no PUR cell recomputed",
        )
    )
    return out


def _grid_law_claims(
    results: Mapping[str, Any], form: str, grid: str, seed: int, n_boot: int
) -> list[Claim]:
    """The law across the grid's models (pooled with task effects; per-task signs) and PUR's
    ranking."""
    out = []
    tiny = results.get("tiny_law_fit_fe")
    caveat = ""
    if tiny is None:
        tiny, caveat = (
            results.get("tiny_law_fit_per_task", {}).get("all"),
            "pooled without task effects",
        )
    out.append(
        _fit_claim(
            "law.tiny_pooled",
            tiny,
            "law grid, pooled over tasks with a fixed effect per task",
            "tiny_law_per_task",
            form=form,
            caveat=caveat,
            rests_on=grid,
        )
    )
    per_task = {
        k: v
        for k, v in results.get("tiny_law_fit_per_task", {}).items()
        if k != "all" and v.get("slope") is not None
    }
    k = sum(v["slope"] < 0 for v in per_task.values())
    share, lo, hi = wilson_interval(k, len(per_task)) if per_task else (None, None, None)
    out.append(
        claim(
            PAPER,
            "§2, Fig. 3",
            "law.tiny_per_task_sign",
            f"Utility Law per task: share of per-task slopes that are negative ({k} of "
            f"{len(per_task)})",
            share,
            ci=None if share is None else (lo, hi),
            null=0.5,
            null_how="sign of a slope at random (1/2)",
            direction="greater",
            paper_value="negative on every benchmark",
            interval_how="Wilson 95% interval over tasks",
            figure="tiny_law_per_task",
            rests_on=grid,
            not_testable=None if per_task else "no task has a fitted slope",
        )
    )
    out.append(_ranking_claim(results.get("tiny_rank_per_task", {}), seed, n_boot, grid))
    return out


def _ranking_claim(rank: Mapping[str, Any], seed: int, n_boot: int, rests_on: str) -> Claim:
    statement = (
        "Corollary 3: PUR ranks models closer to the true order than performance (mean over tasks "
        "of Spearman(PUR) - Spearman(performance) against the fresh-item truth)"
    )
    if "pur" not in rank or "performance" not in rank:
        return claim(
            PAPER,
            "§3.5, Table 1 (corollary 3)",
            "pur.ranking_vs_performance",
            statement,
            None,
            not_testable="no per-task rank agreement recorded",
            rests_on=rests_on,
        )
    tasks = sorted(set(rank["pur"]) & set(rank["performance"]))
    pur = np.array([rank["pur"][t]["spearman"] for t in tasks], dtype=float)
    perf = np.array([rank["performance"][t]["spearman"] for t in tasks], dtype=float)
    ok = np.isfinite(pur) & np.isfinite(perf)
    if ok.sum() < 2:
        return claim(
            PAPER,
            "§3.5, Table 1 (corollary 3)",
            "pur.ranking_vs_performance",
            statement,
            None,
            not_testable=f"{int(ok.sum())} task(s) with a defined Spearman on both sides",
            rests_on=rests_on,
        )
    est = mean_diff_ci(pur[ok], perf[ok], n_boot=n_boot, seed=seed)
    return claim(
        PAPER,
        "§3.5, Table 1 (corollary 3)",
        "pur.ranking_vs_performance",
        statement,
        est[0],
        ci=est[1:],
        null=0.0,
        direction="greater",
        null_how="no gain (0)",
        paper_value="88.6 vs 86.4 Spearman (+2.2)",
        interval_how=f"paired bootstrap over {int(ok.sum())} tasks",
        rests_on=rests_on,
    )
