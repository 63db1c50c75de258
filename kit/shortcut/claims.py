"""Claims of seed 001 (shortcut neurons, trustworthy evaluation) tested by notebook 03, declared
over its per-item evidence (:class:`Evidence`), each with its kind and what it rests on.

Table 2's Δacc of a few points on a few hundred items needs an interval, so the accuracies are
re-measured per item (:func:`kit.shortcut.evaluate.item_correct`, the same dynamic-patching
generation as :func:`kit.shortcut.evaluate.accuracies`, which returns means only) and bootstrapped.

- Resampling: every Table 2 row is scored on the SAME test items (and Ref on the same fresh items),
  so a pooled statistic resamples those items once for all rows (not each row on its own, which
  would count one item once per row); items that share a content (``TaskData.clusters``) are
  resampled together (:func:`kit.core.stats.bootstrap_groups_ci` with ``clusters``).
- Kinds: ``te.delta`` / ``te.contaminated_drop`` / ``te.clean_unchanged`` on the sparse rows and on
  the full fine-tunes (``te_full.*``: the paper's setting), the sparsity, side-effect and agreement
  claims and the cheaters' TE are ``reproduction``; ``te.leak`` and ``cheaters.leak`` (the planted
  leak exists at all) and ``rules.chosen_vs_public`` (our ranking choice) are ``set-up check``;
  ``agreement.table9`` is a ``re-analysis`` of the paper's printed Table 9.
- By construction: the sparse rows train seeded neuron sets (every contaminated row the same
  ``shortcut`` set, every clean row the ``ability`` set:
  :data:`kit.shortcut.variants.PLASTIC_SETS`), so TE reaching the other contaminated rows and
  sparing the clean ones is largely built in: those claims are weakened
  (:func:`kit.core.claims.weaken`) with the reason (``Evidence.by_construction``); the full
  fine-tunes carry the paper's claim.
- Side effects: per (row, task) cell, the mean |Δacc| over cells and the largest |Δacc| with
  Bonferroni-corrected per-cell intervals (a maximum of K cells needs a K-fold correction).
- Sparsity: the located neurons against >= 100 random neuron sets of the same count (their 95% band
  and an empirical p-value), not one random draw.
- Duplicates go: a cheater row that is a Table 2 model (``Evidence.cheater_same_as``) is claimed
  once, in Table 2; Table 2's ``+train split`` row is the paper's +GSM8K Train (A2).

:func:`stability_reruns` recomputes every claim under other bootstrap seeds for
:func:`kit.core.claims.mark_stability`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim, mark_stability, weaken
from kit.core.stats import bootstrap_ci, bootstrap_groups_ci, null_band
from kit.shortcut.evaluate import item_correct, te_items  # noqa: F401 (te_items: API)
from kit.shortcut.items import TaskData
from kit.shortcut.patching import Neuron
from kit.shortcut.scores import random_neurons

PAPER = "001"
REQUIRED_IDS = {
    "03_shortcut_neurons": [
        "te.contaminated_drop",
        "te.clean_unchanged",
        "te.clean_toward_ref",
        "te_full.contaminated_drop",
        "te_full.clean_unchanged",
        "sparsity.located_vs_random",
        "side_effects.unchanged",
        "side_effects.largest_cell",
        "agreement.te_vs_ori",
        "agreement.table9",
    ]
}
UNCHANGED_MARGIN = 2.0
"""'Leaves clean models / other tasks unchanged' is tested as equivalence within ±2 accuracy
points (our choice; the paper's Tables 2-3 show changes of about 1 point and call them small)."""
N_NULL = 100
"""Random neuron sets of the sparsity null (:func:`sparsity_items`)."""
PerItem = Mapping[str, Mapping[str, np.ndarray]]
"""Label -> ``{"ori": (items,), "te": (items,), "ref": (fresh items,)}`` correctness
(:func:`te_items`)."""


@dataclass
class Evidence:
    """The per-item measurements notebook 03's claims rest on, filled section by section."""

    te: PerItem
    """Table 2's rows (section 2): per label Ori and TE on the test items, Ref on the fresh
    items."""
    contaminated: Sequence[str]
    """Labels of ``te`` that saw the test items."""
    table2: pd.DataFrame
    """The notebook's Table 2 (variant, ori, te, ref in %): the per-item data must reproduce it."""
    table9: pd.DataFrame
    """The paper's printed Table 9 (te, ori, ref_mixeval)."""
    n_patched: int
    rests_on: str = ""
    """What Table 2's rows are (:func:`kit.shortcut.study.construction`)."""
    by_construction: str = ""
    """Why TE's transfer to those rows is built in ("" when it is not): weakens their claims."""
    base_labels: Sequence[str] = ()
    """Rows that are the base model itself: patching it from itself changes nothing by definition,
    so they enter no TE claim."""
    test_clusters: np.ndarray | None = None
    fresh_clusters: np.ndarray | None = None
    """Content label per test / fresh item (None: every item its own content)."""
    te_full: PerItem | None = None
    """The same rows as full fine-tunes (section 7), neurons located on their own pair."""
    full_contaminated: Sequence[str] = ()
    full_rests_on: str = ""
    full_absent: str = "no full fine-tunes in this profile (dense_variants: null)"
    """Why ``te_full`` is None (:func:`kit.shortcut.scope.full_rows_cause`)."""
    side: Mapping[tuple[str, str], np.ndarray] = field(default_factory=dict)
    """(label, task) -> (2, items): Ori and TE correctness on another task (Table 3)."""
    side_clusters: Mapping[str, np.ndarray | None] = field(default_factory=dict)
    sparsity: np.ndarray | None = None
    """(1 + draws, items): M_con with the located neurons patched (row 0), then with each of the
    random sets of the same count (:func:`sparsity_items`)."""
    sparsity_rests_on: str = ""
    cheaters: PerItem | None = None
    """Table 12's rows (section 10)."""
    cheaters_contaminated: Sequence[str] = ()
    cheater_same_as: Mapping[str, str] = field(default_factory=dict)
    """Cheater label -> the Table 2 label of the same model (claimed there, not twice)."""
    cheaters_rests_on: str = ""
    table12: pd.DataFrame | None = None
    rules: pd.DataFrame | None = None
    """Section 1b's ranking rules with their ``vs_chosen`` intervals."""
    rule: str = ""
    extra_claims: list[Claim] = field(default_factory=list)
    """Claims made elsewhere (section 11's A2 format claims), recorded with these."""


def side_items(
    models: Mapping[str, object],
    base,
    tasks: Mapping[str, TaskData],
    neurons: Sequence[Neuron],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> dict[tuple[str, str], np.ndarray]:
    """Per (variant, task) the per-item (ori, te) correctness behind Table 3: array (2, items)."""
    return {
        (label, t): item_correct(m, base, d, [[], list(neurons)], max_rows, max_new_tokens)
        for label, m in models.items()
        for t, d in tasks.items()
    }


def sparsity_items(
    model,
    base,
    test: TaskData,
    ranked: Sequence[Neuron],
    n: int,
    seed: int = 0,
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
    n_null: int = N_NULL,
) -> np.ndarray:
    """(1 + n_null, items) correctness of ``model`` with the top ``n`` located neurons patched (row
    0), then with each of ``n_null`` random sets of ``n`` neurons (seeds ``seed .. seed + n_null -
    1``): Figure 3 at one N, per item, with a null distribution."""
    from kit.shortcut.pool import resolve

    L, d = base.cfg.n_layers, base.cfg.d_mlp
    sets = [list(ranked[:n])] + [random_neurons(L, d, n, seed=seed + k) for k in range(n_null)]
    return item_correct(resolve(model), base, test, sets, max_rows, max_new_tokens)


def _paper_range(contaminated: bool) -> str:
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_table02_trustworthy_eval_gsm8k")
    is_con = t["model_variant"].str.contains("GSM-i")
    d = pd.to_numeric(
        t.loc[is_con == contaminated, "delta_acc"].astype(str).str.replace("+", "", regex=False),
        errors="coerce",
    ).dropna()
    return f"Δacc {d.min():+.1f} to {d.max():+.1f} (Table 2)" if len(d) else "Table 2"


def _paper_rho() -> str:
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_text_numbers")
    hit = t[t.iloc[:, 0].astype(str).str.contains("Spearman correlation of TE")]
    return f"TE ρ {hit.iloc[0, 1]} (§4.3, simulation)" if len(hit) else "Fig. 4"


def _check_table(te: PerItem, table: pd.DataFrame | None, name: str) -> None:
    """The per-item re-measurement must reproduce the notebook's table (same models, items,
    neurons)."""
    if table is None:
        return
    t: Any
    t = table.set_index("variant")  # numeric cells (pandas-stubs type a .loc cell as any scalar)
    for v, d in te.items():
        if v in t.index and not np.isclose(100 * d["ori"].mean(), t.loc[v, "ori"], atol=1e-3):
            raise ValueError(
                f"per-item Ori of {v} ({100 * d['ori'].mean():.3f}) differs from {name}'s "
                f"({t.loc[v, 'ori']:.3f}): not the same models, items or neurons?"
            )


def _delta(ori: np.ndarray, te: np.ndarray) -> float:
    return float(100 * np.mean(te - ori))


def _mean_delta(labels: Sequence[str]):
    """Statistic over ``[test table]`` whose columns are (ori, te) per label: mean Δacc in
    points."""

    def stat(groups):
        cols = groups[0]
        return float(np.mean([_delta(cols[2 * k], cols[2 * k + 1]) for k in range(len(labels))]))

    return stat


def _test_table(te: PerItem, labels: Sequence[str]) -> tuple[np.ndarray, ...]:
    return tuple(a for v in labels for a in (te[v]["ori"], te[v]["te"]))


def _units(n: int, clusters: np.ndarray | None, what: str) -> str:
    if clusters is None:
        return f"{n} {what}"
    return f"{len(np.unique(clusters))} contents ({n} {what})"


def _te_claims(
    ev: Evidence,
    te: PerItem,
    contaminated: Sequence[str],
    prefix: str,
    rests_on: str,
    by_construction: str,
    kw: dict,
    margin: float,
    per_row: bool,
) -> list[Claim]:
    """Table 2's TE claims over the rows ``te`` (``prefix``: ``te`` for the main rows, ``te_full``
    for the full fine-tunes): per row Δacc and its leak (``per_row``), the pooled contaminated drop
    and clean change, the clean rows' move toward Ref; weakened by ``by_construction`` when set."""
    rows = [v for v in te if v not in ev.base_labels]
    con = [v for v in rows if v in contaminated]
    clean = [v for v in rows if v not in contaminated]
    tc, fc = [ev.test_clusters], [ev.test_clusters, ev.fresh_clusters]
    n_test = (
        _units(len(next(iter(te.values()))["ori"]), ev.test_clusters, "test items") if te else ""
    )
    n_fresh = (
        _units(len(next(iter(te.values()))["ref"]), ev.fresh_clusters, "fresh items") if te else ""
    )
    on = dict(rests_on=rests_on)
    tol: dict[str, Any]
    tol = dict(null_range=(-margin, margin), null_how=f"tolerance ±{margin:g} points")
    out: list[Claim] = []

    def built_in(c: Claim) -> Claim:
        if not by_construction:
            return c
        c.rests_on = f"{c.rests_on} (weakened: {by_construction})"  # so its finding says why
        return weaken(c, by_construction)

    if per_row:
        for label in con + clean:
            d = te[label]
            est = bootstrap_groups_ci(
                lambda g: _delta(*g[0]), [(d["ori"], d["te"])], clusters=tc, **kw
            )
            common: dict[str, Any]
            common = dict(ci=est[1:], interval_how=f"paired bootstrap over {n_test}", **on)
            a2 = (
                " (the paper's +GSM8K Train: assumption A2, -6.5 / -4.3 there)"
                if label == "+train split"
                else ""
            )
            if label in con:
                c = claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.delta[{label}]",
                    f"TE lowers the test accuracy of contaminated "
                    f"{label} (Δacc = TE - Ori, points)",
                    est[0],
                    null=0.0,
                    direction="less",
                    null_how="no change (0)",
                    paper_value=_paper_range(True),
                    **common,
                )
            else:
                c = claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.delta[{label}]",
                    f"TE leaves the clean {label}{a2} unchanged (Δacc, points)",
                    est[0],
                    null=0.0,
                    direction="within",
                    paper_value=_paper_range(False),
                    **tol,
                    **common,
                )
            out.append(built_in(c))
        for (
            label
        ) in con:  # the precondition of each contaminated row: its test score is inflated at all
            d = te[label]
            leak = bootstrap_groups_ci(
                lambda g: float(100 * (g[0][0].mean() - g[1][0].mean())),
                [(d["ori"],), (d["ref"],)],
                clusters=fc,
                **kw,
            )
            out.append(
                claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.leak[{label}]",
                    f"contaminated {label}'s test score is "
                    "inflated: Ori - Ref (points; the precondition of lowering it)",
                    leak[0],
                    ci=leak[1:],
                    null=0.0,
                    direction="greater",
                    null_how="no leak (0)",
                    kind="set-up check",
                    paper_value="Ori above Ref (Table 2)",
                    **on,
                    interval_how=f"bootstrap over {n_test} and {n_fresh}",
                )
            )
    else:  # one leak for the pooled rows: does the construction leak at all
        if con:
            k = len(con)
            leak = bootstrap_groups_ci(
                lambda g: float(100 * np.mean([g[0][i].mean() - g[1][i].mean() for i in range(k)])),
                [tuple(te[v]["ori"] for v in con), tuple(te[v]["ref"] for v in con)],
                clusters=fc,
                **kw,
            )
            out.append(
                claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.leak",
                    f"the {k} contaminated full fine-tunes' test scores are "
                    "inflated: mean Ori - Ref (points; the precondition of lowering them)",
                    leak[0],
                    ci=leak[1:],
                    null=0.0,
                    direction="greater",
                    null_how="no leak (0)",
                    kind="set-up check",
                    paper_value="Ori above Ref (Table 2)",
                    **on,
                    interval_how=f"bootstrap over {n_test} and {n_fresh}, shared by the rows",
                )
            )
    where = "" if per_row else " of the full fine-tunes (the paper's setting)"
    pooled = [
        (
            "contaminated_drop",
            con,
            "less",
            f"TE lowers contaminated models' test accuracy (mean Δacc over "
            f"{len(con)} contaminated rows{where}, points)",
        ),
        (
            "clean_unchanged",
            clean,
            "within",
            f"TE leaves clean models unchanged (mean Δacc over {len(clean)} "
            f"clean rows{where}, points)",
        ),
    ]
    for cid, labels, direction, statement in pooled:
        if not labels:
            out.append(
                claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.{cid}",
                    statement,
                    None,
                    **on,
                    not_testable="no such rows in this profile",
                )
            )
            continue
        est = bootstrap_groups_ci(_mean_delta(labels), [_test_table(te, labels)], clusters=tc, **kw)
        band = tol if direction == "within" else dict(null_how="no change (0)")
        out.append(
            built_in(
                claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.{cid}",
                    statement,
                    est[0],
                    ci=est[1:],
                    null=0.0,
                    direction=direction,
                    paper_value=_paper_range(direction == "less"),
                    **band,
                    **on,
                    interval_how=f"bootstrap over {n_test}, shared by the rows",
                )
            )
        )
    # |Ori - Ref| - |TE - Ref| > 0 on clean rows: TE moved them toward the fresh-item score
    if per_row:
        st = (
            "TE moves clean scores toward Ref: mean of |Ori - Ref| - |TE - Ref| over clean rows "
            "(points; < 0: away)"
        )
        if clean:
            k = len(clean)

            def toward(g):
                return float(
                    100
                    * np.mean(
                        [
                            abs(g[0][2 * i].mean() - g[1][i].mean())
                            - abs(g[0][2 * i + 1].mean() - g[1][i].mean())
                            for i in range(k)
                        ]
                    )
                )

            est = bootstrap_groups_ci(
                toward,
                [_test_table(te, clean), tuple(te[v]["ref"] for v in clean)],
                clusters=fc,
                **kw,
            )
            out.append(
                built_in(
                    claim(
                        PAPER,
                        "Table 2",
                        f"{prefix}.clean_toward_ref",
                        st,
                        est[0],
                        ci=est[1:],
                        null=0.0,
                        direction="greater",
                        null_how="no move (0)",
                        **on,
                        paper_value="clean Ori and TE both near Ref (Table 2)",
                        interval_how=f"bootstrap over {n_test} and {n_fresh}, shared by the rows",
                    )
                )
            )
        else:
            out.append(
                claim(
                    PAPER,
                    "Table 2",
                    f"{prefix}.clean_toward_ref",
                    st,
                    None,
                    not_testable="no clean rows",
                    **on,
                )
            )
    return out


def _sparsity_claim(ev: Evidence, kw: dict) -> Claim:
    """Located neurons against ``draws`` random sets of the same count, on the locating M_con."""
    st = (
        "Located neurons matter more than random ones: M_con's test accuracy with its "
        f"{ev.n_patched} located neurons patched (%) lies below that with {ev.n_patched} random "
        "ones"
    )
    if ev.sparsity is None or len(ev.sparsity) < 2:
        return claim(
            PAPER, "Fig. 3", "sparsity.located_vs_random", st, None, not_testable="no sparsity data"
        )
    loc, rand = ev.sparsity[0], ev.sparsity[1:]
    est = bootstrap_groups_ci(
        lambda g: float(100 * g[0][0].mean()), [(loc,)], clusters=[ev.test_clusters], **kw
    )
    accs = 100 * rand.mean(axis=1)
    band = null_band(accs)
    # empirical p: random sets as low as the located
    p = (1 + int(np.sum(accs <= est[0]))) / (1 + len(accs))
    return claim(
        PAPER,
        "Fig. 3",
        "sparsity.located_vs_random",
        st,
        est[0],
        ci=est[1:],
        null_range=band[1:],
        direction="less",
        null_how=f"95% range over {len(accs)} random neuron sets of the same count "
        f"(mean {band[0]:.1f}; empirical p = {p:.3f})",
        figure="fig3_sparsity_curve",
        paper_value="located ≪ random (Fig. 3)",
        rests_on=ev.sparsity_rests_on or ev.rests_on,
        interval_how=f"bootstrap over {_units(len(loc), ev.test_clusters, 'test items')}",
        empirical_p=p,
        null_draws=len(accs),
    )


def _side_claims(ev: Evidence, kw: dict, margin: float) -> list[Claim]:
    """Table 3: per cell Δacc; the mean |Δacc| over cells and the largest |Δacc| with Bonferroni
    intervals (one resampling of each task's items, shared by its rows)."""
    tol: dict[str, Any]
    tol = dict(
        null_range=(-margin, margin),
        null_how=f"tolerance ±{margin:g} points",
        paper_value="small changes on MAWPS/MMLU (Table 3)",
        rests_on=ev.rests_on,
    )
    # the base: 0 by definition
    side = {k: a for k, a in ev.side.items() if k[0] not in ev.base_labels}
    st_mean = (
        f"Patching leaves other tasks unchanged: mean |Δacc| over {len(side)} (row, task) "
        "cells (points)"
    )
    st_max = (
        "Patching leaves every (row, task) cell unchanged: the largest |Δacc| of "
        f"{len(side)} cells (points)"
    )
    if not side:
        return [
            claim(
                PAPER,
                "Table 3",
                "side_effects.unchanged",
                st_mean,
                None,
                not_testable="no side tasks",
            ),
            claim(
                PAPER,
                "Table 3",
                "side_effects.largest_cell",
                st_max,
                None,
                not_testable="no side tasks",
            ),
        ]
    tasks = list(dict.fromkeys(t for _, t in side))
    cells = list(side)
    index = {c: (tasks.index(c[1]), [k for k in cells if k[1] == c[1]].index(c)) for c in cells}
    groups = [tuple(a for k in cells if k[1] == t for a in side[k]) for t in tasks]
    clusters = [ev.side_clusters.get(t) for t in tasks]

    def cell(g, c):
        ti, j = index[c]
        return _delta(g[ti][2 * j], g[ti][2 * j + 1])

    deltas = {c: cell(groups, c) for c in cells}
    est = bootstrap_groups_ci(
        lambda g: float(np.mean([abs(cell(g, c)) for c in cells])), groups, clusters=clusters, **kw
    )
    n_items = ", ".join(
        f"{_units(len(groups[i][0]), clusters[i], 'items')} of {t}" for i, t in enumerate(tasks)
    )
    per_cell = {f"{v} / {t}": round(d, 3) for (v, t), d in deltas.items()}
    out = [
        claim(
            PAPER,
            "Table 3",
            "side_effects.unchanged",
            st_mean,
            est[0],
            ci=est[1:],
            null=0.0,
            direction="within",
            interval_how=f"bootstrap over {n_items}, shared by the rows",
            cells=per_cell,
            **tol,
        )
    ]
    # Bonferroni: each cell's interval at 1 - 0.05 / k, so all k hold together at 95%
    k = len(cells)
    level = 1 - 0.05 / k
    # ~10 replicates in each tail
    boot = dict(kw, n_boot=max(kw["n_boot"], math.ceil(20 * k / 0.05)))
    lo = hi = 0.0
    for c in cells:
        _, a, b = bootstrap_groups_ci(
            lambda g, c=c: cell(g, c), groups, clusters=clusters, level=level, **boot
        )
        lo = max(lo, 0.0 if a <= 0 <= b else min(abs(a), abs(b)))
        hi = max(hi, abs(a), abs(b))
    (v, t), d = max(deltas.items(), key=lambda kv: abs(kv[1]))
    out.append(
        claim(
            PAPER,
            "Table 3",
            "side_effects.largest_cell",
            st_max,
            abs(d),
            ci=(lo, hi),
            null=0.0,
            direction="within",
            caveat=f"largest: {v} on {t}, {d:+.1f}",
            interval_how=f"the max over cells of Bonferroni ({k} cells) bootstrap intervals of "
            f"|Δacc|, {boot['n_boot']} replicates",
            cells=per_cell,
            **tol,
        )
    )
    return out


def _paper_table12() -> dict[str, str]:
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_table12_kieval_arc_challenge")
    return {str(r["model"]): str(r["delta_acc"]) for _, r in t.iterrows()}


def cheater_claims(ev: Evidence, kw: dict, margin: float = UNCHANGED_MARGIN) -> list[Claim]:
    """Table 12 (``ev.cheaters``): per cheater its leak (Ori - Ref > 0, a set-up check: the
    precondition of detecting it) and TE's drop (Δacc < 0; the paper: -16.0 SFT, -17.5 PT); per
    clean row Δacc within ±``margin`` (the paper: +2.9). Rows that are Table 2 models
    (``ev.cheater_same_as``) are claimed there only."""
    te = ev.cheaters or {}
    _check_table(te, ev.table12, "Table 12")
    try:
        paper = _paper_table12()
    except (OSError, KeyError, ValueError):  # the printed table is context only
        paper = {}
    tc, fc = [ev.test_clusters], [ev.test_clusters, ev.fresh_clusters]
    on = dict(rests_on=ev.cheaters_rests_on or ev.rests_on)
    out = []
    for label, d in te.items():
        if label in ev.cheater_same_as:
            continue
        pv = next((v for k, v in paper.items() if k.startswith(label) or label.startswith(k)), None)
        pv = f"Δacc {pv} (Table 12, ARC-Challenge)" if pv else "Table 12"
        n_test = _units(len(d["ori"]), ev.test_clusters, "test items")
        est = bootstrap_groups_ci(lambda g: _delta(*g[0]), [(d["ori"], d["te"])], clusters=tc, **kw)
        common: dict[str, Any]
        common = dict(
            ci=est[1:],
            null=0.0,
            paper_value=pv,
            interval_how=f"paired bootstrap over {n_test}",
            **on,
        )
        if label in ev.cheaters_contaminated:
            leak = bootstrap_groups_ci(
                lambda g: float(100 * (g[0][0].mean() - g[1][0].mean())),
                [(d["ori"],), (d["ref"],)],
                clusters=fc,
                **kw,
            )
            out.append(
                claim(
                    PAPER,
                    "Table 12",
                    f"cheaters.leak[{label}]",
                    f"{label}'s test score is inflated: Ori - "
                    "Ref (points; the precondition of detecting it)",
                    leak[0],
                    ci=leak[1:],
                    null=0.0,
                    direction="greater",
                    null_how="no leak (0)",
                    kind="set-up check",
                    paper_value="Ori above Normal's (Table 12: no Ref there)",
                    **on,
                    interval_how=f"bootstrap over {n_test} and the fresh items",
                )
            )
            out.append(
                claim(
                    PAPER,
                    "Table 12",
                    f"cheaters.delta[{label}]",
                    f"TE lowers the cheater {label}'s test accuracy (Δacc = TE - Ori, points)",
                    est[0],
                    direction="less",
                    null_how="no change (0)",
                    **common,
                )
            )
        else:
            out.append(
                claim(
                    PAPER,
                    "Table 12",
                    f"cheaters.delta[{label}]",
                    f"TE leaves the clean {label} unchanged (Δacc, points)",
                    est[0],
                    null_range=(-margin, margin),
                    direction="within",
                    null_how=f"tolerance ±{margin:g} points",
                    **common,
                )
            )
    return out


PUBLIC_RULE = "sum (exact)"
"""The public code's ranking (``src/change_scores_SFT.py``: S + C - 1, exact-match causal score)."""


def rule_choice_claim(rules: pd.DataFrame | None, chosen: str) -> Claim:
    """Whether the chosen ranking rule beats the public code's sum on the held-out items: the
    chosen rule's objective minus the public rule's, with the interval of
    :func:`kit.shortcut.ranking.rule_intervals` (``rules`` with its ``vs_chosen`` columns)."""
    st = (
        f"The chosen ranking rule {chosen!r} beats the public code's {PUBLIC_RULE!r} on held-out "
        "test items: objective (M_con drop - |M_un change|) of the chosen minus the public "
        "rule's (points)"
    )
    kw = dict(
        paper_value="the paper does not say how eq. 3 and eq. 4 combine; its code adds them",
        kind="set-up check",
        rests_on="the held-out test items of the locating pair (our ranking choice)",
    )
    if rules is None or "vs_chosen" not in rules:
        return claim(
            PAPER,
            "§3.3 ranking",
            "rules.chosen_vs_public",
            st,
            None,
            not_testable="no held-out items",
            **kw,
        )
    if chosen == PUBLIC_RULE:
        return claim(
            PAPER,
            "§3.3 ranking",
            "rules.chosen_vs_public",
            st,
            None,
            not_testable="the chosen rule is the public code's",
            **kw,
        )
    r: Any = rules.set_index("rule").loc[PUBLIC_RULE]  # one rule's row
    n = rules.attrs["items"]["con"].shape[1] if "items" in rules.attrs else "the"
    return claim(
        PAPER,
        "§3.3 ranking",
        "rules.chosen_vs_public",
        st,
        -float(r.vs_chosen),
        ci=(-float(r.vs_chosen_high), -float(r.vs_chosen_low)),
        null=0.0,
        direction="greater",
        null_how="no difference (0)",
        interval_how=f"paired bootstrap over {n} held-out test items",
        caveat="the chosen rule is the best of 9 on these same items (selection inflates the gap)",
        **kw,
    )


def _agreement_claim(
    cid: str,
    where: str,
    te,
    ori,
    ref,
    kw: dict,
    figure: str,
    kind: str = "reproduction",
    rests_on: str = "",
) -> Claim:
    from scipy.stats import spearmanr

    def gain(t, o, r):
        if np.ptp(r) == 0 or np.ptp(t) == 0 or np.ptp(o) == 0:
            return float("nan")
        return float(spearmanr(t, r).statistic - spearmanr(o, r).statistic)  # pyright: ignore[reportAttributeAccessIssue]  (scipy)

    te, ori, ref = (np.asarray(x, float) for x in (te, ori, ref))
    est = bootstrap_ci(gain, te, ori, ref, **kw)
    return claim(
        PAPER,
        "Fig. 4",
        cid,
        f"TE agrees with the reference better than Ori on {where}: "
        "Spearman(TE, Ref) - Spearman(Ori, Ref)",
        est[0],
        ci=est[1:],
        null=0.0,
        direction="greater",
        null_how="no gain (0)",
        paper_value=_paper_rho(),
        kind=kind,
        rests_on=rests_on,
        interval_how=f"bootstrap over {len(te)} models",
        figure=figure,
    )


def shortcut_claims(
    ev: Evidence, seed: int = 0, n_boot: int = 1000, margin: float = UNCHANGED_MARGIN
) -> list[Claim]:
    """Every claim of notebook 03 from its :class:`Evidence` (see the module docstring)."""
    _check_table(ev.te, ev.table2, "Table 2")
    kw = dict(n_boot=n_boot, seed=seed)
    out = _te_claims(
        ev, ev.te, ev.contaminated, "te", ev.rests_on, ev.by_construction, kw, margin, per_row=True
    )
    if ev.te_full:
        out += _te_claims(
            ev,
            ev.te_full,
            ev.full_contaminated,
            "te_full",
            ev.full_rests_on,
            "",
            kw,
            margin,
            per_row=False,
        )
    else:
        out += [
            claim(
                PAPER,
                "Table 2",
                f"te_full.{i}",
                f"TE on full fine-tunes: {i}",
                None,
                not_testable=ev.full_absent,
            )
            for i in ("contaminated_drop", "clean_unchanged")
        ]
    out.append(_sparsity_claim(ev, kw))
    out += _side_claims(ev, kw, margin)
    rows = (
        ev.table2[~ev.table2.variant.isin(list(ev.base_labels))]
        if "variant" in ev.table2
        else ev.table2
    )
    agree = _agreement_claim(
        "agreement.te_vs_ori",
        "the Table 2 rows (without the base itself)",
        rows["te"],
        rows["ori"],
        rows["ref"],
        kw,
        "fig4_agreement_tiny",
        rests_on=ev.rests_on,
    )
    if ev.by_construction:
        agree.rests_on = f"{agree.rests_on} (weakened: {ev.by_construction})"
        weaken(agree, ev.by_construction)
    out.append(agree)
    out.append(
        _agreement_claim(
            "agreement.table9",
            "the paper's printed Table 9 (real models vs MixEval)",
            ev.table9["te"],
            ev.table9["ori"],
            ev.table9["ref_mixeval"],
            kw,
            "fig4_agreement_table9",
            kind="re-analysis",
            rests_on="the paper's printed Table 9 (001_table09_real_world_models)",
        )
    )
    out.append(rule_choice_claim(ev.rules, ev.rule))
    if ev.cheaters:
        out += cheater_claims(ev, kw, margin)
    out += ev.extra_claims
    return out


def stability_reruns(ev: Evidence, seeds: Sequence[int], n_boot: int = 1000) -> list[list[Claim]]:
    """The claims again under each bootstrap seed of ``seeds`` (the models, items, located neurons
    and random neuron sets stay): one list per seed, for :func:`kit.core.claims.mark_stability`."""
    return [shortcut_claims(replace(ev, extra_claims=[]), seed=s, n_boot=n_boot) for s in seeds]


def claims_with_stability(
    ev: Evidence, seed: int = 0, reseeds: Sequence[int] = (1, 2), n_boot: int = 1000
) -> list[Claim]:
    """:func:`shortcut_claims` marked stable or flipping under the bootstrap seeds ``reseeds``."""
    out = shortcut_claims(ev, seed=seed, n_boot=n_boot)
    how = f"bootstrap seeds {', '.join(map(str, reseeds))}"
    return mark_stability(out, stability_reruns(ev, reseeds, n_boot), how)
