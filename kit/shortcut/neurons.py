"""Shortcut neurons (seed 001): locate them, patch them, evaluate trustworthily.

- comparative score (eq. 3): RMS over prompts of the activation difference between the
  contaminated and the uncontaminated model, per (layer, neuron), streamed over prompt batches;
- causal score (eq. 4) of a neuron group N:
  ``C_N = a(M_con) - a_patch(M_con|M0) + 1 - (a(M_un) - a_patch(M_un|M0))``,
  many adjacent-neuron groups per batched generation (:func:`kit.shortcut.patching.group_patched_generate`),
  with a teacher-forced fast variant (probability of the reference answer token in place of
  exact-match accuracy) reported beside it;
- the final ranking combines both (:func:`combine_scores`: comparative ranking, groups whose
  causal score says "ability, not shortcut" vetoed; or the mean of the two percentile ranks);
- trustworthy evaluation (TE): patch the top-N neurons of the model under test with the base
  model's activations (section 3.4); sparsity curve; agreement with a reference score.

Targets are single tokens here (the tiny world's answers are one word; exact match is "the
first generated token is the answer", as in ``kit.world.evaluate``). For multi-token answers
pass ``targets`` as lists of ids: exact match then compares the first ``len(target)`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from kit.shortcut.patching import Neuron, group_patched_generate, group_patched_logprobs, hook_name
from kit.models import tl

if TYPE_CHECKING:
    from kit.models.generate import GenerationSettings
    from kit.shortcut.pool import Lazy, ModelPool

PAPER_N_PATCHED = 5000
"""Shortcut neurons patched in the paper (section 4.3)."""
PAPER_TOTAL_NEURONS = 32 * 11008
"""MLP neurons of LLaMA2-7B (32 layers x 11008): 5000 of them are the paper's 1.4%."""
PAPER_FRACTION = PAPER_N_PATCHED / PAPER_TOTAL_NEURONS


# --------------------------------------------------------------------------- comparative score
class ComparativeAccumulator:
    """Streaming eq. 3: add prompt batches with :meth:`update`, read :meth:`scores` at the end.

    Keeps only the running sum of squared differences (float64) and the prompt count, so the
    activations of a whole benchmark are never held at once.
    """

    def __init__(self) -> None:
        self.sum_sq: Tensor | None = None
        self.count = 0

    def update(self, acts_con: Float[Tensor, "prompt layer d_mlp"], acts_un: Float[Tensor, "prompt layer d_mlp"]) -> None:
        if acts_con.shape != acts_un.shape:
            raise ValueError(f"acts_con shape {tuple(acts_con.shape)} != acts_un shape {tuple(acts_un.shape)}: "
                             "both models must see the same prompts (same order) and have the same layers/d_mlp")
        if acts_con.ndim != 3:
            raise ValueError(f"activations must be Float[Tensor, 'prompt layer d_mlp'], got shape {tuple(acts_con.shape)}")
        diff = acts_con.double() - acts_un.double()
        part = (diff * diff).sum(0)
        self.sum_sq = part if self.sum_sq is None else self.sum_sq + part.to(self.sum_sq.device)
        self.count += acts_con.shape[0]

    def scores(self) -> Float[Tensor, "layer d_mlp"]:
        if self.sum_sq is None or self.count == 0:
            raise ValueError("no prompts were added: the comparative score needs at least one prompt")
        return (self.sum_sq / self.count).sqrt().float()


def comparative_scores(acts_con: Float[Tensor, "prompt layer d_mlp"], acts_un: Float[Tensor, "prompt layer d_mlp"],
                       chunk: int = 256) -> Float[Tensor, "layer d_mlp"]:
    """Eq. 3: ``S[l, i] = sqrt(mean over prompts of (a_con[p, l, i] - a_un[p, l, i])^2)``.

    Inputs are the activations at the last prompt token (or, for the all-completion-tokens
    option, one row per completion token, see :func:`neuron_acts`); summed ``chunk`` prompts at a
    time. For activations that do not fit in memory use :class:`ComparativeAccumulator` or
    :func:`comparative_scores_of_models`.
    """
    acc = ComparativeAccumulator()
    if acts_con.shape[0] != acts_un.shape[0]:
        raise ValueError(f"acts_con has {acts_con.shape[0]} prompts, acts_un {acts_un.shape[0]}")
    for start in range(0, acts_con.shape[0], chunk):
        acc.update(acts_con[start : start + chunk], acts_un[start : start + chunk])
    return acc.scores()


@torch.inference_mode()
def neuron_acts(model, tokens: Int[Tensor, "batch pos"], lengths: Int[Tensor, "batch"],
                position: Literal["last", "completion"] = "last",
                completion_lengths: Int[Tensor, "batch"] | None = None) -> Float[Tensor, "row layer d_mlp"]:
    """MLP neuron activations (``blocks.{L}.mlp.hook_post``) of right-padded sequences.

    ``position="last"``: one row per prompt, at its last prompt token ``lengths - 1`` (the
    paper's choice). ``position="completion"``: one row per completion token, the
    ``completion_lengths[i]`` positions after the prompt (``tokens`` then hold prompt + completion).
    """
    if position not in ("last", "completion"):
        raise ValueError(f"position={position!r}; allowed values: 'last', 'completion'")
    names = {hook_name(L) for L in range(model.cfg.n_layers)}
    _, cache = tl.run_with_cache(model, tokens.to(model.cfg.device), names)
    acts = torch.stack([cache[hook_name(L)] for L in range(model.cfg.n_layers)], dim=2)  # [b, pos, L, d]
    lengths = lengths.to(acts.device)
    if position == "last":
        return acts[torch.arange(acts.shape[0], device=acts.device), lengths - 1].float()
    if completion_lengths is None:
        raise ValueError("position='completion' needs completion_lengths (tokens after each prompt)")
    rows = []
    for i, (l, c) in enumerate(zip(lengths.tolist(), completion_lengths.tolist())):
        rows.append(acts[i, l : l + c])
    return torch.cat(rows).float()


POSITIONS = ("last", "completion")


def comparative_scores_of_models(model_con, model_un, batches: Iterable[tuple[Tensor, Tensor]],
                                 position: Literal["last", "completion"] = "last",
                                 max_new_tokens: int = 1) -> Float[Tensor, "layer d_mlp"]:
    """Eq. 3 over ``(tokens, lengths)`` batches (right-padded prompts).

    ``position="last"``: the last prompt token (the paper's text, section 3.2). ``"completion"``:
    every token of ``model_con``'s greedy completion (``max_new_tokens`` tokens), both models read on
    that same sequence: the public code's default (``token_type`` ``completion``/``completion_all`` in
    its ``activation_processor_SFT.py``, where the contaminated model generates the completions).

    The two models are used one after the other, never together (either may be a
    :class:`kit.shortcut.pool.Lazy` handle, loaded at its turn): ``model_con``'s activations are kept
    on the CPU in float32 meanwhile, rows x layers x d_mlp floats (the paper's 657 last-token rows of
    LLaMA2-7B: 0.9 GB; ``completion`` multiplies that by ``max_new_tokens``).
    """
    from kit.shortcut.pool import resolve

    if position not in POSITIONS:
        raise ValueError(f"position={position!r}; allowed values: {', '.join(POSITIONS)}")
    con = resolve(model_con)
    seen = []
    for tokens, lengths in batches:
        comp = None
        if position == "completion":
            tokens = group_patched_generate(con, None, tokens, [[]], max_new_tokens, lengths=lengths)[0].cpu()
            comp = torch.full_like(lengths, max_new_tokens)
        seen.append((tokens, lengths, comp, neuron_acts(con, tokens, lengths, position, comp).cpu()))
    del con
    un = resolve(model_un)
    acc = ComparativeAccumulator()
    for tokens, lengths, comp, acts_con in seen:
        acc.update(acts_con, neuron_acts(un, tokens, lengths, position, comp).cpu())
    return acc.scores()


# --------------------------------------------------------------------------- causal score
def causal_score(acc_con, acc_con_patched, acc_un, acc_un_patched):
    """Eq. 4: ``C = a(M_con) - a_patch(M_con|M0) + 1 - (a(M_un) - a_patch(M_un|M0))``.

    Accuracies are fractions in [0, 1] (scalars or arrays of the same shape). High when patching
    lowers the contaminated model's accuracy and leaves the uncontaminated model's alone;
    1 when the patch changes nothing.
    """
    vals = {"acc_con": acc_con, "acc_con_patched": acc_con_patched, "acc_un": acc_un, "acc_un_patched": acc_un_patched}
    arrs = {}
    for name, v in vals.items():
        a = np.asarray(v.cpu() if isinstance(v, Tensor) else v, dtype=float)
        if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
            raise ValueError(f"{name} must be accuracies in [0, 1] (fractions, not percent); got {v!r}")
        arrs[name] = a
    c = arrs["acc_con"] - arrs["acc_con_patched"] + 1 - (arrs["acc_un"] - arrs["acc_un_patched"])
    return float(c) if c.ndim == 0 else c


def neuron_groups(n_layers: int, d_mlp: int, group_size: int, layers: Sequence[int] | None = None) -> list[list[Neuron]]:
    """Adjacent-neuron groups (the paper uses 512 per group): ``[(L, i), ..., (L, i + size - 1)]``,
    layer by layer; the last group of a layer may be smaller."""
    if group_size < 1:
        raise ValueError(f"group_size={group_size} must be >= 1")
    layers = range(n_layers) if layers is None else layers
    return [[(L, i) for i in range(s, min(s + group_size, d_mlp))] for L in layers for s in range(0, d_mlp, group_size)]


def _targets_list(targets) -> list[list[int]]:
    if isinstance(targets, Tensor):
        return [[int(t)] for t in targets.tolist()] if targets.ndim == 1 else [list(map(int, r)) for r in targets.tolist()]
    return [[int(t)] if isinstance(t, (int, np.integer)) else list(map(int, t)) for t in targets]


def exact_match(generated: Int[Tensor, "group batch pos_plus_new"], lengths: Int[Tensor, "batch"],
                targets) -> Bool[Tensor, "group batch"]:
    """Whether the tokens right after each (right-padded) prompt equal its target ids."""
    tl = _targets_list(targets)
    G, P, _ = generated.shape
    out = torch.zeros(G, P, dtype=torch.bool)
    gen = generated.cpu()
    for p, (l, t) in enumerate(zip(lengths.tolist(), tl)):
        seg = gen[:, p, l : l + len(t)]
        if seg.shape[1] < len(t):
            continue
        out[:, p] = (seg == torch.tensor(t)).all(1)
    return out


def group_accuracy(model, patching_model, tokens: Int[Tensor, "batch pos"], lengths: Int[Tensor, "batch"],
                   targets, groups: Sequence[Sequence[Neuron]], *, method: Literal["exact", "teacher_forced"] = "exact",
                   max_new_tokens: int | None = None, max_rows: int = 2048) -> Float[Tensor, "group"]:
    """Accuracy of ``model`` with each group patched from ``patching_model``, all groups batched.

    ``method="exact"``: dynamic-patching greedy generation, exact match of the target ids.
    ``method="teacher_forced"``: mean probability of the (first) target token at the prompt's last
    position, the fast option (no generation; only the layers from the first patched one run
    per group). Right-padded prompts (``lengths``).
    """
    if method == "exact":
        tl = _targets_list(targets)
        n_new = max_new_tokens or max(len(t) for t in tl)
        gen = group_patched_generate(model, patching_model, tokens, groups, n_new, lengths=lengths, max_rows=max_rows)
        return exact_match(gen, lengths, tl).float().mean(1)
    if method == "teacher_forced":
        first = torch.tensor([t[0] for t in _targets_list(targets)])
        lp, _ = group_patched_logprobs(model, patching_model, tokens, lengths - 1, first, groups, max_rows=max_rows)
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
        return pd.DataFrame({
            "layer": [g[0][0] for g in self.groups], "first": [g[0][1] for g in self.groups],
            "size": [len(g) for g in self.groups], "acc_con_patched": self.acc_con_patched,
            "acc_un_patched": self.acc_un_patched, "causal_score": self.score,
        })

    def per_neuron(self, n_layers: int, d_mlp: int) -> Float[Tensor, "layer d_mlp"]:
        """Each neuron gets its group's score (NaN where no group covers it)."""
        out = torch.full((n_layers, d_mlp), float("nan"))
        for g, s in zip(self.groups, self.score):
            for L, i in g:
                out[L, i] = float(s)
        return out


def causal_scores(model_con, model_un, base, tokens: Int[Tensor, "batch pos"], lengths: Int[Tensor, "batch"],
                  targets, groups: Sequence[Sequence[Neuron]], *, method: Literal["exact", "teacher_forced"] = "exact",
                  max_rows: int = 2048) -> CausalScores:
    """Eq. 4 for every group, ``base`` (M0) patching ``model_con`` and ``model_un`` on the
    contaminated prompts; the unpatched accuracies come from the same code path (empty group)."""
    from kit.shortcut.pool import resolve

    groups = [list(g) for g in groups]
    allg = [[]] + groups
    con = group_accuracy(resolve(model_con), base, tokens, lengths, targets, allg, method=method, max_rows=max_rows).numpy()
    un = group_accuracy(resolve(model_un), base, tokens, lengths, targets, allg, method=method, max_rows=max_rows).numpy()
    score = causal_score(np.full(len(groups), con[0]), con[1:], np.full(len(groups), un[0]), un[1:])
    return CausalScores(groups, float(con[0]), float(un[0]), con[1:], un[1:], np.atleast_1d(score), method)


# --------------------------------------------------------------------------- ranking
def _pct_rank(x: Tensor) -> Tensor:
    """Percentile rank in (0, 1], ties averaged; NaN ranks lowest (0)."""
    flat = x.flatten().double()
    nan = torch.isnan(flat)
    s = pd.Series(flat.numpy()).rank(method="average", pct=True, na_option="keep")
    out = torch.tensor(s.fillna(0.0).to_numpy())
    out[nan] = 0.0
    return out.view_as(x).float()


COMBINE_RULES = ("veto", "rank_mean", "sum")


def combine_scores(comparative: Float[Tensor, "layer d_mlp"], causal: Float[Tensor, "layer d_mlp"] | None,
                   rule: Literal["veto", "rank_mean", "sum"] = "veto", causal_weight: float = 0.5) -> Float[Tensor, "layer d_mlp"]:
    """Final shortcut score of every neuron from eq. 3 (per neuron) and eq. 4 (per group).

    The paper does not say how the two are combined; its public code (``src/change_scores_SFT.py``)
    adds them. The rules offered (notebook 03 compares them on held-out items and, with
    ``combine: held_out``, uses the best):

    - ``"sum"``, the public code's: ``S + C - 1`` in raw units, i.e. the RMS activation difference
      plus ``(a_con - a_con_patched) - (a_un - a_un_patched)`` as fractions; unscored neurons
      (NaN) get ``C - 1 = 0``. The two terms are on different scales (activation units vs
      accuracy), so which one dominates depends on the model's activation size;
    - ``"veto"``: neurons rank by the comparative score, except that neurons of groups with ``C < 1``
      (patching them hurt the clean model more than the contaminated one: ability, not shortcut)
      rank below all others; unscored neurons are never vetoed;
    - ``"rank_mean"``: ``w * pct_rank(causal) + (1 - w) * pct_rank(comparative)`` (percentile ranks make
      activation and accuracy units commensurable); unscored neurons get causal rank 0.

    ``causal=None``: eq. 3 alone (its percentile rank).
    """
    if rule not in COMBINE_RULES:
        raise ValueError(f"rule={rule!r}; allowed values: {', '.join(COMBINE_RULES)}")
    if not 0 <= causal_weight <= 1:
        raise ValueError(f"causal_weight={causal_weight} must be in [0, 1]")
    if causal is None:
        return _pct_rank(comparative)
    if causal.shape != comparative.shape:
        raise ValueError(f"causal shape {tuple(causal.shape)} != comparative shape {tuple(comparative.shape)}")
    if rule == "veto":
        comp = _pct_rank(comparative)
        return torch.where(causal < 1, comp - 1, comp)  # NaN < 1 is False: unscored neurons stay
    if rule == "sum":
        return comparative.float() + torch.nan_to_num(causal.float() - 1, nan=0.0)
    return causal_weight * _pct_rank(causal) + (1 - causal_weight) * _pct_rank(comparative)


def top_neurons(score: Float[Tensor, "layer d_mlp"], n: int) -> list[Neuron]:
    """The ``n`` highest-scoring (layer, index) pairs, best first (ties: lower layer, index first)."""
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


# --------------------------------------------------------------------------- evaluation
def patched_accuracy(model, base, tokens, lengths, targets, neuron_sets: Sequence[Sequence[Neuron]],
                     max_rows: int = 2048) -> np.ndarray:
    """Exact-match accuracy of ``model`` with each neuron set patched from ``base`` (TE when the
    set is the located top-N; the empty set gives Ori)."""
    return group_accuracy(model, base, tokens, lengths, targets, neuron_sets, method="exact", max_rows=max_rows).numpy()


def sparsity_curve(model_con, model_un, base, tokens, lengths, targets, ranked: Sequence[Neuron], ns: Sequence[int],
                   seed: int = 0, max_rows: int = 2048, data: "TaskData | None" = None,
                   max_new_tokens: int | None = None) -> pd.DataFrame:
    """Figure 3: accuracy vs number of patched neurons, located (top of ``ranked``) vs random.

    Long format: columns ``model`` (contaminated/uncontaminated), ``neurons`` (located/random),
    ``n``, ``accuracy``. All N of one model run as groups of one batched generation.
    """
    from kit.shortcut.pool import resolve

    n_layers, d_mlp = base.cfg.n_layers, base.cfg.d_mlp
    located = [list(ranked[:n]) for n in ns]
    rand = [random_neurons(n_layers, d_mlp, n, seed=seed + k) for k, n in enumerate(ns)]
    rows = []
    for label, m in (("contaminated", model_con), ("uncontaminated", model_un)):
        m = resolve(m)  # Lazy handles: one model at a time
        if data is not None:  # study path: also handles free-text benchmarks
            acc = accuracies(m, base, data, located + rand, max_rows, max_new_tokens)
        else:
            acc = patched_accuracy(m, base, tokens, lengths, targets, located + rand, max_rows=max_rows)
        for k, n in enumerate(ns):
            rows.append({"model": label, "neurons": "located", "n": n, "accuracy": acc[k]})
            rows.append({"model": label, "neurons": "random", "n": n, "accuracy": acc[len(ns) + k]})
    return pd.DataFrame(rows)


def agreement(scores: Sequence[float], reference: Sequence[float]) -> dict[str, float]:
    """Spearman rho and RMSE of the least-squares line ``scores ~ a * reference + b`` (Figure 4's
    rho and e), plus the mean absolute difference. Same units in, same units out. A constant
    reference defines no line (slope, intercept and rho NaN): e is then the spread of ``scores``
    about their mean, the best any fit on a constant reference can do."""
    from scipy.stats import spearmanr

    x = np.asarray(reference, dtype=float)
    y = np.asarray(scores, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(f"scores and reference must be 1-D of the same length >= 3; got {y.shape} and {x.shape}")
    rho = spearmanr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else float("nan")
    if np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
    else:
        slope, intercept, resid = float("nan"), float("nan"), y - y.mean()
    return {"spearman": float(rho), "rmse": float(np.sqrt(np.mean(resid**2))), "slope": float(slope),
            "intercept": float(intercept), "mean_abs_diff": float(np.mean(np.abs(y - x)))}


def table9_agreement(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Figure 4 (right) recomputed from the printed Table 9: TE vs Ref and Ori vs Ref (MixEval)."""
    if table is None:
        from kit.data.paper_tables import load_table

        table = load_table("001_table09_real_world_models")
    rows = []
    for col in ("te", "ori"):
        a = agreement(table[col].to_numpy(float), table["ref_mixeval"].to_numpy(float))
        rows.append({"score": col.upper(), **a})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures and findings
def plot_sparsity_curve(curve: pd.DataFrame, total_neurons: int, n_selected: int | None = None):
    """Figure 3 analogue: accuracy vs patched neurons (% of all MLP neurons)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.0))
    styles = {("contaminated", "located"): ("C3", "-"), ("contaminated", "random"): ("C3", ":"),
              ("uncontaminated", "located"): ("C0", "-"), ("uncontaminated", "random"): ("C0", ":")}
    for (model, kind), sub in curve.groupby(["model", "neurons"]):
        sub = sub.sort_values("n")
        c, ls = styles[(model, kind)]
        ax.plot(100 * sub["n"] / total_neurons, 100 * sub["accuracy"], color=c, ls=ls, marker="o", ms=3,
                label=f"{model}, {kind}")
    if n_selected:
        ax.axvline(100 * n_selected / total_neurons, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("patched neurons (% of MLP neurons)")
    ax.set_ylabel("accuracy on the contaminated test (%)")
    ax.legend(frameon=False)
    return fig


def plot_agreement(table: pd.DataFrame, ref_col: str = "ref", cols: Sequence[str] = ("te", "ori"),
                   label_col: str = "variant", title: str = ""):
    """Figure 4 analogue: each score against the reference, with rho and RMSE in the legend."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cols), figsize=(3.3 * len(cols), 3.0), sharex=True, sharey=True)
    axes = np.atleast_1d(axes)
    x = table[ref_col].to_numpy(float)
    for ax, col in zip(axes, cols):
        y = table[col].to_numpy(float)
        a = agreement(y, x)
        ax.scatter(x, y, s=14)
        xs = np.linspace(np.nanmin(x), np.nanmax(x), 10)
        if np.isfinite(a["slope"]):
            ax.plot(xs, a["slope"] * xs + a["intercept"], lw=0.8, color="C1")
        lo, hi = min(np.nanmin(x), np.nanmin(y)), max(np.nanmax(x), np.nanmax(y))
        ax.plot([lo, hi], [lo, hi], lw=0.6, color="gray", ls="--")
        if label_col in table:
            for xi, yi, t in zip(x, y, table[label_col]):
                ax.annotate(str(t), (xi, yi), fontsize=6, alpha=0.7)
        ax.set_title(f"{col.upper()} vs {ref_col}: rho={a['spearman']:.3f}, e={a['rmse']:.2f}")
        ax.set_xlabel(f"{ref_col} (%)")
        ax.set_ylabel(f"{col.upper()} (%)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def table2_summary(table: pd.DataFrame) -> dict[str, float]:
    """Mean |TE - Ref| and |Ori - Ref| over contaminated and uncontaminated rows, mean |Δacc|.

    ``table`` has columns ``contaminated`` (bool), ``ref``, ``ori``, ``te`` (in %).
    """
    out = {}
    for label, sub in (("contaminated", table[table.contaminated]), ("uncontaminated", table[~table.contaminated])):
        if len(sub) == 0:
            continue
        out[f"{label}_mean_abs_te_minus_ref"] = float((sub.te - sub.ref).abs().mean())
        out[f"{label}_mean_abs_ori_minus_ref"] = float((sub.ori - sub.ref).abs().mean())
        out[f"{label}_mean_delta_acc"] = float((sub.te - sub.ori).mean())
        out[f"{label}_mean_abs_delta_acc"] = float((sub.te - sub.ori).abs().mean())
        rel = 100 * (sub.te - sub.ori) / sub.ori.where(sub.ori > 0)  # the paper's "drop of 37%" is relative to Ori
        out[f"{label}_mean_relative_delta_acc"] = float(rel.mean())
        out[f"{label}_mean_abs_relative_delta_acc"] = float(rel.abs().mean())
    return out


def paper_relative_changes(exclude_clean: Sequence[str] = ("+GSM8K Train",)) -> dict[str, float]:
    """Relative Δacc (% of Ori) recomputed from the printed Table 2: the mean drop of contaminated rows
    (the text's 37%) and the mean |change| of clean rows without ``exclude_clean`` (the text's 3%:
    2.7% without +GSM8K Train, 5.4% with it; the text does not say which rows it averaged)."""
    from kit.data.paper_tables import load_table

    t = load_table("001_table02_trustworthy_eval_gsm8k")
    t = t[t.model_variant != "Vanilla"].assign(ori=lambda d: d.ori.astype(float), te=lambda d: d.te.astype(float))
    rel = 100 * (t.te - t.ori) / t.ori
    con = t.model_variant.str.contains("GSM-i")
    clean = ~con & ~t.model_variant.isin(list(exclude_clean))
    return {"con_drop_table2": float(-rel[con].mean()), "un_change_table2": float(rel[clean].abs().mean()),
            "un_change_table2_all_clean": float(rel[~con].abs().mean())}


def paper_text_numbers() -> dict[str, float]:
    """The running-text numbers the findings compare against, loaded from ``001_text_numbers.csv``."""
    from kit.data.paper_tables import load_table

    t = load_table("001_text_numbers", numeric=False).set_index("quantity")["value"]

    def pick(fragment: str) -> float:
        hits = [v for k, v in t.items() if fragment in k]
        return float(hits[0].replace(",", ""))

    return {"rho": pick("Spearman correlation of TE"), "con_drop": pick("average accuracy drop of contaminated"),
            "un_change": pick("average accuracy change of uncontaminated"), "percent": pick("share of LLaMA2-7B")}


def findings(summary: dict[str, float], n_patched: int, total_neurons: int,
                  agree_te: dict[str, float] | None = None, agree_ori: dict[str, float] | None = None,
                  paper: dict[str, float] | None = None) -> list[str]:
    """A short plain-text summary of Table 2 / Figure 4 numbers; ``paper`` (from
    :func:`paper_text_numbers`) adds the published values beside ours, labelled as such."""
    paper = paper or {}
    lines = [f"Patched {n_patched} of {total_neurons} MLP neurons ({100 * n_patched / total_neurons:.2f}%"
             + (f"; paper: {paper['percent']}% of LLaMA2-7B)." if "percent" in paper else ").")]
    if "contaminated_mean_abs_te_minus_ref" in summary:
        c_te, c_ori = summary["contaminated_mean_abs_te_minus_ref"], summary["contaminated_mean_abs_ori_minus_ref"]
        verdict = (f"TE is {c_ori - c_te:.1f} pts closer to" if c_te < c_ori
                   else f"TE is NOT closer to ({c_te - c_ori:.1f} pts farther from)")
        lines.append(f"Contaminated models: mean |Ori-Ref| = {c_ori:.1f} pts, mean |TE-Ref| = {c_te:.1f} pts "
                     f"({verdict} the fresh-item score); mean Δacc = {summary['contaminated_mean_delta_acc']:+.1f} pts.")
    if "uncontaminated_mean_abs_delta_acc" in summary:
        u = summary["uncontaminated_mean_abs_delta_acc"]
        c = summary.get("contaminated_mean_abs_delta_acc", float("nan"))
        ur = summary["uncontaminated_mean_abs_relative_delta_acc"]
        cr = -summary.get("contaminated_mean_relative_delta_acc", float("nan"))
        lines.append(f"Uncontaminated models move by {u:.1f} pts on average vs {c:.1f} pts for contaminated "
                     f"({'less' if u < c else 'NOT less'}); relative to Ori, as the paper counts: clean |change| "
                     f"{ur:.1f}%, contaminated drop {cr:.1f}%"
                     + (f" (paper text: {paper['un_change']:g}% and {paper['con_drop']:g}%" if "con_drop" in paper else "")
                     + (f"; recomputed from its Table 2: {paper['un_change_table2']:.1f}% (clean rows without +GSM8K "
                        f"Train; {paper['un_change_table2_all_clean']:.1f}% with it) and {paper['con_drop_table2']:.1f}%"
                        if "con_drop_table2" in paper else "") + (")." if "con_drop" in paper or "con_drop_table2" in paper else "."))
    if "uncontaminated_mean_abs_te_minus_ref" in summary:
        u_te, u_ori = summary["uncontaminated_mean_abs_te_minus_ref"], summary["uncontaminated_mean_abs_ori_minus_ref"]
        lines.append(f"Clean models: mean |TE-Ref| = {u_te:.1f} vs |Ori-Ref| = {u_ori:.1f} pts: TE moves them "
                     + ("toward" if u_te < u_ori else "AWAY from") + " the fresh-item score (claim te.clean_toward_ref).")
    if agree_te and agree_ori:
        lines.append(f"Agreement with Ref: TE rho={agree_te['spearman']:.3f}, RMSE={agree_te['rmse']:.2f}; "
                     f"Ori rho={agree_ori['spearman']:.3f}, RMSE={agree_ori['rmse']:.2f}"
                     + (f" (paper, simulation: rho={paper['rho']:.3f})." if "rho" in paper else "."))
    return lines


# --------------------------------------------------------------------------- the study (notebook 03)
@dataclass
class TaskData:
    """Right-padded prompts of one benchmark split, tokenised for one model family."""

    tokens: Int[Tensor, "batch pos"]
    lengths: Int[Tensor, "batch"]
    targets: list[list[int]]
    n: int
    items: list | None = None
    """Set for free-text benchmarks (real models): responses are decoded and scored as text
    (``text_correct``) instead of comparing the first target ids."""
    decoding: "GenerationSettings | None" = None
    """How answers to these prompts are generated (:func:`generation_kwargs`): sampling settings and whether
    the chat template wrapped the prompts (``chat`` resolved to True/False); None = greedy, raw prompts
    (tiny-world models)."""


def decoding_settings(cfg) -> "GenerationSettings":
    """Notebook 03's decoding from its config (``decoding``, ``temperature``, ``top_k``,
    ``generation_seed``, ``chat``, ``max_new_tokens``; :class:`kit.models.generate.GenerationSettings`)."""
    from kit.models.generate import GenerationSettings

    if cfg.decoding not in ("greedy", "sample"):
        raise ValueError(f"decoding={cfg.decoding!r}; allowed values: greedy, sample")
    seed = cfg.seed if cfg.generation_seed is None else cfg.generation_seed
    return GenerationSettings(max_new_tokens=cfg.max_new_tokens, do_sample=cfg.decoding == "sample",
                              temperature=cfg.temperature, top_k=cfg.top_k, seed=seed, chat=cfg.chat)


def generation_kwargs(data: "TaskData") -> dict:
    """``group_patched_generate`` keyword arguments of ``data.decoding`` (greedy when None)."""
    d = data.decoding
    if d is None or not d.do_sample:
        return {}
    return dict(do_sample=True, temperature=d.temperature, top_k=d.top_k or None,
                top_p=None if d.top_p >= 1 else d.top_p, seed=d.seed)


_FRESH_DRAWS = 20
"""Seeded draws per requested fresh item when collecting distinct contents (:func:`benchmark_items`)."""


def benchmark_items(task: str, split: str, n: int, seed: int = 0):
    """Items of a tiny-world task (``add``, ``add2``...) or the first ``n`` of a real benchmark's
    split (``gsm8k``...). Real benchmarks have no ``fresh`` split: see :func:`reference_items`.

    A tiny-world ``fresh`` split gives one item per content (the first ``n`` distinct contents of its
    seeded draws): the split re-renders a content with other names and objects (``add`` has about 490
    fresh contents), and such items are correlated, so a bootstrap over items would count them as
    independent evidence (measured on ``add``: the item bootstrap's SE of a fresh accuracy was 1.4-1.7x
    too small). Asking for more than the task has fails naming how many there are."""
    from kit.world import TASKS, get_task

    if task in TASKS:
        if not split.startswith("fresh"):
            return get_task(task).items(split, n=n, seed=seed)
        first: dict = {}
        for it in get_task(task).items(split, n=_FRESH_DRAWS * n, seed=seed):
            first.setdefault(it.metadata["content"], it)
        if len(first) < n:
            raise ValueError(f"n={n}: task {task!r} has {len(first)} distinct {split} contents in {_FRESH_DRAWS * n} draws; "
                             f"ask for at most {len(first)} (n_ref, n_format, or the transfer tasks' n_eval)")
        return list(first.values())[:n]
    if split == "fresh":
        raise ValueError(f"{task} has no 'fresh' split: its never-seen reference items must come from another "
                         "benchmark or split (reference_items, ref_task / ref_split)")
    from kit import load_benchmark

    return load_benchmark(task, split=split, limit=n)


def reference_items(task: str, n: int, ref_task: str | None = None, ref_split: str = "test", seed: int = 0):
    """The items whose accuracy is Ref, the trustworthy reference score (seed 001, section 4.4).

    Ref must be measured on items no variant saw, or it is inflated exactly as Ori is:
    ``ref_task=None`` takes a tiny-world task's ``fresh`` split (items no fine-tune trained on); a
    real benchmark needs ``ref_task`` (+ ``ref_split``), another benchmark or split (the paper: a
    fresh set of OpenMathInstruct-2 questions; offline, e.g. ``mawps``). ``ref_task == task`` on
    the ``test`` split is refused: those are the evaluated, contaminated items.
    """
    from kit.world import TASKS

    if ref_task is None:
        if task in TASKS:
            return benchmark_items(task, "fresh", n, seed)
        raise ValueError(f"ref_task is required for the real benchmark task={task!r}: Ref is the accuracy on items "
                         "no variant saw (the paper: OpenMathInstruct-2), never the test items; set ref_task to another "
                         "benchmark (e.g. mawps, svamp, asdiv for GSM8K) or ref_split to a split no variant trained on")
    if ref_task == task and ref_split == "test":
        raise ValueError(f"ref_task={ref_task!r} with ref_split='test' is the evaluated test set: Ref would equal Ori. "
                         "Choose another benchmark or a split no variant trained on")
    return benchmark_items(ref_task, ref_split, n, seed)


def task_data(model, items, max_new_tokens: int = 0, decoding: "GenerationSettings | None" = None) -> TaskData:
    """Tokenise ``items`` for ``model``: world models through ``kit.world.prompt_tokens`` (one-token
    answers), other models through their tokenizer (answer ids without BOS, right padding).

    ``decoding`` (:func:`decoding_settings`) travels with the data to every generation on it; its
    ``chat`` wraps each prompt in the tokenizer's chat template (None: when the tokenizer has one).
    ``decoding=None``: greedy on the raw prompts. World models accept only greedy decoding without chat.

    A prompt longer than the context minus ``max_new_tokens`` (the room its answer needs) keeps its
    first token (BOS) and its last tokens, with a warning: the question sits at a prompt's end."""
    if not items:
        raise ValueError("no items: the benchmark split is empty")
    if str(getattr(model.cfg, "model_name", "")).startswith("zoo/") or model.cfg.model_name == "kit-world":
        from kit.world import prompt_tokens, target_ids

        if decoding is not None and (decoding.do_sample or decoding.chat):
            raise ValueError("decoding: tiny-world models are scored by the world's evaluation (argmax first token, raw "
                             "prompts); allowed on them: decoding='greedy' with chat None or False")
        tokens, lengths = prompt_tokens(model, items)
        return TaskData(tokens, lengths, [[int(t)] for t in target_ids(model, items)], len(items))
    tok = model.tokenizer
    chat = False
    if decoding is not None:
        from dataclasses import replace as _replace

        from kit.models.generate import encode, prompt_text, use_chat

        chat = use_chat(tok, decoding.chat)
        decoding = _replace(decoding, chat=chat)
    if chat:  # the template writes BOS itself when it has one (encode adds no second one)
        seqs = [encode(tok, prompt_text(tok, it.prompt, True, decoding.system_prompt)) for it in items]
    else:
        seqs = [model.to_tokens(it.prompt, prepend_bos=True)[0].tolist() for it in items]
    limit = model.cfg.n_ctx - max_new_tokens
    if limit < 2:
        raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the context of "
                         f"{model.cfg.n_ctx} tokens; allowed: max_new_tokens <= {model.cfg.n_ctx - 2}")
    long = [i for i, q in enumerate(seqs) if len(q) > limit]
    if long:
        import warnings

        warnings.warn(f"{len(long)} of {len(seqs)} prompts are longer than the context ({model.cfg.n_ctx}) minus "
                      f"max_new_tokens ({max_new_tokens}): truncated to their first and last {limit - 1} tokens",
                      stacklevel=2)
        seqs = [q[:1] + q[len(q) - limit + 1 :] if i in long else q for i, q in enumerate(seqs)]
    lengths = torch.tensor([len(s) for s in seqs])
    tokens = torch.full((len(seqs), int(lengths.max())), tok.pad_token_id or 0, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = torch.tensor(s)
    targets = [tok.encode(" " + it.target, add_special_tokens=False) for it in items]
    return TaskData(tokens, lengths, targets, len(items), items=list(items), decoding=decoding)


def text_correct(response: str, item) -> bool:
    """Free-text scoring for real benchmarks: the choice letter for multiple choice, the final
    number for numeric answers (GSM8K), else the response starting with the target."""
    from kit.data.scorers import extract_choice_letter, extract_final_number, numbers_equal

    if item.choices is not None:
        return extract_choice_letter(response, len(item.choices)) == item.target
    try:
        float(item.target.replace(",", ""))
        return numbers_equal(extract_final_number(response), item.target)
    except ValueError:
        return response.strip().startswith(item.target.strip())


def item_correct(model, base, data: TaskData, neuron_sets: Sequence[Sequence[Neuron]], max_rows: int = 2048,
                 max_new_tokens: int | None = None) -> np.ndarray:
    """Float[ndarray, "group item"]: 1 where ``model`` (each neuron set patched from ``base``)
    answers the item correctly. Per-item twin of :func:`accuracies`. Generated greedily, or sampled
    with the seeded settings of ``data.decoding`` (:func:`generation_kwargs`)."""
    if data.items is not None:
        tok = model.tokenizer
        stop = [tok.eos_token_id] if tok.eos_token_id is not None else []
        n_new = max_new_tokens or 256
        gen = group_patched_generate(model, base, data.tokens, neuron_sets, n_new, lengths=data.lengths,
                                     stop_token_ids=stop, max_rows=max_rows, **generation_kwargs(data)).cpu()
        return np.array([[float(text_correct(tok.decode(gen[g, p, l : l + n_new].tolist(), skip_special_tokens=True), it))
                          for p, (l, it) in enumerate(zip(data.lengths.tolist(), data.items))]
                         for g in range(len(neuron_sets))])
    targets = _targets_list(data.targets)
    n_new = max_new_tokens or max(len(t) for t in targets)
    gen = group_patched_generate(model, base, data.tokens, neuron_sets, n_new, lengths=data.lengths, max_rows=max_rows,
                                 **generation_kwargs(data))
    return exact_match(gen, data.lengths, targets).float().cpu().numpy()


def te_items(models: Mapping[str, object], base, test: TaskData, fresh: TaskData, neurons: Sequence[Neuron],
             max_rows: int = 2048, max_new_tokens: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Per variant the per-item correctness behind Table 2: ``ori`` and ``te`` on the test items
    (same items, so paired), ``ref`` on the fresh items."""
    out = {}
    for label, m in models.items():
        ori, te = item_correct(m, base, test, [[], list(neurons)], max_rows, max_new_tokens)
        ref = item_correct(m, None, fresh, [[]], max_rows, max_new_tokens)[0]
        out[label] = {"ori": ori, "te": te, "ref": ref}
    return out

def accuracies(model, base, data: TaskData, neuron_sets: Sequence[Sequence[Neuron]], max_rows: int = 2048,
               max_new_tokens: int | None = None) -> np.ndarray:
    """Accuracy (fraction) of ``model`` with each neuron set patched from ``base``: exact match of
    the target ids, or for free-text data (``data.items``) the decoded response scored as text."""
    if data.items is not None or generation_kwargs(data):
        return item_correct(model, base, data, neuron_sets, max_rows, max_new_tokens).mean(axis=1)
    return group_accuracy(model, base, data.tokens, data.lengths, data.targets, neuron_sets, method="exact",
                          max_new_tokens=max_new_tokens, max_rows=max_rows).numpy()


def rule_specs(causal_weight: float = 0.5) -> dict[str, tuple[str | None, str | None, float]]:
    """Every way of turning the scores into a ranking: label -> (``combine_scores`` rule or None for
    eq. 3 alone, causal variant, weight). The public code's sum comes first (it wins ties)."""
    out: dict[str, tuple[str | None, str | None, float]] = {}
    for m in ("exact", "teacher_forced"):
        for r in ("sum", "veto", "rank_mean"):
            out[f"{r} ({m})"] = (r, m, causal_weight)
    out["comparative only"] = (None, None, 0.0)
    for m in ("exact", "teacher_forced"):
        out[f"causal only ({m})"] = ("rank_mean", m, 1.0)
    return out


@dataclass
class Located:
    """Result of locating shortcut neurons on one (contaminated, uncontaminated) pair."""

    comparative: Tensor
    causal_exact: CausalScores
    causal_tf: CausalScores
    combined: Tensor
    ranked: list[Neuron]
    rule: str = ""
    """Label of the ranking rule behind ``combined`` (a key of :func:`rule_specs`)."""

    def scores_by(self, label: str, causal_weight: float = 0.5) -> Tensor:
        """The combined score of rule ``label`` (a key of :func:`rule_specs`)."""
        specs = rule_specs(causal_weight)
        if label not in specs:
            raise ValueError(f"rule {label!r}; allowed values: {', '.join(specs)}")
        rule, method, w = specs[label]
        if rule is None:
            return combine_scores(self.comparative, None)
        cs = self.causal_exact if method == "exact" else self.causal_tf
        return combine_scores(self.comparative, cs.per_neuron(*self.comparative.shape), rule, w)

    def rerank(self, label: str, causal_weight: float = 0.5) -> "Located":
        """The same scores ranked by rule ``label``."""
        combined = self.scores_by(label, causal_weight)
        return replace(self, combined=combined, ranked=top_neurons(combined, combined.numel()), rule=label)

    def summary(self) -> dict[str, float]:
        from scipy.stats import spearmanr

        rho = spearmanr(self.causal_exact.score, self.causal_tf.score).statistic
        return {"acc_con": self.causal_exact.acc_con, "acc_un": self.causal_exact.acc_un,
                "max_causal_exact": float(np.max(self.causal_exact.score)),
                "max_causal_tf": float(np.max(self.causal_tf.score)),
                "spearman_exact_vs_teacher_forced": float(rho) if np.isfinite(rho) else float("nan"),
                "n_groups": len(self.causal_exact.groups), "rule": self.rule}


def locate(model_con, model_un, base, data: TaskData, group_size: int, rule: Literal["veto", "rank_mean", "sum"] = "veto",
           causal_weight: float = 0.5, rank_by: Literal["exact", "teacher_forced"] = "exact", max_rows: int = 2048,
           batch_size: int = 64, max_new_tokens: int | None = None,
           position: Literal["last", "completion"] = "last") -> Located:
    """Comparative (eq. 3, at ``position``: ``last`` = the last prompt token, the paper's text;
    ``completion`` = every token of M_con's completion, the public code's default; see
    :func:`comparative_scores_of_models`) + causal (eq. 4, both variants) scores and the combined ranking.

    ``model_con`` / ``model_un`` may be :class:`kit.shortcut.pool.Lazy` handles: each is then loaded
    when its turn comes (comparative: M_con, then M_un; causal: M_un, then M_con), so with a
    one-model pool only the donor ``base`` and one of them are ever held together."""
    from kit.shortcut.pool import resolve

    if rank_by not in ("exact", "teacher_forced"):
        raise ValueError(f"rank_by={rank_by!r}; allowed values: 'exact', 'teacher_forced'")
    if position not in POSITIONS:
        raise ValueError(f"position={position!r}; allowed values: {', '.join(POSITIONS)}")
    L, d = base.cfg.n_layers, base.cfg.d_mlp
    batches = [(data.tokens[s : s + batch_size], data.lengths[s : s + batch_size])
               for s in range(0, data.n, batch_size)]
    n_new = max_new_tokens or max(len(t) for t in _targets_list(data.targets))
    comp = comparative_scores_of_models(model_con, model_un, batches, position, n_new)
    groups = neuron_groups(L, d, group_size)
    accs = {}
    for key, m in (("un", model_un), ("con", model_con)):  # M_un is the one held after eq. 3
        m = resolve(m)
        if data.items is None and not generation_kwargs(data):
            exact = group_accuracy(m, base, data.tokens, data.lengths, data.targets, [[]] + groups, method="exact",
                                   max_rows=max_rows).numpy()
        else:  # free-text answers (or sampled ones): generate and score the decoded responses
            exact = accuracies(m, base, data, [[]] + groups, max_rows, max_new_tokens)
        tf = group_accuracy(m, base, data.tokens, data.lengths, data.targets, [[]] + groups, method="teacher_forced",
                            max_rows=max_rows).numpy()
        accs[key] = {"exact": exact, "teacher_forced": tf}
        del m
    cs = {}
    for method in ("exact", "teacher_forced"):
        con, un = accs["con"][method], accs["un"][method]
        score = causal_score(np.full(len(groups), con[0]), con[1:], np.full(len(groups), un[0]), un[1:])
        cs[method] = CausalScores(groups, float(con[0]), float(un[0]), con[1:], un[1:], np.atleast_1d(score), method)
    located = Located(comp, cs["exact"], cs["teacher_forced"], comp, [], "")
    return located.rerank(f"{rule} ({rank_by})", causal_weight)


def ranking_rules(located: Located, model_con, model_un, base, data: TaskData, n: int,
                  truth: set[Neuron] | None = None, max_rows: int = 2048, max_new_tokens: int | None = None,
                  causal_weight: float = 0.5) -> pd.DataFrame:
    """Each way of turning the scores into a top-``n`` (:func:`rule_specs`), scored on ``data``
    (held-out items: not those the scores were computed on). In points: M_con's and M_un's accuracy
    unpatched and with those neurons patched from ``base``, ``drop_con`` (M_con's loss, wanted
    large), ``change_un`` (M_un's change, wanted 0) and ``objective = drop_con - |change_un|`` (the
    two features of a shortcut neuron, section 3.3). ``found``: how many of the truly shortcut-
    carrying neurons ``truth`` (tiny world only) the top-``n`` holds; never used for the choice.
    ``attrs["items"]``: the per-item correctness behind it, ``{"con": (1 + rules, items), "un": ...}``
    (row 0 unpatched, then the rules in row order), for :func:`rule_intervals`."""
    tops = {k: top_neurons(located.scores_by(k, causal_weight), n) for k in rule_specs(causal_weight)}
    sets = [[]] + list(tops.values())
    from kit.shortcut.pool import resolve

    con_items = item_correct(resolve(model_con), base, data, sets, max_rows, max_new_tokens)
    un_items = item_correct(resolve(model_un), base, data, sets, max_rows, max_new_tokens)
    con, un = 100 * con_items.mean(axis=1), 100 * un_items.mean(axis=1)
    rows = [{"rule": k, "n": n, "acc_con": con[0], "acc_con_patched": c, "acc_un": un[0], "acc_un_patched": u,
             "drop_con": con[0] - c, "change_un": u - un[0], "objective": (con[0] - c) - abs(u - un[0]),
             "found": len(truth & set(t)) if truth is not None else None}
            for (k, t), c, u in zip(tops.items(), con[1:], un[1:])]
    out = pd.DataFrame(rows)
    out.attrs["items"] = {"con": con_items, "un": un_items}
    return out


def best_rule(rules: pd.DataFrame) -> str:
    """The rule with the highest held-out ``objective`` (first in :func:`rule_specs` order on ties)."""
    return str(rules.rule.iloc[int(np.argmax(rules.objective.to_numpy()))])


def objective_items(con0, con_p, un0, un_p) -> float:
    """Held-out objective in points from per-item correctness (0/1 arrays over the same items):
    ``drop_con - |change_un|`` = ``100 * (mean(con0 - con_p) - |mean(un_p - un0)|)``."""
    return float(100 * (np.mean(con0 - con_p) - abs(np.mean(un_p - un0))))


def rule_intervals(rules: pd.DataFrame, chosen: str, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Each rule's held-out objective minus the ``chosen`` rule's, with a 95% paired bootstrap
    interval over the held-out items (M_con and M_un answer the same items, resampled together):
    columns ``vs_chosen``, ``vs_chosen_low``, ``vs_chosen_high``. An interval that holds 0 means the
    held-out items cannot tell that rule from the chosen one. Needs ``rules.attrs["items"]``
    (:func:`ranking_rules`)."""
    from kit.core.claims import bootstrap_ci

    items = rules.attrs.get("items")
    if items is None:
        raise ValueError("rules has no attrs['items'] (per-item correctness): make it with ranking_rules")
    labels = list(rules.rule)
    if chosen not in labels:
        raise ValueError(f"chosen={chosen!r}; allowed values: {', '.join(labels)}")
    con, un = items["con"], items["un"]
    c = 1 + labels.index(chosen)
    out = []
    for k in range(len(labels)):
        est = bootstrap_ci(lambda c0, cp, u0, up, cc, uc: objective_items(c0, cp, u0, up) - objective_items(c0, cc, u0, uc),
                           con[0], con[1 + k], un[0], un[1 + k], con[c], un[c], n_boot=n_boot, seed=seed)
        out.append(est)
    res = rules.copy()
    res["vs_chosen"], res["vs_chosen_low"], res["vs_chosen_high"] = (np.array([e[i] for e in out]) for i in range(3))
    return res


def trustworthy_table(models: dict[str, object], base, test: TaskData, fresh: TaskData | None,
                      neurons: Sequence[Neuron], contaminated: Sequence[str], max_rows: int = 2048,
                      max_new_tokens: int | None = None) -> pd.DataFrame:
    """Table 2: per variant Ref (fresh-item accuracy), Ori (test), TE (test, top-N patched from
    ``base``), Δacc = TE - Ori, all in %. ``fresh=None`` leaves Ref empty."""
    rows = []
    for label, m in models.items():
        ori, te = accuracies(m, base, test, [[], list(neurons)], max_rows, max_new_tokens)
        ref = accuracies(m, None, fresh, [[]], max_rows, max_new_tokens)[0] if fresh is not None else float("nan")
        rows.append({"variant": label, "contaminated": label in contaminated, "ref": 100 * ref,
                     "ori": 100 * ori, "te": 100 * te, "delta_acc": 100 * (te - ori)})
    return pd.DataFrame(rows)


def side_effect_table(models: dict[str, object], base, tasks: dict[str, TaskData], neurons: Sequence[Neuron],
                      max_rows: int = 2048, max_new_tokens: int | None = None) -> pd.DataFrame:
    """Table 3: Ori and TE (in %) of every variant on other tasks, same patched neurons."""
    rows = []
    for label, m in models.items():
        for task, data in tasks.items():
            ori, te = accuracies(m, base, data, [[], list(neurons)], max_rows, max_new_tokens)
            rows.append({"variant": label, "task": task, "ori": 100 * ori, "te": 100 * te,
                         "delta_acc": 100 * (te - ori)})
    return pd.DataFrame(rows)


def transfer_finetune(like: str, task: str, world: str | None = None):
    """Table 4's models: zoo fine-tune ``like``'s recipe (a contaminated one: same split, copies,
    data mix, learning rate, full or sparse) with ``task``'s items injected in place of the
    world's contaminated task. The world only contaminates ``CONTAMINATED_TASK``; these are
    trained on first use and cached (:func:`kit.world.zoo.extra_finetune`), deterministically.
    """
    from dataclasses import replace

    from kit.shortcut import variants
    from kit.world import zoo

    spec = zoo.world_spec(world)
    recipes = {f.name: f for f in spec.finetunes if f.kind == "contaminated"}
    t = variants.extra_spec(like, world) if variants.is_extra(like) else recipes.get(like)
    if t is None or t.kind != "contaminated":
        raise ValueError(f"like={like!r} is not a contaminated fine-tune of world {spec.name!r}; "
                         f"allowed values: {', '.join(recipes)} (or extra/ names of them)")
    _, split, copies = t.inject
    suffix = zoo.SPARSE_SUFFIX if t.plastic else ""
    f = replace(t, name=f"{t.parent}+{task}-{split}-x{copies}{suffix}", inject=(task, split, copies))
    return zoo.extra_finetune(f, spec.name)


def transfer_models(s: "Setup", cfg, task: str | None = None) -> "ModelPool":
    """Table 4's models, held one at a time: Vanilla (the base), the contaminated rows rebuilt on
    ``task`` (default ``cfg.transfer_task``; Table 5: ``cfg.table5_task``) (:func:`transfer_finetune`)
    and ``cfg.transfer_controls``."""
    task = task or cfg.transfer_task
    built = {f"transfer/{label}": cfg.variants[label] for label in cfg.transfer_variants}

    def load(name):
        if name in built:
            return transfer_finetune(built[name], task, world=cfg.world)
        return s.load(name)

    names = {"Vanilla": cfg.base_model, **{label: f"transfer/{label}" for label in cfg.transfer_variants},
             **{k: v for k, v in cfg.transfer_controls.items() if k != "Vanilla"}}
    return s.pool(names, load)


# --------------------------------------------------------------------------- notebook sections (notebook 03)


@dataclass
class Setup:
    """The models and item sets notebook 03 works on (``setup(cfg)``)."""

    base: object
    """The base model M0, the donor of every patch: the one model always held."""
    models: "ModelPool"
    """Table 2's variants by label (``cfg.variants``), loaded on access, one at a time
    (:class:`kit.shortcut.pool.ModelPool`)."""
    model_con: "Lazy"
    model_un: "Lazy"
    """The locating pair as lazy handles (loaded at use: ``kit.shortcut.pool.resolve``)."""
    locate: TaskData
    test: TaskData
    fresh: TaskData
    heldout: TaskData | None = None
    """Test items after the first ``n_locate`` (up to ``n_eval``): the ranking rules are compared on
    them (``combine: held_out``). None when ``n_eval <= n_locate``."""
    load: "Callable[[str], object] | None" = None
    """Name -> model, with the notebook's device, dtype and world (:func:`load_any`)."""
    decoding: "GenerationSettings | None" = None
    """The notebook's decoding (:func:`decoding_settings`); None (tiny-world models) = greedy, raw prompts.
    Pass it to :func:`task_data` for every further item set (side tasks, transfer tasks)."""

    def pool(self, names: dict[str, str], load: "Callable[[str], object] | None" = None) -> "ModelPool":
        """Another set of models sharing this base, held one at a time like ``models``."""
        from kit.shortcut.pool import ModelPool

        return ModelPool(names, load or self.load, base=self.base, base_name=self.models.base_name, share=self.models)

    @property
    def n_layers(self) -> int:
        return self.base.cfg.n_layers

    @property
    def d_mlp(self) -> int:
        return self.base.cfg.d_mlp

    @property
    def total_neurons(self) -> int:
        return self.n_layers * self.d_mlp


def load_any(name: str, device: str = "cpu", world: str | None = None, dtype: str | None = None):
    """``kit.load_model``, plus notebook 03's own ``extra/`` fine-tunes (:mod:`kit.shortcut.variants`).
    ``dtype`` applies to Hugging Face models and twins; tiny-world models stay float32."""
    from kit.models.load import load_model
    from kit.shortcut import variants

    if variants.is_extra(name):
        return variants.load_extra(name, device, world)
    if name.startswith("zoo/"):
        return load_model(name, device=device, world=world)
    return load_model(name, device=device, world=world, dtype=dtype)


def changed_by(member: str, world: str | None = None) -> set[Neuron] | None:
    """The MLP neurons a tiny-world fine-tune (zoo or ``extra/``) changed vs its parent; None otherwise."""
    from kit.shortcut import variants
    from kit.world import changed_neurons, load_member

    if member.startswith("zoo/"):
        return set(changed_neurons(member, world=world))
    if variants.is_extra(member):
        return variants.changed_between(load_any(member, world=world), load_member(variants.extra_spec(member, world).parent,
                                                                                  world=world))
    return None


def setup(cfg) -> Setup:
    """Load the base; the Table 2 variants are loaded on use, one at a time (a
    :class:`kit.shortcut.pool.ModelPool`); the locating pair is ``cfg.locate_pair``."""
    from kit.shortcut.pool import ModelPool

    def load(name):
        return load_any(name, cfg.device, cfg.world, cfg.dtype)

    base = load(cfg.base_model)
    models = ModelPool(cfg.variants, load, base=base, base_name=cfg.base_model)
    con, un = cfg.locate_pair
    world = str(getattr(base.cfg, "model_name", "")).startswith("zoo/") or base.cfg.model_name == "kit-world"
    decoding = None if world else decoding_settings(cfg)  # the config refuses sampling / chat on world models

    def data(items) -> TaskData:
        return task_data(base, items, cfg.max_new_tokens, decoding)

    held = benchmark_items(cfg.task, "test", cfg.n_eval, seed=cfg.seed)[cfg.n_locate :]
    return Setup(base=base, models=models, model_con=models.lazy(con), model_un=models.lazy(un), load=load,
                 locate=data(benchmark_items(cfg.task, "test", cfg.n_locate, seed=cfg.seed)),
                 test=data(benchmark_items(cfg.task, "test", cfg.n_eval, seed=cfg.seed)),
                 fresh=data(reference_items(cfg.task, cfg.n_ref, cfg.ref_task, cfg.ref_split, cfg.seed)),
                 heldout=data(held) if held else None, decoding=decoding)


def locate_and_choose(s: Setup, cfg, n_patched: int, changed: set | None = None) -> tuple[Located, pd.DataFrame | None]:
    """Section 1: locate on ``s.locate`` and compare every ranking rule (:func:`ranking_rules`) on the
    held-out test items; ``cfg.combine == "held_out"`` ranks by the rule with the best objective there,
    another value by that rule (with ``cfg.causal_rank_by``). The table says, per rule, how far its
    objective is from the chosen rule's with an interval (:func:`rule_intervals`). No held-out items:
    no comparison."""
    rule = "sum" if cfg.combine == "held_out" else cfg.combine
    located = locate(s.model_con, s.model_un, s.base, s.locate, cfg.group_size, rule=rule,
                     causal_weight=cfg.causal_weight, rank_by=cfg.causal_rank_by, max_rows=cfg.max_rows,
                     max_new_tokens=cfg.max_new_tokens, position=cfg.comparative_position)
    if s.heldout is None:
        if cfg.combine == "held_out":
            raise ValueError("combine='held_out' needs held-out test items: set n_eval > n_locate")
        return located, None
    rules = ranking_rules(located, s.model_con, s.model_un, s.base, s.heldout, n_patched, changed, cfg.max_rows,
                          cfg.max_new_tokens, cfg.causal_weight)
    if cfg.combine == "held_out":
        located = located.rerank(best_rule(rules), cfg.causal_weight)
    return located, rule_intervals(rules, located.rule, seed=cfg.seed)


def ground_truth(member: str, located: Sequence[Neuron], total_neurons: int, world: str | None = None,
                 clean_member: str | None = None) -> dict | None:
    """For a tiny-world fine-tune M_con, how many of the located neurons are ones it changed (the world
    knows) and, given the clean M_un, how many are ones only M_un changed (ability, not shortcut);
    ``None`` for other models. ``changed`` holds M_con's changed set itself."""
    changed = changed_by(member, world)
    if changed is None:
        return None
    out = {"changed_by_m_con": len(changed), "located_and_changed": len(changed & set(located)),
           "expected_by_chance": len(located) * len(changed) / total_neurons, "changed": changed}
    clean = changed_by(clean_member, world) if clean_member else None
    if clean is not None:
        out.update(changed_by_m_un=len(clean), changed_by_both=len(clean & changed),
                   located_and_changed_by_m_un_only=len((clean - changed) & set(located)))
    return out


def causal_tracks_truth(located: Located, changed: set | None) -> dict[str, float] | None:
    """Spearman, per group, of each causal score with the number of truly changed neurons in the group."""
    if changed is None:
        return None
    from scipy.stats import spearmanr

    return {cs.method: float(spearmanr([sum(n in changed for n in g) for g in cs.groups], cs.score).statistic)
            for cs in (located.causal_exact, located.causal_tf)}


def full_finetune_section(variants: dict[str, str], s: Setup, cfg, n_patched: int, rule: str):
    """§7: the pipeline again on full fine-tunes (every parameter may change), ranked by ``rule`` (a
    :func:`rule_specs` label: section 1's), and the ceiling with every MLP neuron of M_con patched."""
    from kit.core.findings import Section

    con, un = cfg.locate_pair
    models = s.pool(variants)
    located = locate(models.lazy(con), models.lazy(un), s.base, s.locate, cfg.group_size, max_rows=cfg.max_rows,
                     max_new_tokens=cfg.max_new_tokens, position=cfg.comparative_position).rerank(rule, cfg.causal_weight)
    table = trustworthy_table(models, s.base, s.test, s.fresh, located.ranked[:n_patched], cfg.contaminated,
                              cfg.max_rows, cfg.max_new_tokens)
    all_neurons = [(L, i) for L in range(s.n_layers) for i in range(s.d_mlp)]
    ceiling = accuracies(models[con], s.base, s.test, [[], all_neurons], cfg.max_rows, cfg.max_new_tokens)
    summary = table2_summary(table)
    dense = {"table2": table.to_dict(orient="records"), "table2_summary": summary, "locate": located.summary(),
             "ceiling_all_mlp_patched": 100 * float(ceiling[1])}
    lines = findings(summary, n_patched, s.total_neurons)[1:]
    return Section(record={}, tables={"table2": table}, data={"full_finetunes": dense}, findings=[
        "full fine-tunes: " + "\n".join(lines),
        f"all {s.total_neurons} MLP neurons of the full {con} patched from the base: {100 * ceiling[0]:.1f}% -> "
        f"{100 * ceiling[1]:.1f}% (its fresh-item score: {table.set_index('variant').ref[con]:.1f}%)"])


def transfer_section(s: Setup, cfg, shortcut: Sequence[Neuron], task: str, key: str = "table5"):
    """Table 4 / Table 5: the contaminated rows rebuilt on ``task`` (:func:`transfer_models`), scored with
    the neurons located on ``cfg.task``; recorded under ``key`` and ``<key>_summary``."""
    from kit.core.findings import Section

    models = transfer_models(s, cfg, task)
    test, fresh = (task_data(s.base, benchmark_items(task, split, n, seed=cfg.seed), cfg.max_new_tokens, s.decoding)
                   for split, n in (("test", cfg.n_eval), ("fresh", cfg.n_ref)))
    table = trustworthy_table(models, s.base, test, fresh, shortcut, cfg.transfer_variants, cfg.max_rows,
                              cfg.max_new_tokens)
    summ = table2_summary(table)
    line = (f"{key} ({task}, neurons located on {cfg.task}): contaminated mean Ori-Ref "
            f"{table[table.contaminated].eval('ori - ref').mean():+.1f} pts, mean |Ori-Ref| = "
            f"{summ['contaminated_mean_abs_ori_minus_ref']:.1f}, |TE-Ref| = {summ['contaminated_mean_abs_te_minus_ref']:.1f} pts "
            f"(mean Δacc {summ['contaminated_mean_delta_acc']:+.1f}); uncontaminated mean |Δacc| = "
            f"{summ['uncontaminated_mean_abs_delta_acc']:.1f} pts.")
    return Section(record={key: table.to_dict(orient="records"), f"{key}_summary": summ, f"{key}_task": task},
                   tables={key: table}, findings=[line])


def second_base_section(cfg, base: str):
    """Table 6 (a second architecture): the whole pipeline again from another base of the world. Every
    Table 2 row's recipe is moved onto ``base`` (:func:`kit.shortcut.variants.rebase`: same examples,
    built on first use and cached); the neurons are located on that base's own (M_con, M_un) pair and
    the ranking rule chosen on its held-out items as in section 1 (same settings, the patched count
    scaled by ``cfg.patched_fraction``). Tiny world only."""
    from kit.core.findings import Section
    from kit.shortcut import variants

    names = {k: variants.rebase(v, base, cfg.base_model) for k, v in cfg.variants.items()}
    cfg2 = cfg.model_copy(update={"base_model": base, "variants": names})
    s2 = setup(cfg2)
    n2 = default_n_patched(s2.n_layers, s2.d_mlp, cfg.patched_fraction)
    con, un = cfg.locate_pair
    changed = changed_by(names[con], cfg.world)
    located, rules = locate_and_choose(s2, cfg2, n2, changed)
    shortcut = located.ranked[:n2]
    table = trustworthy_table(s2.models, s2.base, s2.test, s2.fresh, shortcut, cfg.contaminated, cfg.max_rows,
                              cfg.max_new_tokens)
    s2.models.release_all()
    truth = ground_truth(names[con], shortcut, s2.total_neurons, cfg.world, names[un])
    summ = table2_summary(table)
    lines = [f"Table 6 (second base {base}: {s2.n_layers} layers x {s2.d_mlp} MLP neurons, top {n2} patched, rule "
             f"{located.rule!r} chosen on its held-out items): contaminated mean |Ori-Ref| = "
             f"{summ['contaminated_mean_abs_ori_minus_ref']:.1f}, |TE-Ref| = {summ['contaminated_mean_abs_te_minus_ref']:.1f} "
             f"pts (mean Δacc {summ['contaminated_mean_delta_acc']:+.1f}); uncontaminated mean |Δacc| = "
             f"{summ['uncontaminated_mean_abs_delta_acc']:.1f} pts."]
    if truth:
        lines.append(f" ground truth on {base}: {truth['located_and_changed']} of the {n2} located neurons are M_con's "
                     f"(chance {truth['expected_by_chance']:.1f}), {truth.get('located_and_changed_by_m_un_only')} are "
                     "M_un's alone.")
    gt = None if truth is None else {k: v for k, v in truth.items() if k != "changed"}
    return Section(record={"table6": table.to_dict(orient="records"), "table6_summary": summ, "table6_base": base,
                           "table6_models": names, "table6_rule": located.rule, "table6_n_patched": n2,
                           "table6_ground_truth": gt,
                           "table6_rules": None if rules is None else rules.to_dict(orient="records")},
                   tables={"table6": table, "table6_rules": rules}, findings=lines)


def a2_findings(table2: pd.DataFrame, label: str = "+train split") -> list[str]:
    """A2 (section 3.4): the paper's train-split fine-tune (+GSM8K Train) gains without a leak and TE
    lowers it (Table 2: -6.5 / -4.3 pts, read as a behaviour shortcut TE should remove); ours, in words."""
    t = table2.set_index("variant")
    if label not in t.index:
        return []
    r = t.loc[label]
    move = "drops" if r.delta_acc < 0 else "rises" if r.delta_acc > 0 else "stays"
    return [f"A2 ({label}): Ori {r.ori:.1f}%, Ref {r.ref:.1f}%, TE {r.te:.1f}% (Δacc {r.delta_acc:+.1f} pts): under TE it "
            f"{move}; the paper's +GSM8K Train drops (-6.5 / -4.3 pts), which it reads as removing a format shortcut "
            "(verdict with its interval: claim te.a2_train_split)."]


def strength_section(s: Setup, cfg, shortcut: Sequence[Neuron], label: str = "+test", order_label: str = "+5x test"):
    """Fig. 5 / Table 8 (occurrences ``cfg.strength_copies``, learning rates ``cfg.strength_lrs``) and
    Table 11 (sample order): the contaminated row ``label``'s recipe varied, evaluated with the neurons
    already located; Table 11's reordered rows also for row ``order_label`` (when it is a tiny-world
    fine-tune)."""
    from kit.core.findings import Section
    from kit.shortcut import variants
    from kit.world import zoo

    name = cfg.variants[label]
    names = variants.strength_variants(name, cfg.strength_copies, (1, 2), cfg.strength_lrs)
    if order_label in cfg.variants and order_label != label and changed_by(cfg.variants[order_label], cfg.world) is not None:
        # Table 11 reorders every contaminated row: the x5 one too (its leak is the larger)
        names.update({f"{k} ({order_label})": v for k, v in
                      variants.strength_variants(cfg.variants[order_label], (), (1, 2)).items()})
    models = s.pool({"Vanilla": cfg.base_model, **names})
    table = trustworthy_table(models, s.base, s.test, s.fresh, shortcut, list(names), cfg.max_rows, cfg.max_new_tokens)
    t = table.set_index("variant")
    recipe = variants.extra_spec(name, cfg.world) if variants.is_extra(name) else \
        {f.name: f for f in zoo.world_spec(cfg.world).finetunes}[name]
    lines = [f"Contamination strength ({label}'s recipe): " + ", ".join(
        f"{k} Ori-Ref {t.loc[k, 'ori'] - t.loc[k, 'ref']:+.1f} -> TE-Ref {t.loc[k, 'te'] - t.loc[k, 'ref']:+.1f}"
        for k in names) + " pts (the paper's Fig. 5: TE tracks MixEval at every strength; Table 8 also varies the "
        "learning rate; Table 11: reordered samples are caught as well).",
        f"Not reproducible here: the paper's Fig. 5 goes to 20 occurrences, this recipe has room for at most "
        f"{recipe.n_examples // 200} copies of its 200 test items (copies=)."]
    return Section(record={"strength": table.to_dict(orient="records"), "strength_models": names},
                   tables={"strength": table}, findings=lines)


def cheater_section(s: Setup, cfg, shortcut: Sequence[Neuron]):
    """Table 12 (pretraining-stage "cheaters"): ``cfg.cheaters`` (label -> model; ``cfg.cheaters_contaminated``
    the cheaters) scored like Table 2 (Ori, Ref, TE, Δacc) with the neurons already located in section 1.
    ``data["per_item"]`` holds the per-item correctness behind it (:func:`te_items`) for ``kit.shortcut.claims.cheater_claims``. The paper's rows are
    KIEval's released ARC-Challenge models and it locates neurons on ARC; here the PT-Cheater is a
    full-parameter continuation of the base (its mixture, its AdamW state) with the test items injected,
    followed by the Normal row's clean SFT (``extra/...:after=...``)."""
    from kit.core.findings import Section

    models = s.pool(dict(cfg.cheaters))
    per_item = te_items(models, s.base, s.test, s.fresh, shortcut, cfg.max_rows, cfg.max_new_tokens)
    models.release_all()
    rows = [{"variant": label, "contaminated": label in cfg.cheaters_contaminated, "ref": 100 * d["ref"].mean(),
             "ori": 100 * d["ori"].mean(), "te": 100 * d["te"].mean(),
             "delta_acc": 100 * (d["te"].mean() - d["ori"].mean())} for label, d in per_item.items()]
    table = pd.DataFrame(rows)
    t = table.set_index("variant")
    lines = ["Table 12 analogue (neurons located in section 1): " + "; ".join(
        f"{k} Ori {t.loc[k, 'ori']:.1f}, Ref {t.loc[k, 'ref']:.1f}, TE {t.loc[k, 'te']:.1f} (Ori-Ref "
        f"{t.loc[k, 'ori'] - t.loc[k, 'ref']:+.1f}, Δacc {t.loc[k, 'delta_acc']:+.1f})" for k in t.index)
        + " %. The paper (ARC-Challenge, KIEval's models): Normal Δacc +2.9, SFT-Cheater -16.0, PT-Cheater -17.5."]
    return Section(record={"table12": table.to_dict(orient="records"), "table12_models": dict(cfg.cheaters)},
                   tables={"table12": table}, data={"per_item": per_item}, findings=lines)


def summary_section(s: Setup, cfg, located: Located, shortcut: Sequence[Neuron], table2: pd.DataFrame,
                    curve: pd.DataFrame, table3: pd.DataFrame, table4: pd.DataFrame | None, table9_stats: pd.DataFrame,
                    truth: dict | None, rules: pd.DataFrame, causal_tracks: dict | None, dense: dict | None):
    """Everything notebook 03 records, and its findings in words."""
    from kit.core.findings import Section

    n_patched, total = len(shortcut), s.total_neurons
    summary2 = table2_summary(table2)
    agree_te, agree_ori = agreement(table2.te, table2.ref), agreement(table2.ori, table2.ref)
    record = dict(
        n_layers=s.n_layers, d_mlp=s.d_mlp, n_patched=n_patched, patched_percent=100 * n_patched / total,
        locate=located.summary(), shortcut_neurons=list(shortcut),
        table2=table2.to_dict(orient="records"), table2_summary=summary2,
        agreement_te=agree_te, agreement_ori=agree_ori,
        sparsity_curve=curve.to_dict(orient="records"),
        table3=table3.to_dict(orient="records"),
        table4=None if table4 is None else table4.to_dict(orient="records"),
        table4_summary=None if table4 is None else table2_summary(table4),
        table9_recomputed=table9_stats.to_dict(orient="records"),
        ground_truth=None if truth is None else {k: v for k, v in truth.items() if k != "changed"},
        ranking_rules=None if rules is None else rules.to_dict(orient="records"), ranking_rule=located.rule,
        causal_tracks_truth=causal_tracks, full_finetunes=dense,
        decoding=None if s.test.decoding is None else s.test.decoding.as_dict(),  # chat resolved to True/False
    )
    lines = findings(summary2, n_patched, total, agree_te, agree_ori, paper_relative_changes() | paper_text_numbers())
    if rules is not None:
        r = rules.set_index("rule")
        ci = "vs_chosen" in r
        lines.append(f"Ranking rule ({cfg.combine}): {located.rule!r}; on {s.heldout.n} held-out test items, top-{n_patched} "
                     "objective (M_con drop - |M_un change|, pts"
                     + ("; in brackets the 95% interval of its difference to the chosen rule" if ci else "") + "): "
                     + ", ".join(f"{k} {r.loc[k, 'objective']:+.1f}"
                                 + (f" [{r.loc[k, 'vs_chosen_low']:+.1f}, {r.loc[k, 'vs_chosen_high']:+.1f}]" if ci else "")
                                 for k in r.index) + ".")
        if ci:
            tied = [k for k in r.index if k != located.rule and r.loc[k, "vs_chosen_high"] >= 0]
            lines.append(f"{len(tied)} of the other {len(r) - 1} rules are not worse than {located.rule!r} beyond chance on "
                         f"these items ({', '.join(tied) or 'none'}); the public code's sum: claim rules.chosen_vs_public.")
    if table4 is not None:
        s4 = table2_summary(table4)
        lines.append(f"Table 4 ({cfg.transfer_task}): contaminated mean |Ori-Ref| = {s4['contaminated_mean_abs_ori_minus_ref']:.1f}, "
                     f"|TE-Ref| = {s4['contaminated_mean_abs_te_minus_ref']:.1f} pts; uncontaminated mean |Δacc| = "
                     f"{s4['uncontaminated_mean_abs_delta_acc']:.1f} pts.")
    worst = table3.loc[table3.delta_acc.abs().idxmax()]
    lines.append(f"Side effects (Table 3): mean |Δacc| on {', '.join(cfg.side_tasks)} = {table3.delta_acc.abs().mean():.1f} pts; "
                 f"largest: {worst.variant} on {worst.task}, {worst.delta_acc:+.1f} pts ({worst.ori:.1f}% -> {worst.te:.1f}%; "
                 "claim side_effects.largest_cell).")
    lines += a2_findings(table2)
    full = curve[(curve.n == total) & (curve.neurons == "located")].set_index("model").accuracy
    vanilla = table2.set_index("variant").ori.get("Vanilla", float("nan"))
    if len(full):
        lines.append(f"Ceiling: with ALL {total} MLP neurons patched from the base, the locating models score "
                     f"{100 * full['contaminated']:.1f}% (contaminated; unpatched {100 * located.causal_exact.acc_con:.1f}%) and "
                     f"{100 * full['uncontaminated']:.1f}% (uncontaminated; unpatched {100 * located.causal_exact.acc_un:.1f}%); "
                     f"the vanilla base scores {vanilla:.1f}%.")
        record["ceiling_all_mlp_patched"] = {k: 100 * v for k, v in full.items()}
    t9 = table9_stats.set_index("score")
    lines.append(f"Paper Table 9 recomputed: TE rho={t9.loc['TE', 'spearman']:.3f} (RMSE {t9.loc['TE', 'rmse']:.2f}), "
                 f"Ori rho={t9.loc['ORI', 'spearman']:.3f} (RMSE {t9.loc['ORI', 'rmse']:.2f}).")
    return Section(record=record, findings=lines)
