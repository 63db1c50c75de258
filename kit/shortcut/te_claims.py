"""Table 2's claims of seed 001 (notebook 03) over its per-item evidence
(:class:`kit.shortcut.evidence.Evidence`): TE on Table 2's rows (``te.*``) and on the full
fine-tunes (``te_full.*``): per row Δacc and its leak, the pooled contaminated drop and clean
change, the clean rows' move toward Ref; weakened where TE's transfer is built in. Assembled with
the other claims by :func:`kit.shortcut.claims.shortcut_claims`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import (
    Claim,
    claim,
    equivalence_floor,
    excludes_null,
    mark_undecidable,
    weaken,
)
from kit.core.stats import bootstrap_groups_ci
from kit.shortcut.evidence import PAPER, Evidence, PerItem, _delta, _units, leak_claim


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
    on: dict[str, Any] = dict(rests_on=rests_on)
    tol: dict[str, Any]
    tol = dict(null_range=(-margin, margin), null_how=f"tolerance ±{margin:g} points")
    out: list[Claim] = []
    n_items = len(next(iter(te.values()))["ori"]) if te else 0
    n_units = None if ev.test_clusters is None else len(np.unique(ev.test_clusters))

    def floor(cells: int) -> str | None:
        """Can an equivalence over ``cells`` rows of these test items be supported at all?"""
        return equivalence_floor(n_items, margin, cells, n_units=n_units) if n_items else None

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
                    undecidable=floor(1),
                    **tol,
                    **common,
                )
            out.append(built_in(c))
        for (
            label
        ) in con:  # the precondition of each contaminated row: its test score is inflated at all
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
        band: dict[str, Any]
        band = (
            dict(tol, undecidable=floor(len(labels)))
            if direction == "within"
            else dict(null_how="no change (0)", paper_effect=_paper_effect())
        )
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
    leak_precondition(out)
    acts_precondition(out, f"{prefix}.contaminated_drop", out)
    return out
