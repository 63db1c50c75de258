"""Shortcut-neuron scores (seed 001): the comparative score (eq. 3) and the causal score (eq. 4),
and their combination into one ranking.

- comparative score (eq. 3): RMS over prompts of the activation difference between the
  contaminated and the uncontaminated model, per (layer, neuron), streamed over prompt batches;
- causal score (eq. 4) of a neuron group N:
  ``C_N = a(M_con) - a_patch(M_con|M0) + 1 - (a(M_un) - a_patch(M_un|M0))``,
  many adjacent-neuron groups per batched generation
  (:func:`kit.shortcut.patching.group_patched_generate`), with a teacher-forced fast variant
  (probability of the reference answer token in place of exact-match accuracy) reported beside it;
- the final ranking combines both (:func:`combine_scores`: comparative ranking, groups whose
  causal score says "ability, not shortcut" vetoed; or the mean of the two percentile ranks).

Targets are single tokens here (the tiny world's answers are one word; exact match is "the
first generated token is the answer", as in ``kit.world.evaluate``). For multi-token answers
pass ``targets`` as lists of ids: exact match then compares the first ``len(target)`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from kit.core.progress import progress_bar
from kit.models import tl
from kit.shortcut.patching import Neuron, group_patched_generate, group_patched_logprobs, hook_name

PAPER_N_PATCHED = 5000
"""Shortcut neurons patched in the paper (section 4.3)."""

PAPER_TOTAL_NEURONS = 32 * 11008
"""MLP neurons of LLaMA2-7B (32 layers x 11008): 5000 of them are the paper's 1.4%."""

PAPER_FRACTION = PAPER_N_PATCHED / PAPER_TOTAL_NEURONS


class ComparativeAccumulator:
    """Streaming eq. 3: add prompt batches with :meth:`update`, read :meth:`scores` at the end.

    Keeps only the running sum of squared differences (float64) and the prompt count, so the
    activations of a whole benchmark are never held at once.
    """

    def __init__(self) -> None:
        self.sum_sq: Tensor | None = None
        self.count = 0

    def update(
        self,
        acts_con: Float[Tensor, "prompt layer d_mlp"],
        acts_un: Float[Tensor, "prompt layer d_mlp"],
    ) -> None:
        if acts_con.shape != acts_un.shape:
            raise ValueError(
                f"acts_con shape {tuple(acts_con.shape)} != acts_un shape {tuple(acts_un.shape)}: "
                "both models must see the same prompts (same order) and have the same layers/d_mlp"
            )
        if acts_con.ndim != 3:
            raise ValueError(
                "activations must be Float[Tensor, 'prompt layer d_mlp'], got shape "
                f"{tuple(acts_con.shape)}"
            )
        diff = acts_con.double() - acts_un.double()
        part = (diff * diff).sum(0)
        self.sum_sq = part if self.sum_sq is None else self.sum_sq + part.to(self.sum_sq.device)
        self.count += acts_con.shape[0]

    def scores(self) -> Float[Tensor, "layer d_mlp"]:
        if self.sum_sq is None or self.count == 0:
            raise ValueError(
                "no prompts were added: the comparative score needs at least one prompt"
            )
        return (self.sum_sq / self.count).sqrt().float()


def comparative_scores(
    acts_con: Float[Tensor, "prompt layer d_mlp"],
    acts_un: Float[Tensor, "prompt layer d_mlp"],
    chunk: int = 256,
) -> Float[Tensor, "layer d_mlp"]:
    """Eq. 3: ``S[l, i] = sqrt(mean over prompts of (a_con[p, l, i] - a_un[p, l, i])^2)``.

    Inputs are the activations at the last prompt token (or, for the all-completion-tokens
    option, one row per completion token, see :func:`neuron_acts`); summed ``chunk`` prompts at a
    time. For activations that do not fit in memory use :class:`ComparativeAccumulator` or
    :func:`comparative_scores_of_models`.

    >>> import torch
    >>> con = torch.tensor([[[1.0, 2.0]], [[3.0, 2.0]]])   # 2 prompts, 1 layer, 2 neurons
    >>> un = torch.tensor([[[0.0, 2.0]], [[0.0, 2.0]]])
    >>> comparative_scores(con, un)                        # sqrt((1 + 9) / 2), 0
    tensor([[2.2361, 0.0000]])
    """
    acc = ComparativeAccumulator()
    if acts_con.shape[0] != acts_un.shape[0]:
        raise ValueError(f"acts_con has {acts_con.shape[0]} prompts, acts_un {acts_un.shape[0]}")
    for start in range(0, acts_con.shape[0], chunk):
        acc.update(acts_con[start : start + chunk], acts_un[start : start + chunk])
    return acc.scores()


@torch.inference_mode()
def neuron_acts(
    model,
    tokens: Int[Tensor, "batch pos"],
    lengths: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    position: Literal["last", "completion"] = "last",
    completion_lengths: Int[Tensor, "batch"] | None = None,  # noqa: F821 (jaxtyping shape name)
) -> Float[Tensor, "row layer d_mlp"]:
    """MLP neuron activations (``blocks.{L}.mlp.hook_post``) of right-padded sequences.

    ``position="last"``: one row per prompt, at its last prompt token ``lengths - 1`` (the
    paper's choice). ``position="completion"``: one row per completion token, the
    ``completion_lengths[i]`` positions after the prompt (``tokens`` then hold prompt + completion).
    """
    if position not in ("last", "completion"):
        raise ValueError(f"position={position!r}; allowed values: 'last', 'completion'")
    names = {hook_name(L) for L in range(model.cfg.n_layers)}
    _, cache = tl.run_with_cache(model, tokens.to(model.cfg.device), names)
    # [b, pos, L, d]
    acts = torch.stack([cache[hook_name(L)] for L in range(model.cfg.n_layers)], dim=2)
    lengths = lengths.to(acts.device)
    if position == "last":
        return acts[torch.arange(acts.shape[0], device=acts.device), lengths - 1].float()
    if completion_lengths is None:
        raise ValueError(
            "position='completion' needs completion_lengths (tokens after each prompt)"
        )
    rows = []
    for i, (length, c) in enumerate(zip(lengths.tolist(), completion_lengths.tolist())):
        rows.append(acts[i, length : length + c])
    return torch.cat(rows).float()


POSITIONS = ("last", "completion")


def comparative_scores_of_models(
    model_con,
    model_un,
    batches: Iterable[tuple[Tensor, Tensor]],
    position: Literal["last", "completion"] = "last",
    max_new_tokens: int = 1,
) -> Float[Tensor, "layer d_mlp"]:
    """Eq. 3 over ``(tokens, lengths)`` batches (right-padded prompts).

    ``position="last"``: the last prompt token (the paper's text, section 3.2). ``"completion"``:
    every token of ``model_con``'s greedy completion (``max_new_tokens`` tokens), both models read
    on that same sequence: the public code's default (``token_type``
    ``completion``/``completion_all`` in its ``activation_processor_SFT.py``, where the contaminated
    model generates the completions).

    The two models are used one after the other, never together (either may be a
    :class:`kit.shortcut.pool.Lazy` handle, loaded at its turn): ``model_con``'s activations are
    kept on the CPU in float32 meanwhile, rows x layers x d_mlp floats (the paper's 657 last-token
    rows of LLaMA2-7B: 0.9 GB; ``completion`` multiplies that by ``max_new_tokens``).
    """
    from kit.shortcut.pool import resolve

    if position not in POSITIONS:
        raise ValueError(f"position={position!r}; allowed values: {', '.join(POSITIONS)}")
    con = resolve(model_con)
    seen = []
    batches = list(batches)
    bar = progress_bar(desc="comparative scores", total=2 * len(batches), unit="batch")
    for tokens, lengths in batches:
        bar.update()
        comp = None
        if position == "completion":
            tokens = group_patched_generate(
                con, None, tokens, [[]], max_new_tokens, lengths=lengths
            )[0].cpu()
            comp = torch.full_like(lengths, max_new_tokens)
        seen.append(
            (tokens, lengths, comp, neuron_acts(con, tokens, lengths, position, comp).cpu())
        )
    del con
    un = resolve(model_un)
    acc = ComparativeAccumulator()
    for tokens, lengths, comp, acts_con in seen:
        bar.update()
        acc.update(acts_con, neuron_acts(un, tokens, lengths, position, comp).cpu())
    bar.close()
    return acc.scores()


def causal_score(acc_con, acc_con_patched, acc_un, acc_un_patched):
    """Eq. 4: ``C = a(M_con) - a_patch(M_con|M0) + 1 - (a(M_un) - a_patch(M_un|M0))``.

    Accuracies are fractions in [0, 1] (scalars or arrays of the same shape). High when patching
    lowers the contaminated model's accuracy and leaves the uncontaminated model's alone;
    1 when the patch changes nothing.

    >>> causal_score(0.9, 0.4, 0.5, 0.45)   # 0.9 - 0.4 + 1 - (0.5 - 0.45)
    1.45
    """
    vals = {
        "acc_con": acc_con,
        "acc_con_patched": acc_con_patched,
        "acc_un": acc_un,
        "acc_un_patched": acc_un_patched,
    }
    arrs = {}
    for name, v in vals.items():
        a = np.asarray(v.cpu() if isinstance(v, Tensor) else v, dtype=float)
        if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
            raise ValueError(
                f"{name} must be accuracies in [0, 1] (fractions, not percent); got {v!r}"
            )
        arrs[name] = a
    c = arrs["acc_con"] - arrs["acc_con_patched"] + 1 - (arrs["acc_un"] - arrs["acc_un_patched"])
    return float(c) if c.ndim == 0 else c


def neuron_groups(
    n_layers: int, d_mlp: int, group_size: int, layers: Sequence[int] | None = None
) -> list[list[Neuron]]:
    """Adjacent-neuron groups (the paper uses 512 per group): ``[(L, i), ..., (L, i + size - 1)]``,
    layer by layer; the last group of a layer may be smaller."""
    if group_size < 1:
        raise ValueError(f"group_size={group_size} must be >= 1")
    layers = range(n_layers) if layers is None else layers
    return [
        [(L, i) for i in range(s, min(s + group_size, d_mlp))]
        for L in layers
        for s in range(0, d_mlp, group_size)
    ]


def _targets_list(targets) -> list[list[int]]:
    if isinstance(targets, Tensor):
        return (
            [[int(t)] for t in targets.tolist()]
            if targets.ndim == 1
            else [list(map(int, r)) for r in targets.tolist()]
        )
    return [[int(t)] if isinstance(t, (int, np.integer)) else list(map(int, t)) for t in targets]


def exact_match(
    generated: Int[Tensor, "group batch pos_plus_new"],
    lengths: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    targets,
) -> Bool[Tensor, "group batch"]:
    """Whether the tokens right after each (right-padded) prompt equal its target ids."""
    tl = _targets_list(targets)
    G, P, _ = generated.shape
    out = torch.zeros(G, P, dtype=torch.bool)
    gen = generated.cpu()
    for p, (length, t) in enumerate(zip(lengths.tolist(), tl)):
        seg = gen[:, p, length : length + len(t)]
        if seg.shape[1] < len(t):
            continue
        out[:, p] = (seg == torch.tensor(t)).all(1)
    return out


def group_accuracy(
    model,
    patching_model,
    tokens: Int[Tensor, "batch pos"],
    lengths: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    targets,
    groups: Sequence[Sequence[Neuron]],
    *,
    method: Literal["exact", "teacher_forced"] = "exact",
    max_new_tokens: int | None = None,
    max_rows: int = 2048,
) -> Float[Tensor, "group"]:  # noqa: F821 (jaxtyping shape name)
    """Accuracy of ``model`` with each group patched from ``patching_model``, all groups batched.

    ``method="exact"``: dynamic-patching greedy generation, exact match of the target ids.
    ``method="teacher_forced"``: mean probability of the (first) target token at the prompt's last
    position, the fast option (no generation; only the layers from the first patched one run
    per group). Right-padded prompts (``lengths``).
    """
    if method == "exact":
        tl = _targets_list(targets)
        n_new = max_new_tokens or max(len(t) for t in tl)
        gen = group_patched_generate(
            model, patching_model, tokens, groups, n_new, lengths=lengths, max_rows=max_rows
        )
        return exact_match(gen, lengths, tl).float().mean(1)
    if method == "teacher_forced":
        first = torch.tensor([t[0] for t in _targets_list(targets)])
        lp, _ = group_patched_logprobs(
            model, patching_model, tokens, lengths - 1, first, groups, max_rows=max_rows
        )
        return lp.exp().mean(1).cpu()
    raise ValueError(f"method={method!r}; allowed values: 'exact', 'teacher_forced'")


@dataclass
class CausalScores:
    """Eq. 4 per group, with the four accuracies it is made of."""

    groups: list[list[Neuron]]
    acc_con: float
    acc_un: float
    acc_con_patched: np.ndarray
    acc_un_patched: np.ndarray
    score: np.ndarray
    method: str

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "layer": [g[0][0] for g in self.groups],
                "first": [g[0][1] for g in self.groups],
                "size": [len(g) for g in self.groups],
                "acc_con_patched": self.acc_con_patched,
                "acc_un_patched": self.acc_un_patched,
                "causal_score": self.score,
            }
        )

    def per_neuron(self, n_layers: int, d_mlp: int) -> Float[Tensor, "layer d_mlp"]:
        """Each neuron gets its group's score (NaN where no group covers it)."""
        out = torch.full((n_layers, d_mlp), float("nan"))
        for g, s in zip(self.groups, self.score):
            for L, i in g:
                out[L, i] = float(s)
        return out


def causal_scores(
    model_con,
    model_un,
    base,
    tokens: Int[Tensor, "batch pos"],
    lengths: Int[Tensor, "batch"],  # noqa: F821 (jaxtyping shape name)
    targets,
    groups: Sequence[Sequence[Neuron]],
    *,
    method: Literal["exact", "teacher_forced"] = "exact",
    max_rows: int = 2048,
) -> CausalScores:
    """Eq. 4 for every group, ``base`` (M0) patching ``model_con`` and ``model_un`` on the
    contaminated prompts; the unpatched accuracies come from the same code path (empty group)."""
    from kit.shortcut.pool import resolve

    groups = [list(g) for g in groups]
    allg = [[]] + groups
    con = group_accuracy(
        resolve(model_con), base, tokens, lengths, targets, allg, method=method, max_rows=max_rows
    ).numpy()
    un = group_accuracy(
        resolve(model_un), base, tokens, lengths, targets, allg, method=method, max_rows=max_rows
    ).numpy()
    score = causal_score(np.full(len(groups), con[0]), con[1:], np.full(len(groups), un[0]), un[1:])
    return CausalScores(
        groups, float(con[0]), float(un[0]), con[1:], un[1:], np.atleast_1d(score), method
    )


def _pct_rank(x: Tensor) -> Tensor:
    """Percentile rank in (0, 1], ties averaged; NaN ranks lowest (0)."""
    flat = x.flatten().double()
    nan = torch.isnan(flat)
    s = pd.Series(flat.numpy()).rank(method="average", pct=True, na_option="keep")
    out = torch.tensor(s.fillna(0.0).to_numpy())
    out[nan] = 0.0
    return out.view_as(x).float()


COMBINE_RULES = ("veto", "rank_mean", "sum")


def combine_scores(
    comparative: Float[Tensor, "layer d_mlp"],
    causal: Float[Tensor, "layer d_mlp"] | None,
    rule: Literal["veto", "rank_mean", "sum"] = "veto",
    causal_weight: float = 0.5,
) -> Float[Tensor, "layer d_mlp"]:
    """Final shortcut score of every neuron from eq. 3 (per neuron) and eq. 4 (per group).

    The paper does not say how the two are combined; its public code (``src/change_scores_SFT.py``)
    adds them. The rules offered (notebook 03 compares them on held-out items and, with
    ``combine: held_out``, uses the best):

    - ``"sum"``, the public code's: ``S + C - 1`` in raw units, i.e. the RMS activation difference
      plus ``(a_con - a_con_patched) - (a_un - a_un_patched)`` as fractions; unscored neurons
      (NaN) get ``C - 1 = 0``. The two terms are on different scales (activation units vs
      accuracy), so which one dominates depends on the model's activation size;
    - ``"veto"``: neurons rank by the comparative score, except that neurons of groups with ``C <
      1`` (patching them hurt the clean model more than the contaminated one: ability, not shortcut)
      rank below all others; unscored neurons are never vetoed;
    - ``"rank_mean"``: ``w * pct_rank(causal) + (1 - w) * pct_rank(comparative)`` (percentile ranks
      make activation and accuracy units commensurable); unscored neurons get causal rank 0.

    ``causal=None``: eq. 3 alone (its percentile rank).
    """
    if rule not in COMBINE_RULES:
        raise ValueError(f"rule={rule!r}; allowed values: {', '.join(COMBINE_RULES)}")
    if not 0 <= causal_weight <= 1:
        raise ValueError(f"causal_weight={causal_weight} must be in [0, 1]")
    if causal is None:
        return _pct_rank(comparative)
    if causal.shape != comparative.shape:
        raise ValueError(
            f"causal shape {tuple(causal.shape)} != comparative shape {tuple(comparative.shape)}"
        )
    if rule == "veto":
        comp = _pct_rank(comparative)
        return torch.where(causal < 1, comp - 1, comp)  # NaN < 1 is False: unscored neurons stay
    if rule == "sum":
        return comparative.float() + torch.nan_to_num(causal.float() - 1, nan=0.0)
    return causal_weight * _pct_rank(causal) + (1 - causal_weight) * _pct_rank(comparative)


def top_neurons(score: Float[Tensor, "layer d_mlp"], n: int) -> list[Neuron]:
    """The ``n`` highest-scoring (layer, index) pairs, best first (ties: lower layer, index
    first)."""
    if not 0 <= n <= score.numel():
        raise ValueError(f"n={n} must be in 0..{score.numel()} (layers x d_mlp)")
    flat = score.flatten()
    order = torch.from_numpy(np.argsort(-flat.numpy(), kind="stable"))[:n]
    d = score.shape[1]
    return [(int(k) // d, int(k) % d) for k in order]


def random_neurons(n_layers: int, d_mlp: int, n: int, seed: int = 0) -> list[Neuron]:
    """``n`` distinct neurons drawn uniformly (seeded), the sparsity curve's control."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randperm(n_layers * d_mlp, generator=g)[:n]
    return [(int(k) // d_mlp, int(k) % d_mlp) for k in idx]


def default_n_patched(n_layers: int, d_mlp: int, fraction: float = PAPER_FRACTION) -> int:
    """The paper's 5000 of LLaMA2-7B's 352,256 MLP neurons (1.42%), scaled to this model."""
    return max(1, round(fraction * n_layers * d_mlp))
