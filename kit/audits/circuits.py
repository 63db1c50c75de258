"""IOI-like circuit discovery by mean-ablation patching of attention heads and head-graph edges.

Pipeline (Wang et al. 2023 for the task and mean ablation):

1. ``ioi_batch``: prompts "... {S} gave a {thing} to" with the indirect object IO as answer;
   the metric is the logit difference ``logit(IO) - logit(S)`` at the last prompt token.
2. ``head_means``: the mean of every head's ``blocks.{L}.attn.hook_z`` over a reference set,
   per position. Mean ablation *by definition* replaces a head's output by this expectation.
3. ``head_scores``: activation patching per head: ``m(N) - m(N with head h mean-ablated)``.
4. ``edge_scores``: the same per edge ``u -> v`` of the head graph (input, heads, logits): only
   the path from ``u`` into ``v``'s query/key/value input (or into the logits) sees ``u``'s mean;
   ``edge_attribution_scores``: its first-order estimate (EAP) from one forward and one backward
   pass, for models whose edges are too many to patch one by one.
5. ``discover_circuit``: the heads scoring highest (``select_heads``) and the ranked edges;
   ``task_signal`` and ``circuit_scope`` say whether the model does the task at all.

The MIB faithfulness curve (CPR / CMD) on the ranked edges is :mod:`kit.audits.mib`.
MLPs are never ablated (as in Wang et al.): they belong to every circuit.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Iterable, cast

import numpy as np
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor
from tqdm.auto import tqdm

from kit.core.cached import MISSING, read_bytes_cached, write_bytes_cached
from kit.core.paths import cache_dir
from kit.models import tl

from .activations import tokenize

Head = tuple[int, int]
"""(layer, head index) of ``blocks.{layer}.attn.hook_z``."""

# Wang et al. (2023), "Interpretability in the Wild", Fig. 2: the IOI circuit of GPT-2 small.
IOI_HEADS_GPT2: dict[str, list[Head]] = {
    "name_mover": [(9, 6), (9, 9), (10, 0)],
    "negative_name_mover": [(10, 7), (11, 10)],
    "backup_name_mover": [(9, 0), (9, 7), (10, 1), (10, 2), (10, 6), (10, 10), (11, 2), (11, 9)],
    "s_inhibition": [(7, 3), (7, 9), (8, 6), (8, 10)],
    "induction": [(5, 5), (6, 9)],
    "duplicate_token": [(0, 1), (3, 0)],
    "previous_token": [(2, 2), (4, 11)],
}
INPUT, LOGITS = "input", "logits"


def ioi_heads_gpt2() -> list[Head]:
    """All heads of Wang et al.'s GPT-2 small IOI circuit, sorted."""
    return sorted({h for heads in IOI_HEADS_GPT2.values() for h in heads})


@dataclass
class IOIBatch:
    """Tokenised IOI prompts with the two answer tokens."""

    tokens: Int[Tensor, "batch pos"]
    last: Int[Tensor, " batch"]
    """Index of each prompt's last real token (right padding)."""
    io: Int[Tensor, " batch"]
    """Token of the indirect object (the right answer)."""
    s: Int[Tensor, " batch"]
    """Token of the subject (the repeated name, the wrong answer)."""
    ids: list[str]
    groups: list[str]
    """``metadata['name_group']`` per prompt (frequent / rare), ``''`` if absent."""

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def key_tensors(self) -> list[Tensor]:
        """The tensors that define the batch for a cache key: tokens and answer positions."""
        return [self.tokens, self.last, self.io, self.s]

    def subset(self, idx: Iterable[int]) -> "IOIBatch":
        idx = list(idx)
        t = torch.tensor(idx, dtype=torch.long)
        return IOIBatch(
            self.tokens[t],
            self.last[t],
            self.io[t],
            self.s[t],
            [self.ids[i] for i in idx],
            [self.groups[i] for i in idx],
        )


def name_token(model, name: str) -> int:
    """Single token of a name: `` Name`` for BPE vocabularies (GPT-2), ``name`` for word-level
    ones."""
    unk = getattr(getattr(model, "tokenizer", None), "unk_token_id", None)
    for text in (" " + name, name):
        toks = model.to_tokens(text, prepend_bos=False)[0]
        if len(toks) == 1 and (unk is None or int(toks[0]) != unk):
            return int(toks[0])
    raise ValueError(
        f"name {name!r} is not a single token of the model's vocabulary; IOI needs single-token "
        "names"
    )


def ioi_batch(model, items) -> IOIBatch:
    """Batch from IOI ``Item``s whose metadata has ``io`` and ``s`` names (``kit.world`` task
    ``ioi``)."""
    missing = [it.id for it in items if "io" not in it.metadata or "s" not in it.metadata]
    if missing:
        raise ValueError(f"items {missing[:3]} lack metadata 'io'/'s': pass items of the IOI task")
    tokens, lengths = tokenize(model, [it.prompt for it in items])
    io = torch.tensor([name_token(model, it.metadata["io"]) for it in items])
    s = torch.tensor([name_token(model, it.metadata["s"]) for it in items])
    return IOIBatch(
        tokens,
        lengths - 1,
        io,
        s,
        [it.id for it in items],
        [str(it.metadata.get("name_group", "")) for it in items],
    )


def logit_diff(
    logits: Float[Tensor, "batch pos vocab"], batch: IOIBatch
) -> Float[Tensor, " batch"]:
    """``logit(IO) - logit(S)`` at each prompt's last token (Wang et al.'s metric)."""
    rows = torch.arange(len(batch), device=logits.device)
    last = logits[rows, batch.last.to(logits.device)]
    return (
        (last[rows, batch.io.to(logits.device)] - last[rows, batch.s.to(logits.device)])
        .float()
        .cpu()
    )


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _pos_mask(batch: IOIBatch) -> Bool[Tensor, "batch pos"]:
    return torch.arange(batch.tokens.shape[1])[None, :] <= batch.last[:, None]


@torch.no_grad()
def head_means(model, reference: IOIBatch) -> Float[Tensor, "n_layers pos n_heads d_head"]:
    """Mean of ``hook_z`` per layer, position and head over the reference prompts' real tokens.

    Positions no reference prompt reaches get the mean over all real tokens.
    """
    names = [f"blocks.{L}.attn.hook_z" for L in range(model.cfg.n_layers)]
    _, cache = tl.run_with_cache(model, reference.tokens.to(_device(model)), names)
    mask = _pos_mask(reference).float()[:, :, None, None]
    out = []
    for n in names:
        z = cache[n].float().cpu()
        per_pos = (z * mask).sum(0) / mask.sum(0).clamp_min(1)
        overall = (z * mask).sum((0, 1)) / mask.sum().clamp_min(1)
        empty = mask.sum(0)[:, 0, 0] == 0
        per_pos[empty] = overall
        out.append(per_pos)
    return torch.stack(out)


def _fit_means(means: Tensor, n_pos: int) -> Tensor:
    if means.shape[1] >= n_pos:
        return means[:, :n_pos]
    pad = means[:, -1:].expand(-1, n_pos - means.shape[1], -1, -1)
    return torch.cat([means, pad], dim=1)


@torch.no_grad()
def run_heads(
    model,
    batch: IOIBatch,
    means: Tensor,
    ablate: Iterable[Head] = (),
    scale: dict[Head, float] | None = None,
) -> Float[Tensor, " batch"]:
    """Per-prompt logit diff with ``ablate`` heads mean-ablated and ``scale`` heads' outputs scaled.

    ``scale[h] = s`` multiplies head ``h``'s ``hook_z`` by ``s`` (EX11's stimulus intensity).
    """
    dev = _device(model)
    m = _fit_means(means, batch.tokens.shape[1]).to(dev)
    by_layer: dict[int, list[int]] = {}
    for L, H in ablate:
        by_layer.setdefault(int(L), []).append(int(H))
    scales: dict[int, list[tuple[int, float]]] = {}
    for (L, H), s in (scale or {}).items():
        scales.setdefault(int(L), []).append((int(H), float(s)))
    hooks = []
    for L in set(by_layer) | set(scales):

        def hook(z, hook, L=L):
            for H in by_layer.get(L, []):
                z[:, :, H] = m[L, :, H].to(z.dtype)
            for H, s in scales.get(L, []):
                z[:, :, H] = z[:, :, H] * s
            return z

        hooks.append((f"blocks.{L}.attn.hook_z", hook))
    logits = tl.run_with_hooks(model, batch.tokens.to(dev), hooks)
    return logit_diff(logits, batch)


def all_heads(model) -> list[Head]:
    return [(L, H) for L in range(model.cfg.n_layers) for H in range(model.cfg.n_heads)]


def head_scores(
    model,
    batch: IOIBatch,
    means: Tensor,
    progress: bool = False,
    layers: Iterable[int] | None = None,
) -> Float[Tensor, "n_layers n_heads"]:
    """Activation patching per head: ``m(N) - m(N with h mean-ablated)`` (mean logit diff); one
    forward pass per head. ``layers``: score only the heads of these layers (a cost cap; the others
    get 0, so they are never chosen); None: every layer.

    Cached by content (the model's identity, the batch's tokens and names, the means, ``layers``)
    in memory and under ``cache_dir()/audits/head-scores/``, so a rerun (or the notebook's example
    cell followed by discovery) patches the heads once: 270 passes on SmolLM2."""
    layers = sorted(set(range(model.cfg.n_layers) if layers is None else map(int, layers)))
    bad = [L for L in layers if not 0 <= L < model.cfg.n_layers]
    if bad:
        raise ValueError(f"circuit_layers: {bad} outside 0..{model.cfg.n_layers - 1}")
    path = _scores_path(model, batch, means, layers)
    if path is not None and path in _SCORES:
        return _SCORES[path].clone()
    shape = (model.cfg.n_layers, model.cfg.n_heads)
    out = (
        read_bytes_cached(path, _load_tensor, _scores_check(shape), "head-score cache")
        if path is not None
        else MISSING
    )
    if out is MISSING:
        full = run_heads(model, batch, means).mean()
        out = torch.zeros(*shape)
        heads = [(L, H) for L, H in all_heads(model) if L in layers]
        for L, H in tqdm(heads, desc="head patching", disable=not progress):
            out[L, H] = full - run_heads(model, batch, means, ablate=[(L, H)]).mean()
        if path is not None:
            buf = BytesIO()
            torch.save(out, buf)
            write_bytes_cached(path, buf.getvalue())
    if path is not None:
        _SCORES[path] = out.clone()
    return out


_SCORES: dict[Path, Tensor] = {}


def _load_tensor(raw: bytes) -> Tensor:
    return torch.load(BytesIO(raw), weights_only=True)


def _scores_check(shape: tuple[int, int]):
    """The schema of a cached head-score table: a finite float tensor of ``shape``
    (layers x heads)."""

    def check(value: Any) -> str | None:
        if not isinstance(value, Tensor) or not value.is_floating_point():
            return f"not a float tensor ({type(value).__name__})"
        if tuple(value.shape) != shape:
            return f"shape {tuple(value.shape)}, expected {shape} (layers x heads)"
        if not bool(torch.isfinite(value).all()):
            return "non-finite score"
        return None

    return check


def _scores_path(model, batch: IOIBatch, means: Tensor, layers: list[int]) -> Path | None:
    """Where :func:`head_scores` keeps its result: for a model loaded from a directory (a real or
    hub model, by its files' content); None otherwise (world members are fast to patch: not
    cached)."""
    from kit.models.identity import path_identity

    if not getattr(model, "kit_path", None):
        return None
    ident = path_identity(model.kit_path)
    h = hashlib.sha256(json.dumps([SCORES_VERSION, ident, layers]).encode())
    for t in (*batch.key_tensors(), means):
        h.update(np.ascontiguousarray(t.detach().cpu().numpy()).tobytes())
    return cache_dir() / "audits" / "head-scores" / f"{h.hexdigest()[:24]}.pt"


SCORES_VERSION = 1
"""Part of the head-score cache key: bump when the patching changes."""


@dataclass(frozen=True)
class Edge:
    """A path ``sender -> receiver`` of the head graph with its patching score."""

    sender: str
    """``input`` or ``L.H``."""
    receiver: str
    """``L.H`` (its q/k/v input) or ``logits``."""
    score: float

    def heads(self) -> list[Head]:
        return [
            cast(Head, tuple(int(x) for x in n.split(".")))
            for n in (self.sender, self.receiver)
            if n not in (INPUT, LOGITS)
        ]


def _node(h: Head) -> str:
    return f"{h[0]}.{h[1]}"


def graph_edges(n_layers: int, n_heads: int) -> list[tuple[str, str]]:
    """Every (sender, receiver) pair: input and each head feed later-layer heads and the logits."""
    heads = [(L, H) for L in range(n_layers) for H in range(n_heads)]
    edges = [(INPUT, _node(v)) for v in heads] + [(INPUT, LOGITS)]
    for u in heads:
        edges += [(_node(u), _node(v)) for v in heads if v[0] > u[0]]
        edges.append((_node(u), LOGITS))
    return edges


@torch.no_grad()
def edge_scores(
    model,
    batch: IOIBatch,
    means: Tensor,
    progress: bool = False,
    edges: list[tuple[str, str]] | None = None,
) -> list[Edge]:
    """Patching score of every edge (or of ``edges``), sorted by score (largest first).

    Ablating edge ``u -> v`` subtracts ``u``'s deviation from its mean output,
    ``(z_u - mean z_u) W_O[u]``, from ``v``'s query, key and value inputs only (or from the final
    residual for ``v = logits``): every other path still sees ``u``'s real output.
    """
    dev = _device(model)
    cfg = model.cfg
    mask = _pos_mask(batch).to(dev)[:, :, None].float()
    names = [f"blocks.{L}.attn.hook_z" for L in range(cfg.n_layers)] + ["blocks.0.hook_resid_pre"]
    logits, cache = tl.run_with_cache(model, batch.tokens.to(dev), names)
    assert logits is not None  # the default return_type gives logits
    full = logit_diff(logits, batch).mean()
    m = _fit_means(means, batch.tokens.shape[1]).to(dev)
    resid0 = cache["blocks.0.hook_resid_pre"]
    r_mean = (resid0 * mask).sum(0, keepdim=True) / mask.sum(0, keepdim=True).clamp_min(1)

    def delta(node: str) -> Tensor:
        if node == INPUT:
            return resid0 - r_mean
        L, H = (int(x) for x in node.split("."))
        dz = cache[f"blocks.{L}.attn.hook_z"][:, :, H] - m[L, :, H]
        return dz @ tl.attn_out(model, L, H)

    scores = []
    with tl.split_qkv_input(model):
        for sender, receiver in tqdm(
            edges if edges is not None else graph_edges(cfg.n_layers, cfg.n_heads),
            desc="edge patching",
            disable=not progress,
        ):
            d = delta(sender)
            if receiver == LOGITS:
                hooks = [(f"blocks.{cfg.n_layers - 1}.hook_resid_post", lambda x, hook, d=d: x - d)]
            else:
                L, H = (int(x) for x in receiver.split("."))
                hooks = []
                for kind in ("q", "k", "v"):

                    def hook(x, hook, H=H, d=d):
                        h = _input_index(H, x.shape[2], cfg.n_heads)
                        x[:, :, h] = x[:, :, h] - d
                        return x

                    hooks.append((f"blocks.{L}.hook_{kind}_input", hook))
            ld = logit_diff(tl.run_with_hooks(model, batch.tokens.to(dev), hooks), batch).mean()
            scores.append(Edge(sender, receiver, float(full - ld)))
    return sorted(scores, key=lambda e: -e.score)


def _input_index(head: int, n_inputs: int, n_heads: int) -> int:
    """Which of a layer's ``n_inputs`` q/k/v inputs feeds query head ``head``: grouped-query models
    share each k/v input between ``n_heads / n_inputs`` heads."""
    return head if n_inputs == n_heads else head * n_inputs // n_heads


EDGE_SCORINGS = ("patching", "attribution")
"""How :func:`discover_circuit` scores the edges: :func:`edge_scores` (one patched forward pass per
edge) or :func:`edge_attribution_scores` (its first-order estimate from one forward and one
backward pass)."""


def edge_attribution_scores(
    model,
    batch: IOIBatch,
    means: Tensor,
    edges: list[tuple[str, str]] | None = None,
) -> list[Edge]:
    """Edge attribution patching (EAP; Syed et al. 2023, the edge scoring of MIB's baselines): the
    first-order estimate of every edge's patching score (:func:`edge_scores`), from one forward and
    one backward pass over ``batch`` instead of one forward pass per edge.

    Patching ``u -> v`` subtracts ``delta_u = (z_u - mean z_u) W_O[u]`` from ``v``'s q, k and v
    inputs (or from the final residual for ``v = logits``); to first order that moves the mean
    logit diff ``m`` by ``-grad_v . delta_u``, so the score ``m(N) - m(patched)`` is

        ``score(u -> v) = sum over prompts, positions, d_model of grad_v * delta_u``

    with ``grad_v`` the gradient of ``m`` with respect to ``v``'s q, k and v inputs, summed over
    the three (``input``: ``delta = resid_pre_0`` minus its mean over the batch, as in patching).
    Exact where ``m`` is linear in ``v``'s input (no LayerNorm, softmax or MLP between them);
    elsewhere the error is second order in ``delta_u``. Sorted by score, largest first.
    """
    n_layers = model.cfg.n_layers
    z_names = [f"blocks.{L}.attn.hook_z" for L in range(n_layers)]
    in_names = [f"blocks.{L}.hook_{k}_input" for L in range(n_layers) for k in "qkv"]
    final = f"blocks.{n_layers - 1}.hook_resid_post"
    names = ["blocks.0.hook_resid_pre", *z_names, *in_names, final]
    with tl.split_qkv_input(model):
        _, acts, grads = tl.run_with_grads(
            model,
            batch.tokens.to(_device(model)),
            names,
            lambda logits: logit_diff(logits, batch).mean(),
        )
    with torch.no_grad():
        return _attribution_table(model, batch, means, acts, grads, edges)


def _attribution_table(model, batch, means, acts, grads, edges) -> list[Edge]:
    """:func:`edge_attribution_scores` from the activations and gradients of its one pass."""
    dev = _device(model)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    mask = _pos_mask(batch).to(dev)[:, :, None].float()
    z_names = [f"blocks.{L}.attn.hook_z" for L in range(n_layers)]
    final = f"blocks.{n_layers - 1}.hook_resid_post"
    dtype = torch.promote_types(acts[final].dtype, torch.float32)
    m = _fit_means(means, batch.tokens.shape[1]).to(dev)
    resid0 = acts["blocks.0.hook_resid_pre"].to(dtype)
    r_mean = (resid0 * mask).sum(0, keepdim=True) / mask.sum(0, keepdim=True).clamp_min(1)
    # every sender's delta flattened, in graph order: input, then the heads layer by layer
    senders = [INPUT] + [_node((L, H)) for L in range(n_layers) for H in range(n_heads)]
    deltas = [(resid0 - r_mean).flatten()]
    for L in range(n_layers):
        dz = acts[z_names[L]].to(dtype) - m[L].to(dtype)  # batch pos head d_head
        w_o = torch.stack([tl.attn_out(model, L, H) for H in range(n_heads)]).to(dtype)
        deltas += list(torch.einsum("bphe,hed->hbpd", dz, w_o).flatten(1))
    D = torch.stack(deltas)  # senders x (batch pos d_model)
    table: dict[tuple[str, str], float] = {}
    for L in range(n_layers):
        q, k, v = (grads[f"blocks.{L}.hook_{x}_input"].to(dtype) for x in "qkv")
        G = torch.stack(
            [
                q[:, :, H] + sum(g[:, :, _input_index(H, g.shape[2], n_heads)] for g in (k, v))
                for H in range(n_heads)
            ]
        ).flatten(1)  # receivers of layer L x (batch pos d_model)
        S = (G @ D[: 1 + L * n_heads].T).cpu()  # input and the heads of earlier layers only
        for H in range(n_heads):
            for i, u in enumerate(senders[: 1 + L * n_heads]):
                table[(u, _node((L, H)))] = float(S[H, i])
    to_logits = (D @ grads[final].to(dtype).flatten()).cpu()
    for i, u in enumerate(senders):
        table[(u, LOGITS)] = float(to_logits[i])
    pairs = edges if edges is not None else graph_edges(n_layers, n_heads)
    missing = [p for p in pairs if p not in table]
    if missing:
        raise ValueError(f"edges {missing[:3]} are not edges of the head graph (graph_edges)")
    return sorted((Edge(u, v, table[(u, v)]) for u, v in pairs), key=lambda e: -e.score)


def edges_to_heads(edges: list[Edge]) -> set[Head]:
    return {h for e in edges for h in e.heads()}


def circuit_performance(model, batch: IOIBatch, means: Tensor, circuit: Iterable[Head]) -> float:
    """Mean logit diff with every head outside ``circuit`` mean-ablated."""
    keep = set(circuit)
    return float(
        run_heads(model, batch, means, ablate=[h for h in all_heads(model) if h not in keep]).mean()
    )


@dataclass
class Circuit:
    """Discovered circuit: its heads, all head scores and all edge scores."""

    heads: list[Head]
    head_scores: Float[Tensor, "n_layers n_heads"]
    edges: list[Edge] = field(default_factory=list)


def select_heads(
    scores: Float[Tensor, "n_layers n_heads"],
    frac: float = 0.2,
    max_heads: int = 12,
    fixed: list[Head] | None = None,
) -> list[Head]:
    """Heads whose patching score is at least ``frac`` x the largest score (at most ``max_heads``),
    or ``fixed`` heads (e.g. Wang et al.'s for GPT-2) when given."""
    if fixed:
        return sorted(cast(Head, tuple(h)) for h in fixed)
    if not 0 < frac <= 1:
        raise ValueError(f"frac={frac} must be in (0, 1]")
    top = float(scores.max())
    if top <= 0:
        return []
    flat = [
        ((L, H), float(scores[L, H]))
        for L in range(scores.shape[0])
        for H in range(scores.shape[1])
    ]
    keep = sorted([x for x in flat if x[1] >= frac * top], key=lambda x: -x[1])[:max_heads]
    return sorted(h for h, _ in keep)


def discover_circuit(
    model,
    batch: IOIBatch,
    means: Tensor,
    frac: float = 0.2,
    max_heads: int = 12,
    fixed: list[Head] | None = None,
    with_edges: bool = True,
    progress: bool = False,
    layers: Iterable[int] | None = None,
    edge_scoring: str = "patching",
) -> Circuit:
    """Head patching -> circuit heads; edge scores -> ranked edges (for the MIB curve), by
    ``edge_scoring`` (:data:`EDGE_SCORINGS`: ``patching``, :func:`edge_scores`; ``attribution``,
    :func:`edge_attribution_scores`). ``layers``: heads of these layers only
    (:func:`head_scores`)."""
    if edge_scoring not in EDGE_SCORINGS:
        raise ValueError(
            f"edge_scores={edge_scoring!r}; allowed values: {', '.join(EDGE_SCORINGS)}"
        )
    scores = head_scores(model, batch, means, progress=progress, layers=layers)
    if not with_edges:
        edges = []
    elif edge_scoring == "attribution":
        edges = edge_attribution_scores(model, batch, means)
    else:
        edges = edge_scores(model, batch, means, progress=progress)
    return Circuit(select_heads(scores, frac, max_heads, fixed), scores, edges)


def task_signal(full_ld, level: float = 0.95) -> dict[str, Any]:
    """Does the model do the task at all? Mean full-model logit difference IO - S over prompts, its
    t interval, and the fraction of prompts it gets right (``does_task``: the interval is above
    0)."""
    from scipy import stats

    x = np.asarray(full_ld, float)
    m = float(x.mean()) if len(x) else float("nan")
    if len(x) > 1 and x.std(ddof=1) > 0:
        lo, hi = stats.t.interval(level, len(x) - 1, loc=m, scale=x.std(ddof=1) / np.sqrt(len(x)))
    else:
        lo = hi = m
    return {
        "mean_logit_diff": m,
        "ci": [float(lo), float(hi)],
        "frac_io_preferred": float((x > 0).mean()) if len(x) else None,
        "n": int(len(x)),
        "does_task": bool(len(x) > 1 and lo > 0),
    }


def circuit_scope(
    known: bool, signal: dict[str, Any], n_heads: int, frac: float, max_heads: int
) -> str:
    """What the circuit audits (MIB, EX1, EX2, EX11) can and cannot say about this model, in words:
    a known circuit (Wang et al.'s heads) is audited as given; a discovered one is whatever heads
    patching ranks highest; a model that does not do the task has no circuit to audit."""
    m, (lo, hi) = signal["mean_logit_diff"], signal["ci"]
    if not signal["does_task"]:
        return (
            f"the model does not do the task (mean logit diff IO - S {m:.3g}, 95% CI [{lo:.3g}, "
            f"{hi:.3g}] not above 0; IO preferred on {signal['frac_io_preferred']:.0%} of "
            "prompts): there is no circuit to find. Computed: each instrument end to end on the "
            f"{n_heads} head(s) patching ranks highest. Not "
            "computable: whether a circuit is faithful (MIB), detectable (EX1), name-fair (EX2) or "
            "Weber-like (EX11); these verdicts say nothing about one"
        )
    if known:
        return ""
    return (
        f"no known circuit for this model: the {n_heads} head(s) scoring >= {frac:g} of the best "
        f"head's patching score (at most {max_heads}) stand in; the audits measure these heads, "
        "and whether they are the model's circuit is not checked against a reference"
    )
