"""Corpus-based neuron scores of NeuronVote (seed 004 section 2) and the shared ranking rules.

Input checks (:func:`check_xy`), full rankings from scores with a seeded tie-break
(:func:`rank_by_score`, :func:`method_seed`), and the methods that read activations directly:
Probeless (eq. 1), MeanSelect (eq. 10), IoU (eq. 2, Mu & Andreas) and NeuroX's average-precision
"IoU" (:func:`iou_ap_scores`). Shapes: x Float[ndarray, "n_words n_neurons"], y Int[ndarray,
"n_words"] (1 = concept), scores Float[ndarray, "n_neurons"].
"""

from __future__ import annotations

import numpy as np

DEFINITIONS = ("paper_text", "neurox")
"""Definition sets of IoU, the probes and the Gaussian prior (:mod:`kit.neuronvote.methods`)."""
NEUROX_IOU_THRESHOLD = 0.05
"""NeuroX ``iou_probe.get_neuron_ordering``: activations with |z| below this are set to 0 first."""


def check_xy(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y).astype(np.int64).ravel()
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (n_words, n_neurons), got shape {x.shape}")
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y has {y.shape[0]} labels but x has {x.shape[0]} rows")
    if not set(np.unique(y)) <= {0, 1} or len(np.unique(y)) != 2:
        raise ValueError(
            f"y must be binary with both classes present (1 = concept), got values {np.unique(y)}"
        )
    if not np.isfinite(x).all():
        raise ValueError("x contains NaN or inf activations")
    return x, y


def method_seed(seed: int, method: str, *task) -> int:
    """Tie-break seed of ``method`` on one task (e.g. concept and layer): independent streams per
    method and task, reproducible from the study ``seed`` (crc32, unlike ``hash``, is stable)."""
    import zlib

    keys = [int(seed), zlib.crc32(method.encode())]
    keys += [k if isinstance(k, (int, np.integer)) else zlib.crc32(str(k).encode()) for k in task]
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def rank_by_score(scores, seed: int = 0) -> np.ndarray:
    """Neuron indices sorted by ``scores`` descending; ties in a seeded random order.

    ``scores``: Float[ndarray, "n_neurons"] (NaN counts as the lowest score).
    Returns Int[ndarray, "n_neurons"].
    """
    scores = np.asarray(scores, dtype=np.float64).copy()
    scores[np.isnan(scores)] = -np.inf
    tiebreak = np.random.default_rng(seed).permutation(scores.shape[0])
    return np.lexsort((tiebreak, -scores))  # primary key last: -score, then the random key


# ------------------------------------------------------------------ corpus-based methods


def probeless_scores(x, y) -> np.ndarray:
    """Eq. 1: |mu(C) - mu(C-hat)| per neuron. Float[ndarray, "n_neurons"]."""
    x, y = check_xy(x, y)
    return np.abs(x[y == 1].mean(0) - x[y == 0].mean(0))


def meanselect_scores(x, y) -> np.ndarray:
    """Eq. 10 (MeanSelect): |mu(C) - mu(C-hat)| / (max_C z - min_C z); a constant neuron scores
    0."""
    x, y = check_xy(x, y)
    pos = x[y == 1]
    spread = pos.max(0) - pos.min(0)
    diff = np.abs(pos.mean(0) - x[y == 0].mean(0))
    return np.divide(diff, spread, out=np.zeros_like(diff), where=spread > 0)


def iou_scores(x, y, percentile: float = 90.0) -> np.ndarray:
    """Eq. 2 (Mu & Andreas): IoU of the mask z(n, w) > delta_n with the concept mask.

    delta_n is the ``percentile``-th percentile of neuron n's activations over all words given.
    Returns Float[ndarray, "n_neurons"] in [0, 1].
    """
    x, y = check_xy(x, y)
    if not 0.0 <= percentile < 100.0:
        raise ValueError(f"percentile must be in [0, 100), got {percentile}")
    delta = np.percentile(x, percentile, axis=0)
    active = x > delta
    concept = (y == 1)[:, None]
    inter = (active & concept).sum(0)
    union = (active | concept).sum(0)
    return inter / np.maximum(union, 1)


def iou_ap_scores(x, y, threshold: float = 0.0) -> np.ndarray:
    """NeuroX's "IoU" method: average precision of each neuron's activation as a concept score.

    ``threshold``: activations with |z| < threshold are set to 0 first (NeuroX uses 0.05, see
    ``NEUROX_IOU_THRESHOLD``; it also overwrites the caller's array, which we do not).
    AP = sum over distinct thresholds of (recall step) x (precision there), tied activations
    forming one threshold: ``sklearn.metrics.average_precision_score`` exactly. Vectorised over
    neurons: O(N log N d). Returns Float[ndarray, "n_neurons"].
    """
    x, y = check_xy(x, y)
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    if threshold > 0:
        x = np.where(np.abs(x) < threshold, 0.0, x)
    n = x.shape[0]
    order = np.argsort(-x, axis=0, kind="stable")
    xs = np.take_along_axis(x, order, axis=0)
    hits = (y[order] == 1).astype(np.float64)  # (N, d): is the k-th highest word a concept word?
    # Every word of a tie group gets the precision at the group's end (one threshold per value).
    is_end = np.ones_like(xs, dtype=bool)
    is_end[:-1] = xs[:-1] != xs[1:]
    end = np.where(is_end, np.arange(n)[:, None], n - 1)
    end = np.minimum.accumulate(end[::-1], axis=0)[::-1]
    cum = np.cumsum(hits, axis=0)
    precision = np.take_along_axis(cum, end, axis=0) / (end + 1)
    return (precision * hits).sum(0) / hits.sum(0)
