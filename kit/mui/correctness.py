"""§3.7 of seed 000: MUI of correct vs incorrect responses (equal counts per stratum,
Mann-Whitney U on per-sample MUI and on the MUI of disjoint sample chunks).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from kit.mui import metric as mui
from kit.mui.plots import plot_correctness
from kit.subjects import Subject


def correct_vs_incorrect(
    model,
    items: list,
    responses: list[str],
    correct: np.ndarray,
    seed: int = 0,
    strata: Sequence[str] | None = None,
    chunk_size: int | None = None,
    **mui_kwargs: Any,
) -> dict[str, Any]:
    """Per-sample MUI of correct vs incorrect responses with equal counts, Mann-Whitney U
    (two-sided); plus the dataset MUI of each equal-size set.

    Equal counts are drawn within each stratum (e.g. the task of each item: ``min(correct,
    incorrect)`` of each), so a task mix that differs between the two sides cannot masquerade
    as a correctness effect. ``strata=None`` treats all items as one stratum. The test is run
    on per-sample MUI (when it varies) and on the MUI of disjoint chunks of ``chunk_size``
    samples (default ``max(2, n // 10)``).
    """
    from scipy.stats import mannwhitneyu

    correct = np.asarray(correct, dtype=bool)
    strata = list(strata) if strata is not None else ["all"] * len(items)
    rng = random.Random(seed)
    pos: list[int] = []
    neg: list[int] = []
    for s in dict.fromkeys(strata):
        idx = [i for i, t in enumerate(strata) if t == s]
        p = [i for i in idx if correct[i]]
        q = [i for i in idx if not correct[i]]
        n_s = min(len(p), len(q))
        pos += rng.sample(p, n_s)
        neg += rng.sample(q, n_s)
    pos, neg = sorted(pos), sorted(neg)
    n = len(pos)
    out: dict[str, Any] = {
        "n_each": n,
        "n_correct_total": int(correct.sum()),
        "n_incorrect_total": int((~correct).sum()),
        "n_strata_used": len({strata[i] for i in pos}),
    }
    if n < 2:
        return out
    sets = {}
    for label, idx in (("correct", pos), ("incorrect", neg)):
        sets[label] = mui.utilization_for_items(
            model,
            [items[i] for i in idx],
            [responses[i] for i in idx],
            per_sample=True,
            **mui_kwargs,
        )
    a, b = np.array(sets["correct"].per_sample), np.array(sets["incorrect"].per_sample)
    out.update(
        {
            "mui_correct": sets["correct"].mui,
            "mui_incorrect": sets["incorrect"].mui,
            "sample_mui_correct_mean": float(a.mean()),
            "sample_mui_incorrect_mean": float(b.mean()),
            "per_sample_correct": a.tolist(),
            "per_sample_incorrect": b.tolist(),
            "per_sample_constant": bool(np.ptp(np.r_[a, b]) == 0),
        }
    )
    if not out["per_sample_constant"]:
        test = mannwhitneyu(a, b, alternative="two-sided")
        out.update({"mannwhitney_u": float(test.statistic), "mannwhitney_p": float(test.pvalue)})
    # One-token answers make every sample's own MUI the same (n_layers * k key neurons), so the
    # test is also run on the MUI of disjoint chunks of samples (independent unions).
    c = chunk_size or max(2, n // 10)
    chunk = {
        label: [
            mui.mui_of_mask(sets[label].sample_masks[i : i + c].any(dim=0))
            for i in range(0, n - c + 1, c)
        ]
        for label in sets
    }
    out.update(
        {
            "chunk_size": c,
            "chunk_mui_correct": chunk["correct"],
            "chunk_mui_incorrect": chunk["incorrect"],
        }
    )
    if len(chunk["correct"]) >= 2 and np.ptp(chunk["correct"] + chunk["incorrect"]) > 0:
        test = mannwhitneyu(chunk["correct"], chunk["incorrect"], alternative="two-sided")
        out.update(
            {
                "chunk_mannwhitney_u": float(test.statistic),
                "chunk_mannwhitney_p": float(test.pvalue),
            }
        )
    return out


def correctness_section(subject: Subject, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.7: MUI of correct vs incorrect responses, equal counts within each task."""
    from kit.core.findings import Section

    focus = subject.name
    items, resp, ok, strata = [], [], [], []
    for t in tasks:
        ans = subject.answer(
            t, subject.items(t, "test", cfg.correctness_n, cfg.seed), cfg.max_new_tokens
        )
        items += ans.items
        resp += ans.responses
        ok += ans.correct.tolist()
        strata += [t] * ans.n
    ci = correct_vs_incorrect(
        subject.model, items, resp, np.array(ok), cfg.seed, strata=strata, **mui_kw
    )
    if ci["n_each"] >= 2:
        per_sample = (
            "every sample's own MUI is identical (one-token answers: n_layers x k key neurons "
            "each), so no per-sample test"
            if ci["per_sample_constant"]
            else f"per-sample MUI {ci['sample_mui_correct_mean']:.3f}% vs "
            f"{ci['sample_mui_incorrect_mean']:.3f}%, Mann-Whitney p={ci['mannwhitney_p']:.3g}"
        )
        test = (
            f", Mann-Whitney U={ci['chunk_mannwhitney_u']:.0f}, p={ci['chunk_mannwhitney_p']:.3g})"
            if "chunk_mannwhitney_p" in ci
            else ", no test)"
        )
        chunk = (
            f"MUI of disjoint {ci['chunk_size']}-sample chunks "
            f"{np.mean(ci['chunk_mui_correct']):.2f}% vs "
            f"{np.mean(ci['chunk_mui_incorrect']):.2f}% ({len(ci['chunk_mui_correct'])} chunks a "
            "side" + test
        )
        finding = (
            f"§3.7 ({focus}): {ci['n_each']} correct vs {ci['n_each']} incorrect responses (equal "
            f"counts within each task): dataset MUI {ci['mui_correct']:.2f}% vs "
            f"{ci['mui_incorrect']:.2f}%; {chunk}; {per_sample}."
        )
    else:
        finding = (
            f"§3.7: too few incorrect or correct responses ({ci['n_correct_total']} correct, "
            f"{ci['n_incorrect_total']} incorrect) to compare."
        )
    return Section(
        record={
            "correct_vs_incorrect": {
                k: v for k, v in ci.items() if not k.startswith(("per_sample_c", "per_sample_i"))
            }
        },
        findings=[finding],
        figures={"sec37_correct_vs_incorrect": plot_correctness(ci)},
        data={"ci": ci},
        tables={
            "summary": {
                k: v
                for k, v in ci.items()
                if not k.startswith(("per_sample_c", "per_sample_i", "chunk_mui"))
            }
        },
    )
