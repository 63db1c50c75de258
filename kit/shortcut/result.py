"""Notebook 03's typed study result (seed 001): :class:`ShortcutStudy`, filled section by section
(tab-completable: ``study.table2``, ``study.located``...), and :func:`measure_evidence`, the
per-item re-measurements its claims are declared over (:class:`kit.shortcut.claims.Evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kit.core.claims import Claim
from kit.shortcut.claims import Evidence, PerItem, side_items, sparsity_items, te_items
from kit.shortcut.items import TaskData
from kit.shortcut.patching import Neuron
from kit.shortcut.ranking import Located
from kit.shortcut.study import Setup, construction


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
        raise ValueError("measure_evidence needs sections 1, 2 and 6 "
                         "(study.located, study.table2, study.table9)")
    shortcut, kw = study.shortcut, dict(max_rows=cfg.max_rows, max_new_tokens=cfg.max_new_tokens)
    rests_on, by_construction = construction(cfg.variants, cfg.world, cfg.locate_pair)
    ev = Evidence(
        te=te_items(s.models, s.base, s.test, s.fresh, shortcut, **kw),
        contaminated=cfg.contaminated, table2=study.table2, table9=study.table9,
        n_patched=study.n_patched, rests_on=rests_on, by_construction=by_construction,
        base_labels=[k for k, v in cfg.variants.items() if v == cfg.base_model],
        test_clusters=s.test.clusters, fresh_clusters=s.fresh.clusters,
        rules=study.rules, rule=study.located.rule,
        side=side_items(s.models, s.base, study.side, shortcut, **kw),
        side_clusters={t: d.clusters for t, d in study.side.items()},
        sparsity=sparsity_items(s.model_con, s.base, s.test, study.located.ranked,
                                study.n_patched, cfg.seed, n_null=cfg.n_null, **kw),
        sparsity_rests_on=f"{rests_on}; M_con is the locating model, on its locating items",
        extra_claims=list(study.format_claims))
    if study.dense_items is not None and cfg.dense_variants:  # section 7: the paper's setting
        ev.te_full, ev.full_contaminated = study.dense_items, cfg.contaminated
        ev.full_rests_on = construction(cfg.dense_variants, cfg.world, cfg.locate_pair)[0]
    if study.cheater_items is not None and cfg.cheaters:  # Table 12
        same = {v: k for k, v in cfg.variants.items()}  # Table 2's models: claimed there
        ev.cheaters, ev.table12 = study.cheater_items, study.table12
        ev.cheaters_contaminated = cfg.cheaters_contaminated
        ev.cheater_same_as = {k: same[v] for k, v in cfg.cheaters.items() if v in same}
        built = construction(cfg.cheaters, cfg.world)[0]
        ev.cheaters_rests_on = (f"{built}: PT rows continue the base on its own mixture with the "
                                "test items (full-parameter), then the clean SFT")
    return ev
