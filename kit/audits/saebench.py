"""EX24 of the seed paper: is an SAE benchmark score a stable, discriminating measurement?

SAEBench's k-sparse probe accuracy on real SAE features under reseeds (:func:`probe_reseeds`), its
reseed noise (coefficient of variation) and its discriminability (Cohen's d against a configuration
known to be worse: an untrained copy of the SAE, :func:`random_like`, also the untrained-SAE null of
the other SAE audits). The public sketch's EX24 used no SAE at all.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from .activations import unit_rows
from .result import AuditInputs, AuditResult


def coefficient_of_variation(values) -> float:
    """``std / |mean|`` (population std); NaN when the mean is 0."""
    v = np.asarray(values, float)
    return float(v.std() / abs(v.mean())) if v.mean() != 0 else float("nan")


def sparse_probe_accuracy(
    x: Float[Tensor, "n f"] | np.ndarray,
    y: np.ndarray,
    k: int = 1,
    seed: int = 0,
    train_frac: float = 0.7,
) -> float:
    """SAEBench-style k-sparse probe: pick the ``k`` features with the largest |mean difference|
    between classes on a seeded train split, fit logistic regression on them, test accuracy."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x = np.asarray(x, float)
    y = np.asarray(y)
    tr, te = train_test_split(
        np.arange(len(y)), train_size=train_frac, random_state=seed, stratify=y
    )
    diff = np.abs(x[tr][y[tr] == 1].mean(0) - x[tr][y[tr] == 0].mean(0))
    top = np.argsort(-diff, kind="stable")[:k]
    clf = LogisticRegression(max_iter=1000).fit(x[tr][:, top], y[tr])
    return float(clf.score(x[te][:, top], y[te]))


def random_like(sae, seed: int = 0):
    """An untrained copy of ``sae``: same class and shape, seeded random unit-norm directions,
    zero biases (the "known worse" configuration of EX24's discriminability test)."""
    g = torch.Generator().manual_seed(seed)
    out = copy.deepcopy(sae)
    with torch.no_grad():
        w = torch.randn(out.W_dec.shape, generator=g)
        w = unit_rows(w).to(out.W_dec.dtype).to(out.W_dec.device)
        out.W_dec.copy_(w)
        out.W_enc.copy_(w.T)
        for name, p in out.named_parameters():
            if name.startswith("b_"):
                p.zero_()
    return out


def saebench_audit(
    metric_runs: list[float],
    control_runs: list[float],
    max_cv: float = 0.05,
    min_d: float = 0.8,
    metric_name: str = "metric",
    inputs: AuditInputs | None = None,
) -> AuditResult:
    """EX24: reseed noise ``CV = std/|mean|`` of ``metric_runs`` and discriminability as Cohen's d
    between ``metric_runs`` and ``control_runs`` (a configuration known to be worse).
    Pass: CV < 0.05 and d > 0.8.

    >>> from kit.audits.saebench import saebench_audit
    >>> r = saebench_audit([0.80, 0.81, 0.79], [0.50, 0.52, 0.48], metric_name="probe accuracy")
    >>> r.metric, round(r.value, 4), r.passed
    ('EX24', 0.0102, True)
    """
    from .psychophysics import cohens_d

    cv = coefficient_of_variation(metric_runs)
    d = cohens_d(np.asarray(metric_runs), np.asarray(control_runs))
    return AuditResult(
        metric="EX24",
        name="SAEBench audit",
        value=cv,
        values={
            "cv": cv,
            "discriminability_d": d,
            "metric": metric_name,
            "runs": metric_runs,
            "control_runs": control_runs,
            "mean": float(np.mean(metric_runs)),
            "control_mean": float(np.mean(control_runs)),
        },
        pass_condition=f"CV < {max_cv} and Cohen's d > {min_d}",
        passed=bool(cv < max_cv and d > min_d),
        inputs=inputs or AuditInputs(),
        # the control against itself has d = 0, so it passes only if min_d < 0
    ).with_null(
        control_runs,
        "the control configuration (untrained copy), same reseeds",
        of="mean",
        passed=bool(coefficient_of_variation(control_runs) < max_cv and 0.0 > min_d),
    )


def probe_reseeds(
    feats: Float[Tensor, "n f"],
    labels: np.ndarray,
    n_reseeds: int,
    k: int = 1,
    subsample: float = 0.8,
    seed: int = 0,
) -> list[float]:
    """Sparse-probe accuracy under ``n_reseeds`` seeds: each draws a stratified ``subsample`` of
    the prompts and its own train/test split."""
    labels = np.asarray(labels)
    out = []
    for r in range(n_reseeds):
        rng = np.random.default_rng(seed + r)
        idx = np.concatenate(
            [
                rng.choice(
                    np.flatnonzero(labels == c), int(subsample * (labels == c).sum()), replace=False
                )
                for c in np.unique(labels)
            ]
        )
        out.append(sparse_probe_accuracy(feats[idx], labels[idx], k=k, seed=seed + r))
    return out
