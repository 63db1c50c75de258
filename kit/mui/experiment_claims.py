"""Claims of notebook 01's experiments on the focus model and the multi-token families (seed 000).

Corollary 4's data diversity (§3.6 growth curves), §3.7's "no difference" between correct and
incorrect responses (tested as equivalence), §3.8's masking of key vs random neurons (with
:func:`newcombe_diff`'s interval), and the claims on the multi-token families (the law across
models, Corollary 1 across one run's checkpoints, §3.7 on per-sample MUI). Every verdict comes from
:func:`kit.core.claims.claim`; notebook 01's claim list is assembled in :mod:`kit.mui.claims`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim, permutation_floor
from kit.core.stats import mean_diff_ci
from kit.mui.law_claims import PAPER, _fit_claim

EQUIVALENCE_FRACTION = 0.10
"""'No difference' (§3.7) is tested as equivalence within +-10% of the mean MUI (our choice: the
paper only reports a non-significant Mann-Whitney test, which cannot show absence of a
difference)."""


def _focus_rests_on(focus: str | None, what: str) -> str:
    return f"{focus or 'the focus model'}: {what}"


def _largest_varying_n(curves: pd.DataFrame) -> int:
    """The largest subset size at which the mixed pool's and the single pools' MUI vary over the
    random subsets (at a pool's own size every subset is the whole pool: a zero-width interval that
    can decide nothing), preferring sizes with the most subsets a side (the subsets at one n are
    disjoint, :func:`kit.mui.growth.disjoint_subsets`, so a larger n has fewer of them); the
    largest size when none varies."""
    sizes = sorted(set(curves["n"]), reverse=True)
    counts = {n: min(len(a) for a in _mixed_and_single(curves, n)) for n in sizes}
    for least in sorted(set(counts.values()), reverse=True):
        for n in sizes:
            mixed, single = _mixed_and_single(curves, n)
            if counts[n] >= least and len(np.unique(mixed)) > 1 and len(np.unique(single)) > 1:
                return int(n)
    return int(curves["n"].max())


def _mixed_and_single(curves: pd.DataFrame, n: int) -> tuple[np.ndarray, np.ndarray]:
    """At subset size ``n``: the mixed pool's MUI per repeat, and the single pools' mean per
    repeat."""
    at = curves[curves["n"] == n]
    mixed = at[at["pool"] == "mixed"]["mui"].to_numpy(float)
    single = at[at["pool"] != "mixed"].groupby("repeat")["mui"].mean().to_numpy(float)
    return mixed, single


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
    n_star = _largest_varying_n(curves)
    mixed, single = _mixed_and_single(curves, n_star)
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
    (Newcombe 1998, method 10: Wilson intervals of each side combined): statsmodels'
    ``confint_proportions_2indep(method="newcomb")``. Independent samples; on positively
    correlated ones (the same items) it is conservative."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    for k, n in ((k1, n1), (k2, n2)):
        if n <= 0 or not 0 <= k <= n:
            raise ValueError(f"a share needs n > 0 and 0 <= k <= n; got k={k}, n={n}")
    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
    return k1 / n1 - k2 / n2, float(lo), float(hi)


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
            _fit_claim(
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
