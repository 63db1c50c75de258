"""§3.6 of seed 000: MUI against the number of samples, single-capability pools vs a mixed pool."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from kit.mui import metric as mui
from kit.mui.plots import plot_growth
from kit.subjects import Subject, task_group


def growth_curves(
    model,
    pools: dict[str, list],
    responses: dict[str, list[str]],
    sizes: Sequence[int],
    repeats: int = 3,
    seed: int = 0,
    **mui_kwargs: Any,
) -> pd.DataFrame:
    """MUI of random subsets of size n of each item pool (union of per-sample key sets).

    ``pools``: name -> items (e.g. one single-capability pool per task, one ``mixed`` pool);
    ``responses``: name -> the model's responses to them. At each n the subsets of a pool are
    disjoint (:func:`disjoint_subsets`: ``min(repeats, pool size // n)`` of them), so they are
    independent units for the claim's resampling, not overlapping draws from one fixed pool.
    Returns columns pool, n, repeat, mui.
    """
    rows = []
    rng = random.Random(seed)
    for name, items in pools.items():
        res = mui.utilization_for_items(
            model, items, responses[name], per_sample=True, **mui_kwargs
        )
        masks = res.sample_masks
        assert masks is not None  # per_sample=True
        for n in sizes:
            if n > len(items):
                continue
            for r, idx in enumerate(disjoint_subsets(len(items), n, repeats, rng)):
                rows.append(
                    {
                        "pool": name,
                        "n": n,
                        "repeat": r,
                        "mui": mui.mui_of_mask(masks[idx].any(dim=0)),
                    }
                )
    return pd.DataFrame(rows)


def disjoint_subsets(n_items: int, n: int, repeats: int, rng: random.Random) -> list[list[int]]:
    """``min(repeats, n_items // n)`` subsets of ``n`` item indices, pairwise disjoint: consecutive
    chunks of one random order of the pool (at n = the pool's size, one subset: the pool)."""
    if n < 1 or repeats < 1:
        raise ValueError(f"n={n}, repeats={repeats}: both must be >= 1")
    order = rng.sample(range(n_items), n_items)
    return [order[r * n : (r + 1) * n] for r in range(min(repeats, n_items // n))]


def mixed_and_single(curves: pd.DataFrame, n: int) -> tuple[np.ndarray, np.ndarray]:
    """At subset size ``n`` of :func:`growth_curves`' table: the mixed pool's MUI per repeat, and
    the single pools' mean per repeat."""
    at = curves[curves["n"] == n]
    mixed = at[at["pool"] == "mixed"]["mui"].to_numpy(float)
    single = at[at["pool"] != "mixed"].groupby("repeat")["mui"].mean().to_numpy(float)
    return mixed, single


def largest_varying_n(curves: pd.DataFrame) -> int:
    """The largest subset size at which the mixed pool's and the single pools' MUI vary over the
    random subsets (at a pool's own size every subset is the whole pool: a zero-width interval that
    can decide nothing), preferring sizes with the most subsets a side (the subsets at one n are
    disjoint, :func:`disjoint_subsets`, so a larger n has fewer of them); the largest size when none
    varies."""
    sizes = sorted(set(curves["n"]), reverse=True)
    counts = {n: min(len(a) for a in mixed_and_single(curves, n)) for n in sizes}
    for least in sorted(set(counts.values()), reverse=True):
        for n in sizes:
            mixed, single = mixed_and_single(curves, n)
            if counts[n] >= least and len(np.unique(mixed)) > 1 and len(np.unique(single)) > 1:
                return int(n)
    return int(curves["n"].max())


def first_task_per_group(tasks: Sequence[str]) -> list[str]:
    """One task per capability group (:func:`kit.subjects.task_group`), in the given order (the
    single-capability pools)."""
    seen: dict[str, str] = {}
    for t in tasks:
        seen.setdefault(task_group(t), t)
    return list(seen.values())


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


def growth_section(subject: Subject, tasks: Sequence[str], cfg, **mui_kw: Any):
    """§3.6: MUI against the number of samples, single-capability pools vs a mixed pool."""
    from kit.core.findings import Section

    model, focus = subject.model, subject.name
    growth_tasks = cfg.growth_tasks or first_task_per_group(tasks)
    pools = {t: subject.items(t, "test", cfg.growth_pool_size, cfg.seed) for t in growth_tasks}
    pools["mixed"] = mixed_pool({t: pools[t] for t in growth_tasks}, cfg.growth_pool_size, cfg.seed)
    responses = {t: subject.respond(t, pools[t], cfg.max_new_tokens) for t in growth_tasks}
    # the mixed pool's items come from the single pools: reuse their responses
    lookup = {it.id: r for t in growth_tasks for it, r in zip(pools[t], responses[t])}
    responses["mixed"] = [lookup[it.id] for it in pools["mixed"]]
    curves = growth_curves(
        model, pools, responses, cfg.growth_sizes, cfg.growth_repeats, cfg.seed, **mui_kw
    )
    table = curves.groupby(["pool", "n"]).mui.mean().unstack("pool")
    n_top = int(curves.n.max())
    single_at, mixed_at = table.loc[n_top, growth_tasks], table.loc[n_top, "mixed"]
    return Section(
        record={
            "growth_mui_at_max_n": {
                "n": n_top,
                "mixed": mixed_at,
                **{t: single_at[t] for t in growth_tasks},
            },
            "focus_model": focus,
        },
        findings=[
            f"§3.6 ({focus}): at n={n_top} samples the mixed pool's MUI is {mixed_at:.2f}% vs "
            f"single-capability {single_at.min():.2f}-{single_at.max():.2f}% (mean "
            f"{single_at.mean():.2f}%)."
        ],
        tables={"growth": table},
        figures={"sec36_growth": plot_growth(curves)},
        data={"curves": curves},
    )
