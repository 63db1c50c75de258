"""Claims of seed 000 (MUI and the Utility Law) tested by notebooks 01 and 02.

Built from the numbers the notebooks computed (``results.json`` entries and a few frames); every
verdict comes from :func:`kit.core.claims.claim`. The Utility Law and corollaries 3 (PUR ranking)
and 4 (data diversity) are notebook 01's; corollaries 1 (training judgement) and 2 (contamination)
are notebook 02's.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim
from kit.core.stats import mean_diff_ci, wilson_interval
from kit.mui.direction_claims import REQUIRED_IDS as TRAJECTORY_IDS
from kit.mui.direction_claims import study_claims as trajectory_claims  # noqa: F401 (notebook 02)

PAPER = "000"
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
EQUIVALENCE_FRACTION = 0.10
"""'No difference' (§3.7) is tested as equivalence within +-10% of the mean MUI (our choice: the
paper only reports a non-significant Mann-Whitney test, which cannot show absence of a
difference)."""

TABLE5 = "the paper's Table 5 (performance and neuron MUI printed to one decimal)"
TABLE1 = "the paper's Tables 1 and 5 (PUR, performance and MUI printed to one decimal)"


def grid_rests_on(results: Mapping[str, Any]) -> str:
    """What section 2's claims rest on: the models of the law grid (``tiny_grid`` records)."""
    grid = pd.DataFrame(results.get("tiny_grid") or [])
    if grid.empty:
        return "the law grid's models (none recorded)"
    models, tasks = sorted(grid.model.unique()), sorted(grid.task.unique())
    if all(m.startswith("zoo/") for m in models):
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


def _focus_rests_on(focus: str | None, what: str) -> str:
    return f"{focus or 'the focus model'}: {what}"


def _fit_claim(
    id: str,
    fit: Mapping[str, Any] | None,
    where: str,
    figure: str | None,
    form: str = "mui_vs_log_perf",
    caveat: str = "",
    kind: str = "reproduction",
    rests_on: str = "",
) -> Claim:
    """The law's sign on one fit. Both forms predict a negative slope: the paper's ``MUI = -alpha ln
    P
    + beta`` (slope -alpha) and the inverse ``P = a + b ln MUI`` (slope b). ``fit``: slope, ci_low,
    ci_high, r2 (``r2_within`` for a fixed-effects fit), n; a missing slope is "not testable"."""
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
    return claim(
        PAPER,
        "§2, Fig. 3",
        id,
        statement,
        fit.get("slope"),
        ci=(fit.get("ci_low"), fit.get("ci_high")) if fit.get("ci_low") is not None else None,
        null=0.0,
        null_how="no relation (slope 0)",
        direction="less",
        paper_value="-4.632 (MUI-Eval's figure: MUI = -4.632 ln P + 28.305)"
        if form == "mui_vs_log_perf"
        else "negative (inverse log relation)",
        interval_how=(
            "t 95% CI of the within-group slope (fixed effect per "
            f"{fit['fixed_effects']}, {fit.get('n_groups')} groups)"
            if within
            else "OLS 95% CI of the slope (statsmodels)"
        ),
        figure=figure,
        caveat="; ".join(x for x in (caveat, weak) if x),
        kind=kind,
        rests_on=rests_on,
        r2=r2,
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
        _fit_claim(
            "law.published_per_model",
            results.get("published_law_fit_per_model"),
            "published Table 5, Figure 3's view (one point per general model)",
            "fig3_published_per_model",
            kind="re-analysis",
            rests_on=TABLE5 + ", 8 general models",
        ),
        _fit_claim(
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
    ``curves`` (columns pool, n, repeat, mui), the §3.7 ``correctness`` dict and item 7's
    ``multi_token`` data (``law``, ``ci`` of :func:`kit.mui.multi_token.multi_token_section`; None:
    those claims are "not testable here"). ``focus``: the model of §3.6-3.8 (what those rest on).
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
        _fit_claim(
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
    est = mean_diff_ci(pur[ok], perf[ok], n_boot=n_boot, seed=seed)
    return claim(
        PAPER,
        "§3.5, Table 1 (corollary 3)",
        "pur.ranking_vs_performance",
        statement,
        est[0],
        ci=est[1:],
        null=0.0,
        direction="greater",
        null_how="no gain (0)",
        paper_value="88.6 vs 86.4 Spearman (+2.2)",
        interval_how=f"paired bootstrap over {int(ok.sum())} tasks",
        rests_on=rests_on,
    )


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
    top = curves[curves["n"] == curves["n"].max()]
    mixed = top[top["pool"] == "mixed"]["mui"].to_numpy(float)
    single = top[top["pool"] != "mixed"].groupby("repeat")["mui"].mean().to_numpy(float)
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
    est = mean_diff_ci(mixed, single, paired=False, n_boot=n_boot, seed=seed)
    return claim(
        PAPER,
        "§3.6",
        "diversity.mixed_grows_faster",
        statement,
        est[0],
        ci=est[1:],
        null=0.0,
        direction="greater",
        null_how="no difference (0)",
        paper_value="mixed grows faster",
        interval_how=f"bootstrap over {len(mixed)} random subsets a side",
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
    est = mean_diff_ci(a, b, paired=False, n_boot=n_boot, seed=seed)
    margin = EQUIVALENCE_FRACTION * float(np.mean(np.concatenate([a, b])))
    return claim(
        PAPER,
        "§3.7",
        cid,
        statement,
        est[0],
        ci=est[1:],
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


def newcombe_diff(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """Difference of two proportions ``k1/n1 - k2/n2`` with Newcombe's hybrid score 95% interval
    (Newcombe 1998, method 10: Wilson intervals of each side combined). Independent samples; on
    positively correlated ones (the same items) it is conservative."""
    p1, l1, u1 = wilson_interval(k1, n1)
    p2, l2, u2 = wilson_interval(k2, n2)
    d = p1 - p2
    return d, d - float(np.hypot(p1 - l1, u2 - p2)), d + float(np.hypot(u1 - p1, p2 - l2))


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
        figure="sec38_masking",
        rests_on=rests_on,
    )


def multi_token_claims(
    data: Mapping[str, Any] | None, seed: int = 0, n_boot: int = 1000, form: str = "mui_vs_log_perf"
) -> list[Claim]:
    """Item 7 on the multi-token families. Across >= 3 models: the law (``law.multi_token``), with a
    fixed effect per family. Across one model's training checkpoints: not the law (one run's
    checkpoints are not independent models) but Corollary 1's "accumulating" (MUI and performance
    rising together in training), one claim per family (``corollary1.checkpoints[<family>]``: the
    families differ in MUI scale, so they are not pooled). And §3.7 on per-sample MUI where it can
    vary. ``data``: ``{"law": ..., "ci": ...}`` of
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
            _fit_claim(
                "law.multi_token",
                law.get("fe") or law,
                law.get("where", "multi-token families across models, a fixed effect per family"),
                "item7_per_sample_mui",
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
                "item7_per_sample_mui",
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
                figure="item7_per_sample_mui",
                rests_on=rests_on,
                caveat="successive checkpoints of one run are not independent points (the OLS "
                "interval is optimistic); whether this run is 'early' in the paper's sense is "
                "not defined",
            )
        )
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
