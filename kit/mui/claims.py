"""Claims of seed 000 (MUI and the Utility Law) tested by notebooks 01 and 02.

Built from the numbers the notebooks computed (``results.json`` entries and a few frames); every
verdict comes from :func:`kit.core.claims.claim`. The Utility Law and corollaries 3 (PUR ranking)
and 4 (data diversity) are notebook 01's; corollaries 1 (training judgement) and 2 (contamination)
are notebook 02's.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim
from kit.core.stats import mean_diff_ci, wilson_interval
from kit.mui.direction_claims import REQUIRED_IDS as TRAJECTORY_IDS
from kit.mui.direction_claims import study_claims as trajectory_claims  # noqa: F401 (notebook 02)

PAPER = "000"
REQUIRED_IDS = {
    "01_utility_law": ["law.published_per_model", "law.published_pooled", "law.tiny_pooled", "law.tiny_per_task_sign", "pur.table1_recomputed",
                       "pur.ranking_vs_performance", "diversity.mixed_grows_faster", "correctness.no_difference",
                       "masking.key_vs_random",
                       "law.multi_token", "correctness.no_difference_multi_token"],
    "02_training_trajectories": TRAJECTORY_IDS,
}
EQUIVALENCE_FRACTION = 0.10
"""'No difference' (§3.7) is tested as equivalence within +-10% of the mean MUI (our choice: the
paper only reports a non-significant Mann-Whitney test, which cannot show absence of a difference)."""


def _fit_claim(id: str, fit: Mapping[str, Any] | None, where: str, figure: str | None,
               form: str = "mui_vs_log_perf", caveat: str = "") -> Claim:
    """The law's sign on one fit. Both forms predict a negative slope: the paper's ``MUI = -alpha ln P
    + beta`` (slope -alpha) and the inverse ``P = a + b ln MUI`` (slope b)."""
    fit = fit or {}
    r2 = fit.get("r2")
    what = ("MUI falls as performance rises (OLS slope of MUI % on ln P, i.e. -alpha, < 0"
            if form == "mui_vs_log_perf" else "performance falls as MUI rises (OLS slope of performance % on ln MUI < 0")
    return claim(PAPER, "§2, Fig. 3", id,
                 f"Utility Law, {where}: {what}; R² {r2:.2f}, n {fit.get('n')})" if r2 is not None else
                 f"Utility Law, {where}: {what})",
                 fit.get("slope"), ci=(fit.get("ci_low"), fit.get("ci_high")) if fit.get("ci_low") is not None else None,
                 null=0.0, null_how="no relation (slope 0)", direction="less",
                 paper_value="-4.632 (MUI-Eval's figure: MUI = -4.632 ln P + 28.305)" if form == "mui_vs_log_perf"
                 else "negative (inverse log relation)",
                 interval_how="OLS 95% CI of the slope (statsmodels)", figure=figure,
                 caveat="; ".join(x for x in (caveat, "" if r2 is None or r2 >= 0.3 else
                                              f"weak fit: R² {r2:.2f}, the law explains little of the spread") if x),
                 r2=r2)


def utility_law_claims(results: Mapping[str, Any], curves: pd.DataFrame | None = None,
                       correctness: Mapping[str, Any] | None = None, seed: int = 0, n_boot: int = 1000,
                       multi_token: Mapping[str, Any] | None = None) -> list[Claim]:
    """Notebook 01's claims from its recorded ``results`` (``published_law_fit``,
    ``tiny_law_fit_per_task``, ``tiny_rank_per_task``, ``published_pur_max_abs_diff``, ``masking``),
    the §3.6 growth ``curves`` (columns pool, n, repeat, mui), the §3.7 ``correctness`` dict and
    item 7's ``multi_token`` data (``law``, ``ci`` of :func:`kit.mui.multi_token.multi_token_section`;
    None: those two claims are "not testable here")."""
    out = [_fit_claim("law.published_per_model", results.get("published_law_fit_per_model"),
                      "published Table 5, Figure 3's view (one point per general model)", "fig3_published_per_model"),
           _fit_claim("law.published_pooled", results.get("published_law_fit", {}).get("all"),
                      "published Table 5, the 8 general models pooled over benchmarks", "fig2_published_law_general"),
           _fit_claim("law.tiny_pooled", results.get("tiny_law_fit_per_task", {}).get("all"),
                      "tiny world, pooled over tasks", "tiny_law_per_task", form=results.get("law_form", "mui_vs_log_perf"))]
    per_task = {k: v for k, v in results.get("tiny_law_fit_per_task", {}).items() if k != "all" and v.get("slope") is not None}
    k = sum(v["slope"] < 0 for v in per_task.values())
    share, lo, hi = wilson_interval(k, len(per_task))
    out.append(claim(PAPER, "§2, Fig. 3", "law.tiny_per_task_sign",
                     f"Utility Law per task: share of per-task slopes that are negative ({k} of {len(per_task)})",
                     share, ci=(lo, hi), null=0.5, null_how="sign of a slope at random (1/2)", direction="greater",
                     paper_value="negative on every benchmark", interval_how="Wilson 95% interval over tasks",
                     figure="tiny_law_per_task"))

    diff = results.get("published_pur_max_abs_diff")
    out.append(claim(PAPER, "Table 1", "pur.table1_recomputed",
                     f"Table 1's PUR follows from Table 5 with alpha 0.5: max |ours - printed| over "
                     f"{results.get('published_pur_cells_recomputed')} cells",
                     diff, ci=(diff, diff) if diff is not None else None, null_range=(0.0, 0.05), direction="within",
                     null_how="tolerance 0.05 (half the last printed decimal of PUR)", paper_value="Table 1 PUR",
                     interval_how="deterministic recomputation from printed values (no sampling noise)",
                     figure="pur_recomputed_vs_table1"))

    rank = results.get("tiny_rank_per_task", {})
    if "pur" in rank and "performance" in rank:
        tasks = sorted(set(rank["pur"]) & set(rank["performance"]))
        pur = np.array([rank["pur"][t]["spearman"] for t in tasks], dtype=float)
        perf = np.array([rank["performance"][t]["spearman"] for t in tasks], dtype=float)
        ok = np.isfinite(pur) & np.isfinite(perf)
        est = mean_diff_ci(pur[ok], perf[ok], n_boot=n_boot, seed=seed) if ok.sum() >= 2 else (np.nan, None, None)
        out.append(claim(PAPER, "§3.5, Table 1 (corollary 3)", "pur.ranking_vs_performance",
                         "PUR ranks models closer to the true order than performance: mean over tasks of "
                         "Spearman(PUR) - Spearman(performance) against fresh-item truth",
                         est[0], ci=None if est[1] is None else est[1:], null=0.0, direction="greater",
                         null_how="no gain (0)", paper_value="88.6 vs 86.4 Spearman (+2.2)",
                         interval_how=f"paired bootstrap over {int(ok.sum())} tasks"))
    else:
        out.append(claim(PAPER, "§3.5, Table 1 (corollary 3)", "pur.ranking_vs_performance",
                         "PUR ranks models closer to the true order than performance", None,
                         not_testable="no per-task rank agreement recorded"))

    out.append(_growth_claim(curves, seed, n_boot))
    out.append(_correctness_claim(correctness, seed, n_boot))
    out += multi_token_claims(multi_token, seed, n_boot, form=results.get("law_form", "mui_vs_log_perf"))
    m = results.get("masking", {})
    ours = None if m.get("drop_key_a") is None else m["drop_key_a"] - m.get("drop_random_a", np.nan)
    out.append(claim(PAPER, "§3.8", "masking.key_vs_random",
                     f"Masking task A's top {m.get('k_max')} key neurons drops its accuracy more than random neurons "
                     "(drop_key - drop_random, points)", ours, null=0.0, direction="greater",
                     null_how="as many random neurons (mean over repeats)", paper_value="large drop, random ~0",
                     interval_how="none: accuracies are recorded as means only", figure="sec38_masking"))
    return out


def _growth_claim(curves: pd.DataFrame | None, seed: int, n_boot: int) -> Claim:
    statement = ("Corollary 4 (§3.6): at the largest n, the mixed pool's MUI exceeds the mean of the single-capability "
                 "pools' (MUI %, mixed - single)")
    if curves is None or "mixed" not in set(curves["pool"]):
        return claim(PAPER, "§3.6", "diversity.mixed_grows_faster", statement, None, not_testable="no growth curves")
    top = curves[curves["n"] == curves["n"].max()]
    mixed = top[top["pool"] == "mixed"]["mui"].to_numpy(float)
    single = top[top["pool"] != "mixed"].groupby("repeat")["mui"].mean().to_numpy(float)
    if min(len(mixed), len(single)) < 2:
        return claim(PAPER, "§3.6", "diversity.mixed_grows_faster", statement, float(mixed.mean() - single.mean()),
                     null=0.0, null_how="no difference", figure="sec36_growth")
    est = mean_diff_ci(mixed, single, paired=False, n_boot=n_boot, seed=seed)
    return claim(PAPER, "§3.6", "diversity.mixed_grows_faster", statement, est[0], ci=est[1:], null=0.0,
                 direction="greater", null_how="no difference (0)", paper_value="mixed grows faster",
                 interval_how=f"bootstrap over {len(mixed)} random subsets a side", figure="sec36_growth")


def _correctness_claim(ci: Mapping[str, Any] | None, seed: int, n_boot: int) -> Claim:
    statement = ("§3.7: MUI does not differ between correct and incorrect responses (MUI of equal-size chunks, "
                 f"correct - incorrect, %; equivalence within ±{EQUIVALENCE_FRACTION:.0%} of the mean)")
    if not ci or len(ci.get("chunk_mui_correct", [])) < 2 or len(ci.get("chunk_mui_incorrect", [])) < 2:
        return claim(PAPER, "§3.7", "correctness.no_difference", statement, None,
                     not_testable="fewer than 2 chunks of correct or incorrect responses")
    a, b = np.asarray(ci["chunk_mui_correct"], float), np.asarray(ci["chunk_mui_incorrect"], float)
    est = mean_diff_ci(a, b, paired=False, n_boot=n_boot, seed=seed)
    margin = EQUIVALENCE_FRACTION * float(np.mean(np.concatenate([a, b])))
    return claim(PAPER, "§3.7", "correctness.no_difference", statement, est[0], ci=est[1:], null_range=(-margin, margin),
                 null=0.0, direction="within", null_how=f"tolerance ±{margin:.3g} (10% of mean chunk MUI)",
                 paper_value="no significant difference (Mann-Whitney)",
                 interval_how=f"bootstrap over {len(a)} chunks a side", figure="sec37_correct_vs_incorrect")


def multi_token_claims(data: Mapping[str, Any] | None, seed: int = 0, n_boot: int = 1000,
                       form: str = "mui_vs_log_perf") -> list[Claim]:
    """Item 7: the law across models on the multi-token families, and §3.7 on per-sample MUI where
    it can vary (multi-token answers). ``data``: ``{"law": ..., "ci": ...}`` of
    :func:`kit.mui.multi_token.multi_token_section`."""
    data = data or {}
    law = data.get("law") or {}
    if law.get("slope") is None:
        c_law = claim(PAPER, "§2, Fig. 3", "law.multi_token", "Utility Law on the multi-token families (tiny world)",
                      None, not_testable=law.get("not_testable", "no multi-token section run (hub models or multi_token_tasks: [])"))
    else:
        c_law = _fit_claim("law.multi_token", law, law.get("where", "tiny world, multi-token families pooled"),
                           "item7_per_sample_mui", form=form,
                           caveat=(f"the points are {law.get('n_models')} checkpoints of one training run of "
                                   f"{law.get('model')}, not independent models") if law.get("over") == "checkpoints" else "")
    ci = data.get("ci") or {}
    statement = ("§3.7 where per-sample MUI can vary (multi-token answers): a sample's own MUI does not differ between "
                 f"correct and incorrect responses (mean per-sample MUI, correct - incorrect, %; equivalence within "
                 f"±{EQUIVALENCE_FRACTION:.0%} of the mean)")
    a, b = np.asarray(ci.get("per_sample_correct", []), float), np.asarray(ci.get("per_sample_incorrect", []), float)
    if min(len(a), len(b)) < 2:
        c_ok = claim(PAPER, "§3.7", "correctness.no_difference_multi_token", statement, None,
                     not_testable="fewer than 2 correct or incorrect multi-token responses")
    else:
        est = mean_diff_ci(a, b, paired=False, n_boot=n_boot, seed=seed)
        margin = EQUIVALENCE_FRACTION * float(np.mean(np.concatenate([a, b])))
        c_ok = claim(PAPER, "§3.7", "correctness.no_difference_multi_token", statement, est[0], ci=est[1:],
                     null_range=(-margin, margin), null=0.0, direction="within",
                     null_how=f"tolerance ±{margin:.3g} (10% of mean per-sample MUI)",
                     paper_value="no significant difference (Mann-Whitney)",
                     interval_how=f"bootstrap over {len(a)} samples a side", figure="item7_per_sample_mui",
                     caveat="a wrong answer can stop early (fewer response tokens, so fewer key neurons): "
                            "response length is not controlled")
    return [c_law, c_ok]
