"""Key neurons (seed 000): the threshold functions of A.4 turned into key-neuron masks.

The thresholds (Eqs. 10-12: ``topk``, ``global_topk``, ``top_pct``, ``topscore``) over the neuron
scores of :mod:`kit.mui.scores`: per-token key units of one layer (:func:`layer_key_mask`) or of all
layers (:func:`token_key_masks`), and their union over samples and response positions
(:func:`key_neuron_mask`); the paper's per-layer k (:func:`default_k`) and response-level scores
(Eq. 15, :func:`response_scores`). MUI of a dataset, streamed layer by layer, is
:mod:`kit.mui.metric`'s.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from kit.core.checks import require_finite
from kit.core.registry import Registry

MUI_THRESHOLDS = Registry("a threshold function")
"""The threshold functions of A.4 (Eqs. 10-12), by name: ``fn(scores, k, frac)`` -> key-unit
mask. ``per_layer=True``: ``scores`` is ``[*tokens, width]`` of one layer; ``False``: ``[tokens,
layer, width]`` ranked across layers (see :func:`token_key_masks`). Every MUI function, and the
configs' ``threshold`` fields, accept exactly these names."""

THRESHOLDS = MUI_THRESHOLDS
"""The names of :data:`MUI_THRESHOLDS` (the table itself: ``in``, iteration and ``len`` read it)."""


def _check_threshold(threshold: str) -> None:
    MUI_THRESHOLDS.check(threshold, "threshold")


def default_k(d_mlp: int) -> int:
    """The paper's per-layer top-k: the top one-thousandth of a layer (Sec. 3.8), at least 1."""
    return max(1, round(d_mlp / 1000))


def _k_for(threshold: str, width: int, n_layers: int, k: int | None, frac: float | None) -> int:
    if threshold == "topk":
        kk = default_k(width) if k is None else int(k)
        limit = width
    elif threshold == "global_topk":
        kk = default_k(width) * n_layers if k is None else int(k)
        limit = width * n_layers
    elif threshold == "top_pct":
        f = 0.001 if frac is None else float(frac)
        if not 0 < f <= 1:
            raise ValueError(f"frac={frac} for threshold='top_pct' must be in (0, 1]")
        kk = max(1, round(f * width))
        limit = width
    else:
        raise AssertionError(threshold)
    if not 1 <= kk <= limit:
        raise ValueError(f"k={kk} for threshold={threshold!r} must be in [1, {limit}]")
    return kk


def _topk_mask(x: Float[Tensor, "... n"], k: int) -> Bool[Tensor, "... n"]:
    idx = x.topk(k, dim=-1).indices
    return torch.zeros_like(x, dtype=torch.bool).scatter_(-1, idx, True)


@MUI_THRESHOLDS.register(
    "topk",
    "the k largest scores per token and layer (Eq. 10; k = max(1, round(width/1000)))",
    per_layer=True,
)
def topk_key_mask(
    scores: Float[Tensor, "*tokens width"], k: int | None = None, frac: float | None = None
) -> Bool[Tensor, "*tokens width"]:
    """``topk`` (Eq. 10): each token's ``k`` largest scores of the layer (default
    :func:`default_k`)."""
    return _topk_mask(scores, _k_for("topk", scores.shape[-1], 1, k, frac))


@MUI_THRESHOLDS.register(
    "global_topk",
    "the k largest scores per token over all layers (Eq. 11; k = the per-layer k x n_layers)",
    per_layer=False,
)
def global_topk_key_mask(
    scores: Float[Tensor, "tokens layer width"], k: int | None = None, frac: float | None = None
) -> Bool[Tensor, "tokens layer width"]:
    """``global_topk`` (Eq. 11): each token's ``k`` largest scores over all ``layer x width``
    units (default the per-layer default x n_layers)."""
    t, n_layers, width = require_finite("scores", scores).shape
    kk = _k_for("global_topk", width, n_layers, k, frac)
    return _topk_mask(scores.reshape(t, n_layers * width), kk).reshape(t, n_layers, width)


@MUI_THRESHOLDS.register(
    "top_pct",
    "the largest round(frac x width) scores per token and layer (frac 0.001)",
    per_layer=True,
)
def top_pct_key_mask(
    scores: Float[Tensor, "*tokens width"], k: int | None = None, frac: float | None = None
) -> Bool[Tensor, "*tokens width"]:
    """``top_pct``: each token's largest ``round(frac * width)`` scores (default frac 0.001)."""
    return _topk_mask(scores, _k_for("top_pct", scores.shape[-1], 1, k, frac))


@MUI_THRESHOLDS.register(
    "topscore",
    "scores >= frac x the token's layer max, and > 0 (Eq. 12, Dai et al.; frac 0.2)",
    per_layer=True,
)
def topscore_key_mask(
    scores: Float[Tensor, "*tokens width"], k: int | None = None, frac: float | None = None
) -> Bool[Tensor, "*tokens width"]:
    """``topscore`` (Eq. 12, Dai et al.): scores ``>= frac * (the token's max in this layer)`` and
    > 0 (default frac 0.2)."""
    f = 0.2 if frac is None else float(frac)
    if not 0 < f <= 1:
        raise ValueError(f"frac={frac} for threshold='topscore' must be in (0, 1]")
    top = scores.max(dim=-1, keepdim=True).values
    return (scores >= f * top) & (scores > 0)


def layer_key_mask(
    scores: Float[Tensor, "*tokens width"],
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
) -> Bool[Tensor, "*tokens width"]:
    """Per-token key units of ONE layer (thresholds that work layer by layer).

    ``topk``: the ``k`` largest scores per token (Eq. 10; default ``max(1, round(width/1000))``);
    ``top_pct``: the largest ``round(frac*width)`` (default frac 0.001); ``topscore``: scores
    ``>= frac * (the token's max in this layer)`` and > 0 (Eq. 12, Dai et al.; default frac 0.2).

    >>> import torch
    >>> s = torch.tensor([[0.1, 0.9, 0.5, -1.0]])          # one token, a layer of 4 neurons
    >>> layer_key_mask(s, "topk", k=2).int().tolist()
    [[0, 1, 1, 0]]
    >>> layer_key_mask(s, "topscore", frac=0.6).int().tolist()   # >= 0.54
    [[0, 1, 0, 0]]
    """
    _check_threshold(threshold)
    require_finite("scores", scores)  # topk ranks NaN above every number
    variant = MUI_THRESHOLDS[threshold]
    if not variant.extra.get("per_layer"):
        raise ValueError(
            f"threshold={threshold!r} ranks across layers: use key_neuron_mask on [.., layer, "
            "d_mlp] scores"
        )
    return variant.fn(scores, k, frac)


def token_key_masks(
    scores: Float[Tensor, "tokens layer width"],
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
) -> Bool[Tensor, "tokens layer width"]:
    """Per-token key units over all layers; ``global_topk`` ranks all ``layer*width`` units of a
    token together (Eq. 11; default k = per-layer default x n_layers)."""
    _check_threshold(threshold)
    variant = MUI_THRESHOLDS[threshold]
    if variant.extra.get("per_layer"):
        return layer_key_mask(scores, threshold, k, frac)
    return variant.fn(scores, k, frac)


def response_scores(
    scores: Float[Tensor, "batch pos layer d_mlp"], response_mask: Bool[Tensor, "batch pos"]
) -> Float[Tensor, "batch 1 layer d_mlp"]:
    """Response-level scores (Eq. 15): each sample's scores summed over its response positions."""
    m = response_mask.to(scores.dtype)[..., None, None]
    return (scores * m).sum(dim=1, keepdim=True)


def key_neuron_mask(
    scores: Float[Tensor, "*batch pos layer d_mlp"],
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    response_mask: Bool[Tensor, "*batch pos"] | None = None,
) -> Bool[Tensor, "layer d_mlp"]:
    """Key neurons: the union over samples and response positions of the per-token key sets.

    ``scores`` as returned by :func:`neuron_scores` (``[batch, pos, layer, d_mlp]``, or without
    the batch axis); ``response_mask`` over the SAME positions (``True`` where ``tokens[p+1]``
    is a response token — ``token_mask[:, 1:]``); ``None`` means every position counts. For the
    response-level ``*_sum`` variants pass :func:`response_scores` (its one position is the
    whole response). Returns ``[layer, d_mlp]`` booleans.
    """
    if scores.ndim == 3:
        scores = scores[None]
        response_mask = None if response_mask is None else response_mask[None]
    if scores.ndim != 4:
        raise ValueError(
            f"scores must be [batch, pos, layer, d_mlp], got shape {tuple(scores.shape)}"
        )
    if response_mask is None:
        response_mask = torch.ones(scores.shape[:2], dtype=torch.bool)
    if tuple(response_mask.shape) != tuple(scores.shape[:2]):
        raise ValueError(
            f"response_mask shape {tuple(response_mask.shape)} must equal scores' [batch, pos] "
            f"{tuple(scores.shape[:2])} (score positions: pass token_mask[:, 1:])"
        )
    picked = scores[response_mask.bool().to(scores.device)]  # [tokens, layer, d_mlp]
    if picked.shape[0] == 0:
        return torch.zeros(scores.shape[2:], dtype=torch.bool)
    return token_key_masks(picked, threshold, k, frac).any(dim=0).cpu()
