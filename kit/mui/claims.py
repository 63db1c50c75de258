"""Claims of seed 000 (MUI and the Utility Law): notebooks 01 and 02.

Built from the numbers the notebooks computed (``results.json`` entries, a few frames, notebook
02's :class:`kit.mui.trajectories.TrajectoryStudy`); every verdict comes from
:func:`kit.core.claims.claim`. The claim ids each notebook must report: :data:`REQUIRED_IDS`.

Notebook 01 (:func:`utility_law_claims`, :func:`stability_reruns`): the Utility Law and
corollaries 3 (PUR ranking) and 4 (data diversity).

- The law's sign on one fit (:func:`fit_claim`: the law grid's, the multi-token families'), the
  re-analyses of the paper's printed tables (the law on Table 5, Table 1's PUR recomputed within
  its rounding band: :func:`published_claims`) and the law grid's claims (pooled fit with task
  effects, per-task signs, corollary 3's ranking).
- The experiments on the focus model: corollary 4's data diversity (§3.6 growth curves), §3.7's
  "no difference" between correct and incorrect responses (tested as equivalence), §3.8's masking
  of key vs random neurons (:func:`kit.core.stats.newcombe_diff`'s interval), and the claims on
  the multi-token families (:func:`multi_token_claims`: the law across models, corollary 1 across
  one run's checkpoints, §3.7 on per-sample MUI).

Notebook 02 (:func:`study_claims`, :func:`real_model_scope`): corollaries 1 (training judgement)
and 2 (contamination), declared over a :class:`kit.mui.trajectories.TrajectoryStudy`.

Each question is asked once per source: on the paper's printed Tables 8-10 (ids ``paper.*``, kind
``re-analysis``) and on the models measured here (no prefix, kind ``reproduction``). Nulls are
conditioned on what the setting fixes:

- **a predicted direction** (accumulating early in pre-training, evolving late, accumulating in
  domain, coarsening out of domain, accumulating on the leaked benchmark): a direction is the pair
  (sign of Δperformance, sign of ΔMUI). Early pre-training, specialisation in domain and leaked
  test data all fix the sign of Δperformance (up in 28 of the paper's 35 early steps), so a share
  of "accumulating" among all changes is beaten by any MUI that moves at random. The claim is
  therefore conditional: among the changes whose performance moved the predicted way (and whose MUI
  moved beyond the tolerance), the share whose MUI moved the predicted way, against a fair coin
  (1/2). Changes are clustered (the steps of one benchmark's trajectory; the benchmarks of one
  fine-tune), so the Wilson interval uses the number of clusters as its sample size (the design
  effect at its largest: each cluster counts as one unit), and the exact binomial p-value at that
  size is recorded. With so few clusters that even all of them going the predicted way leaves
  the Wilson lower bound at or under 1/2 (3 or fewer), the claim cannot be decided here.
- **collapsing out of domain under contamination** (§3.3: collapsing "only observed when data
  contamination occurs"): contaminated fine-tunes against the uncontaminated ones (specialised and
  control fine-tunes; on the paper's tables, Table 9's specialised models), the model as the unit:
  the difference of the mean per-model collapse rates over OOD changes, against the exact
  permutation distribution of the contaminated/uncontaminated labels over the models (every
  arrangement). The verdict reads the observed difference against that distribution's 2.5-97.5%
  band (its order statistics, not interpolated, so a test with too few models cannot pass). A
  design whose most extreme arrangement is not under 2.5% (3 against 2 models: 1 in 10) cannot be
  decided here.
- **set-up check** (the world's contamination did leak): on the leaked task, the contaminated
  fine-tunes' test-split score minus their fresh-item score, minus their bases' same gap (points),
  with Price and Bonett's adjusted Wald interval over each accuracy's items (needs ``fresh``).

Stability: the measured claims again on other item draws (:func:`study_claims`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

import numpy as np
import pandas as pd

from kit.core.claims import (
    Claim,
    claim,
    mark_stability,
    mean_diff_claim,
    permutation_floor,
    wilson_floor,
)
from kit.core.stats import (
    clustered_wilson,
    label_permutation_null,
    newcombe_diff,
    order_band,
    proportions_contrast_interval,
    wilson_interval,
)
from kit.models.sources import form_of
from kit.mui.directions import SIGNS, collapse_rates, conditional_share
from kit.mui.growth import largest_varying_n, mixed_and_single

if TYPE_CHECKING:  # kit.mui.trajectories imports the world's loaders: only for the annotation
    from kit.mui.trajectories import TrajectoryStudy

PAPER = "000"

TRAJECTORY_IDS = [
    "corollary1.early_accumulating",
    "corollary1.late_evolving",
    "corollary1.specialised_in_domain",
    "corollary1.specialised_ood",
    "corollary2.contamination_in_domain",
    "corollary2.contamination_ood",
    "setup.leak_on_test_split",
]
"""Notebook 02's required claim ids (the measured models' claims)."""

REQUIRED_IDS = {
    "01_utility_law": [
        "law.published_per_model",
        "law.published_pooled",
        "law.tiny_pooled",
        "law.tiny_per_task_sign",
        "pur.table1_recomputed",
        "pur.ranking_vs_performance",
        "diversity.mixed_grows_faster",
        "correctness.no_difference",
        "masking.key_vs_random",
        "law.multi_token",
        "correctness.no_difference_multi_token",
    ],
    "02_training_trajectories": TRAJECTORY_IDS,
}
"""The claim ids each notebook must report."""

TABLE5 = "the paper's Table 5 (performance and neuron MUI printed to one decimal)"
TABLE1 = "the paper's Tables 1 and 5 (PUR, performance and MUI printed to one decimal)"

EQUIVALENCE_FRACTION = 0.10
"""'No difference' (§3.7) is tested as equivalence within +-10% of the mean MUI (our choice: the
paper only reports a non-significant Mann-Whitney test, which cannot show absence of a
difference)."""


# Notebook 01: the law's sign, the paper's tables, the law grid, corollary 3


def fit_claim(
    id: str,
    fit: Mapping[str, Any] | None,
    where: str,
    figure: str | None,
    form: str = "mui_vs_log_perf",
    caveat: str = "",
    kind: str = "reproduction",
    rests_on: str = "",
    points: str = "points",
) -> Claim:
    """The law's sign on one fit. Both forms predict a negative slope: the paper's
    ``MUI = -alpha ln P + beta`` (slope -alpha) and the inverse ``P = a + b ln MUI`` (slope b).
    ``fit``: slope, ci_low, ci_high, r2 (``r2_within`` for a fixed-effects fit), n; a missing
    slope is "not testable". A fit with ``cluster_ci_low`` (:func:`kit.mui.law.law_cluster_ci`) is
    read on that interval, which resamples models, not points; the points' t interval stays in
    ``extra``. ``points``: what one point of a plain fit is (the unit of its OLS interval)."""
    fit = fit or {}
    r2 = fit.get("r2")
    within = "fixed_effects" in fit
    r2_name = "R² within" if within else "R²"
    what = (
        "MUI falls as performance rises (OLS slope of MUI % on ln P, i.e. -alpha, < 0"
        if form == "mui_vs_log_perf"
        else "performance falls as MUI rises (OLS slope of performance % on ln MUI < 0"
    )
    statement = (
        f"Utility Law, {where}: {what}; {r2_name} {r2:.2f}, n {fit.get('n')})"
        if r2 is not None
        else f"Utility Law, {where}: {what})"
    )
    if fit.get("slope") is None:
        return claim(
            PAPER,
            "§2, Fig. 3",
            id,
            statement,
            None,
            kind=kind,
            rests_on=rests_on,
            figure=figure,
            not_testable=fit.get("not_testable") or f"too few points to fit (n {fit.get('n', 0)})",
        )
    weak = (
        ""
        if r2 is None or r2 >= 0.3
        else f"weak fit: {r2_name} {r2:.2f}, the law explains little of the spread"
    )
    clustered = fit.get("cluster_ci_low") is not None
    if clustered:  # points of one model are not independent: the interval resamples models
        ci = (fit["cluster_ci_low"], fit["cluster_ci_high"])
        how = (
            f"percentile bootstrap over {fit.get('n_clusters')} {fit.get('cluster', 'model')}s "
            f"(all points of a {fit.get('cluster', 'model')} drawn together), refitting the "
            f"within-{fit['fixed_effects']} slope (fixed effect per {fit['fixed_effects']}, "
            f"{fit.get('n_groups')} groups)"
        )
        unit = f"{fit.get('cluster', 'model')}s"
    else:
        ci = (fit.get("ci_low"), fit.get("ci_high")) if fit.get("ci_low") is not None else None
        how = (
            "t 95% CI of the within-group slope (fixed effect per "
            f"{fit['fixed_effects']}, {fit.get('n_groups')} groups)"
            if within
            else "OLS 95% CI of the slope (statsmodels)"
        )
        unit = f"{points} (not clustered by model)" if within else points
    # the points' t interval, beside the clustered one the verdict reads
    beside: dict[str, Any] = (
        {"points_ci": [fit.get("ci_low"), fit.get("ci_high")]} if clustered else {}
    )
    return claim(
        PAPER,
        "§2, Fig. 3",
        id,
        statement,
        fit.get("slope"),
        ci=ci,
        null=0.0,
        null_how="no relation (slope 0)",
        direction="less",
        paper_value="-4.632 (MUI-Eval's figure: MUI = -4.632 ln P + 28.305)"
        if form == "mui_vs_log_perf"
        else "negative (inverse log relation)",
        interval_how=how,
        unit=unit,
        figure=figure,
        caveat="; ".join(x for x in (caveat, weak) if x),
        kind=kind,
        rests_on=rests_on,
        r2=r2,
        **beside,
    )


def published_claims(results: Mapping[str, Any]) -> list[Claim]:
    """Re-analyses of the paper's printed tables: the law on Table 5 (Figure 3's one point per
    model; pooled over benchmarks with a fixed effect per benchmark) and Table 1's PUR recomputed
    from Table 5 within the rounding band of its one-decimal numbers."""
    pooled = results.get("published_law_fit_fe")
    caveat = ""
    if pooled is None:  # a results.json from before the fixed-effects fit
        pooled, caveat = (
            results.get("published_law_fit", {}).get("all"),
            "pooled without benchmark effects",
        )
    out = [
        fit_claim(
            "law.published_per_model",
            results.get("published_law_fit_per_model"),
            "published Table 5, Figure 3's view (one point per general model)",
            "fig3_published_per_model",
            kind="re-analysis",
            rests_on=TABLE5 + ", 8 general models",
            points="models (one point each)",
        ),
        fit_claim(
            "law.published_pooled",
            pooled,
            "published Table 5, the 8 general models pooled over benchmarks with a fixed effect "
            "per benchmark",
            "fig2_published_law_general",
            caveat=caveat,
            kind="re-analysis",
            rests_on=TABLE5 + ", 8 general models",
        ),
    ]
    ratio = results.get("published_pur_max_band_ratio")
    n_cells = results.get("published_pur_cells_recomputed")
    out.append(
        claim(
            PAPER,
            "Table 1",
            "pur.table1_recomputed",
            "Table 1's PUR follows from Table 5 with alpha 0.5: largest |recomputed - printed| "
            f"over {n_cells} cells, as a share of each cell's rounding band "
            f"({results.get('published_pur_outside_band')}"
            " cells outside; max |diff| "
            f"{results.get('published_pur_max_abs_diff', float('nan')):.3f})",
            ratio,
            ci=None if ratio is None else (ratio, ratio),
            null_range=(0.0, 1.0),
            direction="within",
            null_how="inside the band: +-0.05 on Table 5's performance and MUI propagated through "
            "P / MUI^0.5, plus +-0.05 on the printed PUR (share <= 1)",
            paper_value="Table 1 PUR",
            interval_how="deterministic recomputation from printed values (no sampling noise)",
            figure="pur_recomputed_vs_table1",
            kind="re-analysis",
            rests_on=TABLE1,
            not_testable=None if ratio is not None else "no PUR cell recomputed",
        )
    )
    return out


def _grid_law_claims(
    results: Mapping[str, Any], form: str, grid: str, seed: int, n_boot: int
) -> list[Claim]:
    """The law across the grid's models (pooled with task effects; per-task signs) and PUR's
    ranking."""
    out = []
    tiny = results.get("tiny_law_fit_fe")
    caveat = ""
    if tiny is None:
        tiny, caveat = (
            results.get("tiny_law_fit_per_task", {}).get("all"),
            "pooled without task effects",
        )
    out.append(
        fit_claim(
            "law.tiny_pooled",
            tiny,
            "law grid, pooled over tasks with a fixed effect per task",
            "tiny_law_per_task",
            form=form,
            caveat=caveat,
            rests_on=grid,
        )
    )
    per_task = {
        k: v
        for k, v in results.get("tiny_law_fit_per_task", {}).items()
        if k != "all" and v.get("slope") is not None
    }
    k = sum(v["slope"] < 0 for v in per_task.values())
    share, lo, hi = wilson_interval(k, len(per_task)) if per_task else (None, None, None)
    out.append(
        claim(
            PAPER,
            "§2, Fig. 3",
            "law.tiny_per_task_sign",
            f"Utility Law per task: share of per-task slopes that are negative ({k} of "
            f"{len(per_task)})",
            share,
            ci=None if share is None else (lo, hi),
            null=0.5,
            null_how="sign of a slope at random (1/2)",
            direction="greater",
            paper_value="negative on every benchmark",
            interval_how="Wilson 95% interval over tasks",
            figure="tiny_law_per_task",
            rests_on=grid,
            not_testable=None if per_task else "no task has a fitted slope",
        )
    )
    out.append(_ranking_claim(results.get("tiny_rank_per_task", {}), seed, n_boot, grid))
    return out


def _ranking_claim(rank: Mapping[str, Any], seed: int, n_boot: int, rests_on: str) -> Claim:
    statement = (
        "Corollary 3: PUR ranks models closer to the true order than performance (mean over tasks "
        "of Spearman(PUR) - Spearman(performance) against the fresh-item truth)"
    )
    if "pur" not in rank or "performance" not in rank:
        return claim(
            PAPER,
            "§3.5, Table 1 (corollary 3)",
            "pur.ranking_vs_performance",
            statement,
            None,
            not_testable="no per-task rank agreement recorded",
            rests_on=rests_on,
        )
    tasks = sorted(set(rank["pur"]) & set(rank["performance"]))
    pur = np.array([rank["pur"][t]["spearman"] for t in tasks], dtype=float)
    perf = np.array([rank["performance"][t]["spearman"] for t in tasks], dtype=float)
    ok = np.isfinite(pur) & np.isfinite(perf)
    if ok.sum() < 2:
        return claim(
            PAPER,
            "§3.5, Table 1 (corollary 3)",
            "pur.ranking_vs_performance",
            statement,
            None,
            not_testable=f"{int(ok.sum())} task(s) with a defined Spearman on both sides",
            rests_on=rests_on,
        )
    return mean_diff_claim(
        PAPER,
        "§3.5, Table 1 (corollary 3)",
        "pur.ranking_vs_performance",
        statement,
        pur[ok],
        perf[ok],
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        direction="greater",
        null_how="no gain (0)",
        paper_value="88.6 vs 86.4 Spearman (+2.2)",
        interval_how=f"paired bootstrap over {int(ok.sum())} tasks",
        rests_on=rests_on,
    )


# Notebook 01: the experiments on the focus model and the multi-token families


def _focus_rests_on(focus: str | None, what: str) -> str:
    return f"{focus or 'the focus model'}: {what}"


def _growth_claim(
    curves: pd.DataFrame | None, seed: int, n_boot: int, focus: str | None = None
) -> Claim:
    statement = (
        "Corollary 4 (§3.6): at the largest n, the mixed pool's MUI exceeds the mean of the "
        "single-capability pools' (MUI %, mixed - single)"
    )
    rests_on = _focus_rests_on(
        focus, "random subsets of one item pool per capability and a mixed pool"
    )
    if curves is None or "mixed" not in set(curves["pool"]):
        return claim(
            PAPER,
            "§3.6",
            "diversity.mixed_grows_faster",
            statement,
            None,
            not_testable="no growth curves",
            rests_on=rests_on,
        )
    n_star = largest_varying_n(curves)
    mixed, single = mixed_and_single(curves, n_star)
    if n_star != curves["n"].max():
        statement = statement.replace(
            "at the largest n,",
            f"at n = {n_star} (the largest n with the most disjoint subsets whose MUI differ: at "
            "the pool's size the one subset is the whole pool),",
        )
    if min(len(mixed), len(single)) < 2:
        return claim(
            PAPER,
            "§3.6",
            "diversity.mixed_grows_faster",
            statement,
            float(mixed.mean() - single.mean()),
            null=0.0,
            null_how="no difference",
            figure="sec36_growth",
            rests_on=rests_on,
        )
    return mean_diff_claim(
        PAPER,
        "§3.6",
        "diversity.mixed_grows_faster",
        statement,
        mixed,
        single,
        paired=False,
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        direction="greater",
        null_how="no difference (0)",
        paper_value="mixed grows faster",
        interval_how=f"bootstrap over {len(mixed)} and {len(single)} disjoint random subsets "
        f"of {n_star} items (mixed, single)",
        unit="disjoint subsets",
        # a handful of subsets a side: can any arrangement of them reach 95%?
        undecidable=permutation_floor(len(mixed), len(single)),
        figure="sec36_growth",
        rests_on=rests_on,
    )


def _equivalence_claim(
    cid: str,
    statement: str,
    a: np.ndarray,
    b: np.ndarray,
    seed: int,
    n_boot: int,
    unit: str,
    rests_on: str,
    figure: str,
    caveat: str = "",
) -> Claim:
    """'No difference' as equivalence: the bootstrap interval of mean(a) - mean(b) inside
    +-:data:`EQUIVALENCE_FRACTION` of the pooled mean."""
    margin = EQUIVALENCE_FRACTION * float(np.mean(np.concatenate([a, b])))
    return mean_diff_claim(
        PAPER,
        "§3.7",
        cid,
        statement,
        a,
        b,
        paired=False,
        n_boot=n_boot,
        seed=seed,
        null_range=(-margin, margin),
        null=0.0,
        direction="within",
        null_how=f"tolerance ±{margin:.3g} (10% of mean {unit})",
        paper_value="no significant difference (Mann-Whitney)",
        interval_how=f"bootstrap over {len(a)} {unit.split()[-1]}s a side",
        figure=figure,
        caveat=caveat,
        rests_on=rests_on,
    )


def _correctness_claim(
    ci: Mapping[str, Any] | None, seed: int, n_boot: int, focus: str | None = None
) -> Claim:
    statement = (
        "§3.7: MUI does not differ between correct and incorrect responses (MUI of equal-size "
        f"chunks, correct - incorrect, %; equivalence within ±{EQUIVALENCE_FRACTION:.0%} of the "
        "mean)"
    )
    rests_on = _focus_rests_on(focus, "its own responses, equal counts per task")
    if (
        not ci
        or len(ci.get("chunk_mui_correct", [])) < 2
        or len(ci.get("chunk_mui_incorrect", [])) < 2
    ):
        return claim(
            PAPER,
            "§3.7",
            "correctness.no_difference",
            statement,
            None,
            rests_on=rests_on,
            not_testable="fewer than 2 chunks of correct or incorrect responses",
        )
    return _equivalence_claim(
        "correctness.no_difference",
        statement,
        np.asarray(ci["chunk_mui_correct"], float),
        np.asarray(ci["chunk_mui_incorrect"], float),
        seed,
        n_boot,
        "chunk MUI chunk",
        rests_on,
        "sec37_correct_vs_incorrect",
    )


def _masking_claim(m: Mapping[str, Any], focus: str | None = None) -> Claim:
    statement = (
        f"§3.8: masking task A's top {m.get('k_max')} key neurons drops its accuracy more than as "
        "many random neurons (accuracy after random masking - after key masking, points)"
    )
    rests_on = _focus_rests_on(
        focus, f"zero-ablated MLP neurons, {m.get('n_eval_a')} held-out items of {m.get('task_a')}"
    )
    if m.get("drop_key_a") is None or m.get("drop_random_a") is None:
        return claim(
            PAPER,
            "§3.8",
            "masking.key_vs_random",
            statement,
            None,
            rests_on=rests_on,
            not_testable="no masking curve at a k with key neurons",
            figure="sec38_masking",
        )
    ours = m["drop_key_a"] - m["drop_random_a"]
    n = m.get("n_eval_a")
    ci, how = None, "none: the item count was not recorded"
    if n and m.get("acc_key_a") is not None and m.get("acc_random_a") is not None:
        # accuracy after random masking is a mean over repeats on the same n items: count it as n
        # items
        d, lo, hi = newcombe_diff(
            round(m["acc_random_a"] * n / 100), n, round(m["acc_key_a"] * n / 100), n
        )
        ci, how = (
            (100 * lo, 100 * hi),
            (
                f"Newcombe score interval of a difference of two accuracies on {n} items "
                "each (the same items: conservative)"
            ),
        )
    return claim(
        PAPER,
        "§3.8",
        "masking.key_vs_random",
        statement,
        ours,
        ci=ci,
        null=0.0,
        direction="greater",
        null_how=f"as many random neurons (mean over {m.get('random_repeats', 'the')} draws)",
        paper_value="large drop, random ~0",
        interval_how=how,
        unit="items",
        figure="sec38_masking",
        rests_on=rests_on,
    )


def multi_token_claims(
    data: Mapping[str, Any] | None, seed: int = 0, n_boot: int = 1000, form: str = "mui_vs_log_perf"
) -> list[Claim]:
    """The claims on the multi-token families. Across >= 3 models: the law
    (``law.multi_token``), with a fixed effect per family. Across one model's training
    checkpoints: not the law (one run's checkpoints are not independent models) but Corollary 1's
    "accumulating" (MUI and performance rising together in training), one claim per family
    (``corollary1.checkpoints[<family>]``: the families differ in MUI scale, so they are not
    pooled). And §3.7 on per-sample MUI where it can vary. ``data``: ``{"law": ..., "ci": ...}`` of
    :func:`kit.mui.multi_token.multi_token_section`."""
    data = data or {}
    law = data.get("law") or {}
    out = []
    across = "tiny world: the base models that answer the multi-token families"
    if law.get("over") == "checkpoints":
        out.append(
            claim(
                PAPER,
                "§2, Fig. 3",
                "law.multi_token",
                "Utility Law across models on the multi-token families",
                None,
                not_testable=f"only {law.get('model')} answers them; its {law.get('n_models')} "
                "training checkpoints are one run, not independent models (tested as Corollary 1 "
                "below)",
                rests_on=across,
            )
        )
        out += _checkpoint_claims(law, form)
    elif law.get("slope") is None:
        out.append(
            claim(
                PAPER,
                "§2, Fig. 3",
                "law.multi_token",
                "Utility Law on the multi-token families",
                None,
                rests_on=across,
                not_testable=law.get(
                    "not_testable",
                    "no multi-token section run (hub models or multi_token_tasks: [])",
                ),
            )
        )
    else:
        out.append(
            fit_claim(
                "law.multi_token",
                law.get("fe") or law,
                law.get("where", "multi-token families across models, a fixed effect per family"),
                "multi_token_per_sample_mui",
                form=form,
                caveat="" if law.get("fe") else "pooled without family effects",
                rests_on=across,
            )
        )
    ci = data.get("ci") or {}
    statement = (
        "§3.7 where per-sample MUI can vary (multi-token answers): a sample's own MUI does not "
        "differ between correct and incorrect responses (mean per-sample MUI, correct - "
        f"incorrect, %; equivalence within ±{EQUIVALENCE_FRACTION:.0%} of the mean)"
    )
    a, b = (
        np.asarray(ci.get("per_sample_correct", []), float),
        np.asarray(ci.get("per_sample_incorrect", []), float),
    )
    rests_on = "the widest base model's multi-token answers, equal counts per family"
    if min(len(a), len(b)) < 2:
        out.append(
            claim(
                PAPER,
                "§3.7",
                "correctness.no_difference_multi_token",
                statement,
                None,
                rests_on=rests_on,
                not_testable="fewer than 2 correct or incorrect multi-token responses",
            )
        )
    else:
        out.append(
            _equivalence_claim(
                "correctness.no_difference_multi_token",
                statement,
                a,
                b,
                seed,
                n_boot,
                "per-sample MUI sample",
                rests_on,
                "multi_token_per_sample_mui",
                caveat="a wrong answer can stop early (fewer response tokens, so fewer key "
                "neurons): response length is not controlled",
            )
        )
    return out


def _checkpoint_claims(law: Mapping[str, Any], form: str) -> list[Claim]:
    """Corollary 1 per family across one run's checkpoints: MUI rises with performance."""
    what = (
        "OLS slope of MUI % on ln P > 0"
        if form == "mui_vs_log_perf"
        else "OLS slope of performance % on ln MUI > 0"
    )
    out = []
    for fam, fit in sorted((law.get("per_task_fit") or {}).items()):
        statement = (
            f"Corollary 1 across {law.get('n_models')} training checkpoints of {law.get('model')}, "
            f"family {fam}: MUI and performance rise together, 'accumulating' ({what}"
            + (f"; R² {fit['r2']:.2f}, n {fit.get('n')})" if fit.get("r2") is not None else ")")
        )
        cid = f"corollary1.checkpoints[{fam}]"
        rests_on = (
            f"tiny world: one training run of {law.get('model')} (its checkpoints and "
            "the final model)"
        )
        if fit.get("slope") is None:
            out.append(
                claim(
                    PAPER,
                    "§3.3 (corollary 1)",
                    cid,
                    statement,
                    None,
                    rests_on=rests_on,
                    not_testable="too few distinct checkpoint cells to fit (n "
                    f"{int(fit.get('n') or 0)})",
                )
            )
            continue
        out.append(
            claim(
                PAPER,
                "§3.3 (corollary 1)",
                cid,
                statement,
                fit["slope"],
                ci=(fit["ci_low"], fit["ci_high"]),
                null=0.0,
                direction="greater",
                null_how="no relation (slope 0)",
                paper_value="accumulating early in pre-training (OLMo, Table 8), evolving late",
                interval_how="OLS 95% CI of the slope across checkpoints",
                figure="multi_token_per_sample_mui",
                rests_on=rests_on,
                caveat="successive checkpoints of one run are not independent points (the OLS "
                "interval is optimistic); whether this run is 'early' in the paper's sense is "
                "not defined",
            )
        )
    return out


# Notebook 01's claim list


def grid_rests_on(results: Mapping[str, Any]) -> str:
    """What section 2's claims rest on: the models of the law grid (``tiny_grid`` records)."""
    grid = pd.DataFrame(results.get("tiny_grid") or [])
    if grid.empty:
        return "the law grid's models (none recorded)"
    models, tasks = sorted(grid.model.unique()), sorted(grid.task.unique())
    if all(form_of(m).world_member for m in models):
        contaminated = sum("-test-" in m or "-syn-" in m for m in models)
        return (
            f"tiny world: {len(models)} zoo models (bases and fine-tunes, {contaminated} "
            f"contaminated) x {len(tasks)} task families, one-token answers, fresh items as the "
            "truth"
        )
    return (
        f"{len(models)} model{'s' if len(models) > 1 else ''} ({', '.join(models)}) x {len(tasks)} "
        f"benchmark{'s' if len(tasks) > 1 else ''}, greedy answers generated here"
    )


def utility_law_claims(
    results: Mapping[str, Any],
    curves: pd.DataFrame | None = None,
    correctness: Mapping[str, Any] | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    multi_token: Mapping[str, Any] | None = None,
    focus: str | None = None,
) -> list[Claim]:
    """Notebook 01's claims from its recorded ``results`` (``published_law_fit_fe``,
    ``published_law_fit_per_model``, ``published_pur_max_band_ratio``, ``tiny_law_fit_fe``,
    ``tiny_law_fit_per_task``, ``tiny_rank_per_task``, ``masking``, ``tiny_grid``), the §3.6 growth
    ``curves`` (columns pool, n, repeat, mui), the §3.7 ``correctness`` dict and the multi-token
    section's ``multi_token`` data (``law``, ``ci`` of
    :func:`kit.mui.multi_token.multi_token_section`; None: those claims are "not testable here").
    ``focus``: the model of §3.6-3.8 (what those rest on).
    ``seed`` drives every bootstrap (:func:`stability_reruns` varies it)."""
    form = results.get("law_form", "mui_vs_log_perf")
    grid = grid_rests_on(results)
    out = published_claims(results)
    cause = results.get("law_not_testable")  # fewer than 3 models (kit.configs.utility_law)
    if cause:
        out += [
            claim(PAPER, section, cid, statement, None, not_testable=cause, rests_on=grid)
            for cid, section, statement in (
                (
                    "law.tiny_pooled",
                    "§2, Fig. 3",
                    "Utility Law across the models, pooled over tasks",
                ),
                (
                    "law.tiny_per_task_sign",
                    "§2, Fig. 3",
                    "Utility Law per task: negative slopes across models",
                ),
                (
                    "pur.ranking_vs_performance",
                    "§3.5, Table 1 (corollary 3)",
                    "Corollary 3: PUR ranks models closer to the true order than performance",
                ),
            )
        ]
    else:
        out += _grid_law_claims(results, form, grid, seed, n_boot)
    out.append(_growth_claim(curves, seed, n_boot, focus))
    out.append(_correctness_claim(correctness, seed, n_boot, focus))
    out += multi_token_claims(multi_token, seed, n_boot, form=form)
    out.append(_masking_claim(results.get("masking", {}), focus))
    return out


def stability_reruns(
    results: Mapping[str, Any],
    curves: pd.DataFrame | None,
    correctness: Mapping[str, Any] | None,
    multi_token: Mapping[str, Any] | None,
    seeds: Sequence[int],
    focus: str | None = None,
    n_boot: int = 1000,
) -> list[list[Claim]]:
    """:func:`utility_law_claims` again with each of ``seeds`` as the bootstrap seed (the models,
    responses and fits stay): one list per seed, for :func:`kit.core.claims.mark_stability`."""
    return [
        utility_law_claims(
            results,
            curves,
            correctness,
            seed=s,
            n_boot=n_boot,
            multi_token=multi_token,
            focus=focus,
        )
        for s in seeds
    ]


# Notebook 02: the direction questions, contamination against the controls, the leak


@dataclass(frozen=True)
class Question:
    """One direction claim: which changes it reads and the direction it predicts."""

    id: str
    corollary: str
    setting: str
    subset: str
    expected: str


QUESTIONS: tuple[Question, ...] = (
    Question("corollary1.early_accumulating", "1", "pre-training", "early steps", "accumulating"),
    Question("corollary1.late_evolving", "1", "pre-training", "late steps", "evolving"),
    Question(
        "corollary1.specialised_in_domain", "1", "specialisation", "in-domain", "accumulating"
    ),
    Question("corollary1.specialised_ood", "1", "specialisation", "ood", "coarsening"),
    Question(
        "corollary2.contamination_in_domain", "2", "contamination", "in-domain", "accumulating"
    ),
)


@dataclass
class DirectionTables:
    """Labelled changes of one source (outputs of :mod:`kit.mui.directions`), one split.

    ``pretraining``: ``step_directions`` rows (``task, step, n_steps, direction``); the others
    ``pair_directions`` rows (``model, task, domain, direction``). ``controls``: uncontaminated
    fine-tunes other than the specialised ones (empty for the paper's tables)."""

    source: str
    """``paper tables`` or the measured models' label (``tiny world``, ``measured``)."""
    pretraining: pd.DataFrame
    specialised: pd.DataFrame
    contaminated: pd.DataFrame
    controls: pd.DataFrame
    late_steps: int
    rests_on: dict[str, str]
    """Setting (``pre-training``, ``specialisation``, ``contamination``) -> what its changes
    rest on."""

    def subset(self, q: Question) -> tuple[pd.DataFrame, str]:
        """The changes question ``q`` reads and their cluster column."""
        if q.setting == "pre-training":
            p = self.pretraining
            if p.empty:
                return p, "task"
            late = p["step"] > p["n_steps"] - self.late_steps
            return (p[late] if q.subset == "late steps" else p[~late]), "task"
        frame = self.specialised if q.setting == "specialisation" else self.contaminated
        if frame.empty:
            return frame, "model"
        return frame[frame["domain"] == q.subset], "model"

    def measured(self, setting: str) -> bool:
        """Does this run have any change of ``setting`` (any model for it)?"""
        return not {
            "pre-training": self.pretraining,
            "specialisation": self.specialised,
            "contamination": self.contaminated,
        }[setting].empty


_NO_MODELS = {
    "pre-training": "no training checkpoints (checkpoints: [])",
    "specialisation": "no specialised fine-tunes (specialised: {})",
    "contamination": "no contaminated fine-tunes (contaminated: {})",
}
"""Why a setting has no changes at all (the profile lists no models for it)."""


def _few(floor: str | None, unit: str) -> str | None:
    """A design floor's reason (:mod:`kit.core.claims`) with the units it counts named."""
    return None if floor is None else f"too few {unit} to decide: {floor}"


def _design_floor(tables: DirectionTables, q: Question, cluster: str, unit: str) -> str | None:
    """Why ``q`` cannot be decided from its design alone: the units its setting measured (every
    fine-tune or trajectory of the setting, before any change is read) are too few for a Wilson
    interval to clear 1/2 even if all agreed; None when the setting measured nothing."""
    if not tables.measured(q.setting):
        return None
    frame = {
        "pre-training": tables.pretraining,
        "specialisation": tables.specialised,
        "contamination": tables.contaminated,
    }[q.setting]
    n = int(frame[cluster].nunique()) if cluster in frame else 0
    return _few(wilson_floor(n, 0.5), unit) if n else None


def direction_claim(tables: DirectionTables, q: Question, prefix: str, kind: str) -> Claim:
    """Question ``q`` on one source: the conditional share against a fair coin (module
    docstring)."""
    from scipy.stats import binomtest

    changes, cluster = tables.subset(q)
    s_perf, s_mui = SIGNS[q.expected]
    perf_word = "rose" if s_perf > 0 else "fell"
    mui_word = "rose" if s_mui > 0 else "fell"
    unit = "benchmark trajectories" if cluster == "task" else "fine-tunes"
    where = f"{tables.source}: {q.setting}, {q.subset}"
    rests_on = tables.rests_on.get(q.setting, "")
    stat = conditional_share(changes, q.expected, cluster) if len(changes) else None
    if stat is None or stat["m"] == 0:
        # the design first: a setting with too few fine-tunes (or trajectories) cannot be decided
        # whatever its changes say (e.g. one specialised fine-tune on real models)
        design = _design_floor(tables, q, cluster, unit)
        return claim(
            PAPER,
            f"§3.3-3.4 (corollary {q.corollary})",
            prefix + q.id,
            f"{where}: {q.expected} (MUI {mui_word} where performance {perf_word})",
            None,
            undecidable=design or None,
            not_testable=None
            if design
            else (
                f"no change in this subset where performance {perf_word} beyond the tolerance "
                "and MUI moved"
                if tables.measured(q.setting)
                else f"nothing measured in this run for {q.setting}: {_NO_MODELS[q.setting]}"
            ),
            kind=kind,
            rests_on=rests_on,
        )
    k, m, nc = stat["k"], stat["m"], stat["clusters"]
    statement = (
        f"{where}: {q.expected}, i.e. among the changes where performance {perf_word} and MUI "
        f"moved, the share where MUI {mui_word} ({k} of {m}; {stat['n_changes']} changes in the "
        f"subset, {nc} {unit})"
    )
    lo, hi = clustered_wilson(stat["share"], nc)
    p = binomtest(int(round(stat["share"] * nc)), nc, 0.5, alternative="greater").pvalue
    return claim(
        PAPER,
        f"§3.3-3.4 (corollary {q.corollary})",
        prefix + q.id,
        statement,
        stat["share"],
        ci=(lo, hi),
        null=0.5,
        direction="greater",
        kind=kind,
        rests_on=rests_on,
        null_how=f"MUI's sign a fair coin given performance {perf_word} (1/2)",
        paper_value=q.expected,
        figure="direction_counts",
        interval_how=f"Wilson 95% over {nc} {unit} (clusters; the design effect at its largest)",
        undecidable=_few(wilson_floor(nc, 0.5), unit),
        p_value=float(p),
        k=k,
        m=m,
        clusters=nc,
    )


def contamination_ood_claim(
    contaminated: pd.DataFrame,
    uncontaminated: pd.DataFrame,
    source: str,
    prefix: str,
    kind: str,
    rests_on: str,
    seed: int = 0,
) -> Claim:
    """Corollary 2 out of domain: contaminated fine-tunes collapse more often than uncontaminated
    ones, the model as the unit, against the exact label-permutation null (module docstring)."""
    cid = prefix + "corollary2.contamination_ood"
    statement = (
        f"{source}: contamination, ood: contaminated fine-tunes' share of collapsing OOD changes "
        "minus the uncontaminated fine-tunes' (mean over models)"
    )
    a, b = collapse_rates(contaminated), collapse_rates(uncontaminated)
    if len(a) < 1 or len(b) < 1:
        return claim(
            PAPER,
            "§3.3-3.4 (corollary 2)",
            cid,
            statement,
            None,
            kind=kind,
            rests_on=rests_on,
            not_testable=f"{len(a)} contaminated and {len(b)} uncontaminated fine-tunes with OOD "
            "changes: a model-level test needs one of each",
        )
    observed, null, exact = label_permutation_null(a.to_numpy(), b.to_numpy(), seed=seed)
    band = order_band(null)
    p = float(
        (np.sum(null >= observed - 1e-12) + (0 if exact else 1)) / (null.size + (0 if exact else 1))
    )
    how = (
        f"{'every' if exact else str(null.size)} arrangement{'s' if null.size > 1 else ''} of the "
        f"contaminated/uncontaminated labels over {len(a) + len(b)} models "
        f"({null.size} {'exact' if exact else 'seeded draws'}; one-sided p {p:.3g})"
    )
    return claim(
        PAPER,
        "§3.3-3.4 (corollary 2)",
        cid,
        f"{statement}: {a.mean():.2f} over {len(a)} contaminated vs {b.mean():.2f} over {len(b)} "
        "uncontaminated",
        observed,
        null_range=band,
        null=float(null.mean()),
        direction="greater",
        null_how=how,
        paper_value="collapsing",
        kind=kind,
        rests_on=rests_on,
        interval_how="none: the models are the units; the verdict is the exact permutation test",
        figure="direction_counts",
        undecidable=_few(
            permutation_floor(len(a), len(b)), "fine-tunes (contaminated against uncontaminated)"
        ),
        p_value=p,
        exact=exact,
        contaminated_rates={str(k): round(v, 4) for k, v in a.items()},
        uncontaminated_rates={str(k): round(v, 4) for k, v in b.items()},
    )


def leak_claim(
    measurements: pd.DataFrame | None,
    contaminated: dict[str, str],
    leaked_tasks: Sequence[str],
    rests_on: str,
) -> Claim:
    """Set-up check: on the leaked task(s), the contaminated fine-tunes' test-minus-fresh accuracy
    gap exceeds their bases' (points, mean over fine-tune x task). The models are fixed (the
    question is whether these fine-tunes leaked); the items are the sample: the contrast of the
    accuracies (a base's counted once per fine-tune that subtracts it) with Price and Bonett's
    adjusted Wald interval (:func:`kit.core.stats.proportions_contrast_interval`; the plain Wald
    interval has zero width at accuracies of 0 or 100% and too little coverage at a few items)."""
    cid = "setup.leak_on_test_split"
    statement = (
        "set-up: the contaminated fine-tunes score higher on the leaked task's public test items "
        "than on its fresh items, beyond their bases' gap (points, mean over fine-tunes)"
    )

    def untestable(why: str) -> Claim:
        return claim(
            PAPER,
            "§3.4 (set-up)",
            cid,
            statement,
            None,
            kind="set-up check",
            rests_on=rests_on,
            not_testable=why,
        )

    if measurements is None or not contaminated or "fresh" not in set(measurements["split"]):
        return untestable("no fresh split or no contaminated fine-tunes measured")
    m = measurements[measurements["task"].isin(list(leaked_tasks))].set_index(
        ["model", "task", "split"]
    )
    terms: list[tuple[str, str, float]] = []  # (model, task, sign) of each accuracy in the sum
    for ft, base in contaminated.items():
        for t in leaked_tasks:
            keys = [(x, t, sp) for x in (ft, base) for sp in ("test", "fresh")]
            if all(k in m.index for k in keys):
                terms += [(ft, t, 1.0), (base, t, -1.0)]
    pairs = len(terms) // 2
    if pairs < 1:
        return untestable("no contaminated fine-tune with both splits measured beside its base")
    coef: dict[tuple[str, str, str], float] = {}
    for model, t, sign in terms:
        for sp, s2 in (("test", 1.0), ("fresh", -1.0)):
            coef[(model, t, sp)] = coef.get((model, t, sp), 0.0) + sign * s2 / pairs
    shares = []  # (coefficient, correct items, items) of each accuracy, once per key
    for key, c in coef.items():
        n = int(cast(Any, m.loc[key, "n"]))  # one row per key
        shares.append((100.0 * c, round(float(cast(Any, m.loc[key, "perf"])) * n / 100.0), n))
    gap, low, high = proportions_contrast_interval(shares)
    return claim(
        PAPER,
        "§3.4 (set-up)",
        cid,
        statement,
        gap,
        ci=(low, high),
        null=0.0,
        direction="greater",
        null_how="no leak (0)",
        kind="set-up check",
        rests_on=rests_on,
        interval_how=(
            f"Price-Bonett adjusted Wald 95% over each accuracy's items ({pairs} fine-tune x "
            f"task pairs; models fixed, items sampled)"
        ),
    )


def source_claims(tables: DirectionTables, prefix: str, kind: str, seed: int = 0) -> list[Claim]:
    """Every direction question and the contamination-vs-controls claim on one source."""
    out = [direction_claim(tables, q, prefix, kind) for q in QUESTIONS]
    clean = (
        pd.concat([t for t in (tables.specialised, tables.controls) if len(t)], ignore_index=True)
        if len(tables.specialised) or len(tables.controls)
        else tables.controls
    )
    out.append(
        contamination_ood_claim(
            tables.contaminated,
            clean,
            tables.source,
            prefix,
            kind,
            tables.rests_on.get("contamination", ""),
            seed,
        )
    )
    return out


PUBLISHED_RESTS_ON = {
    "pre-training": "the paper's Table 8 (OLMo-2-7B, 8 checkpoints 0.5T-4T, 7 benchmarks)",
    "specialisation": "the paper's Table 9 (CodeLlama, Qwen2.5-Coder, Qwen2.5-Math vs their bases)",
    "contamination": "the paper's Table 10 (the '-Leakage' fine-tunes vs their bases; Table 9's "
    "specialised models as the uncontaminated fine-tunes)",
}


def published_tables(
    olmo_steps: pd.DataFrame,
    specialised: pd.DataFrame,
    contamination: pd.DataFrame,
    late_steps: int,
) -> DirectionTables:
    """The paper's Tables 8-10 labelled (``step_directions`` / ``pair_directions`` outputs)."""
    empty = specialised.iloc[:0]
    return DirectionTables(
        "paper tables (Tables 8-10)",
        olmo_steps,
        specialised,
        contamination,
        empty,
        late_steps,
        PUBLISHED_RESTS_ON,
    )


def measured_tables(
    directions: dict[str, pd.DataFrame],
    split: str,
    source: str,
    late_steps: int,
    rests_on: dict[str, str],
) -> DirectionTables:
    """The measured models' labelled changes on ``split`` (``directions``: the output of
    :func:`kit.mui.trajectories.analyse`)."""

    def on(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["split"] == split] if len(frame) else frame

    return DirectionTables(
        f"{source} ({split} split)",
        on(directions["pretraining"]),
        on(directions["specialised"]),
        on(directions["contaminated"]),
        on(directions["controls"]),
        late_steps,
        rests_on,
    )


def measured_claims(
    directions: dict[str, pd.DataFrame],
    measurements: pd.DataFrame | None,
    contaminated: dict[str, str],
    leaked_tasks: Sequence[str],
    split: str,
    source: str,
    late_steps: int,
    rests_on: dict[str, str],
    seed: int = 0,
) -> list[Claim]:
    """The measured models' claims (kind ``reproduction``) and the leak's set-up check."""
    tables = measured_tables(directions, split, source, late_steps, rests_on)
    return source_claims(tables, "", "reproduction", seed) + [
        leak_claim(measurements, contaminated, leaked_tasks, rests_on.get("contamination", ""))
    ]


def study_claims(
    study: TrajectoryStudy,
    split: str,
    late_steps: int,
    published_late_steps: int = 2,
    seed: int = 0,
) -> list[Claim]:
    """Notebook 02's claims from a :class:`kit.mui.trajectories.TrajectoryStudy`: the paper's tables
    (``paper.`` ids, ``re-analysis``), the measured models on ``split`` (``reproduction``) and the
    leak (``set-up check``); the measured claims marked stable or not under the study's further item
    draws (``study.reseeds``: item seed -> the directions of the same models on those items)."""
    s = study.settings
    # set by a run study (its settings and the paper's tables)
    assert s is not None and study.olmo_steps is not None
    assert study.published_specialised is not None and study.published_contamination is not None
    pub = published_tables(
        study.olmo_steps,
        study.published_specialised,
        study.published_contamination,
        published_late_steps,
    )
    out = source_claims(pub, "paper.", "re-analysis", seed)

    def measured(directions, measurements) -> list[Claim]:
        return measured_claims(
            directions,
            measurements,
            s.contaminated,
            s.contaminated_tasks,
            split,
            study.source,
            late_steps,
            study.rests_on,
            seed,
        )

    mine = measured(study.directions, study.measurements)
    reruns = [measured(d, m) for m, d in study.reseeds.values()]
    if reruns:
        mark_stability(mine, reruns, "item draws with seeds " + ", ".join(map(str, study.reseeds)))
    return out + mine


def real_model_scope(
    contaminated: Sequence[str],
    controls: Sequence[str],
    specialised: Sequence[str] = (),
    offline: Sequence[str] = ("real/smollm2-135m-instruct", "real/gemma-3-270m"),
) -> list[str]:
    """Which of this notebook's claims the offline real models could test, and why not, computed
    from the real fine-tunes' counts (``contaminated``, ``controls``, ``specialised``: model names,
    e.g. ``kit.models.recipes.CONTAMINATED`` / ``CONTROLS`` / ``SPECIALISED``; each contaminated one
    leaks one benchmark, each specialised one is trained in one benchmark's domain), in the words
    of the claims' own design floors (:func:`wilson_floor`, :func:`permutation_floor`)."""

    def decidable(floor: str | None, cannot: str) -> str:
        return f"{floor}, so it {cannot}." if floor else "so it could be decided."

    n_c, n_u = len(contaminated), len(controls)
    if specialised:
        specialisation = (
            f"Corollary 1, specialisation: the specialised fine-tunes ({', '.join(specialised)}) "
            f"as units: {decidable(wilson_floor(len(specialised), 0.5), 'cannot be decided here')}"
        )
    else:
        specialisation = (
            "Corollary 1, specialisation: not testable: no specialised fine-tune of an offline "
            "real model (the paper's pairs are 7B hub models)."
        )
    return [
        f"Corollary 1, pre-training: not testable: {' and '.join(offline)} ship their final "
        "weights only (no training checkpoints offline); the paper and paper-pythia profiles name "
        "hub checkpoints.",
        specialisation,
        "Corollary 2, in domain: the contaminated fine-tunes, one leaked benchmark each, as units: "
        + decidable(wilson_floor(n_c, 0.5), "cannot be supported"),
        f"Corollary 2, out of domain: {n_c} contaminated against {n_u} clean fine-tunes, the model "
        "as the unit: "
        + (
            decidable(permutation_floor(n_c, n_u), "cannot be decided here")
            if n_c and n_u
            else "not testable: it needs both kinds."
        ),
        "Set-up check (the leak): testable on them (test-minus-fresh accuracy on the leaked "
        "benchmark).",
    ]
