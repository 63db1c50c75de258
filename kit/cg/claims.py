"""Claims of seed 002 (Competency Gaps) tested by notebook 04, each beside a null control.

The controls (no public code exists; these are ours):

- model gaps against **shuffled correctness**: the per-item scores ``m_b(i)`` permuted within each
  benchmark keep the accuracy but break any tie between concepts and failures. A concept active on
  few items gets ``X_model < eps`` by chance whenever all of them are wrong, so the gap count of a
  shuffled model is the number to beat.
- the profile's **split-half reliability**: X_model on two random halves of the items, Spearman over
  concepts, repeated; 0 is what a profile of noise gets.
- adversarial removal against the **same removal under shuffled correctness**: removing the items
  salient for the best concepts lowers the median X_model even when "best" is noise (regression to
  the mean), so the paper's shift is only informative beyond that.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from kit.cg import metrics as cg
from kit.cg import robustness as cg_robustness
from kit.cg import significance as cg_significance
from kit.core.claims import Claim, claim
from kit.core.stats import null_band, rank_permutation_null

PAPER = "002"
MODEL_IDS = ("model_gaps.vs_shuffled", "model_gaps.significant", "model_gaps.split_half",
             "model_gaps.split_half_supported", "robustness.dropout_vs_shuffled", "robustness.adversarial_best",
             "robustness.adversarial_worst")
REQUIRED_IDS = {"04_competency_gaps": ["benchmark_gaps.missing_alive", *MODEL_IDS, "sae_swap.missing_frac_rank"]}


def shuffled_scores(scores: Mapping[str, Sequence[float]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per-item scores permuted within each benchmark (accuracy kept, concept ties broken)."""
    return {b: rng.permutation(np.asarray(s, float)) for b, s in scores.items()}


def n_gaps(acts: Mapping[str, Any], scores: Mapping[str, Sequence[float]], eps: float = cg.EPSILON) -> int:
    return int((cg.model_gap_classes(cg.x_model(acts, scores), eps) == "gap").sum())


def gap_null(acts, scores, eps: float = cg.EPSILON, n_perm: int = 100, seed: int = 0) -> np.ndarray:
    """Model-gap counts of ``n_perm`` shuffled-correctness copies of the model."""
    rng = np.random.default_rng(seed)
    return np.array([n_gaps(acts, shuffled_scores(scores, rng), eps) for _ in range(n_perm)], dtype=float)


def split_half(acts, scores, n_splits: int = 50, seed: int = 0, min_support: int = 1) -> np.ndarray:
    """Spearman over concepts of X_model on two random halves of every benchmark's items
    (concepts defined on both halves and active on at least ``min_support`` items of the whole
    suite), for ``n_splits`` random splits."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    keep = cg_significance.concept_support(acts) >= min_support
    out = []
    for _ in range(n_splits):
        halves = [{}, {}]
        for b, a in acts.items():
            perm = rng.permutation(a.shape[0])
            for h, idx in enumerate((perm[: a.shape[0] // 2], perm[a.shape[0] // 2:])):
                halves[h][b] = idx
        xs = [cg.x_model({b: acts[b][k[b]] for b in acts}, {b: np.asarray(scores[b])[k[b]] for b in acts}) for k in halves]
        ok = np.isfinite(xs[0]) & np.isfinite(xs[1]) & keep
        out.append(spearmanr(xs[0][ok], xs[1][ok]).statistic if ok.sum() >= 3 else np.nan)
    return np.asarray(out, dtype=float)


def adversarial_null(acts, scores, n_concepts: int, n_items: int, repeats: int, n_perm: int = 20,
                     seed: int = 0) -> dict[str, np.ndarray]:
    """Mean median-X_model shifts (% of the median) of the adversarial removal on ``n_perm``
    shuffled-correctness copies: ``best`` and ``worst`` arrays."""
    rng = np.random.default_rng(seed)
    best, worst = [], []
    for p in range(n_perm):
        adv = cg_robustness.adversarial_removal(acts, shuffled_scores(scores, rng), n_concepts, n_items, repeats, seed=seed + p)
        best.append(adv.mean_shift_best_pct)
        worst.append(adv.mean_shift_worst_pct)
    return {"best": np.asarray(best), "worst": np.asarray(worst)}


def dropout_null(acts, scores, n_reruns: int, drop_frac: float, n_perm: int = 20, seed: int = 0) -> np.ndarray:
    """Mean dropout std of X_model (:func:`kit.cg.robustness.dropout_robustness`) on ``n_perm``
    shuffled-correctness copies: how stable a profile of noise looks under the same dropout."""
    rng = np.random.default_rng(seed)
    return np.array([cg_robustness.dropout_robustness(acts, shuffled_scores(scores, rng), n_reruns, drop_frac, seed + p).mean_std_x_model
                     for p in range(n_perm)], dtype=float)


def model_nulls(acts, scores, eps: float, adv_n_concepts: int, adv_n_items: int, adv_repeats: int, n_reruns: int,
                drop_frac: float, min_support: int, seed: int = 0, n_perm: int = 50, n_adv_perm: int = 10,
                n_splits: int = 20, n_drop_perm: int = 10) -> dict[str, np.ndarray]:
    """Every null of one model's analysis, computed once (the notebook's table and :func:`cg_claims` share them):
    ``gaps`` (gap counts), ``split_half`` / ``split_half_supported`` (Spearman of two halves; all concepts /
    those on >= ``min_support`` items), ``dropout`` (mean std of X_model), ``adv_best`` / ``adv_worst``."""
    adv = adversarial_null(acts, scores, adv_n_concepts, adv_n_items, adv_repeats, n_adv_perm, seed)
    return {"gaps": gap_null(acts, scores, eps, n_perm, seed),
            "split_half": split_half(acts, scores, n_splits, seed),
            "split_half_supported": split_half(acts, scores, n_splits, seed, min_support),
            "dropout": dropout_null(acts, scores, min(n_reruns, 20), drop_frac, n_drop_perm, seed),
            "adv_best": adv["best"], "adv_worst": adv["worst"]}


def null_table(observed: Mapping[str, float], nulls: Mapping[str, np.ndarray]) -> "pd.DataFrame":
    """Observed value beside its null (mean and 95% range) and whether it lies beyond the range, in
    the direction the claim needs. ``observed`` keys: gaps, dropout, adv_best, adv_worst,
    split_half, split_half_supported (the last two are observed *distributions* over splits)."""
    import pandas as pd

    rows = []
    spec = {"gaps": ("model gaps (X_model < eps), count", "shuffled correctness", "greater"),
            "dropout": ("dropout: mean std of X_model", "shuffled correctness", "less"),
            "adv_best": ("adversarial removal, best concepts: median shift %", "shuffled correctness", "less"),
            "adv_worst": ("adversarial removal, worst concepts: median shift %", "shuffled correctness", "greater")}
    for key, (what, how, direction) in spec.items():
        if key not in observed or key not in nulls:
            continue
        m, lo, hi = null_band(nulls[key])
        x = observed[key]
        beats = x is not None and np.isfinite(x) and (x > hi if direction == "greater" else x < lo)
        rows.append({"quantity": what, "observed": x, "null": how, "null mean": m, "null 2.5%": lo,
                     "null 97.5%": hi, "beats null": bool(beats)})
    for key, what in (("split_half", "split-half Spearman, all concepts"),
                      ("split_half_supported", "split-half Spearman, concepts with minimum support")):
        if key in nulls:  # observed: a distribution over random splits; the null is a fixed 0
            m, lo, hi = null_band(nulls[key])
            rows.append({"quantity": what, "observed": m, "observed 2.5%": lo, "observed 97.5%": hi,
                         "null": "a profile of noise", "null mean": 0.0, "null 2.5%": 0.0, "null 97.5%": 0.0,
                         "beats null": bool(lo > 0)})
    return pd.DataFrame(rows)


def bootstrap_missing_alive(acts, dead: np.ndarray, eps: float = cg.EPSILON, n_boot: int = 200,
                            seed: int = 0) -> np.ndarray:
    """Share of alive concepts missing from the whole suite, on item-bootstrap resamples."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        res = {b: a[rng.integers(0, a.shape[0], a.shape[0])] for b, a in acts.items()}
        miss = cg.coverage_classes(cg.x_bench(res), eps) == "missing"
        out.append((miss & ~dead).sum() / max(1, (~dead).sum()))
    return np.asarray(out, dtype=float)


def cg_claims(suites: Mapping[str, Any], main_sae: str, small_sae: str, model: str | None, results: Mapping[str, Any],
              eps: float, adv_n_concepts: int, adv_n_items: int, adv_repeats: int, seed: int = 0,
              n_perm: int = 50, n_adv_perm: int = 10, n_splits: int = 20, nulls: Mapping[str, np.ndarray] | None = None,
              n_reruns: int = 20, drop_frac: float = 0.2, min_support: int = 5) -> list[Claim]:
    """Notebook 04's claims: benchmark gaps, model gaps (vs shuffled correctness, per-concept FDR,
    split-half), dropout and adversarial robustness (vs their shuffled nulls) and the SAE swap.

    ``nulls``: :func:`model_nulls` of ``model`` if already computed (else computed here);
    ``results["significance"]`` (from :func:`kit.cg.report.gap_significance`) gives the FDR count."""
    from kit.data.paper_tables import load_table

    suite = suites[main_sae]
    paper = load_table("002_text_numbers_robustness_and_summary")

    def printed(topic: str, quantity: str, model_name: str = "Llama3.1-8B-Instruct") -> str:
        r = paper[paper.topic.str.contains(topic) & (paper.quantity == quantity) & (paper.model == model_name)]
        return "" if r.empty else f"{r.value.iloc[0]} {r.unit.iloc[0]}" + (f" ({r.direction.iloc[0]})" if isinstance(r.direction.iloc[0], str) and r.direction.iloc[0] else "")

    out = []
    cov = results["coverage"][main_sae]
    boot = bootstrap_missing_alive(suite.acts, suite.dead(), eps, n_boot=100, seed=seed)
    _, lo, hi = null_band(boot)
    out.append(claim(PAPER, "§4.2.1", "benchmark_gaps.missing_alive",
                     "The suite leaves concepts uncovered that the SAE uses on its own text (share of alive concepts "
                     "missing from every benchmark)", cov["frac_missing_alive"], ci=(lo, hi),
                     null=0.0, direction="greater", null_how="no missing concept (0)",
                     paper_value=printed("benchmark gaps \\(10", "share of SAE concepts entirely missing from the suite"),
                     interval_how="bootstrap over items per benchmark (a resample can only lose concepts: optimistic low end)",
                     figure="fig03_coverage_distribution"))

    if model is None:
        for cid in MODEL_IDS:
            out.append(claim(PAPER, "§4.2.2-4.2.3", cid, cid, None, not_testable="no model with per-item scores"))
    else:
        acts, scores = suite.model_acts[model], suite.model_scores[model]
        if nulls is None:
            nulls = model_nulls(acts, scores, eps, adv_n_concepts, adv_n_items, adv_repeats, n_reruns, drop_frac,
                                min_support, seed, n_perm, n_adv_perm, n_splits)
        m, lo, hi = null_band(nulls["gaps"])
        out.append(claim(PAPER, "§4.2.2, Fig. 4", "model_gaps.vs_shuffled",
                         f"{model} has more model gaps (concepts with X_model < eps) than the same model with its "
                         "correctness shuffled within each benchmark (count)", n_gaps(acts, scores, eps), null=m,
                         null_range=(lo, hi), direction="greater",
                         null_how=f"shuffled correctness, {len(nulls['gaps'])} permutations (95% range)",
                         paper_value="gaps reveal concept-specific weaknesses", figure="fig04_performance_distribution"))
        sig = results.get("significance", {}).get(model)
        out.append(claim(PAPER, "§4.2.2", "model_gaps.significant",
                         f"{model} has concept gaps that beat their own null: X_model < eps, active on >= "
                         f"{min_support} items, and significantly below the model's accuracy (permutation test, "
                         "Benjamini-Hochberg)", None if sig is None else sig["n_gaps_significant"], null=0.0,
                         null_range=(0.0, 0.0), direction="greater",
                         null_how="BH false discovery control: with no real gap, any discovery has probability <= alpha",
                         not_testable=None if sig is not None else "per-concept test not run",
                         interval_how="deterministic count of FDR discoveries"))
        for key, what in (("split_half", "all concepts"), ("split_half_supported", f"concepts on >= {min_support} items")):
            mh, lo, hi = null_band(nulls[key])
            out.append(claim(PAPER, "§4.2.2", f"model_gaps.{key}",
                             f"{model}'s X_model profile is reproducible ({what}): Spearman over concepts between two "
                             "random halves of the items", mh, ci=(lo, hi), null=0.0, direction="greater",
                             null_how="a profile of noise (0)",
                             paper_value="stable under 20% dropout (std of X_model " + printed("robustness: randomly", "std of X_model") + ")",
                             interval_how=f"2.5-97.5% range over {int(np.isfinite(nulls[key]).sum())} random half-splits"))
        rob = results.get("robustness", {})
        m, lo, hi = null_band(nulls["dropout"])
        out.append(claim(PAPER, "§4.2.3", "robustness.dropout_vs_shuffled",
                         f"{model}'s X_model is more stable under 20% item dropout than a profile of noise (mean std "
                         "over concepts)", rob.get("std_x_model"), null=m, null_range=(lo, hi), direction="less",
                         null_how=f"shuffled correctness, {len(nulls['dropout'])} permutations (95% range)",
                         paper_value=printed("robustness: randomly", "std of X_model")))
        for which, direction in (("best", "less"), ("worst", "greater")):
            m, lo, hi = null_band(nulls[f"adv_{which}"])
            out.append(claim(PAPER, "§4.2.3", f"robustness.adversarial_{which}",
                             f"Removing the items most salient for the {which} concepts moves the median X_model "
                             f"{'down' if which == 'best' else 'up'} more than the same removal under shuffled "
                             "correctness (% of the median)", rob.get(f"adv_shift_{which}_pct"), null=m,
                             null_range=(lo, hi), direction=direction,
                             null_how=f"shuffled correctness, {len(nulls[f'adv_{which}'])} permutations (95% range)",
                             paper_value=printed(f"{which}-performing", "average change in median X_model")))

    a = results["coverage"][main_sae]["missing_frac_per_benchmark"]
    b = results["coverage"][small_sae]["missing_frac_per_benchmark"] if small_sae in results["coverage"] else {}
    common = sorted(set(a) & set(b))
    if small_sae == main_sae or len(common) < 3:
        out.append(claim(PAPER, "§4.2.3, Table 3", "sae_swap.missing_frac_rank", "Benchmark gaps survive an SAE swap",
                         None, not_testable="one SAE or fewer than 3 benchmarks"))
    else:
        rho, null = rank_permutation_null([a[k] for k in common], [b[k] for k in common])
        m, lo, hi = null_band(null)
        out.append(claim(PAPER, "§4.2.3, Table 3", "sae_swap.missing_frac_rank",
                         f"Benchmark gaps survive an SAE swap: Spearman over {len(common)} benchmarks of the share of "
                         f"missing concepts, {main_sae.split('/')[-1]} vs {small_sae.split('/')[-1]}", rho, null=m,
                         null_range=(lo, hi), direction="greater",
                         null_how=(f"all {len(null)} orders of the benchmarks (95% range)" if len(common) <= 8
                                   else f"{len(null)} random orders of the benchmarks (95% range)"),
                         paper_value="findings hold with Gemma's SAE"))
    return out
