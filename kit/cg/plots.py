"""Figures of the Competency Gaps notebook (paper Figs. 3, 4, 12, 13, 14), one function each.

Each takes plain arrays / DataFrames and returns a matplotlib Figure; saving is the caller's
(``run.save_figure``).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from kit.cg.metrics import EPSILON
from kit.core.figures import heatmap, new_figure, panel_figure, plain_log_ticks


def _log_values(x: np.ndarray, eps: float = EPSILON) -> np.ndarray:
    x = np.asarray(x, float)
    return np.log10(x[x >= eps])


def coverage_distribution(x_by_name: Mapping[str, np.ndarray], eps: float = EPSILON):
    """Fig. 3: distribution of X_bench (log10, missing concepts excluded), one curve per SAE."""
    fig, ax = new_figure("column", 2.6)
    for name, x in x_by_name.items():
        v = _log_values(x, eps)
        ax.hist(
            v, bins=50, histtype="step", density=True, label=f"{name} (median {np.median(x):.2f})"
        )
    ax.set_xlabel("log10 X_bench(c)  (1 = average concept)")
    ax.set_ylabel("density")
    ax.set_title("Cross-benchmark coverage")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def performance_distribution(x_by_name: Mapping[str, np.ndarray]):
    """Fig. 4: distribution of X_model / chi_model over the defined concepts, one curve per
    entry."""
    fig, ax = new_figure("column", 2.6)
    bins = np.linspace(0, 1, 41)
    for name, x in x_by_name.items():
        x = np.asarray(x, float)
        x = x[~np.isnan(x)]
        ax.hist(
            x,
            bins=list(bins),
            histtype="step",
            density=True,
            label=f"{name} (median {np.median(x):.2f})",
        )
    ax.set_xlabel("X_model(c)  (activation-weighted accuracy)")
    ax.set_ylabel("density")
    ax.set_title("Model performance per concept")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def per_benchmark_coverage(chi_bench: pd.DataFrame, eps: float = EPSILON):
    """Fig. 12: per-benchmark distributions of chi_bench (log10, missing excluded); red: median."""
    return _per_benchmark_hists(
        {b: _log_values(chi_bench[b].to_numpy(), eps) for b in chi_bench.columns},
        40,
        "C0",
        "log10 chi_bench(b, c)",
        "Coverage within individual benchmarks",
    )


def per_benchmark_performance(chi_model: pd.DataFrame):
    """Fig. 11/15: per-benchmark distributions of chi_model; red: median."""
    return _per_benchmark_hists(
        {b: chi_model[b].dropna().to_numpy() for b in chi_model.columns},
        np.linspace(0, 1, 31),
        "C1",
        "chi_model(b, c)",
        "Model performance within individual benchmarks",
    )


def _per_benchmark_hists(values: dict[str, np.ndarray], bins, color: str, ylabel: str, title: str):
    """One horizontal histogram per benchmark, six to a row at full width, a shared y axis (its
    label on each row's first panel), the median in red; x: the number of concepts."""
    ncols = min(6, len(values))
    fig, axes = panel_figure(
        len(values), max_cols=ncols, panel_aspect=1.1, extra_height=0.6, sharey=True
    )
    for k, (ax, (b, v)) in enumerate(zip(axes, values.items())):
        ax.hist(v, bins=bins, orientation="horizontal", color=color)
        if len(v):
            ax.axhline(np.median(v), color="red", lw=1)
        ax.set_title(b, fontsize=7)
        ax.tick_params(axis="x", labelsize=6)
        if k % ncols == 0:
            ax.set_ylabel(ylabel)
    fig.supxlabel("concepts", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def missing_fraction_bars(frac: pd.Series):
    """Fig. 13: fraction of the dictionary each benchmark does not test (chi_bench < eps)."""
    fig, ax = new_figure("column", 0.6 + 0.16 * len(frac))
    frac.sort_values().plot.barh(ax=ax, color="C3")
    ax.set_xlabel("fraction of SAE concepts missing")
    ax.set_xlim(0, 1)
    ax.set_title("Missing concepts per benchmark")
    fig.tight_layout()
    return fig


def overlap_heatmap(jaccard: pd.DataFrame):
    """Fig. 14: Jaccard similarity of covered-concept sets between benchmarks."""
    n = len(jaccard)
    # annotated cells of at least about 0.4 in: up to 6 benchmarks in a column, more at full width
    width = "column" if n <= 6 else "full"
    side = 3.3 if width == "column" else min(6.0, 0.45 * n + 1.5)
    fig, ax = new_figure(width, side)
    heatmap(
        jaccard,
        ax,
        annot=True,
        fmt=".2f",
        cmap="Blues",
        vmin=0,
        vmax=1,
        cbar=False,
        annot_kws={"fontsize": 6 if n > 10 else 7},
    )
    ax.set_title("Cross-benchmark concept overlap (Jaccard)")
    fig.tight_layout()
    return fig


def profile_scatter(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str):
    """chi_model of two models on the same benchmark, one point per concept."""
    ok = ~(np.isnan(a) | np.isnan(b))
    fig, ax = new_figure("column", 3.2)
    ax.scatter(a[ok], b[ok], s=3, alpha=0.3)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
    ax.set_xlabel(f"chi_model {name_a}")
    ax.set_ylabel(f"chi_model {name_b}")
    ax.set_title("Concept profiles on the same benchmark")
    fig.tight_layout()
    return fig


def missing_calibration(df: pd.DataFrame):
    """Share of the dictionary missing (chi_bench < eps) against items per benchmark,
    one line per SAE width (the whole suite solid, each benchmark faint); error bars: std over
    subsamples."""
    fig, ax = new_figure("column", 2.6)
    for k, (name, d) in enumerate(df.groupby("sae", sort=False)):
        width = int(d.width.iloc[0])
        for b, g in d.groupby("benchmark"):
            suite = b == "(suite)"
            ax.errorbar(
                g["items"],
                g["mean"],
                yerr=g["std"].fillna(0),
                color=f"C{k}",
                lw=1.5 if suite else 0.6,
                alpha=1 if suite else 0.35,
                label=f"{width} concepts, whole suite" if suite else None,
            )
    ax.set_xscale("log")
    ax.set_xlabel("items per benchmark")
    ax.set_ylabel("fraction of concepts missing")
    plain_log_ticks(ax.xaxis)
    ax.set_title("Missing fraction vs items and dictionary width")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
