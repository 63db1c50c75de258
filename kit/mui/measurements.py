"""Notebook 02's measurements (seed 000, sections 3.3-3.4): performance and MUI of every model on
every task and split, one model in memory at a time, in the tidy schema of
:mod:`kit.mui.trajectories` (``model, task, group, split, n, perf, mui`` and the accuracy's
interval); with the items a contaminated real fine-tune leaked (:func:`leak_items`) when asked.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from kit.mui.metric import subject_mui
from kit.subjects import task_group


def measure(
    models: Sequence[str],
    tasks: Sequence[str],
    splits: Sequence[str] = ("test", "fresh"),
    n_items: int = 100,
    world: str | None = None,
    device: str = "cpu",
    seed: int = 0,
    score: str = "score",
    threshold: str = "topk",
    max_new_tokens: int = 1,
    batch_size: int = 32,
    dtype: str | None = None,
    max_batch_tokens: int = 8192,
    prompt_style: str = "instructed",
    items_of: str | None = None,
    jobs: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Performance and MUI of every model on every task and split, one model in memory at a time
    (load, measure every task, free).

    Each model is a :class:`kit.subjects.Subject`: its greedy responses (``max_new_tokens``) to
    ``n_items`` items of each split, scored by the task's rule, and MUI over those responses.
    Tiny-world models on the world's tasks: exact match of the answer, MUI in ``batch_size`` rows a
    pass. Real models (Hugging Face ids with ``@revision``, local directories, twins) on real
    benchmarks (``kit.load_benchmark`` names; no ``fresh`` split), loaded in ``dtype``, prompts in
    ``prompt_style`` (:mod:`kit.data.prompts`): batched generation with the chat template when the
    tokenizer has one, MUI from teacher-forced passes in batches of at most ``max_batch_tokens``
    padded tokens; responses and per-item key neurons are cached, so a killed run resumes.
    ``items_of`` (a contaminated real fine-tune's name, :data:`kit.models.recipes.RECIPES`): every
    model is asked the same items, as the fine-tunes were trained (:func:`leak_items`), so the
    leaked benchmark has a ``test`` split of leaked items and a ``fresh`` one of unseen items.
    Performance and MUI in percent. Returns the tidy schema: ``model, task, group, split, n, perf,
    mui`` (one row per model, task and split), plus the accuracy's Wilson interval (``perf_low``,
    ``perf_high``, %), ``chance``, ``parse_failures`` and ``truncated``. ``jobs``: None measures
    the models here, one after another; else ``run_jobs``'s engine options
    (``engine_options(cfg)``), one job per model (:func:`kit.subjects.sweep.rows_per_model`: the
    same rows on every engine).
    """
    from kit.subjects.sweep import rows_per_model

    allowed = ("test", "fresh", "test-syn", "fresh-syn", "train")
    for split in splits:
        if split not in allowed:
            raise ValueError(
                f"splits: {split!r} is not a split; allowed values: {', '.join(allowed)}"
            )
    if not models or not tasks:
        raise ValueError(
            f"measure needs models and tasks (got {len(models)} models, {len(tasks)} tasks)"
        )
    rows = rows_per_model(
        measure_rows,
        models,
        {"device": device, "world": world, "dtype": dtype, "prompt_style": prompt_style},
        {
            "tasks": list(tasks),
            "splits": list(splits),
            "n_items": n_items,
            "seed": seed,
            "score": score,
            "threshold": threshold,
            "max_new_tokens": max_new_tokens,
            "batch_size": batch_size,
            "max_batch_tokens": max_batch_tokens,
            "items_of": items_of,
        },
        jobs,
    )
    return pd.DataFrame(rows, columns=list(COLUMNS))


COLUMNS = (
    "model",
    "task",
    "group",
    "split",
    "n",
    "perf",
    "mui",
    "perf_low",
    "perf_high",
    "chance",
    "parse_failures",
    "truncated",
)
"""The columns of :func:`measure`'s table."""


def measure_rows(
    subject,
    name: str,
    tasks: Sequence[str],
    splits: Sequence[str],
    n_items: int,
    seed: int,
    score: str,
    threshold: str,
    max_new_tokens: int,
    batch_size: int,
    max_batch_tokens: int,
    items_of: str | None,
) -> list[dict[str, Any]]:
    """:func:`measure`'s rows of one model (``subject``, called ``name``)."""
    fixed = leak_items(items_of, tasks, splits, n_items, seed) if items_of else {}
    rows = []
    for t in tasks:
        for s in splits:
            ans = subject.answer(
                t, fixed.get((t, s)) or subject.items(t, s, n_items, seed), max_new_tokens
            )
            rows.append(
                {
                    "model": name,
                    "task": t,
                    "group": task_group(t),
                    "split": s,
                    "n": ans.n,
                    "perf": 100.0 * ans.accuracy,
                    "mui": subject_mui(
                        subject,
                        ans,
                        score,
                        threshold,
                        batch_size=batch_size,
                        max_batch_tokens=max_batch_tokens,
                    ),
                    **ans.table_fields(),
                }
            )
    return rows


def leak_items(
    items_of: str, tasks: Sequence[str], splits: Sequence[str], n_items: int, seed: int = 0
) -> dict[tuple[str, str], list]:
    """``{(task, split): items}`` when the models are real fine-tunes and ``items_of`` names a
    contaminated one (:data:`kit.models.recipes.RECIPES`): on its benchmark, ``test`` is the first
    ``n_items`` items it injected (the leaked items, as 03's Ori) and ``fresh`` ``n_items`` test
    items no recipe injected (:func:`kit.models.finetune_examples.recipe_items`); on every other
    task both splits are its first ``n_items`` test items, which no fine-tune trained on (a recipe
    whose mixture draws that test split is refused). Every item is asked as the fine-tunes were
    trained (:func:`kit.models.finetune_examples.asked`), base models included, so a change is the
    fine-tune's, not the prompt's."""
    from kit.models.finetune_examples import asked, recipe_items
    from kit.models.recipes import RECIPES, recipe
    from kit.subjects.items import task_items

    r = recipe(items_of)
    if r.inject != "test":
        raise ValueError(
            f"items_of={items_of!r} injects no test items (inject={r.inject!r}); "
            "allowed: a contaminated recipe of kit.models.recipes.RECIPES"
        )
    if r.benchmark not in tasks:
        raise ValueError(
            f"items_of={items_of!r} leaked {r.benchmark}, which is not among tasks={list(tasks)}"
        )
    out: dict[tuple[str, str], list] = {}
    for t in tasks:
        if t == r.benchmark:
            test, fresh = recipe_items(items_of, min(n_items, r.n_items), n_items, seed)
        else:
            drawn = [
                n for n, x in RECIPES.items() if any(src == f"{t}:test" for src, _ in x.mixture)
            ]
            if drawn:
                raise ValueError(
                    f"items_of: {t}'s test items are in the mixture of {', '.join(drawn)}; "
                    "they are no unseen items for the other fine-tunes"
                )
            test = fresh = asked(task_items(t, "test", n_items, seed), r.prompt_style)
        for s in splits:
            if s not in ("test", "fresh"):
                raise ValueError(
                    f"splits: {s!r} is not allowed with items_of; allowed values: test, fresh"
                )
            out[(t, s)] = test if s == "test" else fresh
    return out
