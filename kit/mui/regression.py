"""Regression testing with MUI (seed 000, Corollary 1 as a tool, §3.4's takeaway): a checkpoint
series turned into the paper's training advice (continue / rebalance / halt).
"""

from __future__ import annotations

import pandas as pd

from kit.mui.directions import (
    DIRECTIONS,
    TAKEAWAY_OF_DIRECTION,
    TAKEAWAYS,
    _require,
    step_directions,
)


def regression_report(
    series: pd.DataFrame,
    tol_perf: float = 0.0,
    tol_mui: float = 0.0,
    checkpoint: str = "checkpoint",
    task: str = "task",
    order: str | None = None,
    detail: bool = False,
) -> pd.DataFrame:
    """Flag every training step by direction per task and give the paper's takeaway for the step.

    ``series``: one row per (checkpoint, task) with ``perf`` and ``mui`` (percent). Checkpoints are
    ordered by ``order`` when given, else by first appearance. A change counts only when both
    |Δperf| > ``tol_perf`` and |ΔMUI| > ``tol_mui`` (else ``flat``), so evaluation noise does
    not raise alarms.

    Returns one row per step: ``from, to, n_tasks``, a count per direction, ``flagged``
    (``task:direction`` for every task not evolving/accumulating/flat), ``takeaway`` (the most
    severe of TAKEAWAY_OF_DIRECTION over the step's tasks: collapsing anywhere -> ``halt``;
    coarsening -> ``rebalance``; otherwise ``continue``) and ``reason`` (the takeaway's wording
    from seed 000 section 3.4). ``detail=True`` returns the per-task rows instead, each with its
    own takeaway.
    """
    _require(series, [checkpoint, task, "perf", "mui"], "series")
    have = series.groupby(task)[checkpoint].apply(set)
    every = set(series[checkpoint])
    gaps = {t: sorted(every - c) for t, c in have.items() if c != every}
    if gaps:  # steps are compared across tasks, so every task needs every checkpoint
        raise ValueError(
            f"series: tasks lack checkpoints {gaps}; give every task a row per checkpoint"
        )
    s = series.copy()
    if order is None:
        first = {c: i for i, c in enumerate(pd.unique(s[checkpoint]))}
        s["_order"] = s[checkpoint].map(first)
        order = "_order"
    steps = step_directions(
        s, series=task, order=order, label=checkpoint, tol_perf=tol_perf, tol_mui=tol_mui
    )
    steps["takeaway"] = steps["direction"].map(TAKEAWAY_OF_DIRECTION)
    if detail:
        return steps
    rows = []
    for (step, a, b), g in steps.groupby(["step", "from", "to"], sort=True):
        counts = g["direction"].value_counts()
        worst = max(g["takeaway"], key=TAKEAWAYS.index)
        flagged = [
            f"{t}:{d}"
            for t, d in zip(g[task], g["direction"])
            if TAKEAWAY_OF_DIRECTION[d] != "continue"
        ]
        rows.append(
            {
                "from": a,
                "to": b,
                "n_tasks": len(g),
                **{d: int(counts.get(d, 0)) for d in DIRECTIONS},
                "flagged": ", ".join(flagged),
                "takeaway": worst,
                "reason": _reason(counts),
            }
        )
    return pd.DataFrame(
        rows, columns=["from", "to", "n_tasks", *DIRECTIONS, "flagged", "takeaway", "reason"]
    )


def _reason(counts: pd.Series) -> str:
    c = {d: int(counts.get(d, 0)) for d in DIRECTIONS}
    if c["collapsing"]:
        return (
            "collapsing: halt training, inspect training and test sets for "
            "overfitting/contamination"
        )
    if c["coarsening"] and c["accumulating"]:
        return "accumulating with coarsening: rebalance the data mix by the evaluation's categories"
    if c["coarsening"]:
        return "coarsening: an ability degrades while MUI grows; rebalance the data mix"
    if c["accumulating"]:
        return "accumulating: insufficient training, continue"
    if c["evolving"]:
        return "evolving: the ideal direction, continue"
    return "no change beyond tolerance"
