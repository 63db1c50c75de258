"""Notebook 05's tables, ours beside the paper's (seed 004, Tables 1-4), which definitions come
closest to the paper, the findings and the key numbers recorded in ``results.json``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from kit.neuronvote import methods as nv
from kit.neuronvote.study import POSITIONS, StudyResult, score_intervals


def _display(df: pd.DataFrame, col: str = "method") -> pd.DataFrame:
    df = df.copy()
    df[col] = df[col].map(lambda m: nv.DISPLAY.get(m, m))
    return df


def table1_accuracy(result: StudyResult, with_paper: bool = True) -> pd.DataFrame:
    """Table 1 analogue: mean test accuracy (over concepts and layers) per method x s, with the
    paper's BERT values (``paper s=..`` columns) where the paper has that method."""
    ours = _display(result.accuracy).pivot_table(index="method", columns="s", values="accuracy", aggfunc="mean")
    ours.columns = [f"ours s={c}" for c in ours.columns]
    if with_paper:
        from kit.data.paper_tables import load_table

        paper = load_table("004_table01_classifier_accuracy_pos_bert").pivot_table(
            index="method", columns="n_neurons", values="accuracy", aggfunc="first")
        paper.columns = [f"paper s={c}" for c in paper.columns]
        ours = ours.join(paper, how="left")
    return ours.round(3)


def table2_compatibility(result: StudyResult, with_paper: bool = True) -> pd.DataFrame:
    """Table 2 analogue: AvgOverlap and NeuronVote per method, averaged over concepts, layers
    (first/middle/last) and s (10/30/50), with the paper's BERT values beside."""
    ours = _display(result.scores).pivot_table(index="method", columns="metric", values="score", aggfunc="mean")
    ours.columns = [f"ours {c}" for c in ours.columns]
    if with_paper:
        from kit.data.paper_tables import load_table

        paper = load_table("004_table02_avgoverlap_neuronvote_pos_bert").pivot_table(
            index="method", columns="metric", values="score", aggfunc="first")
        paper.columns = [f"paper {c}" for c in paper.columns]
        ours = ours.join(paper, how="left")
    return ours.round(3)


def table3_neuronvote(result: StudyResult, with_paper: bool = True, paper_model: str = "BERT",
                      methods: Sequence[str] | None = None,
                      paper_table: str = "004_table03_neuronvote_pos") -> pd.DataFrame:
    """Table 3 analogue: NeuronVote per method x layer position (mean over concepts and s), with
    the paper's ``paper_model`` values at its layers 1/6/12 beside ours (``paper_table``: Table 3
    for POS, ``004_table06_neuronvote_chunking`` for chunking)."""
    df = result.scores[result.scores.metric == "NeuronVote"]
    if methods is not None:
        df = df[df.method.isin(methods)]
    return _by_position_with_paper(df, paper_table if with_paper else None, paper_model)


def table4_meanselect(result: StudyResult, with_paper: bool = True, paper_model: str = "BERT") -> pd.DataFrame:
    """Table 4 analogue: NeuronVote of MeanSelect and Random per layer position, paper beside."""
    df = result.scores[(result.scores.metric == "NeuronVote") & result.scores.method.isin(["meanselect", "random"])]
    return _by_position_with_paper(df, "004_table04_meanselect_neuronvote_pos" if with_paper else None, paper_model)


def _by_position_with_paper(df: pd.DataFrame, paper_table: str | None, paper_model: str) -> pd.DataFrame:
    """Mean NeuronVote per method and layer position, with the published table's row beside it."""
    ours = _display(df).pivot_table(index="method", columns="position", values="score", aggfunc="mean")
    ours = ours[[c for c in POSITIONS if c in ours.columns] + [c for c in ours.columns if c not in POSITIONS]]
    ours.columns = [f"ours {c}" for c in ours.columns]
    if paper_table:
        from kit.data.paper_tables import load_table

        paper = load_table(paper_table)
        paper = paper[paper.model == paper_model].pivot_table(index="method", columns="layer", values="score",
                                                              aggfunc="first")
        paper.columns = [f"paper {paper_model} L{c}" for c in paper.columns]
        ours = ours.join(paper, how="left")
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
            maes[f"{key} MAE"] = float(np.nanmean([np.abs(t[key][a] - t[key][b]).mean() for a, b in pairs]))
        t2 = t["table2"].dropna(subset=["paper NeuronVote"])
        maes["table2 NeuronVote Spearman"] = float(spearmanr(t2["ours NeuronVote"], t2["paper NeuronVote"])[0])
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
    best = closeness["mean MAE"].idxmin()
    parts = [f"{d}: mean |ours - paper| {r['mean MAE']:.3f} (Table 2 {r['table2 MAE']:.3f}, Table 3 "
             f"{r['table3 MAE']:.3f}, Table 4 {r['table4 MAE']:.3f}; Spearman of Table 2's NeuronVote order "
             f"{r['table2 NeuronVote Spearman']:+.2f})" for d, r in closeness.iterrows()]
    lines = ["Definition sets against the paper's Tables 2-4: " + "; ".join(parts) + "."]
    if len(closeness) > 1:
        other = closeness["mean MAE"].drop(best)
        margin = float(other.min() - closeness.loc[best, "mean MAE"])
        rho = closeness["table2 NeuronVote Spearman"]
        agree = rho.idxmax() == best
        lines.append(f"Closer by the mean absolute gap: {best} (by {margin:.3f})"
                     + ("; it also has the higher rank agreement." if agree else
                        f"; but {rho.idxmax()} orders the methods more like Table 2 (Spearman "
                        f"{rho.max():+.2f} vs {rho[best]:+.2f}): the two criteria disagree."))
    return lines


def findings(result: StudyResult, table1: pd.DataFrame, table2: pd.DataFrame, table3: pd.DataFrame,
                  table4: pd.DataFrame) -> list[str]:
    """Plain-language findings with our numbers and the paper's, computed from the tables
    (``all_tables(result)``)."""
    t1, t2, t3, t4 = table1, table2, table3, table4
    lines = [f"[{result.model}, site {result.site}, {result.n_neurons} neurons/layer, "
             f"{result.scores.concept.nunique()} concepts]"]
    nv_col = "ours NeuronVote"
    order = ranking_of(t2, nv_col)
    s_used = sorted(result.scores.s.unique().tolist())
    layers = sorted(result.scores.position.unique().tolist(), key=lambda p: (p not in POSITIONS, POSITIONS.index(p) if p in POSITIONS else p))
    lines.append(f"NeuronVote ranking (mean over concepts, layers {'/'.join(layers)}, s={'/'.join(map(str, s_used))}): "
                 + ", ".join(f"{m} {t2.loc[m, nv_col]:.3f}" for m in order))
    if "paper NeuronVote" in t2:
        paper_order = [m for m in ranking_of(t2, "paper NeuronVote") if not np.isnan(t2.loc[m, "paper NeuronVote"])]
        lines.append("paper (BERT): " + ", ".join(f"{m} {t2.loc[m, 'paper NeuronVote']:.3f}" for m in paper_order))
        gaps = (t2[nv_col] - t2["paper NeuronVote"]).dropna()
        lines.append("gap ours - paper NeuronVote: " + ", ".join(f"{m} {g:+.3f}" for m, g in gaps.items()))
        core = [m for m in order if m in paper_order and m != "Random"]
        lines.append(f"top method here: {core[0] if core else '-'}; in the paper (BERT, POS): {paper_order[0]}.")
    if "Random" in t2.index:
        d = result.n_neurons
        chance = float(np.mean([s / (2 * d - s) for s in s_used]))  # E|A∩B| / E|A∪B| for random top-s sets
        lines.append(f"Random baseline: AvgOverlap {t2.loc['Random', 'ours AvgOverlap']:.3f}, "
                     f"NeuronVote {t2.loc['Random', nv_col]:.3f} (chance IoU of random top-s sets ~ {chance:.3f}).")
    acc_cols = [c for c in t1.columns if c.startswith("ours s=")]
    if acc_cols:
        best = t1[acc_cols[0]].idxmax()
        lines.append(f"classifier accuracy at {acc_cols[0][5:]}: best {best} {t1.loc[best, acc_cols[0]]:.3f}, "
                     f"Random {t1.loc['Random', acc_cols[0]]:.3f}" if "Random" in t1.index else "")
        if "Random" in t1.index:
            lines.append(f"classifier accuracy at {acc_cols[-1][5:]}: Random {t1.loc['Random', acc_cols[-1]]:.3f} vs "
                         f"best {t1[acc_cols[-1]].max():.3f} (the paper's point: more neurons let even Random score well).")
    pos_cols = [c for c in t3.columns if c.startswith("ours ")]
    if "Probeless" in t3.index and len(pos_cols) >= 2:
        lines.append("Probeless NeuronVote by layer: " + ", ".join(f"{c[5:]} {t3.loc['Probeless', c]:.3f}" for c in pos_cols))
    for m in ("LCA", "Lasso"):
        if m in t3.index and len(pos_cols) >= 2:
            lines.append(f"{m} NeuronVote by layer: " + ", ".join(f"{c[5:]} {t3.loc[m, c]:.3f}" for c in pos_cols)
                         + " (paper: drops at the last layer)")
    if "MeanSelect" in t4.index:
        cols = [c for c in t4.columns if c.startswith("ours ")]
        lines.append("MeanSelect NeuronVote by layer: " + ", ".join(f"{c[5:]} {t4.loc['MeanSelect', c]:.3f}" for c in cols))
    return [l for l in lines if l]


def all_tables(result: StudyResult, with_paper: bool = True, paper_model: str = "BERT") -> dict[str, pd.DataFrame]:
    """Tables 1-4 analogues of one study, the paper's numbers beside ours."""
    return {
        "table1": table1_accuracy(result, with_paper),
        "table2": table2_compatibility(result, with_paper),
        "table3": table3_neuronvote(result, with_paper, paper_model),
        "table4": table4_meanselect(result, with_paper, paper_model),
    }


def key_numbers(result: StudyResult, tables: Mapping[str, pd.DataFrame], n_boot: int = 0) -> dict:
    """Our numbers (never the paper's) of one study, as plain dicts for ``run.record``; with
    ``n_boot`` > 0 also ``intervals``: :func:`score_intervals` as a list of records."""
    ours = lambda df: df[[c for c in df.columns if c.startswith("ours ")]]  # noqa: E731
    t2 = tables["table2"]
    core = [m for m in ranking_of(t2, "ours NeuronVote") if m not in ("Random", "MeanSelect", "IoU-AP (NeuroX)")]
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
