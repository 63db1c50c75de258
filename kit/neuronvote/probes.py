"""Logistic probes of NeuronVote (seed 004 eqs. 3-5: Lasso, Ridge, ElasticNet/LCA), NeuroX's
probe and neuron ordering, and the classifier-accuracy check of section 3.1.

x Float[ndarray, "n_words n_neurons"], y Int[ndarray, "n_words"] (1 = concept).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kit.neuronvote.corpus_scores import check_xy, rank_by_score

PAPER_LAMBDA = 0.01
"""lambda1 = lambda2 = 0.01 for the regularised probes (paper section 4.1)."""
INTERCEPT_SCALING = 100.0
"""liblinear's constant column for the intercept: b's penalty is lambda |b| / this
(:func:`probe_fit`)."""


def probe_penalty(
    method: str, n_train: int, lambda1: float = PAPER_LAMBDA, lambda2: float = PAPER_LAMBDA
) -> tuple[float, float]:
    """scikit-learn ``(C, l1_ratio)`` equal to the paper's penalties (eqs. 3-5).

    The paper (NeuroX) minimises mean cross-entropy + lambda1 |w|_1 + lambda2 |w|_2^2 (the bias
    unpenalised); sklearn
    minimises C * sum(loss) + l1_ratio |w|_1 + (1 - l1_ratio)/2 |w|_2^2. Equal up to a factor
    when C = 1 / (N (l1 + 2 l2)) and l1_ratio = l1 / (l1 + 2 l2), with l2 = 0 for Lasso and
    l1 = 0 for Ridge.
    """
    l1 = {"lasso": lambda1, "ridge": 0.0, "lca": lambda1}.get(method)
    l2 = {"lasso": 0.0, "ridge": lambda2, "lca": lambda2}.get(method)
    if l1 is None or l2 is None:
        raise ValueError(f"method={method!r} is not a probe; allowed: lasso, ridge, lca")
    total = l1 + 2 * l2
    if total <= 0 or n_train <= 0:
        raise ValueError(
            f"penalties must be positive (lambda1={lambda1}, lambda2={lambda2}) and n_train > 0"
        )
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


@dataclass(frozen=True)
class ProbeFit:
    """A logistic probe at the optimum of the paper's objective (eqs. 3-5)."""

    coef: np.ndarray
    """Float[ndarray, "n_neurons"]: w, the weights of the concept class."""
    intercept: float
    """b, unpenalised."""
    objective: float
    """mean log-loss + lambda1 |w|_1 + lambda2 |w|_2^2 at (w, b): :func:`probe_objective`."""
    solver: str
    """scikit-learn's solver: ``liblinear`` (Lasso, Ridge) or ``saga`` (LCA)."""


def probe_objective(x, y, coef, intercept: float, lambda1: float, lambda2: float) -> float:
    """The paper's probe objective (eqs. 3-5): mean over words of the logistic loss of
    ``x @ coef + intercept`` + lambda1 |coef|_1 + lambda2 |coef|_2^2; the intercept is not
    penalised. x: Float["n_words n_neurons"], y: Int["n_words"] (1 = concept), coef:
    Float["n_neurons"]."""
    x, y = check_xy(x, y)
    coef = np.asarray(coef, dtype=np.float64)
    z = x @ coef + float(intercept)
    loss = np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * z).mean()
    return float(loss + lambda1 * np.abs(coef).sum() + lambda2 * (coef**2).sum())


def _probe_lambdas(method: str, lambda1: float, lambda2: float) -> tuple[float, float]:
    probe_penalty(method, 1, lambda1, lambda2)  # validates the method and the penalties
    return (0.0 if method == "ridge" else lambda1), (0.0 if method == "lasso" else lambda2)


def probe_fit(
    x,
    y,
    method: str,
    lambda1: float = PAPER_LAMBDA,
    lambda2: float = PAPER_LAMBDA,
    seed: int = 0,
    max_iter: int = 2000,
    tol: float = 1e-4,
    standardize: bool = False,
) -> ProbeFit:
    """Fit a logistic probe (``lasso``: L1, ``ridge``: L2, ``lca``: ElasticNet) at the optimum of
    the paper's objective, :func:`probe_objective`, whose intercept is NOT penalised (the paper's
    and NeuroX's ``nn.Linear`` bias carries no penalty).

    How: the columns are centred first (with a free intercept an exact reparametrisation: b absorbs
    the shift, w is unchanged; it also leaves b small, |b| <= a few units). Lasso and Ridge then
    use ``liblinear``, which treats the intercept as one more penalised weight on a constant column
    of value ``intercept_scaling``, so b pays ``lambda |b| / INTERCEPT_SCALING``; LCA (ElasticNet)
    uses ``saga``, whose intercept is unpenalised. Last, b is solved exactly given w (Newton; its
    optimality condition has no penalty term). Before, liblinear ran on raw activations with
    intercept_scaling 1: on activations far from 0 it pinned b near 0 and moved the weights to
    compensate (on 400 x 60 activations offset by +3, b = 0.00 where the optimum is 6.40, and 8 of
    the optimum's top-10 Lasso neurons).

    Measured against scipy's L-BFGS-B optimum (tests/neuronvote/test_probes.py; 21 smoke-profile
    chunking tasks, the offset case and a 3500 x 384 case): objective within 1e-6 (Lasso) and 4e-8
    (Ridge) of the optimum, every top-10 equal, in 0.25 s of CPU for the 23 Lasso fits;
    scikit-learn's unpenalised-intercept solvers were further off and slower (saga for Lasso: gap
    1.6e-4, one top-10 off by one neuron, 20x the time; lbfgs for Ridge: gap 3.5e-6, 3x the time).

    ``standardize``: fit on z-scored activations (weights comparable across neurons of different
    scale) or on the raw activations, as NeuroX does by default (then |weight| also reflects the
    neuron's scale); the returned coefficients and intercept are those of the matrix fitted.
    ``tol``: scikit-learn's stopping tolerance. x: Float["n_words n_neurons"], y: Int["n_words"].
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    x, y = check_xy(x, y)
    l1, l2 = _probe_lambdas(method, lambda1, lambda2)
    C, l1_ratio = probe_penalty(method, x.shape[0], lambda1, lambda2)
    fitted = _standardise(x) if standardize else x
    mean = fitted.mean(0)
    solver = "saga" if 0.0 < l1_ratio < 1.0 else "liblinear"  # only saga does ElasticNet
    extra = {}
    if _sklearn_before_1_8():  # older scikit-learn ignores l1_ratio unless the penalty is named
        extra["penalty"] = {1.0: "l1", 0.0: "l2"}.get(l1_ratio, "elasticnet")
    if solver == "liblinear":
        extra["intercept_scaling"] = INTERCEPT_SCALING
    clf = LogisticRegression(
        C=C,
        l1_ratio=l1_ratio,
        solver=solver,
        max_iter=max_iter,
        tol=tol,
        random_state=seed,
        **extra,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(fitted - mean, y)
    coef = clf.coef_[0].astype(np.float64)
    # liblinear's b carries a (small) penalty, and saga stops on the change of w alone (with w at 0
    # it stops after one epoch whatever b is); b's optimality has no penalty term: solve it given w.
    b0 = float(clf.intercept_[0])  # pyright: ignore[reportIndexIssue]  (sklearn: an array once fit)
    b = _intercept_given(np.asarray((fitted - mean) @ coef), y, b0)
    intercept = b - float(mean @ coef)  # back to the uncentred columns
    return ProbeFit(coef, intercept, probe_objective(fitted, y, coef, intercept, l1, l2), solver)


def _intercept_given(margin: np.ndarray, y: np.ndarray, b: float, steps: int = 50) -> float:
    """argmin_b of the mean log-loss of ``margin + b`` (the penalty does not involve b): Newton's
    method from ``b``, to machine precision; the loss is convex in b, so this is its minimum."""
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(margin + b)))
        grad, hess = float((p - y).mean()), float((p * (1 - p)).mean())
        if hess <= 0 or abs(grad) < 1e-14:
            break
        b -= grad / hess
    return b


def probe_weights(
    x,
    y,
    method: str,
    lambda1: float = PAPER_LAMBDA,
    lambda2: float = PAPER_LAMBDA,
    seed: int = 0,
    max_iter: int = 2000,
    standardize: bool = False,
    tol: float = 1e-4,
) -> np.ndarray:
    """Weights of a logistic probe (Lasso / Ridge / LCA) at the paper objective's optimum:
    :func:`probe_fit` (unpenalised intercept). Returns Float[ndarray, "n_neurons"]."""
    return probe_fit(
        x,
        y,
        method,
        lambda1,
        lambda2,
        seed=seed,
        max_iter=max_iter,
        tol=tol,
        standardize=standardize,
    ).coef.copy()


def neurox_probe_weights(
    x,
    y,
    lambda1: float = PAPER_LAMBDA,
    lambda2: float = PAPER_LAMBDA,
    seed: int = 0,
    epochs: int = 10,
    batch_size: int = 32,
    lr: float = 1e-3,
    engine: str = "numpy",
) -> np.ndarray:
    """NeuroX's ``train_logistic_regression_probe`` on a binary task: a 2-class softmax probe
    (``nn.Linear(d, 2)``, torch's default init after ``torch.manual_seed(seed)``), Adam,
    mini-batches in data order (no shuffling), loss = mean cross-entropy + lambda1 sum|W| + lambda2
    sqrt(sum W^2) per batch: the L2 term is the *norm*, not its square as in eq. 4. Returns Float["2
    n_neurons"].

    ``engine="numpy"`` (default): the same float32 Adam steps with the gradients written out
    (softmax cross-entropy, sign(W) for the L1 term, W / |W| for the L2 norm): no autograd overhead
    per mini-batch, ~20x faster on a CPU for these tiny batches. ``engine="torch"``: torch autograd
    and ``torch.optim.Adam``, as NeuroX runs it (the reference; a test checks the two agree).
    """
    import torch

    if engine not in ("numpy", "torch"):
        raise ValueError(f"engine={engine!r}; allowed: numpy, torch")
    x, y = check_xy(x, y)
    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's torch RNG
        torch.manual_seed(int(seed))
        probe = torch.nn.Linear(x.shape[1], 2)
    if engine == "numpy":
        return _adam_softmax_probe(
            x.astype(np.float32),
            y,
            probe.weight.detach().numpy().copy(),
            probe.bias.detach().numpy().copy(),
            lambda1,
            lambda2,
            epochs,
            batch_size,
            lr,
        )
    xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)
    opt = torch.optim.Adam(probe.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for start in range(0, xt.shape[0], batch_size):
            opt.zero_grad()
            w = probe.weight
            loss = loss_fn(probe(xt[start : start + batch_size]), yt[start : start + batch_size])
            loss = loss + lambda1 * w.abs().sum() + lambda2 * w.pow(2).sum().sqrt()
            loss.backward()
            opt.step()
    return probe.weight.detach().double().numpy().copy()


def _adam_softmax_probe(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    lambda1: float,
    lambda2: float,
    epochs: int,
    batch_size: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> np.ndarray:
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
            xb, tb = x[start : start + batch_size], onehot[start : start + batch_size]
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
            bc1, bc2 = 1 - b1**step, 1 - b2**step
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
    entry = np.full(d, search_stride + 1, dtype=np.int64)  # the step at which each neuron enters
    for row in w:
        sort_idx = np.argsort(row, kind="stable")[::-1]  # NeuroX: np.argsort(...)[::-1]
        cum = np.cumsum(row[sort_idx])
        for step in range(search_stride + 1):
            over = np.flatnonzero(cum >= row.sum() * step / search_stride)
            n_sel = d if over.size == 0 else over[0] + 1
            chosen = sort_idx[:n_sel]
            entry[chosen] = np.minimum(entry[chosen], step)
    return rank_by_score(-entry.astype(np.float64), seed)


def classifier_accuracy(
    x_train, y_train, x_test, y_test, neurons: Sequence[int] | np.ndarray, max_iter: int = 500
) -> float:
    """Section 3.1: accuracy on the test rows of an *unregularised* logistic regression trained
    on the train rows, using only the columns ``neurons`` (standardised with train statistics)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    x_train, y_train = check_xy(x_train, y_train)
    x_test = np.asarray(x_test, dtype=np.float64)
    y_test = np.asarray(y_test).ravel()
    cols = np.asarray(list(neurons), dtype=np.int64)
    if cols.size == 0 or cols.min() < 0 or cols.max() >= x_train.shape[1]:
        raise ValueError(
            f"neurons must be non-empty indices in [0, {x_train.shape[1]}), got {cols[:10]}..."
        )
    tr = _standardise(x_train[:, cols])
    te = _standardise(x_test[:, cols], ref=x_train[:, cols])
    unpenalised: dict[str, Any] = {"penalty": None} if _sklearn_before_1_8() else {"C": np.inf}
    clf = LogisticRegression(solver="lbfgs", max_iter=max_iter, **unpenalised)
    with warnings.catch_warnings():
        # Separable data drives unregularised weights to infinity; the decision rule is still fine.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        clf.fit(tr, y_train)
    return float((np.asarray(clf.predict(te)) == y_test).mean())  # (asarray: sklearn's stubs)
