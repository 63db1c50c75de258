"""Figures of notebook 06 (one function per figure, each returns a matplotlib Figure)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kit.core.figures import new_figure, panel_figure, plain_log_ticks

from .result import AuditResult


def summary_table_figure(table: pd.DataFrame):
    """The summary table (metric, value, pass condition, verdict) rendered as a figure at full
    width (long pass conditions cut to fit, with an ellipsis)."""
    cols = ["metric", "name", "value", "pass_condition", "verdict"]
    cells = [
        [
            r["metric"],
            r["name"],
            "n/a" if bool(pd.isna(r["value"])) else f"{r['value']:.3g}",
            _cut(r["pass_condition"], 64),
            r["verdict"],
        ]
        for _, r in table.iterrows()
    ]
    fig, ax = new_figure("full", 0.16 * (len(cells) + 2))
    ax.axis("off")
    t = ax.table(cellText=cells, colLabels=cols, loc="center", cellLoc="left", colLoc="left")
    t.auto_set_font_size(False)
    t.set_fontsize(6)
    t.auto_set_column_width(list(range(len(cols))))
    colors = {"pass": "#d9f2d9", "FAIL": "#f8d0d0", "report": "#e8e8f4"}
    for i, row in enumerate(cells, start=1):
        t[i, 4].set_facecolor(colors.get(row[4], "white"))
    fig.tight_layout()
    return fig


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def mib_curve_figure(curve: dict, mib: AuditResult | None = None):
    """Faithfulness f(t) against the fraction of edges kept, on the page's linear axis (left) and
    MIB's log axis (right), with each CPR, the random-ranking null and the saturation point."""
    fig, axes = new_figure("full", 2.6, ncols=2, sharey=True)
    v = mib.values if mib is not None else {}
    for ax, scale, key in ((axes[0], "linear", "cpr"), (axes[1], "log", "cpr_log")):
        ax.plot(curve["threshold"], curve["f"], marker="o")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        if v.get("saturation_threshold") is not None:
            ax.axvline(v["saturation_threshold"], color="C3", lw=0.8, ls=":", label="every head in")
            ax.legend(fontsize=6)
        ax.set_xscale(scale)
        if scale == "log":
            plain_log_ticks(ax.xaxis)
        ax.set_xlabel(f"fraction of edges kept ({scale} axis)")
        null = (
            np.mean(v.get("null_" + key, []))
            if key == "cpr_log" and v.get("null_cpr_log")
            else (mib.null if (mib is not None and key == "cpr") else None)
        )
        title = (
            f"CPR{'_log' if key == 'cpr_log' else ''}={v[key]:.2f}"
            if v.get(key) is not None
            else "MIB"
        )
        ax.set_title(
            title + (f" (random ranking {null:.2f})" if null is not None else ""), fontsize=7
        )
    axes[0].set_ylabel("faithfulness\n(m(C)-m(∅))/(m(N)-m(∅))")
    fig.tight_layout()
    return fig


def roc_figure(ex1: AuditResult):
    """ROC of the circuit as a detector (full-model vs circuit-ablated logit diff)."""
    v = ex1.values
    fig, ax = new_figure("column", 3.0)
    ax.plot(v["roc_fpr"], v["roc_tpr"], marker=".")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.scatter([v["false_alarm_rate"]], [v["hit_rate"]], color="C3", zorder=3, label="threshold 0")
    ax.set_xlabel("false-alarm rate (circuit ablated)")
    ax.set_ylabel("hit rate (full model)")
    ax.set_title(f"EX1: d'={v['dprime']:.2f}, AUC={v['auc']:.2f}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def dif_figure(values: np.ndarray, groups: list[str], full_values: np.ndarray | None = None):
    """Logit diff by name group (circuit alone, and the full model if given)."""
    import seaborn as sns

    df = pd.DataFrame(
        {"logit diff": np.asarray(values), "name group": groups, "run": "circuit only"}
    )
    if full_values is not None:
        df = pd.concat(
            [
                df,
                pd.DataFrame(
                    {
                        "logit diff": np.asarray(full_values),
                        "name group": groups,
                        "run": "full model",
                    }
                ),
            ]
        )
    fig, ax = new_figure("column", 2.6)
    sns.boxplot(data=df, x="run", y="logit diff", hue="name group", ax=ax)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_title("EX2: IOI logit diff by name group")
    if ax.get_legend() is not None:
        ax.legend(fontsize=6, title="name group", title_fontsize=6)
    fig.tight_layout()
    return fig


def weber_figure(ex11: AuditResult):
    """Mean logit diff against each circuit head's output scale, one panel per baseline."""
    curves, scales = ex11.values["curves"], ex11.values["scales"]
    baselines = sorted({b for c in curves.values() for b in c}, key=float, reverse=True)
    fig, axes = panel_figure(max(1, len(baselines)), max_cols=3, panel_aspect=0.75)
    for ax, b in zip(axes, baselines):
        for head, c in curves.items():
            ax.plot([float(b) * s for s in scales], c[b], marker=".", label=f"head {head}")
        ax.set_xlabel("head output scale")
        ax.set_ylabel("mean logit diff")
        ax.set_title(f"EX11: baseline {b}")
    if curves and baselines:
        axes[len(baselines) - 1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def participation_figure(m13: AuditResult):
    """Participation ratio (effective rank) and d_model per layer, regime in the labels."""
    per = m13.values["per_layer"]
    names = list(per)
    fig, ax = new_figure("column", 2.8)
    ax.bar(
        range(len(names)),
        [per[n]["participation_ratio"] for n in names],
        label="participation ratio",
    )
    ax.plot(
        range(len(names)), [per[n]["d_model"] for n in names], color="C3", ls="--", label="d_model"
    )
    ax.set_xticks(range(len(names)), [f"{n.split('.')[1]}\n{per[n]['regime']}" for n in names])
    ax.set_xlabel("layer (regime)")
    ax.set_ylabel("effective rank")
    ax.set_title("M13: participation ratio per layer")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def correspondence_figure(m11: AuditResult):
    """Distribution of each small feature's best correlation with a large feature."""
    best = np.asarray(m11.values["best_corr"], float)
    fig, ax = new_figure("column", 2.6)
    ax.hist(best[np.isfinite(best)], bins=30, range=(-0.1, 1.0))
    ax.set_xlabel("best correlation with a large-SAE feature")
    ax.set_ylabel("small-SAE features")
    ax.set_title(
        f"M11: consistency={m11.value:.2f} (split {m11.values['splitting_rate']:.2f}, "
        f"absorb {m11.values['absorption_rate']:.2f})",
        fontsize=7,
    )
    fig.tight_layout()
    return fig
