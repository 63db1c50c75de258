"""Notebook 03's typed study result (seed 001): :class:`ShortcutStudy`, filled section by section
(tab-completable: ``study.table2``, ``study.located``...), :func:`measure_evidence`, the
per-item re-measurements its claims are declared over
(:class:`kit.shortcut.evidence.Evidence`), and :func:`summary_section`, what the notebook records
from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from kit.core.claims import Claim
from kit.shortcut import scope
from kit.shortcut.evaluate import agreement, table2_summary, te_items
from kit.shortcut.evidence import (
    Evidence,
    PerItem,
    locating_items,
    side_items,
    sparsity_items,
)
from kit.shortcut.items import TaskData
from kit.shortcut.patching import Neuron
from kit.shortcut.published import paper_relative_changes, paper_text_numbers
from kit.shortcut.ranking import Located
from kit.shortcut.strength import strength_rows
from kit.shortcut.study import Setup, a2_findings, construction, findings


@dataclass
class ShortcutStudy:
    """Everything notebook 03 computes, in the order its sections fill it."""

    cfg: Any
    """The notebook's config (:class:`kit.configs.shortcut_neurons.Config`)."""
    setup: Setup
    """The base, Table 2's models and the item sets (:func:`kit.shortcut.study.setup`)."""
    n_patched: int = 0
    """Neurons patched by TE (``patched_fraction`` of all MLP neurons)."""
    located: Located | None = None
    """Section 1: the scores and the ranking by the chosen rule."""
    rules: pd.DataFrame | None = None
    """Section 1b: every ranking rule on the held-out items, with intervals to the chosen one."""
    changed: set[Neuron] | None = None
    """The neurons M_con's fine-tune changed (tiny world only; never used to locate)."""
    truth: dict | None = None
    """How many located neurons M_con (and M_un alone) changed
    (:func:`kit.shortcut.study.ground_truth`)."""
    causal_tracks: dict | None = None
    table2: pd.DataFrame | None = None
    """Section 2: Ref, Ori, TE, Δacc per row (%)."""
    curve: pd.DataFrame | None = None
    """Section 3 (Fig. 3): accuracy vs patched count, located vs random."""
    side: dict[str, TaskData] = field(default_factory=dict)
    """Section 4: the side tasks' items."""
    table3: pd.DataFrame | None = None
    table4: pd.DataFrame | None = None
    table5: pd.DataFrame | None = None
    table9: pd.DataFrame | None = None
    """The paper's printed Table 9."""
    table9_stats: pd.DataFrame | None = None
    dense: dict | None = None
    """Section 7: the full fine-tunes' Table 2, its summary and the all-neuron ceiling."""
    dense_items: PerItem | None = None
    """Section 7's per-item Ori, TE and Ref (the claims ``te_full.*``)."""
    strength: pd.DataFrame | None = None
    table6: pd.DataFrame | None = None
    table12: pd.DataFrame | None = None
    cheater_items: PerItem | None = None
    table_a2: pd.DataFrame | None = None
    format_claims: list[Claim] = field(default_factory=list)
    evidence: Evidence | None = None
    """What the claims rest on (:func:`measure_evidence`)."""
    claims: list[Claim] = field(default_factory=list)

    @property
    def shortcut(self) -> list[Neuron]:
        """The located top ``n_patched`` neurons TE patches."""
        if self.located is None:
            raise ValueError("no neurons located yet: section 1 fills study.located")
        return list(self.located.ranked[: self.n_patched])


def measure_evidence(study: ShortcutStudy) -> Evidence:
    """Re-measure per item what the claims need (the same generations as the sections' tables):
    Table 2's rows, the side tasks, M_con with the located neurons and ``cfg.n_null`` random sets,
    with what each rests on (:func:`kit.shortcut.study.construction`)."""
    s, cfg = study.setup, study.cfg
    if study.table2 is None or study.located is None or study.table9 is None:
        raise ValueError(
            "measure_evidence needs sections 1, 2 and 6 (study.located, study.table2, study.table9)"
        )
    shortcut, kw = study.shortcut, dict(max_rows=cfg.max_rows, max_new_tokens=cfg.max_new_tokens)
    # the sparsity null is run on the test items after the locating ones (s.heldout) when there are
    # any (else on all, and its claim is refused); the claims about the located neurons leave out
    # the locating items and those sharing a content with one (test_locating)
    on, first = (s.heldout, s.locate.n) if s.heldout is not None else (s.test, 0)
    rests_on, by_construction = construction(cfg.variants, cfg.world, cfg.locate_pair)
    ev = Evidence(
        # generated answers were kept per item by the tables (the same generations): not run twice
        te=study.table2.attrs.get("per_item")
        or te_items(s.models, s.base, s.test, s.fresh, shortcut, **kw),
        contaminated=cfg.contaminated,
        table2=study.table2,
        table9=study.table9,
        n_patched=study.n_patched,
        rests_on=rests_on,
        by_construction=by_construction,
        base_labels=[k for k, v in cfg.variants.items() if v == cfg.base_model],
        test_clusters=s.test.clusters,
        fresh_clusters=s.fresh.clusters,
        rules=study.rules,
        rule=study.located.rule,
        side=(study.table3.attrs.get("per_item") if study.table3 is not None else None)
        or side_items(s.models, s.base, study.side, shortcut, **kw),
        side_clusters={t: d.clusters for t, d in study.side.items()},
        sparsity=sparsity_items(
            s.model_con,
            s.base,
            on,
            study.located.ranked,
            study.n_patched,
            cfg.seed,
            n_null=cfg.n_null,
            **kw,
        ),
        sparsity_rests_on=f"{rests_on}; M_con is the locating model",
        sparsity_from=first,
        test_locating=locating_items(s.test.n, s.locate.n, s.test.clusters),
        full_absent=scope.full_rows_cause(cfg),
        extra_claims=list(study.format_claims) + scope.untested_sections(cfg),
        strength_copies=strength_rows(cfg.variants),
    )
    if study.dense_items is not None and cfg.dense_variants:  # section 7: the paper's setting
        ev.te_full, ev.full_contaminated = study.dense_items, cfg.contaminated
        ev.full_rests_on = construction(cfg.dense_variants, cfg.world, cfg.locate_pair)[0]
    if study.cheater_items is not None and cfg.cheaters:  # Table 12
        same = {v: k for k, v in cfg.variants.items()}  # Table 2's models: claimed there
        ev.cheaters, ev.table12 = study.cheater_items, study.table12
        ev.cheaters_contaminated = cfg.cheaters_contaminated
        ev.cheater_same_as = {k: same[v] for k, v in cfg.cheaters.items() if v in same}
        built = construction(cfg.cheaters, cfg.world)[0]
        ev.cheaters_rests_on = (
            f"{built}: PT rows continue the base on its own mixture with the "
            "test items (full-parameter), then the clean SFT"
        )
    return ev


def summary_section(study: ShortcutStudy):
    """Everything notebook 03 records, and its findings in words, from its filled study
    (:class:`ShortcutStudy`: sections 1-7)."""
    from kit.core.findings import Section

    s, cfg, located, shortcut = study.setup, study.cfg, study.located, study.shortcut
    table2, curve, table3, table4 = study.table2, study.curve, study.table3, study.table4
    table9_stats, truth, rules = study.table9_stats, study.truth, study.rules
    causal_tracks, dense = study.causal_tracks, study.dense
    # set by sections 1-7 of a filled study
    assert located is not None and table2 is not None and curve is not None and table3 is not None
    assert table9_stats is not None
    n_patched, total = len(shortcut), s.total_neurons
    summary2 = table2_summary(table2)
    agree_te, agree_ori = agreement(table2.te, table2.ref), agreement(table2.ori, table2.ref)
    record: dict[str, Any] = dict(
        n_layers=s.n_layers,
        d_mlp=s.d_mlp,
        n_patched=n_patched,
        patched_percent=100 * n_patched / total,
        locate=located.summary(),
        shortcut_neurons=list(shortcut),
        table2=table2.to_dict(orient="records"),
        table2_summary=summary2,
        agreement_te=agree_te,
        agreement_ori=agree_ori,
        sparsity_curve=curve.to_dict(orient="records"),
        table3=table3.to_dict(orient="records"),
        table4=None if table4 is None else table4.to_dict(orient="records"),
        table4_summary=None if table4 is None else table2_summary(table4),
        table9_recomputed=table9_stats.to_dict(orient="records"),
        ground_truth=None if truth is None else {k: v for k, v in truth.items() if k != "changed"},
        ranking_rules=None if rules is None else rules.to_dict(orient="records"),
        ranking_rule=located.rule,
        causal_tracks_truth=causal_tracks,
        full_finetunes=dense,
        decoding=None
        if s.test.decoding is None
        else s.test.decoding.as_dict(),  # chat resolved to True/False
    )
    lines = findings(
        summary2,
        n_patched,
        total,
        agree_te,
        agree_ori,
        paper_relative_changes() | paper_text_numbers(),
    )
    if rules is not None:
        assert s.heldout is not None  # the rules are compared on it
        r: Any
        r = rules.set_index("rule")  # numeric cells (pandas-stubs type a .loc cell as any scalar)
        ci = "vs_chosen" in r
        lines.append(
            f"Ranking rule ({cfg.combine}): {located.rule!r}; on {s.heldout.n} held-out test "
            f"items, top-{n_patched} "
            "objective (M_con drop - |M_un change|, pts"
            + ("; in brackets the 95% interval of its difference to the chosen rule" if ci else "")
            + "): "
            + ", ".join(
                f"{k} {r.loc[k, 'objective']:+.1f}"
                + (
                    f" [{r.loc[k, 'vs_chosen_low']:+.1f}, {r.loc[k, 'vs_chosen_high']:+.1f}]"
                    if ci
                    else ""
                )
                for k in r.index
            )
            + "."
        )
        if ci:
            tied = [k for k in r.index if k != located.rule and r.loc[k, "vs_chosen_high"] >= 0]
            lines.append(
                f"{len(tied)} of the other {len(r) - 1} rules are not worse than {located.rule!r} "
                f"beyond chance on these items ({', '.join(tied) or 'none'}); the public code's "
                "sum: claim rules.chosen_vs_public."
            )
    if table4 is not None:
        s4 = table2_summary(table4)
        lines.append(
            f"Table 4 ({cfg.transfer_task}): contaminated mean |Ori-Ref| = "
            f"{s4['contaminated_mean_abs_ori_minus_ref']:.1f}, |TE-Ref| = "
            f"{s4['contaminated_mean_abs_te_minus_ref']:.1f} pts; uncontaminated mean |Δacc| = "
            f"{s4['uncontaminated_mean_abs_delta_acc']:.1f} pts."
        )
    worst = table3.loc[cast(Any, table3.delta_acc.abs().idxmax())]  # a row label
    lines.append(
        f"Side effects (Table 3): mean |Δacc| on {', '.join(cfg.side_tasks)} = "
        f"{table3.delta_acc.abs().mean():.1f} pts; largest: {worst.variant} on {worst.task}, "
        f"{worst.delta_acc:+.1f} pts ({worst.ori:.1f}% -> {worst.te:.1f}%; "
        "claim side_effects.largest_cell)."
    )
    lines += a2_findings(table2)
    full = curve[(curve.n == total) & (curve.neurons == "located")].set_index("model").accuracy
    vanilla = table2.set_index("variant").ori.get("Vanilla", float("nan"))
    if len(full):
        lines.append(
            f"Ceiling: with ALL {total} MLP neurons patched from the base, the locating models "
            f"score {100 * full['contaminated']:.1f}% (contaminated; unpatched "
            f"{100 * located.causal_exact.acc_con:.1f}%) and {100 * full['uncontaminated']:.1f}% "
            f"(uncontaminated; unpatched {100 * located.causal_exact.acc_un:.1f}%); the vanilla "
            f"base scores {vanilla:.1f}%."
        )
        record["ceiling_all_mlp_patched"] = {k: 100 * v for k, v in full.items()}
    t9 = table9_stats.set_index("score")
    lines.append(
        f"Paper Table 9 recomputed: TE rho={t9.loc['TE', 'spearman']:.3f} (RMSE "
        f"{t9.loc['TE', 'rmse']:.2f}), Ori rho={t9.loc['ORI', 'spearman']:.3f} (RMSE "
        f"{t9.loc['ORI', 'rmse']:.2f})."
    )
    return Section(record=record, findings=lines)
