"""M13 of the seed paper: the superposition regime of the residual stream, per layer.

Participation ratio of token-level residuals (effective rank), packing = PR / d_model, and the
interference of the most frequent tokens' mean directions, each with its null (dimensions or token
ids shuffled). Computed on thousands of token-level samples (the public sketch pooled ~20 vectors,
which caps the participation ratio at 20); no SAE is involved.
"""

from __future__ import annotations

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from .activations import unit_rows
from .result import AuditInputs, AuditResult


def participation_ratio(x: Float[Tensor, "n d"]) -> float:
    """``(sum s_i^2)^2 / sum s_i^4`` of the centred samples' singular values (effective rank).

    Bounded by ``min(n - 1, d)``: with too few samples it measures the sample count, not the model.
    """
    x = x.double() - x.double().mean(0)
    s2 = torch.linalg.svdvals(x) ** 2
    return float(s2.sum() ** 2 / (s2**2).sum()) if s2.sum() > 0 else 0.0


def interference(directions: Float[Tensor, "k d"]) -> float:
    """Mean |cos| over distinct pairs of directions (0 for orthogonal, 1 for identical)."""
    u = unit_rows(directions.double())
    c = (u @ u.T).abs()
    k = c.shape[0]
    if k < 2:
        return float("nan")
    return float((c.sum() - c.diagonal().sum()) / (k * (k - 1)))


def classify_regime(packing: float, interf: float, high_interference: float = 0.3) -> str:
    """weak (packing <= 0.8, low interference), transition (0.8 < packing <= 1.2), strong
    (packing > 1.2 or interference above ``high_interference``)."""
    if packing > 1.2 or (np.isfinite(interf) and interf > high_interference):
        return "strong"
    return "weak" if packing <= 0.8 else "transition"


def token_directions(
    acts: Float[Tensor, "n d"], token_ids: Int[Tensor, " n"], k: int
) -> Float[Tensor, "k d"]:
    """Centred mean residual of each of the ``k`` most frequent tokens: the directions the layer
    uses to represent those tokens. (The seed's "pairwise cosine of top principal components"
    is identically 0, principal components being orthogonal.)"""
    center = acts.mean(0)
    ids, counts = token_ids.unique(return_counts=True)
    top = ids[counts.argsort(descending=True)[:k]]
    return torch.stack([acts[token_ids == t].mean(0) - center for t in top])


def diagonal_participation_ratio(x: Float[Tensor, "n d"]) -> float:
    """PR of the samples with every dimension shuffled across tokens independently (in
    expectation): the covariance becomes diagonal, PR = ``(sum var_i)^2 / sum var_i^2``."""
    v = x.double().var(0, unbiased=False)
    return float(v.sum() ** 2 / (v**2).sum()) if v.sum() > 0 else 0.0


def superposition_regime(
    acts_by_layer: dict[str, Float[Tensor, "n d"]],
    token_ids: Int[Tensor, " n"],
    n_directions: int = 32,
    high_interference: float = 0.3,
    min_samples_per_dim: float = 4.0,
    seed: int = 0,
    inputs: AuditInputs | None = None,
) -> AuditResult:
    """M13 per layer: participation ratio PR, packing = PR / d_model, interference, regime.

    Nulls per layer: ``null_packing`` with every dimension shuffled across tokens
    (:func:`diagonal_participation_ratio`), ``null_interference`` with token ids shuffled (the
    "token directions" of random token groups); the headline's null is the mean ``null_packing``.

    Needs at least ``min_samples_per_dim * d_model`` token-level samples (else ``rank_capped``
    is set and the note says so). Diagnostic.

    >>> import torch
    >>> from kit.audits.superposition import superposition_regime
    >>> g = torch.Generator().manual_seed(0)
    >>> acts = {f"blocks.{L}.hook_resid_post": torch.randn(400, 16, generator=g) for L in range(2)}
    >>> token_ids = torch.randint(0, 10, (400,), generator=g)
    >>> r = superposition_regime(acts, token_ids, n_directions=8)
    >>> r.metric, round(r.value, 2)
    ('M13', 0.96)
    """
    per_layer = {}
    capped = False
    shuffled = token_ids[
        torch.randperm(len(token_ids), generator=torch.Generator().manual_seed(seed))
    ]
    for hook, x in acts_by_layer.items():
        n, d = x.shape
        pr = participation_ratio(x)
        inter = interference(token_directions(x, token_ids, n_directions))
        packing = pr / d
        capped |= n < min_samples_per_dim * d
        per_layer[hook] = {
            "participation_ratio": pr,
            "packing_ratio": packing,
            "interference": inter,
            "regime": classify_regime(packing, inter, high_interference),
            "n_samples": n,
            "d_model": d,
            "max_packing": min(n - 1, d) / d,
            "null_packing": diagonal_participation_ratio(x) / d,
            "null_interference": interference(token_directions(x, shuffled, n_directions)),
        }
    regimes = [v["regime"] for v in per_layer.values()]
    max_pack = max(v["max_packing"] for v in per_layer.values())
    agg = max(set(regimes), key=regimes.count) if regimes else None
    mean_pack = float(np.mean([v["packing_ratio"] for v in per_layer.values()]))
    res = AuditResult(
        metric="M13",
        name="Superposition regime",
        value=mean_pack,
        values={
            "per_layer": per_layer,
            "aggregate_regime": agg,
            "mean_packing_ratio": mean_pack,
            "rank_capped": capped,
        },
        pass_condition="diagnostic (regime per layer)",
        passed=True,
        diagnostic=True,
        inputs=inputs or AuditInputs(),
        notes="too few token samples: PR is capped by the sample count" if capped else "",
        by_construction=(
            f"packing = PR / d_model <= min(n - 1, d_model) / d_model = {max_pack:.2f} <= 1.2: "
            "packing can never mark a layer 'strong', only interference can"
            if max_pack <= 1.2
            else ""
        ),
    )
    return res.with_null(
        [v["null_packing"] for v in per_layer.values()],
        "every dimension shuffled across tokens (diagonal covariance), mean over layers",
    )
