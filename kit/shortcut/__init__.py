"""Shortcut neurons (seed 001; notebook 03).

- ``patching``: dynamic patching during generation (KV caches, grouped batches) and teacher-forced
  log-probs;
- ``neurons``: comparative and causal scores, localisation, trustworthy evaluation, sparsity curve,
  agreement with a reference (re-exported here: ``kit.shortcut.locate``...);
- ``formats``: A2, the benchmark's input format as a shortcut (section 11 and its claims);
- ``variants``: notebook 03's own ``extra/`` fine-tunes (separate plastic sets, strength, order);
- ``bench``: patched vs plain generation, batched vs serial groups.
"""

from kit.core.lazy import lazy_submodules
from kit.shortcut.neurons import (
    PAPER_N_PATCHED, PAPER_TOTAL_NEURONS, PAPER_FRACTION, ComparativeAccumulator,
    comparative_scores, neuron_acts, comparative_scores_of_models, causal_score, neuron_groups,
    exact_match, group_accuracy, CausalScores, causal_scores, COMBINE_RULES, combine_scores,
    top_neurons, random_neurons, default_n_patched, patched_accuracy, sparsity_curve, agreement,
    table9_agreement, plot_sparsity_curve, plot_agreement, table2_summary, paper_text_numbers,
    findings, TaskData, benchmark_items, reference_items, task_data, text_correct, accuracies, Located, locate,
    ranking_rules, trustworthy_table, side_effect_table, transfer_finetune, rule_specs, best_rule, rule_intervals,
    paper_relative_changes, load_any,
)

__getattr__, __dir__ = lazy_submodules(__name__, ['bench', 'formats', 'neurons', 'patching', 'variants'], globals())
