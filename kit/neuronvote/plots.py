"""The figures of notebook 05 (seed 004): pairwise AvgOverlap of the methods, scores by layer, and
one method's overlap with the others across studies.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from kit.core.figures import heatmap, new_figure, panel_figure
from kit.neuronvote import methods as nv
from kit.neuronvote.study import StudyResult, score_intervals


def plot_pairwise(result: StudyResult, methods: Sequence[str] | None = None, title: str = ""):
    """Figure 1 analogue: one heatmap per layer position of the method x method overlap
    (averaged over concepts and s = 10..50), three to a row at full width (one: a column). Method
    names label the first column's rows and the bottom panel's columns only, and values print
    without the leading zero (``.62``), so eight methods' cells of about 0.25 in hold their
    6-pt numbers. Returns the matplotlib figure."""
    positions = list(result.pairwise)
    ncols = min(3, len(positions))
    fig, axes = panel_figure(len(positions), max_cols=ncols, panel_aspect=1.0)
    for k, (ax, pos) in enumerate(zip(axes, positions)):
        mat = result.pairwise[pos]
        keep = [m for m in (methods or list(mat.index)) if m in mat.index]
        mat = mat.loc[keep, keep].rename(index=nv.DISPLAY, columns=nv.DISPLAY)
        heatmap(
            mat,
            ax,
            vmin=0,
            vmax=1,
            cmap="magma",
            annot=mat.map(_short_number).to_numpy(),
            fmt="",
            annot_kws={"size": 6},
            cbar=False,
            square=True,
            yticklabels=k % ncols == 0,
            xticklabels=k + ncols >= len(positions),  # the lowest panel of its column
        )
        ax.set_title(f"{result.model}\n{pos} layer, {result.s_label}", fontsize=7)
        ax.tick_params(axis="both", labelsize=6)
        ax.tick_params(axis="x", rotation=60)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def _short_number(v: float) -> str:
    """``0.62`` as ``.62`` (a narrower cell label); 1 and above keep their digit."""
    text = f"{v:.2f}"
    return text[1:] if text.startswith("0.") else text


def plot_by_layer(
    result: StudyResult, methods: Sequence[str] | None = None, n_boot: int = 1000, seed: int = 0
):
    """Figures 3-4 analogue: AvgOverlap (left) and NeuronVote (right) of every method per layer
    (mean over concepts and s), with the 95% bootstrap interval over concepts as a band.
    Returns the matplotlib figure."""
    iv = score_intervals(result, n_boot=n_boot, seed=seed)
    iv = iv[iv.position != "all"]
    layer_of = result.scores.drop_duplicates("position").set_index("position").layer
    iv = iv.assign(layer=iv.position.map(layer_of)).sort_values("layer")
    keep = [nv.DISPLAY.get(m, m) for m in (methods or list(dict.fromkeys(result.scores.method)))]
    fig, axes = new_figure("full", 2.8, ncols=2, sharey=True)
    for ax, metric in zip(axes, ("AvgOverlap", "NeuronVote")):
        for m in keep:
            g = iv[(iv.method == m) & (iv.metric == metric)]
            if g.empty:
                continue
            (line,) = ax.plot(g.layer, g["mean"], marker="o", ms=3, label=m)
            ax.fill_between(g.layer, g.lo, g.hi, color=line.get_color(), alpha=0.15)
        ax.set_xlabel("layer")
        ax.set_title(f"{result.model}: {metric} by layer")
    axes[0].set_ylabel("score (95% interval over concepts)")
    axes[1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def plot_method_overlap(
    results: Sequence[StudyResult], method: str = "meanselect", others: Sequence[str] | None = None
):
    """Figure 2 analogue: overlap (top 10-50) of ``method`` with every other method, one
    heatmap row per model x layer position. Returns the figure."""
    rows, labels = [], []
    for r in results:
        for pos, mat in r.pairwise.items():
            cols = [m for m in (others or list(mat.columns)) if m != method and m in mat.columns]
            rows.append(mat.loc[method, cols].rename(nv.DISPLAY))
            labels.append(f"{r.model} {pos}")
    table = pd.DataFrame(rows, index=labels)
    fig, ax = new_figure("full", 1.2 + 0.3 * table.shape[0])
    heatmap(table, ax, vmin=0, vmax=1, cmap="magma", annot=True, fmt=".2f", annot_kws={"size": 7})
    ax.set_title(
        f"{nv.DISPLAY.get(method, method)}: overlap with other methods ({results[0].s_label})"
    )
    fig.tight_layout()
    return fig
