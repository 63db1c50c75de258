"""Claims of seed 001 (shortcut neurons, trustworthy evaluation) tested by notebook 03.

Table 2's Δacc of a few points on a few hundred items needs an interval, so the accuracies are
re-measured per item here (:func:`kit.shortcut.evaluate.item_correct`, the same dynamic-patching generation,
greedy or seeded sampling by ``TaskData.decoding``, as :func:`kit.shortcut.evaluate.accuracies`, which returns
means only) and bootstrapped over items.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim
from kit.core.stats import bootstrap_ci, bootstrap_groups_ci
from kit.shortcut.evaluate import item_correct, te_items  # noqa: F401 (te_items: API)
from kit.shortcut.items import TaskData
from kit.shortcut.scores import random_neurons
from kit.shortcut.patching import Neuron

PAPER = "001"
REQUIRED_IDS = {"03_shortcut_neurons": ["te.contaminated_drop", "te.toward_ref", "te.clean_unchanged",
                                        "sparsity.located_vs_random", "side_effects.unchanged",
                                        "agreement.te_vs_ori", "agreement.table9"]}
UNCHANGED_MARGIN = 2.0
"""'Leaves clean models / other tasks unchanged' is tested as equivalence within ±2 accuracy
points (our choice; the paper's Tables 2-3 show changes of about 1 point and call them small)."""


def side_items(models: Mapping[str, object], base, tasks: Mapping[str, TaskData], neurons: Sequence[Neuron],
               max_rows: int = 2048, max_new_tokens: int | None = None) -> dict[tuple[str, str], np.ndarray]:
    """Per (variant, task) the per-item (ori, te) correctness behind Table 3: array (2, items)."""
    return {(label, t): item_correct(m, base, d, [[], list(neurons)], max_rows, max_new_tokens)
            for label, m in models.items() for t, d in tasks.items()}


def sparsity_items(model, base, test: TaskData, ranked: Sequence[Neuron], n: int, seed: int = 0,
                   max_rows: int = 2048, max_new_tokens: int | None = None) -> np.ndarray:
    """(2, items) correctness of ``model`` with the top ``n`` located neurons patched, then ``n``
    random ones (Figure 3 at one N, per item)."""
    from kit.shortcut.pool import resolve

    L, d = base.cfg.n_layers, base.cfg.d_mlp
    return item_correct(resolve(model), base, test, [list(ranked[:n]), random_neurons(L, d, n, seed=seed)], max_rows, max_new_tokens)


def _paper_range(contaminated: bool) -> str:
    from kit.data.paper_tables import load_table

    t = load_table("001_table02_trustworthy_eval_gsm8k")
    is_con = t["model_variant"].str.contains("GSM-i")
    d = pd.to_numeric(t.loc[is_con == contaminated, "delta_acc"].astype(str).str.replace("+", "", regex=False),
                      errors="coerce").dropna()
    return f"Δacc {d.min():+.1f} to {d.max():+.1f} (Table 2)" if len(d) else "Table 2"


def _paper_rho() -> str:
    from kit.data.paper_tables import load_table

    t = load_table("001_text_numbers")
    hit = t[t.iloc[:, 0].astype(str).str.contains("Spearman correlation of TE")]
    return f"TE ρ {hit.iloc[0, 1]} (§4.3, simulation)" if len(hit) else "Fig. 4"


def _leak(groups) -> float:
    """Ori - Ref in points from ``[(ori,), (ref,)]`` per-item correctness (two independent item sets)."""
    return float(100 * (groups[0][0].mean() - groups[1][0].mean()))


def _leak_claim(table: str, cid: str, statement: str, d: Mapping[str, np.ndarray], paper_value: str, kw) -> Claim:
    """Ori - Ref > 0 of one row (per-item ``d["ori"]``, ``d["ref"]``), bootstrapped over both item sets."""
    leak = bootstrap_groups_ci(_leak, [(d["ori"],), (d["ref"],)], **kw)
    return claim(PAPER, table, cid, statement, leak[0], ci=leak[1:], null=0.0, direction="greater",
                 null_how="no leak (0)", paper_value=paper_value,
                 interval_how=f"bootstrap over {len(d['ori'])} test and {len(d['ref'])} fresh items")


def _mean_delta(groups) -> float:
    return float(100 * np.mean([np.mean(te - ori) for ori, te in groups]))


def shortcut_claims(te: Mapping[str, Mapping[str, np.ndarray]], contaminated: Sequence[str],
                    side: Mapping[tuple[str, str], np.ndarray], sparsity: np.ndarray | None, table2: pd.DataFrame,
                    table9: pd.DataFrame, n_patched: int, seed: int = 0, n_boot: int = 1000,
                    margin: float = UNCHANGED_MARGIN, a2_label: str = "+train split") -> list[Claim]:
    """Notebook 03's claims. ``te`` from :func:`te_items`, ``side`` from :func:`side_items`,
    ``sparsity`` from :func:`sparsity_items`; ``table2`` the notebook's Table 2 (variant, ori, te,
    ref in %), ``table9`` the paper's printed Table 9; ``a2_label`` the train-split fine-tune (the
    paper's +GSM8K Train, assumption A2)."""
    t2 = table2.set_index("variant")
    for v, d in te.items():  # the per-item re-measurement must reproduce the notebook's Table 2
        if v in t2.index and not np.isclose(100 * d["ori"].mean(), t2.loc[v, "ori"], atol=1e-3):
            raise ValueError(f"per-item Ori of {v} ({100 * d['ori'].mean():.3f}) differs from Table 2's "
                             f"({t2.loc[v, 'ori']:.3f}): not the same models, items or neurons?")
    con = [v for v in te if v in contaminated]
    clean = [v for v in te if v not in contaminated]
    kw = dict(n_boot=n_boot, seed=seed)
    out = []
    for label in con + clean:  # one claim per variant: Δacc with its interval over items
        d = te[label]
        est = bootstrap_ci(lambda o, t: float(100 * np.mean(t - o)), d["ori"], d["te"], **kw)
        common = dict(ci=est[1:], interval_how=f"paired bootstrap over {len(d['ori'])} test items", figure=None)
        if label in con:
            out.append(claim(PAPER, "Table 2", f"te.delta[{label}]", f"TE lowers the test accuracy of contaminated {label} "
                             "(Δacc = TE - Ori, points)", est[0], null=0.0, direction="less", null_how="no change (0)",
                             paper_value=_paper_range(True), **common))
        else:
            out.append(claim(PAPER, "Table 2", f"te.delta[{label}]", f"TE leaves the clean {label} unchanged (Δacc, points)",
                             est[0], null=0.0, null_range=(-margin, margin), direction="within",
                             null_how=f"tolerance ±{margin:g} points", paper_value=_paper_range(False), **common))
    for label in con:  # the precondition of each contaminated row: its test score is inflated at all
        out.append(_leak_claim("Table 2", f"te.leak[{label}]", f"contaminated {label}'s test score is inflated: "
                               "Ori - Ref (points; the precondition of lowering it)", te[label],
                               "Ori above Ref (Table 2)", kw))
    pooled = [("te.contaminated_drop", con, "less", "TE lowers contaminated models' test accuracy (mean Δacc over "
               f"{len(con)} contaminated variants, points)"),
              ("te.clean_unchanged", clean, "within", f"TE leaves clean models unchanged (mean Δacc over {len(clean)} "
               "clean variants, points)")]
    for cid, labels, direction, statement in pooled:
        if not labels:
            out.append(claim(PAPER, "Table 2", cid, statement, None, not_testable="no such variants in this profile"))
            continue
        est = bootstrap_groups_ci(_mean_delta, [(te[v]["ori"], te[v]["te"]) for v in labels], **kw)
        band = dict(null_range=(-margin, margin), null_how=f"tolerance ±{margin:g} points") if direction == "within" \
            else dict(null_how="no change (0)")
        out.append(claim(PAPER, "Table 2", cid, statement, est[0], ci=est[1:], null=0.0, direction=direction,
                         paper_value=_paper_range(direction == "less"), **band,
                         interval_how="bootstrap over test items within each variant"))

    # |Ori - Ref| - |TE - Ref| > 0: TE moved the contaminated scores toward the fresh-item score
    def toward(groups):
        k = len(groups) // 2
        return float(100 * np.mean([abs(o.mean() - r[0].mean()) - abs(t.mean() - r[0].mean())
                                    for (o, t), r in zip(groups[:k], groups[k:])]))
    if con:
        groups = [(te[v]["ori"], te[v]["te"]) for v in con] + [(te[v]["ref"],) for v in con]
        est = bootstrap_groups_ci(toward, groups, **kw)
        out.append(claim(PAPER, "Table 2", "te.toward_ref", "TE moves contaminated scores toward Ref: mean of "
                         "|Ori - Ref| - |TE - Ref| over contaminated variants (points)", est[0], ci=est[1:], null=0.0,
                         direction="greater", null_how="no move (0)", paper_value="TE close to Ref (Table 2)",
                         interval_how="bootstrap over test and fresh items within each variant"))
    else:
        out.append(claim(PAPER, "Table 2", "te.toward_ref", "TE moves contaminated scores toward Ref", None,
                         not_testable="no contaminated variants"))
    # the same statistic on clean models: the paper's Table 2 has them near Ref both ways; TE can move them away
    st = "TE moves clean scores toward Ref: mean of |Ori - Ref| - |TE - Ref| over clean variants (points; < 0: away)"
    if clean:
        groups = [(te[v]["ori"], te[v]["te"]) for v in clean] + [(te[v]["ref"],) for v in clean]
        est = bootstrap_groups_ci(toward, groups, **kw)
        out.append(claim(PAPER, "Table 2", "te.clean_toward_ref", st, est[0], ci=est[1:], null=0.0, direction="greater",
                         null_how="no move (0)", paper_value="clean Ori and TE both near Ref (Table 2)",
                         interval_how="bootstrap over test and fresh items within each variant"))
    else:
        out.append(claim(PAPER, "Table 2", "te.clean_toward_ref", st, None, not_testable="no clean variants"))
    # A2 (section 3.4): the paper reads +GSM8K Train's TE drop as a format shortcut removed
    st = f"A2: TE lowers the train-split fine-tune {a2_label} (Δacc = TE - Ori, points), as it lowers +GSM8K Train"
    if a2_label in te:
        d = te[a2_label]
        est = bootstrap_ci(lambda o, t: float(100 * np.mean(t - o)), d["ori"], d["te"], **kw)
        out.append(claim(PAPER, "Table 2", "te.a2_train_split", st, est[0], ci=est[1:], null=0.0, direction="less",
                         null_how="no change (0)", paper_value="-6.5 / -4.3 (Table 2, +GSM8K Train)",
                         interval_how=f"paired bootstrap over {len(d['ori'])} test items"))
    else:
        out.append(claim(PAPER, "Table 2", "te.a2_train_split", st, None, not_testable=f"no {a2_label!r} variant"))

    st = "Located neurons matter more than random ones: accuracy of contaminated M_con with " \
         f"{n_patched} random neurons patched minus with the {n_patched} located ones (points)"
    if sparsity is None:
        out.append(claim(PAPER, "Fig. 3", "sparsity.located_vs_random", st, None, not_testable="no sparsity data"))
    else:
        est = bootstrap_ci(lambda loc, rnd: float(100 * np.mean(rnd - loc)), sparsity[0], sparsity[1], **kw)
        out.append(claim(PAPER, "Fig. 3", "sparsity.located_vs_random", st, est[0], ci=est[1:], null=0.0,
                         direction="greater", null_how="random neurons (same count)", figure="fig3_sparsity_curve",
                         paper_value="located ≪ random (Fig. 3)",
                         interval_how=f"paired bootstrap over {sparsity.shape[1]} test items"))

    st = f"Patching leaves other tasks unchanged: mean Δacc over {len(side)} (variant, task) cells (points)"
    if side:
        est = bootstrap_groups_ci(_mean_delta, [(a[0], a[1]) for a in side.values()], **kw)
        out.append(claim(PAPER, "Table 3", "side_effects.unchanged", st, est[0], ci=est[1:], null=0.0,
                         null_range=(-margin, margin), direction="within", null_how=f"tolerance ±{margin:g} points",
                         paper_value="small changes on MAWPS/MMLU (Table 3)",
                         interval_how="bootstrap over items within each cell"))
    else:
        out.append(claim(PAPER, "Table 3", "side_effects.unchanged", st, None, not_testable="no side tasks"))
    if side:  # the pooled mean can hide one large cell (e.g. +5x test-Syn on facts-mc): the largest, on its own
        (v, t), a = max(side.items(), key=lambda kv: abs(float(np.mean(kv[1][1] - kv[1][0]))))
        est = bootstrap_ci(lambda o, p: float(100 * np.mean(p - o)), a[0], a[1], **kw)
        out.append(claim(PAPER, "Table 3", "side_effects.largest_cell", f"Patching leaves {v} on {t} unchanged "
                         "(Δacc, points; the cell with the largest |Δacc|)", est[0], ci=est[1:], null=0.0,
                         null_range=(-margin, margin), direction="within", null_how=f"tolerance ±{margin:g} points",
                         paper_value="small changes on MAWPS/MMLU (Table 3)", caveat="chosen as the largest of "
                         f"{len(side)} cells", interval_how=f"paired bootstrap over {a.shape[1]} items"))

    out.append(_agreement_claim("agreement.te_vs_ori", "tiny world Table 2 variants", table2["te"], table2["ori"],
                                table2["ref"], kw, "fig4_agreement_tiny"))
    out.append(_agreement_claim("agreement.table9", "the paper's printed Table 9 (real models vs MixEval)",
                                table9["te"], table9["ori"], table9["ref_mixeval"], kw, "fig4_agreement_table9"))
    return out


def _paper_table12() -> dict[str, str]:
    from kit.data.paper_tables import load_table

    t = load_table("001_table12_kieval_arc_challenge")
    return {str(r["model"]): str(r["delta_acc"]) for _, r in t.iterrows()}


def cheater_claims(te: Mapping[str, Mapping[str, np.ndarray]], contaminated: Sequence[str], table12: pd.DataFrame,
                   seed: int = 0, n_boot: int = 1000, margin: float = UNCHANGED_MARGIN) -> list[Claim]:
    """Table 12's claims (``te`` from :func:`te_items` on the cheater rows): per cheater its leak
    (Ori - Ref > 0: the test score is inflated, the precondition of detecting it) and TE's drop
    (Δacc < 0, the paper: -16.0 SFT, -17.5 PT); per clean row Δacc within ±``margin`` (the paper: +2.9)."""
    t12 = table12.set_index("variant")
    for v, d in te.items():
        if v in t12.index and not np.isclose(100 * d["ori"].mean(), t12.loc[v, "ori"], atol=1e-3):
            raise ValueError(f"per-item Ori of {v} differs from Table 12's: not the same models, items or neurons?")
    try:
        paper = _paper_table12()
    except Exception:  # the printed table is context only
        paper = {}
    kw = dict(n_boot=n_boot, seed=seed)
    out = []
    for label, d in te.items():
        pv = next((v for k, v in paper.items() if k.startswith(label) or label.startswith(k)), None)
        pv = f"Δacc {pv} (Table 12, ARC-Challenge)" if pv else "Table 12"
        est = bootstrap_ci(lambda o, t: float(100 * np.mean(t - o)), d["ori"], d["te"], **kw)
        common = dict(ci=est[1:], null=0.0, paper_value=pv, interval_how=f"paired bootstrap over {len(d['ori'])} test items")
        if label in contaminated:
            out.append(_leak_claim("Table 12", f"cheaters.leak[{label}]", f"{label}'s test score is inflated: Ori - Ref "
                                   "(points; the precondition of detecting it)", d,
                                   "Ori above Normal's (Table 12: no Ref there)", kw))
            out.append(claim(PAPER, "Table 12", f"cheaters.delta[{label}]", f"TE lowers the cheater {label}'s test "
                             "accuracy (Δacc = TE - Ori, points)", est[0], direction="less", null_how="no change (0)", **common))
        else:
            out.append(claim(PAPER, "Table 12", f"cheaters.delta[{label}]", f"TE leaves the clean {label} unchanged "
                             "(Δacc, points)", est[0], null_range=(-margin, margin), direction="within",
                             null_how=f"tolerance ±{margin:g} points", **common))
    return out


PUBLIC_RULE = "sum (exact)"
"""The public code's ranking (``src/change_scores_SFT.py``: S + C - 1, exact-match causal score)."""


def rule_choice_claim(rules: pd.DataFrame | None, chosen: str) -> Claim:
    """Whether the chosen ranking rule beats the public code's sum on the held-out items: the
    chosen rule's objective minus the public rule's, with the interval of
    :func:`kit.shortcut.ranking.rule_intervals` (``rules`` with its ``vs_chosen`` columns)."""
    st = (f"The chosen ranking rule {chosen!r} beats the public code's {PUBLIC_RULE!r} on held-out test items: "
          "objective (M_con drop - |M_un change|) of the chosen minus the public rule's (points)")
    kw = dict(paper_value="the paper does not say how eq. 3 and eq. 4 combine; its code adds them")
    if rules is None or "vs_chosen" not in rules:
        return claim(PAPER, "§3.3 ranking", "rules.chosen_vs_public", st, None, not_testable="no held-out items", **kw)
    if chosen == PUBLIC_RULE:
        return claim(PAPER, "§3.3 ranking", "rules.chosen_vs_public", st, None,
                     not_testable="the chosen rule is the public code's", **kw)
    r = rules.set_index("rule").loc[PUBLIC_RULE]
    n = rules.attrs["items"]["con"].shape[1] if "items" in rules.attrs else "the"
    return claim(PAPER, "§3.3 ranking", "rules.chosen_vs_public", st, -float(r.vs_chosen),
                 ci=(-float(r.vs_chosen_high), -float(r.vs_chosen_low)), null=0.0, direction="greater",
                 null_how="no difference (0)", interval_how=f"paired bootstrap over {n} held-out test items",
                 caveat="the chosen rule is the best of 9 on these same items (selection inflates the gap)", **kw)


def _agreement_claim(cid, where, te, ori, ref, kw, figure) -> Claim:
    from scipy.stats import spearmanr

    def gain(t, o, r):
        if np.ptp(r) == 0 or np.ptp(t) == 0 or np.ptp(o) == 0:
            return float("nan")
        return float(spearmanr(t, r).statistic - spearmanr(o, r).statistic)

    te, ori, ref = (np.asarray(x, float) for x in (te, ori, ref))
    est = bootstrap_ci(gain, te, ori, ref, **kw)
    return claim(PAPER, "Fig. 4", cid, f"TE agrees with the reference better than Ori on {where}: "
                 "Spearman(TE, Ref) - Spearman(Ori, Ref)", est[0], ci=est[1:], null=0.0, direction="greater",
                 null_how="no gain (0)", paper_value=_paper_rho(),
                 interval_how=f"bootstrap over {len(te)} models", figure=figure)
