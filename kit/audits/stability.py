"""Reliability audits: M09 core stability (Martin-Linares & Ling 2025) and EX25 reproducibility
(Bai et al. 2026), the latter also applied to our own MUI (``kit.mui.metric``) and Competency-Gaps
(``kit.cg.metrics``) pipelines.

M09: train a small SAE on stored activations, mark the top ``core_frac`` features by
gradient x activation importance as the core, re-initialise every non-core feature *in the SAE's
own parameters* (the public sketch wrote into a copy, so nothing was ever re-initialised) and
retrain; after ``n_cycles`` the stable core is the set of features in the core of every cycle.

EX25: each run maps prompt id -> value; runs are compared on the ids they share (the sketch
compared prompt lists position by position after shuffling them, i.e. different prompts).
"""

from __future__ import annotations

import itertools
from typing import Callable, Mapping

import numpy as np
import torch
from jaxtyping import Bool, Float
from scipy.stats import spearmanr
from torch import Tensor, nn
from tqdm.auto import tqdm

from .result import AuditInputs, AuditResult


# ------------------------------------------------------------------ M09 core stability
class TinySAE(nn.Module):
    """ReLU SAE ``f = relu((x - b_dec) W_enc + b_enc)``, ``x_hat = f W_dec + b_dec``, unit-norm decoder rows."""

    def __init__(self, d_in: int, d_sae: int, generator: torch.Generator):
        super().__init__()
        self.W_enc = nn.Parameter(torch.empty(d_in, d_sae))
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(torch.empty(d_sae, d_in))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        reinitialize_features(self, torch.ones(d_sae, dtype=torch.bool), generator)

    def encode(self, x: Float[Tensor, "n d_in"]) -> Float[Tensor, "n d_sae"]:
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def decode(self, f: Float[Tensor, "n d_sae"]) -> Float[Tensor, "n d_in"]:
        return f @ self.W_dec + self.b_dec


@torch.no_grad()
def reinitialize_features(sae: TinySAE, which: Bool[Tensor, " d_sae"], generator: torch.Generator) -> None:
    """Fresh random unit-norm directions (tied init: ``W_enc = W_dec.T``) and zero encoder bias
    for the features in ``which``, written **in place** into ``sae``'s parameters."""
    idx = torch.nonzero(which).flatten()
    if len(idx) == 0:
        return
    w = torch.randn(len(idx), sae.W_dec.shape[1], generator=generator)
    w = w / w.norm(dim=1, keepdim=True)
    sae.W_dec.data[idx] = w
    sae.W_enc.data[:, idx] = w.T
    sae.b_enc.data[idx] = 0.0


def train_sae(sae: TinySAE, acts: Float[Tensor, "n d_in"], steps: int, lr: float = 1e-3, l1: float = 1e-3,
              batch_size: int = 256, generator: torch.Generator | None = None) -> float:
    """Adam on ``MSE + l1 * sum|f|`` (a fresh optimiser, so re-initialised features carry no
    stale moments); decoder rows renormalised each step. Returns the final batch loss."""
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        idx = torch.randint(0, acts.shape[0], (min(batch_size, acts.shape[0]),), generator=generator)
        x = acts[idx]
        f = sae.encode(x)
        loss = ((sae.decode(f) - x) ** 2).sum(-1).mean() + l1 * f.abs().sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            sae.W_dec.data /= sae.W_dec.data.norm(dim=1, keepdim=True).clamp_min(1e-8)
    return float(loss.detach())


def feature_importance(sae: TinySAE, acts: Float[Tensor, "n d_in"]) -> Float[Tensor, " d_sae"]:
    """Mean over tokens of ``|f_j * dL/df_j|`` with L the reconstruction MSE (gradient x activation)."""
    f = sae.encode(acts).detach().requires_grad_(True)
    loss = ((sae.decode(f) - acts) ** 2).sum(-1).mean()
    (g,) = torch.autograd.grad(loss, f)
    return (f * g).abs().mean(0).detach()


def core_set(importance: Float[Tensor, " d_sae"], core_frac: float) -> set[int]:
    """Indices of the top ``max(1, round(core_frac * d_sae))`` features by importance (alive only)."""
    k = max(1, round(core_frac * importance.shape[0]))
    top = importance.topk(k).indices
    return {int(i) for i in top if importance[i] > 0}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def core_stability(acts: Float[Tensor, "n d_in"], d_sae: int = 256, n_cycles: int = 4, core_frac: float = 0.1,
                   steps: int = 300, lr: float = 1e-3, l1: float = 1e-3, seed: int = 0, stable_overlap: float = 0.8,
                   progress: bool = False, inputs: AuditInputs | None = None) -> AuditResult:
    """M09: distillation cycles of train -> core -> re-initialise the rest -> retrain.

    Values: ``core_fraction`` (features in the core of every cycle / d_sae), ``mean_overlap``
    (Jaccard of consecutive cycles' cores), ``is_stable`` (mean_overlap > 0.8), per-cycle cores,
    and ``reinit_changed_frac`` (share of non-core decoder rows that really changed on
    re-initialisation: 1.0 unless the re-init is a no-op). Report-only.
    """
    if n_cycles < 2:
        raise ValueError(f"n_cycles={n_cycles} must be >= 2 to compare cores between cycles")
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    acts = acts.float()
    # scale-free hyperparameters: the residual norm differs wildly between models
    acts = (acts - acts.mean(0)) / acts.norm(dim=1).mean().clamp_min(1e-8) * np.sqrt(acts.shape[1])
    sae = TinySAE(acts.shape[1], d_sae, g)
    cores: list[set[int]] = []
    losses, changed = [], []
    for c in tqdm(range(n_cycles), desc="M09 cycles", disable=not progress):
        if c > 0:
            non_core = torch.ones(d_sae, dtype=torch.bool)
            non_core[list(cores[-1])] = False
            before = sae.W_dec.detach().clone()
            reinitialize_features(sae, non_core, g)
            changed.append(float((sae.W_dec.detach()[non_core] != before[non_core]).any(1).float().mean()))
        losses.append(train_sae(sae, acts, steps, lr, l1, generator=g))
        cores.append(core_set(feature_importance(sae, acts), core_frac))
    stable = set.intersection(*cores)
    overlaps = [jaccard(a, b) for a, b in zip(cores, cores[1:])]
    mean_overlap = float(np.mean(overlaps))
    return AuditResult(metric="M09", name="DMSAE core stability", value=len(stable) / d_sae,
                       values={"core_fraction": len(stable) / d_sae, "n_stable": len(stable),
                               "mean_overlap": mean_overlap, "is_stable": mean_overlap > stable_overlap,
                               "overlaps": overlaps, "core_sizes": [len(c) for c in cores],
                               "final_losses": losses, "reinit_changed_frac": float(np.mean(changed)),
                               "d_sae": d_sae, "n_cycles": n_cycles, "core_frac": core_frac},
                       pass_condition="report-only (diagnostic); is_stable: mean_overlap > %.1f" % stable_overlap,
                       passed=True, diagnostic=True, inputs=inputs or AuditInputs(n=acts.shape[0], seeds=[seed]))


# ------------------------------------------------------------------ EX25 reproducibility
def align_runs(runs: list[Mapping[str, float]]) -> tuple[list[str], np.ndarray]:
    """Ids every run has (sorted) and the ``runs x ids`` matrix of their values."""
    if len(runs) < 2:
        raise ValueError(f"need >= 2 runs to compare, got {len(runs)}")
    common = sorted(set.intersection(*(set(r) for r in runs)))
    return common, np.array([[float(r[i]) for i in common] for r in runs]).reshape(len(runs), len(common))


def reproducibility(runs: list[Mapping[str, float]], max_deviation: float = 0.08, max_dev_rate: float = 0.05,
                    min_coherence: float = 0.9, name: str = "pipeline",
                    inputs: AuditInputs | None = None) -> AuditResult:
    """EX25 over runs (id -> value). A run's summary is the mean of its own values.

    ``max_deviation``: largest |summary - mean of summaries| / |mean of summaries|;
    ``deviation_rate``: fraction of run pairs whose summaries differ by more than
    ``max_deviation`` x |mean|; ``coherence_score``: mean pairwise Spearman of the per-id values
    on the ids all runs share. Pass: rate < 0.05, max dev < 0.08, coherence > 0.9.
    """
    ids, mat = align_runs(runs)
    summaries = np.array([np.mean(list(r.values())) for r in runs], float)
    mu = summaries.mean()
    denom = abs(mu) if mu != 0 else np.nan
    dev = np.abs(summaries - mu) / denom
    pairs = list(itertools.combinations(range(len(runs)), 2))
    rate = float(np.mean([abs(summaries[a] - summaries[b]) / denom > max_deviation for a, b in pairs]))
    rhos = []
    if len(ids) >= 3:
        for a, b in pairs:
            if np.ptp(mat[a]) == 0 or np.ptp(mat[b]) == 0:
                rhos.append(1.0 if np.array_equal(mat[a], mat[b]) else 0.0)
            else:
                rhos.append(float(spearmanr(mat[a], mat[b]).statistic))
    coherence = float(np.mean(rhos)) if rhos else float("nan")
    md = float(np.nanmax(dev))
    passed = bool(rate < max_dev_rate and md < max_deviation and coherence > min_coherence)
    return AuditResult(metric="EX25", name=f"Reproducibility ({name})", value=rate,
                       values={"deviation_rate": rate, "max_deviation": md, "coherence_score": coherence,
                               "n_runs": len(runs), "n_common_ids": len(ids), "summaries": summaries},
                       pass_condition=f"deviation_rate < {max_dev_rate}, max_deviation < {max_deviation}, coherence > {min_coherence}",
                       passed=passed, inputs=inputs or AuditInputs(),
                       notes="" if len(ids) >= 3 else "fewer than 3 shared ids: coherence undefined")


def subsample_ids(ids: list[str], frac: float, seed: int) -> list[str]:
    """A seeded subsample of ``ids`` in shuffled order (what each EX25 run sees)."""
    if not 0 < frac <= 1:
        raise ValueError(f"frac={frac} must be in (0, 1]")
    rng = np.random.default_rng(seed)
    k = max(1, int(round(frac * len(ids))))
    return [ids[i] for i in rng.permutation(len(ids))[:k]]


def run_seeds(fn: Callable[[int], Mapping[str, float]], seeds: list[int]) -> list[dict[str, float]]:
    """Call a pipeline once per seed; it returns id -> value."""
    return [dict(fn(s)) for s in seeds]


def mui_runs(model, items_by_task: Mapping[str, list], seeds: list[int], frac: float = 0.8,
             **mui_kwargs) -> list[dict[str, float]] | str:
    """Our MUI pipeline (``kit.mui.metric.utilization_for_items``, reference answers as responses) per
    task on seeded subsamples: run ``s`` maps task -> MUI. Returns a reason string if ``kit.mui.metric``
    is unavailable."""
    try:
        from kit.mui import metric as mui
    except ImportError as e:
        return f"kit.mui.metric unavailable ({e})"
    if not hasattr(mui, "utilization_for_items"):
        return "kit.mui.metric has no utilization_for_items"

    def one(seed: int) -> dict[str, float]:
        out = {}
        for task, items in items_by_task.items():
            keep = set(subsample_ids([it.id for it in items], frac, seed))
            sub = [it for it in items if it.id in keep]
            out[task] = mui.utilization_for_items(model, sub, [it.target for it in sub], **mui_kwargs).mui
        return out

    return run_seeds(one, seeds)


def cg_runs(item_concepts: Mapping[str, np.ndarray], seeds: list[int], frac: float = 0.8
            ) -> list[dict[str, float]] | str:
    """Our Competency-Gaps pipeline (``kit.cg.metrics.x_bench``) on seeded item subsamples of each
    benchmark: run ``s`` maps concept index -> X_bench (concepts active somewhere only).
    ``item_concepts[benchmark]`` is items x concepts (eq. 1's length-normalised sums)."""
    try:
        from kit.cg import metrics as cg
    except ImportError as e:
        return f"kit.cg.metrics unavailable ({e})"
    if not hasattr(cg, "x_bench"):
        return "kit.cg.metrics has no x_bench"
    alive = np.flatnonzero(sum(np.asarray(a).sum(0) for a in item_concepts.values()) > 0)

    def one(seed: int) -> dict[str, float]:
        rng = np.random.default_rng(seed)
        sub = {}
        for b, a in item_concepts.items():
            a = np.asarray(a)
            k = max(1, int(round(frac * a.shape[0])))
            sub[b] = a[rng.permutation(a.shape[0])[:k]]
        x = cg.x_bench(sub)
        return {str(c): float(x[c]) for c in alive}

    return run_seeds(one, seeds)
