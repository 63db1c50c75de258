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
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from jaxtyping import Bool, Float
from scipy.stats import rankdata
from torch import Tensor
from tqdm.auto import tqdm

from kit.core.stats import bootstrap_ci, jaccard
from kit.models import sae_train

from .result import AuditInputs, AuditResult


# ------------------------------------------------------------------ M09 core stability
def make_sae(d_in: int, d_sae: int, l1: float, seed: int, device: str | torch.device = "cpu"):
    """SAELens's ``StandardTrainingSAE`` (ReLU, sparsity penalty ``l1 * sum_j f_j ||W_dec[j]||``),
    seeded; its own initialisation (tied ``W_enc = W_dec.T``, decoder rows of norm 0.1)."""
    from sae_lens import StandardTrainingSAE, StandardTrainingSAEConfig

    torch.manual_seed(seed)
    cfg = StandardTrainingSAEConfig(d_in=d_in, d_sae=d_sae, l1_coefficient=l1, device=str(device))
    return StandardTrainingSAE(cfg)


@torch.no_grad()
def reinitialize_features(sae, which: Bool[Tensor, " d_sae"], generator: torch.Generator) -> None:
    """Fresh random directions (SAELens's tied init: ``W_enc = W_dec.T``, rows of its
    ``decoder_init_norm``) and zero encoder bias for the features in ``which``, written **in place**
    into ``sae``'s own parameters."""
    idx = torch.nonzero(which.cpu()).flatten()
    if len(idx) == 0:
        return
    norm = getattr(sae.cfg, "decoder_init_norm", None) or 1.0
    w = torch.randn(len(idx), sae.W_dec.shape[1], generator=generator)
    w = (w / w.norm(dim=1, keepdim=True) * norm).to(sae.W_dec.device, sae.W_dec.dtype)
    idx = idx.to(sae.W_dec.device)
    sae.W_dec.data[idx] = w
    sae.W_enc.data[:, idx] = w.T
    sae.b_enc.data[idx] = 0.0


@torch.no_grad()
def sparsity_and_fit(sae, acts: Float[Tensor, "n d_in"]) -> tuple[float, float]:
    """``(L0, variance explained)``: mean active features per token and
    ``1 - sum ||x - x_hat||^2 / sum ||x - mean x||^2``."""
    f = sae.encode(acts)
    resid = ((sae.decode(f) - acts) ** 2).sum()
    total = ((acts - acts.mean(0)) ** 2).sum().clamp_min(1e-12)
    return float((f > 0).sum(1).float().mean()), float(1 - resid / total)


def feature_importance(sae, acts: Float[Tensor, "n d_in"]) -> Float[Tensor, " d_sae"]:
    """Mean over tokens of ``|f_j * dL/df_j|`` with L the reconstruction MSE (gradient x
    activation)."""
    f = sae.encode(acts).detach().requires_grad_(True)
    loss = ((sae.decode(f) - acts) ** 2).sum(-1).mean()
    (g,) = torch.autograd.grad(loss, f)
    return (f * g).abs().mean(0).detach().cpu()


def core_set(importance: Float[Tensor, " d_sae"], core_frac: float) -> set[int]:
    """Indices of the top ``max(1, round(core_frac * d_sae))`` features by importance (alive
    only)."""
    k = max(1, round(core_frac * importance.shape[0]))
    top = importance.topk(k).indices
    return {int(i) for i in top if importance[i] > 0}


def random_core_null(d_sae: int, core_frac: float, n_cycles: int) -> dict[str, float]:
    """What cores drawn uniformly at random (same size ``k``, independent per cycle) give:
    expected stable fraction ``(k/d)^n_cycles`` and expected consecutive Jaccard ``q / (2 - q)``
    with ``q = k/d`` (``E|A & B| = k^2/d``)."""
    q = max(1, round(core_frac * d_sae)) / d_sae
    return {"core_fraction": q**n_cycles, "mean_overlap": q / (2 - q)}


def core_stability(
    acts: Float[Tensor, "n d_in"],
    d_sae: int = 256,
    n_cycles: int = 4,
    core_frac: float = 0.1,
    steps: int = 300,
    lr: float = 1e-3,
    l1: float = 0.3,
    seed: int = 0,
    stable_overlap: float = 0.8,
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: bool = False,
    inputs: AuditInputs | None = None,
) -> AuditResult:
    """M09: distillation cycles of train -> core -> re-initialise the rest -> retrain, with
    SAELens's standard (ReLU + L1) training SAE at sparsity coefficient ``l1``.

    Values: ``core_fraction`` (features in the core of every cycle / d_sae), ``mean_overlap``
    (Jaccard of consecutive cycles' cores), ``is_stable`` (mean_overlap > 0.8), per-cycle cores,
    ``l0`` and ``variance_explained`` of every cycle's SAE (a dense SAE, L0 near d_sae, makes the
    core meaningless), and ``reinit_changed_frac`` (share of non-core decoder rows that really
    changed on re-initialisation: 1.0 unless the re-init is a no-op). Null: random cores of the
    same size (:func:`random_core_null`). Report-only.

    >>> import torch
    >>> from kit.audits.stability import core_stability
    >>> acts = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    >>> r = core_stability(acts, d_sae=16, n_cycles=2, steps=5, batch_size=32)
    >>> r.metric, r.diagnostic, r.values["d_sae"], len(r.values["overlaps"])
    ('M09', True, 16, 1)
    """
    if n_cycles < 2:
        raise ValueError(f"n_cycles={n_cycles} must be >= 2 to compare cores between cycles")
    g = torch.Generator().manual_seed(seed)
    acts = acts.float()
    # scale-free hyperparameters: the residual norm differs wildly between models
    acts = (
        (acts - acts.mean(0)) / acts.norm(dim=1).mean().clamp_min(1e-8) * np.sqrt(acts.shape[1])
    ).to(device)
    sae = make_sae(acts.shape[1], d_sae, l1, seed, device)
    cores: list[set[int]] = []
    changed, l0s, fves = [], [], []
    for c in tqdm(range(n_cycles), desc="M09 cycles", disable=not progress):
        if c > 0:
            non_core = torch.ones(d_sae, dtype=torch.bool)
            non_core[list(cores[-1])] = False
            before = sae.W_dec.detach().cpu().clone()
            reinitialize_features(sae, non_core, g)
            changed.append(
                float(
                    (sae.W_dec.detach().cpu()[non_core] != before[non_core]).any(1).float().mean()
                )
            )
        # one SAE recipe for every SAE (kit.models.sae_train): sae_lens's SAETrainer on stored
        # activations, a fresh optimiser and schedule each cycle, so re-initialised features carry
        # no stale moments
        sae = sae_train.train_sae(
            acts,
            d_sae,
            steps * batch_size,
            architecture="standard",
            l1=l1,
            lr=lr,
            batch_size=batch_size,
            seed=seed + c,
            device=str(device),
            sae=sae,
        )
        l0, fve = sparsity_and_fit(sae, acts)
        l0s.append(l0)
        fves.append(fve)
        cores.append(core_set(feature_importance(sae, acts), core_frac))
    stable = set.intersection(*cores)
    overlaps = [jaccard(a, b, empty=1.0) for a, b in zip(cores, cores[1:])]
    mean_overlap = float(np.mean(overlaps))
    null = random_core_null(d_sae, core_frac, n_cycles)
    res = AuditResult(
        metric="M09",
        name="DMSAE core stability",
        value=len(stable) / d_sae,
        values={
            "core_fraction": len(stable) / d_sae,
            "l0": l0s[-1],
            "variance_explained": fves[-1],
            "mean_overlap": mean_overlap,
            "n_stable": len(stable),
            "is_stable": mean_overlap > stable_overlap,
            "l0_per_cycle": l0s,
            "variance_explained_per_cycle": fves,
            "l1_coefficient": l1,
            "overlaps": overlaps,
            "core_sizes": [len(c) for c in cores],
            "reinit_changed_frac": float(np.mean(changed)),
            "null_mean_overlap": null["mean_overlap"],
            "d_sae": d_sae,
            "n_cycles": n_cycles,
            "core_frac": core_frac,
        },
        pass_condition="report-only (diagnostic); is_stable: mean_overlap > %.1f" % stable_overlap,
        passed=True,
        diagnostic=True,
        inputs=inputs or AuditInputs(n=acts.shape[0], seeds=[seed]),
        notes=(
            f"dense SAE: L0 = {l0s[-1]:.0f} of {d_sae} features; raise l1"
            if l0s[-1] > 0.25 * d_sae
            else ""
        ),
    )
    return res.with_null(
        [null["core_fraction"]],
        "random cores of the same size, independent per cycle: (k/d_sae)^n_cycles (expected)",
    )


# ------------------------------------------------------------------ EX25 reproducibility
def align_runs(runs: Sequence[Mapping[str, float]]) -> tuple[list[str], np.ndarray]:
    """Ids every run has (sorted) and the ``runs x ids`` matrix of their values."""
    if len(runs) < 2:
        raise ValueError(f"need >= 2 runs to compare, got {len(runs)}")
    common = sorted(set.intersection(*(set(r) for r in runs)))
    return common, np.array([[float(r[i]) for i in common] for r in runs]).reshape(
        len(runs), len(common)
    )


def coherence(mat: Float[np.ndarray, "runs ids"]) -> float:
    """Mean pairwise Spearman of the runs' per-id values (rows of ``mat``; Pearson of the ranks,
    ties averaged); two identical runs count exactly 1, a constant run 0 against any other."""
    mat = np.asarray(mat, float)
    if mat.shape[0] < 2:
        return float("nan")
    r = rankdata(mat, axis=1)
    r = r - r.mean(1, keepdims=True)
    norm = np.sqrt((r**2).sum(1))
    a, b = np.triu_indices(mat.shape[0], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r[a] * r[b]).sum(1) / (norm[a] * norm[b])
    # identical runs: exactly 1, not the division's rounding of it; a constant run: no order
    rho = np.where(
        (mat[a] == mat[b]).all(1), 1.0, np.where((norm[a] == 0) | (norm[b] == 0), 0.0, rho)
    )
    return float(rho.mean())


def coherence_by_id(table: Float[np.ndarray, "ids runs"]) -> float:
    """:func:`coherence` of an ``ids x runs`` table: one row per id, the unit a bootstrap over ids
    resamples (:func:`coherence_interval`, EX25's claim)."""
    return coherence(np.asarray(table).T)


def coherence_interval(
    mat: Float[np.ndarray, "runs ids"], n_boot: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """``(coherence, low, high)``: percentile bootstrap over the shared ids (columns of ``mat``)."""
    mat = np.asarray(mat, float)
    return bootstrap_ci(coherence_by_id, mat.T, n_boot=n_boot, seed=seed)


def reproducibility(
    runs: Sequence[Mapping[str, float]],
    max_deviation: float = 0.08,
    max_dev_rate: float = 0.05,
    min_coherence: float = 0.9,
    name: str = "pipeline",
    n_null: int = 20,
    inputs: AuditInputs | None = None,
) -> AuditResult:
    """EX25 over runs (id -> value). A run's summary is the mean of its own values.

    ``max_deviation``: largest |summary - mean of summaries| / |mean of summaries|;
    ``deviation_rate``: fraction of run pairs whose summaries differ by more than
    ``max_deviation`` x |mean|; ``coherence_score``: mean pairwise Spearman of the per-id values
    on the ids all runs share (:func:`coherence`). Pass: rate < 0.05, max dev < 0.08, coherence >
    0.9. ``values['per_id']`` keeps the runs x ids matrix, so the claim can bootstrap coherence over
    ids against the page's threshold (:func:`coherence_interval`). Null (of ``coherence_score``,
    shown beside it): each run's values shuffled across ids, ``n_null`` permutations; any pipeline
    whose values depend on the id beats it, so it is context, not the test.

    >>> from kit.audits.stability import reproducibility
    >>> runs = [{"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.1, "b": 2.0, "c": 2.9}]
    >>> r = reproducibility(runs)
    >>> v = r.values
    >>> r.metric, round(v["max_deviation"], 3), round(v["coherence_score"], 3), r.passed
    ('EX25', 0.0, 1.0, True)
    """
    ids, mat = align_runs(runs)
    summaries = np.array([np.mean(list(r.values())) for r in runs], float)
    mu = summaries.mean()
    denom = abs(mu) if mu != 0 else np.nan
    dev = np.abs(summaries - mu) / denom
    pairs = list(itertools.combinations(range(len(runs)), 2))
    rate = float(
        np.mean([abs(summaries[a] - summaries[b]) / denom > max_deviation for a, b in pairs])
    )
    coh = coherence(mat) if len(ids) >= 3 else float("nan")
    md = float(np.nanmax(dev))
    passed = bool(rate < max_dev_rate and md < max_deviation and coh > min_coherence)
    res = AuditResult(
        metric="EX25",
        name=f"Reproducibility ({name})",
        value=rate,
        values={
            "deviation_rate": rate,
            "max_deviation": md,
            "coherence_score": coh,
            "n_runs": len(runs),
            "n_common_ids": len(ids),
            "summaries": summaries,
            "min_coherence": min_coherence,
            "per_id": mat,
        },
        pass_condition=f"deviation_rate < {max_dev_rate}, max_deviation < {max_deviation}, "
        f"coherence > {min_coherence}",
        passed=passed,
        inputs=inputs or AuditInputs(),
        notes="" if len(ids) >= 3 else "fewer than 3 shared ids: coherence undefined",
    )
    if len(ids) >= 3:
        rng = np.random.default_rng(0)
        null = [
            coherence(np.stack([row[rng.permutation(len(ids))] for row in mat]))
            for _ in range(n_null)
        ]
        res.with_null(
            null,
            f"each run's values shuffled across ids, {n_null} permutations",
            of="coherence_score",
            passed=bool(np.mean(null) > min_coherence),
        )
    if len(runs) >= 2 and np.ptp(summaries) == 0:
        res.by_construction = (
            "every run has the same summary: deviation_rate and max_deviation are 0 "
            "(only coherence can fail)"
        )
    return res


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


def mui_runs(
    model, items_by_task: Mapping[str, list], seeds: list[int], frac: float = 0.8, **mui_kwargs
) -> list[dict[str, float]] | str:
    """Our MUI pipeline (``kit.mui.metric.utilization_for_items``, reference answers as responses)
    per task on seeded subsamples: run ``s`` maps task -> MUI. Returns a reason string if
    ``kit.mui.metric`` is unavailable."""
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
            out[task] = mui.utilization_for_items(
                model, sub, [it.target for it in sub], **mui_kwargs
            ).mui
        return out

    return run_seeds(one, seeds)


def cg_runs(
    item_concepts: Mapping[str, np.ndarray], seeds: list[int], frac: float = 0.8
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
