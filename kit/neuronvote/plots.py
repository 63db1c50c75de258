"""The figures of notebook 05 (seed 004): pairwise AvgOverlap of the methods, scores by layer, and
one method's overlap with the others across studies.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from kit.neuronvote import methods as nv
from kit.neuronvote.study import StudyResult, score_intervals


def plot_pairwise(result: StudyResult, methods: Sequence[str] | None = None, title: str = ""):
    """Figure 1 analogue: one heatmap per layer position of the method x method overlap
    (averaged over concepts and s = 10..50). Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    positions = list(result.pairwise)
    ncol = min(4, len(positions))  # all-layer studies (Figures 5-7) wrap into rows of four
    nrow = -(-len(positions) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.8 * nrow), squeeze=False)
    for ax in axes.flat[len(positions) :]:
        ax.axis("off")
    for ax, pos in zip(axes.flat, positions):
        mat = result.pairwise[pos]
        keep = [m for m in (methods or list(mat.index)) if m in mat.index]
        mat = mat.loc[keep, keep].rename(index=nv.DISPLAY, columns=nv.DISPLAY)
        sns.heatmap(
            mat,
            vmin=0,
            vmax=1,
            cmap="magma",
            annot=True,
            fmt=".2f",
            annot_kws={"size": 6},
            cbar=ax is axes[0][-1],
            square=True,
            ax=ax,
        )
        ax.set_title(f"{result.model}, {pos} layer, {result.s_label}")
        ax.tick_params(axis="x", rotation=60)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_by_layer(
    result: StudyResult, methods: Sequence[str] | None = None, n_boot: int = 1000, seed: int = 0
):
    """Figures 3-4 analogue: AvgOverlap (left) and NeuronVote (right) of every method per layer
    (mean over concepts and s), with the 95% bootstrap interval over concepts as a band.
    Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    iv = score_intervals(result, n_boot=n_boot, seed=seed)
    iv = iv[iv.position != "all"]
    layer_of = result.scores.drop_duplicates("position").set_index("position").layer
    iv = iv.assign(layer=iv.position.map(layer_of)).sort_values("layer")
    keep = [nv.DISPLAY.get(m, m) for m in (methods or list(dict.fromkeys(result.scores.method)))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, metric in zip(axes, ("AvgOverlap", "NeuronVote")):
        for m in keep:
            g = iv[(iv.method == m) & (iv.metric == metric)]
            if g.empty:
                continue
            (line,) = ax.plot(g.layer, g["mean"], marker="o", ms=3, label=m)
            ax.fill_between(g.layer, g.lo, g.hi, color=line.get_color(), alpha=0.15)
        ax.set_xlabel("layer")
        ax.set_title(f"{result.model}: {metric} by layer")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("score (95% interval over concepts)")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_method_overlap(
    results: Sequence[StudyResult], method: str = "meanselect", others: Sequence[str] | None = None
):
    """Figure 2 analogue: overlap (top 10-50) of ``method`` with every other method, one
    heatmap row per model x layer position. Returns the figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    rows, labels = [], []
    for r in results:
        for pos, mat in r.pairwise.items():
            cols = [m for m in (others or list(mat.columns)) if m != method and m in mat.columns]
            rows.append(mat.loc[method, cols].rename(nv.DISPLAY))
            labels.append(f"{r.model} {pos}")
    table = pd.DataFrame(rows, index=labels)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * table.shape[1], 0.9 + 0.45 * table.shape[0]))
    sns.heatmap(
        table, vmin=0, vmax=1, cmap="magma", annot=True, fmt=".2f", annot_kws={"size": 7}, ax=ax
    )
    ax.set_title(
        f"{nv.DISPLAY.get(method, method)}: overlap with other methods ({results[0].s_label})"
    )
    fig.tight_layout()
    return fig
