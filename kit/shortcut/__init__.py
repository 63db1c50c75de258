"""Shortcut neurons (seed 001; notebook 03).

- ``patching``: dynamic patching during generation (KV caches, grouped batches) and teacher-forced
  log-probs;
- ``scores``: the comparative (eq. 3) and causal (eq. 4) scores and their combination;
- ``ranking``: localisation (``locate``) and the ranking rules compared on held-out items;
- ``evaluate``: accuracy with patched neurons, trustworthy evaluation, side effects, sparsity curve,
  agreement with a reference;
- ``items``: the item sets tokenised for one model, decoding;
- ``study``: notebook 03's set-up, located neurons and Table 2 in words; ``sections``: its later
  sections (full fine-tunes, transfer, a second base, strength, cheaters); ``published``: the
  paper's tables; ``plots``;
- ``formats``: A2, the benchmark's input format as a shortcut (section 11 and its claims);
- ``variants``: notebook 03's own ``extra/`` fine-tunes (separate plastic sets, strength, order);
- ``pool``: models held one at a time; ``claims``: notebook 03's claims (Table 2's TE claims
  among them) over their per-item evidence (``evidence``);
- ``result``: notebook 03's typed study result (``ShortcutStudy``), filled section by section;
- ``bench``: patched vs plain generation, batched vs serial groups.

The building blocks are re-exported here (``kit.shortcut.locate``,
``kit.shortcut.causal_scores``...).
"""

from kit.core.lazy import lazy_submodules
from kit.shortcut.evaluate import (
    Trustworthy,
    accuracies,
    agreement,
    patched_accuracy,
    side_effect_table,
    sparsity_curve,
    table2_summary,
    trustworthy_accuracy,
    trustworthy_table,
)
from kit.shortcut.items import TaskData, reference_items, study_items, task_data
from kit.shortcut.plots import plot_agreement, plot_sparsity_curve
from kit.shortcut.published import paper_relative_changes, paper_text_numbers, table9_agreement
from kit.shortcut.ranking import (
    Located,
    best_rule,
    locate,
    ranking_rules,
    rule_intervals,
    rule_specs,
)
from kit.shortcut.scores import (
    COMBINE_RULES,
    PAPER_FRACTION,
    PAPER_N_PATCHED,
    PAPER_TOTAL_NEURONS,
    CausalScores,
    ComparativeAccumulator,
    causal_score,
    causal_scores,
    combine_scores,
    comparative_scores,
    comparative_scores_of_models,
    default_n_patched,
    exact_match,
    group_accuracy,
    neuron_acts,
    neuron_groups,
    random_neurons,
    top_neurons,
)
from kit.shortcut.sections import transfer_finetune
from kit.shortcut.study import findings

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "bench",
        "causal_jobs",
        "claims",
        "evaluate",
        "evidence",
        "formats",
        "items",
        "patched_cache",
        "patching",
        "plots",
        "pool",
        "prebuild",
        "published",
        "ranking",
        "result",
        "scope",
        "scores",
        "sections",
        "strength",
        "study",
        "variants",
    ],
    globals(),
)
