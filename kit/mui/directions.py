"""The four directions of a training trajectory in the MUI–performance plane (seed 000, §3.3–3.4).

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

:func:`direction` labels one change (the one definition for the whole project); this module
applies it to consecutive checkpoints (``step_directions``) and to fine-tune-vs-base pairs
(``pair_directions``), counts directions per setting, and checks the paper's corollaries 1 and 2
against any such table (``corollary_checks``). The claims read a table through
:func:`conditional_share` (the share of changes in a predicted direction among those whose
performance moved the predicted way) and :func:`collapse_rates` (each fine-tune's share of
collapsing out-of-domain changes). Tables use the tidy schema of :mod:`kit.mui.trajectories`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Sequence, SupportsFloat, cast

import numpy as np
import pandas as pd


def direction(
    d_perf: SupportsFloat,
    d_mui: SupportsFloat,
    tol_perf: SupportsFloat = 0.0,
    tol_mui: SupportsFloat = 0.0,
) -> str:
    """Which of the four corollary directions a change (Δperformance, ΔMUI) is:
    ``evolving`` (+, -), ``accumulating`` (+, +), ``coarsening`` (-, +), ``collapsing`` (-, -);
    ``flat`` when either change is within its tolerance."""
    d_perf, d_mui, tol_perf, tol_mui = float(d_perf), float(d_mui), float(tol_perf), float(tol_mui)
    if tol_perf < 0 or tol_mui < 0:
        raise ValueError("tol_perf and tol_mui must be >= 0")
    if abs(d_perf) <= tol_perf or abs(d_mui) <= tol_mui:
        return "flat"
    if d_perf > 0:
        return "evolving" if d_mui < 0 else "accumulating"
    return "coarsening" if d_mui > 0 else "collapsing"


DIRECTIONS: tuple[str, ...] = ("evolving", "accumulating", "coarsening", "collapsing", "flat")
"""Every label ``kit.mui.directions.direction`` may return, in the order tables and legends show
them."""

SIGNS: dict[str, tuple[int, int]] = {
    "evolving": (1, -1),
    "accumulating": (1, 1),
    "coarsening": (-1, 1),
    "collapsing": (-1, -1),
}
"""Each direction as (sign of Δperformance, sign of ΔMUI) (:func:`direction`)."""

DIRECTION_COLORS: dict[str, str] = {
    "evolving": "#0173b2",
    "accumulating": "#029e73",
    "coarsening": "#de8f05",
    "collapsing": "#7b3294",
    "flat": "#949494",
}


# Seed 000, section 3.4 "Takeaway": "An accumulating trend signals insufficient training and
# warrants continued training; if it is accompanied by some coarsening, the data mix should be
# promptly rebalanced [...]. By contrast, the emergence of a collapsing direction calls for an
# immediate halt to training and a thorough inspection of the training and test sets".
# Evolving is "the ideal optimization trajectory" (continue). Coarsening on its own is not named in
# the takeaway; we map it to rebalance because section 3.3 reads it as "reduced abilities on this
# task" caused by a distributional shift towards another ability, which is what rebalancing fixes.
TAKEAWAY_OF_DIRECTION: dict[str, str] = {
    "evolving": "continue",
    "accumulating": "continue",
    "flat": "continue",
    "coarsening": "rebalance",
    "collapsing": "halt",
}

TAKEAWAYS: tuple[str, ...] = ("continue", "rebalance", "halt")
"""Takeaways from mildest to most severe; a step's takeaway is the most severe over its tasks."""


def direction_fn() -> Callable[..., str]:
    """:func:`direction` (the project's single definition of the four directions)."""
    return direction


def label_directions(
    d_perf: Iterable[float], d_mui: Iterable[float], tol_perf: float = 0.0, tol_mui: float = 0.0
) -> list[str]:
    """Direction of each (Δperf, ΔMUI) pair via ``kit.mui.directions.direction`` with the given
    tolerances.

    Inputs: two equal-length sequences of changes in percentage points. Output: one label per
    pair, from ``DIRECTIONS``. NaN changes (a missing value) are labelled ``"flat"``: nothing is
    asserted about a change we cannot see.
    """
    if tol_perf < 0 or tol_mui < 0:
        raise ValueError(f"tol_perf={tol_perf}, tol_mui={tol_mui}: tolerances must be >= 0")
    dp, dm = list(d_perf), list(d_mui)
    if len(dp) != len(dm):
        raise ValueError(
            f"d_perf has {len(dp)} values but d_mui has {len(dm)}; pass one pair per change"
        )
    fn = direction_fn()
    out = []
    for p, m in zip(dp, dm):
        if (
            p is None
            or m is None
            or (isinstance(p, float) and math.isnan(p))
            or (isinstance(m, float) and math.isnan(m))
        ):
            out.append("flat")
            continue
        label = fn(float(p), float(m), tol_perf=float(tol_perf), tol_mui=float(tol_mui))
        if label not in DIRECTIONS:
            raise ValueError(
                f"kit.mui.directions.direction returned {label!r}; expected one of {DIRECTIONS}"
            )
        out.append(label)
    return out


def step_directions(
    points: pd.DataFrame,
    series: str | Sequence[str] = "task",
    order: str = "order",
    label: str = "model",
    tol_perf: float = 0.0,
    tol_mui: float = 0.0,
) -> pd.DataFrame:
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
        raise ValueError(
            f"points has several rows for the same series and {order!r}:\n{dup.head()}"
        )
    rows = []
    for key, grp in points.sort_values(keys + [order]).groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        g = grp.reset_index(drop=True)
        for i in range(1, len(g)):
            a, b = g.iloc[i - 1], g.iloc[i]
            rows.append(
                {
                    **dict(zip(keys, key)),
                    "step": i,
                    "from": a[label],
                    "to": b[label],
                    "perf_from": a["perf"],
                    "perf_to": b["perf"],
                    "mui_from": a["mui"],
                    "mui_to": b["mui"],
                    "d_perf": _delta(b["perf"], a["perf"]),
                    "d_mui": _delta(b["mui"], a["mui"]),
                }
            )
    cols = keys + [
        "step",
        "from",
        "to",
        "perf_from",
        "perf_to",
        "mui_from",
        "mui_to",
        "d_perf",
        "d_mui",
    ]
    out = pd.DataFrame(rows, columns=cols)
    out["direction"] = label_directions(out["d_perf"], out["d_mui"], tol_perf, tol_mui)
    out["n_steps"] = out.groupby(keys)["step"].transform("max") if len(out) else []
    return out


def pair_directions(
    pairs: pd.DataFrame, tol_perf: float = 0.0, tol_mui: float = 0.0
) -> pd.DataFrame:
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
        frame = (
            labelled.groupby(keys)["direction"]
            .value_counts()
            .unstack(fill_value=0)
            .reindex(columns=list(DIRECTIONS), fill_value=0)
            .reset_index()
        )
    frame.columns.name = None
    frame["total"] = frame[list(DIRECTIONS)].sum(axis=1)
    return frame


def counts_dict(labelled: pd.DataFrame) -> dict[str, int]:
    """``{direction: count}`` over every direction (zeros included) and ``total``: for
    results.json."""
    c = labelled["direction"].value_counts() if len(labelled) else pd.Series(dtype=int)
    out = {d: int(c.get(d, 0)) for d in DIRECTIONS}
    out["total"] = int(len(labelled))
    return out


def conditional_share(changes: pd.DataFrame, expected: str, cluster: str) -> dict[str, Any]:
    """Among ``changes`` whose Δperformance has the sign ``expected`` predicts (and whose MUI moved
    beyond the tolerance: neither coordinate ``flat``), the share whose ΔMUI has the predicted sign.

    ``changes``: rows with ``direction`` and the ``cluster`` column. Returns ``k`` (changes in the
    predicted direction), ``m`` (changes with the predicted performance sign), ``share`` (k/m, NaN
    when m = 0), ``clusters`` (clusters with m > 0), ``n_changes`` (all rows).
    """
    s_perf, _ = SIGNS[expected]
    same_perf = [d for d, (sp, _) in SIGNS.items() if sp == s_perf]
    given = changes[changes["direction"].isin(same_perf)]
    k = int((given["direction"] == expected).sum())
    m = int(len(given))
    return {
        "k": k,
        "m": m,
        "share": k / m if m else float("nan"),
        "clusters": int(given[cluster].nunique()) if m else 0,
        "n_changes": int(len(changes)),
    }


def collapse_rates(pairs: pd.DataFrame) -> pd.Series:
    """Per fine-tune, the share of its out-of-domain changes that are ``collapsing`` (flat
    changes count as not collapsing). ``pairs``: ``pair_directions`` rows with ``model, domain,
    direction``."""
    if pairs is None or pairs.empty:
        return pd.Series(dtype=float)
    ood = pairs[pairs["domain"] == "ood"]
    return ood.groupby("model")["direction"].apply(lambda d: float((d == "collapsing").mean()))


def corollary_checks(
    pretraining: pd.DataFrame | None = None,
    specialised: pd.DataFrame | None = None,
    contamination: pd.DataFrame | None = None,
    late_steps: int = 2,
    ood_tasks: Sequence[str] | None = None,
    controls: pd.DataFrame | None = None,
    uncontaminated: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The paper's direction claims, each checked on a labelled table.

    - Corollary 1, pre-training (sec. 3.3): ``accumulating`` dominates the early steps, ``evolving``
      the late steps, the last ``late_steps`` of each series (OLMo: 3T -> 3.5T -> 4T).
    - Corollary 1, specialisation (sec. 3.3, Fig. 5): ``accumulating`` in domain, ``coarsening``
      OOD.
    - Corollary 2, contamination (sec. 3.4, Fig. 8): ``accumulating`` on the contaminated data
      ("both higher MUI and performance"), ``collapsing`` OOD (restricted to ``ood_tasks`` when
      given, the paper's ARC and MMLU, as an extra row beside all OOD tasks).
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

    def add(
        corollary: str, setting: str, subset: str, expected: tuple[str, ...], labelled: pd.DataFrame
    ):
        n = len(labelled)
        counts = labelled["direction"].value_counts() if n else pd.Series(dtype=int)
        hits = int(sum(counts.get(e, 0) for e in expected))
        top = counts.max() if n else 0
        modal = (
            sorted((d for d in counts.index if counts[d] == top), key=DIRECTIONS.index) if n else []
        )
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
        rows.append(
            {
                "corollary": corollary,
                "setting": setting,
                "subset": subset,
                "expected": "/".join(expected),
                "n": n,
                "n_expected": hits,
                "share_expected": hits / n if n else float("nan"),
                "modal": "/".join(modal),
                "verdict": verdict,
            }
        )

    if pretraining is not None and len(pretraining):
        late = pretraining["step"] > pretraining["n_steps"] - late_steps
        add("1", "pre-training", "early steps", ("accumulating",), pretraining[~late])
        add("1", "pre-training", "late steps", ("evolving",), pretraining[late])
    if specialised is not None and len(specialised):
        add(
            "1",
            "specialisation",
            "in-domain",
            ("accumulating",),
            specialised[specialised["domain"] == "in-domain"],
        )
        add(
            "1",
            "specialisation",
            "ood",
            ("coarsening",),
            specialised[specialised["domain"] == "ood"],
        )
    if contamination is not None and len(contamination):
        add(
            "2",
            "contamination",
            "in-domain",
            ("accumulating",),
            contamination[contamination["domain"] == "in-domain"],
        )
        ood = contamination[contamination["domain"] == "ood"]
        add("2", "contamination", "ood", ("collapsing",), ood)
        if ood_tasks is not None:
            add(
                "2",
                "contamination",
                f"ood ({', '.join(ood_tasks)})",
                ("collapsing",),
                ood[ood["task"].isin(list(ood_tasks))],
            )
    if controls is not None and len(controls):
        add(
            "2",
            "uncontaminated controls",
            "ood",
            ("not collapsing",),
            controls[controls["domain"] == "ood"],
        )
    if uncontaminated is not None and len(uncontaminated):
        add(
            "2",
            "uncontaminated fine-tunes",
            "ood (strict)",
            ("no collapsing",),
            uncontaminated[uncontaminated["domain"] == "ood"],
        )
    return pd.DataFrame(
        rows,
        columns=[
            "corollary",
            "setting",
            "subset",
            "expected",
            "n",
            "n_expected",
            "share_expected",
            "modal",
            "verdict",
        ],
    )


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
    lines = [
        "Corollary checks (expected direction: changes with it / all changes; most frequent "
        "direction -> verdict):"
    ]
    for name, frame in checks.items():
        lines.append(f"  {name}:")
        for _, r in frame.iterrows():
            if r["n"] == 0:
                lines.append(
                    f"    C{r['corollary']} {r['setting']} / {r['subset']}: no changes to check"
                )
                continue
            lines.append(
                f"    C{r['corollary']} {r['setting']} / {r['subset']}: expected {r['expected']}: "
                f"{r['n_expected']}/{r['n']} ({100 * r['share_expected']:.0f}%); most frequent "
                f"{r['modal']} -> {r['verdict'].upper()}"
            )
    ref = checks[reference]
    for name, frame in checks.items():
        if name == reference or not len(frame) or not len(ref):
            continue
        both = ref.merge(frame, on=["corollary", "setting", "subset"], suffixes=("_ref", "_other"))
        both = both[(both["n_ref"] > 0) & (both["n_other"] > 0)]
        differ = [
            f"C{r['corollary']} {r['setting']} / {r['subset']} ({reference}: {r['verdict_ref']}, "
            f"{name}: {r['verdict_other']})"
            for _, r in both.iterrows()
            if r["verdict_ref"] != r["verdict_other"]
        ]
        lines.append(
            f"  {name} vs {reference}: same verdict on {len(both) - len(differ)} of {len(both)} "
            "claims" + (f"; different on {'; '.join(differ)}." if differ else ".")
        )
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
            leaked = (
                "; ".join(
                    f"{r['task']} {r['base_perf']:.1f}->{r['perf']:.1f}% perf, MUI "
                    f"{r['base_mui']:.2f}->{r['mui']:.2f}% ({r['direction']})"
                    for _, r in ind.iterrows()
                )
                or "leaked task not measured"
            )
            n_col = int((ood["direction"] == "collapsing").sum())
            lines.append(
                f"  {kind} {model} [{split}]: {leaked}; OOD collapsing on {n_col}/{len(ood)} tasks"
                + (
                    f" (mean Δperf {ood['d_perf'].mean():+.1f}, ΔMUI {ood['d_mui'].mean():+.2f})"
                    if len(ood)
                    else ""
                )
            )
    return "Contamination (Corollary 2), leaked task and out-of-domain tasks:\n" + "\n".join(lines)


def _delta(new, old):
    # Rounded so that float noise (0.30000000000000004 - 0.3) never turns an unchanged value into
    # a direction when the tolerance is zero; 1e-9 points is far below any printed precision.
    return (
        np.round(np.asarray(new, dtype=float) - np.asarray(old, dtype=float), 9)
        if not np.isscalar(new)
        else round(float(cast(Any, new)) - float(old), 9)
    )


def _require(df: pd.DataFrame, cols: Sequence[str], name: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(df.columns)}")
