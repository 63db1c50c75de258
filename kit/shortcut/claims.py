"""Claims of seed 001 (shortcut neurons, trustworthy evaluation) tested by notebook 03, declared
over its per-item evidence (:class:`kit.shortcut.evidence.Evidence`), each with its kind and what it
rests on: Table 2's TE claims (``te.*``, ``te_full.*``), the sparsity, side-effect, ranking rule,
cheater and agreement claims, all assembled by :func:`shortcut_claims`.

Table 2's Δacc of a few points on a few hundred items needs an interval, so the accuracies are
re-measured per item (:func:`kit.shortcut.evaluate.item_correct`, the same dynamic-patching
generation as :func:`kit.shortcut.evaluate.accuracies`, which returns means only) and bootstrapped
(:func:`kit.core.claims.bootstrap_groups_claim`).

- Held-out items: the neurons were located on the first ``n_locate`` test items, so every claim
  about them (TE on Table 2's rows, on the full fine-tunes and on the cheaters, the strength
  contrast, TE's agreement with Ref, the sparsity null) is scored on the other test items, less
  those sharing a content with a locating item (:func:`held_out`, one split for all); the leaks
  under them on the same items. None held out, or which located not recorded: those claims
  *cannot be decided here* (their numbers, on the locating items, shown but not read).
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
  sparing the clean ones, and the located neurons beating random ones, is largely built in: those
  claims are weakened alike (:func:`_built_in`, :func:`kit.core.claims.weaken`) with the reason
  (``Evidence.by_construction``, :data:`PLANTED`); the full fine-tunes carry the paper's claim.
- Side effects: per (row, task) cell, Bonferroni-corrected per-cell intervals (k cells hold together
  at 95%); the largest |Δacc| and the mean |Δacc| over cells read their intervals off them. A
  bootstrap of the mean |Δacc| itself would sit above its estimate (the absolute value of a noisy
  change is biased upward), so its percentile interval may start at or above it.
- Sparsity: the located neurons against >= 100 random neuron sets of the same count (their 95% band
  and an empirical p-value), not one random draw, on the held-out test items, weakened on a sparse
  M_con whose neurons the world planted.
- Duplicates go: a cheater row that is a Table 2 model (``Evidence.cheater_same_as``) is claimed
  once, in Table 2; Table 2's ``+train split`` row is the paper's +GSM8K Train (A2).

:func:`stability_reruns` recomputes every claim under other bootstrap seeds for
:func:`kit.core.claims.mark_stability`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import (
    ALPHA,
    Claim,
    bootstrap_claim,
    bootstrap_groups_claim,
    claim,
    equivalence_floor,
    excludes_null,
    mark_stability,
    mark_undecidable,
    weaken,
)
from kit.core.stats import bootstrap_groups_ci
from kit.shortcut.evidence import PAPER, Evidence, PerItem, _delta, _units
from kit.shortcut.strength import CLAIM_ID as STRENGTH_ID

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


# --- what the paper prints -------------------------------------------------------------------


def _paper_rho() -> str:
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_text_numbers")
    hit = t[t.iloc[:, 0].astype(str).str.contains("Spearman correlation of TE")]
    return f"TE ρ {hit.iloc[0, 1]} (§4.3, simulation)" if len(hit) else "Fig. 4"


def _paper_deltas(contaminated: bool) -> pd.Series:
    """Table 2's printed Δacc (points) of its contaminated (or clean) rows."""
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_table02_trustworthy_eval_gsm8k")
    is_con = t["model_variant"].str.contains("GSM-i")
    return pd.to_numeric(
        t.loc[is_con == contaminated, "delta_acc"].astype(str).str.replace("+", "", regex=False),
        errors="coerce",
    ).dropna()


def _paper_range(contaminated: bool) -> str:
    d = _paper_deltas(contaminated)
    return f"Δacc {d.min():+.1f} to {d.max():+.1f} (Table 2)" if len(d) else "Table 2"


def _paper_effect() -> tuple[float, float] | None:
    """The range of Table 2's Δacc over its contaminated rows (-49.8 to -7.1 points), the
    published effect a TE drop is read against (:func:`kit.core.claims.versus_paper`)."""
    d = _paper_deltas(True)
    return (float(d.min()), float(d.max())) if len(d) else None


def _paper_table12() -> dict[str, str]:
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("001_table12_kieval_arc_challenge")
    return {str(r["model"]): str(r["delta_acc"]) for _, r in t.iterrows()}


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


# --- the held-out items and the built-in wins --------------------------------------------------

LOCATED_IDS = ("te.", "te_full.", "cheaters.", "sparsity.", "agreement.te_vs_ori", STRENGTH_ID)
"""Claims about the located neurons (ids starting so; the leaks beneath them excepted): scored on
the held-out test items only (:func:`held_out`); A2's ``a2.format_te`` too, by
:func:`format_claims` itself."""


def _about_located(c: Claim) -> bool:
    return c.id.startswith(LOCATED_IDS) and ".leak" not in c.id


def held_mask(locating: np.ndarray | None) -> tuple[np.ndarray | None, str]:
    """The split every claim about the located neurons reads: from the per-test-item flags of
    :func:`kit.shortcut.evidence.locating_items`, the mask of the held-out items and ``""``, or
    None and why such a claim must be refused (none held out, or which located not recorded).

    >>> held_mask(np.array([True, False, False]))
    (array([False,  True,  True]), '')
    """
    if locating is None:
        return None, (
            "which test items located the neurons is not recorded: it may be scored on them"
        )
    flags = np.asarray(locating, bool)
    if not (~flags).any():
        return None, (
            f"scored on its locating items: all {len(flags)} test items located the neurons (or "
            "share a content with one that did), none is held out (set n_eval > n_locate)"
        )
    return ~flags, ""


def held_out(ev: Evidence) -> tuple[Evidence, str]:
    """``ev`` on the held-out test items only (:func:`held_mask` of ``ev.test_locating``): the
    per-item Ori and TE of Table 2's rows, the full fine-tunes and the cheaters, and the sparsity
    rows, without the items that located the neurons or share a content with one; Ref's fresh items
    stay. Returns it and ``""``, or ``ev`` unchanged and why the claims about the located neurons
    must be refused.

    >>> d = {"ori": np.array([1.0, 1, 0, 1]), "te": np.array([0.0, 0, 0, 1]), "ref": np.zeros(3)}
    >>> ev = Evidence({"+test": d}, ["+test"], pd.DataFrame(), pd.DataFrame(), 1,
    ...               test_locating=np.array([True, True, False, False]))
    >>> held, refused = held_out(ev)
    >>> held.te["+test"]["ori"].tolist(), held.te["+test"]["te"].tolist(), refused
    ([0.0, 1.0], [0.0, 1.0], '')
    """
    rows = [r for r in (ev.te, ev.te_full, ev.cheaters) if r]
    lengths = {len(d[k]) for r in rows for d in r.values() for k in ("ori", "te")}
    if ev.test_locating is not None:
        n = len(ev.test_locating)
        if lengths - {n}:
            raise ValueError(
                f"test_locating: {n} flags, but the rows' Ori/TE hold {sorted(lengths)} test items"
            )
        if ev.sparsity is not None and ev.sparsity.shape[1] != n - ev.sparsity_from:
            raise ValueError(
                f"sparsity: {ev.sparsity.shape[1]} items from test item {ev.sparsity_from} on, "
                f"but test_locating has {n} flags"
            )
    keep, refused = held_mask(ev.test_locating)
    if keep is None:
        return ev, refused

    def cut(rows: PerItem | None) -> PerItem | None:
        if rows is None:
            return None
        return {v: {**d, "ori": d["ori"][keep], "te": d["te"][keep]} for v, d in rows.items()}

    return (
        replace(
            ev,
            te=cut(ev.te) or {},
            te_full=cut(ev.te_full),
            cheaters=cut(ev.cheaters),
            test_clusters=None if ev.test_clusters is None else np.asarray(ev.test_clusters)[keep],
            sparsity=None if ev.sparsity is None else ev.sparsity[:, keep[ev.sparsity_from :]],
            sparsity_from=0,
            test_locating=np.zeros(int(keep.sum()), bool),
        ),
        "",
    )


def _test_items(ev: Evidence) -> str:
    """What ``ev``'s test items are, in words: held out (:func:`held_out` kept none that located)
    or all of them."""
    held = ev.test_locating is not None and not np.any(ev.test_locating)
    return "held-out test items" if held else "test items"


PLANTED = (
    "the world planted these neurons: M_con's sparse fine-tune could change only its seeded "
    "'shortcut' set (kit.shortcut.variants.PLASTIC_SETS), so located neurons mattering more than "
    "random ones is largely built in"
)
"""The caveat of the sparsity claim on a sparse (seeded) M_con, as the sparse TE rows are
weakened."""


def _built_in(c: Claim, reason: str) -> Claim:
    """Weaken a claim whose win the world built in (``reason``; "" when it did not), saying so in
    what it rests on as well, so its finding says why: the sparse TE rows, their agreement with Ref
    and the sparsity claim alike."""
    if not reason:
        return c
    c.rests_on = f"{c.rests_on} (weakened: {reason})"
    return weaken(c, reason)


# --- Table 2: TE per row, pooled, toward Ref, and the leaks under them -------------------------


def leak_claim(
    d: Mapping[str, np.ndarray],
    clusters: list,
    kw: dict,
    *,
    table: str,
    claim_id: str,
    statement: str,
    paper_value: str,
    interval_how: str,
    rests_on: str,
) -> Claim:
    """The set-up check under a contaminated row's TE claims: its test score is inflated at all,
    Ori - Ref in points (bootstrap over the test and the fresh items), against no leak (0). Notebook
    03's Table 2 rows (``te.leak``) and Table 12's cheaters (``cheaters.leak``) both rest on it."""
    return bootstrap_groups_claim(
        PAPER,
        table,
        claim_id,
        statement,
        lambda g: float(100 * (g[0][0].mean() - g[1][0].mean())),
        [(d["ori"],), (d["ref"],)],
        clusters=clusters,
        **kw,
        null=0.0,
        direction="greater",
        null_how="no leak (0)",
        kind="set-up check",
        paper_value=paper_value,
        rests_on=rests_on,
        interval_how=interval_how,
    )


def leak_precondition(out: Sequence[Claim]) -> None:
    """TE lowering a contaminated row says something only where the row's leak is established:
    each ``<prefix>.delta[<row>]`` (and a pooled ``<prefix>.contaminated_drop`` beside one pooled
    ``<prefix>.leak``) whose leak claim's interval does not exclude 0 cannot be decided here."""
    by_id = {c.id: c for c in out}
    for c in out:
        prefix, _, rest = c.id.partition(".")
        if rest.startswith("delta[") and c.direction == "less":
            leak = by_id.get(f"{prefix}.leak[{rest[len('delta[') :]}")
        elif rest == "contaminated_drop":
            leak = by_id.get(f"{prefix}.leak")
        else:
            continue
        if leak is not None and not excludes_null(leak):
            mark_undecidable(
                c,
                f"its leak is not established ({leak.id}: {leak.why.split(';')[0]}): TE has no "
                "inflated score to lower",
            )


def acts_precondition(out: Sequence[Claim], drop_id: str, targets: Sequence[Claim]) -> None:
    """'Patching leaves clean rows (other tasks) unchanged' says something only where the patch
    acts: where the contaminated drop (claim ``drop_id`` in ``out``) does not exclude 0, an
    unchanged row cannot be told from a patch that changes nothing, so the equivalence claims among
    ``targets`` cannot be decided here."""
    drop = next((c for c in out if c.id == drop_id), None)
    if drop is None or drop.ours is None or excludes_null(drop):
        return
    for c in targets:
        if c.direction == "within":
            mark_undecidable(
                c,
                f"the patch is not shown to act ({drop.id}: {drop.why.split(';')[0]}): an "
                "unchanged row cannot be told from a patch that changes nothing",
            )


def _mean_delta(labels: Sequence[str]):
    """Statistic over ``[test table]`` whose columns are (ori, te) per label: mean Δacc in
    points."""

    def stat(groups):
        cols = groups[0]
        return float(np.mean([_delta(cols[2 * k], cols[2 * k + 1]) for k in range(len(labels))]))

    return stat


def _test_table(te: PerItem, labels: Sequence[str]) -> tuple[np.ndarray, ...]:
    return tuple(a for v in labels for a in (te[v]["ori"], te[v]["te"]))


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
    and clean change, the clean rows' move toward Ref; weakened by ``by_construction`` when set.
    ``ev``: the held-out evidence (:func:`held_out`), whose test items ``te`` holds."""
    rows = [v for v in te if v not in ev.base_labels]
    con = [v for v in rows if v in contaminated]
    clean = [v for v in rows if v not in contaminated]
    tc, fc = [ev.test_clusters], [ev.test_clusters, ev.fresh_clusters]
    what = _test_items(ev)
    n_test = _units(len(next(iter(te.values()))["ori"]), ev.test_clusters, what) if te else ""
    n_fresh = (
        _units(len(next(iter(te.values()))["ref"]), ev.fresh_clusters, "fresh items") if te else ""
    )
    on: dict[str, Any] = dict(rests_on=rests_on)
    tol: dict[str, Any]
    tol = dict(null_range=(-margin, margin), null_how=f"tolerance ±{margin:g} points")
    out: list[Claim] = []
    n_items = len(next(iter(te.values()))["ori"]) if te else 0
    n_units = None if ev.test_clusters is None else len(np.unique(ev.test_clusters))

    def floor(cells: int) -> str | None:
        """Can an equivalence over ``cells`` rows of these test items be supported at all?"""
        return equivalence_floor(n_items, margin, cells, n_units=n_units) if n_items else None

    if per_row:
        for label in con + clean:
            d = te[label]
            a2 = (
                " (the paper's +GSM8K Train: assumption A2, -6.5 / -4.3 there)"
                if label == "+train split"
                else ""
            )
            row: dict[str, Any]
            row = (
                dict(
                    statement=f"TE lowers the test accuracy of contaminated {label} (Δacc = TE - "
                    "Ori, points)",
                    direction="less",
                    null_how="no change (0)",
                    paper_value=_paper_range(True),
                )
                if label in con
                else dict(
                    statement=f"TE leaves the clean {label}{a2} unchanged (Δacc, points)",
                    direction="within",
                    paper_value=_paper_range(False),
                    undecidable=floor(1),
                    **tol,
                )
            )
            c = bootstrap_groups_claim(
                PAPER,
                "Table 2",
                f"{prefix}.delta[{label}]",
                stat=lambda g: _delta(*g[0]),
                groups=[(d["ori"], d["te"])],
                clusters=tc,
                **kw,
                null=0.0,
                interval_how=f"paired bootstrap over {n_test}",
                **row,
                **on,
            )
            out.append(_built_in(c, by_construction))
        for label in con:  # the precondition of each contaminated row: its test score is inflated
            out.append(
                leak_claim(
                    te[label],
                    fc,
                    kw,
                    table="Table 2",
                    claim_id=f"{prefix}.leak[{label}]",
                    statement=f"contaminated {label}'s test score is "
                    "inflated: Ori - Ref (points; the precondition of lowering it)",
                    paper_value="Ori above Ref (Table 2)",
                    interval_how=f"bootstrap over {n_test} and {n_fresh}",
                    **on,
                )
            )
    elif con:  # one leak for the pooled rows: does the construction leak at all
        k = len(con)
        out.append(
            bootstrap_groups_claim(
                PAPER,
                "Table 2",
                f"{prefix}.leak",
                f"the {k} contaminated full fine-tunes' test scores are "
                "inflated: mean Ori - Ref (points; the precondition of lowering them)",
                lambda g: float(100 * np.mean([g[0][i].mean() - g[1][i].mean() for i in range(k)])),
                [tuple(te[v]["ori"] for v in con), tuple(te[v]["ref"] for v in con)],
                clusters=fc,
                **kw,
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
        band: dict[str, Any]
        band = (
            dict(tol, undecidable=floor(len(labels)))
            if direction == "within"
            else dict(null_how="no change (0)", paper_effect=_paper_effect())
        )
        c = bootstrap_groups_claim(
            PAPER,
            "Table 2",
            f"{prefix}.{cid}",
            statement,
            _mean_delta(labels),
            [_test_table(te, labels)],
            clusters=tc,
            **kw,
            null=0.0,
            direction=direction,
            paper_value=_paper_range(direction == "less"),
            **band,
            **on,
            interval_how=f"bootstrap over {n_test}, shared by the rows",
        )
        out.append(_built_in(c, by_construction))
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

            c = bootstrap_groups_claim(
                PAPER,
                "Table 2",
                f"{prefix}.clean_toward_ref",
                st,
                toward,
                [_test_table(te, clean), tuple(te[v]["ref"] for v in clean)],
                clusters=fc,
                **kw,
                null=0.0,
                direction="greater",
                null_how="no move (0)",
                **on,
                paper_value="clean Ori and TE both near Ref (Table 2)",
                interval_how=f"bootstrap over {n_test} and {n_fresh}, shared by the rows",
            )
            out.append(_built_in(c, by_construction))
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
    leak_precondition(out)
    acts_precondition(out, f"{prefix}.contaminated_drop", out)
    return out


# --- Figure 3: located vs random neurons -------------------------------------------------------


def _sparsity_claim(ev: Evidence, kw: dict) -> Claim:
    """Located neurons against ``draws`` random sets of the same count, on the locating M_con,
    on the test items of ``ev`` (the held-out ones: :func:`held_out`); a null too small to reach the
    level cannot decide; weakened (:data:`PLANTED`) when the world planted the neurons
    (``Evidence.by_construction``)."""
    st = (
        "Located neurons matter more than random ones: M_con's accuracy on held-out test items "
        f"with its {ev.n_patched} located neurons patched (%) lies below that with "
        f"{ev.n_patched} random ones"
    )
    if ev.sparsity is None or len(ev.sparsity) < 2:
        return claim(
            PAPER, "Fig. 3", "sparsity.located_vs_random", st, None, not_testable="no sparsity data"
        )
    start = ev.sparsity_from
    clusters = None if ev.test_clusters is None else np.asarray(ev.test_clusters)[start:]
    loc, rand = ev.sparsity[0], ev.sparsity[1:]
    accs = 100 * rand.mean(axis=1)
    where = _units(len(loc), clusters, _test_items(ev))
    if _test_items(ev).startswith("held-out"):
        where += ", none of which located the neurons or shares a content with one that did"
    c = bootstrap_groups_claim(
        PAPER,
        "Fig. 3",
        "sparsity.located_vs_random",
        st,
        lambda g: float(100 * g[0][0].mean()),
        [(loc,)],
        clusters=[clusters],
        **kw,
        null_draws=accs,
        direction="less",
        null_how=f"95% range over {len(accs)} random neuron sets of the same count",
        figure="fig3_sparsity_curve",
        paper_value="located ≪ random (Fig. 3)",
        rests_on=ev.sparsity_rests_on or ev.rests_on,
        interval_how=f"bootstrap over {where}",
        unit="contents" if clusters is not None else "held-out test items",
        n_null_draws=len(accs),
    )
    # the empirical p: random sets as low as the located (the located set one more draw)
    c.null_how += f" (mean {c.extra['null_mean']:.1f}; empirical p = {c.extra['p_value']:.3f})"
    if (1 + len(accs)) * ALPHA / 2 < 1:
        return mark_undecidable(
            c,
            f"{len(accs)} random sets: the smallest empirical p-value is 1/{len(accs) + 1} > "
            f"{ALPHA / 2:g} (at least {math.ceil(2 / ALPHA) - 1} sets)",
        )
    return _built_in(c, PLANTED if ev.by_construction else "")


# --- Table 3: side effects on other tasks ------------------------------------------------------


def _side_claims(ev: Evidence, kw: dict, margin: float) -> list[Claim]:
    """Table 3: per cell Δacc and its Bonferroni interval (k cells hold together at 95%; one
    resampling of each task's items, shared by its rows); the largest |Δacc| and the mean |Δacc|
    over cells with the intervals those give: over every Δ inside its cell's interval, the
    largest (mean) |Δ| ranges from the largest (mean) distance of an interval to 0 to the largest
    (mean) of its ends' |·|. Read off intervals of Δ, which sit on their estimates, these hold the
    estimate wherever each cell's interval holds its own."""
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
    n_items = ", ".join(
        f"{_units(len(groups[i][0]), clusters[i], 'items')} of {t}" for i, t in enumerate(tasks)
    )
    # the smallest task decides what the design can reach (one changed answer moves most there)
    few = min(range(len(tasks)), key=lambda i: len(groups[i][0]))
    n_few, c_few = len(groups[few][0]), clusters[few]
    u_few = None if c_few is None else len(np.unique(np.asarray(c_few)))
    per_cell = {f"{v} / {t}": round(d, 3) for (v, t), d in deltas.items()}
    # Bonferroni: each cell's interval at 1 - 0.05 / k, so all k hold together at 95%
    k = len(cells)
    level = 1 - 0.05 / k
    # ~10 replicates in each tail
    boot = dict(kw, n_boot=max(kw["n_boot"], math.ceil(20 * k / 0.05)))
    near, far = [], []  # per cell: the interval's distance to 0, its larger end's |·|
    for c in cells:
        _, a, b = bootstrap_groups_ci(
            lambda g, c=c: cell(g, c), groups, clusters=clusters, level=level, **boot
        )
        near.append(0.0 if a <= 0 <= b else min(abs(a), abs(b)))
        far.append(max(abs(a), abs(b)))
    how = (
        f"Bonferroni ({k} cells) bootstrap intervals of each cell's Δacc, {boot['n_boot']} "
        f"replicates over {n_items}, shared by the rows"
    )
    (v, t), d = max(deltas.items(), key=lambda kv: abs(kv[1]))
    return [
        claim(
            PAPER,
            "Table 3",
            "side_effects.unchanged",
            st_mean,
            float(np.mean([abs(x) for x in deltas.values()])),
            ci=(float(np.mean(near)), float(np.mean(far))),
            null=0.0,
            direction="within",
            interval_how=f"the mean over cells of {how} (not a bootstrap of the mean |Δacc|, "
            "which is biased upward: its interval may lie above its estimate)",
            unit="items of each side task",
            undecidable=equivalence_floor(n_few, margin, k, level, n_units=u_few),
            cells=per_cell,
            **tol,
        ),
        claim(
            PAPER,
            "Table 3",
            "side_effects.largest_cell",
            st_max,
            abs(d),
            ci=(max(near), max(far)),
            null=0.0,
            direction="within",
            caveat=f"largest: {v} on {t}, {d:+.1f}",
            interval_how=f"the max over cells of {how}",
            unit="items of each side task",
            undecidable=equivalence_floor(n_few, margin, 1, level, n_units=u_few),
            cells=per_cell,
            **tol,
        ),
    ]


# --- A2: the benchmark's input format as a shortcut ------------------------------------------


def format_claims(
    per_item: Mapping[str, Mapping[str, np.ndarray]],
    label: str,
    vanilla: str,
    locating: np.ndarray | None,
    clusters: np.ndarray | None = None,
    seed: int = 0,
    n_boot: int = 1000,
) -> list[Claim]:
    """A2's claims on the benchmark input format (``per_item`` from
    :func:`kit.shortcut.formats.format_section`): the format favours ``label``, the fine-tune on
    the train split in that format, over ``vanilla`` (on the same fresh items, the format's effect
    on ``label`` minus its effect on ``vanilla``, > 0: the precondition, a format shortcut to
    remove), and TE lowers ``label``'s score in the format (Δacc < 0; the paper: -6.5 / -4.3 on
    +GSM8K Train), on the wrapped test items that did not locate the neurons (``locating``: per
    test item, :func:`kit.shortcut.evidence.locating_items`; refused by :func:`held_mask`
    otherwise), those sharing a content (``clusters``) resampled together."""
    if label not in per_item or vanilla not in per_item:
        raise ValueError(
            f"format_claims: {label!r} and {vanilla!r} must be rows of per_item "
            f"({', '.join(per_item)})"
        )
    kw: dict[str, Any] = dict(n_boot=n_boot, seed=seed)
    d, v = per_item[label], per_item[vanilla]
    if locating is not None and len(locating) != len(d["ori"]):
        raise ValueError(f"locating: {len(locating)} flags for {len(d['ori'])} test items")
    keep, refused = held_mask(locating)
    ori, te, cl = d["ori"], d["te"], clusters
    if keep is not None:
        ori, te = ori[keep], te[keep]
        cl = None if clusters is None else np.asarray(clusters)[keep]
    adv = bootstrap_claim(
        PAPER,
        "Table 2",
        f"a2.format_advantage[{label}]",
        f"The benchmark's input format favours {label} (its train "
        f"split in that format) over {vanilla}: the format's effect on {label}'s accuracy "
        f"minus its effect on {vanilla}'s, on the same fresh items (points; the precondition "
        "of A2)",
        lambda a, b, c, e: float(100 * np.mean((b - a) - (e - c))),
        d["fresh_plain"],
        d["fresh_format"],
        v["fresh_plain"],
        v["fresh_format"],
        **kw,
        null=0.0,
        direction="greater",
        null_how="no advantage (0)",
        kind="set-up check",
        rests_on=f"tiny world: {label} fine-tuned on train items wrapped in the benchmark's format",
        paper_value="+GSM8K Train Ori - Ref +10.4 / +6.8 vs Vanilla +1.8 / +8.2 (Table 2)",
        interval_how=f"paired bootstrap over {len(d['fresh_plain'])} fresh items, each with "
        "and without the format",
    )
    what = "test items" if refused else "held-out test items"
    delta = bootstrap_groups_claim(
        PAPER,
        "Table 2",
        f"a2.format_te[{label}]",
        f"A2: TE lowers {label}'s score in the benchmark's format (Δacc = TE - Ori, points)",
        lambda g: _delta(*g[0]),
        [(ori, te)],
        clusters=[cl],
        **kw,
        null=0.0,
        direction="less",
        null_how="no change (0)",
        paper_value="-6.5 / -4.3 (Table 2, +GSM8K Train)",
        rests_on=f"tiny world: {label}, a clean sparse fine-tune (the 'ability' neuron set), "
        "scored with the neurons located on contamination without the format",
        interval_how=f"paired bootstrap over {_units(len(ori), cl, what)}",
    )
    return [adv, mark_undecidable(delta, refused) if refused else delta]


# --- Table 12: the cheaters --------------------------------------------------------------------


def cheater_claims(ev: Evidence, kw: dict, margin: float = UNCHANGED_MARGIN) -> list[Claim]:
    """Table 12 (``ev.cheaters``, on the held-out test items of ``ev``: :func:`held_out`): per
    cheater its leak (Ori - Ref > 0, a set-up check: the precondition of detecting it) and TE's
    drop (Δacc < 0; the paper: -16.0 SFT, -17.5 PT); per clean row Δacc within ±``margin`` (the
    paper: +2.9). Rows that are Table 2 models (``ev.cheater_same_as``) are claimed there only."""
    te = ev.cheaters or {}
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
        n_test = _units(len(d["ori"]), ev.test_clusters, _test_items(ev))
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
            row: dict[str, Any] = dict(
                statement=f"TE lowers the cheater {label}'s test accuracy (Δacc = TE - Ori, "
                "points)",
                direction="less",
                null_how="no change (0)",
            )
        else:
            row = dict(
                statement=f"TE leaves the clean {label} unchanged (Δacc, points)",
                null_range=(-margin, margin),
                direction="within",
                null_how=f"tolerance ±{margin:g} points",
                undecidable=equivalence_floor(
                    len(d["ori"]),
                    margin,
                    n_units=None if ev.test_clusters is None else len(np.unique(ev.test_clusters)),
                ),
            )
        out.append(
            bootstrap_groups_claim(
                PAPER,
                "Table 12",
                f"cheaters.delta[{label}]",
                stat=lambda g: _delta(*g[0]),
                groups=[(d["ori"], d["te"])],
                clusters=tc,
                **kw,
                null=0.0,
                paper_value=pv,
                interval_how=f"paired bootstrap over {n_test}",
                **row,
                **on,
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
    """Every claim of notebook 03 from its :class:`Evidence` (see the module docstring): those
    about the located neurons on the held-out test items (:func:`held_out`), refused when none
    is."""
    _check_table(ev.te, ev.table2, "Table 2")
    _check_table(ev.cheaters or {}, ev.table12, "Table 12")
    held, refused = held_out(ev)  # every claim below reads the held-out items only
    kw = dict(n_boot=n_boot, seed=seed)
    out = _te_claims(
        held,
        held.te,
        held.contaminated,
        "te",
        held.rests_on,
        held.by_construction,
        kw,
        margin,
        per_row=True,
    )
    if held.te_full:
        out += _te_claims(
            held,
            held.te_full,
            held.full_contaminated,
            "te_full",
            held.full_rests_on,
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
                not_testable=held.full_absent,
            )
            for i in ("contaminated_drop", "clean_unchanged")
        ]
    if held.strength_copies:  # Table 8 on real rows of one recipe at two or more strengths
        out.append(
            real_strength_claim(
                held.te, held.strength_copies, out, held.rests_on, _test_items(held), **kw
            )
        )
    out.append(_sparsity_claim(held, kw))
    side = _side_claims(held, kw, margin)
    acts_precondition(out, "te.contaminated_drop", side)
    out += side
    rows = [v for v in held.te if v not in held.base_labels]
    te, ori, ref = ([100 * held.te[v][k].mean() for v in rows] for k in ("te", "ori", "ref"))
    agree = _agreement_claim(
        "agreement.te_vs_ori",
        f"the Table 2 rows (without the base itself), TE and Ori on the {_test_items(held)}",
        te,
        ori,
        ref,
        kw,
        "fig4_agreement_tiny",
        rests_on=held.rests_on,
    )
    out.append(_built_in(agree, held.by_construction))
    out.append(
        _agreement_claim(
            "agreement.table9",
            "the paper's printed Table 9 (real models vs MixEval)",
            held.table9["te"],
            held.table9["ori"],
            held.table9["ref_mixeval"],
            kw,
            "fig4_agreement_table9",
            kind="re-analysis",
            rests_on="the paper's printed Table 9 (001_table09_real_world_models)",
        )
    )
    out.append(rule_choice_claim(held.rules, held.rule))
    if held.cheaters:
        out += cheater_claims(held, kw, margin)
    n_held = None if refused else len(held.test_locating if held.test_locating is not None else [])
    for c in out:
        if _about_located(c):
            c.extra["n_held_out"] = n_held or 0
            if refused:
                mark_undecidable(c, refused)
    out += held.extra_claims
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


def real_strength_claim(
    te: PerItem,
    copies: Mapping[str, int],
    out: Sequence[Claim],
    rests_on: str,
    items: str = "test items",
    n_boot: int = 1000,
    seed: int = 0,
) -> Claim:
    """Δacc(most copies) - Δacc(fewest copies) in points, paired over the test items (``items``:
    what they are, e.g. the held-out ones), against 0 (direction ``less``); cannot be decided when
    either row's leak claim (in ``out``) does not exclude 0."""
    low = min(copies, key=lambda k: (copies[k], k))
    high = max(copies, key=lambda k: (copies[k], k))
    a, b = te[low], te[high]
    if len(a["ori"]) != len(b["ori"]):
        raise ValueError(
            f"rows {low!r} and {high!r} were scored on different items ({len(a['ori'])} vs "
            f"{len(b['ori'])}): the strength contrast pairs them item by item"
        )

    def stat(ori_l, te_l, ori_h, te_h):
        return _delta(ori_h, te_h) - _delta(ori_l, te_l)

    arrays = [np.asarray(x, float) for x in (a["ori"], a["te"], b["ori"], b["te"])]
    c = bootstrap_claim(
        PAPER,
        "Fig. 5 / Table 8",
        STRENGTH_ID,
        f"TE's drop grows with contamination strength: Δacc of {high} ({copies[high]}x) minus "
        f"Δacc of {low} ({copies[low]}x), points (the same {items})",
        stat,
        *arrays,
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        null_how="no change with strength (0)",
        direction="less",
        paper_value="larger drops at more occurrences (Fig. 5, Table 8)",
        interval_how=f"paired bootstrap over {len(arrays[0])} {items}",
        rests_on=f"{rests_on}; the {copies[low]}x and {copies[high]}x rows of one recipe",
    )
    leaks = {c_.id: c_ for c_ in out}
    for label in (low, high):
        leak = leaks.get(f"te.leak[{label}]")
        if leak is not None and not excludes_null(leak):
            return mark_undecidable(
                c,
                f"the {label} row's leak is not established ({leak.id}: "
                f"{leak.why.split(';')[0]}): TE has no inflated score to lower",
            )
    return c
