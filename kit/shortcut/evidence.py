"""The per-item evidence notebook 03's claims (seed 001) rest on (:class:`Evidence`), filled
section by section, and the per-item measurements :mod:`kit.shortcut.evaluate` does not make:
Table 3's side effects per (row, task) cell (:func:`side_items`) and Figure 3's sparsity at one N
against random neuron sets (:func:`sparsity_items`); which test items located the neurons
(:func:`locating_items`), with the per-item arithmetic the claims share (Δacc in points, the
resampling units in words).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import Claim
from kit.shortcut.evaluate import item_correct
from kit.shortcut.items import TaskData
from kit.shortcut.patching import Neuron
from kit.shortcut.scores import random_neurons

PAPER = "001"
N_NULL = 100
"""Random neuron sets of the sparsity null (:func:`sparsity_items`)."""
PerItem = Mapping[str, Mapping[str, np.ndarray]]
"""Label -> ``{"ori": (items,), "te": (items,), "ref": (fresh items,)}`` correctness
(:func:`kit.shortcut.evaluate.te_items`)."""


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
    sparsity_from: int = 0
    """The first test item ``sparsity`` holds: it is run on the test items from this one on (the
    ones after the locating items when there are any), so its items' locating flags and contents
    are ``test_locating[sparsity_from:]`` and ``test_clusters[sparsity_from:]``."""
    test_locating: np.ndarray | None = None
    """Per test item: True when it located the neurons (one of the first ``n_locate``) or shares a
    content with one that did (:func:`locating_items`). Every claim about the located neurons is
    scored on the others (:func:`kit.shortcut.claims.held_out`); None: not recorded, so those claims
    are refused."""
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
    strength_copies: dict[str, int] = field(default_factory=dict)
    """Contaminated rows of ``te`` that differ only in how often the test items were seen (real
    recipes, :func:`kit.shortcut.strength.strength_rows`): label -> copies. Two or more levels give
    Table 8's strength claim on them (:func:`kit.shortcut.claims.real_strength_claim`)."""
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


def locating_items(n_items: int, n_locate: int, clusters: np.ndarray | None = None) -> np.ndarray:
    """Bool (n_items,): the test items that located the neurons (the first ``n_locate``,
    :func:`kit.shortcut.study.setup`) and every later item sharing a content with one of them
    (``clusters``: content per item, None when each item is its own), which is not held out
    either.

    >>> locating_items(4, 2, np.array(["a", "b", "a", "c"])).tolist()
    [True, True, True, False]
    """
    if n_locate < 0 or n_items < 0:
        raise ValueError(f"n_items={n_items}, n_locate={n_locate}: counts must be >= 0")
    used = np.arange(n_items) < n_locate
    if clusters is not None:
        clusters = np.asarray(clusters)
        if len(clusters) != n_items:
            raise ValueError(f"clusters: {len(clusters)} labels for {n_items} items")
        used |= np.isin(clusters, clusters[used])
    return used


def _delta(ori: np.ndarray, te: np.ndarray) -> float:
    return float(100 * np.mean(te - ori))


def _units(n: int, clusters: np.ndarray | None, what: str) -> str:
    if clusters is None:
        return f"{n} {what}"
    return f"{len(np.unique(clusters))} contents ({n} {what})"
