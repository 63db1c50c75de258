"""Neuron-ranking methods and their consensus evaluation (NeuronVote paper, seed 004).

Every ranking method takes the activations of one layer on a binary concept task and returns a
*full* ranking of that layer's neurons, most salient first:

    x: Float[ndarray, "n_words n_neurons"]   activations z(n, w) of words w (paper section 2)
    y: Int[ndarray, "n_words"]               1 if the word belongs to concept C, 0 if to C-hat
    -> Int[ndarray, "n_neurons"]              neuron indices, best first (a permutation)

Methods (``METHODS``; display names in ``DISPLAY``):

- ``probeless``: |mu(C) - mu(C-hat)| (eq. 1; Antverg & Belinkov rank by the magnitude);
- ``iou``: Mu & Andreas IoU of the neuron mask z > its ``iou_percentile``-th percentile over the
  data with the concept mask (eq. 2);
- ``iou_ap``: the variant the NeuroX toolkit ships under the name "IoU": the average precision of
  the neuron's activation as a score for the concept (threshold-free). Named separately, never
  mixed with ``iou``;
- ``lasso``, ``ridge``, ``lca``: logistic probes with L1, L2 and ElasticNet penalties (eqs. 3-5),
  ranked by |weight|; the paper's lambda1 = lambda2 = 0.01 per *mean* loss are mapped exactly onto
  scikit-learn's (C, l1_ratio), see :func:`probe_penalty`, and the intercept is not penalised
  (lbfgs / saga, :func:`kit.neuronvote.probes.probe_fit`; liblinear would penalise it);
- ``gaussian``: greedy selection under a MAP multivariate Gaussian per class (eq. 6, Hennigen et
  al. 2020; each subset's MAP estimate read off one fit through the NIW prior's marginals), by
  rank-one (Schur complement) updates: O(C (N + k) d) per step, O(C (N + d) d k) for k selected
  neurons, instead of the public toolkit's re-factorisation of every candidate subset
  (O(d (k^3 + N k^2)) per step); :func:`gaussian_ranking_naive` is that reference;
- ``meanselect``: |mu(C) - mu(C-hat)| / (max_C z - min_C z) (eq. 10, the paper's case study);
- ``random``: a seeded permutation (the baseline).

Two definition sets (``definitions``; the paper's text and the code behind its numbers differ):

==========  ========================================  =============================================
 method      ``paper_text`` (eqs. 2-6 as printed)      ``neurox`` (NeuroX, which made the tables)
==========  ========================================  =============================================
 IoU         eq. 2, mask z > 90th percentile           average precision after zeroing |z| < 0.05
 Lasso etc.  exact optimum (scikit-learn), lambda2     softmax probe, Adam lr 1e-3, 10 epochs, batch
             |w|_2^2 per mean loss, free intercept,    32, lambda2 |W|_2 (norm, *not* squared),
             ranked by |w|                             ranked by NeuroX's weight-mass ordering
 Gaussian    NIW prior: overall mean, kappa0 = 1,      class means, kappa0 = 0.01, Lambda0 =
             subset-marginal MAP covariance            diag(class cov), full-d divisor for subsets
 Probeless   eq. 1 (identical in both)
==========  ========================================  =============================================

Ties are broken by a seeded random permutation (so that e.g. Lasso's many zero weights do not
fall back to neuron-index order, which would correlate across methods). :func:`rank_all` gives
every method its own tie-break seed (:func:`method_seed`, from the study seed, the method and the
task), so no two methods, and no two concepts, share a tie order; Random is one more such draw.

Consensus metrics (section 3.2), all on the top-``s`` sets S_m:

- ``o(m1, m2) = |S_m1 ∩ S_m2| / |S_m1 ∪ S_m2|`` (eq. 7), :func:`pairwise_overlap`;
- ``AvgOverlap_m`` = mean of o(m, v) over the voters v != m (eq. 8), :func:`avg_overlap`;
- ``NeuronVote_m = o(S_m, S_best)`` with S_best the top-s of the Borda aggregate of the voters
  v != m (leave-one-out), points ``s - index`` (0-based index, so a voter's first neuron gets s
  points and neurons outside its top-s get 0) (eq. 9), :func:`neuron_vote`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kit.core.registry import Registry
from kit.neuronvote.consensus import avg_overlap, borda_top, neuron_vote, overlap, pairwise_overlap
from kit.neuronvote.corpus_scores import (
    DEFINITIONS,
    NEUROX_IOU_THRESHOLD,
    check_xy,
    iou_ap_scores,
    iou_scores,
    meanselect_scores,
    method_seed,
    probeless_scores,
    rank_by_score,
)
from kit.neuronvote.gaussian import (
    GaussianMAP,
    gaussian_map_params,
    gaussian_ranking,
    gaussian_ranking_naive,
)
from kit.neuronvote.probes import (
    PAPER_LAMBDA,
    ProbeFit,
    classifier_accuracy,
    neurox_probe_weights,
    neurox_weight_mass_ordering,
    probe_fit,
    probe_objective,
    probe_penalty,
    probe_weights,
)

__all__ = [
    "RANKING_METHODS",
    "RankingOptions",
    "METHODS",
    "PAPER_METHODS",
    "DISPLAY",
    "DEFINITIONS",
    "PAPER_LAMBDA",
    "NEUROX_IOU_THRESHOLD",
    "rank_neurons",
    "rank_all",
    "method_seed",
    "rank_by_score",
    "probeless_scores",
    "meanselect_scores",
    "iou_scores",
    "iou_ap_scores",
    "probe_penalty",
    "probe_weights",
    "probe_fit",
    "probe_objective",
    "ProbeFit",
    "neurox_probe_weights",
    "neurox_weight_mass_ordering",
    "GaussianMAP",
    "gaussian_map_params",
    "gaussian_ranking",
    "gaussian_ranking_naive",
    "overlap",
    "avg_overlap",
    "borda_top",
    "neuron_vote",
    "pairwise_overlap",
    "classifier_accuracy",
]

RANKING_METHODS = Registry("a neuron-ranking method")
"""The neuron-ranking methods by name: ``fn(x, y, seed, options: RankingOptions)`` -> a full
ranking (neuron indices, best first); ``extra``: ``display`` (the figures' name), ``paper``
(one of the paper's six voters) and, for a method that ranks by a score with a seeded tie-break
only, ``scores``: ``(x, y, options)`` -> that score (its ranking under any seed is
``rank_by_score(scores, seed)``). :func:`rank_neurons`, the studies and the config's ``methods`` /
``voters`` accept exactly these names."""


@dataclass(frozen=True)
class RankingOptions:
    """The hyper-parameters of the ranking methods (each reads its own)."""

    iou_percentile: float = 90.0
    """``iou`` (paper text): the neuron mask is z > this percentile of z over the data."""
    lambda1: float = PAPER_LAMBDA
    """L1 weight of ``lasso`` / ``lca`` (per mean loss)."""
    lambda2: float = PAPER_LAMBDA
    """L2 weight of ``ridge`` / ``lca``."""
    gaussian_max_neurons: int | None = None
    """``gaussian``: greedy steps; the rest follow by their score at the last step (None: all)."""
    probe_standardize: bool = False
    """Probes: standardise the activations before fitting."""
    definitions: str = "paper_text"
    """``paper_text`` or ``neurox`` (:data:`DEFINITIONS`; the module docstring's table)."""


def _add_ranked(name: str, scores_of, description: str, **extra: Any) -> None:
    """Register a method that ranks by ``scores_of(x, y, options)`` with a seeded tie-break."""

    def fn(x, y, seed: int, o: RankingOptions) -> np.ndarray:
        return rank_by_score(scores_of(x, y, o), seed)

    RANKING_METHODS.add(name, fn, description, scores=scores_of, **extra)


_add_ranked(
    "probeless",
    lambda x, y, o: probeless_scores(x, y),
    "|mu(C) - mu(C-hat)| (eq. 1)",
    display="Probeless",
    paper=True,
)
_add_ranked(
    "iou",
    lambda x, y, o: (
        iou_ap_scores(x, y, NEUROX_IOU_THRESHOLD)
        if o.definitions == "neurox"
        else iou_scores(x, y, o.iou_percentile)
    ),
    "IoU of the mask z > its percentile with the concept mask (eq. 2; neurox: NeuroX's AP)",
    display="IoU",
    paper=True,
)
_add_ranked(
    "iou_ap",
    lambda x, y, o: iou_ap_scores(x, y),
    "average precision of the activation as a concept score (what NeuroX calls IoU)",
    display="IoU-AP (NeuroX)",
    paper=False,
)


def _probe(method: str):
    def fn(x, y, seed: int, o: RankingOptions) -> np.ndarray:
        if o.definitions == "neurox":
            l1 = 0.0 if method == "ridge" else o.lambda1
            l2 = 0.0 if method == "lasso" else o.lambda2
            return neurox_weight_mass_ordering(
                neurox_probe_weights(x, y, l1, l2, seed=seed), seed=seed
            )
        scores = np.abs(
            probe_weights(
                x, y, method, o.lambda1, o.lambda2, seed=seed, standardize=o.probe_standardize
            )
        )
        return rank_by_score(scores, seed)

    return fn


for _name, _display, _what in (
    ("lasso", "Lasso", "L1"),
    ("ridge", "Ridge", "L2"),
    ("lca", "LCA", "ElasticNet (L1 + L2)"),
):
    RANKING_METHODS.add(
        _name,
        _probe(_name),
        f"|weight| of a logistic probe with the {_what} penalty (eqs. 3-5)",
        display=_display,
        paper=True,
    )
RANKING_METHODS.add(
    "gaussian",
    lambda x, y, seed, o: gaussian_ranking(
        x, y, max_neurons=o.gaussian_max_neurons, prior=o.definitions
    ),
    "greedy selection under a MAP Gaussian per class (eq. 6, Hennigen et al. 2020)",
    display="Gaussian",
    paper=True,
)
_add_ranked(
    "meanselect",
    lambda x, y, o: meanselect_scores(x, y),
    "|mu(C) - mu(C-hat)| / (max_C z - min_C z) (eq. 10, the case study)",
    display="MeanSelect",
    paper=False,
)
RANKING_METHODS.add(
    "random",
    lambda x, y, seed, o: np.random.default_rng(seed).permutation(x.shape[1]),
    "a seeded permutation (the baseline)",
    display="Random",
    paper=False,
)

METHODS = RANKING_METHODS
"""The names of :data:`RANKING_METHODS` (the table itself: ``in``, iteration and ``len`` read
it)."""
PAPER_METHODS = RANKING_METHODS.names(paper=True)
"""The paper's six interpretation methods: the voters of the main tables."""
DISPLAY: dict[Any, str] = {  # method name -> display name (looked up with pandas cell values too)
    name: v.extra["display"] for name, v in RANKING_METHODS.items()
}


def rank_neurons(
    x,
    y,
    method: str,
    seed: int = 0,
    iou_percentile: float = 90.0,
    lambda1: float = PAPER_LAMBDA,
    lambda2: float = PAPER_LAMBDA,
    gaussian_max_neurons: int | None = None,
    probe_standardize: bool = False,
    definitions: str = "paper_text",
) -> np.ndarray:
    """Full ranking of the neurons of ``x`` for concept labels ``y`` by ``method`` (a name of
    :data:`RANKING_METHODS`; see the module doc).

    x: Float[ndarray, "n_words n_neurons"], y: Int[ndarray, "n_words"] (1 = concept).
    ``definitions``: ``paper_text`` or ``neurox`` (IoU, probes, Gaussian prior; module doc).
    ``seed``: this method's tie-break (and probe-init) seed; :func:`rank_all` derives one per
    method. Returns Int[ndarray, "n_neurons"], most salient first.

    >>> import numpy as np
    >>> from kit.neuronvote import rank_neurons
    >>> x = np.array([[0.0, 1.0, 0.2], [0.1, 0.9, 0.1], [0.0, 0.0, 0.3], [0.1, 0.1, 0.2]])
    >>> y = np.array([1, 1, 0, 0])             # neuron 1 fires on the concept's words
    >>> int(rank_neurons(x, y, "probeless")[0])
    1
    """
    x, y, options = _checked(
        x,
        y,
        method,
        RankingOptions(
            iou_percentile, lambda1, lambda2, gaussian_max_neurons, probe_standardize, definitions
        ),
    )
    return RANKING_METHODS[method].fn(x, y, seed, options)


def _checked(x, y, method: str, options: RankingOptions):
    RANKING_METHODS.check(method, "method")
    if options.definitions not in DEFINITIONS:
        raise ValueError(
            f"definitions={options.definitions!r} unknown; allowed: {', '.join(DEFINITIONS)}"
        )
    x, y = check_xy(x, y)
    return x, y, options


def rank_all(
    x,
    y,
    methods: Sequence[str] | None = None,
    seed: int = 0,
    task: tuple = (),
    scores: dict[str, np.ndarray] | None = None,
    **kwargs,
) -> dict[str, np.ndarray]:
    """``{method: rank_neurons(x, y, method, seed=method_seed(seed, method, *task), **kwargs)}``.

    Each method gets its own tie-break stream (a shared one would make zero-weight neurons agree
    across methods and inflate their overlap); ``task`` (e.g. ``(concept, layer)``) makes the
    streams differ between tasks too. ``methods``: None = every method of
    :data:`RANKING_METHODS`.

    ``scores``: a dict the caller keeps across calls on the same ``x``, ``y`` and ``kwargs`` (a
    study's reseeds): the seed-free score of each method that ranks by a score and a seeded
    tie-break (the registry's ``scores`` extra: Probeless, IoU, MeanSelect...) is computed once,
    stored there, and only ranked again under each new seed: the same rankings, without computing
    e.g. IoU-AP's sort of every neuron's activations again.
    """
    methods = list(RANKING_METHODS) if methods is None else methods
    if scores is None:
        return {
            m: rank_neurons(x, y, m, seed=method_seed(seed, m, *task), **kwargs) for m in methods
        }
    out = {}
    for m in methods:
        scores_of = RANKING_METHODS[m].extra.get("scores") if m in RANKING_METHODS else None
        if scores_of is None:
            out[m] = rank_neurons(x, y, m, seed=method_seed(seed, m, *task), **kwargs)
            continue
        if m not in scores:
            scores[m] = scores_of(*_checked(x, y, m, RankingOptions(**kwargs)))
        out[m] = rank_by_score(scores[m], method_seed(seed, m, *task))
    return out
