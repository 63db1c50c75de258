"""Seed 000's published numbers (``../shared/paper_tables``), re-read and recomputed.

Notebook 01: Table 5 (MUI per model and benchmark), the law on it (Figure 3's view), PUR from
Table 5 beside Table 1, Table 1's rank agreement, B.6's Tables 11-17. Notebook 02's tables (the
OLMo checkpoints, specialised models and contamination) live in
:mod:`kit.mui.published_trajectories`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from kit.mui.law import (
    LAW_FORMS,
    PAPER_LAW,
    _by_dataset,
    _rank_row,
    fe_law_record,
    fit_law,
    fmt_fit,
    law_fits,
    pur,
    rank_agreement,
)
from kit.mui.plots import plot_law

PUBLISHED_GENERAL_MODELS = (
    "Vicuna-7B",
    "Llama-2-7B-Chat",
    "Qwen1.5-7B-Chat",
    "Llama-3.1-8B-Instruct",
    "Qwen2.5-7B-Instruct",
    "Gemma2-9B-Instruct",
    "DeepSeek-Llama3.1-8B",
    "DeepSeek-Qwen2.5-7B",
)
"""Table 5's general 7-9B models: §3.2 excludes specialised ones (CodeLlama, Qwen2.5-Coder/Math) and
Figure 3 shows these eight; the larger sizes (13B-33B) are Table 5's scaling rows."""

FIGURE3_EXCLUDED = ("MMLU",)
"""§3.2: Figure 3 aggregates every benchmark except MMLU ("due to its high inference cost")."""


def published_mui_table(models: str | Sequence[str] = "all") -> pd.DataFrame:
    """Table 5 (App. B.1): model, benchmark, benchmark_category, performance, mui.

    ``models``: ``"all"`` (18 models), ``"general"`` (:data:`PUBLISHED_GENERAL_MODELS`, the set of
    §3.2 / Figure 3) or a list of Table 5 names."""
    from kit.data.paper_tables import load_table

    t = load_table("000_table05_neuron_mui_main").dropna(subset=["performance", "mui"])
    if isinstance(models, str):
        if models not in ("all", "general"):
            raise ValueError(
                f"models={models!r}; allowed values: all, general, or a list of Table 5 model names"
            )
        if models == "all":
            return t
        models = PUBLISHED_GENERAL_MODELS
    unknown = set(models) - set(t.model)
    if unknown:
        raise ValueError(
            f"models {sorted(unknown)} are not in Table 5; allowed: "
            f"{', '.join(sorted(set(t.model)))}"
        )
    return t[t.model.isin(list(models))].reset_index(drop=True)


def published_per_model(
    df: pd.DataFrame, exclude: Sequence[str] = FIGURE3_EXCLUDED
) -> pd.DataFrame:
    """Figure 3's view, one point per model: mean performance and mean MUI over the benchmarks not
    in ``exclude``. Figure 3's MUI is the union over all those benchmarks' samples, which Table 5
    cannot give; the mean of per-benchmark MUI is the nearest the printed numbers allow (so the
    absolute MUI differs from Figure 3's, the ordering need not)."""
    d = df[~df.benchmark.isin(list(exclude))]
    out = d.groupby("model", sort=False)[["performance", "mui"]].mean().reset_index()
    return out.assign(
        benchmark="per model (mean over " + ", ".join(sorted(d.benchmark.unique())) + ")"
    )


def name_key(name: str) -> str:
    """Model-name key that ignores case, spaces and punctuation: Table 1's ``Gemma-2-9B-Instruct``
    and Table 5's ``Gemma2-9B-Instruct`` are the same model."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def published_pur_comparison(alpha: float = 0.5) -> pd.DataFrame:
    """PUR recomputed from Table 5 (perf / MUI^alpha) beside Table 1's printed PUR.

    Models are matched by :func:`name_key` (the two tables spell Gemma differently). Table 1's
    Llama-3-8B-Instruct is not in Table 5: its recomputed value is NaN.
    """
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    rows = t1[t1.row_type == "model"][
        ["row_label", "benchmark", "perf_value", "pur_value", "reference_rank"]
    ]
    t5 = published_mui_table()[["model", "benchmark", "performance", "mui"]]
    out = (
        rows.assign(key=rows.row_label.map(name_key))
        .merge(
            t5.assign(key=t5.model.map(name_key)).rename(columns={"model": "table5_model"}),
            on=["key", "benchmark"],
            how="left",
        )
        .drop(columns="key")
    )
    out = out.rename(
        columns={"row_label": "model", "pur_value": "pur_paper", "perf_value": "perf_table1"}
    )
    ok = out.mui.notna()
    out["pur_ours"] = np.nan
    out.loc[ok, "pur_ours"] = pur(
        out.loc[ok, "performance"].to_numpy(), out.loc[ok, "mui"].to_numpy(), alpha
    )
    out["diff"] = out.pur_ours - out.pur_paper
    return out


PRINTED_HALF_UNIT = 0.05
"""Tables 1 and 5 print performance, MUI and PUR to one decimal: a printed value stands for any
value within +-0.05 of it."""


def pur_rounding_band(
    comparison: pd.DataFrame, alpha: float = 0.5, half_unit: float = PRINTED_HALF_UNIT
) -> pd.DataFrame:
    """Each recomputed PUR cell's rounding band: Table 5's performance P and MUI M are
    printed to one decimal, so the true PUR lies in ``[(P - h) / (M + h)^alpha, (P + h) / (M -
    h)^alpha]`` (``h`` = ``half_unit``), and Table 1's printed PUR is itself rounded by ``h``. A
    printed PUR is consistent with Table 5 when it lies within ``h`` of that band.

    ``comparison``: :func:`published_pur_comparison`'s frame. Adds ``pur_low``, ``pur_high`` (the
    band) and ``band_ratio``: |printed - recomputed| over the room the band leaves on that side
    (``<= 1``: consistent; ``> 1``: the printed value cannot come from Table 5's printed numbers).
    NaN where Table 5 lacks the model.
    """
    out = comparison.copy()
    p, m = out["performance"].to_numpy(float), out["mui"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["pur_low"] = np.maximum(p - half_unit, 0) / (m + half_unit) ** alpha
        out["pur_high"] = (p + half_unit) / np.maximum(m - half_unit, 1e-12) ** alpha
        gap = out["pur_paper"] - out["pur_ours"]
        room = np.where(
            gap >= 0, out["pur_high"] - out["pur_ours"], out["pur_ours"] - out["pur_low"]
        )
        out["band_ratio"] = gap.abs() / (room + half_unit)
    return out


B6_NEURON_TABLES = {
    "selected (Table 11)": "000_table11_b6_pos1_neuron_mui_selected_method",
    "Table 12": "000_table12_b6_pos2_neuron_mui_alt_method",
    "Table 13": "000_table13_b6_pos3_neuron_mui_alt_method",
    "Table 14": "000_table14_b6_pos4_neuron_mui_alt_method",
}

B6_SAE_TABLES = {
    "selected (Table 15)": "000_table15_b6_pos5_sae_mui_selected_threshold",
    "Table 16": "000_table16_b6_pos6_sae_mui_alt_threshold",
    "Table 17": "000_table17_b6_pos7_sae_mui_alt_threshold",
}


def published_b6_correlations() -> pd.DataFrame:
    """B.6.3 from the printed Tables 11-17: Spearman of each alternative method's MUI with the
    selected method's, over all (model, benchmark) cells and as the mean of per-benchmark Spearmans
    across models (the paper does not say which it averaged). Columns: family, method, pooled,
    per_benchmark_mean, n_cells, quoted (the paper's 0.723 / 0.984, for Tables 13-14 and 16-17)."""
    from scipy.stats import spearmanr

    from kit.data.paper_tables import load_table

    text = load_table("000_text_numbers")
    quoted = {
        fam: float(text[text.quantity.str.contains(pat)].value.iloc[0])
        for fam, pat in (
            ("neuron", "alternative neuron methods"),
            ("sae", "SAE MUI at alternative"),
        )
    }
    rows = []
    for fam, tables in (("neuron", B6_NEURON_TABLES), ("sae", B6_SAE_TABLES)):
        frames = {k: load_table(v).set_index(["model", "benchmark"]).mui for k, v in tables.items()}
        ref_name = next(iter(frames))
        ref = frames[ref_name]
        for name, col in list(frames.items())[1:]:
            both = pd.concat([ref, col], axis=1, keys=["ref", "alt"]).dropna()
            per_b = [
                spearmanr(g.ref, g.alt).statistic  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
                for _, g in both.groupby(level="benchmark")
                if g.ref.nunique() > 1 and g.alt.nunique() > 1
            ]
            rows.append(
                {
                    "family": fam,
                    "method": name,
                    "vs": ref_name,
                    "pooled": float(spearmanr(both.ref, both.alt).statistic),  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
                    "per_benchmark_mean": float(np.mean(per_b)) if per_b else np.nan,
                    "n_cells": len(both),
                    "quoted": quoted[fam]
                    if name in ("Table 13", "Table 14", "Table 16", "Table 17")
                    else np.nan,
                }
            )
    return pd.DataFrame(rows)


def published_rank_agreement(comparison: pd.DataFrame) -> dict[str, Any]:
    """Spearman/Kendall vs Table 1's reference order of: performance and printed PUR (all nine
    models), and of recomputed PUR and performance over the models Table 5 covers."""
    ref = comparison.drop_duplicates("model").sort_values("reference_rank").model.tolist()
    covered = comparison.dropna(subset=["pur_ours"])
    ref_cov = [m for m in ref if m in set(covered.model)]
    return {
        "perf_table1": rank_agreement(_by_dataset(comparison, "perf_table1"), ref),
        "pur_table1": rank_agreement(_by_dataset(comparison, "pur_paper"), ref),
        "perf_covered": rank_agreement(_by_dataset(covered, "perf_table1"), ref_cov),
        "pur_recomputed": rank_agreement(_by_dataset(covered, "pur_ours"), ref_cov),
        "n_models": len(ref),
        "n_models_covered": len(ref_cov),
    }


def printed_rank_summary() -> pd.DataFrame:
    """Table 1's printed correlation rows (Spearman/Kendall, x100) as a small table."""
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    return t1[t1.row_type == "correlation"][
        ["row_label", "benchmark", "perf_value", "pur_value", "perf_variance", "pur_variance"]
    ].reset_index(drop=True)


def published_law_section():
    """The Utility Law on Table 5 in the paper's form ``MUI = -alpha ln P + beta`` (and
    the inverse regression as an option), on §3.2's 8 general models and on all 18, per benchmark
    and per model (Figure 3's view), beside the constants MUI-Eval's figure prints (4.632 / 28.305 /
    6.97%)."""
    from kit.core.findings import Section

    general, every = published_mui_table("general"), published_mui_table("all")
    per_model = published_per_model(general)
    fits = {}
    for form in LAW_FORMS:
        fits[("general", form)] = law_fits(general, form=form)
        fits[("all", form)] = law_fits(every, form=form)
    pm = fit_law(per_model.performance.to_numpy(), per_model.mui.to_numpy())
    pm_row = {
        "benchmark": per_model.benchmark.iloc[0],
        "slope": pm.slope,
        "intercept": pm.intercept,
        "ci_low": pm.ci_low,
        "ci_high": pm.ci_high,
        "r2": pm.r2,
        "pvalue": pm.pvalue,
        "n": pm.n,
        "form": pm.form,
        "alpha": pm.alpha,
        "beta": pm.beta,
        "mui_at_100": pm.mui_at(100.0),
    }
    paper = PAPER_LAW
    summary = []
    for (models, form), f in fits.items():
        b = f[f.benchmark != "all"].dropna(subset=["slope"])
        summary.append(
            {
                "models": models,
                "form": form,
                "negative_slopes": int((b.slope < 0).sum()),
                "benchmarks": len(b),
                "ci_below_0": int((b.ci_high < 0).sum()),
                "median_r2": float(b.r2.median()),
            }
        )
    summary = pd.DataFrame(summary)
    g = summary[(summary.models == "general") & (summary.form == "mui_vs_log_perf")].iloc[0]
    a = summary[(summary.models == "all") & (summary.form == "mui_vs_log_perf")].iloc[0]
    fe = fe_law_record(general, "benchmark")
    findings = [
        "Published law (Table 5, the paper's form MUI = -α ln P + β): on §3.2's "
        f"{len(PUBLISHED_GENERAL_MODELS)} general models {g.negative_slopes} of {g.benchmarks} "
        f"per-benchmark slopes are negative ({g.ci_below_0} with 95% CI below 0, median R² "
        f"{g.median_r2:.2f}); on all 18 models of Table 5 (specialised and larger ones included, "
        f"which §3.2 excludes) {a.negative_slopes} of {a.benchmarks} (median R² "
        f"{a.median_r2:.2f}).",
        "Figure 3's view (one point per general model, mean over the benchmarks except MMLU): α = "
        f"{pm.alpha:.3f} [95% CI {-pm.ci_high:.3f}, {-pm.ci_low:.3f}], β = {pm.beta:.3f}, R² = "
        f"{pm.r2:.2f}, n = {pm.n}, MUI at P = 100: {pm.mui_at(100):.2f}% (its CI "
        f"{'excludes' if pm.ci_high < 0 else 'reaches'} 0). MUI-Eval's figure prints α = "
        f"{paper['alpha']}, β = {paper['beta']}, {paper['mui_at_100']}% (published, not computed "
        "here); its MUI is the union over all benchmarks' samples, which Table 5's per-benchmark "
        "values cannot give, so our α/β (from mean MUI) are on another scale.",
        f"Pooled over the benchmarks with a fixed effect per benchmark (Table 5, general models): "
        f"{fmt_fit(fe)} (R² within the benchmarks).",
    ]
    record = dict(
        published_law_fit={
            r.benchmark: {
                k: r.get(k)
                for k in ("slope", "ci_low", "ci_high", "r2", "n", "alpha", "beta", "mui_at_100")
            }
            for _, r in fits[("general", "mui_vs_log_perf")].iterrows()
        },
        published_law_fit_fe=fe,
        published_law_fit_per_model={
            k: pm_row[k]
            for k in ("slope", "ci_low", "ci_high", "r2", "n", "alpha", "beta", "mui_at_100")
        },
        published_law_summary=summary.to_dict(orient="records"),
        published_law_paper_constants=dict(paper),
    )
    figs = {
        "fig2_published_law_general": plot_law(
            general,
            fits[("general", "mui_vs_log_perf")],
            by="benchmark",
            title="Table 5, 8 general models: MUI = -α ln P + β per benchmark",
        ),
        "fig3_published_per_model": plot_law(
            per_model,
            pd.DataFrame([pm_row]),
            by="benchmark",
            ncols=1,
            title="Figure 3 view: one point per general model",
        ),
    }
    tables = {
        "summary": summary,
        "general": fits[("general", "mui_vs_log_perf")],
        "inverse_general": fits[("general", "perf_vs_log_mui")],
        "all_models": fits[("all", "mui_vs_log_perf")],
        "per_model_points": per_model,
        "per_model_fit": pd.DataFrame([pm_row]),
    }
    return Section(record=record, findings=findings, tables=tables, figures=figs)


def published_rank_section(comparison: pd.DataFrame, alpha: float):
    """§1 (Table 1, Table 5): rank agreement of performance and PUR with Table 1's reference order,
    recomputed from Table 1's values and from Table 5, beside the printed summary."""
    from kit.core.findings import Section

    covered = comparison.dropna(subset=["pur_ours"])
    ranks = published_rank_agreement(comparison)
    printed = printed_rank_summary()

    def avg(name: str, col: str) -> float:
        return float(
            printed[(printed.row_label == name) & (printed.benchmark == "Average")][col].iloc[0]
        )

    n_cov = ranks["n_models_covered"]
    rows = [
        _rank_row("performance (Table 1 values, 9 models)", ranks["perf_table1"]),
        _rank_row("PUR (Table 1 values, 9 models)", ranks["pur_table1"]),
        _rank_row(f"performance ({n_cov} models in Table 5)", ranks["perf_covered"]),
        _rank_row(f"PUR recomputed from Table 5 ({n_cov} models)", ranks["pur_recomputed"]),
    ]
    for who, pre in (("performance", "perf"), ("PUR", "pur")):
        rows.append(
            {
                "ranking by": f"paper, {who} (printed)",
                "spearman": avg("Spearman", f"{pre}_value"),
                "spearman_var": avg("Spearman", f"{pre}_variance"),
                "kendall": avg("Kendall", f"{pre}_value"),
                "kendall_var": avg("Kendall", f"{pre}_variance"),
            }
        )
    per_ds = pd.DataFrame(
        {
            k: {ds: 100 * v["kendall"] for ds, v in ranks[k]["per_dataset"].items()}
            for k in ("perf_table1", "pur_table1")
        }
    )
    kendall_rows = printed[
        (printed.row_label == "Kendall") & (printed.benchmark != "Average")
    ].set_index("benchmark")
    per_ds["printed_perf"] = kendall_rows.perf_value
    per_ds["printed_pur"] = kendall_rows.pur_value
    band = pur_rounding_band(covered, alpha)
    record = dict(
        published_pur_max_band_ratio=float(band["band_ratio"].max()),
        published_pur_outside_band=int((band["band_ratio"] > 1).sum()),
        published_pur_max_abs_diff=float(covered["diff"].abs().max()),
        published_pur_cells_recomputed=int(len(covered)),
        published_rank_agreement={
            k: {kk: vv for kk, vv in v.items() if kk != "per_dataset"} if isinstance(v, dict) else v
            for k, v in ranks.items()
        },
    )
    pt, pu = ranks["perf_table1"], ranks["pur_table1"]
    missing = sorted(set(comparison.model) - set(covered.model))
    findings = [
        f"PUR with alpha={alpha} recomputed from Table 5 matches Table 1 on {len(covered)} of "
        f"{len(comparison)} cells (names matched case/punctuation-blind: Table 1's "
        "Gemma-2-9B-Instruct is Table 5's Gemma2-9B-Instruct), max |diff| "
        f"{covered['diff'].abs().max():.3f}; with Table 5's one-decimal rounding (+-0.05 on "
        f"performance, MUI and the printed PUR) propagated, {int((band['band_ratio'] > 1).sum())} "
        f"of {len(band)} cells fall outside their band (largest |diff| / band "
        f"{band['band_ratio'].max():.2f}); not in Table 5: {', '.join(missing) or 'none'}.",
        "From Table 1's per-model values we get Spearman "
        f"{pt['spearman_mean']:.1f}/{pu['spearman_mean']:.1f} (perf/PUR, var "
        f"{pt['spearman_var']:.1f}/{pu['spearman_var']:.1f}) and Kendall "
        f"{pt['kendall_mean']:.1f}/{pu['kendall_mean']:.1f} (var "
        f"{pt['kendall_var']:.1f}/{pu['kendall_var']:.1f}); paper prints 86.4/88.6 (1.8/1.0) and "
        "76.9/80.6 (3.2/1.2). Table 1's printed per-benchmark Kendall cells do not all match "
        "the values recomputed from its own rows (see the table below).",
    ]
    return Section(
        record=record,
        findings=findings,
        tables={"rank": pd.DataFrame(rows), "kendall_per_benchmark": per_ds},
    )
