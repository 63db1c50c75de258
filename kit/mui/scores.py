"""Neuron contribution scores of MUI (seed 000): each MLP neuron's contribution to predicting the
*next* token (Eq. 3 ``score``, Eq. 13 ``activate``, Eq. 14 ``gradient``, B.6.1 integrated
gradients), streamed layer by layer (:func:`iter_neuron_scores`), and the public MUI-Eval scoring
loop kept as the benchmark's and the tests' reference (:func:`naive_public_scores`).

Alignment convention (the public code gets this wrong): position ``p`` of a score tensor is the
residual position whose output predicts ``tokens[:, p + 1]``; a score tensor therefore has
``seq_len - 1`` positions, and a response mask over tokens becomes ``response_mask[:, 1:]``
over score positions.

The scores by name (:data:`MUI_SCORES`, one table: each one's function and description):

>>> from kit.mui.scores import MUI_SCORES
>>> list(MUI_SCORES)
['score', 'activate', 'gradient', 'score_sum', 'activate_sum', 'gradient_sum']
>>> MUI_SCORES["gradient_sum"].extra["token_score"]
'gradient'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from kit.core.checks import require_finite
from kit.core.registry import Registry
from kit.models import tl

MUI_SCORES = Registry("a contribution score")
"""The contribution scores of MUI by name: token level (Eqs. 3, 13, 14; ``fn(model, tokens,
positions, ig_output, ig_mode)`` yields ``(layer, scores [batch, seq-1, d_mlp])``) and response
level (``*_sum``, Eq. 15: ``response_level=True``, the token-level ``token_score`` summed over a
response's positions). Every MUI function, and the configs' ``score`` fields, accept exactly
these names.
"""

SCORES = MUI_SCORES
"""The names of :data:`MUI_SCORES` (the table itself: ``in``, iteration and ``len`` read it)."""

IG_STEPS = 10
"""Riemann steps of the integrated-gradients score (B.6.1: "we deploy m = 10")."""


def _check_score(score: str, allowed: Sequence[str] | None = None) -> None:
    if allowed is None:
        MUI_SCORES.check(score, "score")
    elif score not in allowed:
        raise ValueError(
            f"score={score!r} is not a contribution score; allowed values: {', '.join(allowed)}"
        )


def _check_tokens(tokens: Tensor) -> Tensor:
    if not isinstance(tokens, Tensor) or tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"tokens must be an integer tensor [batch, seq], got {type(tokens).__name__} "
            f"{getattr(tokens, 'dtype', '')}"
        )
    if tokens.ndim == 1:
        tokens = tokens[None]
    if tokens.ndim != 2 or tokens.shape[1] < 2:
        raise ValueError(
            f"tokens must have shape [batch, seq] with seq >= 2 (one token to predict), "
            f"got {tuple(tokens.shape)}"
        )
    return tokens.long()


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


def _unembed_columns(
    model, targets: Int[Tensor, "batch pos"]
) -> tuple[Float[Tensor, "d_model n_uniq"], Int[Tensor, "batch pos"]]:
    """The unembedding columns of the distinct target tokens (never the d_mlp x vocab product)."""
    uniq, inverse = torch.unique(targets, return_inverse=True)
    return tl.unembed(model)[:, uniq], inverse


def _score_from_acts(
    model,
    layer: int,
    acts: Float[Tensor, "batch seq d_mlp"],
    score: str,
    cols: Tensor | None,
    inverse: Tensor | None,
) -> Float[Tensor, "batch pos d_mlp"]:
    """Eq. 3 / Eq. 13 for one layer; drops the last position (it predicts nothing)."""
    a = acts[:, :-1].float()
    if score == "activate":
        return a
    assert cols is not None and inverse is not None  # given for every score but activate
    # (W_out[L] @ W_U[:, y]) for the distinct targets y: [d_mlp, n_uniq] — as cheap as one
    # W_out matmul over the distinct tokens, instead of a d_mlp x vocab projection.
    W_out = _w_out(model, layer)
    proj = (W_out @ cols.to(W_out.dtype)).float()  # [d_mlp, n_uniq]
    return a * proj.T[inverse]  # [batch, pos, d_mlp]


IG_OUTPUTS = ("logit", "prob")
"""What integrated gradients attributes: the target's logit (our default) or its probability
(Dai et al. 2022, the paper's ref. [11]). MUI-Eval's ``get_neuron_grad.py`` uses a third: the
cross-entropy loss of the whole response, all layers and positions interpolated at once,
|attribution|."""

IG_MODES = ("per_token", "shared")
"""``per_token`` (Eq. 14): for each scored position p only ``a(p)`` is interpolated and the gradient
is that of p's own target; ``shared``: every scored position of a row interpolated at once and the
gradient of the sum of the row's own targets (one backward per step; a neuron at p is also credited
with its effect through attention on later targets of the same row)."""


def _check_ig(ig_output: str, ig_mode: str) -> None:
    if ig_output not in IG_OUTPUTS:
        raise ValueError(f"ig_output={ig_output!r}; allowed values: {', '.join(IG_OUTPUTS)}")
    if ig_mode not in IG_MODES:
        raise ValueError(f"ig_mode={ig_mode!r}; allowed values: {', '.join(IG_MODES)}")


def _integrated_gradients(
    model,
    tokens: Int[Tensor, "batch seq"],
    layer: int,
    positions: Bool[Tensor, "batch pos"] | None = None,
    steps: int = IG_STEPS,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
) -> Float[Tensor, "batch pos d_mlp"]:
    """Eq. 14: ``a_i(p) * mean_{k=1..m} dF_p / da_i(p) (k/m * a(p))``, zero baseline, m Riemann
    steps, where ``F_p`` is the logit (or probability, ``ig_output``) of ``tokens[:, p+1]`` at
    position p.

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
    positions = (
        torch.ones(B, S - 1, dtype=torch.bool) if positions is None else positions.bool().cpu()
    )
    if tuple(positions.shape) != (B, S - 1):
        raise ValueError(
            f"positions shape {tuple(positions.shape)} must be [batch, seq-1] = {(B, S - 1)}"
        )
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
        x = (
            (a_sel.repeat(steps, 1) * alphas.repeat_interleave(R)[:, None])
            .detach()
            .requires_grad_(True)
        )
        rr = torch.arange(steps * R, device=a.device)
        pp = p.repeat(steps)

        def replace(act, hook, rr=rr, pp=pp, x=x):
            act = act.clone()
            act[rr, pp] = x  # only position p of each row is interpolated; the rest keep a
            return act

        with torch.enable_grad(), tl.hooks(model, [(post, replace)]):
            logits = tl.forward(
                model, resid[rows, :width].repeat(steps, 1, 1), start_at_layer=layer
            )
            yy = targets[rows, p].repeat(steps)
            (grad,) = torch.autograd.grad(target_value(logits, rr, pp, yy), x)
        mean_grad = grad.float().reshape(steps, R, -1).mean(dim=0)
        out[rows.cpu(), p.cpu()] = (a_sel.float() * mean_grad).cpu()
    return out


def iter_neuron_scores(
    model,
    tokens: Int[Tensor, "batch seq"],
    score: str = "score",
    batch_size: int | None = None,
    positions: Bool[Tensor, "batch pos"] | None = None,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
) -> Iterator[LayerScores]:
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
    _check_score(score, MUI_SCORES.names(response_level=False))
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
        pos = None if positions is None else positions[rows]
        for L, scores in MUI_SCORES[score].fn(model, chunk, pos, ig_output, ig_mode):
            yield LayerScores(rows, L, scores)


def _act_scores(model, chunk: Tensor, score: str) -> Iterator[tuple[int, Tensor]]:
    cols = inverse = None
    if score == "score":
        cols, inverse = _unembed_columns(model, chunk[:, 1:])
    for L, acts in tl.iter_mlp_post(model, chunk):
        # a NaN would be ranked the top key neuron by topk: stop here, naming the layer
        yield (
            L,
            require_finite(
                f"{score} scores at blocks.{L}.mlp.hook_post",
                _score_from_acts(model, L, acts, score, cols, inverse),
            ),
        )


@MUI_SCORES.register(
    "score",
    "a_i(p) x (W_out[i] . W_U[:, y]), y = tokens[p+1]: the neuron's direct logit contribution "
    "(Eq. 3, the paper's choice)",
    response_level=False,
    token_score="score",
)
def contribution_scores(
    model,
    tokens: Int[Tensor, "batch seq"],
    positions: Bool[Tensor, "batch pos"] | None = None,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
) -> Iterator[tuple[int, Float[Tensor, "batch pos d_mlp"]]]:
    """Eq. 3 per layer: ``(layer, a * (W_out W_U[:, y]))`` (``positions``, ``ig_*`` unused)."""
    return _act_scores(model, tokens, "score")


@MUI_SCORES.register(
    "activate",
    "a_i(p): the activation entering W_out (Eq. 13)",
    response_level=False,
    token_score="activate",
)
def activation_scores(
    model,
    tokens: Int[Tensor, "batch seq"],
    positions: Bool[Tensor, "batch pos"] | None = None,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
) -> Iterator[tuple[int, Float[Tensor, "batch pos d_mlp"]]]:
    """Eq. 13 per layer: ``(layer, a)`` (``positions``, ``ig_*`` unused)."""
    return _act_scores(model, tokens, "activate")


@MUI_SCORES.register(
    "gradient",
    f"integrated gradients of the target's logit, {IG_STEPS} Riemann steps, zero baseline "
    "(Eq. 14, B.6.1)",
    response_level=False,
    token_score="gradient",
)
def gradient_scores(
    model,
    tokens: Int[Tensor, "batch seq"],
    positions: Bool[Tensor, "batch pos"] | None = None,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
) -> Iterator[tuple[int, Float[Tensor, "batch pos d_mlp"]]]:
    """Eq. 14 per layer: integrated gradients at ``positions`` (None: all), 0 elsewhere (see
    :func:`_integrated_gradients` for ``ig_output`` / ``ig_mode``)."""
    for L in range(model.cfg.n_layers):
        yield (
            L,
            require_finite(
                f"gradient scores at blocks.{L}.mlp.hook_post",
                _integrated_gradients(
                    model, tokens, L, positions, ig_output=ig_output, ig_mode=ig_mode
                ),
            ),
        )


for _base in ("score", "activate", "gradient"):
    MUI_SCORES.add(
        f"{_base}_sum",
        MUI_SCORES[_base].fn,
        f"{_base} summed over each response's positions, then thresholded (Eq. 15)",
        response_level=True,
        token_score=_base,
    )

TOKEN_SCORES = MUI_SCORES.names(response_level=False)
"""The token-level scores of :data:`MUI_SCORES` as registered here (a later entry: use
``MUI_SCORES.names(response_level=False)``)."""


def neuron_scores(
    model,
    tokens: Int[Tensor, "batch seq"],
    score: str = "score",
    batch_size: int | None = None,
    **kwargs: Any,
) -> Float[Tensor, "batch pos layer d_mlp"]:
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


ACT_FNS = {
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "swish": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "gelu_new": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
}
"""The activation functions of gated MLPs, by their TransformerLens ``cfg.act_fn`` name."""


def act_fn_site(model) -> tuple[str, Callable[[Tensor], Tensor]]:
    """Where MUI-Eval's public code reads a neuron's activation: a forward hook on each layer's
    ``mlp.act_fn``, whose output is ``act(gate)`` for gated MLPs (Llama, Qwen, Gemma: the gate's
    activation BEFORE the multiplication by ``up``; ``down_proj`` reads ``act(gate) * up``, which
    is ``blocks.{L}.mlp.hook_post``) and ``act(pre) = hook_post`` for plain MLPs.

    Returns the TransformerLens hook (``hook_pre`` for gated MLPs, ``hook_post`` for plain ones,
    under ``blocks.{L}.mlp.``) and the function that turns its value into the act_fn output
    (``cfg.act_fn`` for gated MLPs, the identity for plain ones). Raises ValueError for a gated MLP
    whose activation function is not in :data:`ACT_FNS`."""
    cfg = model.cfg
    if not getattr(cfg, "gated_mlp", False):
        return "hook_post", lambda x: x
    if cfg.act_fn not in ACT_FNS:
        raise ValueError(
            f"act_fn={cfg.act_fn!r} of this gated MLP is not known; allowed values: "
            f"{', '.join(ACT_FNS)}"
        )
    return "hook_pre", ACT_FNS[cfg.act_fn]


PUBLIC_ACTIVATIONS = ("act_fn", "hook_post")
"""Activations :func:`naive_public_scores` reads: ``act_fn`` (the public code's, see
:func:`act_fn_site`) or ``hook_post`` (the input of ``W_out``, Eq. 3's ``a``)."""


def naive_public_scores(
    model, tokens: Int[Tensor, "batch seq"], offset: int = 1, activation: str = "act_fn"
) -> Float[Tensor, "batch pos layer d_mlp"]:
    """A re-implementation of the public MUI-Eval scoring loop (``get_neuron.py``), for comparison
    and timing only.

    As the public code: the activation is the output of each layer's ``mlp.act_fn`` (the public
    code's forward hook; ``act(gate)`` for gated MLPs, not the ``act(gate) * up`` that enters
    ``down_proj``: :func:`act_fn_site`); per batch and layer it forms the full ``d_mlp x vocab``
    projection ``W_out @ W_U``, then loops over tokens in Python, scoring ``act[p] *
    proj[:, tokens[p + offset]]``. ``offset=0`` reproduces the public code's off-by-one (the token
    at p, the one p reads), ``offset=1`` scores the token p predicts. ``activation="hook_post"``
    reads ``blocks.{L}.mlp.hook_post`` instead: the same loop then computes Eq. 3, which
    :func:`neuron_scores` must equal (identical to ``act_fn`` for plain MLPs).

    Not reproduced: the public code's fp16 projection and activations, and its restriction to the
    response positions (every position ``p < seq - 1`` is scored here; see
    :func:`kit.mui.metric.public_code_utilization` for the whole public pipeline).
    """
    if activation not in PUBLIC_ACTIVATIONS:
        raise ValueError(
            f"activation={activation!r}; allowed values: {', '.join(PUBLIC_ACTIVATIONS)}"
        )
    tokens = _check_tokens(tokens).to(model.cfg.device)
    B, S = tokens.shape
    site, act_fn = act_fn_site(model) if activation == "act_fn" else ("hook_post", lambda x: x)
    out = torch.zeros(B, S - 1, model.cfg.n_layers, model.cfg.d_mlp)
    with torch.no_grad():
        _, cache = tl.run_with_cache(model, tokens, lambda n: n.endswith(f"mlp.{site}"))
        for L in range(model.cfg.n_layers):
            # d_mlp x vocab, every batch, every layer
            proj = _w_out(model, L).float() @ tl.unembed(model).float()
            acts = act_fn(cache[f"blocks.{L}.mlp.{site}"]).float()
            for b in range(B):
                for p in range(S - 1):
                    out[b, p, L] = (acts[b, p] * proj[:, tokens[b, p + offset]]).cpu()
    return out
