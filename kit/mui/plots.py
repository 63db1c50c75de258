"""The figures of notebooks 01 and 02 (seed 000): the law per group, PUR recomputed vs printed,
MUI growth, correct vs incorrect, masking curves, the B.6 method correlations, per-sample MUI, and
trajectories, pairs and direction counts in the MUI-performance plane.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from kit.core.figures import WIDTHS, heatmap, new_figure, panel_figure, plain_log_ticks, wrap_to
from kit.mui.directions import DIRECTION_COLORS, DIRECTIONS


def plot_law(
    df: pd.DataFrame,
    fits: pd.DataFrame,
    by: str = "benchmark",
    perf: str = "performance",
    m: str = "mui",
    hue: str = "model",
    ncols: int = 4,
    title: str = "",
):
    """One panel per group: points (MUI, performance) and the fitted ``a + b ln MUI`` curve; at
    full width, wrapped into rows of ``ncols`` (one panel: a column)."""
    import matplotlib.pyplot as plt

    groups = sorted(df[by].unique())
    width = "column" if len(groups) == 1 or ncols == 1 else "full"
    fig, panels = panel_figure(len(groups), width, max_cols=ncols, panel_aspect=0.75)
    panel_in = WIDTHS[width] / min(ncols, len(groups)) - 0.3
    hues = sorted(df[hue].unique())
    colors = dict(zip(hues, plt.cm.tab20(np.linspace(0, 1, max(len(hues), 2)))))
    fit_by = fits.set_index(by) if by in fits else pd.DataFrame()
    for ax, name in zip(panels, groups):
        g = df[df[by] == name]
        for h, gg in g.groupby(hue):
            ax.scatter(gg[m], gg[perf], s=18, color=colors[h], label=h)
        if name in fit_by.index and pd.notna(fit_by.loc[name].get("slope", np.nan)):
            f = fit_by.loc[name]
            # MUI = beta - alpha ln P, drawn on the same axes
            if f.get("form", "perf_vs_log_mui") == "mui_vs_log_perf":
                ps = np.linspace(max(g[perf].min(), 1e-6), g[perf].max(), 50)
                ax.plot(f.intercept + f.slope * np.log(ps), ps, color="k", lw=1)
                ax.set_title(
                    wrap_to(f"{name}: α={-f.slope:.2f}, R²={f.r2:.2f}", panel_in, 7), fontsize=7
                )
            else:
                xs = np.linspace(max(g[m].min(), 1e-6), g[m].max(), 50)
                ax.plot(xs, f.intercept + f.slope * np.log(xs), color="k", lw=1)
                ax.set_title(
                    wrap_to(f"{name}: b={f.slope:.1f}, R²={f.r2:.2f}", panel_in, 7), fontsize=7
                )
        else:
            ax.set_title(wrap_to(str(name), panel_in))
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
    handles, labels = panels[0].get_legend_handles_labels()
    if title:
        fig.suptitle(wrap_to(title, fig.get_figwidth(), 9))
    fig.tight_layout()
    # the models' legend under the panels, as many a row as the width holds
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=max(1, min(len(labels), 2 if width == "column" else 4)),
        fontsize=6,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    return fig


def plot_pur_diff(comparison: pd.DataFrame):
    """Recomputed vs printed PUR (Table 1), one point per (model, benchmark)."""

    c = comparison.dropna(subset=["pur_ours"])
    fig, axes = panel_figure(2, panel_aspect=0.7)
    axes[0].scatter(c.pur_paper, c.pur_ours, s=12)
    lim = [0, float(max(c.pur_paper.max(), c.pur_ours.max())) * 1.05]
    axes[0].plot(lim, lim, "k--", lw=0.8)
    axes[0].set_xlabel("PUR printed (Table 1)")
    axes[0].set_ylabel("PUR recomputed from Table 5")
    axes[1].hist(c["diff"], bins=15)
    axes[1].set_xlabel("recomputed - printed")
    fig.tight_layout()
    return fig


def plot_growth(curves: pd.DataFrame):

    fig, ax = new_figure("column", 2.6)
    for name, g in curves.groupby("pool"):
        s = g.groupby("n").mui.agg(["mean", "std"]).reset_index()
        ax.errorbar(
            s.n,
            s["mean"],
            yerr=s["std"].fillna(0),
            marker="o",
            ms=3,
            capsize=2,
            label=name,
            lw=2.0 if name == "mixed" else 1.0,
        )
    ax.set_xlabel("number of samples")
    ax.set_ylabel("MUI (%)")
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def plot_correctness(result: dict[str, Any]):
    """MUI of disjoint sample chunks, correct vs incorrect responses (box plots)."""

    fig, ax = new_figure("column", 2.6)
    data = [result.get("chunk_mui_correct", []), result.get("chunk_mui_incorrect", [])]
    ax.boxplot(data)
    ax.set_xticks([1, 2], ["correct", "incorrect"])
    ax.set_ylabel(f"MUI of {result.get('chunk_size', '?')}-sample chunks (%)")
    p = result.get("chunk_mannwhitney_p")
    ax.set_title(
        f"n={result.get('n_each', 0)} each"
        + (f", Mann-Whitney p={p:.3g}" if p is not None else ""),
        fontsize=7,
    )
    fig.tight_layout()
    return fig


def plot_masking(curve: pd.DataFrame, task_a: str):
    import matplotlib.ticker as mticker

    sets = list(dict.fromkeys(curve.set))
    fig, axes = panel_figure(len(sets), max_cols=3, panel_aspect=0.75)
    for ax, name in zip(axes, sets):
        for kind, g in curve[curve.set == name].groupby("kind"):
            g = g.sort_values("k")
            ax.plot(g.k, g.accuracy, marker="o", ms=3, label=f"{kind} neurons")
        ax.set_xscale("symlog", linthresh=1)  # k = 0 (unmasked) stays on the axis
        ax.xaxis.set_major_formatter(mticker.ScalarFormatter())
        ax.set_xlabel("neurons masked (k)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"eval on {name}" + (" (= task A)" if name == task_a else ""))
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def plot_method_correlations(corr: pd.DataFrame):
    # a square matrix of every method pair: the full width, cells of about 0.25 in for 20 methods
    fig, ax = new_figure("full", 6.0)
    heatmap(
        corr,
        ax,
        vmin=-1,
        vmax=1,
        cmap="RdBu_r",
        square=True,
        cbar_kws={"label": "Spearman"},
        xticklabels=True,
        yticklabels=True,
    )
    ax.tick_params(labelsize=6)
    fig.tight_layout()
    return fig


def plot_per_sample_mui(samples: pd.DataFrame, focus: str):
    """Histograms of per-sample MUI of ``focus`` per task (multi-token families and the one-token
    task)."""

    s = samples[samples.model == focus]
    tasks = list(dict.fromkeys(s.task))
    fig, axes = panel_figure(len(tasks), max_cols=3, panel_aspect=0.7)
    for ax, t in zip(axes, tasks):
        g = s[s.task == t]
        for ok, lab in ((True, "correct"), (False, "incorrect")):
            v = g[g.correct == ok].mui
            if len(v):
                ax.hist(v, bins=20, alpha=0.6, label=f"{lab} ({len(v)})")
        ax.set_title(f"{focus}: {t}", fontsize=7)
        ax.set_xlabel("per-sample MUI (%)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def plot_trajectories(
    points: pd.DataFrame,
    steps: pd.DataFrame,
    series: str = "task",
    label: str = "model",
    order: str = "order",
    ncols: int = 4,
    short: Callable[[str], str] | None = None,
    title: str | None = None,
):
    """Figure 7/15 analogue: per series, checkpoints in the (MUI, performance) plane joined by
    arrows coloured by their direction. Returns the matplotlib Figure."""
    from matplotlib.lines import Line2D

    names = list(pd.unique(points.sort_values(order)[series])) if len(points) else []
    if not names:
        return _empty_figure(title or "no checkpoint trajectory")
    fig, axes = panel_figure(len(names), max_cols=ncols, panel_aspect=0.75, extra_height=0.5)
    short = short or (lambda s: s)
    for ax, name in zip(axes, names):
        p = points[points[series] == name].sort_values(order)
        ax.scatter(p["mui"], p["perf"], s=14, color="black", zorder=3)
        for _, r in p.iloc[[0, -1]].iterrows():
            ax.annotate(
                short(str(r[label])),
                (r["mui"], r["perf"]),
                fontsize=6,
                xytext=(3, 3),
                textcoords="offset points",
            )
        for _, st in steps[steps[series] == name].iterrows():
            ax.annotate(
                "",
                xy=(st["mui_to"], st["perf_to"]),
                xytext=(st["mui_from"], st["perf_from"]),
                arrowprops=dict(arrowstyle="->", color=DIRECTION_COLORS[st["direction"]], lw=1.4),
            )
        ax.set_title(wrap_to(str(name), fig.get_figwidth() / min(ncols, len(names)) - 0.3))
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
        ax.margins(0.15)
    handles = [Line2D([], [], color=DIRECTION_COLORS[d], lw=2, label=d) for d in DIRECTIONS]
    if title:
        fig.suptitle(wrap_to(title, fig.get_figwidth(), 9))
    fig.tight_layout()
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=len(DIRECTIONS),
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    return fig


def plot_pairs(pairs: pd.DataFrame, ncols: int = 3, title: str | None = None):
    """Figure 5 / 8 analogue: per fine-tune, an arrow from its base to it on every task in the
    (MUI, performance) plane, coloured by direction; solid in domain, dashed out of domain.
    ``pairs`` is the output of ``pair_directions``. Returns the matplotlib Figure."""
    from matplotlib.lines import Line2D

    models = list(pd.unique(pairs["model"])) if len(pairs) else []
    if not models:
        return _empty_figure(title or "no fine-tune pairs")
    fig, axes = panel_figure(len(models), max_cols=ncols, panel_aspect=0.8, extra_height=0.5)
    for ax, m in zip(axes, models):
        g = pairs[pairs["model"] == m]
        for _, r in g.iterrows():
            style = (
                "-" if r["domain"] == "in-domain" else (":" if r["domain"] == "in-group" else "--")
            )
            ax.annotate(
                "",
                xy=(r["mui"], r["perf"]),
                xytext=(r["base_mui"], r["base_perf"]),
                arrowprops=dict(
                    arrowstyle="->", color=DIRECTION_COLORS[r["direction"]], lw=1.3, linestyle=style
                ),
            )
            ax.scatter([r["base_mui"]], [r["base_perf"]], s=8, color="black", zorder=3)
            # the fine-tune's point too, so the axes' autoscaling includes every arrow head
            ax.scatter(
                [r["mui"]], [r["perf"]], s=6, color=DIRECTION_COLORS[r["direction"]], zorder=3
            )
            ax.annotate(
                str(r["task"]),
                (r["mui"], r["perf"]),
                fontsize=6,
                xytext=(2, 2),
                textcoords="offset points",
            )
        panel_in = fig.get_figwidth() / min(ncols, len(models)) - 0.3
        ax.set_title(wrap_to(f"{g['base'].iloc[0]} → {m}", panel_in, 7), fontsize=7)
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
        ax.margins(0.15)
    handles = [Line2D([], [], color=DIRECTION_COLORS[d], lw=2, label=d) for d in DIRECTIONS]
    handles += [
        Line2D([], [], color="black", ls="-", label="in-domain"),
        Line2D([], [], color="black", ls="--", label="ood"),
    ]
    if (pairs["domain"] == "in-group").any():
        handles.append(Line2D([], [], color="black", ls=":", label="in-group"))
    if title:
        fig.suptitle(wrap_to(title, fig.get_figwidth(), 9))
    fig.tight_layout()
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=min(len(handles), 4),
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    return fig


def _empty_figure(message: str):
    fig, ax = new_figure("column", 1.2)
    ax.axis("off")
    ax.text(0.5, 0.5, f"{message}: nothing to plot", ha="center", va="center")
    fig.tight_layout()
    return fig


def plot_direction_counts(counts: dict[str, dict[str, int]], title: str | None = None):
    """Stacked bars of direction shares per setting; ``counts`` maps setting -> ``counts_dict``."""
    settings = list(counts)
    fig, ax = new_figure("full", 3.0)
    bottom = np.zeros(len(settings))
    for d in DIRECTIONS:
        share = np.array(
            [counts[s].get(d, 0) / max(1, counts[s].get("total", 0)) for s in settings]
        )
        ax.bar(settings, share, bottom=bottom, color=DIRECTION_COLORS[d], label=d)
        bottom += share
    ax.set_ylabel("share of changes")
    ax.set_ylim(0, 1)
    ax.tick_params(axis="x", rotation=35)
    for lab in ax.get_xticklabels():
        lab.set_horizontalalignment("right")
    ax.legend(fontsize=6, bbox_to_anchor=(1.0, 1.0), loc="upper left", frameon=False)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
