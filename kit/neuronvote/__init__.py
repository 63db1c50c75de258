"""NeuronVote and AvgOverlap (seed 004; notebook 05).

The method in one call: ``kit.neuronvote.vote(x, y, methods, s)`` (every ranking method of
``kit.neuronvote.RANKING_METHODS`` on one concept, NeuronVote and AvgOverlap of each), with
``kit.neuronvote.concept_arrays(model, sentences, tag, site)`` for ``(x, y)``; one method:
``kit.neuronvote.rank_neurons``.

- ``methods``: the ranking methods' dispatch (re-exported: ``kit.neuronvote.rank_all``...), built
  from ``corpus_scores`` (Probeless, IoU, MeanSelect), ``probes`` (Lasso, Ridge, LCA, NeuroX's
  probe, classifier accuracy), ``gaussian`` (the Gaussian probe) and ``consensus`` (AvgOverlap,
  NeuronVote);
- ``concepts``: POS concept datasets from UD EWT / CoNLL;
- ``units``: one concept at one layer (rankings, scores, reseeds, shuffled labels), also as jobs;
- ``study``: a study as its units, and its analyses; ``settings``: the settings notebook 05 runs
  and its typed result; ``published``: which of the paper's tables applies to a setting;
- ``tables``: Tables 1-4 beside the paper's, key numbers; ``plots``: its figures; ``claims``: the
  claims declared over the settings;
- ``bench``: the Gaussian greedy search against its naive loop.
"""

from kit.core.lazy import lazy_submodules
from kit.neuronvote.methods import (
    DISPLAY,
    METHODS,
    PAPER_LAMBDA,
    PAPER_METHODS,
    RANKING_METHODS,
    GaussianMAP,
    RankingOptions,
    avg_overlap,
    borda_top,
    classifier_accuracy,
    gaussian_map_params,
    gaussian_ranking,
    gaussian_ranking_naive,
    iou_ap_scores,
    iou_scores,
    meanselect_scores,
    neuron_vote,
    overlap,
    pairwise_overlap,
    probe_penalty,
    probe_weights,
    probeless_scores,
    rank_all,
    rank_by_score,
    rank_neurons,
)
from kit.neuronvote.voting import Vote, concept_arrays, vote

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "bench",
        "claims",
        "concepts",
        "consensus",
        "corpus_scores",
        "gaussian",
        "methods",
        "plots",
        "probes",
        "published",
        "settings",
        "study",
        "tables",
        "units",
        "voting",
    ],
    globals(),
)
