"""Training trajectories in the MUI–performance plane (seed 000, sections 3.3–3.4, appendix B.2/B.3).

A change between two evaluations of a model (two checkpoints, a base and its fine-tune) is a
vector (Δperformance, ΔMUI); its quadrant is one of the paper's four directions (Figure 4):

==============  =======  ======  ==================================================
direction       Δperf    ΔMUI    reading (section 3.3)
==============  =======  ======  ==================================================
evolving        +        -       genuinely enhanced capability
accumulating    +        +       an ability emphasised or seemingly improved
coarsening      -        +       reduced ability on this task
collapsing      -        -       comprehensive breakdown (seen only under contamination)
flat            |Δ| <= tolerance in either coordinate: no direction asserted
==============  =======  ======  ==================================================

The labelling itself is ``kit.mui.metric.direction`` (one definition for the whole project); this module
applies it to consecutive checkpoints (``step_directions``) and to fine-tune-vs-base pairs
(``pair_directions``), counts directions per setting, checks the paper's corollaries 1 and 2
against any such table (``corollary_checks``), and turns a checkpoint series into the paper's
training takeaway (``regression_report``: continue / rebalance / halt).

Tidy schema shared by every table here (one row per model x task/benchmark x split):
``model, task, group, split, perf, mui`` plus ``order`` for checkpoint series and ``base``,
``domain`` for pairs. ``perf`` and ``mui`` are percentages (0–100), as in the paper's tables.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

DIRECTIONS: tuple[str, ...] = ("evolving", "accumulating", "coarsening", "collapsing", "flat")
"""Every label ``kit.mui.metric.direction`` may return, in the order tables and legends show them."""

DIRECTION_COLORS: dict[str, str] = {
    "evolving": "#0173b2", "accumulating": "#029e73", "coarsening": "#de8f05",
    "collapsing": "#7b3294", "flat": "#949494",
}

# Seed 000, section 3.4 "Takeaway": "An accumulating trend signals insufficient training and
# warrants continued training; if it is accompanied by some coarsening, the data mix should be
# promptly rebalanced [...]. By contrast, the emergence of a collapsing direction calls for an
# immediate halt to training and a thorough inspection of the training and test sets".
# Evolving is "the ideal optimization trajectory" (continue). Coarsening on its own is not named in
# the takeaway; we map it to rebalance because section 3.3 reads it as "reduced abilities on this
# task" caused by a distributional shift towards another ability, which is what rebalancing fixes.
TAKEAWAY_OF_DIRECTION: dict[str, str] = {
    "evolving": "continue", "accumulating": "continue", "flat": "continue",
    "coarsening": "rebalance", "collapsing": "halt",
}
TAKEAWAYS: tuple[str, ...] = ("continue", "rebalance", "halt")
"""Takeaways from mildest to most severe; a step's takeaway is the most severe over its tasks."""

# Which published benchmarks a specialisation / leak targets (seed 000, sec. 3.3 and A.6:
# math leakage = GSM8K + MATH test samples, code leakage = HumanEval + MBPP).
PAPER_DOMAIN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "math": ("GSM8K", "MATH"),
    "code": ("HumanEval", "MBPP"),
}
PAPER_LATE_STEPS = 2
"""OLMo steps the paper calls late: "until the final 200k steps (3T to 4T)" = 3T->3.5T->4T (sec. 3.3)."""
PAPER_OOD_CONTAMINATION = ("ARCc", "MMLU")
"""Section 3.4 names ARC and MMLU as the OOD tests on which contamination collapses."""


# ---------------------------------------------------------------------------------------------
# Direction labelling (delegated to kit.mui.metric)


def direction_fn() -> Callable[..., str]:
    """``kit.mui.metric.direction`` (the project's single definition of the four directions)."""
    from kit.mui import metric as mui

    return mui.direction


def label_directions(d_perf: Iterable[float], d_mui: Iterable[float], tol_perf: float = 0.0,
                     tol_mui: float = 0.0) -> list[str]:
    """Direction of each (Δperf, ΔMUI) pair via ``kit.mui.metric.direction`` with the given tolerances.

    Inputs: two equal-length sequences of changes in percentage points. Output: one label per
    pair, from ``DIRECTIONS``. NaN changes (a missing value) are labelled ``"flat"``: nothing is
    asserted about a change we cannot see.
    """
    if tol_perf < 0 or tol_mui < 0:
        raise ValueError(f"tol_perf={tol_perf}, tol_mui={tol_mui}: tolerances must be >= 0")
    dp, dm = list(d_perf), list(d_mui)
    if len(dp) != len(dm):
        raise ValueError(f"d_perf has {len(dp)} values but d_mui has {len(dm)}; pass one pair per change")
    fn = direction_fn()
    out = []
    for p, m in zip(dp, dm):
        if p is None or m is None or (isinstance(p, float) and math.isnan(p)) or (
                isinstance(m, float) and math.isnan(m)):
            out.append("flat")
            continue
        label = fn(float(p), float(m), tol_perf=float(tol_perf), tol_mui=float(tol_mui))
        if label not in DIRECTIONS:
            raise ValueError(f"kit.mui.metric.direction returned {label!r}; expected one of {DIRECTIONS}")
        out.append(label)
    return out


def step_directions(points: pd.DataFrame, series: str | Sequence[str] = "task", order: str = "order",
                    label: str = "model", tol_perf: float = 0.0, tol_mui: float = 0.0) -> pd.DataFrame:
    """Direction of every consecutive step of each series (Figure 7/15: arrows between checkpoints).

    ``points``: one row per (series, checkpoint) with columns ``perf``, ``mui``, ``order`` (the
    training position: steps or tokens) and ``label`` (the checkpoint's name). Returns one row
    per step: the series columns, ``step`` (1-based within the series), ``from``, ``to``,
    ``perf_from, perf_to, mui_from, mui_to, d_perf, d_mui, direction``.
    """
    keys = [series] if isinstance(series, str) else list(series)
    _require(points, keys + [order, label, "perf", "mui"], "points")
    if points.duplicated(keys + [order]).any():
        dup = points[points.duplicated(keys + [order], keep=False)][keys + [order, label]]
        raise ValueError(f"points has several rows for the same series and {order!r}:\n{dup.head()}")
    rows = []
    for key, grp in points.sort_values(keys + [order]).groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        g = grp.reset_index(drop=True)
        for i in range(1, len(g)):
            a, b = g.iloc[i - 1], g.iloc[i]
            rows.append({**dict(zip(keys, key)), "step": i, "from": a[label], "to": b[label],
                         "perf_from": a["perf"], "perf_to": b["perf"], "mui_from": a["mui"],
                         "mui_to": b["mui"], "d_perf": _delta(b["perf"], a["perf"]), "d_mui": _delta(b["mui"], a["mui"])})
    cols = keys + ["step", "from", "to", "perf_from", "perf_to", "mui_from", "mui_to", "d_perf", "d_mui"]
    out = pd.DataFrame(rows, columns=cols)
    out["direction"] = label_directions(out["d_perf"], out["d_mui"], tol_perf, tol_mui)
    out["n_steps"] = out.groupby(keys)["step"].transform("max") if len(out) else []
    return out


def pair_directions(pairs: pd.DataFrame, tol_perf: float = 0.0, tol_mui: float = 0.0) -> pd.DataFrame:
    """Direction of each fine-tune relative to its base (Figure 5 / Table 9 / Table 10).

    ``pairs``: one row per (model, task) with ``perf, mui, base_perf, base_mui``. Returns a copy
    with ``d_perf = perf - base_perf``, ``d_mui = mui - base_mui`` and ``direction``.
    """
    _require(pairs, ["perf", "mui", "base_perf", "base_mui"], "pairs")
    out = pairs.copy()
    out["d_perf"] = _delta(out["perf"], out["base_perf"])
    out["d_mui"] = _delta(out["mui"], out["base_mui"])
    out["direction"] = label_directions(out["d_perf"], out["d_mui"], tol_perf, tol_mui)
    return out


def direction_counts(labelled: pd.DataFrame, by: str | Sequence[str] | None = None) -> pd.DataFrame:
    """How often each direction occurs, overall or per group: columns ``DIRECTIONS`` (+ ``total``).

    ``labelled`` has a ``direction`` column (from ``step_directions`` / ``pair_directions``).
    """
    _require(labelled, ["direction"], "labelled")
    if by is None:
        counts = labelled["direction"].value_counts().reindex(DIRECTIONS, fill_value=0)
        frame = counts.to_frame().T.reset_index(drop=True)
    else:
        keys = [by] if isinstance(by, str) else list(by)
        frame = (labelled.groupby(keys)["direction"].value_counts().unstack(fill_value=0)
                 .reindex(columns=list(DIRECTIONS), fill_value=0).reset_index())
    frame.columns.name = None
    frame["total"] = frame[list(DIRECTIONS)].sum(axis=1)
    return frame


def counts_dict(labelled: pd.DataFrame) -> dict[str, int]:
    """``{direction: count}`` over every direction (zeros included) and ``total``: for results.json."""
    c = labelled["direction"].value_counts() if len(labelled) else pd.Series(dtype=int)
    out = {d: int(c.get(d, 0)) for d in DIRECTIONS}
    out["total"] = int(len(labelled))
    return out


# ---------------------------------------------------------------------------------------------
# Published numbers (../shared/paper_tables), tidied to the shared schema


def published_checkpoints() -> pd.DataFrame:
    """Table 3 (appendix A.2): OLMo-2-7B checkpoints with their hub revision and Hugging Face name.

    Columns: ``checkpoint`` (paper's name, e.g. ``OLMo-2-7B-0.5T``), ``revision``
    (``stage1-step122000-tokens512B``; missing (NA) for the final model), ``hf_name``
    (``allenai/OLMo-2-1124-7B@<revision>``, the ``kit.load_model`` name), ``training_steps``,
    ``tokens_b``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table03_olmo_checkpoints")
    revision = [r if r.startswith("stage") else None for r in t["original_checkpoint_name"]]
    return pd.DataFrame({
        "checkpoint": t["checkpoint"],
        "revision": revision,
        "hf_name": [f"allenai/OLMo-2-1124-7B@{r}" if r else "allenai/OLMo-2-1124-7B" for r in revision],
        "training_steps": t["training_steps"].astype(int),
        "tokens_b": t["training_tokens_billion"].astype(float),
    })


def published_olmo() -> pd.DataFrame:
    """Table 8 (B.2): OLMo-2-7B checkpoints x benchmarks in the tidy schema.

    Columns: ``model`` (checkpoint name), ``order`` (training tokens, billions), ``task``
    (benchmark), ``group`` (printed category), ``split`` (``test``), ``perf``, ``mui``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table08_olmo_checkpoint_mui")
    return pd.DataFrame({
        "model": t["checkpoint"], "order": t["training_tokens_billion"].astype(float),
        "task": t["benchmark"], "group": t["benchmark_category"], "split": "test",
        "perf": t["performance"].astype(float), "mui": t["mui"].astype(float),
    })


def _published_pairs(table: pd.DataFrame, model_col: str, base_col: str, domain_of_model: dict[str, str | None]) -> pd.DataFrame:
    base_rows = table[table[model_col] == table[base_col]].set_index([model_col, "benchmark"])
    rows = table[table[model_col] != table[base_col]]
    out = []
    for _, r in rows.iterrows():
        b = base_rows.loc[(r[base_col], r["benchmark"])]
        dom = domain_of_model[r[model_col]]
        in_dom = dom is not None and r["benchmark"] in PAPER_DOMAIN_BENCHMARKS[dom]
        out.append({
            "model": r[model_col], "base": r[base_col], "target": dom, "task": r["benchmark"],
            "group": r["benchmark_category"], "split": "test",
            "domain": "in-domain" if in_dom else "ood",
            "perf": float(r["performance"]), "mui": float(r["mui"]),
            "base_perf": float(b["performance"]), "base_mui": float(b["mui"]),
        })
    return pd.DataFrame(out)


def published_specialised() -> pd.DataFrame:
    """Table 9 (B.2, Figure 5): each specialised model vs its base, one row per benchmark.

    Columns: ``model, base, target`` (``code``/``math``), ``task`` (benchmark), ``group``,
    ``split``, ``domain`` (``in-domain`` when the benchmark is of the specialised ability:
    GSM8K/MATH for math, HumanEval/MBPP for code; else ``ood``), ``perf, mui, base_perf, base_mui``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table09_specialised_models_mui")
    target = {m: (None if role == "base" else role.split("-")[0])
              for m, role in zip(t["model"], t["role"])}
    return _published_pairs(t, "model", "reference_base_model", target)


def published_contamination() -> pd.DataFrame:
    """Table 10 (B.3, Figure 8): each "-Leakage" model vs its original, one row per benchmark.

    Same columns as ``published_specialised``; ``target`` is the leaked test data (``math`` =
    GSM8K + MATH, ``code`` = HumanEval + MBPP), ``domain`` is ``in-domain`` on the leaked
    benchmarks, ``ood`` elsewhere.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table10_data_contamination_mui")
    target = {m: (None if leak == "none" else leak) for m, leak in zip(t["model"], t["leaked_test_data"])}
    return _published_pairs(t, "model", "base_model", target)


# ---------------------------------------------------------------------------------------------
# Corollaries 1 and 2 as checks on a labelled table


def corollary_checks(pretraining: pd.DataFrame | None = None, specialised: pd.DataFrame | None = None,
                     contamination: pd.DataFrame | None = None, late_steps: int = 2,
                     ood_tasks: Sequence[str] | None = None,
                     controls: pd.DataFrame | None = None,
                     uncontaminated: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's direction claims, each checked on a labelled table.

    - Corollary 1, pre-training (sec. 3.3): ``accumulating`` dominates the early steps, ``evolving``
      the late steps, the last ``late_steps`` of each series (OLMo: 3T -> 3.5T -> 4T).
    - Corollary 1, specialisation (sec. 3.3, Fig. 5): ``accumulating`` in domain, ``coarsening`` OOD.
    - Corollary 2, contamination (sec. 3.4, Fig. 8): ``accumulating`` on the contaminated data
      ("both higher MUI and performance"), ``collapsing`` OOD (restricted to ``ood_tasks`` when given,
      the paper's ARC and MMLU, as an extra row beside all OOD tasks).
    - Corollary 2, specificity (sec. 3.3: collapsing is "only observed when data contamination
      occurs"): uncontaminated ``controls`` should *not* collapse OOD; expected ``not collapsing``
      (share = changes that are not collapsing; agrees when collapsing is not the most frequent).
    - Corollary 2, "only under contamination" read strictly: ``uncontaminated`` fine-tunes (e.g. the
      paper's own specialised models of Table 9) must show NO collapsing OOD change; expected
      ``no collapsing``, ``disagrees`` as soon as one change collapses.

    Inputs: outputs of ``step_directions`` (with ``step``/``n_steps``) and ``pair_directions``
    (with ``domain``). Returns one row per claim: ``corollary, setting, subset, expected, n,
    n_expected, share_expected, modal`` (most frequent direction; ties joined by ``/``) and
    ``verdict``: ``agrees`` (the expected direction is the single most frequent), ``tied`` (it
    shares the top count), ``disagrees``, or ``no data`` (empty subset, n = 0).
    """
    rows = []

    def add(corollary: str, setting: str, subset: str, expected: tuple[str, ...], labelled: pd.DataFrame):
        n = len(labelled)
        counts = labelled["direction"].value_counts() if n else pd.Series(dtype=int)
        hits = int(sum(counts.get(e, 0) for e in expected))
        top = counts.max() if n else 0
        modal = sorted((d for d in counts.index if counts[d] == top), key=DIRECTIONS.index) if n else []
        negated = expected in (("not collapsing",), ("no collapsing",))
        if negated:
            hits = n - int(counts.get("collapsing", 0))
        if not n:
            verdict = "no data"
        elif expected == ("no collapsing",):
            verdict = "agrees" if hits == n else "disagrees"
        elif negated:
            verdict = "disagrees" if "collapsing" in modal else "agrees"
        elif any(e in modal for e in expected):
            verdict = "agrees" if len(modal) == 1 else "tied"
        else:
            verdict = "disagrees"
        rows.append({
            "corollary": corollary, "setting": setting, "subset": subset, "expected": "/".join(expected),
            "n": n, "n_expected": hits, "share_expected": hits / n if n else float("nan"),
            "modal": "/".join(modal), "verdict": verdict,
        })

    if pretraining is not None and len(pretraining):
        late = pretraining["step"] > pretraining["n_steps"] - late_steps
        add("1", "pre-training", "early steps", ("accumulating",), pretraining[~late])
        add("1", "pre-training", "late steps", ("evolving",), pretraining[late])
    if specialised is not None and len(specialised):
        add("1", "specialisation", "in-domain", ("accumulating",), specialised[specialised["domain"] == "in-domain"])
        add("1", "specialisation", "ood", ("coarsening",), specialised[specialised["domain"] == "ood"])
    if contamination is not None and len(contamination):
        add("2", "contamination", "in-domain", ("accumulating",),
            contamination[contamination["domain"] == "in-domain"])
        ood = contamination[contamination["domain"] == "ood"]
        add("2", "contamination", "ood", ("collapsing",), ood)
        if ood_tasks is not None:
            add("2", "contamination", f"ood ({', '.join(ood_tasks)})", ("collapsing",),
                ood[ood["task"].isin(list(ood_tasks))])
    if controls is not None and len(controls):
        add("2", "uncontaminated controls", "ood", ("not collapsing",), controls[controls["domain"] == "ood"])
    if uncontaminated is not None and len(uncontaminated):
        add("2", "uncontaminated fine-tunes", "ood (strict)", ("no collapsing",),
            uncontaminated[uncontaminated["domain"] == "ood"])
    return pd.DataFrame(rows, columns=["corollary", "setting", "subset", "expected", "n", "n_expected",
                                       "share_expected", "modal", "verdict"])


# ---------------------------------------------------------------------------------------------
# Regression testing (Corollary 1 as a tool)


def regression_report(series: pd.DataFrame, tol_perf: float = 0.0, tol_mui: float = 0.0,
                      checkpoint: str = "checkpoint", task: str = "task", order: str | None = None,
                      detail: bool = False) -> pd.DataFrame:
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
        raise ValueError(f"series: tasks lack checkpoints {gaps}; give every task a row per checkpoint")
    s = series.copy()
    if order is None:
        first = {c: i for i, c in enumerate(pd.unique(s[checkpoint]))}
        s["_order"] = s[checkpoint].map(first)
        order = "_order"
    steps = step_directions(s, series=task, order=order, label=checkpoint, tol_perf=tol_perf, tol_mui=tol_mui)
    steps["takeaway"] = steps["direction"].map(TAKEAWAY_OF_DIRECTION)
    if detail:
        return steps
    rows = []
    for (step, a, b), g in steps.groupby(["step", "from", "to"], sort=True):
        counts = g["direction"].value_counts()
        worst = max(g["takeaway"], key=TAKEAWAYS.index)
        flagged = [f"{t}:{d}" for t, d in zip(g[task], g["direction"]) if TAKEAWAY_OF_DIRECTION[d] != "continue"]
        rows.append({"from": a, "to": b, "n_tasks": len(g), **{d: int(counts.get(d, 0)) for d in DIRECTIONS},
                     "flagged": ", ".join(flagged), "takeaway": worst, "reason": _reason(counts)})
    return pd.DataFrame(rows, columns=["from", "to", "n_tasks", *DIRECTIONS, "flagged", "takeaway", "reason"])


def _reason(counts: pd.Series) -> str:
    c = {d: int(counts.get(d, 0)) for d in DIRECTIONS}
    if c["collapsing"]:
        return "collapsing: halt training, inspect training and test sets for overfitting/contamination"
    if c["coarsening"] and c["accumulating"]:
        return "accumulating with coarsening: rebalance the data mix by the evaluation's categories"
    if c["coarsening"]:
        return "coarsening: an ability degrades while MUI grows; rebalance the data mix"
    if c["accumulating"]:
        return "accumulating: insufficient training, continue"
    if c["evolving"]:
        return "evolving: the ideal direction, continue"
    return "no change beyond tolerance"


# ---------------------------------------------------------------------------------------------
# The tiny world: which members form which setting, and their measurements


_STEP = re.compile(r"^(?P<base>[^@+]+)@step-(?P<step>\d+)$")


def checkpoint_series(members: Sequence[str], base: str | None = None,
                      final_step: int | None = None) -> list[str]:
    """The checkpoint trajectory of ``base`` (default: the base with the most ``@step-`` members, ties
    to the first listed),
    in step order, followed by the final ``base`` itself when it is a member, unless its last
    checkpoint already is the final model (``final_step``, the base's total steps, equals it):
    the same weights twice would add a zero step.

    ``members``: names like ``zoo/base-l@step-300``. Raises if no checkpoint member exists.
    """
    by_base: dict[str, list[tuple[int, str]]] = {}
    for m in members:
        hit = _STEP.match(m)
        if hit:
            by_base.setdefault(hit["base"], []).append((int(hit["step"]), m))
    if not by_base:
        raise ValueError(f"no '<base>@step-<N>' checkpoint among the members: {', '.join(members)}")
    if base is None:  # ties: the base listed first (zoo/base-l before zoo/base-xl, which has as many)
        order = list(by_base)
        base = max(by_base, key=lambda b: (len(by_base[b]), -order.index(b)))
    if base not in by_base:
        raise ValueError(f"base={base!r} has no checkpoints; bases with checkpoints: {', '.join(sorted(by_base))}")
    steps = sorted(by_base[base])
    names = [m for _, m in steps]
    last_is_final = final_step is not None and steps[-1][0] == final_step
    return names + ([base] if base in members and not last_is_final else [])


def coarse_checkpoints(names: Sequence[str], n: int = 3) -> list[str]:
    """``n`` checkpoints evenly spaced over a training-ordered series, first and last included.

    Per-step changes of a short run are often within evaluation noise; the paper's own OLMo
    checkpoints are 0.5T apart. Comparing a few far-apart checkpoints shows the trend.
    """
    if n < 2:
        raise ValueError(f"n={n}: a trajectory needs at least 2 checkpoints")
    names = list(names)
    if len(names) <= n:
        return names
    idx = sorted({int(i * (len(names) - 1) / (n - 1) + 0.5) for i in range(n)})  # half up, not banker's
    return [names[i] for i in idx]


def finetune_pairs(members: Sequence[str], kind: str) -> dict[str, str]:
    """``{fine-tune: base}`` for one setting of the zoo.

    ``kind``: ``specialised`` (``<base>+math``, ``<base>+code``), ``contaminated``
    (``<base>+<x>-test-x1|x5``, ``<base>+<x>-syn-x1|x5``) or ``control`` (``+<x>-train``,
    ``+other-task``, ``+general``). Only fine-tunes whose base is a member are returned.
    """
    allowed = ("specialised", "contaminated", "control")
    if kind not in allowed:
        raise ValueError(f"kind={kind!r}; allowed values: {', '.join(allowed)}")
    out = {}
    for m in members:
        if "+" not in m or "@" in m:
            continue
        base, suffix = m.split("+", 1)
        if base not in members:
            continue
        if kind == "specialised" and suffix in ("math", "code"):
            out[m] = base
        elif kind == "contaminated" and re.fullmatch(r"[\w-]+-(test|syn)-x\d+", suffix):
            out[m] = base
        elif kind == "control" and (suffix.endswith("-train") or suffix in ("other-task", "general")):
            out[m] = base
    return out


def specialised_target(name: str) -> str:
    """Capability group a specialised fine-tune targets: ``zoo/base-m+math`` -> ``math``."""
    if "+" not in name:
        raise ValueError(f"cannot tell which group {name!r} is specialised in: name it '<base>+<group>' "
                         "or give specialised_targets: {model: group}")
    return name.split("+", 1)[1]


HUB_TASK_GROUPS: dict[str, str] = {
    "gsm8k": "math", "math500": "math", "svamp": "math", "mawps": "math", "asdiv": "math",
    "humaneval": "code", "mbpp": "code", "arc_challenge": "reasoning", "bbh": "reasoning", "mmlu": "general",
}
"""Capability group of the real benchmarks (``bbh/<task>`` -> ``bbh``), for in-domain / OOD labels."""


def task_group(task: str) -> str:
    """Group of a tiny-world task (``kit.world.get_task(task).group``) or of a real benchmark."""
    base = task.split("/", 1)[0]
    if base in HUB_TASK_GROUPS:
        return HUB_TASK_GROUPS[base]
    from kit import world as kworld

    return kworld.get_task(task).group


def measure(models: Sequence[str], tasks: Sequence[str], splits: Sequence[str] = ("test", "fresh"),
            n_items: int = 100, world: str | None = None, device: str = "cpu", seed: int = 0,
            score: str = "score", threshold: str = "topk", max_new_tokens: int = 1,
            batch_size: int = 32, dtype: str | None = None, max_batch_tokens: int = 8192) -> pd.DataFrame:
    """Performance and MUI of every model on every task and split, one model in memory at a time
    (load, measure every task, free).

    Zoo models (``zoo/...``) on tiny-world tasks: exact-match accuracy (the greedy next token
    equals the one-token target, as ``kit.world.evaluate``) on ``n_items`` items of each split, and
    MUI (``kit.mui.metric.utilization_for_items``, ``batch_size`` rows a pass) over the model's own
    greedy responses (``kit.world.respond``) to the same items. Real models (Hugging Face ids with
    ``@revision``, local directories, twins) on real benchmarks (``kit.load_benchmark`` names, ``test``
    split only), loaded in ``dtype``: greedy responses of ``max_new_tokens`` tokens by batched
    generation with the chat template when the tokenizer has one (``kit.models.generate.respond``)
    scored by ``kit.data.scorers.score``, and MUI from teacher-forced passes over prompt + response
    in batches of at most ``max_batch_tokens`` padded tokens (``kit.models.internals.mui_key_neurons``);
    responses and per-item key neurons are cached per (model, benchmark, settings), so a killed run
    resumes. Performance and MUI in percent. Returns the tidy schema: ``model, task, group, split,
    n, perf, mui`` (one row per model, task and split).
    """
    from tqdm.auto import tqdm

    from kit.models.generate import release
    from kit.models.load import load_model

    allowed = ("test", "fresh", "test-syn", "fresh-syn", "train")
    for split in splits:
        if split not in allowed:
            raise ValueError(f"splits: {split!r} is not a split; allowed values: {', '.join(allowed)}")
    if not models or not tasks:
        raise ValueError(f"measure needs models and tasks (got {len(models)} models, {len(tasks)} tasks)")
    groups = {t: task_group(t) for t in tasks}
    item_cache: dict[tuple[bool, str, str], list] = {}
    rows = []
    for name in tqdm(list(dict.fromkeys(models)), desc="models"):
        zoo = name.startswith("zoo/")
        model = load_model(name, device=device, world=world, **({} if zoo else {"dtype": dtype}))
        try:
            for t in tasks:
                for s in splits:
                    key = (zoo, t, s)
                    if key not in item_cache:
                        item_cache[key] = _items(zoo, t, s, n_items, seed)
                    its = item_cache[key]
                    if zoo:
                        correct, responses = _answer(True, model, t, its, max_new_tokens)
                        mui = float(_zoo_mui(model, its, responses, score, threshold, batch_size))
                    else:
                        correct, mui = _measure_real(model, t, its, max_new_tokens, score, threshold, max_batch_tokens)
                    rows.append({"model": name, "task": t, "group": groups[t], "split": s, "n": len(its),
                                 "perf": 100.0 * float(np.mean(correct)), "mui": mui})
        finally:
            del model
            release()  # the Hugging Face copy that generated, and the GPU cache: one model at a time
    return pd.DataFrame(rows, columns=["model", "task", "group", "split", "n", "perf", "mui"])


def _zoo_mui(model, items: list, responses: list[str], score: str, threshold: str, batch_size: int) -> float:
    """MUI (%) of a zoo model on its responses (``kit.mui.metric.utilization_for_items``)."""
    from kit.mui import metric as kmui

    return kmui.utilization_for_items(model, items, responses, score=score, threshold=threshold,
                                      batch_size=batch_size).mui


def _items(zoo: bool, task: str, split: str, n: int, seed: int) -> list:
    if zoo:
        from kit import world as kworld

        return kworld.get_task(task).items(split, n, seed)
    if split != "test":
        raise ValueError(f"split {split!r}: real benchmarks have only the public 'test' split here; set splits: [test]")
    from kit import load_benchmark

    return list(load_benchmark(task, split="test", limit=n))


def _answer(zoo: bool, model, task: str, items: list, max_new_tokens: int) -> tuple[np.ndarray, list[str]]:
    """Correctness and responses of a zoo model (``zoo=True``) or of a real model (batched
    generation by its Hugging Face copy, cached per model, benchmark and settings)."""
    if zoo:
        from kit import world as kworld

        # Every tiny-world answer is one token and kit.world.evaluate is exact match of the greedy
        # next token, i.e. of the response's first word: reading it off the responses we need for
        # MUI anyway saves a third of the forward passes.
        responses = list(kworld.respond(model, items, max_new_tokens=max_new_tokens))
        correct = np.array([(r.split()[:1] or [""])[0] == it.target for it, r in zip(items, responses)], dtype=bool)
        return correct, responses
    from kit.data.scorers import score as score_response
    from kit.models.generate import GenerationSettings, respond

    responses = respond(model, [it.prompt for it in items], GenerationSettings(max_new_tokens=max_new_tokens),
                        benchmark=task, ids=[it.id for it in items])
    return np.array([bool(score_response(task, it, r)) for it, r in zip(items, responses)], dtype=bool), responses


def _measure_real(model, task: str, items: list, max_new_tokens: int, score: str, threshold: str,
                  max_batch_tokens: int) -> tuple[np.ndarray, float]:
    """Correctness and MUI (%) of a real model: responses from :func:`_answer`, key neurons from
    teacher-forced passes batched by ``max_batch_tokens`` with the prompt shown as it was when
    responding (the chat template when the tokenizer has one), cached per item."""
    from kit.models.internals import cached_items_mui

    correct, responses = _answer(False, model, task, items, max_new_tokens)
    return correct, cached_items_mui(model, items, responses, task,
                                     {"responses": {"max_new_tokens": max_new_tokens, "greedy": True, "chat": None},
                                      "score": score, "threshold": threshold},
                                     max_batch_tokens, chat=None, score=score, threshold=threshold)


def tiny_pairs(measurements: pd.DataFrame, pairs: dict[str, str], domain_of: Callable[[str, pd.Series], str]) -> pd.DataFrame:
    """Fine-tune rows joined with their base's row on the same task and split.

    ``measurements``: output of ``measure``; ``pairs``: ``{fine-tune: base}``; ``domain_of(model,
    row)`` names the row's domain (e.g. ``in-domain`` / ``ood``). Returns the pair schema of
    ``published_specialised`` (``model, base, task, group, split, domain, perf, mui, base_perf,
    base_mui``), ready for ``pair_directions``.
    """
    _require(measurements, ["model", "task", "split", "perf", "mui"], "measurements")
    base = measurements.set_index(["model", "task", "split"])
    missing = sorted({b for b in pairs.values() if b not in set(measurements["model"])})
    if missing:
        raise ValueError(f"bases {missing} were not measured; measure them together with their fine-tunes")
    rows = measurements[measurements["model"].isin(list(pairs))].copy()
    rows["base"] = rows["model"].map(pairs)
    idx = list(zip(rows["base"], rows["task"], rows["split"]))
    rows["base_perf"] = base.loc[idx, "perf"].to_numpy()
    rows["base_mui"] = base.loc[idx, "mui"].to_numpy()
    rows["domain"] = [domain_of(m, r) for m, (_, r) in zip(rows["model"], rows.iterrows())]
    return rows.reset_index(drop=True)


def contamination_domain(contaminated_tasks: Sequence[str],
                         leaked_groups: Iterable[str] | None = None) -> Callable[[str, pd.Series], str]:
    """``domain_of`` for contaminated fine-tunes: ``in-domain`` on a leaked task, ``in-group`` on
    the other tasks of a leaked task's group, ``ood`` on every other group. ``leaked_groups``
    defaults to ``task_group`` of each leaked task."""
    leaked = set(contaminated_tasks)
    leaked_groups = set(leaked_groups) if leaked_groups is not None else {task_group(t) for t in leaked}

    def domain_of(model: str, row: pd.Series) -> str:
        if row["task"] in leaked:
            return "in-domain"
        return "in-group" if row["group"] in leaked_groups else "ood"

    return domain_of


def specialised_domain(targets: dict[str, str] | None = None) -> Callable[[str, pd.Series], str]:
    """``domain_of`` for specialised fine-tunes: ``in-domain`` on the targeted group, else ``ood``.
    ``targets``: fine-tune -> group; missing fine-tunes use their ``+<group>`` name suffix."""
    targets = dict(targets or {})

    def domain_of(model: str, row: pd.Series) -> str:
        target = targets.get(model) or specialised_target(model)
        return "in-domain" if row["group"] == target else "ood"

    return domain_of


@dataclass
class Settings:
    """Which models form which setting, resolved from a config and the world's members."""

    checkpoints: list[str]
    """Checkpoint trajectory in training order."""
    specialised: dict[str, str]
    """Specialised fine-tune -> base."""
    specialised_targets: dict[str, str]
    """Specialised fine-tune -> targeted group."""
    contaminated: dict[str, str]
    """Contaminated fine-tune -> base."""
    controls: dict[str, str]
    """Uncontaminated fine-tune -> base."""
    contaminated_tasks: list[str]
    """Tasks whose test split leaked."""
    tasks: list[str]
    """Tasks evaluated."""

    def models(self) -> list[str]:
        """Every model to measure, each once, bases included."""
        names = list(self.checkpoints)
        for pairs in (self.specialised, self.contaminated, self.controls):
            for ft, base in pairs.items():
                names += [base, ft]
        return list(dict.fromkeys(names))


def resolve_settings(cfg) -> Settings:
    """Fill every ``None`` of a training-trajectories config from ``kit.world`` (members of
    ``cfg.world``, ``CONTAMINATED_TASK``, ``TASKS``); explicit lists and maps are kept as given."""
    needs_world = any(v is None for v in (cfg.checkpoints, cfg.specialised, cfg.contaminated, cfg.controls,
                                          cfg.contaminated_tasks, cfg.tasks))
    members: list[str] = []
    if needs_world:
        from kit import world as kworld

        members = list(kworld.members(cfg.world))
    if cfg.checkpoints is not None:
        checkpoints = list(cfg.checkpoints)
    else:
        has_steps = any(_STEP.match(m) for m in members)
        checkpoints = checkpoint_series(members) if has_steps else []  # a world without checkpoints: no trajectory
        if checkpoints and checkpoints[-1] in members and "@" not in checkpoints[-1]:
            from kit import world as kworld

            final = kworld.member_info(checkpoints[-1], cfg.world).get("step")
            checkpoints = checkpoint_series(members, final_step=final)
    specialised = dict(cfg.specialised) if cfg.specialised is not None else finetune_pairs(members, "specialised")
    targets = dict(cfg.specialised_targets or {})
    targets.update({m: specialised_target(m) for m in specialised if m not in targets})
    if cfg.contaminated_tasks is not None:
        leaked = list(cfg.contaminated_tasks)
    else:
        from kit import world as kworld

        leaked = [kworld.CONTAMINATED_TASK]
    if cfg.tasks is not None:
        tasks = list(cfg.tasks)
    else:
        from kit import world as kworld

        tasks = list(kworld.TASKS)
    # the leaked task is what the contamination analysis is about: always measure it
    tasks += [t for t in leaked if t not in tasks]
    return Settings(
        checkpoints=checkpoints, specialised=specialised, specialised_targets=targets,
        contaminated=dict(cfg.contaminated) if cfg.contaminated is not None else finetune_pairs(members, "contaminated"),
        controls=dict(cfg.controls) if cfg.controls is not None else finetune_pairs(members, "control"),
        contaminated_tasks=leaked, tasks=tasks,
    )


def analyse(measurements: pd.DataFrame, settings: Settings, tol_perf: float = 0.0,
            tol_mui: float = 0.0) -> dict[str, pd.DataFrame]:
    """Directions of every setting from one measurement table (output of ``measure``).

    Returns ``{"pretraining": step_directions per (task, split), "specialised", "contaminated",
    "controls": pair_directions}``; an empty setting gives an empty frame.
    """
    out: dict[str, pd.DataFrame] = {}
    leaked_groups = set(measurements.loc[measurements["task"].isin(settings.contaminated_tasks), "group"])
    order = {m: i for i, m in enumerate(settings.checkpoints)}
    pts = measurements[measurements["model"].isin(list(order))].copy()
    pts["order"] = pts["model"].map(order)
    out["pretraining"] = step_directions(pts, series=["task", "split"], order="order", label="model",
                                         tol_perf=tol_perf, tol_mui=tol_mui)
    for name, pairs, dom in (
        ("specialised", settings.specialised, specialised_domain(settings.specialised_targets)),
        ("contaminated", settings.contaminated, contamination_domain(settings.contaminated_tasks, leaked_groups)),
        ("controls", settings.controls, contamination_domain(settings.contaminated_tasks, leaked_groups)),
    ):
        if pairs:
            out[name] = pair_directions(tiny_pairs(measurements, pairs, dom), tol_perf, tol_mui)
        else:
            out[name] = pd.DataFrame(columns=["model", "base", "task", "group", "split", "domain", "perf", "mui",
                                              "base_perf", "base_mui", "d_perf", "d_mui", "direction"])
    return out


# ---------------------------------------------------------------------------------------------
# Figures


def plot_trajectories(points: pd.DataFrame, steps: pd.DataFrame, series: str = "task", label: str = "model",
                      order: str = "order", ncols: int = 4, short: Callable[[str], str] | None = None,
                      title: str | None = None):
    """Figure 7/15 analogue: per series, checkpoints in the (MUI, performance) plane joined by
    arrows coloured by their direction. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = list(pd.unique(points.sort_values(order)[series])) if len(points) else []
    if not names:
        return _empty_figure(title or "no checkpoint trajectory")
    ncols = max(1, min(ncols, len(names)))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.7 * nrows), squeeze=False)
    short = short or (lambda s: s)
    for ax, name in zip(axes.flat, names):
        p = points[points[series] == name].sort_values(order)
        ax.scatter(p["mui"], p["perf"], s=14, color="black", zorder=3)
        for _, r in p.iloc[[0, -1]].iterrows():
            ax.annotate(short(str(r[label])), (r["mui"], r["perf"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
        for _, st in steps[steps[series] == name].iterrows():
            ax.annotate("", xy=(st["mui_to"], st["perf_to"]), xytext=(st["mui_from"], st["perf_from"]),
                        arrowprops=dict(arrowstyle="->", color=DIRECTION_COLORS[st["direction"]], lw=1.4))
        ax.set_title(str(name))
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
        ax.margins(0.15)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles = [Line2D([], [], color=DIRECTION_COLORS[d], lw=2, label=d) for d in DIRECTIONS]
    fig.legend(handles=handles, loc="lower center", ncol=len(DIRECTIONS), frameon=False, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def plot_pairs(pairs: pd.DataFrame, ncols: int = 3, title: str | None = None):
    """Figure 5 / 8 analogue: per fine-tune, an arrow from its base to it on every task in the
    (MUI, performance) plane, coloured by direction; solid in domain, dashed out of domain.
    ``pairs`` is the output of ``pair_directions``. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    models = list(pd.unique(pairs["model"])) if len(pairs) else []
    if not models:
        return _empty_figure(title or "no fine-tune pairs")
    ncols = max(1, min(ncols, len(models)))
    nrows = math.ceil(len(models) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 3.0 * nrows), squeeze=False)
    for ax, m in zip(axes.flat, models):
        g = pairs[pairs["model"] == m]
        for _, r in g.iterrows():
            style = "-" if r["domain"] == "in-domain" else (":" if r["domain"] == "in-group" else "--")
            ax.annotate("", xy=(r["mui"], r["perf"]), xytext=(r["base_mui"], r["base_perf"]),
                        arrowprops=dict(arrowstyle="->", color=DIRECTION_COLORS[r["direction"]], lw=1.3,
                                        linestyle=style))
            ax.scatter([r["base_mui"]], [r["base_perf"]], s=8, color="black", zorder=3)
            # the fine-tune's point too, so the axes' autoscaling includes every arrow head
            ax.scatter([r["mui"]], [r["perf"]], s=6, color=DIRECTION_COLORS[r["direction"]], zorder=3)
            ax.annotate(str(r["task"]), (r["mui"], r["perf"]), fontsize=6, xytext=(2, 2), textcoords="offset points")
        ax.set_title(f"{g['base'].iloc[0]} → {m}", fontsize=7)
        ax.set_xlabel("MUI (%)")
        ax.set_ylabel("performance (%)")
        ax.margins(0.15)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    handles = [Line2D([], [], color=DIRECTION_COLORS[d], lw=2, label=d) for d in DIRECTIONS]
    handles += [Line2D([], [], color="black", ls="-", label="in-domain"),
                Line2D([], [], color="black", ls="--", label="ood")]
    if (pairs["domain"] == "in-group").any():
        handles.append(Line2D([], [], color="black", ls=":", label="in-group"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _empty_figure(message: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{message}: nothing to plot", ha="center", va="center")
    return fig


def plot_direction_counts(counts: dict[str, dict[str, int]], title: str | None = None):
    """Stacked bars of direction shares per setting; ``counts`` maps setting -> ``counts_dict``."""
    import matplotlib.pyplot as plt

    settings = list(counts)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(settings) + 1.5), 3.0))
    bottom = np.zeros(len(settings))
    for d in DIRECTIONS:
        share = np.array([counts[s].get(d, 0) / max(1, counts[s].get("total", 0)) for s in settings])
        ax.bar(settings, share, bottom=bottom, color=DIRECTION_COLORS[d], label=d)
        bottom += share
    ax.set_ylabel("share of changes")
    ax.set_ylim(0, 1)
    ax.tick_params(axis="x", rotation=35)
    for lab in ax.get_xticklabels():
        lab.set_ha("right")
    ax.legend(fontsize=7, bbox_to_anchor=(1.0, 1.0), loc="upper left", frameon=False)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Findings


def corollary_findings(checks: dict[str, pd.DataFrame], reference: str | None = None) -> list[str]:
    """Plain-language findings: each corollary claim on each source, and where they differ.

    ``checks``: source name (``"paper tables"``, ``"tiny world, test split"``...) -> output of
    ``corollary_checks``; ``reference`` (default: the first source) is compared with every other
    source claim by claim. Every number is read from the tables.
    """
    if not checks:
        raise ValueError("checks is empty: pass {source name: corollary_checks(...)}")
    reference = reference or next(iter(checks))
    if reference not in checks:
        raise ValueError(f"reference={reference!r}; allowed values: {', '.join(checks)}")
    lines = ["Corollary checks (expected direction: changes with it / all changes; most frequent direction -> verdict):"]
    for name, frame in checks.items():
        lines.append(f"  {name}:")
        for _, r in frame.iterrows():
            if r["n"] == 0:
                lines.append(f"    C{r['corollary']} {r['setting']} / {r['subset']}: no changes to check")
                continue
            lines.append(
                f"    C{r['corollary']} {r['setting']} / {r['subset']}: expected {r['expected']}: "
                f"{r['n_expected']}/{r['n']} ({100 * r['share_expected']:.0f}%); most frequent {r['modal']} "
                f"-> {r['verdict'].upper()}")
    ref = checks[reference]
    for name, frame in checks.items():
        if name == reference or not len(frame) or not len(ref):
            continue
        both = ref.merge(frame, on=["corollary", "setting", "subset"], suffixes=("_ref", "_other"))
        both = both[(both["n_ref"] > 0) & (both["n_other"] > 0)]
        differ = [f"C{r['corollary']} {r['setting']} / {r['subset']} ({reference}: {r['verdict_ref']}, "
                  f"{name}: {r['verdict_other']})" for _, r in both.iterrows() if r["verdict_ref"] != r["verdict_other"]]
        lines.append(f"  {name} vs {reference}: same verdict on {len(both) - len(differ)} of {len(both)} claims"
                     + (f"; different on {'; '.join(differ)}." if differ else "."))
    return lines


def contamination_text(contaminated: pd.DataFrame, controls: pd.DataFrame | None = None) -> str:
    """Corollary 2 on measured pairs, in words: per fine-tune and split, the leaked task's change
    (performance, MUI, direction) and the share of OOD tasks moving in the collapsing direction,
    with the uncontaminated controls beside them.

    Inputs: ``pair_directions`` outputs with ``model, task, split, domain`` (``analyse``'s
    ``contaminated`` / ``controls``).
    """
    lines = []
    for kind, frame in (("contaminated", contaminated), ("control", controls)):
        if frame is None or not len(frame):
            lines.append(f"  no {kind} fine-tunes measured")
            continue
        for (model, split), g in frame.groupby(["model", "split"], sort=False):
            ind = g[g["domain"] == "in-domain"]
            ood = g[g["domain"] == "ood"]
            leaked = "; ".join(
                f"{r['task']} {r['base_perf']:.1f}->{r['perf']:.1f}% perf, MUI {r['base_mui']:.2f}->{r['mui']:.2f}% "
                f"({r['direction']})" for _, r in ind.iterrows()) or "leaked task not measured"
            n_col = int((ood["direction"] == "collapsing").sum())
            lines.append(f"  {kind} {model} [{split}]: {leaked}; OOD collapsing on {n_col}/{len(ood)} tasks"
                         + (f" (mean Δperf {ood['d_perf'].mean():+.1f}, ΔMUI {ood['d_mui'].mean():+.2f})" if len(ood) else ""))
    return "Contamination (Corollary 2), leaked task and out-of-domain tasks:\n" + "\n".join(lines)


def _delta(new, old):
    # Rounded so that float noise (0.30000000000000004 - 0.3) never turns an unchanged value into
    # a direction when the tolerance is zero; 1e-9 points is far below any printed precision.
    return np.round(np.asarray(new, dtype=float) - np.asarray(old, dtype=float), 9) if not np.isscalar(new) \
        else round(float(new) - float(old), 9)


def _require(df: pd.DataFrame, cols: Sequence[str], name: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(df.columns)}")


# --------------------------------------------------------------------------- notebook sections (notebook 02)


def published_section(olmo_steps: pd.DataFrame, specialised: pd.DataFrame, contamination: pd.DataFrame,
                      tol_perf: float, tol_mui: float):
    """Part 1: the corollary checks and direction counts of the paper's own tables (Tables 8-10)."""
    from kit.core.findings import Section

    checks = corollary_checks(olmo_steps, specialised, contamination, late_steps=PAPER_LATE_STEPS,
                              ood_tasks=PAPER_OOD_CONTAMINATION, uncontaminated=specialised)
    late = olmo_steps["step"] > olmo_steps["n_steps"] - PAPER_LATE_STEPS
    sp, co = specialised, contamination
    counts = {
        "pretraining_all": counts_dict(olmo_steps),
        "pretraining_early": counts_dict(olmo_steps[~late]),
        "pretraining_late": counts_dict(olmo_steps[late]),
        "specialised_in_domain": counts_dict(sp[sp["domain"] == "in-domain"]),
        "specialised_ood": counts_dict(sp[sp["domain"] == "ood"]),
        "contamination_in_domain": counts_dict(co[co["domain"] == "in-domain"]),
        "contamination_ood": counts_dict(co[co["domain"] == "ood"]),
        "contamination_ood_arc_mmlu": counts_dict(co[co["task"].isin(PAPER_OOD_CONTAMINATION)]),
    }
    # item 8: "collapsing is only observed when data contamination occurs" (sec. 3.3), on the paper's own Table 9
    sp_ood = sp[sp["domain"] == "ood"]
    col = sp_ood[sp_ood["direction"] == "collapsing"]
    finding = (f"Item 8, paper tables: {len(col)} of {len(sp_ood)} OOD changes of the uncontaminated specialised models "
               f"(Table 9) are collapsing" + (f" ({', '.join(f'{r.model} on {r.task}' for r in col.itertuples())})" if len(col) else "")
               + f" -> the claim that collapsing occurs only under contamination is "
               + ("contradicted by the paper's own table." if len(col) else "consistent with the paper's own table."))
    return Section(record={"published_direction_counts": counts,
                           "published_corollary_checks": checks.to_dict(orient="records"),
                           "published_tolerance": {"perf": tol_perf, "mui": tol_mui},
                           "published_uncontaminated_ood_collapsing": {"n": int(len(col)), "of": int(len(sp_ood))}},
                   findings=[finding], tables={"checks": checks}, data={"checks": checks, "counts": counts})


def source_label(models: Sequence[str]) -> str:
    """What part 2 measured, for titles and check names: ``tiny world`` (zoo members) or
    ``measured`` (real models: Hugging Face ids, directories, twins)."""
    return "tiny world" if all(str(m).startswith("zoo/") for m in models) else "measured"


def checkpoint_section(measurements: pd.DataFrame, pretraining: pd.DataFrame, checkpoints: Sequence[str], cfg):
    """Part 2, checkpoints: the direction of every step per split, the same over a few evenly spaced
    checkpoints (``cfg.coarse_checkpoints``), and the regression report over the checkpoints."""
    from kit.core.findings import Section

    order = {m: i for i, m in enumerate(checkpoints)}
    points = measurements[measurements["model"].isin(list(order))].assign(order=lambda d: d["model"].map(order))
    short = lambda name: name.split("@")[-1].replace("zoo/", "")  # noqa: E731
    src = source_label(checkpoints or list(measurements["model"]))
    sec = Section()
    for split in cfg.splits:
        st = pretraining[pretraining["split"] == split]
        if len(st):
            sec.tables[f"every step, {split} split"] = st.assign(to=st["to"].map(short)).pivot(
                index="task", columns="step", values="direction")
        sec.figures[f"tiny_checkpoints_{split}"] = plot_trajectories(
            points[points["split"] == split], st, series="task", label="model", short=short,
            title=f"{src} checkpoints, {split} split")
    coarse = coarse_checkpoints(checkpoints, cfg.coarse_checkpoints)
    coarse_points = points[points["model"].isin(coarse)]
    pre_coarse = step_directions(coarse_points, series=["task", "split"], order="order", label="model",
                                 tol_perf=cfg.tol_perf, tol_mui=cfg.tol_mui)
    for split in cfg.splits:
        st = pre_coarse[pre_coarse["split"] == split]
        if len(st):
            sec.tables[f"{len(coarse)} checkpoints {[short(c) for c in coarse]}, {split} split"] = st.assign(
                to=st["to"].map(short)).pivot(index="task", columns="to", values="direction")[[short(c) for c in coarse[1:]]]
    split = cfg.splits[0]
    sec.figures[f"tiny_checkpoints_coarse_{split}"] = plot_trajectories(
        coarse_points[coarse_points["split"] == split], pre_coarse[pre_coarse["split"] == split], series="task",
        label="model", short=short, title=f"{src}, {len(coarse)} evenly spaced checkpoints, {split} split")
    if len(points):
        sec.tables[f"regression report over the checkpoints ({split} split)"] = regression_report(
            points[points["split"] == split].rename(columns={"model": "checkpoint"}), cfg.tol_perf, cfg.tol_mui, order="order")
    sec.data.update(coarse=coarse, pre_coarse=pre_coarse)
    return sec


def corollary_section(computed: dict[str, pd.DataFrame], pre_coarse: pd.DataFrame, coarse: Sequence[str],
                      published: "Section", settings: Settings, cfg):
    """Corollaries 1 and 2: direction counts and checks of the tiny world per split, beside the
    paper's tables (``published``: :func:`published_section`'s output)."""
    from kit.core.findings import Section

    pre, spec, cont, ctrl = (computed[k] for k in ("pretraining", "specialised", "contaminated", "controls"))
    src = source_label(settings.models())
    pairs_all = pd.concat([cont.assign(kind="contaminated"), ctrl.assign(kind="control")], ignore_index=True)

    def split_counts(split: str) -> dict[str, dict[str, int]]:
        st, sp = pre[pre["split"] == split], spec[spec["split"] == split]
        co, cc = cont[cont["split"] == split], ctrl[ctrl["split"] == split]
        late = st["step"] > st["n_steps"] - cfg.late_steps
        pc = pre_coarse[pre_coarse["split"] == split]
        return {
            "pretraining_all": counts_dict(st), "pretraining_early": counts_dict(st[~late]),
            "pretraining_late": counts_dict(st[late]),
            "specialised_in_domain": counts_dict(sp[sp["domain"] == "in-domain"]),
            "specialised_ood": counts_dict(sp[sp["domain"] == "ood"]),
            "contamination_in_domain": counts_dict(co[co["domain"] == "in-domain"]),
            "contamination_in_group": counts_dict(co[co["domain"] == "in-group"]),
            "contamination_ood": counts_dict(co[co["domain"] == "ood"]),
            "control_in_domain": counts_dict(cc[cc["domain"] == "in-domain"]),
            "control_ood": counts_dict(cc[cc["domain"] == "ood"]),
            # the coarse trajectory's last step is its late one (see cfg.coarse_checkpoints)
            "pretraining_coarse_early": counts_dict(pc[pc["step"] < pc["n_steps"]]),
            "pretraining_coarse_late": counts_dict(pc[pc["step"] == pc["n_steps"]]),
        }

    counts = {split: split_counts(split) for split in cfg.splits}
    checks = {"paper tables": published.data["checks"]}
    for split in cfg.splits:
        checks[f"{src}, {split} split"] = corollary_checks(
            pre[pre["split"] == split], spec[spec["split"] == split], cont[cont["split"] == split],
            late_steps=cfg.late_steps, controls=ctrl[ctrl["split"] == split],
            uncontaminated=pd.concat([spec[spec["split"] == split], ctrl[ctrl["split"] == split]], ignore_index=True))
        checks[f"{src}, {split} split, {len(coarse)} checkpoints"] = corollary_checks(
            pre_coarse[pre_coarse["split"] == split], late_steps=1)
    record = dict(
        computed_direction_counts=counts,
        computed_corollary_checks={k: v.to_dict(orient="records") for k, v in checks.items() if k != "paper tables"},
        computed_tolerance={"perf": cfg.tol_perf, "mui": cfg.tol_mui},
        contamination_leaked_task=pairs_all[pairs_all["domain"] == "in-domain"][
            ["kind", "model", "task", "split", "base_perf", "perf", "base_mui", "mui", "direction"]].to_dict(orient="records"),
        tiny_settings={"checkpoints": settings.checkpoints, "specialised": settings.specialised,
                       "contaminated": settings.contaminated, "controls": settings.controls,
                       "contaminated_tasks": settings.contaminated_tasks, "tasks": settings.tasks,
                       "n_items": cfg.n_items},
    )
    paper_keys = ("pretraining_early", "pretraining_late", "specialised_in_domain", "specialised_ood",
                  "contamination_in_domain", "contamination_ood")
    tiny_keys = ("pretraining_coarse_early", "pretraining_coarse_late", "specialised_in_domain", "specialised_ood",
                 "contamination_in_domain", "contamination_ood", "control_ood")
    bars = {f"paper: {k}": v for k, v in published.data["counts"].items() if k in paper_keys}
    bars.update({f"{'tiny' if src == 'tiny world' else src} ({cfg.splits[0]}): {k}": v for k, v in counts[cfg.splits[0]].items() if k in tiny_keys})
    fig = plot_direction_counts(bars, title="Share of each direction per setting")
    return Section(record=record, figures={"direction_counts": fig},
                   findings=corollary_findings(checks) + [contamination_text(cont, ctrl)], data={"checks": checks})
