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
  scikit-learn's (C, l1_ratio), see :func:`probe_penalty`;
- ``gaussian``: greedy selection under a MAP multivariate Gaussian per class (eq. 6, Hennigen et
  al. 2020; each subset's MAP estimate read off one fit through the NIW prior's marginals), by
  rank-one (Schur complement) updates: O(C (N + k) d) per step, O(C (N + d) d k) for k selected
  neurons, instead of the public toolkit's re-factorisation of every candidate subset
  (O(d (k^3 + N k^2)) per step); :func:`gaussian_ranking_naive` is that reference;
- ``meanselect``: |mu(C) - mu(C-hat)| / (max_C z - min_C z) (eq. 10, the paper's case study);
- ``random``: a seeded permutation (the baseline).

Two definition sets (``definitions``; the paper's text and the code behind its numbers differ):

==========  ==========================================  =============================================
 method      ``paper_text`` (eqs. 2-6 as printed)        ``neurox`` (NeuroX, which made the tables)
==========  ==========================================  =============================================
 IoU         eq. 2, mask z > 90th percentile             average precision after zeroing |z| < 0.05
 Lasso etc.  exact optimum (scikit-learn), lambda2       softmax probe, Adam lr 1e-3, 10 epochs, batch
             |w|_2^2 per mean loss, ranked by |w|        32, lambda2 |W|_2 (norm, *not* squared),
                                                         ranked by NeuroX's weight-mass ordering
 Gaussian    NIW prior: overall mean, kappa0 = 1,        class means, kappa0 = 0.01, Lambda0 =
             subset-marginal MAP covariance              diag(class cov), full-d divisor for subsets
 Probeless   eq. 1 (identical in both)
==========  ==========================================  =============================================

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

import warnings
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

DEFINITIONS = ("paper_text", "neurox")
"""Definition sets of IoU, the probes and the Gaussian prior (module doc)."""
NEUROX_IOU_THRESHOLD = 0.05
"""NeuroX ``iou_probe.get_neuron_ordering``: activations with |z| below this are set to 0 first."""
METHODS = ("probeless", "iou", "iou_ap", "lasso", "ridge", "lca", "gaussian", "meanselect", "random")
PAPER_METHODS = ("probeless", "iou", "lasso", "ridge", "lca", "gaussian")
"""The paper's six interpretation methods: the voters of the main tables."""
DISPLAY = {
    "probeless": "Probeless", "iou": "IoU", "iou_ap": "IoU-AP (NeuroX)", "lasso": "Lasso",
    "ridge": "Ridge", "lca": "LCA", "gaussian": "Gaussian", "meanselect": "MeanSelect", "random": "Random",
}
PAPER_LAMBDA = 0.01
"""lambda1 = lambda2 = 0.01 for the regularised probes (paper section 4.1)."""


# ------------------------------------------------------------------ input checks and ranking


def _check_xy(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y).astype(np.int64).ravel()
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (n_words, n_neurons), got shape {x.shape}")
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y has {y.shape[0]} labels but x has {x.shape[0]} rows")
    if not set(np.unique(y)) <= {0, 1} or len(np.unique(y)) != 2:
        raise ValueError(f"y must be binary with both classes present (1 = concept), got values {np.unique(y)}")
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
    x, y = _check_xy(x, y)
    return np.abs(x[y == 1].mean(0) - x[y == 0].mean(0))


def meanselect_scores(x, y) -> np.ndarray:
    """Eq. 10 (MeanSelect): |mu(C) - mu(C-hat)| / (max_C z - min_C z); a constant neuron scores 0."""
    x, y = _check_xy(x, y)
    pos = x[y == 1]
    spread = pos.max(0) - pos.min(0)
    diff = np.abs(pos.mean(0) - x[y == 0].mean(0))
    return np.divide(diff, spread, out=np.zeros_like(diff), where=spread > 0)


def iou_scores(x, y, percentile: float = 90.0) -> np.ndarray:
    """Eq. 2 (Mu & Andreas): IoU of the mask z(n, w) > delta_n with the concept mask.

    delta_n is the ``percentile``-th percentile of neuron n's activations over all words given.
    Returns Float[ndarray, "n_neurons"] in [0, 1].
    """
    x, y = _check_xy(x, y)
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
    x, y = _check_xy(x, y)
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


# ------------------------------------------------------------------ probing methods


def probe_penalty(method: str, n_train: int, lambda1: float = PAPER_LAMBDA,
                  lambda2: float = PAPER_LAMBDA) -> tuple[float, float]:
    """scikit-learn ``(C, l1_ratio)`` equal to the paper's penalties (eqs. 3-5).

    The paper (NeuroX) minimises mean cross-entropy + lambda1 |w|_1 + lambda2 |w|_2^2; sklearn
    minimises C * sum(loss) + l1_ratio |w|_1 + (1 - l1_ratio)/2 |w|_2^2. Equal up to a factor
    when C = 1 / (N (l1 + 2 l2)) and l1_ratio = l1 / (l1 + 2 l2), with l2 = 0 for Lasso and
    l1 = 0 for Ridge.
    """
    l1 = {"lasso": lambda1, "ridge": 0.0, "lca": lambda1}.get(method)
    l2 = {"lasso": 0.0, "ridge": lambda2, "lca": lambda2}.get(method)
    if l1 is None:
        raise ValueError(f"method={method!r} is not a probe; allowed: lasso, ridge, lca")
    total = l1 + 2 * l2
    if total <= 0 or n_train <= 0:
        raise ValueError(f"penalties must be positive (lambda1={lambda1}, lambda2={lambda2}) and n_train > 0")
    return 1.0 / (n_train * total), l1 / total


def _standardise(x: np.ndarray, ref: np.ndarray | None = None) -> np.ndarray:
    # z-score with the statistics of ``ref`` (the training rows), so test rows are scaled alike.
    ref = x if ref is None else ref
    mu, sd = ref.mean(0), ref.std(0)
    return (x - mu) / np.where(sd > 0, sd, 1.0)


def _sklearn_before_1_8() -> bool:
    import sklearn

    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    return (major, minor) < (1, 8)


def probe_weights(x, y, method: str, lambda1: float = PAPER_LAMBDA, lambda2: float = PAPER_LAMBDA,
                  seed: int = 0, max_iter: int = 2000, standardize: bool = False) -> np.ndarray:
    """Weights of a logistic probe (Lasso / Ridge / LCA).

    ``standardize``: fit on z-scored activations (weights comparable across neurons of different
    scale) or on the raw activations, as NeuroX does by default (then |weight| also reflects
    the neuron's scale). Returns Float[ndarray, "n_neurons"] (the coefficient of the concept class).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    x, y = _check_xy(x, y)
    C, l1_ratio = probe_penalty(method, x.shape[0], lambda1, lambda2)
    # liblinear solves pure L1 / L2 exactly and fast; only saga does ElasticNet.
    solver = "saga" if 0.0 < l1_ratio < 1.0 else "liblinear"
    # tol 1e-3: saga on raw activations needs ~2x the epochs for 1e-4 and the top-30 barely moves.
    extra = {}
    if _sklearn_before_1_8():  # older scikit-learn ignores l1_ratio unless the penalty is named
        extra["penalty"] = {1.0: "l1", 0.0: "l2"}.get(l1_ratio, "elasticnet")
    clf = LogisticRegression(C=C, l1_ratio=l1_ratio, solver=solver, max_iter=max_iter, tol=1e-3,
                             random_state=seed, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(_standardise(x) if standardize else x, y)
    return clf.coef_[0].copy()


def neurox_probe_weights(x, y, lambda1: float = PAPER_LAMBDA, lambda2: float = PAPER_LAMBDA, seed: int = 0,
                         epochs: int = 10, batch_size: int = 32, lr: float = 1e-3,
                         engine: str = "numpy") -> np.ndarray:
    """NeuroX's ``train_logistic_regression_probe`` on a binary task: a 2-class softmax probe
    (``nn.Linear(d, 2)``, torch's default init after ``torch.manual_seed(seed)``), Adam, mini-batches
    in data order (no shuffling), loss = mean cross-entropy + lambda1 sum|W| + lambda2 sqrt(sum W^2)
    per batch: the L2 term is the *norm*, not its square as in eq. 4. Returns Float["2 n_neurons"].

    ``engine="numpy"`` (default): the same float32 Adam steps with the gradients written out (softmax
    cross-entropy, sign(W) for the L1 term, W / |W| for the L2 norm): no autograd overhead per
    mini-batch, ~20x faster on a CPU for these tiny batches. ``engine="torch"``: torch autograd and
    ``torch.optim.Adam``, as NeuroX runs it (the reference; a test checks the two agree).
    """
    import torch

    if engine not in ("numpy", "torch"):
        raise ValueError(f"engine={engine!r}; allowed: numpy, torch")
    x, y = _check_xy(x, y)
    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's torch RNG
        torch.manual_seed(int(seed))
        probe = torch.nn.Linear(x.shape[1], 2)
    if engine == "numpy":
        return _adam_softmax_probe(x.astype(np.float32), y, probe.weight.detach().numpy().copy(),
                                   probe.bias.detach().numpy().copy(), lambda1, lambda2, epochs, batch_size, lr)
    xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)
    opt = torch.optim.Adam(probe.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for start in range(0, xt.shape[0], batch_size):
            opt.zero_grad()
            w = probe.weight
            loss = loss_fn(probe(xt[start:start + batch_size]), yt[start:start + batch_size])
            loss = loss + lambda1 * w.abs().sum() + lambda2 * w.pow(2).sum().sqrt()
            loss.backward()
            opt.step()
    return probe.weight.detach().double().numpy().copy()


def _adam_softmax_probe(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray, lambda1: float,
                        lambda2: float, epochs: int, batch_size: int, lr: float,
                        betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> np.ndarray:
    """Adam (torch's defaults and update order) on mean softmax cross-entropy + lambda1 |W|_1 +
    lambda2 |W|_2 over in-order mini-batches, in float32. Returns W as Float64["2 d"]."""
    f32 = np.float32
    l1, l2, lr_, b1, b2 = f32(lambda1), f32(lambda2), f32(lr), f32(betas[0]), f32(betas[1])
    params = [w.astype(f32), b.astype(f32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    onehot = np.eye(2, dtype=f32)[y]
    step = 0
    for _ in range(epochs):
        for start in range(0, x.shape[0], batch_size):
            xb, tb = x[start:start + batch_size], onehot[start:start + batch_size]
            W, B = params
            logits = xb @ W.T + B
            logits -= logits.max(1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(1, keepdims=True)
            g_logits = (p - tb) / f32(xb.shape[0])
            gW = g_logits.T @ xb + l1 * np.sign(W)
            norm = np.sqrt((W * W).sum())
            if lambda2:
                gW += l2 * W / norm
            grads = [gW, g_logits.sum(0)]
            step += 1
            bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
            for p_, g, m_, v_ in zip(params, grads, m, v):
                m_ *= b1
                m_ += (1 - b1) * g
                v_ *= b2
                v_ += (1 - b2) * g * g
                denom = np.sqrt(v_) / np.sqrt(bc2) + f32(eps)
                p_ -= (lr_ / bc1) * m_ / denom
    return params[0].astype(np.float64)


def neurox_weight_mass_ordering(weights, search_stride: int = 100, seed: int = 0) -> np.ndarray:
    """NeuroX's ``linear_probe.get_neuron_ordering``: for p = 0, 1/stride, ..., 1, the smallest set
    of neurons holding a fraction p of each class's |weight| mass (union over classes); neurons
    enter the ordering at the first p that selects them. NeuroX leaves the order *within* one
    step arbitrary (a Python set); we break it with a seeded permutation.

    ``weights``: Float["n_classes n_neurons"]. Returns Int["n_neurons"].
    """
    w = np.abs(np.atleast_2d(np.asarray(weights, dtype=np.float64)))
    d = w.shape[1]
    entry = np.full(d, search_stride + 1, dtype=np.int64)   # the step at which each neuron enters
    for row in w:
        sort_idx = np.argsort(row, kind="stable")[::-1]       # NeuroX: np.argsort(...)[::-1]
        cum = np.cumsum(row[sort_idx])
        for step in range(search_stride + 1):
            over = np.flatnonzero(cum >= row.sum() * step / search_stride)
            n_sel = d if over.size == 0 else over[0] + 1
            chosen = sort_idx[:n_sel]
            entry[chosen] = np.minimum(entry[chosen], step)
    return rank_by_score(-entry.astype(np.float64), seed)


# ------------------------------------------------------------------ Gaussian (Hennigen et al.)


@dataclass
class GaussianMAP:
    """Per-class Gaussians fitted once on all neurons; any subset's MAP estimate is read off them.

    Prior: Normal-Inverse-Wishart with mu0 = overall mean, kappa0, nu0 (default d + 2) and
    Lambda0 = (nu0 - d - 1) diag(overall variance), so that the prior's mean covariance is diagonal
    with the data's variances. The NIW family is closed under marginalisation (Hennigen et al.'s
    "decomposable"): a subset F of m neurons has prior NIW(nu0 - d + m, Lambda0_FF), hence MAP
    covariance ``scatter_c[F, F] / (nu0 - d + 2 m + n_c + 2)``, where
    ``scatter_c = Lambda0 + S_c + kappa0 n_c/(kappa0+n_c) (xbar_c - mu0)(xbar_c - mu0)^T``.
    (Using the full-d denominator for every subset would shrink small subsets' covariances by
    ~n/(n + 2d) and make the probe wildly over-confident.)
    """

    log_prior: np.ndarray
    """Float["C"]: log class frequencies (class 0, class 1)."""
    means: np.ndarray
    """Float["C d"]: MAP means."""
    scatter: np.ndarray
    """Float["C d d"]: posterior scatter matrices (see above)."""
    counts: np.ndarray
    """Int["C"]: examples per class."""
    nu0: float
    marginal: bool = True
    """True: a subset's divisor follows its NIW marginal (above); False: NeuroX's full-d divisor
    ``nu0 + n_c + d + 2`` for every subset."""

    def denominator(self, c: int, m: int) -> float:
        """MAP covariance divisor of class ``c`` for a subset of ``m`` neurons."""
        d = self.means.shape[1]
        if not self.marginal:
            return self.nu0 + float(self.counts[c]) + d + 2
        return self.nu0 - d + 2 * m + float(self.counts[c]) + 2

    def cov(self, c: int, idx) -> np.ndarray:
        idx = list(idx)
        return self.scatter[c][np.ix_(idx, idx)] / self.denominator(c, len(idx))


def gaussian_map_params(x, y, kappa0: float | None = None, nu0: float | None = None,
                        prior: str = "paper_text") -> GaussianMAP:
    """Fit :class:`GaussianMAP` (classes 0 and 1) on activations x: Float["N d"], labels y: Int["N"].

    ``prior="paper_text"``: mu0 = overall mean, kappa0 = 1, Lambda0 = (nu0 - d - 1) diag(overall
    variance), subset-marginal divisors. ``prior="neurox"`` (NeuroX ``gaussian_probe``, after
    Torroba Hennigen et al.'s code): mu0 = the class's own mean (so the MAP mean is the class
    mean), kappa0 = 0.01, Lambda0 = diag(class covariance, ddof 1), nu0 = d + 2 and the full-d
    divisor ``nu0 + n_c + d + 2`` for every subset. ``kappa0`` / ``nu0`` override the defaults.
    """
    if prior not in DEFINITIONS:
        raise ValueError(f"prior={prior!r}; allowed: {', '.join(DEFINITIONS)}")
    x, y = _check_xy(x, y)
    n, d = x.shape
    neurox = prior == "neurox"
    kappa0 = (0.01 if neurox else 1.0) if kappa0 is None else float(kappa0)
    nu0 = float(d + 2) if nu0 is None else float(nu0)
    if nu0 <= d - 1:
        raise ValueError(f"nu0 must exceed d - 1 = {d - 1} for a proper Inverse-Wishart prior, got {nu0}")
    log_prior, means, scatters, counts = [], [], [], []
    for c in (0, 1):
        xc = x[y == c]
        nc = xc.shape[0]
        xbar = xc.mean(0)
        if neurox:
            mu0 = xbar
            lam0 = np.diag(np.var(xc, axis=0, ddof=1) if nc > 1 else np.ones(d))
        else:
            mu0 = x.mean(0)
            lam0 = (nu0 - d - 1) * np.diag(np.maximum(x.var(0), 1e-12))
        centred = xc - xbar
        dev = (xbar - mu0)[:, None]
        scatters.append(lam0 + centred.T @ centred + kappa0 * nc / (kappa0 + nc) * (dev @ dev.T))
        means.append((kappa0 * mu0 + nc * xbar) / (kappa0 + nc))
        log_prior.append(np.log(nc / n))
        counts.append(nc)
    return GaussianMAP(np.array(log_prior), np.stack(means), np.stack(scatters), np.array(counts), nu0,
                       marginal=not neurox)


def _label_loglik(joint: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i log p(y_i | x_i) from per-class joint log densities ``joint`` (2, N, K) -> (K,)."""
    sign = np.where(y == 1, 1.0, -1.0)[:, None]
    return -np.logaddexp(0.0, -sign * (joint[1] - joint[0])).sum(0)


def gaussian_ranking(x, y, max_neurons: int | None = None, kappa0: float | None = None,
                     nu0: float | None = None, prior: str = "paper_text", chunk_rows: int = 256) -> np.ndarray:
    """Eq. 6: greedy ranking under the MAP Gaussian probe, by rank-one conditional updates.

    At each step every unselected neuron n is scored by the training-set label log-likelihood
    sum_i log p(c_i | x_i[F + n]) and the best is appended to F. Because
    log N(x_{F+n}) = log N(x_F) + log N(x_n | x_F), we keep per class the residuals
    r_n = x_n - E[x_n | x_F] (N x d) and conditional variances v_n = Var[x_n | x_F] (d), all
    read off the class statistics fitted once in closed form (:func:`gaussian_map_params`), and
    update both with one Schur-complement step when F grows. The log-odds of word i under
    candidate n is then ``a_n + b_i + alpha0_n r0_in^2 - alpha1_n r1_in^2`` (a_n, alpha_n from the
    log-dets and variances, b_i from the words' quadratic forms on F), scored for all candidates
    at once, ``chunk_rows`` words at a time so that the step's arrays stay in cache; the previous
    step's residual update is applied to each chunk just before it is scored (one pass over the
    residuals per step). O(C N d) per step, O(C (N + d) d k) for k steps, instead of
    factorising every candidate's (k+1) x (k+1) covariance and re-evaluating N densities
    (O(d (k^3 + N k^2)) per step). Output equals :func:`gaussian_ranking_naive`.

    ``max_neurons``: stop after that many greedy steps; the rest follow by their score at that
    step (so the result is still a full ranking). Returns Int[ndarray, "n_neurons"].
    """
    import torch

    x, y = _check_xy(x, y)
    n, d = x.shape
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    k_max = d if max_neurons is None else min(int(max_neurons), d)
    fit = gaussian_map_params(x, y, kappa0, nu0, prior)
    f64 = dict(dtype=torch.float64)
    covs = torch.as_tensor(fit.scatter, **f64)                    # work on the scatter; scale per step
    resid = [torch.as_tensor(x - fit.means[c], **f64).contiguous() for c in (0, 1)]  # x_n - E[x_n | x_F]
    var = torch.diagonal(covs, dim1=1, dim2=2).clone()            # (C, d): Var[x_n | x_F] (unscaled)
    quad = torch.zeros((2, n), **f64)                             # (x_F - mu_F)^T scatter_FF^-1 (x_F - mu_F)
    logdet = torch.zeros(2, **f64)                                # log det scatter_FF
    lp = fit.log_prior
    sign = torch.as_tensor(np.where(y == 1, 1.0, -1.0), **f64)
    whitened = torch.zeros((k_max, 2, d), **f64)                  # rows of L^{-1} scatter_{F, :}
    selected: list[int] = []
    available = torch.ones(d, dtype=torch.bool)
    score = torch.zeros(d, **f64)
    pending = None                                                # last step's (j, coef) residual update
    R = min(int(chunk_rows), n)
    buf, tmp = torch.empty((R, d), **f64), torch.empty((R, d), **f64)
    for k in range(k_max):
        m = k + 1  # subset size of every candidate at this step: the MAP scale is shared by all of them
        D = [fit.denominator(c, m) for c in (0, 1)]
        v = var.clamp_min(1e-300)
        # Per class: log N = -0.5 [m log 2pi + logdet(scatter_FF) - m log D + D * quad], D the MAP divisor;
        # the candidate adds log v_n to the log-det and r_n^2 / v_n to the quadratic form.
        a = (lp[1] - lp[0]) - 0.5 * (logdet[1] + v[1].log() - m * np.log(D[1])) \
            + 0.5 * (logdet[0] + v[0].log() - m * np.log(D[0]))
        alpha0, alpha1 = 0.5 * D[0] / v[0], 0.5 * D[1] / v[1]
        b = 0.5 * D[0] * quad[0] - 0.5 * D[1] * quad[1]
        score.zero_()
        for start in range(0, n, R):
            stop = min(start + R, n)
            r0, r1 = resid[0][start:stop], resid[1][start:stop]
            if pending is not None:                               # apply step k-1's update to this chunk
                j_prev, coef = pending
                r0.sub_(torch.outer(r0[:, j_prev], coef[0]))
                r1.sub_(torch.outer(r1[:, j_prev], coef[1]))
            t, u = buf[: stop - start], tmp[: stop - start]
            torch.mul(r0, r0, out=t).mul_(alpha0)
            torch.mul(r1, r1, out=u).mul_(alpha1)
            t.sub_(u).add_(a).add_(b[start:stop, None]).mul_(sign[start:stop, None])
            score += torch.nn.functional.logsigmoid(t).sum(0)
        score[~available] = -torch.inf
        j = int(torch.argmax(score))
        selected.append(j)
        available[j] = False
        for c in (0, 1):
            rj = resid[c][:, j]
            quad[c] += rj.square() / v[c, j]
        logdet += v[:, j].log()
        # Conditional covariance of every neuron with j given F: scatter_{:, j} - W^T W[:, j].
        cov_j = covs[:, :, j] - torch.einsum("kc,kcd->cd", whitened[:k, :, j], whitened[:k])
        vj = v[:, j]
        coef = cov_j / vj[:, None]                                # regression of each neuron on x_j | F
        var = var - cov_j * coef
        whitened[k] = cov_j / vj.sqrt()[:, None]
        pending = (j, coef)
    selected_arr = np.array(selected, dtype=np.int64)
    if k_max < d:
        rest = np.flatnonzero(available.numpy())
        rest = rest[np.argsort(-score.numpy()[rest], kind="stable")]
        return np.concatenate([selected_arr, rest])
    return selected_arr


def gaussian_ranking_naive(x, y, max_neurons: int | None = None, kappa0: float | None = None,
                           nu0: float | None = None, prior: str = "paper_text") -> np.ndarray:
    """The reference greedy loop (what the public toolkit does): for every step and every
    candidate, slice the (k+1) x (k+1) covariance, factorise it and evaluate all N densities.
    O(d (k^3 + N k^2)) per step. Returns the first ``max_neurons`` (default all) of the ranking.
    """
    from scipy.stats import multivariate_normal

    x, y = _check_xy(x, y)
    n, d = x.shape
    k_max = d if max_neurons is None else min(int(max_neurons), d)
    fit = gaussian_map_params(x, y, kappa0, nu0, prior)
    selected: list[int] = []
    for _ in range(k_max):
        best, best_score = -1, -np.inf
        for cand in range(d):
            if cand in selected:
                continue
            idx = selected + [cand]
            joint = np.stack([fit.log_prior[c] + multivariate_normal.logpdf(
                x[:, idx], fit.means[c][idx], fit.cov(c, idx)).reshape(n) for c in (0, 1)])
            s = float(_label_loglik(joint[:, :, None], y)[0])
            if s > best_score:
                best, best_score = cand, s
        selected.append(best)
    return np.array(selected, dtype=np.int64)


# ------------------------------------------------------------------ dispatch


def rank_neurons(x, y, method: str, seed: int = 0, iou_percentile: float = 90.0,
                 lambda1: float = PAPER_LAMBDA, lambda2: float = PAPER_LAMBDA,
                 gaussian_max_neurons: int | None = None, probe_standardize: bool = False,
                 definitions: str = "paper_text") -> np.ndarray:
    """Full ranking of the neurons of ``x`` for concept labels ``y`` by ``method`` (see module doc).

    x: Float[ndarray, "n_words n_neurons"], y: Int[ndarray, "n_words"] (1 = concept).
    ``definitions``: ``paper_text`` or ``neurox`` (IoU, probes, Gaussian prior; module doc).
    ``seed``: this method's tie-break (and probe-init) seed; :func:`rank_all` derives one per method.
    Returns Int[ndarray, "n_neurons"], most salient first.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} unknown; allowed: {', '.join(METHODS)}")
    if definitions not in DEFINITIONS:
        raise ValueError(f"definitions={definitions!r} unknown; allowed: {', '.join(DEFINITIONS)}")
    x, y = _check_xy(x, y)
    neurox = definitions == "neurox"
    if method == "random":
        return np.random.default_rng(seed).permutation(x.shape[1])
    if method == "gaussian":
        return gaussian_ranking(x, y, max_neurons=gaussian_max_neurons, prior=definitions)
    if method in ("lasso", "ridge", "lca") and neurox:
        l1 = 0.0 if method == "ridge" else lambda1
        l2 = 0.0 if method == "lasso" else lambda2
        return neurox_weight_mass_ordering(neurox_probe_weights(x, y, l1, l2, seed=seed), seed=seed)
    if method in ("lasso", "ridge", "lca"):
        scores = np.abs(probe_weights(x, y, method, lambda1, lambda2, seed=seed, standardize=probe_standardize))
    elif method == "probeless":
        scores = probeless_scores(x, y)
    elif method == "meanselect":
        scores = meanselect_scores(x, y)
    elif method == "iou" and not neurox:
        scores = iou_scores(x, y, iou_percentile)
    elif method == "iou":
        scores = iou_ap_scores(x, y, NEUROX_IOU_THRESHOLD)
    else:
        scores = iou_ap_scores(x, y)
    return rank_by_score(scores, seed)


def rank_all(x, y, methods: Sequence[str] = METHODS, seed: int = 0, task: tuple = (),
             **kwargs) -> dict[str, np.ndarray]:
    """``{method: rank_neurons(x, y, method, seed=method_seed(seed, method, *task), **kwargs)}``.

    Each method gets its own tie-break stream (a shared one would make zero-weight neurons agree
    across methods and inflate their overlap); ``task`` (e.g. ``(concept, layer)``) makes the
    streams differ between tasks too.
    """
    return {m: rank_neurons(x, y, m, seed=method_seed(seed, m, *task), **kwargs) for m in methods}


# ------------------------------------------------------------------ consensus metrics


def _top_sets(rankings: Mapping[str, Sequence[int]], s: int) -> dict[str, set[int]]:
    if not isinstance(s, (int, np.integer)) or s < 1:
        raise ValueError(f"s (number of top neurons) must be a positive integer, got {s!r}")
    if len(rankings) < 2:
        raise ValueError(f"need at least two methods' rankings, got {list(rankings)}")
    out = {}
    for m, r in rankings.items():
        r = np.asarray(r).ravel()
        if r.shape[0] < s:
            raise ValueError(f"ranking of {m!r} has {r.shape[0]} neurons, fewer than s={s}")
        top = r[:s]
        if len(set(top.tolist())) != s:
            raise ValueError(f"ranking of {m!r} repeats neurons in its top {s}")
        out[m] = set(int(v) for v in top)
    return out


def overlap(a: Iterable[int], b: Iterable[int]) -> float:
    """Eq. 7: intersection over union of two neuron sets."""
    a, b = set(a), set(b)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _voters_for(method: str, rankings: Mapping, voters: Sequence[str] | None) -> list[str]:
    pool = list(rankings) if voters is None else list(voters)
    unknown = [v for v in pool if v not in rankings]
    if unknown:
        raise ValueError(f"voters {unknown} have no ranking; rankings given: {list(rankings)}")
    others = [v for v in pool if v != method]
    if not others:
        raise ValueError(f"method {method!r} has no other voter to be compared with (voters={pool})")
    return others


def avg_overlap(rankings: Mapping[str, Sequence[int]], s: int,
                voters: Sequence[str] | None = None) -> dict[str, float]:
    """Eq. 8: AvgOverlap_m = mean over the voters v != m of o(S_m, S_v).

    ``rankings``: method -> ranking (best first). ``voters``: which methods form the reference
    (default: all given); a method outside ``voters`` (e.g. Random, or a new method under test)
    is still scored against all of them. Returns method -> score in [0, 1].
    """
    tops = _top_sets(rankings, s)
    return {m: float(np.mean([overlap(tops[m], tops[v]) for v in _voters_for(m, rankings, voters)]))
            for m in rankings}


def borda_top(rankings: Mapping[str, Sequence[int]], s: int, voters: Sequence[str] | None = None) -> list[int]:
    """Eq. 9: the top-``s`` neurons of the Borda aggregate of ``voters`` (default all).

    Each voter gives its neuron at 0-based position i of its top-s list ``s - i`` points.
    Tie rule (documented, deterministic, independent of any method under test): more points
    first; then the neuron named by more voters; then the smaller neuron index.
    """
    voters = list(rankings) if voters is None else list(voters)
    points: dict[int, int] = {}
    votes: dict[int, int] = {}
    for v in voters:
        r = np.asarray(rankings[v]).ravel()
        if r.shape[0] < s:
            raise ValueError(f"ranking of {v!r} has {r.shape[0]} neurons, fewer than s={s}")
        for i, neuron in enumerate(r[:s].tolist()):
            points[neuron] = points.get(neuron, 0) + (s - i)
            votes[neuron] = votes.get(neuron, 0) + 1
    ordered = sorted(points, key=lambda nrn: (-points[nrn], -votes[nrn], nrn))
    return ordered[:s]


def neuron_vote(rankings: Mapping[str, Sequence[int]], s: int,
                voters: Sequence[str] | None = None) -> dict[str, float]:
    """NeuronVote_m = o(S_m, S_best(-m)), S_best(-m) the Borda top-s of the voters v != m
    (leave-one-out: a method never votes for itself). Returns method -> score in [0, 1]."""
    tops = _top_sets(rankings, s)
    return {m: overlap(tops[m], borda_top(rankings, s, _voters_for(m, rankings, voters))) for m in rankings}


def pairwise_overlap(rankings: Mapping[str, Sequence[int]], s: int | Sequence[int]) -> pd.DataFrame:
    """Method x method matrix of o(S_m1, S_m2) (eq. 7); a list of ``s`` averages the matrices
    (the paper's Figure 1 averages s = 10..50). Diagonal is 1."""
    s_list = [s] if isinstance(s, (int, np.integer)) else list(s)
    names = list(rankings)
    mats = []
    for s_ in s_list:
        tops = _top_sets(rankings, s_)
        mats.append([[overlap(tops[a], tops[b]) for b in names] for a in names])
    return pd.DataFrame(np.mean(mats, axis=0), index=names, columns=names)


# ------------------------------------------------------------------ classifier accuracy


def classifier_accuracy(x_train, y_train, x_test, y_test, neurons: Sequence[int], max_iter: int = 500) -> float:
    """Section 3.1: accuracy on the test rows of an *unregularised* logistic regression trained
    on the train rows, using only the columns ``neurons`` (standardised with train statistics)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    x_train, y_train = _check_xy(x_train, y_train)
    x_test = np.asarray(x_test, dtype=np.float64)
    y_test = np.asarray(y_test).ravel()
    cols = np.asarray(list(neurons), dtype=np.int64)
    if cols.size == 0 or cols.min() < 0 or cols.max() >= x_train.shape[1]:
        raise ValueError(f"neurons must be non-empty indices in [0, {x_train.shape[1]}), got {cols[:10]}...")
    tr = _standardise(x_train[:, cols])
    te = _standardise(x_test[:, cols], ref=x_train[:, cols])
    unpenalised = {"penalty": None} if _sklearn_before_1_8() else {"C": np.inf}
    clf = LogisticRegression(solver="lbfgs", max_iter=max_iter, **unpenalised)
    with warnings.catch_warnings():
        # Separable data drives unregularised weights to infinity; the decision rule is still fine.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        clf.fit(tr, y_train)
    return float((clf.predict(te) == y_test).mean())
