"""§3.8 of seed 000: zero-ablating a task's key neurons (vs random neurons) and the accuracy on
that task and on a control task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from kit.mui import metric as mui
from kit.mui.plots import plot_masking
from kit.mui.scores import iter_neuron_scores
from kit.subjects import Subject, task_group


def key_neuron_counts(
    model,
    items: list,
    responses: list[str],
    score: str = "score",
    batch_size: int = 32,
    max_batch_tokens: int | None = None,
    **mui_kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per neuron, ``(counts, total)``, each ``[n_layers, d_mlp]``: how many samples select it as a
    key neuron (Eq. 5's per-sample sets; ``counts > 0`` is the dataset's key-neuron set), and its
    contribution summed over all response tokens (Eq. 15 summed over samples).
    ``max_batch_tokens``: token-budget batches instead of ``batch_size`` rows
    (:func:`kit.mui.metric.token_budget_chunks`)."""
    tokens, mask = mui.item_tokens(model, items, responses)
    res = mui.utilization(
        model,
        tokens,
        mask,
        score=score,
        batch_size=batch_size,
        per_sample=True,
        max_batch_tokens=max_batch_tokens,
        **mui_kwargs,
    )
    assert res.sample_masks is not None  # per_sample=True
    counts = res.sample_masks.sum(dim=0).float()  # [layer, d_mlp]
    total = torch.zeros_like(counts)
    chunks = (
        [(None, tokens, mask)]
        if max_batch_tokens is None
        else mui.token_budget_chunks(tokens, mask, max_batch_tokens)
    )
    for _, chunk, chunk_mask in chunks:
        pos = chunk_mask[:, 1:]
        step = batch_size if max_batch_tokens is None else len(chunk)
        for piece in iter_neuron_scores(model, chunk, score=score.split("_")[0], batch_size=step):
            s = piece.scores.float().cpu() * pos[piece.rows, :, None]
            total[piece.layer] += s.sum(dim=(0, 1))
    return counts, total


def rank_neurons(counts: torch.Tensor, total: torch.Tensor) -> list[tuple[int, int]]:
    """(layer, neuron) pairs, most important first: by ``counts`` then ``total`` (both
    ``[n_layers, d_mlp]``, :func:`key_neuron_counts`), then by index; neurons with count 0 and a
    non-positive total are left out."""
    d = counts.shape[1]
    flat_c, flat_t = counts.flatten().numpy(), total.flatten().numpy()
    keep = np.flatnonzero((flat_c > 0) | (flat_t > 0))
    order = sorted(keep.tolist(), key=lambda i: (-flat_c[i], -flat_t[i], i))
    return [(i // d, i % d) for i in order]


def key_neuron_ranking(
    model,
    items: list,
    responses: list[str],
    score: str = "score",
    batch_size: int = 32,
    max_batch_tokens: int | None = None,
    **mui_kwargs: Any,
) -> list[tuple[int, int]]:
    """Neurons of a task, most important first: (layer, neuron) pairs ordered by how many samples
    select them as key neurons, then by their contribution summed over all response tokens
    (Eq. 15 summed over samples), so k may exceed the number of key neurons. Neurons with a
    non-positive summed contribution that no sample selects are left out. ``max_batch_tokens``:
    token-budget batches instead of ``batch_size`` rows
    (:func:`kit.mui.metric.token_budget_chunks`)."""
    return rank_neurons(
        *key_neuron_counts(
            model, items, responses, score, batch_size, max_batch_tokens, **mui_kwargs
        )
    )


def masking_curve(
    subject: Subject,
    ranking: list[tuple[int, int]],
    eval_sets: dict[str, list],
    ks: Sequence[int],
    random_repeats: int = 3,
    seed: int = 0,
    max_new_tokens: int = 1,
) -> pd.DataFrame:
    """Accuracy (%) on each eval set after zero-ablating the top-k key neurons vs k random neurons.

    ``eval_sets``: task name -> items. Returns columns k, kind (``key``/``random``), set,
    accuracy (random: mean over repeats). ``k = 0`` is the unablated model; ks larger than the
    ranking are skipped for ``key`` (the task has fewer key neurons than that).
    """
    model = subject.model
    n_layers, d_mlp = model.cfg.n_layers, model.cfg.d_mlp
    rng = np.random.default_rng(seed)
    rows = []

    def acc(neurons, items, task):
        return 100 * subject.answer(task, items, max_new_tokens, ablate=neurons).accuracy

    for k in sorted(set([0, *ks])):
        for name, items in eval_sets.items():
            if k == 0:
                base = acc([], items, name)
                rows += [
                    {"k": 0, "kind": kind, "set": name, "accuracy": base}
                    for kind in ("key", "random")
                ]
                continue
            if k <= len(ranking):
                rows.append(
                    {"k": k, "kind": "key", "set": name, "accuracy": acc(ranking[:k], items, name)}
                )
            vals = []
            for _ in range(random_repeats):
                flat = rng.choice(n_layers * d_mlp, size=k, replace=False)
                vals.append(acc([(int(f) // d_mlp, int(f) % d_mlp) for f in flat], items, name))
            rows.append({"k": k, "kind": "random", "set": name, "accuracy": float(np.mean(vals))})
    return pd.DataFrame(rows)


def masking_tasks(tasks: Sequence[str], task_a: str | None, task_b: str | None) -> tuple[str, str]:
    """Task A (default: first math task) and control task B (default: first task of another
    group)."""
    a = task_a or next((t for t in tasks if task_group(t) == "math"), tasks[0])
    b = task_b or next((t for t in tasks if task_group(t) != task_group(a)), tasks[-1])
    return a, b


def masking_summary(curve: pd.DataFrame, task_a: str, task_b: str) -> dict[str, Any]:
    """Accuracy drop (points) at the largest k that has key neurons, key vs random, on A and B
    (``drop_<kind>_<a|b>``), and the accuracy after masking (``acc_<kind>_<a|b>``, %)."""
    key = curve[curve.kind == "key"]
    kmax = int(key.k.max()) if len(key) else 0
    out: dict[str, Any] = {"k_max": kmax}
    for name, label in ((task_a, "a"), (task_b, "b")):
        base = curve[(curve.k == 0) & (curve.set == name) & (curve.kind == "key")].accuracy
        for kind in ("key", "random"):
            v = curve[(curve.k == kmax) & (curve.set == name) & (curve.kind == kind)].accuracy
            if len(base) and len(v):
                out[f"drop_{kind}_{label}"] = float(base.iloc[0] - v.iloc[0])
                out[f"acc_{kind}_{label}"] = float(v.iloc[0])
    return out


def masking_section(subject: Subject, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.8: zero-ablate task A's top key neurons (vs random neurons); accuracy on A and on B, on
    items the model never saw where they exist (the world's fresh split), else on the test items
    after the ranked ones."""
    from kit.core.findings import Section

    model, focus = subject.model, subject.name
    task_a, task_b = masking_tasks(tasks, cfg.masking_task_a, cfg.masking_task_b)
    items_a = subject.items(task_a, "test", cfg.masking_n_items, cfg.seed)
    resp_a = subject.respond(task_a, items_a, cfg.max_new_tokens)
    counts, total = key_neuron_counts(model, items_a, resp_a, **mui_kw)
    ranking = rank_neurons(counts, total)
    n_key_a = int((counts > 0).sum())  # the dataset's key neurons: the union of the samples' sets
    n = cfg.masking_n_items
    eval_sets = {
        t: subject.fresh_items(t, n, cfg.seed + 1)
        or subject.items(t, "test", n, cfg.seed + 1, skip=n)
        for t in (task_a, task_b)
    }
    curve = masking_curve(
        subject,
        ranking,
        eval_sets,
        cfg.masking_ks,
        cfg.masking_random_repeats,
        cfg.seed,
        cfg.max_new_tokens,
    )
    ms = masking_summary(curve, task_a, task_b)
    ms.update(n_eval_a=len(eval_sets[task_a]), random_repeats=cfg.masking_random_repeats)
    nan = float("nan")
    finding = (
        f"§3.8 ({focus}, {model.cfg.n_layers * model.cfg.d_mlp} MLP neurons): task A={task_a} has "
        f"{n_key_a} key neurons; masking the top {ms['k_max']} drops fresh-item accuracy on A by "
        f"{ms.get('drop_key_a', nan):.1f} points (random neurons: "
        f"{ms.get('drop_random_a', nan):.1f}) and on B={task_b} by "
        f"{ms.get('drop_key_b', nan):.1f} (random: {ms.get('drop_random_b', nan):.1f})."
    )
    return Section(
        record={
            "masking": {
                "task_a": task_a,
                "task_b": task_b,
                "n_key_neurons_a": n_key_a,
                "n_ranked_a": len(ranking),
                **ms,
                "curve": curve.to_dict(orient="records"),
            }
        },
        findings=[finding],
        figures={"sec38_masking": plot_masking(curve, task_a)},
        tables={"curve": curve.pivot_table(index="k", columns=["set", "kind"], values="accuracy")},
    )
