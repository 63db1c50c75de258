"""Claims of seed 000 (MUI and the Utility Law) tested by notebooks 01 and 02.

Built from the numbers the notebooks computed (``results.json`` entries and a few frames); every
verdict comes from :func:`kit.core.claims.claim`. The Utility Law and corollaries 3 (PUR ranking)
and 4 (data diversity) are notebook 01's; corollaries 1 (training judgement) and 2 (contamination)
are notebook 02's.

Here: the claim ids each notebook must report (:data:`REQUIRED_IDS`) and notebook 01's claim list
(:func:`utility_law_claims`, :func:`stability_reruns`). The claims are built in
:mod:`kit.mui.law_claims` (the law's sign on the published tables and the law grid, PUR's ranking),
:mod:`kit.mui.experiment_claims` (§3.6-3.8 on the focus model, the multi-token families) and
:mod:`kit.mui.direction_claims` (notebook 02's).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from kit.core.claims import Claim, claim
from kit.mui.direction_claims import REQUIRED_IDS as TRAJECTORY_IDS
from kit.mui.experiment_claims import (
    _correctness_claim,
    _growth_claim,
    _masking_claim,
    multi_token_claims,
)
from kit.mui.law_claims import PAPER, _grid_law_claims, published_claims

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


def grid_rests_on(results: Mapping[str, Any]) -> str:
    """What section 2's claims rest on: the models of the law grid (``tiny_grid`` records)."""
    grid = pd.DataFrame(results.get("tiny_grid") or [])
    if grid.empty:
        return "the law grid's models (none recorded)"
    models, tasks = sorted(grid.model.unique()), sorted(grid.task.unique())
    from kit.models.sources import form_of

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
