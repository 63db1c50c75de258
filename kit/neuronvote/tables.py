"""Notebook 05's tables, ours beside the paper's (seed 004, Tables 1-4), which definitions come
closest to the paper, the findings and the key numbers recorded in ``results.json``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from kit.data.paper_tables import load_table
from kit.neuronvote import methods as nv
from kit.neuronvote import published
from kit.neuronvote.published import POS_BERT, PaperRef
from kit.neuronvote.study import POSITIONS, StudyResult, score_intervals


def _display(df: pd.DataFrame, col: str = "method") -> pd.DataFrame:
    df = df.copy()
    df[col] = df[col].map(lambda m: nv.DISPLAY.get(m, m))
    return df


def table1_accuracy(result: StudyResult, paper: PaperRef | None = POS_BERT) -> pd.DataFrame:
    """Table 1 analogue: mean test accuracy (over concepts and layers) per method x s, with the
    paper's values (``paper s=..`` columns) where ``paper`` prints them (POS, BERT)."""
    ours = _display(result.accuracy).pivot_table(
        index="method", columns="s", values="accuracy", aggfunc="mean"
    )
    ours.columns = [f"ours s={c}" for c in ours.columns]
    if paper is not None and paper.accuracy is not None:
        printed = load_table(paper.accuracy).pivot_table(
            index="method", columns="n_neurons", values="accuracy", aggfunc="first"
        )
        printed.columns = [f"paper s={c}" for c in printed.columns]
        ours = ours.join(printed, how="left")
    return ours.round(3)


def table2_compatibility(result: StudyResult, paper: PaperRef | None = POS_BERT) -> pd.DataFrame:
    """Table 2 analogue: AvgOverlap and NeuronVote per method, averaged over concepts, layers
    (first/middle/last) and s (10/30/50), with ``paper``'s values beside: Table 2 for POS/BERT, the
    mean of the printed layers elsewhere (Table 6 for chunking prints NeuronVote only); none when
    ``paper`` is ``None`` (a setting the paper did not run)."""
    ours = _display(result.scores).pivot_table(
        index="method", columns="metric", values="score", aggfunc="mean"
    )
    ours.columns = [f"ours {c}" for c in ours.columns]
    if paper is not None:
        for metric in ("AvgOverlap", "NeuronVote"):
            printed = published.mean_scores(paper, metric)
            if not printed.empty:
                printed.index = [nv.DISPLAY.get(m, m) for m in printed.index]
                ours[f"paper {metric}"] = printed.reindex(ours.index)
    return ours.round(3)


def table3_neuronvote(
    result: StudyResult, paper: PaperRef | None = POS_BERT, methods: Sequence[str] | None = None
) -> pd.DataFrame:
    """Table 3 analogue: NeuronVote per method x layer position (mean over concepts and s), with
    ``paper``'s per-layer table beside (Table 3 for POS, Table 6 for chunking, Table 8 for every
    layer), or none."""
    df = result.scores[result.scores.metric == "NeuronVote"]
    if methods is not None:
        df = df[df.method.isin(methods)]
    printed = None if paper is None else published.by_layer(paper)
    return _by_position_with_paper(df, printed, paper)


def table4_meanselect(result: StudyResult, paper: PaperRef | None = POS_BERT) -> pd.DataFrame:
    """Table 4 analogue: NeuronVote of MeanSelect and Random per layer position, paper beside."""
    df = result.scores[
        (result.scores.metric == "NeuronVote") & result.scores.method.isin(["meanselect", "random"])
    ]
    printed = None
    if paper is not None and paper.meanselect is not None:
        t = load_table(paper.meanselect)
        t = t[(t["model"] == paper.model) & t["method"].isin(["MeanSelect", "Random"])]
        printed = t.pivot_table(index="method", columns="layer", values="score", aggfunc="first")
        printed.index = [m.lower() for m in printed.index]
    return _by_position_with_paper(df, printed, paper)


def _by_position_with_paper(
    df: pd.DataFrame, printed: pd.DataFrame | None, paper: PaperRef | None
) -> pd.DataFrame:
    """Mean NeuronVote per method and layer position, with the printed table's rows beside it."""
    ours = _display(df).pivot_table(
        index="method", columns="position", values="score", aggfunc="mean"
    )
    ours = ours[
        [c for c in POSITIONS if c in ours.columns]
        + [c for c in ours.columns if c not in POSITIONS]
    ]
    ours.columns = [f"ours {c}" for c in ours.columns]
    if printed is not None and paper is not None:
        printed = printed.copy()
        printed.index = [nv.DISPLAY.get(m, m) for m in printed.index]
        printed.columns = [f"paper {paper.model} L{c}" for c in printed.columns]
        ours = ours.join(printed, how="left")
    return ours.round(3)


def ranking_of(table: pd.DataFrame, column: str) -> list[str]:
    """Methods ordered by ``column`` descending (NaN last)."""
    return table[column].sort_values(ascending=False, na_position="last").index.tolist()


def paper_closeness(studies: Mapping[str, StudyResult]) -> pd.DataFrame:
    """Per definition set: mean |ours - paper| over the methods of Tables 2, 3 (BERT, layers
    1/6/12 vs our first/middle/last) and 4, and the Spearman correlation of the NeuronVote order
    of Table 2. Lower MAE = closer; the ``closest`` column marks the smallest mean of the three."""
    from scipy.stats import spearmanr

    rows = {}
    for name, res in studies.items():
        t = all_tables(res)
        maes = {}
        for key in ("table2", "table3", "table4"):
            ours = [c for c in t[key].columns if c.startswith("ours ")]
            paper = [c for c in t[key].columns if c.startswith("paper ")]
            pairs = list(zip(ours, paper))
            maes[f"{key} MAE"] = float(
                np.nanmean([np.abs(t[key][a] - t[key][b]).mean() for a, b in pairs])
            )
        t2 = t["table2"].dropna(subset=["paper NeuronVote"])
        rho2 = spearmanr(t2["ours NeuronVote"], t2["paper NeuronVote"])[0]
        maes["table2 NeuronVote Spearman"] = float(rho2)  # pyright: ignore[reportArgumentType]  (scipy)
        rows[name] = maes
    out = pd.DataFrame(rows).T
    out["mean MAE"] = out[["table2 MAE", "table3 MAE", "table4 MAE"]].mean(axis=1)
    out["closest"] = out["mean MAE"] == out["mean MAE"].min()
    return out.round(4)


def closeness_findings(closeness: pd.DataFrame) -> list[str]:
    """Which definition set reproduces the paper's Tables 2-4 closer, from :func:`paper_closeness`
    (our numbers against ``../shared/paper_tables``; the verdict follows the mean absolute gap)."""
    if closeness.empty:
        return []
    best: Any = closeness["mean MAE"].idxmin()  # a definition set's name
    parts = [
        f"{d}: mean |ours - paper| {r['mean MAE']:.3f} (Table 2 {r['table2 MAE']:.3f}, Table 3 "
        f"{r['table3 MAE']:.3f}, Table 4 {r['table4 MAE']:.3f}; Spearman of Table 2's NeuronVote "
        f"order {r['table2 NeuronVote Spearman']:+.2f})"
        for d, r in closeness.iterrows()
    ]
    lines = ["Definition sets against the paper's Tables 2-4: " + "; ".join(parts) + "."]
    if len(closeness) > 1:
        other = closeness["mean MAE"].drop(best)
        margin = float(other.min() - closeness.loc[best, "mean MAE"])
        rho = closeness["table2 NeuronVote Spearman"]
        agree = rho.idxmax() == best
        lines.append(
            f"Closer by the mean absolute gap: {best} (by {margin:.3f})"
            + (
                "; it also has the higher rank agreement."
                if agree
                else f"; but {rho.idxmax()} orders the methods more like Table 2 (Spearman "
                f"{rho.max():+.2f} vs {rho[best]:+.2f}): the two criteria disagree."
            )
        )
    return lines


def numbers(result: StudyResult, table2: pd.DataFrame) -> list[str]:
    """The main numbers of one study, stated as numbers (no verdicts: those are the claims'):
    the NeuronVote order with the paper's beside where the table has it, and Random's baseline
    with the chance overlap of two random top-s sets."""
    nv_col = "ours NeuronVote"
    s_used = sorted(result.scores.s.unique().tolist())
    layers = sorted(
        result.scores.position.unique().tolist(),
        key=lambda p: (p not in POSITIONS, POSITIONS.index(p) if p in POSITIONS else p),
    )
    lines = [
        f"[{result.model}, site {result.site}, {result.n_neurons} neurons/layer, "
        f"{result.scores.concept.nunique()} concepts] NeuronVote (mean over concepts, layers "
        f"{'/'.join(layers)}, s={'/'.join(map(str, s_used))}): "
        + ", ".join(f"{m} {table2.loc[m, nv_col]:.3f}" for m in ranking_of(table2, nv_col))
    ]
    if "paper NeuronVote" in table2:
        printed = table2["paper NeuronVote"].dropna().sort_values(ascending=False)
        lines.append("paper: " + ", ".join(f"{m} {v:.3f}" for m, v in printed.items()))
    if "Random" in table2.index:
        d = result.n_neurons
        # E|A∩B| / E|A∪B| for random top-s sets
        chance = float(np.mean([s / (2 * d - s) for s in s_used]))
        lines.append(
            f"Random: AvgOverlap {table2.loc['Random', 'ours AvgOverlap']:.3f}, NeuronVote "
            f"{table2.loc['Random', nv_col]:.3f} (chance overlap of two random top-s sets ~ "
            f"{chance:.3f})"
        )
    return lines


def all_tables(result: StudyResult, paper: PaperRef | None = POS_BERT) -> dict[str, pd.DataFrame]:
    """Tables 1-4 analogues of one study, with ``paper``'s printed numbers beside ours where the
    paper ran that setting (``None``: ours only)."""
    return {
        "table1": table1_accuracy(result, paper),
        "table2": table2_compatibility(result, paper),
        "table3": table3_neuronvote(result, paper),
        "table4": table4_meanselect(result, paper),
    }


def key_numbers(result: StudyResult, tables: Mapping[str, pd.DataFrame], n_boot: int = 0) -> dict:
    """Our numbers (never the paper's) of one study, as plain dicts for ``run.record``; with
    ``n_boot`` > 0 also ``intervals``: :func:`score_intervals` as a list of records."""
    ours = lambda df: df[[c for c in df.columns if c.startswith("ours ")]]  # noqa: E731
    t2 = tables["table2"]
    core = [
        m
        for m in ranking_of(t2, "ours NeuronVote")
        if m not in ("Random", "MeanSelect", "IoU-AP (NeuroX)")
    ]
    return {
        "model": result.model,
        "site": result.site,
        "n_neurons": result.n_neurons,
        "concepts": sorted(result.scores.concept.unique().tolist()),
        "classifier_accuracy": ours(tables["table1"]).to_dict(),
        "compatibility": ours(t2).to_dict(),
        "neuronvote_by_layer": ours(tables["table3"]).to_dict(),
        "meanselect_by_layer": ours(tables["table4"]).to_dict(),
        "pairwise_overlap": {pos: m.round(4).to_dict() for pos, m in result.pairwise.items()},
        "top_method_neuronvote": core[0] if core else None,
        "definitions": result.definitions,
        "intervals": score_intervals(result, n_boot).round(4).to_dict("records") if n_boot else [],
    }
