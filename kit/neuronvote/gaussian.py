"""The Gaussian probe of NeuronVote (seed 004 eq. 6; Torroba Hennigen et al. 2020): per-class MAP
Gaussians under a Normal-Inverse-Wishart prior and the greedy neuron ranking they define, by
rank-one conditional updates (:func:`gaussian_ranking`) or the naive refit of every candidate
subset (:func:`gaussian_ranking_naive`, the reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from kit.neuronvote.corpus_scores import DEFINITIONS, check_xy


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


def gaussian_map_params(
    x, y, kappa0: float | None = None, nu0: float | None = None, prior: str = "paper_text"
) -> GaussianMAP:
    """Fit :class:`GaussianMAP` (classes 0 and 1) on activations x: Float["N d"], labels y:
    Int["N"].

    ``prior="paper_text"``: mu0 = overall mean, kappa0 = 1, Lambda0 = (nu0 - d - 1) diag(overall
    variance), subset-marginal divisors. ``prior="neurox"`` (NeuroX ``gaussian_probe``, after
    Torroba Hennigen et al.'s code): mu0 = the class's own mean (so the MAP mean is the class
    mean), kappa0 = 0.01, Lambda0 = diag(class covariance, ddof 1), nu0 = d + 2 and the full-d
    divisor ``nu0 + n_c + d + 2`` for every subset. ``kappa0`` / ``nu0`` override the defaults.
    """
    if prior not in DEFINITIONS:
        raise ValueError(f"prior={prior!r}; allowed: {', '.join(DEFINITIONS)}")
    x, y = check_xy(x, y)
    n, d = x.shape
    neurox = prior == "neurox"
    kappa0 = (0.01 if neurox else 1.0) if kappa0 is None else float(kappa0)
    nu0 = float(d + 2) if nu0 is None else float(nu0)
    if nu0 <= d - 1:
        raise ValueError(
            f"nu0 must exceed d - 1 = {d - 1} for a proper Inverse-Wishart prior, got {nu0}"
        )
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
    return GaussianMAP(
        np.array(log_prior),
        np.stack(means),
        np.stack(scatters),
        np.array(counts),
        nu0,
        marginal=not neurox,
    )


def _label_loglik(joint: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i log p(y_i | x_i) from per-class joint log densities ``joint`` (2, N, K) -> (K,)."""
    sign = np.where(y == 1, 1.0, -1.0)[:, None]
    return -np.logaddexp(0.0, -sign * (joint[1] - joint[0])).sum(0)


def gaussian_ranking(
    x,
    y,
    max_neurons: int | None = None,
    kappa0: float | None = None,
    nu0: float | None = None,
    prior: str = "paper_text",
    chunk_rows: int = 256,
) -> np.ndarray:
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

    x, y = check_xy(x, y)
    n, d = x.shape
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    k_max = d if max_neurons is None else min(int(max_neurons), d)
    fit = gaussian_map_params(x, y, kappa0, nu0, prior)
    f64: dict[str, Any] = dict(dtype=torch.float64)
    covs = torch.as_tensor(fit.scatter, **f64)  # work on the scatter; scale per step
    # x_n - E[x_n | x_F]
    resid = [torch.as_tensor(x - fit.means[c], **f64).contiguous() for c in (0, 1)]
    var = torch.diagonal(covs, dim1=1, dim2=2).clone()  # (C, d): Var[x_n | x_F] (unscaled)
    quad = torch.zeros((2, n), **f64)  # (x_F - mu_F)^T scatter_FF^-1 (x_F - mu_F)
    logdet = torch.zeros(2, **f64)  # log det scatter_FF
    lp = fit.log_prior
    sign = torch.as_tensor(np.where(y == 1, 1.0, -1.0), **f64)
    whitened = torch.zeros((k_max, 2, d), **f64)  # rows of L^{-1} scatter_{F, :}
    selected: list[int] = []
    available = torch.ones(d, dtype=torch.bool)
    score = torch.zeros(d, **f64)
    pending = None  # last step's (j, coef) residual update
    R = min(int(chunk_rows), n)
    buf, tmp = torch.empty((R, d), **f64), torch.empty((R, d), **f64)
    for k in range(k_max):
        # subset size of every candidate at this step: the MAP scale is shared by all of them
        m = k + 1
        D = [fit.denominator(c, m) for c in (0, 1)]
        v = var.clamp_min(1e-300)
        # Per class: log N = -0.5 [m log 2pi + logdet(scatter_FF) - m log D + D * quad], D the MAP
        # divisor; the candidate adds log v_n to the log-det and r_n^2 / v_n to the quadratic form.
        a = (
            (lp[1] - lp[0])
            - 0.5 * (logdet[1] + v[1].log() - m * np.log(D[1]))
            + 0.5 * (logdet[0] + v[0].log() - m * np.log(D[0]))
        )
        alpha0, alpha1 = 0.5 * D[0] / v[0], 0.5 * D[1] / v[1]
        b = 0.5 * D[0] * quad[0] - 0.5 * D[1] * quad[1]
        score.zero_()
        for start in range(0, n, R):
            stop = min(start + R, n)
            r0, r1 = resid[0][start:stop], resid[1][start:stop]
            if pending is not None:  # apply step k-1's update to this chunk
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
        coef = cov_j / vj[:, None]  # regression of each neuron on x_j | F
        var = var - cov_j * coef
        whitened[k] = cov_j / vj.sqrt()[:, None]
        pending = (j, coef)
    selected_arr = np.array(selected, dtype=np.int64)
    if k_max < d:
        rest = np.flatnonzero(available.numpy())
        rest = rest[np.argsort(-score.numpy()[rest], kind="stable")]
        return np.concatenate([selected_arr, rest])
    return selected_arr


def gaussian_ranking_naive(
    x,
    y,
    max_neurons: int | None = None,
    kappa0: float | None = None,
    nu0: float | None = None,
    prior: str = "paper_text",
) -> np.ndarray:
    """The reference greedy loop (what the public toolkit does): for every step and every
    candidate, slice the (k+1) x (k+1) covariance, factorise it and evaluate all N densities.
    O(d (k^3 + N k^2)) per step. Returns the first ``max_neurons`` (default all) of the ranking.
    """
    from scipy.stats import multivariate_normal

    x, y = check_xy(x, y)
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
            # (the cast: scipy's inferred signature types cov as int, after its default)
            joint = np.stack(
                [
                    fit.log_prior[c]
                    + multivariate_normal.logpdf(
                        x[:, idx], fit.means[c][idx], cast(Any, fit.cov(c, idx))
                    ).reshape(n)
                    for c in (0, 1)
                ]
            )
            s = float(_label_loglik(joint[:, :, None], y)[0])
            if s > best_score:
                best, best_score = cand, s
        selected.append(best)
    return np.array(selected, dtype=np.int64)
