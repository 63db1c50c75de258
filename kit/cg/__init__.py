"""Competency Gaps (seed 002; notebook 04).

- ``metrics``: Eq. 1-5, coverage and gap classes, robustness (re-exported: ``kit.cg.chi_bench``...);
- ``saes``: concept spaces (MiniLM SAEs trained with sae_lens, zoo SAEs) and per-item concept sums;
- ``suite``: the benchmark suite and models of a run; ``report``: its tables and key numbers;
- ``explorer``: the self-contained HTML concept explorer; ``plots``; ``bench``.
"""

from kit.core.lazy import lazy_submodules
from kit.cg.metrics import (
    EPSILON, Acts, item_concept_activation, segment_mean, segment_pool, POOLINGS, SparseRows, concept_activations,
    chi_bench, chi_model, x_bench, x_model, COVERAGE_CLASSES, coverage_classes, model_gap_classes,
    chi_bench_table, chi_model_table, missing_fraction, profile_difference, covered_sets, jaccard,
    jaccard_overlap, DropoutRobustness, dropout_robustness, salient_items, AdversarialRemoval,
    adversarial_removal, concept_table, top_bottom, concept_support, bh_qvalues, GAP_TEST_CLASSES, GapTest, gap_test,
)

__getattr__, __dir__ = lazy_submodules(__name__, ['bench', 'claims', 'explorer', 'metrics', 'plots', 'report', 'saes', 'suite'], globals())
