"""Model Utilization Index (MUI), the Utility Law and its ranking tool PUR (seed 000).

The pieces, in the paper's order:

- :func:`neuron_scores` / :func:`iter_neuron_scores` — each MLP neuron's contribution to
  predicting the *next* token (Eq. 3 ``score``, Eq. 13 ``activate``, Eq. 14 ``gradient``);
- :func:`key_neuron_mask` — the threshold functions (Eqs. 10-12 of A.4: ``topk``,
  ``global_topk``, ``top_pct``, ``topscore``) turned into boolean key-neuron masks;
- :func:`utilization` / :func:`utilization_for_items` — MUI of a dataset (Eq. 4/5), streamed
  layer by layer so no ``batch x pos x layer x d_mlp`` tensor is ever kept;
  :func:`sae_utilization` — the SAE-feature variant (Eq. 6/9);
- :func:`fit_law` (MUI ~ log performance, the paper's form; the inverse as an option), :func:`pur` (Eq. 7), :func:`direction`
  (the four corollary directions) and :func:`rank_agreement` (Table 1).

Alignment convention (the public code gets this wrong): position ``p`` of a score tensor is the
residual position whose output predicts ``tokens[:, p + 1]``; a score tensor therefore has
``seq_len - 1`` positions, and a response mask over tokens becomes ``response_mask[:, 1:]``
over score positions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, SupportsFloat

import numpy as np
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor
from kit.core.checks import require_finite
from kit.models import tl

SCORES = ("score", "activate", "gradient", "score_sum", "activate_sum", "gradient_sum")
"""Contribution scores: token level (Eqs. 3, 13, 14) and response level (``*_sum``, Eq. 15)."""
TOKEN_SCORES = ("score", "activate", "gradient")
THRESHOLDS = ("topk", "global_topk", "top_pct", "topscore")
"""Threshold functions of A.4 (Eqs. 10-12)."""
DIRECTIONS = ("evolving", "accumulating", "coarsening", "collapsing", "flat")
Numbers = float | int | np.ndarray | Sequence[float | int]
"""A number or a 1-d collection of numbers (list, numpy array; pass pandas columns as ``.to_numpy()``)."""
IG_STEPS = 10
"""Riemann steps of the integrated-gradients score (B.6.1: "we deploy m = 10")."""
SAE_REFERENCE_WIDTH = 131072
"""Width (128K) at which the paper keeps the top 50 SAE features per layer and token (A.3)."""


# --------------------------------------------------------------------------------------------
# validation helpers


def _check_score(score: str, allowed: Sequence[str] = SCORES) -> None:
    if score not in allowed:
        raise ValueError(f"score={score!r} is not a contribution score; allowed values: {', '.join(allowed)}")


def _check_threshold(threshold: str) -> None:
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold={threshold!r} is not a threshold function; allowed values: {', '.join(THRESHOLDS)}")


def _check_tokens(tokens: Tensor) -> Tensor:
    if not isinstance(tokens, Tensor) or tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens must be an integer tensor [batch, seq], got {type(tokens).__name__} "
                         f"{getattr(tokens, 'dtype', '')}")
    if tokens.ndim == 1:
        tokens = tokens[None]
    if tokens.ndim != 2 or tokens.shape[1] < 2:
        raise ValueError(f"tokens must have shape [batch, seq] with seq >= 2 (one token to predict), "
                         f"got {tuple(tokens.shape)}")
    return tokens.long()


def default_k(d_mlp: int) -> int:
    """The paper's per-layer top-k: the top one-thousandth of a layer (Sec. 3.8), at least 1."""
    return max(1, round(d_mlp / 1000))


# --------------------------------------------------------------------------------------------
# neuron contribution scores


class LayerScores(NamedTuple):
    """One streamed piece of :func:`iter_neuron_scores`."""

    rows: slice
    """Which rows (samples) of the input ``tokens`` these scores belong to."""
    layer: int
    """Layer index ``L`` (the site is ``blocks.{L}.mlp.hook_post``)."""
    scores: Float[Tensor, "batch pos d_mlp"]
    """``scores[b, p, i]``: neuron ``i``'s contribution to predicting ``tokens[b, p + 1]``."""


def _w_out(model, layer: int) -> Float[Tensor, "d_mlp d_model"]:
    return tl.mlp_out(model, layer)


def _unembed_columns(model, targets: Int[Tensor, "batch pos"]) -> tuple[Float[Tensor, "d_model n_uniq"], Int[Tensor, "batch pos"]]:
    """The unembedding columns of the distinct target tokens (never the d_mlp x vocab product)."""
    uniq, inverse = torch.unique(targets, return_inverse=True)
    return tl.unembed(model)[:, uniq], inverse


def _score_from_acts(model, layer: int, acts: Float[Tensor, "batch seq d_mlp"], score: str,
                     cols: Tensor | None, inverse: Tensor | None) -> Float[Tensor, "batch pos d_mlp"]:
    """Eq. 3 / Eq. 13 for one layer; drops the last position (it predicts nothing)."""
    a = acts[:, :-1].float()
    if score == "activate":
        return a
    # (W_out[L] @ W_U[:, y]) for the distinct targets y: [d_mlp, n_uniq] — as cheap as one
    # W_out matmul over the distinct tokens, instead of a d_mlp x vocab projection.
    W_out = _w_out(model, layer)
    proj = (W_out @ cols.to(W_out.dtype)).float()  # [d_mlp, n_uniq]
    return a * proj.T[inverse]  # [batch, pos, d_mlp]


IG_OUTPUTS = ("logit", "prob")
"""What integrated gradients attributes: the target's logit (our default) or its probability
(Dai et al. 2022, the paper's ref. [11]). MUI-Eval's ``get_neuron_grad.py`` uses a third: the
cross-entropy loss of the whole response, all layers and positions interpolated at once, |attribution|."""
IG_MODES = ("per_token", "shared")
"""``per_token`` (Eq. 14): for each scored position p only ``a(p)`` is interpolated and the gradient is
that of p's own target; ``shared``: every scored position of a row interpolated at once and the
gradient of the sum of the row's own targets (one backward per step; a neuron at p is also credited
with its effect through attention on later targets of the same row)."""


def _check_ig(ig_output: str, ig_mode: str) -> None:
    if ig_output not in IG_OUTPUTS:
        raise ValueError(f"ig_output={ig_output!r}; allowed values: {', '.join(IG_OUTPUTS)}")
    if ig_mode not in IG_MODES:
        raise ValueError(f"ig_mode={ig_mode!r}; allowed values: {', '.join(IG_MODES)}")


def _integrated_gradients(model, tokens: Int[Tensor, "batch seq"], layer: int,
                          positions: Bool[Tensor, "batch pos"] | None = None, steps: int = IG_STEPS,
                          ig_output: str = "logit", ig_mode: str = "per_token") -> Float[Tensor, "batch pos d_mlp"]:
    """Eq. 14: ``a_i(p) * mean_{k=1..m} dF_p / da_i(p) (k/m * a(p))``, zero baseline, m Riemann steps,
    where ``F_p`` is the logit (or probability, ``ig_output``) of ``tokens[:, p+1]`` at position p.

    Only the positions in ``positions`` (score positions, ``[batch, seq-1]``; None: all) are scored,
    the rest are 0. Each row's gradient is that of its OWN targets at its own scored positions, so a
    row's scores do not depend on the other rows of the batch or on right padding (causal attention:
    position p never sees later positions). ``ig_mode`` (:data:`IG_MODES`): ``per_token`` runs one
    interpolation per scored position (rows in parallel, the k steps as one batch); ``shared``
    interpolates all of a row's scored positions at once. Starts at ``layer`` from the cached
    residual stream.
    """
    _check_ig(ig_output, ig_mode)
    B, S = tokens.shape
    targets = tokens[:, 1:]
    post, pre = f"blocks.{layer}.mlp.hook_post", f"blocks.{layer}.hook_resid_pre"
    with torch.no_grad():
        _, cache = tl.run_with_cache(model, tokens, [post, pre], stop_at_layer=layer + 1)
    a, resid = cache[post], cache[pre]  # [B, S, d_mlp], [B, S, d_model]
    positions = torch.ones(B, S - 1, dtype=torch.bool) if positions is None else positions.bool().cpu()
    if tuple(positions.shape) != (B, S - 1):
        raise ValueError(f"positions shape {tuple(positions.shape)} must be [batch, seq-1] = {(B, S - 1)}")
    out = torch.zeros(B, S - 1, a.shape[-1])
    alphas = torch.arange(1, steps + 1, device=a.device, dtype=a.dtype) / steps

    def target_value(logits: Tensor, rr: Tensor, pp: Tensor, yy: Tensor) -> Tensor:
        sel = logits[rr, pp]  # [n, d_vocab]
        if ig_output == "prob":
            sel = sel.float().softmax(-1)
        return sel.gather(-1, yy[:, None]).sum()

    if ig_mode == "shared":
        rows = torch.nonzero(positions.any(dim=1)).flatten()
        if len(rows) == 0:
            return out
        R = len(rows)
        m = positions[rows].to(a.device)  # [R, S-1]
        scale = torch.ones(steps, R, S, 1, device=a.device, dtype=a.dtype)
        scale[:, :, :-1] = torch.where(m[None, :, :, None], alphas[:, None, None, None], 1.0)
        base = a[rows]
        scaled = (base[None] * scale).reshape(steps * R, S, -1).detach().requires_grad_(True)
        rr, pp = torch.nonzero(m.repeat(steps, 1), as_tuple=True)
        yy = targets[rows].repeat(steps, 1)[rr, pp]
        with torch.enable_grad(), tl.hooks(model, [(post, lambda act, hook: scaled)]):
            logits = tl.forward(model, resid[rows].repeat(steps, 1, 1), start_at_layer=layer)
            (grad,) = torch.autograd.grad(target_value(logits, rr, pp, yy), scaled)
        mean_grad = grad.float().reshape(steps, R, S, -1).mean(dim=0)[:, :-1]
        out[rows.cpu()] = ((base[:, :-1].float() * mean_grad) * m[..., None]).cpu()
        return out

    # per_token: the j-th scored position of every row that has one, rows in parallel
    per_row = [torch.nonzero(positions[b]).flatten().tolist() for b in range(B)]
    for j in range(max((len(p) for p in per_row), default=0)):
        rows = torch.tensor([b for b in range(B) if len(per_row[b]) > j], device=a.device)
        p = torch.tensor([per_row[b][j] for b in rows.tolist()], device=a.device)
        R, width = len(rows), int(p.max()) + 1  # later positions cannot affect position p's logits
        a_sel = a[rows, p]  # [R, d_mlp]
        x = (a_sel.repeat(steps, 1) * alphas.repeat_interleave(R)[:, None]).detach().requires_grad_(True)
        rr = torch.arange(steps * R, device=a.device)
        pp = p.repeat(steps)

        def replace(act, hook, rr=rr, pp=pp, x=x):
            act = act.clone()
            act[rr, pp] = x  # only position p of each row is interpolated; the rest keep a
            return act

        with torch.enable_grad(), tl.hooks(model, [(post, replace)]):
            logits = tl.forward(model, resid[rows, :width].repeat(steps, 1, 1), start_at_layer=layer)
            yy = targets[rows, p].repeat(steps)
            (grad,) = torch.autograd.grad(target_value(logits, rr, pp, yy), x)
        mean_grad = grad.float().reshape(steps, R, -1).mean(dim=0)
        out[rows.cpu(), p.cpu()] = (a_sel.float() * mean_grad).cpu()
    return out


def iter_neuron_scores(model, tokens: Int[Tensor, "batch seq"], score: str = "score",
                       batch_size: int | None = None, positions: Bool[Tensor, "batch pos"] | None = None,
                       ig_output: str = "logit", ig_mode: str = "per_token") -> Iterator[LayerScores]:
    """Stream neuron contribution scores one (row chunk, layer) at a time.

    Inputs: a ``HookedTransformer``; ``tokens`` right-padded ``[batch, seq]``; ``score`` in
    ``score`` (Eq. 3: ``a_i^l(p) * W_out^l[i] . W_U[:, tokens[p+1]]``, ``a`` the input of
    ``W_out`` — ``act(gate) * up`` for gated MLPs, which is what ``blocks.{L}.mlp.hook_post``
    holds), ``activate`` (Eq. 13: ``a_i^l(p)``) or ``gradient`` (Eq. 14, integrated gradients
    of the target's ``ig_output`` in ``ig_mode``, see :func:`_integrated_gradients`; it scores only
    ``positions`` — score positions ``[batch, seq-1]``, None: all — and 0 elsewhere; the other
    scores ignore ``positions``). Yields :class:`LayerScores` with ``scores`` of shape
    ``[rows, seq-1, d_mlp]``; only one layer of one chunk is alive at a time. Every score of a row
    depends on that row's tokens only (right padding and the other rows change nothing).
    """
    _check_score(score, TOKEN_SCORES)
    _check_ig(ig_output, ig_mode)
    tokens = _check_tokens(tokens)
    n = tokens.shape[0]
    step = n if batch_size is None else int(batch_size)
    if step < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    tokens = tokens.to(model.cfg.device)
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        chunk = tokens[rows]
        if score == "gradient":
            pos = None if positions is None else positions[rows]
            for L in range(model.cfg.n_layers):
                yield LayerScores(rows, L, require_finite(
                    f"gradient scores at blocks.{L}.mlp.hook_post",
                    _integrated_gradients(model, chunk, L, pos, ig_output=ig_output, ig_mode=ig_mode)))
            continue
        cols = inverse = None
        if score == "score":
            cols, inverse = _unembed_columns(model, chunk[:, 1:])
        for L, acts in tl.iter_mlp_post(model, chunk):
            # a NaN would be ranked the top key neuron by topk: stop here, naming the layer
            yield LayerScores(rows, L, require_finite(f"{score} scores at blocks.{L}.mlp.hook_post",
                                                      _score_from_acts(model, L, acts, score, cols, inverse)))


def neuron_scores(model, tokens: Int[Tensor, "batch seq"], score: str = "score",
                  batch_size: int | None = None, **kwargs: Any) -> Float[Tensor, "batch pos layer d_mlp"]:
    """All neuron contribution scores of ``tokens`` (see :func:`iter_neuron_scores`).

    Returns ``[batch, seq-1, n_layers, d_mlp]`` where ``[b, p]`` is each neuron's contribution
    to predicting ``tokens[b, p+1]`` from position ``p`` (``kwargs``: ``positions``, ``ig_output``,
    ``ig_mode`` of :func:`iter_neuron_scores`). Keeps the whole tensor: for long
    responses or big models use :func:`iter_neuron_scores` or :func:`utilization` instead.
    """
    tokens = _check_tokens(tokens)
    cfg = model.cfg
    out = torch.zeros(tokens.shape[0], tokens.shape[1] - 1, cfg.n_layers, cfg.d_mlp)
    for piece in iter_neuron_scores(model, tokens, score=score, batch_size=batch_size, **kwargs):
        out[piece.rows, :, piece.layer] = piece.scores.cpu()
    return out


# --------------------------------------------------------------------------------------------
# thresholds -> key-neuron masks


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


def layer_key_mask(scores: Float[Tensor, "*tokens width"], threshold: str = "topk", k: int | None = None,
                   frac: float | None = None) -> Bool[Tensor, "*tokens width"]:
    """Per-token key units of ONE layer (thresholds that work layer by layer).

    ``topk``: the ``k`` largest scores per token (Eq. 10; default ``max(1, round(width/1000))``);
    ``top_pct``: the largest ``round(frac*width)`` (default frac 0.001); ``topscore``: scores
    ``>= frac * (the token's max in this layer)`` and > 0 (Eq. 12, Dai et al.; default frac 0.2).
    """
    _check_threshold(threshold)
    require_finite("scores", scores)  # topk ranks NaN above every number
    if threshold == "global_topk":
        raise ValueError("threshold='global_topk' ranks across layers: use key_neuron_mask on [.., layer, d_mlp] scores")
    width = scores.shape[-1]
    if threshold == "topscore":
        f = 0.2 if frac is None else float(frac)
        if not 0 < f <= 1:
            raise ValueError(f"frac={frac} for threshold='topscore' must be in (0, 1]")
        top = scores.max(dim=-1, keepdim=True).values
        return (scores >= f * top) & (scores > 0)
    return _topk_mask(scores, _k_for(threshold, width, 1, k, frac))


def token_key_masks(scores: Float[Tensor, "tokens layer width"], threshold: str = "topk", k: int | None = None,
                    frac: float | None = None) -> Bool[Tensor, "tokens layer width"]:
    """Per-token key units over all layers; ``global_topk`` ranks all ``layer*width`` units of a
    token together (Eq. 11; default k = per-layer default x n_layers)."""
    _check_threshold(threshold)
    if threshold != "global_topk":
        return layer_key_mask(scores, threshold, k, frac)
    t, n_layers, width = require_finite("scores", scores).shape
    kk = _k_for("global_topk", width, n_layers, k, frac)
    return _topk_mask(scores.reshape(t, n_layers * width), kk).reshape(t, n_layers, width)


def response_scores(scores: Float[Tensor, "batch pos layer d_mlp"],
                    response_mask: Bool[Tensor, "batch pos"]) -> Float[Tensor, "batch 1 layer d_mlp"]:
    """Response-level scores (Eq. 15): each sample's scores summed over its response positions."""
    m = response_mask.to(scores.dtype)[..., None, None]
    return (scores * m).sum(dim=1, keepdim=True)


def key_neuron_mask(scores: Float[Tensor, "*batch pos layer d_mlp"], threshold: str = "topk", k: int | None = None,
                    frac: float | None = None,
                    response_mask: Bool[Tensor, "*batch pos"] | None = None) -> Bool[Tensor, "layer d_mlp"]:
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
        raise ValueError(f"scores must be [batch, pos, layer, d_mlp], got shape {tuple(scores.shape)}")
    if response_mask is None:
        response_mask = torch.ones(scores.shape[:2], dtype=torch.bool)
    if tuple(response_mask.shape) != tuple(scores.shape[:2]):
        raise ValueError(f"response_mask shape {tuple(response_mask.shape)} must equal scores' [batch, pos] "
                         f"{tuple(scores.shape[:2])} (score positions: pass token_mask[:, 1:])")
    picked = scores[response_mask.bool().to(scores.device)]  # [tokens, layer, d_mlp]
    if picked.shape[0] == 0:
        return torch.zeros(scores.shape[2:], dtype=torch.bool)
    return token_key_masks(picked, threshold, k, frac).any(dim=0).cpu()


def mui_of_mask(mask: Bool[Tensor, "layer width"]) -> float:
    """MUI in percent: key units / all units (Eq. 4: ``|N_key| / (N * n_layers)`` x 100)."""
    return 100.0 * float(mask.sum()) / mask.numel()


# --------------------------------------------------------------------------------------------
# MUI of a dataset


@dataclass
class MUIResult:
    """MUI of a dataset and the key-unit sets behind it."""

    mui: float
    """MUI in percent: |union of key units over samples and response tokens| / (layers*width) x 100."""
    mask: Bool[Tensor, "layer width"]
    """The union of key units."""
    n_samples: int
    """How many samples (rows) went in."""
    per_sample: list[float] | None = None
    """Each sample's own MUI (percent), if asked for."""
    sample_masks: Bool[Tensor, "sample layer width"] | None = field(default=None, repr=False)
    """Each sample's key units, if asked for (lets growth curves take unions of subsets)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.mui <= 100.0:
            raise ValueError(f"mui={self.mui} must be a percentage in [0, 100]")


def _score_positions(response_mask: Tensor, tokens: Tensor) -> Bool[Tensor, "batch pos"]:
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape "
                         f"{tuple(tokens.shape)} (True at response tokens)")
    if bool(response_mask[:, 0].any()):
        raise ValueError("response_mask[:, 0] is True: the first token (BOS/prompt) cannot be a response "
                         "token, nothing predicts it")
    return response_mask[:, 1:].bool()


def utilization(model, tokens: Int[Tensor, "batch seq"], response_mask: Bool[Tensor, "batch seq"],
                score: str = "score", threshold: str = "topk", k: int | None = None, frac: float | None = None,
                batch_size: int = 16, per_sample: bool = False, progress: bool = False,
                variant: str = "paper", n_gpus: int = 1, ig_output: str = "logit",
                ig_mode: str = "per_token", max_batch_tokens: int | None = None) -> MUIResult:
    """MUI of a dataset (Eq. 5): key neurons of every response token of every sample, united.

    Inputs: ``tokens`` right-padded prompt+response ``[batch, seq]``; ``response_mask`` over the
    same tokens, ``True`` at response tokens (the positions *predicting* them are scored).
    ``score`` in :data:`SCORES`, ``threshold`` in :data:`THRESHOLDS`. Streams layer by layer:
    per-layer thresholds never see more than one layer; ``global_topk`` keeps each token's
    per-layer top-k candidates (a token's global top-k lies within them) and ranks at the end.
    ``per_sample`` also returns each sample's MUI and mask. ``variant`` (:data:`VARIANTS`):
    ``paper`` (the definitions above) or ``public_code`` (MUI-Eval's choices, see
    :func:`public_code_utilization`; ``score``/``threshold``/``frac`` must stay at their defaults there,
    ``k`` and ``n_gpus`` go to it). ``ig_output``/``ig_mode``: see :func:`_integrated_gradients`.
    ``max_batch_tokens``: batch by a token budget instead of ``batch_size`` rows (see
    :func:`token_budget_chunks`; the same key neurons, since no row's scores depend on its batch).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}; allowed values: {', '.join(VARIANTS)}")
    if max_batch_tokens is not None:
        return budgeted(utilization, model, tokens, response_mask, max_batch_tokens, per_sample=per_sample,
                        score=score, threshold=threshold, k=k, frac=frac, variant=variant, n_gpus=n_gpus,
                        ig_output=ig_output, ig_mode=ig_mode)
    if variant == "public_code":
        if (score, threshold, frac) != ("score", "topk", None):
            raise ValueError(f"variant='public_code' reproduces MUI-Eval's score/topk only, got score={score!r}, "
                             f"threshold={threshold!r}, frac={frac!r}")
        return public_code_utilization(model, tokens, response_mask, k=k, n_gpus=n_gpus, batch_size=batch_size,
                                       per_sample=per_sample)
    _check_score(score)
    _check_threshold(threshold)
    _check_ig(ig_output, ig_mode)
    tokens = _check_tokens(tokens)
    pos_mask = _score_positions(response_mask.cpu(), tokens.cpu())
    base, _, level = score.partition("_")
    n_layers, d_mlp = model.cfg.n_layers, model.cfg.d_mlp
    union = torch.zeros(n_layers, d_mlp, dtype=torch.bool)
    sample_masks = torch.zeros(tokens.shape[0], n_layers, d_mlp, dtype=torch.bool) if per_sample else None
    kg = _k_for("global_topk", d_mlp, n_layers, k, frac) if threshold == "global_topk" else 0
    cand: dict[int, tuple[Tensor, Tensor]] = {}  # layer -> (values, indices) for global_topk

    device = torch.device(model.cfg.device)
    union = union.to(device)
    pos_mask = pos_mask.to(device)
    pieces = iter_neuron_scores(model, tokens, score=base, batch_size=batch_size, positions=pos_mask.cpu(),
                                ig_output=ig_output, ig_mode=ig_mode)
    if progress:
        from tqdm.auto import tqdm

        pieces = tqdm(pieces, total=n_layers * math.ceil(tokens.shape[0] / batch_size), desc=f"MUI {score}")
    for piece in pieces:
        s = piece.scores.float()  # [rows, pos, d_mlp], on the model's device
        m = pos_mask[piece.rows].to(s.device)
        if level == "sum":
            s = (s * m[..., None]).sum(dim=1, keepdim=True)
            m = m.any(dim=1, keepdim=True)
        if threshold == "global_topk":
            # a token's global top-k lies within its per-layer top-k: keep only those candidates
            top = s.topk(min(kg, d_mlp), dim=-1)
            cand[piece.layer] = (top.values, top.indices)
            if piece.layer < n_layers - 1:
                continue
            vals = torch.stack([cand[L][0].to(s.device) for L in range(n_layers)], dim=2)  # [rows, pos, L, kc]
            idxs = torch.stack([cand[L][1].to(s.device) for L in range(n_layers)], dim=2)
            kc = vals.shape[-1]
            flat = vals.reshape(*vals.shape[:2], n_layers * kc).topk(kg, dim=-1).indices
            neuron = idxs.reshape(*idxs.shape[:2], n_layers * kc).gather(-1, flat)
            token_masks = torch.zeros(*vals.shape[:2], n_layers * d_mlp, dtype=torch.bool, device=s.device)
            token_masks.scatter_(-1, (flat // kc) * d_mlp + neuron, True)
            token_masks = token_masks.reshape(*vals.shape[:2], n_layers, d_mlp) & m[..., None, None]
            rows_mask = token_masks.any(dim=1)  # [rows, L, d_mlp]
            union |= rows_mask.any(dim=0).to(union.device)
            if sample_masks is not None:
                sample_masks[piece.rows] |= rows_mask.cpu()
            cand.clear()
            continue
        token_masks = layer_key_mask(s, threshold, k, frac) & m[..., None]  # [rows, pos, d_mlp]
        rows_mask = token_masks.any(dim=1)  # [rows, d_mlp]
        union[piece.layer] |= rows_mask.any(dim=0).to(union.device)  # layers may sit on several devices
        if sample_masks is not None:
            sample_masks[piece.rows, piece.layer] |= rows_mask.cpu()
    union = union.cpu()
    return MUIResult(
        mui=mui_of_mask(union), mask=union, n_samples=int(tokens.shape[0]),
        per_sample=[mui_of_mask(sm) for sm in sample_masks] if sample_masks is not None else None,
        sample_masks=sample_masks,
    )


def token_budget_chunks(tokens: Int[Tensor, "batch seq"], response_mask: Bool[Tensor, "batch seq"],
                        max_batch_tokens: int) -> Iterator[tuple[Int[Tensor, "rows"], Int[Tensor, "rows width"],
                                                                 Bool[Tensor, "rows width"]]]:
    """Rows of right-padded ``tokens`` in length-sorted batches of at most ``max_batch_tokens``
    padded tokens (:func:`kit.models.rows.token_budget_batches`), each batch cut after its
    last response token: attention is causal, so later tokens change no score of a response
    position. Yields (row indices, tokens, response_mask) of each batch."""
    from kit.models.rows import token_budget_batches

    tokens = _check_tokens(tokens)
    response_mask = response_mask.bool().cpu()
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape {tuple(tokens.shape)}")
    last = torch.where(response_mask.any(dim=1),
                       response_mask.shape[1] - 1 - response_mask.flip(1).int().argmax(dim=1), torch.zeros(len(tokens), dtype=torch.long))
    lengths = [max(2, int(x) + 1) for x in last]  # a row with no response token needs nothing: 2 (the minimum)
    for batch in token_budget_batches(lengths, max_batch_tokens):
        idx = torch.tensor(batch, dtype=torch.long)
        width = max(lengths[i] for i in batch)
        yield idx, tokens[idx, :width], response_mask[idx, :width]


def budgeted(fn, model, tokens: Int[Tensor, "batch seq"], response_mask: Bool[Tensor, "batch seq"],
             max_batch_tokens: int, per_sample: bool = False, **kwargs: Any) -> MUIResult:
    """``fn`` (:func:`utilization`, :func:`sae_utilization`) over :func:`token_budget_chunks`, each
    chunk one batch, the results united (the union of the chunks' unions; per-sample masks put
    back in the rows' order)."""
    union: Tensor | None = None
    sample_masks: Tensor | None = None
    for idx, chunk, mask in token_budget_chunks(tokens, response_mask, max_batch_tokens):
        extra = {"per_sample": True} if per_sample else {}
        res = fn(model, tokens=chunk, response_mask=mask, batch_size=len(idx), **extra, **kwargs)
        union = res.mask.clone() if union is None else union | res.mask
        if per_sample:
            if sample_masks is None:
                sample_masks = torch.zeros(tokens.shape[0], *res.mask.shape, dtype=torch.bool)
            sample_masks[idx] = res.sample_masks
    return MUIResult(mui=mui_of_mask(union), mask=union, n_samples=int(tokens.shape[0]),
                     per_sample=[mui_of_mask(sm) for sm in sample_masks] if per_sample else None,
                     sample_masks=sample_masks)


VARIANTS = ("paper", "public_code")
"""``paper``: the definitions of the paper's text (Eq. 3/5, per-token top-k, k = max(1, round(d_mlp/1000)));
``public_code``: what MUI-Eval's ``get_neuron.py`` + ``depict_neuron.py`` compute (Table 5's absolute values)."""
PUBLIC_CODE_STORED = 2000
"""MUI-Eval stores the top 2000 (position, neuron) entries per response and layer before thresholding."""
_ACTS = {"relu": torch.relu, "silu": torch.nn.functional.silu, "swish": torch.nn.functional.silu,
         "gelu": torch.nn.functional.gelu,
         "gelu_new": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
         "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
         "gelu_fast": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}


def public_code_k(d_mlp: int) -> int:
    """MUI-Eval's per-layer k: ``int(1/1000 * d_mlp)``, a floor (14 for 14336, 18 for 18944), 0 below 1000."""
    return int(1 / 1000 * d_mlp)


def public_code_key_neurons(scores: Float[Tensor, "pos d_mlp"], k: int, n_gpus: int = 1) -> Bool[Tensor, "d_mlp"]:
    """One response's key neurons in one layer as MUI-Eval selects them.

    ``scores[q, i]``: neuron i's score at the response's q-th token. The code appends every
    position's scores once per visible GPU (``for cuda_index in range(num_cuda_devices)``), flattens
    the ``[positions * n_gpus, d_mlp]`` entries, keeps the top ``PUBLIC_CODE_STORED`` and then the
    first ``k`` of them: key neurons are the distinct neurons among the response's top-k
    (position, neuron) entries, so at most ``k`` per response and layer (fewer when one neuron
    wins at several positions, or with duplicates: about ``ceil(k / n_gpus)``).
    """
    if k < 1:
        raise ValueError(f"k={k} must be >= 1 (MUI-Eval's floor gives 0 below d_mlp=1000: pass k explicitly)")
    if n_gpus < 1:
        raise ValueError(f"n_gpus={n_gpus} must be >= 1")
    d = scores.shape[-1]
    flat = scores.repeat(n_gpus, 1).flatten()  # [positions * n_gpus * d_mlp], duplicates block by block
    top = flat.topk(min(k, PUBLIC_CODE_STORED, flat.numel())).indices
    mask = torch.zeros(d, dtype=torch.bool, device=scores.device)
    mask[top % d] = True
    return mask


def public_code_utilization(model, tokens: Int[Tensor, "batch seq"], response_mask: Bool[Tensor, "batch seq"],
                            k: int | None = None, n_gpus: int = 1, batch_size: int = 16,
                            per_sample: bool = False) -> MUIResult:
    """MUI as MUI-Eval's public code computes it (the code behind Table 5's absolute values).

    Its departures from the paper's text, each reproduced here:

    - off by one: the activation at a response token's OWN position q is scored against
      ``tokens[q]`` (the token it reads, not the one it predicts), over the response positions q;
    - the activation is the output of ``mlp.act_fn``: ``act(gate)`` for gated MLPs (Llama, Qwen,
      Gemma), not the ``act(gate) * up`` that enters ``down_proj``; the same for plain MLPs;
    - top-k per whole response (see :func:`public_code_key_neurons`) instead of per token;
    - per-GPU duplicates (``n_gpus``: GPUs visible to the run; 1 = none);
    - ``k = int(d_mlp / 1000)`` (:func:`public_code_k`, a floor) instead of ``max(1, round(.))``;
      ``k=None`` uses it and raises when it is 0 (the public code would find no neuron at all).

    Not reproduced: fp16 arithmetic. ``tokens``/``response_mask`` as for :func:`utilization`.
    """
    tokens = _check_tokens(tokens)
    response_mask = response_mask.bool().cpu()
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape {tuple(tokens.shape)}")
    cfg = model.cfg
    kk = public_code_k(cfg.d_mlp) if k is None else int(k)
    if kk < 1:
        raise ValueError(f"the public code's k = int(d_mlp/1000) = {kk} for d_mlp={cfg.d_mlp}: it selects no neuron; "
                         "pass k explicitly (k >= 1)")
    gated = bool(getattr(cfg, "gated_mlp", False))
    if gated and cfg.act_fn not in _ACTS:
        raise ValueError(f"act_fn={cfg.act_fn!r} of this gated MLP is not known; allowed values: {', '.join(_ACTS)}")
    site = "hook_pre" if gated else "hook_post"  # gated: act(gate) = act_fn(hook_pre); plain: hook_post = act(pre)
    names = [f"blocks.{L}.mlp.{site}" for L in range(cfg.n_layers)]
    union = torch.zeros(cfg.n_layers, cfg.d_mlp, dtype=torch.bool)
    sample_masks = torch.zeros(tokens.shape[0], cfg.n_layers, cfg.d_mlp, dtype=torch.bool)
    W_U = tl.unembed(model)
    for start in range(0, tokens.shape[0], batch_size):
        rows = slice(start, min(tokens.shape[0], start + batch_size))
        chunk = tokens[rows].to(cfg.device)
        with torch.no_grad():
            _, cache = tl.run_with_cache(model, chunk, names)
            for L, name in enumerate(names):
                acts = _ACTS[cfg.act_fn](cache[name]) if gated else cache[name]  # [rows, seq, d_mlp]
                W_out = _w_out(model, L)
                for j, m in enumerate(response_mask[rows]):
                    q = torch.nonzero(m).flatten().to(acts.device)
                    if len(q) == 0:
                        continue
                    y = chunk[j, q]  # the token AT q: the off-by-one
                    proj = (W_out @ W_U[:, y].to(W_out.dtype)).float()  # [d_mlp, n_q]
                    s = acts[j, q].float() * proj.T  # [n_q, d_mlp]
                    sample_masks[start + j, L] = public_code_key_neurons(s, kk, n_gpus).cpu()
    union = sample_masks.any(dim=0)
    return MUIResult(mui=mui_of_mask(union), mask=union, n_samples=int(tokens.shape[0]),
                     per_sample=[mui_of_mask(sm) for sm in sample_masks] if per_sample else None,
                     sample_masks=sample_masks if per_sample else None)


def is_world_model(model) -> bool:
    """Whether ``model`` speaks the tiny world's word-level vocabulary (``kit.world`` tokenizer)."""
    return getattr(getattr(model, "tokenizer", None), "name_or_path", "") == "kit-world-wordlevel"


def item_tokens(model, items: Sequence[Any], responses: Sequence[str]) -> tuple[Int[Tensor, "batch seq"], Bool[Tensor, "batch seq"]]:
    """Right-padded prompt+response tokens and the mask of the response tokens.

    World models (the world's word-level tokenizer): ``kit.world.prompt_tokens`` (BOS +
    prompt words) followed by the response's words. Other models:
    :func:`kit.models.rows.teacher_forced_rows` with the chat template when the tokenizer has
    one (as :func:`kit.models.generate.respond` generates): the prompt and prompt+response are
    tokenised and the response is everything after the prompt's tokens (as the public code does,
    so BPE merges across the boundary behave the same), cut to the context with a warning.
    An empty response gives a row with no response token (it contributes nothing to MUI).
    """
    if len(items) != len(responses):
        raise ValueError(f"items ({len(items)}) and responses ({len(responses)}) must have the same length")
    if len(items) == 0:
        raise ValueError("items is empty: MUI needs at least one sample")
    rows, n_prompt = [], []
    if is_world_model(model):
        from kit.world import prompt_tokens

        toks, lengths = prompt_tokens(model, items)
        vocab = model.tokenizer.get_vocab()
        for i, r in enumerate(responses):
            p = toks[i, : int(lengths[i])].tolist()
            unknown = [w for w in r.split() if w not in vocab]
            if unknown:
                raise ValueError(f"response {i} has words outside the world vocabulary: {unknown}")
            rows.append(p + [vocab[w] for w in r.split()])
            n_prompt.append(len(p))
    else:
        # the text the responses were generated from: the chat template when the tokenizer has one
        from kit.models.rows import teacher_forced_rows

        for ids, n in teacher_forced_rows(model, [it.prompt for it in items], responses, chat=None):
            rows.append(ids)
            n_prompt.append(n)
    tok = getattr(model, "tokenizer", None)
    pad = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, (r, n) in enumerate(zip(rows, n_prompt)):
        tokens[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, n: len(r)] = True
    return tokens, mask


def utilization_for_items(model, items: Sequence[Any], responses: Sequence[str], **kwargs: Any) -> MUIResult:
    """:func:`utilization` of prompt+response texts (``kwargs`` go to :func:`utilization`)."""
    tokens, mask = item_tokens(model, items, responses)
    return utilization(model, tokens, mask, **kwargs)


# --------------------------------------------------------------------------------------------
# SAE-based MUI


def sae_top(d_sae: int, top: int = 50, reference_width: int = SAE_REFERENCE_WIDTH) -> int:
    """Features kept per layer and token: ``top`` at the paper's 128K width, scaled by width."""
    return max(1, round(top * d_sae / reference_width))


def sae_utilization(model, sae_by_layer: Mapping[str, Any], tokens: Int[Tensor, "batch seq"],
                    response_mask: Bool[Tensor, "batch seq"], top: int = 50,
                    reference_width: int | None = SAE_REFERENCE_WIDTH, batch_size: int = 16,
                    max_batch_tokens: int | None = None) -> MUIResult:
    """SAE-based MUI (Eqs. 6, 9): per layer and response position, the top features of the SAE
    on that hook (``top`` at 128K width scaled to the SAE width; ``reference_width=None`` keeps
    ``top`` as is), positive activations only; denominator = number of SAEs x d_sae.

    ``sae_by_layer`` maps TransformerLens hook names (``blocks.{L}.hook_resid_post``) to sae_lens
    SAEs of equal width. Position alignment is the neuron one: the position predicting a
    response token is read. ``max_batch_tokens``: token-budget batches (see :func:`utilization`).
    """
    if not sae_by_layer:
        raise ValueError("sae_by_layer is empty: pass {hook_name: SAE}")
    if max_batch_tokens is not None:
        return budgeted(sae_utilization, model, tokens, response_mask, max_batch_tokens, sae_by_layer=sae_by_layer,
                        top=top, reference_width=reference_width)
    tokens = _check_tokens(tokens)
    pos_mask = _score_positions(response_mask.cpu(), tokens.cpu())
    hooks = list(sae_by_layer)
    widths = {int(sae.cfg.d_sae) for sae in sae_by_layer.values()}
    if len(widths) != 1:
        raise ValueError(f"SAEs must share one width for a common denominator, got widths {sorted(widths)}")
    d_sae = widths.pop()
    kk = top if reference_width is None else sae_top(d_sae, top, reference_width)
    if not 1 <= kk <= d_sae:
        raise ValueError(f"top={top} gives {kk} features per token, must be in [1, {d_sae}]")
    union = torch.zeros(len(hooks), d_sae, dtype=torch.bool)
    tokens = tokens.to(model.cfg.device)
    for start in range(0, tokens.shape[0], batch_size):
        rows = slice(start, min(tokens.shape[0], start + batch_size))
        with torch.no_grad():
            _, cache = tl.run_with_cache(model, tokens[rows], list(sae_by_layer))
            m = pos_mask[rows]
            for j, h in enumerate(hooks):
                feats = sae_by_layer[h].encode(cache[h][:, :-1].to(next(sae_by_layer[h].parameters()).device)).float().cpu()
                picked = require_finite(f"SAE features at {h}", feats[m])  # [tokens, d_sae]
                if picked.shape[0] == 0:
                    continue
                key = _topk_mask(picked, kk) & (picked > 0)
                union[j] |= key.any(dim=0)
    return MUIResult(mui=mui_of_mask(union), mask=union, n_samples=int(tokens.shape[0]))


# --------------------------------------------------------------------------------------------
# the law, PUR, directions, rank agreement


LAW_FORMS = ("mui_vs_log_perf", "perf_vs_log_mui")
"""The Utility Law's regression: ``mui_vs_log_perf`` is the paper's form, ``MUI = -alpha ln(P) + beta``
(P in %; MUI-Eval's figure prints alpha 4.632, beta 28.305, so MUI -> 6.97% at P = 100 and -> inf at
P -> 0); ``perf_vs_log_mui`` is the inverse regression ``performance = a + b ln(MUI)``."""
PAPER_LAW = {"alpha": 4.632, "beta": 28.305, "mui_at_100": 6.97}
"""Published constants (MUI-Eval's ``figures/Utility_Law.png`` / §3.2's 6.97%): labels, never results."""


@dataclass
class LawFit:
    """OLS fit of the Utility Law in one of :data:`LAW_FORMS`: ``y = intercept + slope * ln(x)``.

    ``mui_vs_log_perf`` (default): y = MUI, x = performance, so slope = -alpha, intercept = beta.
    ``perf_vs_log_mui``: y = performance, x = MUI. The law predicts slope < 0 in both forms.
    """

    slope: float
    """Coefficient of ln(x)."""
    intercept: float
    """Constant term."""
    ci_low: float
    """Lower end of the 95% confidence interval of the slope."""
    ci_high: float
    """Upper end of the 95% confidence interval of the slope."""
    r2: float
    """R^2 of the fit."""
    n: int
    """Number of (MUI, performance) points."""
    pvalue: float
    """Two-sided p-value of the slope."""
    form: str = "perf_vs_log_mui"
    """Which regression (:data:`LAW_FORMS`)."""

    @property
    def alpha(self) -> float:
        """The paper's alpha (``MUI = -alpha ln P + beta``); NaN for the inverse form."""
        return -self.slope if self.form == "mui_vs_log_perf" else float("nan")

    @property
    def beta(self) -> float:
        """The paper's beta; NaN for the inverse form."""
        return self.intercept if self.form == "mui_vs_log_perf" else float("nan")

    def mui_at(self, performance: float = 100.0) -> float:
        """MUI the law gives at ``performance`` (%): the paper's 'limit' at 100 (6.97% in §3.2).
        For the inverse form, the fitted line solved for MUI."""
        if self.form == "mui_vs_log_perf":
            return float(self.intercept + self.slope * np.log(performance))
        return float(np.exp((performance - self.intercept) / self.slope)) if self.slope else float("nan")

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        """y at x (MUI at performance x for the paper's form, performance at MUI x for the inverse)."""
        return self.intercept + self.slope * np.log(np.asarray(x, dtype=float))


def fit_law(performance: Numbers, mui: Numbers, form: str = "mui_vs_log_perf") -> LawFit:
    """Fit the Utility Law with statsmodels OLS (:data:`LAW_FORMS`; default the paper's
    ``MUI = -alpha ln(P) + beta``); needs >= 3 points, performance > 0 and MUI > 0 (both in %)."""
    import statsmodels.api as sm

    if form not in LAW_FORMS:
        raise ValueError(f"form={form!r}; allowed values: {', '.join(LAW_FORMS)}")
    perf = require_finite("fit_law performance", np.asarray(performance, dtype=float))
    m = require_finite("fit_law mui", np.asarray(mui, dtype=float))
    if perf.shape != m.shape or perf.ndim != 1:
        raise ValueError(f"performance {perf.shape} and mui {m.shape} must be 1-d of equal length")
    if len(perf) < 3:
        raise ValueError(f"fit_law needs at least 3 points, got {len(perf)}")
    if (m <= 0).any():
        raise ValueError("mui must be > 0 everywhere (the law is in log MUI or fits MUI on log performance)")
    if form == "mui_vs_log_perf" and (perf <= 0).any():
        raise ValueError("performance must be > 0 everywhere for form='mui_vs_log_perf' (the law is in ln P)")
    y, x = (m, perf) if form == "mui_vs_log_perf" else (perf, m)
    res = sm.OLS(y, sm.add_constant(np.log(x))).fit()
    lo, hi = res.conf_int(0.05)[1]
    return LawFit(slope=float(res.params[1]), intercept=float(res.params[0]), ci_low=float(lo),
                  ci_high=float(hi), r2=float(res.rsquared), n=len(y), pvalue=float(res.pvalues[1]), form=form)


def pur(performance: Numbers, mui: Numbers, alpha: float = 0.5) -> float | np.ndarray:
    """Performance-to-utilization ratio (Eq. 7): ``performance / MUI**alpha`` (alpha 0.5 reproduces
    Table 1 from Table 5)."""
    m = require_finite("pur mui", np.asarray(mui, dtype=float))
    if (m <= 0).any():
        raise ValueError("mui must be > 0 for PUR")
    if alpha < 0:
        raise ValueError(f"alpha={alpha} must be >= 0")
    out = require_finite("pur performance", np.asarray(performance, dtype=float)) / m ** alpha
    return float(out) if out.ndim == 0 else out


def direction(d_perf: SupportsFloat, d_mui: SupportsFloat, tol_perf: SupportsFloat = 0.0,
              tol_mui: SupportsFloat = 0.0) -> str:
    """Which of the four corollary directions a change (Δperformance, ΔMUI) is:
    ``evolving`` (+, -), ``accumulating`` (+, +), ``coarsening`` (-, +), ``collapsing`` (-, -);
    ``flat`` when either change is within its tolerance."""
    d_perf, d_mui, tol_perf, tol_mui = float(d_perf), float(d_mui), float(tol_perf), float(tol_mui)
    if tol_perf < 0 or tol_mui < 0:
        raise ValueError("tol_perf and tol_mui must be >= 0")
    if abs(d_perf) <= tol_perf or abs(d_mui) <= tol_mui:
        return "flat"
    if d_perf > 0:
        return "evolving" if d_mui < 0 else "accumulating"
    return "coarsening" if d_mui > 0 else "collapsing"


def rank_agreement(scores_by_dataset: Mapping[str, Mapping[str, SupportsFloat]],
                   reference_order: Sequence[str]) -> dict[str, Any]:
    """Spearman and Kendall of a score against a reference ranking, per dataset and summarised.

    ``scores_by_dataset``: dataset -> {model: score} (higher = better); ``reference_order``:
    models best first. Models missing from a dataset are skipped there. Returns
    ``{"per_dataset": {ds: {"spearman", "kendall"}}, "spearman_mean", "kendall_mean"`` (in %),
    ``"spearman_var", "kendall_var"`` (population variance of the coefficients x 100, Table 1's
    Δ numbers), ``"n_datasets"``}``. A dataset where the score is constant has undefined
    coefficients (NaN) and is left out of the mean and variance.
    """
    from scipy.stats import kendalltau, spearmanr

    if len(set(reference_order)) != len(reference_order):
        raise ValueError("reference_order has duplicate models")
    ref_rank = {m: i for i, m in enumerate(reference_order)}
    per: dict[str, dict[str, float]] = {}
    for ds, scores in scores_by_dataset.items():
        models = [m for m in reference_order if m in scores]
        unknown = set(scores) - set(ref_rank)
        if unknown:
            raise ValueError(f"dataset {ds!r}: models {sorted(unknown)} are not in reference_order")
        if len(models) < 3:
            raise ValueError(f"dataset {ds!r}: need >= 3 models to rank, got {len(models)}")
        s = require_finite(f"rank_agreement scores of dataset {ds!r} ({', '.join(models)})",
                           np.array([scores[m] for m in models], dtype=float))
        r = -np.array([ref_rank[m] for m in models], dtype=float)  # higher = better on both sides
        if np.ptp(s) == 0:  # a constant score ranks nothing: undefined, not 0
            per[ds] = {"spearman": float("nan"), "kendall": float("nan")}
            continue
        per[ds] = {"spearman": float(spearmanr(s, r).statistic), "kendall": float(kendalltau(s, r).statistic)}
    sp = np.array([v["spearman"] for v in per.values()])
    kd = np.array([v["kendall"] for v in per.values()])
    if np.isnan(sp).all():
        nan = float("nan")
        return {"per_dataset": per, "spearman_mean": nan, "spearman_var": nan, "kendall_mean": nan,
                "kendall_var": nan, "n_datasets": 0}
    return {
        "per_dataset": per,
        "spearman_mean": float(100 * np.nanmean(sp)), "spearman_var": float(100 * np.nanvar(sp)),
        "kendall_mean": float(100 * np.nanmean(kd)), "kendall_var": float(100 * np.nanvar(kd)),
        "n_datasets": int((~np.isnan(sp)).sum()),
    }


# --------------------------------------------------------------------------------------------
# the public algorithm (MUI-Eval), kept as the benchmark's and the tests' reference


def naive_public_scores(model, tokens: Int[Tensor, "batch seq"], offset: int = 1) -> Float[Tensor, "batch pos layer d_mlp"]:
    """A faithful re-implementation of the public MUI-Eval scoring loop, for comparison only.

    Per batch and layer it forms the full ``d_mlp x vocab`` projection ``W_out @ W_U``, then loops
    over tokens in Python. ``offset=1`` scores position p against ``tokens[p+1]`` (correct);
    ``offset=0`` reproduces the public code's off-by-one (scored against ``tokens[p]``).
    """
    tokens = _check_tokens(tokens).to(model.cfg.device)
    B, S = tokens.shape
    out = torch.zeros(B, S - 1, model.cfg.n_layers, model.cfg.d_mlp)
    with torch.no_grad():
        _, cache = tl.run_with_cache(model, tokens, lambda n: n.endswith("mlp.hook_post"))
        for L in range(model.cfg.n_layers):
            proj = _w_out(model, L).float() @ tl.unembed(model).float()  # d_mlp x vocab, every batch, every layer
            acts = cache[f"blocks.{L}.mlp.hook_post"].float()
            for b in range(B):
                for p in range(S - 1):
                    out[b, p, L] = (acts[b, p] * proj[:, tokens[b, p + offset]]).cpu()
    return out
