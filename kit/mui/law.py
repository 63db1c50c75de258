"""The experiments and figures of notebook 01 (MUI and the Utility Law, seed 000).

Each function is one section of the notebook: it takes models/items (or the published tables)
and returns plain tables (pandas) or dicts; the ``plot_*`` functions draw them. The metric itself
lives in :mod:`kit.mui.metric`; this module only arranges experiments around it.

World access goes through ``kit.world`` (``members``, ``get_task``, ``evaluate``, ``respond``,
``saes``) and ``kit.load_model`` / ``kit.load_sae``; nothing here depends on how the world is built.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from kit.mui import metric as mui
from kit.models import tl

# --------------------------------------------------------------------------------------------
# 1. published numbers


PUBLISHED_GENERAL_MODELS = ("Vicuna-7B", "Llama-2-7B-Chat", "Qwen1.5-7B-Chat", "Llama-3.1-8B-Instruct",
                            "Qwen2.5-7B-Instruct", "Gemma2-9B-Instruct", "DeepSeek-Llama3.1-8B", "DeepSeek-Qwen2.5-7B")
"""Table 5's general 7-9B models: §3.2 excludes specialised ones (CodeLlama, Qwen2.5-Coder/Math) and Figure 3
shows these eight; the larger sizes (13B-33B) are Table 5's scaling rows."""
FIGURE3_EXCLUDED = ("MMLU",)
"""§3.2: Figure 3 aggregates every benchmark except MMLU ("due to its high inference cost")."""


def published_mui_table(models: str | Sequence[str] = "all") -> pd.DataFrame:
    """Table 5 (App. B.1): model, benchmark, benchmark_category, performance, mui.

    ``models``: ``"all"`` (18 models), ``"general"`` (:data:`PUBLISHED_GENERAL_MODELS`, the set of §3.2 /
    Figure 3) or a list of Table 5 names."""
    from kit.data.paper_tables import load_table

    t = load_table("000_table05_neuron_mui_main").dropna(subset=["performance", "mui"])
    if isinstance(models, str):
        if models not in ("all", "general"):
            raise ValueError(f"models={models!r}; allowed values: all, general, or a list of Table 5 model names")
        if models == "all":
            return t
        models = PUBLISHED_GENERAL_MODELS
    unknown = set(models) - set(t.model)
    if unknown:
        raise ValueError(f"models {sorted(unknown)} are not in Table 5; allowed: {', '.join(sorted(set(t.model)))}")
    return t[t.model.isin(list(models))].reset_index(drop=True)


def published_per_model(df: pd.DataFrame, exclude: Sequence[str] = FIGURE3_EXCLUDED) -> pd.DataFrame:
    """Figure 3's view, one point per model: mean performance and mean MUI over the benchmarks not in
    ``exclude``. Figure 3's MUI is the union over all those benchmarks' samples, which Table 5 cannot
    give; the mean of per-benchmark MUI is the nearest the printed numbers allow (so the absolute MUI
    differs from Figure 3's, the ordering need not)."""
    d = df[~df.benchmark.isin(list(exclude))]
    out = d.groupby("model", sort=False)[["performance", "mui"]].mean().reset_index()
    return out.assign(benchmark="per model (mean over " + ", ".join(sorted(d.benchmark.unique())) + ")")


def law_fits(df: pd.DataFrame, by: str = "benchmark", perf: str = "performance", m: str = "mui",
             form: str = "mui_vs_log_perf") -> pd.DataFrame:
    """:func:`kit.mui.metric.fit_law` per group of ``df`` (plus ``all`` pooled): slope, CI, R^2, n, and
    for the paper's form alpha, beta and the MUI the fit gives at P = 100."""
    rows = []
    groups = list(df.groupby(by)) + [("all", df)]
    for name, g in groups:
        g = g[(g[m] > 0) & g[perf].notna() & ((g[perf] > 0) if form == "mui_vs_log_perf" else True)]
        if len(g) < 3 or g[m].nunique() < 2 or g[perf].nunique() < 2:
            rows.append({by: name, "n": len(g)})
            continue
        f = mui.fit_law(g[perf].to_numpy(), g[m].to_numpy(), form=form)
        rows.append({by: name, "slope": f.slope, "intercept": f.intercept, "ci_low": f.ci_low,
                     "ci_high": f.ci_high, "r2": f.r2, "pvalue": f.pvalue, "n": f.n, "form": form,
                     "alpha": f.alpha, "beta": f.beta, "mui_at_100": f.mui_at(100.0)})
    # every column even when no group could be fitted (e.g. 0% performance everywhere)
    cols = [by, "slope", "intercept", "ci_low", "ci_high", "r2", "pvalue", "n", "form", "alpha", "beta", "mui_at_100"]
    return pd.DataFrame(rows, columns=cols)


def name_key(name: str) -> str:
    """Model-name key that ignores case, spaces and punctuation: Table 1's ``Gemma-2-9B-Instruct`` and
    Table 5's ``Gemma2-9B-Instruct`` are the same model."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def published_pur_comparison(alpha: float = 0.5) -> pd.DataFrame:
    """PUR recomputed from Table 5 (perf / MUI^alpha) beside Table 1's printed PUR.

    Models are matched by :func:`name_key` (the two tables spell Gemma differently). Table 1's
    Llama-3-8B-Instruct is not in Table 5: its recomputed value is NaN.
    """
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    rows = t1[t1.row_type == "model"][["row_label", "benchmark", "perf_value", "pur_value", "reference_rank"]]
    t5 = published_mui_table()[["model", "benchmark", "performance", "mui"]]
    out = rows.assign(key=rows.row_label.map(name_key)).merge(
        t5.assign(key=t5.model.map(name_key)).rename(columns={"model": "table5_model"}),
        on=["key", "benchmark"], how="left").drop(columns="key")
    out = out.rename(columns={"row_label": "model", "pur_value": "pur_paper", "perf_value": "perf_table1"})
    ok = out.mui.notna()
    out["pur_ours"] = np.nan
    out.loc[ok, "pur_ours"] = mui.pur(out.loc[ok, "performance"].to_numpy(), out.loc[ok, "mui"].to_numpy(), alpha)
    out["diff"] = out.pur_ours - out.pur_paper
    return out


B6_NEURON_TABLES = {"selected (Table 11)": "000_table11_b6_pos1_neuron_mui_selected_method",
                    "Table 12": "000_table12_b6_pos2_neuron_mui_alt_method",
                    "Table 13": "000_table13_b6_pos3_neuron_mui_alt_method",
                    "Table 14": "000_table14_b6_pos4_neuron_mui_alt_method"}
B6_SAE_TABLES = {"selected (Table 15)": "000_table15_b6_pos5_sae_mui_selected_threshold",
                 "Table 16": "000_table16_b6_pos6_sae_mui_alt_threshold",
                 "Table 17": "000_table17_b6_pos7_sae_mui_alt_threshold"}


def published_b6_correlations() -> pd.DataFrame:
    """B.6.3 from the printed Tables 11-17: Spearman of each alternative method's MUI with the selected
    method's, over all (model, benchmark) cells and as the mean of per-benchmark Spearmans across models
    (the paper does not say which it averaged). Columns: family, method, pooled, per_benchmark_mean,
    n_cells, quoted (the paper's 0.723 / 0.984, for Tables 13-14 and 16-17)."""
    from scipy.stats import spearmanr

    from kit.data.paper_tables import load_table

    text = load_table("000_text_numbers")
    quoted = {fam: float(text[text.quantity.str.contains(pat)].value.iloc[0])
              for fam, pat in (("neuron", "alternative neuron methods"), ("sae", "SAE MUI at alternative"))}
    rows = []
    for fam, tables in (("neuron", B6_NEURON_TABLES), ("sae", B6_SAE_TABLES)):
        frames = {k: load_table(v).set_index(["model", "benchmark"]).mui for k, v in tables.items()}
        ref_name = next(iter(frames))
        ref = frames[ref_name]
        for name, col in list(frames.items())[1:]:
            both = pd.concat([ref, col], axis=1, keys=["ref", "alt"]).dropna()
            per_b = [spearmanr(g.ref, g.alt).statistic for _, g in both.groupby(level="benchmark")
                     if g.ref.nunique() > 1 and g.alt.nunique() > 1]
            rows.append({"family": fam, "method": name, "vs": ref_name,
                         "pooled": float(spearmanr(both.ref, both.alt).statistic),
                         "per_benchmark_mean": float(np.mean(per_b)) if per_b else np.nan, "n_cells": len(both),
                         "quoted": quoted[fam] if name in ("Table 13", "Table 14", "Table 16", "Table 17") else np.nan})
    return pd.DataFrame(rows)


def _by_dataset(df: pd.DataFrame, col: str, model: str = "model", dataset: str = "benchmark") -> dict[str, dict[str, float]]:
    d = df.dropna(subset=[col])
    return {b: dict(zip(g[model], g[col])) for b, g in d.groupby(dataset)}


def published_rank_agreement(comparison: pd.DataFrame) -> dict[str, Any]:
    """Spearman/Kendall vs Table 1's reference order of: performance and printed PUR (all nine
    models), and of recomputed PUR and performance over the models Table 5 covers."""
    ref = comparison.drop_duplicates("model").sort_values("reference_rank").model.tolist()
    covered = comparison.dropna(subset=["pur_ours"])
    ref_cov = [m for m in ref if m in set(covered.model)]
    return {
        "perf_table1": mui.rank_agreement(_by_dataset(comparison, "perf_table1"), ref),
        "pur_table1": mui.rank_agreement(_by_dataset(comparison, "pur_paper"), ref),
        "perf_covered": mui.rank_agreement(_by_dataset(covered, "perf_table1"), ref_cov),
        "pur_recomputed": mui.rank_agreement(_by_dataset(covered, "pur_ours"), ref_cov),
        "n_models": len(ref), "n_models_covered": len(ref_cov),
    }


def printed_rank_summary() -> pd.DataFrame:
    """Table 1's printed correlation rows (Spearman/Kendall, x100) as a small table."""
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    return t1[t1.row_type == "correlation"][["row_label", "benchmark", "perf_value", "pur_value",
                                             "perf_variance", "pur_variance"]].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# 2. the tiny world: performance and MUI per (model, task)


def default_models(world: str, include_contaminated: bool = True) -> list[str]:
    """Every zoo member except training checkpoints (``@step-``) and sparse fine-tunes (near-copies
    of base-m, for notebook 03); optionally without contaminated ones."""
    from kit import world as W

    names = [m for m in W.members(world, sparse=False) if "@" not in m]
    if not include_contaminated:
        names = [m for m in names if not any(t in m for t in ("-test-", "-syn-"))]
    return names


def is_zoo(name: str) -> bool:
    return name.startswith("zoo/")


def task_items(task: str, split: str, n: int, seed: int = 0, zoo: bool = True, skip: int = 0) -> list:
    """``n`` items of a world task split, or (``zoo=False``) items ``skip .. skip+n`` of a real
    benchmark's test split (real benchmarks have no fresh split: ``skip`` keeps sets disjoint)."""
    if not zoo:
        from kit.data.benchmarks import load_benchmark

        return load_benchmark(task, "test", limit=n + skip)[skip:]
    from kit import world as W

    return W.get_task(task).items(split, n, seed)


def task_group(task: str, zoo: bool = True) -> str:
    if zoo:
        from kit import world as W

        return W.get_task(task).group
    return task.split("/")[0]


def respond_and_score(model, items: list, task: str, zoo: bool = True, max_new_tokens: int = 1,
                      ablate: Sequence[tuple[int, int]] = ()) -> tuple[list[str], np.ndarray]:
    """Greedy responses and their correctness, with the (layer, neuron) MLP neurons ``ablate``
    zeroed: ``kit.world.respond``/``evaluate`` for zoo models; for Hugging Face models (ids,
    directories, twins) batched generation by their HF copy with the chat template when the
    tokenizer has one (``kit.models.generate.respond``, cached per model and benchmark) and
    ``kit.data.scorers.score``."""
    if zoo:
        from kit import world as W

        with tl.hooks(model, ablation_hooks(ablate)):
            return W.respond(model, items, max_new_tokens=max_new_tokens), np.asarray(W.evaluate(model, items), dtype=bool)
    from kit.data.scorers import score
    from kit.models.generate import GenerationSettings, respond

    responses = respond(model, [it.prompt for it in items], GenerationSettings(max_new_tokens=max_new_tokens),
                        benchmark=task, ids=[it.id for it in items], ablate=ablate)
    return responses, np.array([score(task, it, r) for it, r in zip(items, responses)], dtype=bool)


def items_mui(model, items: list, responses: list[str], task: str, zoo: bool = True, score: str = "score",
              threshold: str = "topk", k: int | None = None, frac: float | None = None, batch_size: int = 32,
              max_batch_tokens: int = 8192) -> float:
    """MUI (Eq. 5, in %) of ``model`` on its ``responses`` to ``items``.

    Zoo models: ``kit.mui.metric.utilization_for_items`` in ``batch_size`` rows. Hugging Face models
    (ids, directories, twins): per-item key neurons by teacher-forced passes over prompt (through the
    chat template when the tokenizer has one, as :func:`respond_and_score` generated) + response, in
    length-sorted batches of at most ``max_batch_tokens`` padded tokens, cached per (model, benchmark,
    MUI settings, responses) so a killed run resumes (``kit.models.internals.mui_key_neurons``), then
    their union. Both give the same MUI (per-token thresholds; tests/mui/test_law_real.py).
    """
    if zoo:
        return float(mui.utilization_for_items(model, items, responses, score=score, threshold=threshold, k=k,
                                               frac=frac, batch_size=batch_size).mui)
    import hashlib
    import json

    from kit.models.internals import cached_items_mui

    digest = hashlib.sha256(json.dumps([[str(it.id), r] for it, r in zip(items, responses)]).encode()).hexdigest()[:16]
    return cached_items_mui(model, items, responses, task,
                            {"score": score, "threshold": threshold, "k": k, "frac": frac, "chat": None,
                             "responses": digest},
                            max_batch_tokens, chat=None, score=score, threshold=threshold, k=k, frac=frac)


def evaluate_grid(models: Sequence[str], tasks: Sequence[str], n_items: int, n_fresh: int, world: str,
                  device: str = "cpu", score: str = "score", threshold: str = "topk", k: int | None = None,
                  frac: float | None = None, batch_size: int = 32, seed: int = 0,
                  max_new_tokens: int = 1, max_batch_tokens: int = 8192, dtype: str | None = None) -> pd.DataFrame:
    """Performance (test accuracy %), true capability (fresh accuracy %) and MUI per (model, task).

    MUI is measured on each model's own greedy responses to the test items (Eq. 5) by
    :func:`items_mui`: zoo models in ``batch_size`` rows, Hugging Face models teacher-forced in
    batches of ``max_batch_tokens`` padded tokens with a per-item cache. ``dtype``: Hugging Face
    models' weight dtype (zoo models are float32). Returns columns model, task, group, performance, fresh, mui, n_items.
    """
    from tqdm.auto import tqdm

    from kit import world as W
    from kit.models.generate import release
    from kit.models.load import load_model

    rows = []
    for name in tqdm(models, desc="models"):
        zoo = is_zoo(name)
        model = load_model(name, device=device, world=world, dtype=dtype)
        for task in tasks:
            items = task_items(task, "test", n_items, seed, zoo)
            responses, correct = respond_and_score(model, items, task, zoo, max_new_tokens)
            m = items_mui(model, items, responses, task, zoo, score, threshold, k, frac, batch_size, max_batch_tokens)
            fresh_acc = np.nan
            if zoo and n_fresh > 0:
                fresh_acc = 100 * np.asarray(W.evaluate(model, task_items(task, "fresh", n_fresh, seed))).mean()
            rows.append({"model": name, "task": task, "group": task_group(task, zoo),
                         "performance": 100 * correct.mean(), "fresh": fresh_acc,
                         "mui": m, "n_items": len(items)})
        del model
        release()  # the Hugging Face copy that generated: one model on the device at a time
    return pd.DataFrame(rows)


def pur_ranking(grid: pd.DataFrame, alpha: float = 0.5,
                reference_order: Sequence[str] | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
    """Rank agreement of performance and of PUR with the true order, per task as in Table 1.

    The true order is ``reference_order`` if given, else mean fresh-item accuracy over tasks
    (ties broken by name). Returns (summary, the grid with a ``pur`` column).
    """
    g = grid.copy()
    g["pur"] = [mui.pur(p, m, alpha) if m > 0 else np.nan for p, m in zip(g.performance, g.mui)]
    if reference_order is None:
        true = g.groupby("model").fresh.mean().reset_index().sort_values(["fresh", "model"], ascending=[False, True])
        ref = true.model.tolist()
    else:
        ref = list(reference_order)
    summary = {
        "reference_order": ref,
        "performance": mui.rank_agreement(_by_dataset(g, "performance", dataset="task"), ref),
        "pur": mui.rank_agreement(_by_dataset(g, "pur", dataset="task"), ref),
    }
    if reference_order is None:
        # a second truth: each task's own fresh-item order (ties broken by name)
        for col in ("performance", "pur"):
            coefs = {}
            for task, t in g.groupby("task"):
                order = t.sort_values(["fresh", "model"], ascending=[False, True]).model.tolist()
                coefs[task] = mui.rank_agreement({task: dict(zip(t.model, t[col]))}, order)["per_dataset"][task]
            sp = np.array([c["spearman"] for c in coefs.values()])
            kd = np.array([c["kendall"] for c in coefs.values()])
            summary[f"{col}_vs_task_truth"] = {
                "per_dataset": coefs, "spearman_mean": float(100 * np.nanmean(sp)), "spearman_var": float(100 * np.nanvar(sp)),
                "kendall_mean": float(100 * np.nanmean(kd)), "kendall_var": float(100 * np.nanvar(kd))}
    return summary, g


# --------------------------------------------------------------------------------------------
# 3. section 3.6: MUI growth with sample count


def growth_curves(model, pools: dict[str, list], responses: dict[str, list[str]], sizes: Sequence[int],
                  repeats: int = 3, seed: int = 0, **mui_kwargs: Any) -> pd.DataFrame:
    """MUI of random subsets of size n of each item pool (union of per-sample key sets).

    ``pools``: name -> items (e.g. one single-capability pool per task, one ``mixed`` pool);
    ``responses``: name -> the model's responses to them. Returns columns pool, n, repeat, mui.
    """
    rows = []
    rng = random.Random(seed)
    for name, items in pools.items():
        res = mui.utilization_for_items(model, items, responses[name], per_sample=True, **mui_kwargs)
        masks = res.sample_masks
        for n in sizes:
            if n > len(items):
                continue
            for r in range(repeats):
                idx = rng.sample(range(len(items)), n)
                rows.append({"pool": name, "n": n, "repeat": r, "mui": mui.mui_of_mask(masks[idx].any(dim=0))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# 4. section 3.7: correct vs incorrect responses


def correct_vs_incorrect(model, items: list, responses: list[str], correct: np.ndarray, seed: int = 0,
                         strata: Sequence[str] | None = None, chunk_size: int | None = None,
                         **mui_kwargs: Any) -> dict[str, Any]:
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
    out: dict[str, Any] = {"n_each": n, "n_correct_total": int(correct.sum()), "n_incorrect_total": int((~correct).sum()),
                           "n_strata_used": len({strata[i] for i in pos})}
    if n < 2:
        return out
    sets = {}
    for label, idx in (("correct", pos), ("incorrect", neg)):
        sets[label] = mui.utilization_for_items(model, [items[i] for i in idx], [responses[i] for i in idx],
                                                per_sample=True, **mui_kwargs)
    a, b = np.array(sets["correct"].per_sample), np.array(sets["incorrect"].per_sample)
    out.update({"mui_correct": sets["correct"].mui, "mui_incorrect": sets["incorrect"].mui,
                "sample_mui_correct_mean": float(a.mean()), "sample_mui_incorrect_mean": float(b.mean()),
                "per_sample_correct": a.tolist(), "per_sample_incorrect": b.tolist(),
                "per_sample_constant": bool(np.ptp(np.r_[a, b]) == 0)})
    if not out["per_sample_constant"]:
        test = mannwhitneyu(a, b, alternative="two-sided")
        out.update({"mannwhitney_u": float(test.statistic), "mannwhitney_p": float(test.pvalue)})
    # One-token answers make every sample's own MUI the same (n_layers * k key neurons), so the
    # test is also run on the MUI of disjoint chunks of samples (independent unions).
    c = chunk_size or max(2, n // 10)
    chunk = {label: [mui.mui_of_mask(sets[label].sample_masks[i:i + c].any(dim=0))
                     for i in range(0, n - c + 1, c)] for label in sets}
    out.update({"chunk_size": c, "chunk_mui_correct": chunk["correct"], "chunk_mui_incorrect": chunk["incorrect"]})
    if len(chunk["correct"]) >= 2 and np.ptp(chunk["correct"] + chunk["incorrect"]) > 0:
        test = mannwhitneyu(chunk["correct"], chunk["incorrect"], alternative="two-sided")
        out.update({"chunk_mannwhitney_u": float(test.statistic), "chunk_mannwhitney_p": float(test.pvalue)})
    return out


# --------------------------------------------------------------------------------------------
# 5. section 3.8: masking key neurons


def key_neuron_ranking(model, items: list, responses: list[str], score: str = "score",
                       batch_size: int = 32, max_batch_tokens: int | None = None,
                       **mui_kwargs: Any) -> list[tuple[int, int]]:
    """Neurons of a task, most important first: (layer, neuron) pairs ordered by how many samples
    select them as key neurons, then by their contribution summed over all response tokens
    (Eq. 15 summed over samples), so k may exceed the number of key neurons. Neurons with a
    non-positive summed contribution that no sample selects are left out. ``max_batch_tokens``:
    token-budget batches instead of ``batch_size`` rows (:func:`kit.mui.metric.token_budget_chunks`)."""
    tokens, mask = mui.item_tokens(model, items, responses)
    res = mui.utilization(model, tokens, mask, score=score, batch_size=batch_size, per_sample=True,
                          max_batch_tokens=max_batch_tokens, **mui_kwargs)
    counts = res.sample_masks.sum(dim=0).float()  # [layer, d_mlp]
    total = torch.zeros_like(counts)
    chunks = ([(None, tokens, mask)] if max_batch_tokens is None
              else mui.token_budget_chunks(tokens, mask, max_batch_tokens))
    for _, chunk, chunk_mask in chunks:
        pos = chunk_mask[:, 1:]
        step = batch_size if max_batch_tokens is None else len(chunk)
        for piece in mui.iter_neuron_scores(model, chunk, score=score.split("_")[0], batch_size=step):
            s = piece.scores.float().cpu() * pos[piece.rows, :, None]
            total[piece.layer] += s.sum(dim=(0, 1))
    d = counts.shape[1]
    flat_c, flat_t = counts.flatten().numpy(), total.flatten().numpy()
    keep = np.flatnonzero((flat_c > 0) | (flat_t > 0))
    order = sorted(keep.tolist(), key=lambda i: (-flat_c[i], -flat_t[i], i))
    return [(i // d, i % d) for i in order]


def ablation_hooks(neurons: Sequence[tuple[int, int]]) -> list[tuple[str, Any]]:
    """Zero-ablation hooks on ``blocks.{L}.mlp.hook_post`` for the given (layer, neuron) pairs."""
    by_layer: dict[int, list[int]] = {}
    for L, i in neurons:
        by_layer.setdefault(int(L), []).append(int(i))
    hooks = []
    for L, idx in sorted(by_layer.items()):
        index = torch.tensor(sorted(idx))

        def zero(act, hook, index=index):
            act[..., index.to(act.device)] = 0.0
            return act

        hooks.append((f"blocks.{L}.mlp.hook_post", zero))
    return hooks


def masking_curve(model, ranking: list[tuple[int, int]], eval_sets: dict[str, list], ks: Sequence[int],
                  random_repeats: int = 3, seed: int = 0, zoo: bool = True, max_new_tokens: int = 1) -> pd.DataFrame:
    """Accuracy (%) on each eval set after zero-ablating the top-k key neurons vs k random neurons.

    ``eval_sets``: task name -> items. Returns columns k, kind (``key``/``random``), set,
    accuracy (random: mean over repeats). ``k = 0`` is the unablated model; ks larger than the
    ranking are skipped for ``key`` (the task has fewer key neurons than that).
    """
    n_layers, d_mlp = model.cfg.n_layers, model.cfg.d_mlp
    rng = np.random.default_rng(seed)
    rows = []

    def acc(neurons, items, task):
        return 100 * float(respond_and_score(model, items, task, zoo, max_new_tokens, ablate=neurons)[1].mean())

    for k in sorted(set([0, *ks])):
        for name, items in eval_sets.items():
            if k == 0:
                base = acc([], items, name)
                rows += [{"k": 0, "kind": kind, "set": name, "accuracy": base} for kind in ("key", "random")]
                continue
            if k <= len(ranking):
                rows.append({"k": k, "kind": "key", "set": name, "accuracy": acc(ranking[:k], items, name)})
            vals = []
            for _ in range(random_repeats):
                flat = rng.choice(n_layers * d_mlp, size=k, replace=False)
                vals.append(acc([(int(f) // d_mlp, int(f) % d_mlp) for f in flat], items, name))
            rows.append({"k": k, "kind": "random", "set": name, "accuracy": float(np.mean(vals))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# 6. appendix B.6: score x threshold grid


DEFAULT_METHODS: list[tuple[str, str]] = [
    (s, t) for s in ("score", "activate", "gradient", "score_sum", "activate_sum") for t in mui.THRESHOLDS
]
PUBLIC_TOPSCORE_FRACS = (0.8, 0.85, 0.9, 0.95)
"""MUI-Eval's ``depict_neuron.py`` topscore values; the paper's A.4 default is 0.2 (Dai et al.)."""


def method_name(score: str, threshold: str, frac: float | None = None) -> str:
    return f"{score}/{threshold}" + (f"@{frac:g}" if frac is not None else "")


def method_grid(model_names: Sequence[str], tasks: Sequence[str], n_items: int, world: str, device: str = "cpu",
                methods: Sequence[tuple] = DEFAULT_METHODS, batch_size: int = 32,
                seed: int = 0, max_new_tokens: int = 1, dtype: str | None = None,
                max_batch_tokens: int | None = None) -> pd.DataFrame:
    """MUI under every method for each (model, task) cell (zoo models in ``batch_size`` rows,
    Hugging Face models in batches of ``max_batch_tokens`` padded tokens). A method is ``(score, threshold)`` (the
    threshold's default parameter) or ``(score, threshold, frac)``. Returns columns model, task,
    method, score, threshold, frac, mui, d_mlp, max_response_tokens (the longest response of the cell,
    which decides whether ``*_sum`` can differ from the token score)."""
    from tqdm.auto import tqdm

    from kit.models.generate import release
    from kit.models.load import load_model

    rows = []
    for name in tqdm(model_names, desc="B.6 grid"):
        model = load_model(name, device=device, world=world, dtype=dtype)
        for task in tasks:
            items = task_items(task, "test", n_items, seed, is_zoo(name))
            responses, _ = respond_and_score(model, items, task, is_zoo(name), max_new_tokens)
            tokens, mask = mui.item_tokens(model, items, responses)
            longest = int(mask.sum(dim=1).max())
            for method in methods:
                score, threshold, frac = (*method, None)[:3]
                res = mui.utilization(model, tokens, mask, score=score, threshold=threshold, frac=frac,
                                      batch_size=batch_size, max_batch_tokens=None if is_zoo(name) else max_batch_tokens)
                rows.append({"model": name, "task": task, "method": method_name(score, threshold, frac), "score": score,
                             "threshold": threshold, "frac": frac, "mui": res.mui, "d_mlp": model.cfg.d_mlp,
                             "max_response_tokens": longest})
        del model
        release()
    return pd.DataFrame(rows)


def coincident_methods(grid: pd.DataFrame) -> dict[str, str]:
    """Methods of ``grid`` that equal another BY CONSTRUCTION in every cell: ``top_pct`` (default 0.001)
    keeps ``max(1, round(d_mlp/1000))`` = topk's default k; ``<s>_sum`` equals ``<s>`` when no response has
    more than one token (the sum over one position is that position). Returns dropped -> kept."""
    methods = set(grid.method)
    out = {}
    if len(grid):
        same_k = all(mui.default_k(int(d)) == max(1, round(0.001 * int(d))) for d in grid.d_mlp.unique())
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


# --------------------------------------------------------------------------------------------
# 7. SAE-based MUI


def sae_grid(sae_names: Sequence[str], tasks: Sequence[str], n_items: int, world: str, device: str = "cpu",
             top: int = 50, reference_width: int | None = mui.SAE_REFERENCE_WIDTH, batch_size: int = 32,
             seed: int = 0, score: str = "score", threshold: str = "topk", max_new_tokens: int = 1,
             dtype: str | None = None, max_batch_tokens: int | None = None) -> pd.DataFrame:
    """SAE-based and neuron-based MUI of each SAE's model on each task (its own greedy responses;
    zoo models in ``batch_size`` rows, Hugging Face models in batches of ``max_batch_tokens`` padded tokens).

    The SAE's hook comes from ``sae.cfg.metadata.hook_name``, its model from the name
    (``zoo-sae/<member>/...``) or else ``sae.cfg.metadata.model_name`` (the Hugging Face id of
    Llama Scope / Gemma Scope SAEs, ``twin/<arch>`` for the twins' SAEs). Returns columns sae,
    model, hook, d_sae, task, performance, sae_mui, neuron_mui, features_per_token.
    """
    from kit.models.generate import release
    from kit.models.load import load_model, load_sae

    rows = []
    cache: dict[str, Any] = {}
    for sae_name in sae_names:
        sae = load_sae(sae_name, device=device, world=world)
        model_name = ("zoo/" + sae_name.split("/")[1] if sae_name.startswith("zoo-sae/")
                      else sae.cfg.metadata.model_name)
        if model_name not in cache:
            cache.clear()
            release()
            cache[model_name] = load_model(model_name, device=device, world=world, dtype=dtype)
        model = cache[model_name]
        hook = sae.cfg.metadata.hook_name
        zoo = is_zoo(model_name)
        for task in tasks:
            items = task_items(task, "test", n_items, seed, zoo)
            responses, correct = respond_and_score(model, items, task, zoo, max_new_tokens)
            tokens, mask = mui.item_tokens(model, items, responses)
            budget = dict(batch_size=batch_size, max_batch_tokens=None if zoo else max_batch_tokens)
            s = mui.sae_utilization(model, {hook: sae}, tokens, mask, top=top, reference_width=reference_width, **budget)
            nres = mui.utilization(model, tokens, mask, score=score, threshold=threshold, **budget)
            rows.append({"sae": sae_name, "model": model_name, "hook": hook, "d_sae": int(sae.cfg.d_sae), "task": task,
                         "performance": 100 * float(correct.mean()),
                         "sae_mui": s.mui, "neuron_mui": nres.mui,
                         "features_per_token": top if reference_width is None else mui.sae_top(int(sae.cfg.d_sae), top, reference_width)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# figures


def plot_law(df: pd.DataFrame, fits: pd.DataFrame, by: str = "benchmark", perf: str = "performance",
             m: str = "mui", hue: str = "model", ncols: int = 4, title: str = ""):
    """One panel per group: points (MUI, performance) and the fitted ``a + b ln MUI`` curve."""
    import matplotlib.pyplot as plt

    groups = sorted(df[by].unique())
    nrows = int(np.ceil(len(groups) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.6 * nrows), squeeze=False)
    hues = sorted(df[hue].unique())
    colors = dict(zip(hues, plt.cm.tab20(np.linspace(0, 1, max(len(hues), 2)))))
    fit_by = fits.set_index(by) if by in fits else pd.DataFrame()
    for ax, name in zip(axes.flat, groups):
        g = df[df[by] == name]
        for h, gg in g.groupby(hue):
            ax.scatter(gg[m], gg[perf], s=18, color=colors[h], label=h)
        if name in fit_by.index and pd.notna(fit_by.loc[name].get("slope", np.nan)):
            f = fit_by.loc[name]
            if f.get("form", "perf_vs_log_mui") == "mui_vs_log_perf":  # MUI = beta - alpha ln P, drawn on the same axes
                ps = np.linspace(max(g[perf].min(), 1e-6), g[perf].max(), 50)
                ax.plot(f.intercept + f.slope * np.log(ps), ps, color="k", lw=1)
                ax.set_title(f"{name}: α={-f.slope:.2f}, R²={f.r2:.2f}", fontsize=8)
            else:
                xs = np.linspace(max(g[m].min(), 1e-6), g[m].max(), 50)
                ax.plot(xs, f.intercept + f.slope * np.log(xs), color="k", lw=1)
                ax.set_title(f"{name}: b={f.slope:.1f}, R²={f.r2:.2f}", fontsize=8)
        else:
            ax.set_title(str(name))
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=7,
               bbox_to_anchor=(0.5, -0.02 - 0.03 * int(np.ceil(len(labels) / 6))))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_pur_diff(comparison: pd.DataFrame):
    """Recomputed vs printed PUR (Table 1), one point per (model, benchmark)."""
    import matplotlib.pyplot as plt

    c = comparison.dropna(subset=["pur_ours"])
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    axes[0].scatter(c.pur_paper, c.pur_ours, s=12)
    lim = [0, float(max(c.pur_paper.max(), c.pur_ours.max())) * 1.05]
    axes[0].plot(lim, lim, "k--", lw=0.8)
    axes[0].set_xlabel("PUR printed (Table 1)")
    axes[0].set_ylabel("PUR recomputed from Table 5")
    axes[1].hist(c["diff"], bins=15)
    axes[1].set_xlabel("recomputed - printed")
    fig.tight_layout()
    return fig


def plot_growth(curves: pd.DataFrame):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3))
    for name, g in curves.groupby("pool"):
        s = g.groupby("n").mui.agg(["mean", "std"]).reset_index()
        ax.errorbar(s.n, s["mean"], yerr=s["std"].fillna(0), marker="o", ms=3, capsize=2,
                    label=name, lw=2.0 if name == "mixed" else 1.0)
    ax.set_xlabel("number of samples")
    ax.set_ylabel("MUI (%)")
    ax.set_xscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_correctness(result: dict[str, Any]):
    """MUI of disjoint sample chunks, correct vs incorrect responses (box plots)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.5, 3))
    data = [result.get("chunk_mui_correct", []), result.get("chunk_mui_incorrect", [])]
    ax.boxplot(data)
    ax.set_xticks([1, 2], ["correct", "incorrect"])
    ax.set_ylabel(f"MUI of {result.get('chunk_size', '?')}-sample chunks (%)")
    p = result.get("chunk_mannwhitney_p")
    ax.set_title(f"n={result.get('n_each', 0)} each" + (f", Mann-Whitney p={p:.3g}" if p is not None else ""), fontsize=8)
    fig.tight_layout()
    return fig


def plot_masking(curve: pd.DataFrame, task_a: str):
    import matplotlib.pyplot as plt
    import matplotlib.ticker as mticker

    sets = list(dict.fromkeys(curve.set))
    fig, axes = plt.subplots(1, len(sets), figsize=(3.5 * len(sets), 3), squeeze=False)
    for ax, name in zip(axes.flat, sets):
        for kind, g in curve[curve.set == name].groupby("kind"):
            g = g.sort_values("k")
            ax.plot(g.k, g.accuracy, marker="o", ms=3, label=f"{kind} neurons")
        ax.set_xscale("symlog", linthresh=1)  # k = 0 (unmasked) stays on the axis
        ax.xaxis.set_major_formatter(mticker.ScalarFormatter())
        ax.set_xlabel("neurons masked (k)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"eval on {name}" + (" (= task A)" if name == task_a else ""))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_method_correlations(corr: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    n = len(corr)
    fig, ax = plt.subplots(figsize=(0.35 * n + 2.5, 0.35 * n + 2))
    sns.heatmap(corr, ax=ax, vmin=-1, vmax=1, cmap="RdBu_r", square=True, cbar_kws={"label": "Spearman"},
                xticklabels=True, yticklabels=True)
    ax.tick_params(labelsize=6)
    ax.grid(False)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# findings


def fmt_fit(row: pd.Series | dict) -> str:
    if pd.isna(row.get("slope", np.nan)):
        return f"n={row.get('n', 0)}: too few points to fit"
    return (f"slope {row['slope']:.2f} [95% CI {row['ci_low']:.2f}, {row['ci_high']:.2f}], "
            f"R²={row['r2']:.2f}, n={int(row['n'])}")


# --------------------------------------------------------------------------------------------
# choices the notebook makes from its config


def first_task_per_group(tasks: Sequence[str], zoo: bool = True) -> list[str]:
    """One task per capability group, in the given order (the single-capability pools)."""
    seen: dict[str, str] = {}
    for t in tasks:
        seen.setdefault(task_group(t, zoo), t)
    return list(seen.values())


def focus_model(models: Sequence[str], preferred: str | None = None) -> str:
    """The model of sections 3.6-3.8: ``preferred``, else ``zoo/base-m`` if listed, else the first."""
    if preferred:
        return preferred
    return "zoo/base-m" if "zoo/base-m" in models else models[0]


def base_models(models: Sequence[str]) -> list[str]:
    """Models that are not fine-tunes or checkpoints (no ``+`` or ``@`` in the name)."""
    return [m for m in models if "+" not in m and "@" not in m]


def masking_tasks(tasks: Sequence[str], task_a: str | None, task_b: str | None, zoo: bool = True) -> tuple[str, str]:
    """Task A (default: first math task) and control task B (default: first task of another group)."""
    a = task_a or next((t for t in tasks if task_group(t, zoo) == "math"), tasks[0])
    b = task_b or next((t for t in tasks if task_group(t, zoo) != task_group(a, zoo)), tasks[-1])
    return a, b


def mixed_pool(pools: dict[str, list], size: int, seed: int = 0) -> list:
    """``size`` items drawn evenly (round robin, shuffled) from the single-capability pools."""
    rng = random.Random(seed)
    shuffled = {k: rng.sample(v, len(v)) for k, v in pools.items()}
    out, i = [], 0
    while len(out) < size and any(shuffled.values()):
        key = list(shuffled)[i % len(shuffled)]
        if shuffled[key]:
            out.append(shuffled[key].pop())
        i += 1
    return out


def masking_summary(curve: pd.DataFrame, task_a: str, task_b: str) -> dict[str, Any]:
    """Accuracy drop (points) at the largest k that has key neurons, key vs random, on A and B."""
    key = curve[curve.kind == "key"]
    kmax = int(key.k.max()) if len(key) else 0
    out: dict[str, Any] = {"k_max": kmax}
    for name, label in ((task_a, "a"), (task_b, "b")):
        base = curve[(curve.k == 0) & (curve.set == name) & (curve.kind == "key")].accuracy
        for kind in ("key", "random"):
            v = curve[(curve.k == kmax) & (curve.set == name) & (curve.kind == kind)].accuracy
            if len(base) and len(v):
                out[f"drop_{kind}_{label}"] = float(base.iloc[0] - v.iloc[0])
    return out


# --------------------------------------------------------------------------------------------
# notebook sections: each computes one section's numbers, findings, tables and figures


def _rank_row(label: str, summary: dict[str, Any]) -> dict[str, Any]:
    return {"ranking by": label, "spearman": summary["spearman_mean"], "spearman_var": summary["spearman_var"],
            "kendall": summary["kendall_mean"], "kendall_var": summary["kendall_var"]}


def published_law_section():
    """Items 1-2: the Utility Law on Table 5 in the paper's form ``MUI = -alpha ln P + beta`` (and the
    inverse regression as an option), on §3.2's 8 general models and on all 18, per benchmark and per
    model (Figure 3's view), beside the constants MUI-Eval's figure prints (4.632 / 28.305 / 6.97%)."""
    from kit.core.findings import Section

    general, every = published_mui_table("general"), published_mui_table("all")
    per_model = published_per_model(general)
    fits = {}
    for form in mui.LAW_FORMS:
        fits[("general", form)] = law_fits(general, form=form)
        fits[("all", form)] = law_fits(every, form=form)
    pm = mui.fit_law(per_model.performance.to_numpy(), per_model.mui.to_numpy())
    pm_row = {"benchmark": per_model.benchmark.iloc[0], "slope": pm.slope, "intercept": pm.intercept, "ci_low": pm.ci_low,
              "ci_high": pm.ci_high, "r2": pm.r2, "pvalue": pm.pvalue, "n": pm.n, "form": pm.form, "alpha": pm.alpha,
              "beta": pm.beta, "mui_at_100": pm.mui_at(100.0)}
    paper = mui.PAPER_LAW
    summary = []
    for (models, form), f in fits.items():
        b = f[f.benchmark != "all"].dropna(subset=["slope"])
        summary.append({"models": models, "form": form, "negative_slopes": int((b.slope < 0).sum()), "benchmarks": len(b),
                        "ci_below_0": int((b.ci_high < 0).sum()), "median_r2": float(b.r2.median())})
    summary = pd.DataFrame(summary)
    g = summary[(summary.models == "general") & (summary.form == "mui_vs_log_perf")].iloc[0]
    a = summary[(summary.models == "all") & (summary.form == "mui_vs_log_perf")].iloc[0]
    verdict = "supported" if pm.ci_high < 0 else "inconclusive"
    findings = [
        f"Published law (items 1-2, Table 5, the paper's form MUI = -α ln P + β): on §3.2's {len(PUBLISHED_GENERAL_MODELS)} "
        f"general models {g.negative_slopes} of {g.benchmarks} per-benchmark slopes are negative ({g.ci_below_0} with 95% CI "
        f"below 0, median R² {g.median_r2:.2f}); on all 18 models of Table 5 (specialised and larger ones included, which "
        f"§3.2 excludes) {a.negative_slopes} of {a.benchmarks} (median R² {a.median_r2:.2f}).",
        f"Figure 3's view (one point per general model, mean over the benchmarks except MMLU): α = {pm.alpha:.3f} "
        f"[95% CI {-pm.ci_high:.3f}, {-pm.ci_low:.3f}], β = {pm.beta:.3f}, R² = {pm.r2:.2f}, n = {pm.n}, MUI at P = 100: "
        f"{pm.mui_at(100):.2f}% -> {verdict} ({'its CI excludes 0' if verdict == 'supported' else 'its CI reaches 0'}). "
        f"MUI-Eval's figure prints α = {paper['alpha']}, β = {paper['beta']}, {paper['mui_at_100']}% (published, not "
        f"computed here); its MUI is the union over all benchmarks' samples, which Table 5's per-benchmark values cannot "
        f"give, so our α/β (from mean MUI) are on another scale.",
    ]
    record = dict(
        published_law_fit={r.benchmark: {k: r.get(k) for k in ("slope", "ci_low", "ci_high", "r2", "n", "alpha", "beta", "mui_at_100")}
                           for _, r in fits[("general", "mui_vs_log_perf")].iterrows()},
        published_law_fit_per_model={k: pm_row[k] for k in ("slope", "ci_low", "ci_high", "r2", "n", "alpha", "beta", "mui_at_100")},
        published_law_summary=summary.to_dict(orient="records"),
        published_law_paper_constants=dict(paper),
    )
    figs = {"fig2_published_law_general": plot_law(general, fits[("general", "mui_vs_log_perf")], by="benchmark",
                                                   title="Table 5, 8 general models: MUI = -α ln P + β per benchmark"),
            "fig3_published_per_model": plot_law(per_model, pd.DataFrame([pm_row]), by="benchmark", ncols=1,
                                                 title="Figure 3 view: one point per general model")}
    tables = {"summary": summary, "general": fits[("general", "mui_vs_log_perf")],
              "inverse_general": fits[("general", "perf_vs_log_mui")], "all_models": fits[("all", "mui_vs_log_perf")],
              "per_model_points": per_model, "per_model_fit": pd.DataFrame([pm_row])}
    return Section(record=record, findings=findings, tables=tables, figures=figs)


def published_rank_section(comparison: pd.DataFrame, alpha: float):
    """§1 (Table 1, Table 5): rank agreement of performance and PUR with Table 1's reference order,
    recomputed from Table 1's values and from Table 5, beside the printed summary."""
    from kit.core.findings import Section

    covered = comparison.dropna(subset=["pur_ours"])
    ranks = published_rank_agreement(comparison)
    printed = printed_rank_summary()

    def avg(name: str, col: str) -> float:
        return float(printed[(printed.row_label == name) & (printed.benchmark == "Average")][col].iloc[0])

    n_cov = ranks["n_models_covered"]
    rows = [_rank_row("performance (Table 1 values, 9 models)", ranks["perf_table1"]),
            _rank_row("PUR (Table 1 values, 9 models)", ranks["pur_table1"]),
            _rank_row(f"performance ({n_cov} models in Table 5)", ranks["perf_covered"]),
            _rank_row(f"PUR recomputed from Table 5 ({n_cov} models)", ranks["pur_recomputed"])]
    for who, pre in (("performance", "perf"), ("PUR", "pur")):
        rows.append({"ranking by": f"paper, {who} (printed)", "spearman": avg("Spearman", f"{pre}_value"),
                     "spearman_var": avg("Spearman", f"{pre}_variance"), "kendall": avg("Kendall", f"{pre}_value"),
                     "kendall_var": avg("Kendall", f"{pre}_variance")})
    per_ds = pd.DataFrame({k: {ds: 100 * v["kendall"] for ds, v in ranks[k]["per_dataset"].items()}
                           for k in ("perf_table1", "pur_table1")})
    kendall_rows = printed[(printed.row_label == "Kendall") & (printed.benchmark != "Average")].set_index("benchmark")
    per_ds["printed_perf"] = kendall_rows.perf_value
    per_ds["printed_pur"] = kendall_rows.pur_value
    record = dict(
        published_pur_max_abs_diff=float(covered["diff"].abs().max()),
        published_pur_cells_recomputed=int(len(covered)),
        published_rank_agreement={k: {kk: vv for kk, vv in v.items() if kk != "per_dataset"} if isinstance(v, dict) else v
                                  for k, v in ranks.items()},
    )
    pt, pu = ranks["perf_table1"], ranks["pur_table1"]
    missing = sorted(set(comparison.model) - set(covered.model))
    findings = [
        f"PUR with alpha={alpha} recomputed from Table 5 matches Table 1 on {len(covered)} of {len(comparison)} cells "
        f"(names matched case/punctuation-blind: Table 1's Gemma-2-9B-Instruct is Table 5's Gemma2-9B-Instruct), max |diff| "
        f"{covered['diff'].abs().max():.3f}; not in Table 5: {', '.join(missing) or 'none'}.",
        f"From Table 1's per-model values we get Spearman {pt['spearman_mean']:.1f}/{pu['spearman_mean']:.1f} "
        f"(perf/PUR, var {pt['spearman_var']:.1f}/{pu['spearman_var']:.1f}) and Kendall "
        f"{pt['kendall_mean']:.1f}/{pu['kendall_mean']:.1f} (var {pt['kendall_var']:.1f}/{pu['kendall_var']:.1f}); "
        f"paper prints 86.4/88.6 (1.8/1.0) and 76.9/80.6 (3.2/1.2). Table 1's printed per-benchmark Kendall cells do not "
        f"all match the values recomputed from its own rows (see the table below).",
    ]
    return Section(record=record, findings=findings,
                   tables={"rank": pd.DataFrame(rows), "kendall_per_benchmark": per_ds})


def tiny_rank_section(grid: pd.DataFrame, fits_task: pd.DataFrame, fits_group: pd.DataFrame, alpha: float,
                      reference_order: Sequence[str] | None, n_models: int, n_tasks: int):
    """§2 (tiny world): the law per task and group, PUR vs performance ranking against the fresh-item
    truth, and the verdict that follows from those numbers."""
    from kit.core.findings import Section

    rank_summary, grid_pur = pur_ranking(grid, alpha, reference_order)
    keys = [k for k in ("performance", "pur", "performance_vs_task_truth", "pur_vs_task_truth") if k in rank_summary]
    table = pd.DataFrame([_rank_row(k, rank_summary[k]) for k in keys])
    record = dict(
        tiny_law_fit_per_task={r.task: {k: r.get(k) for k in ("slope", "ci_low", "ci_high", "r2", "n")} for _, r in fits_task.iterrows()},
        tiny_law_fit_per_group={r.group: {k: r.get(k) for k in ("slope", "ci_low", "ci_high", "r2", "n")} for _, r in fits_group.iterrows()},
        tiny_rank_agreement={k: {kk: vv for kk, vv in rank_summary[k].items() if kk != "per_dataset"} for k in keys},
        tiny_rank_per_task={k: rank_summary[k]["per_dataset"] for k in keys},
        tiny_reference_order=rank_summary["reference_order"],
        tiny_grid=grid_pur.to_dict(orient="records"),
    )
    pooled = fits_task[fits_task.task == "all"].iloc[0]
    per_task = fits_task[fits_task.task != "all"]
    neg, n_fit = int((per_task.slope < 0).sum()), int(per_task.slope.notna().sum())
    perf, pur_ = rank_summary["performance"], rank_summary["pur"]
    own = (f"; against each task's own fresh-item order: performance {rank_summary['performance_vs_task_truth']['spearman_mean']:.1f}, "
           f"PUR {rank_summary['pur_vs_task_truth']['spearman_mean']:.1f}" if "pur_vs_task_truth" in rank_summary else "")
    better = pur_["spearman_mean"] > perf["spearman_mean"]
    law_holds = pooled.get("ci_high", 0) < 0 and neg > n_fit / 2
    findings = [
        f"Tiny world ({n_models} models x {n_tasks} tasks): pooled law fit {fmt_fit(pooled)}; "
        f"{neg} of {n_fit} per-task slopes are negative (the paper's law predicts negative; "
        + ("form MUI = -α ln P + β, so cells with 0% performance, outside ln P, are left out)."
           if fits_task.get("form", pd.Series(["mui_vs_log_perf"])).dropna().eq("mui_vs_log_perf").all()
           else "form performance = a + b ln MUI)."),
        f"Tiny-world ranking vs fresh-item truth: performance Spearman {perf['spearman_mean']:.1f} (Kendall "
        f"{perf['kendall_mean']:.1f}), PUR Spearman {pur_['spearman_mean']:.1f} (Kendall {pur_['kendall_mean']:.1f}){own}.",
        "Verdict on the tiny world: the Utility Law "
        + ("holds (most per-task slopes negative, pooled CI below 0)" if law_holds else
           "does not hold clearly (per-task slopes are mixed in sign or the pooled CI reaches 0)")
        + "; PUR " + ("ranks closer to the fresh-item truth than performance, as Table 1 reports for the paper's models"
                      if better else "ranks further from the fresh-item truth than performance, unlike Table 1 (88.6 vs 86.4)") + ".",
    ]
    return Section(record=record, findings=findings, tables={"rank": table},
                   data={"reference_order": rank_summary["reference_order"]})


def growth_section(model, focus: str, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.6: MUI against the number of samples, single-capability pools vs a mixed pool."""
    from kit.core.findings import Section

    zoo = focus.startswith("zoo/")
    growth_tasks = cfg.growth_tasks or first_task_per_group(tasks, zoo)
    pools = {t: task_items(t, "test", cfg.growth_pool_size, cfg.seed, zoo) for t in growth_tasks}
    pools["mixed"] = mixed_pool({t: pools[t] for t in growth_tasks}, cfg.growth_pool_size, cfg.seed)
    responses = {t: respond_and_score(model, pools[t], t, zoo, cfg.max_new_tokens)[0] for t in growth_tasks}
    # the mixed pool's items come from the single pools: reuse their responses
    lookup = {it.id: r for t in growth_tasks for it, r in zip(pools[t], responses[t])}
    responses["mixed"] = [lookup[it.id] for it in pools["mixed"]]
    curves = growth_curves(model, pools, responses, cfg.growth_sizes, cfg.growth_repeats, cfg.seed, **mui_kw)
    table = curves.groupby(["pool", "n"]).mui.mean().unstack("pool")
    n_top = int(curves.n.max())
    single_at, mixed_at = table.loc[n_top, growth_tasks], table.loc[n_top, "mixed"]
    return Section(
        record={"growth_mui_at_max_n": {"n": n_top, "mixed": mixed_at, **{t: single_at[t] for t in growth_tasks}},
                "focus_model": focus},
        findings=[f"§3.6 ({focus}): at n={n_top} samples the mixed pool's MUI is {mixed_at:.2f}% vs single-capability "
                  f"{single_at.min():.2f}-{single_at.max():.2f}% (mean {single_at.mean():.2f}%)."],
        tables={"growth": table}, figures={"sec36_growth": plot_growth(curves)}, data={"curves": curves})


def correctness_section(model, focus: str, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.7: MUI of correct vs incorrect responses, equal counts within each task."""
    from kit.core.findings import Section

    zoo = focus.startswith("zoo/")
    items, resp, ok, strata = [], [], [], []
    for t in tasks:
        its = task_items(t, "test", cfg.correctness_n, cfg.seed, zoo)
        r, good = respond_and_score(model, its, t, zoo, cfg.max_new_tokens)
        items += its
        resp += r
        ok += good.tolist()
        strata += [t] * len(its)
    ci = correct_vs_incorrect(model, items, resp, np.array(ok), cfg.seed, strata=strata, **mui_kw)
    if ci["n_each"] >= 2:
        per_sample = ("every sample's own MUI is identical (one-token answers: n_layers x k key neurons each), so no per-sample test"
                      if ci["per_sample_constant"] else
                      f"per-sample MUI {ci['sample_mui_correct_mean']:.3f}% vs {ci['sample_mui_incorrect_mean']:.3f}%, "
                      f"Mann-Whitney p={ci['mannwhitney_p']:.3g}")
        test = (f", Mann-Whitney U={ci['chunk_mannwhitney_u']:.0f}, p={ci['chunk_mannwhitney_p']:.3g})"
                if "chunk_mannwhitney_p" in ci else ", no test)")
        chunk = (f"MUI of disjoint {ci['chunk_size']}-sample chunks {np.mean(ci['chunk_mui_correct']):.2f}% vs "
                 f"{np.mean(ci['chunk_mui_incorrect']):.2f}% ({len(ci['chunk_mui_correct'])} chunks a side" + test)
        finding = (f"§3.7 ({focus}): {ci['n_each']} correct vs {ci['n_each']} incorrect responses (equal counts within "
                   f"each task): dataset MUI {ci['mui_correct']:.2f}% vs {ci['mui_incorrect']:.2f}%; {chunk}; {per_sample}.")
    else:
        finding = (f"§3.7: too few incorrect or correct responses ({ci['n_correct_total']} correct, "
                   f"{ci['n_incorrect_total']} incorrect) to compare.")
    return Section(
        record={"correct_vs_incorrect": {k: v for k, v in ci.items() if not k.startswith(("per_sample_c", "per_sample_i"))}},
        findings=[finding], figures={"sec37_correct_vs_incorrect": plot_correctness(ci)}, data={"ci": ci},
        tables={"summary": {k: v for k, v in ci.items() if not k.startswith(("per_sample_c", "per_sample_i", "chunk_mui"))}})


def masking_section(model, focus: str, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.8: zero-ablate task A's top key neurons (vs random neurons); accuracy on A and on B."""
    from kit.core.findings import Section

    zoo = focus.startswith("zoo/")
    task_a, task_b = masking_tasks(tasks, cfg.masking_task_a, cfg.masking_task_b, zoo)
    items_a = task_items(task_a, "test", cfg.masking_n_items, cfg.seed, zoo)
    resp_a, _ = respond_and_score(model, items_a, task_a, zoo, cfg.max_new_tokens)
    ranking = key_neuron_ranking(model, items_a, resp_a, **mui_kw)
    n_key_a = mui.utilization_for_items(model, items_a, resp_a, **mui_kw).mask.sum().item()
    eval_split = "fresh" if zoo else "test"
    eval_sets = {t: task_items(t, eval_split, cfg.masking_n_items, cfg.seed + 1, zoo, skip=0 if zoo else cfg.masking_n_items)
                 for t in (task_a, task_b)}
    curve = masking_curve(model, ranking, eval_sets, cfg.masking_ks, cfg.masking_random_repeats, cfg.seed, zoo,
                          cfg.max_new_tokens)
    ms = masking_summary(curve, task_a, task_b)
    nan = float("nan")
    finding = (f"§3.8 ({focus}, {model.cfg.n_layers * model.cfg.d_mlp} MLP neurons): task A={task_a} has {n_key_a} key "
               f"neurons; masking the top {ms['k_max']} drops fresh-item accuracy on A by {ms.get('drop_key_a', nan):.1f} "
               f"points (random neurons: {ms.get('drop_random_a', nan):.1f}) and on B={task_b} by "
               f"{ms.get('drop_key_b', nan):.1f} (random: {ms.get('drop_random_b', nan):.1f}).")
    return Section(
        record={"masking": {"task_a": task_a, "task_b": task_b, "n_key_neurons_a": n_key_a, "n_ranked_a": len(ranking),
                            **ms, "curve": curve.to_dict(orient="records")}},
        findings=[finding], figures={"sec38_masking": plot_masking(curve, task_a)},
        tables={"curve": curve.pivot_table(index="k", columns=["set", "kind"], values="accuracy")})


def method_grid_section(model_names: Sequence[str], tasks: Sequence[str], cfg):
    """App. B.6 (item 5): the published Tables 11-17 re-read, then MUI under every score x threshold in
    the world (``topscore`` at 0.2 and at MUI-Eval's 0.8-0.95), methods equal by construction dropped,
    and Spearman of each remaining method with the selected one."""
    from kit.core.findings import Section

    pub = published_b6_correlations()
    alt = pub[pub.quoted.notna() & (pub.family == "neuron")]
    sae = pub[pub.quoted.notna() & (pub.family == "sae")]
    methods = [(s, t, f) if t == "topscore" else (s, t) for s in cfg.grid_scores for t in cfg.grid_thresholds
               for f in (cfg.grid_topscore_fracs if t == "topscore" else [None])]
    mgrid = method_grid(model_names, tasks, cfg.grid_n_items, cfg.world, cfg.device, methods, cfg.batch_size, cfg.seed,
                        cfg.max_new_tokens, dtype=cfg.dtype, max_batch_tokens=cfg.max_batch_tokens)
    dropped = coincident_methods(mgrid)
    kept = mgrid[~mgrid.method.isin(list(dropped))]
    corr = method_correlations(kept)
    ref_method = method_name(*methods[0])
    others = corr[ref_method].drop(ref_method).dropna() if ref_method in corr else pd.Series(dtype=float)
    drop_text = ("; ".join(f"{d} = {k}" for d, k in dropped.items()) if dropped else "none")
    findings = [
        f"B.6 published (item 5): from the printed Tables 13/14 vs Table 11, Spearman over the {int(alt.n_cells.iloc[0])} "
        f"(model, benchmark) cells is {alt.pooled.iloc[0]:.3f} / {alt.pooled.iloc[1]:.3f} (mean {alt.pooled.mean():.3f}); "
        f"mean of per-benchmark Spearmans {alt.per_benchmark_mean.mean():.3f}; the paper quotes {alt.quoted.iloc[0]} "
        f"(published, not recomputable exactly from the rounded tables). SAE Tables 16/17 vs 15: pooled "
        f"{sae.pooled.mean():.3f} (quoted {sae.quoted.iloc[0]}).",
        f"B.6 world ({len(model_names)} models x {len(tasks)} tasks, {len(methods)} methods, {len(dropped)} dropped as equal "
        f"by construction: {drop_text}): mean Spearman of the other {len(others)} methods with {ref_method} is "
        + (f"{others.mean():.3f} (range {others.min():.3f} to {others.max():.3f})." if len(others) else "undefined."),
    ]
    return Section(
        record={"b6_method_spearman": corr, "b6_mean_spearman_vs_selected": float(others.mean()) if len(others) else None,
                "b6_cells": int(len(mgrid)), "b6_dropped_equal_by_construction": dropped,
                "b6_published": pub.to_dict(orient="records")},
        findings=findings, figures={"b6_method_spearman": plot_method_correlations(corr)},
        tables={"published": pub, "grid": kept.pivot_table(index=["model", "task"], columns="method", values="mui")})


def public_code_section(model, focus: str, task: str, cfg, k: int | None = None):
    """Item 6: the paper's definition and MUI-Eval's code (``variant="public_code"``) on the same model,
    items and responses; the code with 1 and with 2 visible GPUs (its per-GPU duplicates)."""
    from kit.core.findings import Section

    zoo = focus.startswith("zoo/")
    items = task_items(task, "test", cfg.n_items, cfg.seed, zoo)
    responses, _ = respond_and_score(model, items, task, zoo, cfg.max_new_tokens)
    tokens, mask = mui.item_tokens(model, items, responses)
    d = model.cfg.d_mlp
    k_pub = mui.public_code_k(d) if k is None else k
    note = ""
    if k_pub < 1:
        k_pub = 1
        note = (f" The public code's k = int({d}/1000) = 0 would select no neuron at all (MUI 0); k = 1 is passed "
                "explicitly so its other choices can be compared.")
    budget = dict(batch_size=cfg.batch_size, max_batch_tokens=None if zoo else cfg.max_batch_tokens)
    paper = mui.utilization(model, tokens, mask, **budget).mask
    rows = [{"variant": "paper (per-token top-k, act*up, next token)", "k": mui.default_k(d),
             "mui": mui.mui_of_mask(paper), "jaccard_with_paper": 1.0}]
    for g in (1, 2):
        res = mui.utilization(model, tokens, mask, variant="public_code", k=k_pub, n_gpus=g, **budget)
        jac = float((res.mask & paper).sum() / max(1, int((res.mask | paper).sum())))
        rows.append({"variant": f"public_code, {g} GPU(s)", "k": k_pub, "mui": res.mui, "jaccard_with_paper": jac})
    table = pd.DataFrame(rows)
    p, c1, c2 = table.mui
    finding = (f"Item 6 ({focus}, {task}, {len(items)} items): MUI {p:.3f}% by the paper's definition vs {c1:.3f}% by "
               f"MUI-Eval's code (1 GPU; {c2:.3f}% with 2 GPUs); the two key-neuron sets share "
               f"{table.jaccard_with_paper.iloc[1]:.2f} of their union (Jaccard). Table 5's absolute MUI values come from MUI-Eval's "
               f"code (off-by-one target, act(gate), top-k per response, floor k, per-GPU duplicates), not from the "
               f"definition in the paper's text; our default is the text's definition.{note}")
    return Section(record={"public_code_vs_paper": table.to_dict(orient="records")}, findings=[finding],
                   tables={"variants": table})


def sae_section(sae_names: Sequence[str], tasks: Sequence[str], cfg):
    """§7: SAE-feature MUI beside neuron MUI, per SAE and task."""
    from scipy.stats import spearmanr

    from kit.core.findings import Section

    if not sae_names:
        return Section(findings=["SAE MUI: no SAEs in this world/profile, section skipped."])
    sgrid = sae_grid(sae_names, tasks, cfg.n_items, cfg.world, cfg.device, cfg.sae_top, cfg.sae_reference_width,
                     cfg.batch_size, cfg.seed, cfg.score, cfg.threshold, cfg.max_new_tokens, dtype=cfg.dtype,
                     max_batch_tokens=cfg.max_batch_tokens)
    rho = {s: float(spearmanr(g.sae_mui, g.neuron_mui).statistic) if g.sae_mui.nunique() > 1 and g.neuron_mui.nunique() > 1
           else None for s, g in sgrid.groupby("sae")}
    finding = "SAE MUI (one layer): " + "; ".join(
        f"{s} ({g.hook.iloc[0]}, {g.features_per_token.iloc[0]} features/token): mean {g.sae_mui.mean():.2f}% vs neuron "
        f"MUI {g.neuron_mui.mean():.2f}%, Spearman across tasks {rho[s] if rho[s] is None else round(rho[s], 2)}"
        for s, g in sgrid.groupby("sae"))
    return Section(record={"sae_mui": sgrid.to_dict(orient="records"), "sae_vs_neuron_spearman": rho},
                   findings=[finding], tables={"grid": sgrid})


# --------------------------------------------------------------------------------------------
# 8. item 7: multi-token answers and k across widths (the tiny world's zoo/base-xl)


def width_k_table(models: Sequence[str], world: str, k: int | None = None) -> pd.DataFrame:
    """Per zoo model: n_layers, d_mlp, MUI's per-token per-layer ``k`` (``k`` if given, else
    :func:`kit.mui.metric.default_k`, the paper's top 0.1%) and the MUI of one response token,
    ``100 k / d_mlp`` %: every one-token sample has exactly this MUI, so per-sample MUI can only
    vary with multi-token responses, and a model with another ``k / d_mlp`` sits on another scale."""
    from kit import world as W

    rows = []
    for m in models:
        if not is_zoo(m):
            continue
        arch = W.member_info(m, world)["arch"]
        kk = k or mui.default_k(arch["d_mlp"])
        rows.append({"model": m, "n_layers": arch["n_layers"], "d_mlp": arch["d_mlp"], "k": kk,
                     "key_neurons_per_token": arch["n_layers"] * kk,
                     "one_token_sample_mui": 100.0 * kk / arch["d_mlp"]})
    return pd.DataFrame(rows)


def per_sample_mui(model, items: list, mui_kw: dict[str, Any]) -> pd.DataFrame:
    """Greedy responses of a world model (as many tokens as the longest answer), exact-match and
    token accuracy, and each sample's own MUI (Eq. 5 on that sample alone).

    Returns columns item, correct, token_accuracy, response_tokens, mui."""
    from kit import world as W

    n_ans = max(len(it.target.split()) for it in items)
    responses = W.respond(model, items, max_new_tokens=n_ans)
    correct = np.asarray(W.evaluate(model, items), dtype=bool)
    tok = np.asarray(W.token_accuracy(model, items))
    res = mui.utilization_for_items(model, items, responses, per_sample=True, **mui_kw)
    return pd.DataFrame({"item": [it.id for it in items], "correct": correct, "token_accuracy": tok,
                         "response_tokens": [len(r.split()) for r in responses], "mui": res.per_sample,
                         "response": responses})


def multi_token_section(models: Sequence[str], tasks: Sequence[str], one_token_task: str, cfg,
                        focus: str | None = None, **mui_kw: Any):
    """Item 7: k per width, per-sample MUI on the multi-token families (beside a one-token task),
    the law on the multi-token families and §3.7 (correct vs incorrect) where per-sample MUI varies.

    ``models``: zoo models; ``tasks``: multi-token families (``kit.world.EXTRA_TASKS``); ``focus``:
    the §3.7 model (default: the model with the largest k, ties to the last listed)."""
    from kit import world as W
    from kit.core.findings import Section
    from kit.models.load import load_model

    if not tasks:
        raise ValueError("tasks is empty: name at least one multi-token family "
                         f"(allowed values: {', '.join(W.EXTRA_TASKS)})")
    unknown = [t for t in tasks if t not in W.EXTRA_TASKS]
    if unknown:
        raise ValueError(f"multi_token_tasks: {unknown} are not multi-token families; allowed values: "
                         f"{', '.join(W.EXTRA_TASKS)}")
    widths = width_k_table(models, cfg.world, mui_kw.get("k"))
    focus = focus or widths.sort_values("k", kind="stable").model.iloc[-1]
    if focus not in set(widths.model):
        raise ValueError(f"multi_token_focus={focus!r} is not one of the section's zoo models: {', '.join(widths.model)}")
    samples, cells = [], []
    focus_frames = []
    for m in models:
        model = load_model(m, world=cfg.world)
        for t in [*tasks, one_token_task]:
            items = task_items(t, "test", cfg.multi_token_n_items, cfg.seed)
            df = per_sample_mui(model, items, mui_kw).assign(model=m, task=t)
            samples.append(df)
            cells.append({"model": m, "task": t, "group": task_group(t), "answer_tokens": len(items[0].target.split()),
                          "performance": 100 * df.correct.mean(), "token_accuracy": 100 * df.token_accuracy.mean(),
                          "mui": mui.utilization_for_items(model, items, df.response.tolist(), **mui_kw).mui,
                          "sample_mui_mean": df.mui.mean(), "sample_mui_sd": df.mui.std(ddof=0),
                          "sample_mui_min": df.mui.min(), "sample_mui_median": df.mui.median(),
                          "sample_mui_max": df.mui.max(), "sample_mui_distinct": int(df.mui.nunique())})
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
    if len(answered) == 1 and checkpoint_series(answered[0], W.members(cfg.world))[:-1]:  # it has checkpoints
        series = _checkpoint_cells(answered[0], tasks, cfg, mui_kw, mt)
    law, law_note = multi_token_law(mt, cfg.law_form, series, world=cfg.world)
    fx = mt[mt.model == focus]
    one = cells[(cells.model == focus) & (cells.task == one_token_task)].iloc[0]
    k_text = ", ".join(f"{r.model} k={r.k} (d_mlp {r.d_mlp}, one-token sample MUI {r.one_token_sample_mui:.3f}%)"
                       for r in widths.itertuples())
    findings = [
        f"Item 7, k across widths: {k_text}. One response token gives every sample the same MUI 100·k/d_mlp, "
        "so only multi-token answers let per-sample MUI vary, and models with different k/d_mlp sit on different scales.",
        f"Item 7, per-sample MUI of {focus}: " + "; ".join(
            f"{r.task} ({r.answer_tokens}-token answers, exact {r.performance:.1f}%, token {r.token_accuracy:.1f}%): "
            f"{r.sample_mui_min:.3f}-{r.sample_mui_max:.3f}% (median {r.sample_mui_median:.3f}, sd {r.sample_mui_sd:.3f}, "
            f"{r.sample_mui_distinct} distinct values)" for r in fx.itertuples())
        + f"; one-token task {one_token_task}: {one.sample_mui_distinct} distinct value(s) ({one.sample_mui_min:.3f}%). "
        + law_note + ".",
    ]
    if ci.get("n_each", 0) >= 2:
        findings.append(
            f"Item 7, §3.7 on the multi-token families ({focus}): {ci['n_each']} correct vs {ci['n_each']} incorrect "
            f"(equal counts per family): per-sample MUI {ci['sample_mui_correct_mean']:.3f}% vs "
            f"{ci['sample_mui_incorrect_mean']:.3f}%" + (f", Mann-Whitney p={ci['mannwhitney_p']:.3g}"
                                                         if ci.get("mannwhitney_p") is not None else "")
            + f"; dataset MUI {ci['mui_correct']:.2f}% vs {ci['mui_incorrect']:.2f}%.")
    else:
        findings.append(f"Item 7, §3.7 on the multi-token families ({focus}): too few correct or incorrect responses "
                        f"({ci.get('n_correct_total')} correct, {ci.get('n_incorrect_total')} incorrect) to compare.")
    record = {"multi_token": {"widths": widths.to_dict(orient="records"), "focus": focus,
                              "cells": cells.to_dict(orient="records"), "law": law,
                              "correct_vs_incorrect": {k: v for k, v in ci.items()
                                                       if not k.startswith(("per_sample_c", "per_sample_i"))}}}
    return Section(record=record, findings=findings,
                   tables={"widths": widths, "cells": cells},
                   figures={"item7_per_sample_mui": plot_per_sample_mui(samples, focus)},
                   data={"samples": samples, "ci": ci, "law": law})


def checkpoint_series(model: str, members: Sequence[str], final_step: int | None = None) -> list[str]:
    """``model``'s training checkpoints among ``members`` by step, then ``model`` itself (last); a
    checkpoint at ``final_step`` (the model's total steps) is left out: the same weights as ``model``."""
    pre = f"{model}@step-"
    steps = sorted(int(n[len(pre):]) for n in members if n.startswith(pre))
    return [f"{pre}{s}" for s in steps if s != final_step] + [model]


def _checkpoint_cells(model: str, tasks: Sequence[str], cfg, mui_kw: Mapping[str, Any],
                      final: pd.DataFrame) -> pd.DataFrame:
    """Performance and dataset MUI of ``model``'s checkpoints on ``tasks`` (the items of the section),
    with the final model's cells (``final``) appended."""
    from kit import world as W
    from kit.models.load import load_model

    rows = []
    final_step = W.member_info(model, cfg.world)["step"]
    for name in checkpoint_series(model, W.members(cfg.world), final_step)[:-1]:
        m = load_model(name, world=cfg.world)
        for t in tasks:
            items = task_items(t, "test", cfg.multi_token_n_items, cfg.seed)
            df = per_sample_mui(m, items, mui_kw)
            rows.append({"model": name, "task": t, "performance": 100 * df.correct.mean(),
                         "mui": mui.utilization_for_items(m, items, df.response.tolist(), **mui_kw).mui})
        del m
    fin = final[final.model == model][["model", "task", "performance", "mui"]]
    return pd.concat([pd.DataFrame(rows), fin], ignore_index=True)


def multi_token_law(mt: pd.DataFrame, form: str, series: pd.DataFrame | None = None,
                    world: str = "tiny") -> tuple[dict, str]:
    """The law on the multi-token families: ``(law, note)``; ``law`` is what ``law.multi_token`` reads.

    ``mt``: cells (model, task, performance, mui) of the section's models. With >= 3 models above
    0%, the law across them (pooled over the families). Otherwise, if ``series`` (the cells of the one
    answering model's checkpoints and itself) is given, the law across that series, per family and
    pooled; the claim reads the pooled fit, noting that its points are one training run."""
    fit_cells = mt[mt.performance > 0]
    n_models_fit = int(fit_cells.model.nunique())
    def pooled_fit(cells: pd.DataFrame) -> tuple[pd.DataFrame, dict, dict]:
        fit = law_fits(cells, by="task", form=form)
        pooled = fit[fit.task == "all"].iloc[0].to_dict()
        return fit, pooled, {k: (None if pd.isna(pooled.get(k)) else pooled.get(k))
                             for k in ("slope", "ci_low", "ci_high", "r2", "n")}

    if n_models_fit >= 3:
        _, pooled, law = pooled_fit(mt)
        note = f"law on the multi-token families: {fmt_fit(pooled)}"
        if law["slope"] is None:
            law["not_testable"] = f"too few distinct (performance, MUI) cells to fit: {fmt_fit(pooled)}"
        return law, note
    if series is not None and n_models_fit == 1:
        model = fit_cells.model.iloc[0]
        n_ck = int(series.model.nunique())
        fit, pooled, law = pooled_fit(series)
        law.update(over="checkpoints", model=model, n_models=n_ck,
                   per_task={r.task: fmt_fit(r._asdict()) for r in fit.itertuples() if r.task != "all"},
                   where=(f"{world} world, multi-token families pooled, across {n_ck} training checkpoints of {model} "
                          "(one training run, not independent models)"))
        per = "; ".join(f"{t}: {v}" for t, v in law["per_task"].items())
        note = (f"law on the multi-token families: only {model} answers them, so it is fit across {n_ck} checkpoints "
                f"of its training run ({', '.join(series.model.unique())}; not independent models): pooled "
                f"{fmt_fit(pooled)}; {per}")
        if law["slope"] is None:
            law["not_testable"] = f"too few distinct (performance, MUI) checkpoint cells to fit: {fmt_fit(pooled)}"
        return law, note
    law = {"slope": None, "n": int(len(fit_cells)), "n_models": n_models_fit,
           "not_testable": (f"inconclusive: only {n_models_fit} model(s) answer a multi-token family above 0% "
                            f"({', '.join(sorted(fit_cells.model.unique())) or 'none'}; the others were not trained "
                            "on them) and none has checkpoints, and a law across models needs at least 3")}
    return law, "law on the multi-token families " + law["not_testable"]


def plot_per_sample_mui(samples: pd.DataFrame, focus: str):
    """Histograms of per-sample MUI of ``focus`` per task (multi-token families and the one-token task)."""
    import matplotlib.pyplot as plt

    s = samples[samples.model == focus]
    tasks = list(dict.fromkeys(s.task))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 2.8), squeeze=False)
    for ax, t in zip(axes.flat, tasks):
        g = s[s.task == t]
        for ok, lab in ((True, "correct"), (False, "incorrect")):
            v = g[g.correct == ok].mui
            if len(v):
                ax.hist(v, bins=20, alpha=0.6, label=f"{lab} ({len(v)})")
        ax.set_title(f"{focus}: {t}", fontsize=8)
        ax.set_xlabel("per-sample MUI (%)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
