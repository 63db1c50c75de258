"""Other ways to compute MUI: the score x threshold grid of appendix B.6 (seed 000) and the
paper's definition beside MUI-Eval's public code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pandas as pd

from kit.mui import metric as mui
from kit.mui.key_neurons import THRESHOLDS, default_k
from kit.mui.plots import plot_method_correlations
from kit.mui.published import published_b6_correlations
from kit.subjects import Subject

DEFAULT_METHODS: list[tuple[str, str]] = [
    (s, t)
    for s in ("score", "activate", "gradient", "score_sum", "activate_sum")
    for t in THRESHOLDS
]

PUBLIC_TOPSCORE_FRACS = (0.8, 0.85, 0.9, 0.95)
"""MUI-Eval's ``depict_neuron.py`` topscore values; the paper's A.4 default is 0.2 (Dai et al.)."""


def method_name(score: str, threshold: str, frac: float | None = None) -> str:
    return f"{score}/{threshold}" + (f"@{frac:g}" if frac is not None else "")


def method_grid(
    model_names: Sequence[str],
    tasks: Sequence[str],
    n_items: int,
    world: str,
    device: str = "cpu",
    methods: Sequence[tuple] = DEFAULT_METHODS,
    batch_size: int = 32,
    seed: int = 0,
    max_new_tokens: int = 1,
    dtype: str | None = None,
    max_batch_tokens: int | None = None,
    prompt_style: str = "instructed",
    loaded: Mapping[str, Any] | None = None,
    jobs: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """MUI under every method for each (model, task) cell (world models in ``batch_size`` rows,
    Hugging Face models in batches of ``max_batch_tokens`` padded tokens: ``Subject.token_budget``).
    A method is ``(score, threshold)`` (the threshold's default parameter) or ``(score, threshold,
    frac)``. Returns columns model, task, method, score, threshold, frac, mui, d_mlp,
    max_response_tokens (the longest response of the cell, which decides whether ``*_sum`` can
    differ from the token score). ``loaded``: subjects already held, by name (not loaded again);
    ``jobs``: None here, else one job per model on that engine
    (:func:`kit.subjects.sweep.rows_per_model`)."""
    from kit.subjects.sweep import rows_per_model

    rows = rows_per_model(
        method_rows,
        model_names,
        {"device": device, "world": world, "dtype": dtype, "prompt_style": prompt_style},
        {
            "tasks": list(tasks),
            "n_items": n_items,
            "methods": [list(m) for m in methods],
            "batch_size": batch_size,
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "max_batch_tokens": max_batch_tokens,
        },
        jobs,
        loaded,
        desc="B.6 grid",
    )
    return pd.DataFrame(rows)


def method_rows(
    subject,
    name: str,
    tasks: Sequence[str],
    n_items: int,
    methods: Sequence[Sequence],
    batch_size: int,
    seed: int,
    max_new_tokens: int,
    max_batch_tokens: int | None,
) -> list[dict[str, Any]]:
    """:func:`method_grid`'s rows of one model (``subject``, called ``name``)."""
    model = subject.model
    rows = []
    for task in tasks:
        items = subject.items(task, "test", n_items, seed)
        tokens, mask = subject.tokens(items, subject.respond(task, items, max_new_tokens))
        longest = int(mask.sum(dim=1).max())
        for method in methods:
            score, threshold, frac = cast("tuple[str, str, float | None]", (*method, None)[:3])
            res = mui.utilization(
                model,
                tokens,
                mask,
                score=score,
                threshold=threshold,
                frac=frac,
                batch_size=batch_size,
                max_batch_tokens=subject.token_budget(max_batch_tokens),
            )
            rows.append(
                {
                    "model": name,
                    "task": task,
                    "method": method_name(score, threshold, frac),
                    "score": score,
                    "threshold": threshold,
                    "frac": frac,
                    "mui": res.mui,
                    "d_mlp": model.cfg.d_mlp,
                    "max_response_tokens": longest,
                }
            )
    return rows


def coincident_methods(grid: pd.DataFrame) -> dict[str, str]:
    """Methods of ``grid`` that equal another BY CONSTRUCTION in every cell: ``top_pct`` (default
    0.001) keeps ``max(1, round(d_mlp/1000))`` = topk's default k; ``<s>_sum`` equals ``<s>`` when
    no response has more than one token (the sum over one position is that position). Returns
    dropped -> kept."""
    methods = set(grid.method)
    out = {}
    if len(grid):
        same_k = all(
            default_k(int(d)) == max(1, round(0.001 * int(d))) for d in grid.d_mlp.unique()
        )
        one_token = int(grid.max_response_tokens.max()) <= 1
        for m in sorted(methods):
            score, _, rest = m.partition("/")
            threshold = rest.split("@")[0]
            if same_k and threshold == "top_pct" and "@" not in rest and f"{score}/topk" in methods:
                out[m] = f"{score}/topk"
            elif one_token and score.endswith("_sum") and f"{score[:-4]}/{rest}" in methods:
                out[m] = f"{score[:-4]}/{rest}"
    return out


def method_correlations(grid: pd.DataFrame) -> pd.DataFrame:
    """Spearman between methods across (model, task) cells (method x method)."""
    wide = grid.pivot_table(index=["model", "task"], columns="method", values="mui")
    return wide.corr(method="spearman")


def method_grid_section(
    model_names: Sequence[str], tasks: Sequence[str], cfg, loaded: Mapping[str, Any] | None = None
):
    """App. B.6: the published Tables 11-17 re-read, then MUI under every score x threshold
    in the world (``topscore`` at 0.2 and at MUI-Eval's 0.8-0.95), methods equal by construction
    dropped, and Spearman of each remaining method with the selected one."""
    from kit.core.findings import Section
    from kit.core.jobs import engine_options

    pub = published_b6_correlations()
    alt = pub[pub.quoted.notna() & (pub.family == "neuron")]
    sae = pub[pub.quoted.notna() & (pub.family == "sae")]
    methods: list[tuple[Any, ...]]  # (score, threshold) or (score, threshold, frac)
    methods = [
        (s, t, f) if t == "topscore" else (s, t)
        for s in cfg.grid_scores
        for t in cfg.grid_thresholds
        for f in (cfg.grid_topscore_fracs if t == "topscore" else [None])
    ]
    mgrid = method_grid(
        model_names,
        tasks,
        cfg.grid_n_items,
        cfg.world,
        cfg.device,
        methods,
        cfg.batch_size,
        cfg.seed,
        cfg.max_new_tokens,
        dtype=cfg.dtype,
        max_batch_tokens=cfg.max_batch_tokens,
        prompt_style=cfg.prompt_style,
        loaded=loaded,
        jobs=engine_options(cfg),
    )
    dropped = coincident_methods(mgrid)
    kept = mgrid[~mgrid.method.isin(list(dropped))]
    corr = method_correlations(kept)
    ref_method = method_name(*methods[0])
    others = (
        corr[ref_method].drop(ref_method).dropna() if ref_method in corr else pd.Series(dtype=float)
    )
    drop_text = "; ".join(f"{d} = {k}" for d, k in dropped.items()) if dropped else "none"
    findings = [
        "B.6 published: from the printed Tables 13/14 vs Table 11, Spearman over the "
        f"{int(alt.n_cells.iloc[0])} (model, benchmark) cells is {alt.pooled.iloc[0]:.3f} / "
        f"{alt.pooled.iloc[1]:.3f} (mean {alt.pooled.mean():.3f}); mean of per-benchmark Spearmans "
        f"{alt.per_benchmark_mean.mean():.3f}; the paper quotes {alt.quoted.iloc[0]} (published, "
        "not recomputable exactly from the rounded tables). SAE Tables 16/17 vs 15: pooled "
        f"{sae.pooled.mean():.3f} (quoted {sae.quoted.iloc[0]}).",
        f"B.6 world ({len(model_names)} models x {len(tasks)} tasks, {len(methods)} methods, "
        f"{len(dropped)} dropped as equal by construction: {drop_text}): mean Spearman of the "
        f"other {len(others)} methods with {ref_method} is "
        + (
            f"{others.mean():.3f} (range {others.min():.3f} to {others.max():.3f})."
            if len(others)
            else "undefined."
        ),
    ]
    return Section(
        record={
            "b6_method_spearman": corr,
            "b6_mean_spearman_vs_selected": float(others.mean()) if len(others) else None,
            "b6_cells": int(len(mgrid)),
            "b6_dropped_equal_by_construction": dropped,
            "b6_published": pub.to_dict(orient="records"),
        },
        findings=findings,
        figures={"b6_method_spearman": plot_method_correlations(corr)},
        tables={
            "published": pub,
            "grid": kept.pivot_table(index=["model", "task"], columns="method", values="mui"),
        },
    )


def public_code_section(
    subject: Subject, task: str, cfg, k: int | None = None, prompts: str = "kit"
):
    """The paper's definition and MUI-Eval's code (``variant="public_code"``) on the same
    model, items and responses; the code with 1 and with 2 visible GPUs (its per-GPU duplicates).

    ``prompts``: the code's rows built as kit builds them (``kit``: the same tokens as the paper's
    row, so only the scoring differs) or as the public code builds them (``public_code``:
    :func:`kit.mui.metric.public_code_rows`, its BOS handling and templates; real models only)."""
    from kit.core.findings import Section

    if prompts not in mui.PROMPTS:
        raise ValueError(f"prompts={prompts!r}; allowed values: {', '.join(mui.PROMPTS)}")
    model, focus = subject.model, subject.name
    items = subject.items(task, "test", cfg.n_items, cfg.seed)
    responses = subject.respond(task, items, cfg.max_new_tokens)
    tokens, mask = subject.tokens(items, responses)
    pub_tokens, pub_mask = tokens, mask
    if prompts == "public_code":
        if subject.kind == "world":
            raise ValueError(
                "prompts='public_code' needs a real model's tokenizer; allowed for tiny-world "
                "models: prompts='kit'"
            )
        from kit.models.rows import pad_rows

        chat = getattr(subject, "chat", None)
        template = None if chat is None else ("chat" if chat else "plain")
        rows = mui.public_code_rows(model, [it.prompt for it in items], responses, template)
        pad = model.tokenizer.pad_token_id
        pub_tokens, pub_mask = pad_rows(rows, pad if pad is not None else 0)
    d = model.cfg.d_mlp
    k_pub = mui.public_code_k(d) if k is None else k
    note = ""
    if k_pub < 1:
        k_pub = 1
        note = (
            f" The public code's k = int({d}/1000) = 0 would select no neuron at all (MUI 0); k = "
            "1 is passed explicitly so its other choices can be compared."
        )
    if prompts == "public_code":
        n_bos = sum(int(r[0] == r[1] == model.tokenizer.bos_token_id) for r in pub_tokens.tolist())
        note += (
            " The code's rows are tokenised as the code tokenises them (its templates, a BOS added "
            f"even after a template's own: {n_bos} of {len(items)} rows start with two)."
        )
    budget: dict[str, Any]
    budget = dict(
        batch_size=cfg.batch_size, max_batch_tokens=subject.token_budget(cfg.max_batch_tokens)
    )
    paper = mui.utilization(model, tokens, mask, **budget).mask
    rows = [
        {
            "variant": "paper (per-token top-k, act*up, next token)",
            "k": default_k(d),
            "mui": mui.mui_of_mask(paper),
            "jaccard_with_paper": 1.0,
        }
    ]
    for g in (1, 2):
        res = mui.utilization(
            model, pub_tokens, pub_mask, variant="public_code", k=k_pub, n_gpus=g, **budget
        )
        jac = float((res.mask & paper).sum() / max(1, int((res.mask | paper).sum())))
        rows.append(
            {
                "variant": f"public_code, {g} GPU(s)"
                + (", its prompts" if prompts == "public_code" else ""),
                "k": k_pub,
                "mui": res.mui,
                "jaccard_with_paper": jac,
            }
        )
    table = pd.DataFrame(rows)
    p, c1, c2 = table.mui
    finding = (
        f"Paper vs public code ({focus}, {task}, {len(items)} items): MUI {p:.3f}% by the "
        "paper's definition vs "
        f"{c1:.3f}% by MUI-Eval's code (1 GPU; {c2:.3f}% with 2 GPUs); the two key-neuron sets "
        f"share {table.jaccard_with_paper.iloc[1]:.2f} of their union (Jaccard). Table 5's "
        "absolute MUI values come from MUI-Eval's code (off-by-one target, act(gate), top-k per "
        "response, floor k, per-GPU duplicates), not from the definition in the paper's text; our "
        f"default is the text's definition.{note}"
    )
    return Section(
        record={"public_code_vs_paper": table.to_dict(orient="records")},
        findings=[finding],
        tables={"variants": table},
    )
