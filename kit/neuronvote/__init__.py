"""NeuronVote and AvgOverlap (seed 004; notebook 05).

- ``methods``: the ranking methods' dispatch (re-exported: ``kit.neuronvote.rank_all``...), built from
  ``corpus_scores`` (Probeless, IoU, MeanSelect), ``probes`` (Lasso, Ridge, LCA, NeuroX's probe,
  classifier accuracy), ``gaussian`` (the Gaussian probe) and ``consensus`` (AvgOverlap, NeuronVote);
- ``concepts``: POS concept datasets from UD EWT / CoNLL; ``study``: the notebook's experiments;
  ``tables``: Tables 1-4 beside the paper's, findings, key numbers; ``plots``: its figures;
- ``bench``: the Gaussian greedy search against its naive loop.
"""

from kit.core.lazy import lazy_submodules
from kit.neuronvote.methods import (
    METHODS, PAPER_METHODS, DISPLAY, PAPER_LAMBDA, rank_by_score, probeless_scores,
    meanselect_scores, iou_scores, iou_ap_scores, probe_penalty, probe_weights, GaussianMAP,
    gaussian_map_params, gaussian_ranking, gaussian_ranking_naive, rank_neurons, rank_all, overlap,
    avg_overlap, borda_top, neuron_vote, pairwise_overlap, classifier_accuracy,
)

__getattr__, __dir__ = lazy_submodules(
    __name__, ['bench', 'claims', 'concepts', 'consensus', 'corpus_scores', 'gaussian', 'methods', 'plots',
               'probes', 'study', 'tables'],
    globals())
