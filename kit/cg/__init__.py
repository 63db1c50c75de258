"""Competency Gaps (seed 002; notebook 04).

- ``metrics``: Eq. 1-5, coverage and gap classes (re-exported: ``kit.cg.chi_bench``...);
- ``coverage``: the same at the level of a suite and a model: ``benchmark_coverage``,
  ``model_gaps`` (typed results), ``benchmark_concepts`` (eq. 1 from a model, an SAE and texts);
- ``robustness``: covered-concept overlap, dropout and adversarial robustness (re-exported);
- ``significance``: our per-concept gap test with FDR (re-exported);
- ``saes``: concept spaces (MiniLM SAEs trained with sae_lens, zoo SAEs) and per-item concept sums;
- ``suite``: the benchmark suite and models of a run; ``model_space``: the paper's setting (the
  evaluated models' own SAEs); ``answers``: models' own answers, one job per (model, benchmark);
- ``size_control``: coverage at equal size (the coverage claims' nulls); ``nulls``:
  shuffled-correctness nulls of the model-gap claims; ``study``: the notebook's
  typed study result; ``report``: its tables and key numbers; ``findings``: its plain-language
  findings; ``planted``: the planted-gap ground truth, ``planted_settings``: that check across
  concept dictionaries and poolings;
- ``explorer``: the self-contained HTML concept explorer; ``plots``; ``claims``; ``bench``.
"""

from kit.cg.metrics import (
    COVERAGE_CLASSES,
    EPSILON,
    POOLINGS,
    Acts,
    SparseRows,
    chi_bench,
    chi_bench_table,
    chi_model,
    chi_model_table,
    concept_activations,
    concept_table,
    coverage_classes,
    item_concept_activation,
    missing_fraction,
    model_gap_classes,
    profile_difference,
    segment_mean,
    segment_pool,
    top_bottom,
    x_bench,
    x_model,
)
from kit.cg.robustness import (
    AdversarialRemoval,
    DropoutRobustness,
    adversarial_removal,
    covered_sets,
    dropout_robustness,
    jaccard_overlap,
    salient_items,
)
from kit.cg.significance import GAP_TEST_CLASSES, GapTest, bh_qvalues, concept_support, gap_test
from kit.core.lazy import lazy_submodules

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "answers",
        "bench",
        "claims",
        "coverage",
        "explorer",
        "findings",
        "labels",
        "llm",
        "metrics",
        "model_space",
        "nulls",
        "planted",
        "planted_settings",
        "plots",
        "report",
        "robustness",
        "saes",
        "significance",
        "size_control",
        "study",
        "suite",
    ],
    globals(),
)
