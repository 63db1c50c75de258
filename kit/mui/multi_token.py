"""Notebook 01's multi-token section: multi-token answers (per-sample MUI that can vary) and
MUI's ``k`` across model widths, on the tiny world's multi-token task families; the law on those
families, across models or across one model's training checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from kit.mui import metric as mui
from kit.mui.checkpoints import checkpoint_series, has_checkpoints
from kit.mui.correctness import correct_vs_incorrect
from kit.mui.key_neurons import default_k
from kit.mui.law import fe_law_record, fmt_fit, law_fits
from kit.mui.plots import plot_per_sample_mui
from kit.subjects import Subject, is_world_name, load_subject, task_group


def width_k_table(models: Sequence[str], world: str, k: int | None = None) -> pd.DataFrame:
    """Per zoo model: n_layers, d_mlp, MUI's per-token per-layer ``k`` (``k`` if given, else
    :func:`kit.mui.key_neurons.default_k`, the paper's top 0.1%) and the MUI of one response token,
    ``100 k / d_mlp`` %: every one-token sample has exactly this MUI, so per-sample MUI can only
    vary with multi-token responses, and a model with another ``k / d_mlp`` sits on another
    scale."""
    from kit import world as kworld

    rows = []
    for m in models:
        if not is_world_name(m):
            continue
        arch = kworld.member_info(m, world)["arch"]
        kk = k or default_k(arch["d_mlp"])
        rows.append(
            {
                "model": m,
                "n_layers": arch["n_layers"],
                "d_mlp": arch["d_mlp"],
                "k": kk,
                "key_neurons_per_token": arch["n_layers"] * kk,
                "one_token_sample_mui": 100.0 * kk / arch["d_mlp"],
            }
        )
    return pd.DataFrame(rows)


def per_sample_mui(
    subject: Subject, task: str, items: list, mui_kw: Mapping[str, Any]
) -> pd.DataFrame:
    """Greedy responses of a world model (as many tokens as the longest answer), exact match of the
    answer words (``Subject.answer``) and token accuracy, and each sample's own MUI (Eq. 5 on that
    sample alone).

    Returns columns item, correct, token_accuracy, response_tokens, mui."""
    from kit import world as kworld

    n_ans = max(len(it.target.split()) for it in items)
    ans = subject.answer(task, items, max_new_tokens=n_ans)
    tok = np.asarray(kworld.token_accuracy(subject.model, items))
    res = mui.utilization_for_items(subject.model, items, ans.responses, per_sample=True, **mui_kw)
    return pd.DataFrame(
        {
            "item": [it.id for it in items],
            "correct": ans.correct,
            "token_accuracy": tok,
            "response_tokens": [len(r.split()) for r in ans.responses],
            "mui": res.per_sample,
            "response": ans.responses,
        }
    )


def multi_token_section(
    models: Sequence[str],
    tasks: Sequence[str],
    one_token_task: str,
    cfg,
    focus: str | None = None,
    **mui_kw: Any,
):
    """k per width, per-sample MUI on the multi-token families (beside a one-token task),
    the law on the multi-token families and §3.7 (correct vs incorrect) where per-sample MUI varies.

    ``models``: zoo models; ``tasks``: multi-token families (``kit.world.EXTRA_TASKS``); ``focus``:
    the §3.7 model (default: the model with the largest k, ties to the last listed)."""
    from kit import world as kworld
    from kit.core.findings import Section

    if not tasks:
        raise ValueError(
            "tasks is empty: name at least one multi-token family "
            f"(allowed values: {', '.join(kworld.EXTRA_TASKS)})"
        )
    unknown = [t for t in tasks if t not in kworld.EXTRA_TASKS]
    if unknown:
        raise ValueError(
            f"multi_token_tasks: {unknown} are not multi-token families; allowed values: "
            f"{', '.join(kworld.EXTRA_TASKS)}"
        )
    widths = width_k_table(models, cfg.world, mui_kw.get("k"))
    focus = focus or widths.sort_values("k", kind="stable").model.iloc[-1]
    if focus not in set(widths.model):
        raise ValueError(
            f"multi_token_focus={focus!r} is not one of the section's zoo models: "
            f"{', '.join(widths.model)}"
        )
    samples, cells = [], []
    focus_frames = []
    for m in models:
        subject = load_subject(m, world=cfg.world)
        model = subject.model
        for t in [*tasks, one_token_task]:
            items = subject.items(t, "test", cfg.multi_token_n_items, cfg.seed)
            df = per_sample_mui(subject, t, items, mui_kw).assign(model=m, task=t)
            samples.append(df)
            cells.append(
                {
                    "model": m,
                    "task": t,
                    "group": task_group(t),
                    "answer_tokens": len(items[0].target.split()),
                    "performance": 100 * df.correct.mean(),
                    "token_accuracy": 100 * df.token_accuracy.mean(),
                    "mui": mui.utilization_for_items(
                        model, items, df.response.tolist(), **mui_kw
                    ).mui,
                    "sample_mui_mean": df.mui.mean(),
                    "sample_mui_sd": df.mui.std(ddof=0),
                    "sample_mui_min": df.mui.min(),
                    "sample_mui_median": df.mui.median(),
                    "sample_mui_max": df.mui.max(),
                    "sample_mui_distinct": int(df.mui.nunique()),
                }
            )
            if m == focus and t in tasks:
                focus_frames.append((items, df))
        if m == focus:
            items = [it for its, _ in focus_frames for it in its]
            resp = [r for _, df in focus_frames for r in df.response]
            ok = np.concatenate([df.correct.to_numpy() for _, df in focus_frames])
            strata = [t for t, (_, df) in zip(tasks, focus_frames) for _ in range(len(df))]
            ci = correct_vs_incorrect(model, items, resp, ok, cfg.seed, strata=strata, **mui_kw)
        del model
    samples = pd.concat(samples, ignore_index=True)
    cells = pd.DataFrame(cells)
    mt = cells[cells.task.isin(tasks)]
    answered = sorted(mt[mt.performance > 0].model.unique())
    series = None
    if len(answered) == 1 and has_checkpoints(kworld.members(cfg.world), answered[0]):
        series = _checkpoint_cells(answered[0], tasks, cfg, mui_kw, mt)
    law, law_note = multi_token_law(mt, cfg.law_form, series, world=cfg.world)
    fx = mt[mt.model == focus]
    one = cells[(cells.model == focus) & (cells.task == one_token_task)].iloc[0]
    k_text = ", ".join(
        f"{r.model} k={r.k} (d_mlp {r.d_mlp}, one-token sample MUI {r.one_token_sample_mui:.3f}%)"
        for r in widths.itertuples()
    )
    findings = [
        f"Multi-token answers, k across widths: {k_text}. One response token gives every sample "
        "the same MUI "
        "100·k/d_mlp, so only multi-token answers let per-sample MUI vary, and models with "
        "different k/d_mlp sit on different scales.",
        f"Multi-token answers, per-sample MUI of {focus}: "
        + "; ".join(
            f"{r.task} ({r.answer_tokens}-token answers, exact {r.performance:.1f}%, token "
            f"{r.token_accuracy:.1f}%): {r.sample_mui_min:.3f}-{r.sample_mui_max:.3f}% (median "
            f"{r.sample_mui_median:.3f}, sd {r.sample_mui_sd:.3f}, {r.sample_mui_distinct} "
            "distinct values)"
            for r in fx.itertuples()
        )
        + f"; one-token task {one_token_task}: {one.sample_mui_distinct} distinct value(s) "
        f"({one.sample_mui_min:.3f}%). " + law_note + ".",
    ]
    if ci.get("n_each", 0) >= 2:
        findings.append(
            f"§3.7 on the multi-token families ({focus}): {ci['n_each']} correct vs "
            f"{ci['n_each']} incorrect (equal counts per family): per-sample MUI "
            f"{ci['sample_mui_correct_mean']:.3f}% vs {ci['sample_mui_incorrect_mean']:.3f}%"
            + (
                f", Mann-Whitney p={ci['mannwhitney_p']:.3g}"
                if ci.get("mannwhitney_p") is not None
                else ""
            )
            + f"; dataset MUI {ci['mui_correct']:.2f}% vs {ci['mui_incorrect']:.2f}%."
        )
    else:
        findings.append(
            f"§3.7 on the multi-token families ({focus}): too few correct or incorrect "
            f"responses ({ci.get('n_correct_total')} correct, {ci.get('n_incorrect_total')} "
            "incorrect) to compare."
        )
    record = {
        "multi_token": {
            "widths": widths.to_dict(orient="records"),
            "focus": focus,
            "cells": cells.to_dict(orient="records"),
            "law": law,
            "correct_vs_incorrect": {
                k: v for k, v in ci.items() if not k.startswith(("per_sample_c", "per_sample_i"))
            },
        }
    }
    return Section(
        record=record,
        findings=findings,
        tables={"widths": widths, "cells": cells},
        figures={"multi_token_per_sample_mui": plot_per_sample_mui(samples, focus)},
        data={"samples": samples, "ci": ci, "law": law},
    )


def _checkpoint_cells(
    model: str, tasks: Sequence[str], cfg, mui_kw: Mapping[str, Any], final: pd.DataFrame
) -> pd.DataFrame:
    """Performance and dataset MUI of ``model``'s checkpoints on ``tasks`` (the items of the
    section), with the final model's cells (``final``) appended."""
    from kit import world as kworld

    rows = []
    final_step = kworld.member_info(model, cfg.world)["step"]
    for name in checkpoint_series(kworld.members(cfg.world), model, final_step)[:-1]:
        subject = load_subject(name, world=cfg.world)
        for t in tasks:
            items = subject.items(t, "test", cfg.multi_token_n_items, cfg.seed)
            df = per_sample_mui(subject, t, items, mui_kw)
            rows.append(
                {
                    "model": name,
                    "task": t,
                    "performance": 100 * df.correct.mean(),
                    "mui": mui.utilization_for_items(
                        subject.model, items, df.response.tolist(), **mui_kw
                    ).mui,
                }
            )
        del subject
    fin = final[final.model == model][["model", "task", "performance", "mui"]]
    return pd.concat([pd.DataFrame(rows), fin], ignore_index=True)


def multi_token_law(
    mt: pd.DataFrame, form: str, series: pd.DataFrame | None = None, world: str = "tiny"
) -> tuple[dict, str]:
    """The law on the multi-token families: ``(law, note)``; ``law`` is what ``law.multi_token``
    reads.

    ``mt``: cells (model, task, performance, mui) of the section's models. With >= 3 models above
    0%, the law across them (pooled over the families, and with a fixed effect per family: ``fe``,
    which the claim reads). Otherwise, if ``series`` (the cells of the one
    answering model's checkpoints and itself) is given, the fit across that series, per family
    (``per_task_fit``) and pooled: one run's checkpoints test Corollary 1's "accumulating" (MUI and
    performance rising together in training), not the law across models; the claims read it per
    family."""
    fit_cells = mt[mt.performance > 0]
    n_models_fit = int(fit_cells.model.nunique())

    def pooled_fit(cells: pd.DataFrame) -> tuple[pd.DataFrame, dict, dict]:
        fit = law_fits(cells, by="task", form=form)
        pooled = fit[fit.task == "all"].iloc[0].to_dict()
        return (
            fit,
            pooled,
            {
                k: (None if pd.isna(pooled.get(k)) else pooled.get(k))
                for k in ("slope", "ci_low", "ci_high", "r2", "n")
            },
        )

    if n_models_fit >= 3:
        _, pooled, law = pooled_fit(mt)
        # the families differ in MUI scale: the claim reads the fit with a fixed effect per family
        law["fe"] = fe_law_record(mt, "task", form=form)
        note = (
            f"law on the multi-token families: {fmt_fit(pooled)}; with a fixed effect per family "
            f"{fmt_fit(law['fe'])} (R² within)"
        )
        if law["slope"] is None:
            law["not_testable"] = (
                f"too few distinct (performance, MUI) cells to fit: {fmt_fit(pooled)}"
            )
        return law, note
    if series is not None and n_models_fit == 1:
        model = fit_cells.model.iloc[0]
        n_ck = int(series.model.nunique())
        fit, pooled, law = pooled_fit(series)
        per_task_fit = {
            r.task: {
                k: (None if pd.isna(getattr(r, k)) else float(getattr(r, k)))
                for k in ("slope", "ci_low", "ci_high", "r2", "n")
            }
            for r in fit.itertuples()
            if r.task != "all"
        }
        law.update(
            over="checkpoints",
            model=model,
            n_models=n_ck,
            per_task_fit=per_task_fit,
            per_task={
                r.task: fmt_fit(cast(Any, r)._asdict()) for r in fit.itertuples() if r.task != "all"
            },
            where=(
                f"{world} world, multi-token families pooled, across {n_ck} training checkpoints "
                f"of {model} "
                "(one training run, not independent models)"
            ),
        )
        per = "; ".join(f"{t}: {v}" for t, v in law["per_task"].items())
        note = (
            f"law on the multi-token families: only {model} answers them, so it is fit across "
            f"{n_ck} checkpoints of its training run ({', '.join(series.model.unique())}; not "
            f"independent models): pooled {fmt_fit(pooled)}; {per}"
        )
        if law["slope"] is None:
            law["not_testable"] = (
                f"too few distinct (performance, MUI) checkpoint cells to fit: {fmt_fit(pooled)}"
            )
        return law, note
    law = {
        "slope": None,
        "n": int(len(fit_cells)),
        "n_models": n_models_fit,
        "not_testable": (
            f"inconclusive: only {n_models_fit} model(s) answer a multi-token family above 0% "
            f"({', '.join(sorted(fit_cells.model.unique())) or 'none'}; the others were not "
            "trained on them) and none has checkpoints, and a law across models needs at least 3"
        ),
    }
    return law, "law on the multi-token families " + law["not_testable"]
