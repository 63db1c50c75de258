"""The figures of notebook 03 (seed 001): the sparsity curve (Figure 3) and agreement with the
reference score (Figure 4).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from kit.core.figures import new_figure, panel_figure
from kit.shortcut.evaluate import agreement


def plot_sparsity_curve(curve: pd.DataFrame, total_neurons: int, n_selected: int | None = None):
    """Figure 3 analogue: accuracy vs patched neurons (% of all MLP neurons)."""
    fig, ax = new_figure("column", 2.6)
    styles: dict[Any, tuple[str, str]]
    styles = {
        ("contaminated", "located"): ("C3", "-"),
        ("contaminated", "random"): ("C3", ":"),
        ("uncontaminated", "located"): ("C0", "-"),
        ("uncontaminated", "random"): ("C0", ":"),
    }
    for (model, kind), sub in curve.groupby(["model", "neurons"]):
        sub = sub.sort_values("n")
        c, ls = styles[(model, kind)]
        ax.plot(
            100 * sub["n"] / total_neurons,
            100 * sub["accuracy"],
            color=c,
            ls=ls,
            marker="o",
            ms=3,
            label=f"{model}, {kind}",
        )
    if n_selected:
        ax.axvline(100 * n_selected / total_neurons, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("patched neurons (% of MLP neurons)")
    ax.set_ylabel("accuracy on the contaminated test (%)")
    ax.legend(frameon=False, fontsize=6)
    fig.tight_layout()
    return fig


def plot_agreement(
    table: pd.DataFrame,
    ref_col: str = "ref",
    cols: Sequence[str] = ("te", "ori"),
    label_col: str = "variant",
    title: str = "",
):
    """Figure 4 analogue: each score against the reference, with rho and RMSE in the legend."""
    fig, axes = panel_figure(len(cols), max_cols=3, panel_aspect=0.8, sharex=True, sharey=True)
    x = table[ref_col].to_numpy(float)
    for ax, col in zip(axes, cols):
        y = table[col].to_numpy(float)
        a = agreement(y, x)
        ax.scatter(x, y, s=14)
        xs = np.linspace(np.nanmin(x), np.nanmax(x), 10)
        if np.isfinite(a["slope"]):
            ax.plot(xs, a["slope"] * xs + a["intercept"], lw=0.8, color="C1")
        lo, hi = min(np.nanmin(x), np.nanmin(y)), max(np.nanmax(x), np.nanmax(y))
        ax.plot([lo, hi], [lo, hi], lw=0.6, color="gray", ls="--")
        if label_col in table:
            for xi, yi, t in zip(x, y, table[label_col]):
                ax.annotate(str(t), (xi, yi), fontsize=6, alpha=0.7)
        ax.set_title(
            f"{col.upper()} vs {ref_col}: rho={a['spearman']:.3f}, e={a['rmse']:.2f}", fontsize=7
        )
        ax.set_xlabel(f"{ref_col} (%)")
        ax.set_ylabel(f"{col.upper()} (%)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
