"""Claims of seed 004 (NeuronVote) tested by notebook 05.

The paper's tables average over concepts; so do ours, and the intervals come from a bootstrap over
concepts (each concept's scores averaged over layers and s first). That is the variation a new
concept set would bring. Seed-stability: when the study was rerun under further seeds (new
tie-breaks, probe initialisations and Random draws; ``StudyResult.reseed_scores``), every
per-method claim (``{metric}.{method}_above_random``) is bootstrapped under each seed and its
interval is the union of the per-seed intervals, so it is "supported" only when every seed's
interval excludes the null (Random's score).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim
from kit.core.stats import bootstrap_ci

PAPER = "004"
REQUIRED_IDS = {"05_neuronvote": ["order.paper_agreement", "order.random_lowest", "layer.probing_trend",
                                  "overlap.above_random", "meanselect.above_random"]}
PROBING = ("lca", "lasso", "ridge")


def per_concept(scores: pd.DataFrame, metric: str, layers=None) -> pd.DataFrame:
    """concept x method means of ``metric`` (over layers and s; ``layers`` to restrict)."""
    d = scores[scores["metric"] == metric]
    if layers is not None:
        d = d[d["layer"].isin(layers)]
    return d.groupby(["concept", "method"])["score"].mean().unstack("method")


def _paper_table2(metric: str) -> pd.Series:
    from kit.data.paper_tables import load_table

    from kit.neuronvote.methods import DISPLAY

    t = load_table("004_table02_avgoverlap_neuronvote_pos_bert")
    key = {v: k for k, v in DISPLAY.items()}
    t = t[t["metric"] == metric]
    return pd.Series(t["score"].to_numpy(float), index=[key.get(m, m.lower()) for m in t["method"]])


def _paper_overlap_text() -> str:
    ao = _paper_table2("AvgOverlap")
    rest = ao.drop("random", errors="ignore")
    return f"AvgOverlap {rest.min():.3f}-{rest.max():.3f} vs Random {ao.get('random', float('nan')):.3f} (BERT)"


def _paper_layer_trend() -> float:
    from kit.data.paper_tables import load_table

    t = load_table("004_table03_neuronvote_pos")
    t = t[(t["model"] == "BERT") & t["method"].str.lower().isin(PROBING)]
    by = t.groupby("layer")["score"].mean()
    return float(by.loc[by.index.max()] - by.loc[by.index.min()])


def neuronvote_claims(result, seed: int = 0, n_boot: int = 1000, prefix: str = "") -> list[Claim]:
    """Claims from one :class:`kit.neuronvote.study.StudyResult`; ``prefix`` tells models apart."""
    from scipy.stats import spearmanr

    kw = dict(n_boot=n_boot, seed=seed)
    who = f"{result.model} ({result.site})"
    nv = per_concept(result.scores, "NeuronVote")
    n = len(nv)
    how = f"bootstrap over {n} concepts"
    out = []

    paper = _paper_table2("NeuronVote")
    methods = [m for m in paper.index if m in nv.columns]
    M = nv[methods].to_numpy(float)

    def agree(rows):
        ours = np.nanmean(rows, axis=0)
        return float(spearmanr(ours, paper[methods].to_numpy()).statistic) if np.ptp(ours) > 0 else float("nan")

    est = bootstrap_ci(agree, M, **kw)
    out.append(claim(PAPER, "Table 2", prefix + "order.paper_agreement",
                     f"{who}: the methods' NeuronVote order matches the paper's (Spearman over {len(methods)} methods "
                     "with Table 2's BERT values)", est[0], ci=est[1:], null=0.0, direction="greater",
                     null_how="unrelated orders (0)", paper_value="LCA/Probeless top, Random last",
                     interval_how=how, figure="fig1_pairwise_overlap_encoder" if not prefix else None))

    others = [m for m in methods if m != "random"]
    if "random" in nv.columns and others:
        R = nv[others].to_numpy(float) - nv[["random"]].to_numpy(float)
        est = bootstrap_ci(lambda r: float(np.nanmin(np.nanmean(r, axis=0))), R, **kw)
        out.append(claim(PAPER, "Table 2", prefix + "order.random_lowest",
                         f"{who}: every method's NeuronVote beats Random's (smallest mean margin over the methods)",
                         est[0], ci=est[1:], null=0.0, direction="greater", null_how="Random's NeuronVote",
                         paper_value=f"Random {paper.get('random', float('nan')):.3f}, lowest", interval_how=how))

    layers = sorted(result.scores["layer"].unique())
    probing = [m for m in PROBING if m in nv.columns]
    if len(layers) < 2 or not probing:
        out.append(claim(PAPER, "Table 3", prefix + "layer.probing_trend", f"{who}: probing methods' NeuronVote falls "
                         "at the last layer", None, not_testable="one layer only"))
    else:
        first = per_concept(result.scores, "NeuronVote", [layers[0]])[probing].mean(axis=1)
        last = per_concept(result.scores, "NeuronVote", [layers[-1]])[probing].mean(axis=1)
        idx = first.index.intersection(last.index)
        est = bootstrap_ci(lambda a, b: float(np.mean(b - a)), first[idx].to_numpy(), last[idx].to_numpy(), **kw)
        out.append(claim(PAPER, "Table 3", prefix + "layer.probing_trend",
                         f"{who}: NeuronVote of the probing methods (LCA, Lasso, Ridge) is lower at the last layer than "
                         f"at the first (last - first, layers {layers[0]} and {layers[-1]})", est[0], ci=est[1:], null=0.0,
                         direction="less", null_how="no change (0)",
                         paper_value=f"{_paper_layer_trend():+.3f} (BERT, layer 12 - layer 1)", interval_how=how))

    ao = per_concept(result.scores, "AvgOverlap")
    ao_methods = [m for m in PROBING + ("probeless", "iou", "gaussian") if m in ao.columns]
    if "random" in ao.columns and ao_methods:
        est = bootstrap_ci(lambda a, r: float(np.mean(a - r)), ao[ao_methods].mean(axis=1).to_numpy(),
                           ao["random"].to_numpy(), **kw)
        out.append(claim(PAPER, "Fig. 1, Table 2", prefix + "overlap.above_random",
                         f"{who}: the methods' top-s sets overlap each other more than Random's overlap them "
                         "(mean AvgOverlap of the paper's methods - Random's)", est[0], ci=est[1:], null=0.0,
                         direction="greater", null_how="Random's AvgOverlap",
                         paper_value=_paper_overlap_text(),
                         interval_how=how))

    if {"meanselect", "random"} <= set(nv.columns):
        est = bootstrap_ci(lambda a, r: float(np.mean(a - r)), nv["meanselect"].to_numpy(), nv["random"].to_numpy(), **kw)
        out.append(claim(PAPER, "Table 4", prefix + "meanselect.above_random",
                         f"{who}: MeanSelect's NeuronVote exceeds Random's (difference)", est[0], ci=est[1:], null=0.0,
                         direction="greater", null_how="Random's NeuronVote", paper_value="MeanSelect ≫ Random (Table 4)",
                         interval_how=how, figure="fig2_meanselect_overlap_encoder" if not prefix else None))
    else:
        out.append(claim(PAPER, "Table 4", prefix + "meanselect.above_random", f"{who}: MeanSelect beats Random", None,
                         not_testable="MeanSelect or Random not run"))
    out += method_claims(result, seed=seed, n_boot=n_boot, prefix=prefix)
    return out


def _seed_tables(result) -> dict[int, pd.DataFrame]:
    rs = getattr(result, "reseed_scores", None)
    if rs is None or rs.empty:
        return {None: result.scores}
    return {int(k): g.drop(columns="seed") for k, g in rs.groupby("seed")}


def method_claims(result, seed: int = 0, n_boot: int = 1000, prefix: str = "") -> list[Claim]:
    """One claim per method and metric: its AvgOverlap / NeuronVote exceeds Random's (the mean over
    concepts of the paired difference, bootstrap over concepts; with reseeds, the union of the
    per-seed intervals and the mean over seeds). The paper's value is its Table 2 number for the
    method (BERT) beside Random's."""
    from kit.neuronvote.methods import DISPLAY

    who = f"{result.model} ({result.site})"
    tables = _seed_tables(result)
    out = []
    for metric in ("AvgOverlap", "NeuronVote"):
        paper = _paper_table2(metric)
        per = {k: per_concept(t, metric) for k, t in tables.items()}
        first = next(iter(per.values()))
        if "random" not in first.columns:
            continue
        for m in [c for c in first.columns if c != "random"]:
            ests = [bootstrap_ci(lambda a, r: float(np.mean(a - r)), p[m].to_numpy(float), p["random"].to_numpy(float),
                                 n_boot=n_boot, seed=seed) for p in per.values()]
            ours = float(np.mean([e[0] for e in ests]))
            lo, hi = float(min(e[1] for e in ests)), float(max(e[2] for e in ests))
            n_seeds = len(ests)
            how = f"bootstrap over {len(first)} concepts" + (f", union over {n_seeds} study seeds" if n_seeds > 1 else "")
            pv = (f"{paper[m]:.3f} vs Random {paper.get('random', float('nan')):.3f} (BERT)" if m in paper.index
                  else None)
            out.append(claim(PAPER, "Table 2", f"{prefix}{metric.lower()}.{m}_above_random",
                             f"{who}: {DISPLAY.get(m, m)}'s {metric} exceeds Random's (mean over concepts of the "
                             "difference, layers and s averaged)", ours, ci=(lo, hi), null=0.0, direction="greater",
                             null_how=f"Random's {metric} (mean of its draws)", paper_value=pv, interval_how=how,
                             seed_means=[round(e[0], 4) for e in ests]))
    return out
