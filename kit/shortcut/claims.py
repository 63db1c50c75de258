"""Claims of seed 001 (shortcut neurons, trustworthy evaluation) tested by notebook 03, declared
over its per-item evidence (:class:`kit.shortcut.evidence.Evidence`), each with its kind and what it
rests on: Table 2's TE claims (:mod:`kit.shortcut.te_claims`), the sparsity, side-effect, ranking
rule, cheater and agreement claims here, all assembled by :func:`shortcut_claims`.

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
  and an empirical p-value), not one random draw, on the test items that did not locate them
  (``Evidence.sparsity_locating``; none held out: *cannot be decided here*), weakened on a sparse
  M_con whose neurons the world planted.
- Duplicates go: a cheater row that is a Table 2 model (``Evidence.cheater_same_as``) is claimed
  once, in Table 2; Table 2's ``+train split`` row is the paper's +GSM8K Train (A2).

:func:`stability_reruns` recomputes every claim under other bootstrap seeds for
:func:`kit.core.claims.mark_stability`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import (
    ALPHA,
    Claim,
    bootstrap_claim,
    claim,
    equivalence_floor,
    mark_stability,
    mark_undecidable,
    weaken,
)
from kit.core.stats import bootstrap_groups_ci, null_band
from kit.shortcut.evidence import PAPER, Evidence, PerItem, _delta, _units, leak_claim
from kit.shortcut.strength import real_strength_claim
from kit.shortcut.te_claims import _te_claims, acts_precondition, leak_precondition

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


PLANTED = (
    "the world planted these neurons: M_con's sparse fine-tune could change only its seeded "
    "'shortcut' set (kit.shortcut.variants.PLASTIC_SETS), so located neurons mattering more than "
    "random ones is largely built in"
)
"""The caveat of the sparsity claim on a sparse (seeded) M_con, as the sparse TE rows are
weakened."""


def _sparsity_claim(ev: Evidence, kw: dict) -> Claim:
    """Located neurons against ``draws`` random sets of the same count, on the locating M_con,
    scored on the test items that did not locate them (``Evidence.sparsity_locating``): a claim
    scored on its own locating items is refused (*cannot be decided here*); weakened
    (:data:`PLANTED`) when the world planted the neurons (``Evidence.by_construction``)."""
    st = (
        "Located neurons matter more than random ones: M_con's accuracy on held-out test items "
        f"with its {ev.n_patched} located neurons patched (%) lies below that with "
        f"{ev.n_patched} random ones"
    )
    if ev.sparsity is None or len(ev.sparsity) < 2:
        return claim(
            PAPER, "Fig. 3", "sparsity.located_vs_random", st, None, not_testable="no sparsity data"
        )
    n_items = ev.sparsity.shape[1]
    if ev.sparsity_locating is None:
        held = np.ones(n_items, bool)
        refused = "which test items located the neurons is not recorded: it may be scored on them"
    else:
        if len(ev.sparsity_locating) != n_items:
            raise ValueError(
                f"sparsity_locating: {len(ev.sparsity_locating)} flags for {n_items} sparsity items"
            )
        held = ~np.asarray(ev.sparsity_locating, bool)
        refused = (
            ""
            if held.any()
            else f"scored on its locating items: all {n_items} test items located the neurons "
            "(or share a content with one that did), none is held out (set n_eval > n_locate)"
        )
    if not held.any():  # nothing held out: the numbers on the locating items, shown, never read
        held = np.ones(n_items, bool)
    clusters = None if ev.sparsity_clusters is None else np.asarray(ev.sparsity_clusters)[held]
    loc, rand = ev.sparsity[0][held], ev.sparsity[1:, held]
    est = bootstrap_groups_ci(
        lambda g: float(100 * g[0][0].mean()), [(loc,)], clusters=[clusters], **kw
    )
    accs = 100 * rand.mean(axis=1)
    band = null_band(accs)
    # empirical p: random sets as low as the located
    p = (1 + int(np.sum(accs <= est[0]))) / (1 + len(accs))
    where = _units(len(loc), clusters, "held-out test items")
    if not refused:
        where += ", none of which located the neurons or shares a content with one that did"
    c = claim(
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
        interval_how=f"bootstrap over {where}",
        unit="contents" if clusters is not None else "held-out test items",
        empirical_p=p,
        null_draws=len(accs),
        n_held_out=0 if refused else len(loc),
    )
    if refused:
        return mark_undecidable(c, refused)
    if (1 + len(accs)) * ALPHA / 2 < 1:  # the located set is one more draw among them
        return mark_undecidable(
            c,
            f"{len(accs)} random sets: the smallest empirical p-value is 1/{len(accs) + 1} > "
            f"{ALPHA / 2:g} (at least {math.ceil(2 / ALPHA) - 1} sets)",
        )
    if ev.by_construction:
        c.rests_on = f"{c.rests_on} (weakened: {PLANTED})"
        weaken(c, PLANTED)
    return c


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
    # the smallest task decides what the design can reach (one changed answer moves most there)
    few = min(range(len(tasks)), key=lambda i: len(groups[i][0]))
    n_few, c_few = len(groups[few][0]), clusters[few]
    u_few = None if c_few is None else len(np.unique(np.asarray(c_few)))
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
            undecidable=equivalence_floor(n_few, margin, len(cells), n_units=u_few),
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
            unit="items of each side task",
            undecidable=equivalence_floor(n_few, margin, 1, level, n_units=u_few),
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
    on: dict[str, Any] = dict(rests_on=ev.cheaters_rests_on or ev.rests_on)
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
            out.append(
                leak_claim(
                    d,
                    fc,
                    kw,
                    table="Table 12",
                    claim_id=f"cheaters.leak[{label}]",
                    statement=f"{label}'s test score is inflated: Ori - "
                    "Ref (points; the precondition of detecting it)",
                    paper_value="Ori above Normal's (Table 12: no Ref there)",
                    interval_how=f"bootstrap over {n_test} and the fresh items",
                    **on,
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
                    undecidable=equivalence_floor(
                        len(d["ori"]),
                        margin,
                        n_units=None
                        if ev.test_clusters is None
                        else len(np.unique(ev.test_clusters)),
                    ),
                    **common,
                )
            )
    leak_precondition(out)
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
    kw: dict[str, Any] = dict(
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
    return bootstrap_claim(
        PAPER,
        "Fig. 4",
        cid,
        f"TE agrees with the reference better than Ori on {where}: "
        "Spearman(TE, Ref) - Spearman(Ori, Ref)",
        gain,
        te,
        ori,
        ref,
        **kw,
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
    if ev.strength_copies:  # Table 8 on real rows of one recipe at two or more strengths
        out.append(real_strength_claim(ev.te, ev.strength_copies, out, ev.rests_on, **kw))
    out.append(_sparsity_claim(ev, kw))
    side = _side_claims(ev, kw, margin)
    acts_precondition(out, "te.contaminated_drop", side)
    out += side
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
