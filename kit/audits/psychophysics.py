"""Psychophysics audits of a circuit: EX1 d-prime (signal detection), EX2 DIF, EX11 Weber/JND.

All three read the circuit's behaviour through the IOI logit difference (``kit.audits.circuits``).

- EX1 (Green & Swets 1966): hits = prompts the full model gets right (logit diff > 0); false
  alarms = prompts still right with every circuit head mean-ablated.
  ``d' = Z(H) - Z(F)``, ``beta = -(Z(H) + Z(F)) / 2``; rates are clipped to
  ``[1/(2n), 1 - 1/(2n)]`` (Macmillan & Creelman's correction) so a perfect detector has the
  finite d' ``2 Z(1 - 1/(2n))``. AUC sweeps the threshold over both logit-diff distributions.
- EX2 (Holland & Wainer 1993): Cohen's d of the circuit's logit diff between name groups of
  different training frequency, every pair; DIF magnitude = max |d|; the *circuit's* output is
  the model with every non-circuit head mean-ablated (the public sketch used the whole model).
- EX11 (Weber, Fechner): scale each circuit head's output by ``b * s`` at baselines ``b`` in
  {1, 0.5}; the JND is the smallest ``1 - s`` whose logit diff differs from the baseline's by more
  than 5% of it *in either direction* (the sketch only looked for drops). Weber fraction =
  JND / b in units of the baseline; consistency = 1 - std / mean over heads and baselines.
"""

from __future__ import annotations

import itertools
from typing import Iterable, cast

import numpy as np
from jaxtyping import Float
from scipy.stats import norm
from torch import Tensor

from .circuits import Head, IOIBatch, all_heads, run_heads
from .result import AuditInputs, AuditResult

WEBER_SCALES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0)
WEBER_BASELINES = (1.0, 0.5)


# ------------------------------------------------------------------ EX1: signal detection
def clip_rate(rate: float, n: int) -> float:
    """Clip a rate to ``[1/(2n), 1 - 1/(2n)]`` so its z-score is finite."""
    if n < 1:
        raise ValueError(f"n={n} must be >= 1")
    lo = 1 / (2 * n)
    return float(min(max(rate, lo), 1 - lo))


def dprime(hit_rate: float, fa_rate: float, n_signal: int, n_noise: int) -> tuple[float, float]:
    """``(d', beta)`` from hit and false-alarm rates (clipped by trial counts)."""
    zh = norm.ppf(clip_rate(hit_rate, n_signal))
    zf = norm.ppf(clip_rate(fa_rate, n_noise))
    return float(zh - zf), float(-0.5 * (zh + zf))


def _scores_labels(signal: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    signal, noise = np.asarray(signal, float).ravel(), np.asarray(noise, float).ravel()
    if signal.size == 0 or noise.size == 0:
        raise ValueError(f"signal and noise need scores, got {signal.size} and {noise.size}")
    labels = np.concatenate([np.ones(signal.size), np.zeros(noise.size)])
    return np.concatenate([signal, noise]), labels


def roc_curve(signal: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false-alarm rates, hit rates) sweeping a threshold over all observed values, from (0, 0)
    (nothing passes) to (1, 1): scikit-learn's ``roc_curve`` with every threshold kept."""
    from sklearn.metrics import roc_curve as sk_roc_curve

    scores, labels = _scores_labels(signal, noise)
    fpr, tpr, _ = sk_roc_curve(labels, scores, drop_intermediate=False)
    return fpr, tpr


def auc(signal: np.ndarray, noise: np.ndarray) -> float:
    """P(signal score > noise score) + 0.5 P(tie) (Mann-Whitney), the exact ROC area:
    scikit-learn's ``roc_auc_score`` (O((n + m) log(n + m)), not the n x m comparison)."""
    from sklearn.metrics import roc_auc_score

    scores, labels = _scores_labels(signal, noise)
    return float(roc_auc_score(labels, scores))


def dprime_audit(
    full_ld: np.ndarray,
    ablated_ld: np.ndarray,
    inputs: AuditInputs | None = None,
    min_dprime: float = 1.0,
    min_auc: float = 0.7,
) -> AuditResult:
    """EX1 from per-prompt logit diffs of the full model (signal) and of the model with the
    circuit mean-ablated (noise). Pass: ``d' > 1`` and ``AUC > 0.7``.

    >>> import numpy as np
    >>> from kit.audits.psychophysics import dprime_audit
    >>> full = np.array([2.0, 2.5, 3.0, 3.5, 1.0, 2.2, 0.8, 1.9])
    >>> ablated = np.array([-1.0, -0.5, 0.2, -2.0, -0.3, -1.2, -0.1, -0.7])
    >>> r = dprime_audit(full, ablated)
    >>> r.metric, round(r.value, 2), r.values["auc"], r.passed
    ('EX1', 2.68, 1.0, True)
    """
    full_ld, ablated_ld = np.asarray(full_ld, float), np.asarray(ablated_ld, float)
    hr, fa = float((full_ld > 0).mean()), float((ablated_ld > 0).mean())
    d, beta = dprime(hr, fa, len(full_ld), len(ablated_ld))
    a = auc(full_ld, ablated_ld)
    fpr, tpr = roc_curve(full_ld, ablated_ld)
    # the clipped rates bound d' by ppf(1 - 1/(2 n_signal)) + ppf(1 - 1/(2 n_noise))
    bound = float(norm.ppf(1 - 1 / (2 * len(full_ld))) + norm.ppf(1 - 1 / (2 * len(ablated_ld))))
    r = AuditResult(
        metric="EX1",
        name="d-prime (signal detection)",
        value=d,
        values={
            "dprime": d,
            "beta": beta,
            "hit_rate": hr,
            "false_alarm_rate": fa,
            "auc": a,
            "clip_bound": bound,
            "roc_fpr": fpr,
            "roc_tpr": tpr,
        },
        pass_condition=f"d' > {min_dprime} and AUC > {min_auc}",
        passed=bool(d > min_dprime and a > min_auc),
        inputs=inputs or AuditInputs(n=len(full_ld)),
    )
    if bound <= min_dprime:
        r.decided(
            f"with {len(full_ld)} + {len(ablated_ld)} prompts the clipped rates bound d' by "
            f"{bound:.2f} <= {min_dprime}: the audit fails whatever the circuit"
        )
    return r


# ------------------------------------------------------------------ EX2: DIF
def cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """``(mean a - mean b) / s_pooled`` with ``s_pooled^2 = ((n_a-1) s_a^2 + (n_b-1) s_b^2) /
    (n_a+n_b-2)``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Cohen's d needs >= 2 values per group, got {len(a)} and {len(b)}")
    pooled = np.sqrt(
        ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2)
    )
    diff = a.mean() - b.mean()
    if pooled == 0:
        return 0.0 if diff == 0 else float(np.sign(diff) * np.inf)
    return float(diff / pooled)


def dif_audit(
    values: np.ndarray,
    groups: list[str],
    inputs: AuditInputs | None = None,
    max_d: float = 0.5,
    full_model_values: np.ndarray | None = None,
    n_null: int = 20,
    seed: int = 0,
) -> AuditResult:
    """EX2: Cohen's d of ``values`` (the circuit's logit diffs) for every pair of ``groups``.
    Pass: max |d| < 0.5. ``full_model_values`` adds the whole model's DIF for comparison.
    Null: max |d| with the group labels shuffled (``n_null`` permutations): what sampling noise
    alone gives with these group sizes. Constant values give d = 0: passes by construction.

    >>> import numpy as np
    >>> from kit.audits.psychophysics import dif_audit
    >>> logit_diffs = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 1.3])
    >>> r = dif_audit(logit_diffs, ["frequent"] * 3 + ["rare"] * 3)  # |d| = 0.65 >= 0.5: DIF
    >>> r.metric, round(r.value, 2), r.passed
    ('EX2', 0.65, False)
    """
    values = np.asarray(values, float)
    names = sorted(set(groups))
    if len(names) < 2:
        raise ValueError(
            f"DIF needs >= 2 name groups, got {names}: pass items with metadata 'name_group'"
        )
    g = np.asarray(groups)

    def pairs(v: np.ndarray, lab: np.ndarray = g) -> dict[str, float]:
        return {
            f"{x}-{y}": cohens_d(v[lab == x], v[lab == y])
            for x, y in itertools.combinations(names, 2)
        }

    d = pairs(values)
    mag = max(abs(x) for x in d.values())
    vals = {
        "max_abs_d": mag,
        "pairwise_d": d,
        "group_mean": {k: float(values[g == k].mean()) for k in names},
        "group_std": {k: float(values[g == k].std(ddof=1)) for k in names},
        "group_n": {k: int((g == k).sum()) for k in names},
        "group_accuracy": {k: float((values[g == k] > 0).mean()) for k in names},
    }
    if full_model_values is not None:
        fm = np.asarray(full_model_values, float)
        vals["full_model_pairwise_d"] = pairs(fm)
        vals["full_model_group_mean"] = {k: float(fm[g == k].mean()) for k in names}
    r = AuditResult(
        metric="EX2",
        name="Differential item functioning",
        value=mag,
        values=vals,
        pass_condition=f"max |Cohen's d| < {max_d} over name-group pairs",
        passed=bool(mag < max_d),
        inputs=inputs or AuditInputs(n=len(values)),
    )
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(n_null):
        null.append(max(abs(x) for x in pairs(values, g[rng.permutation(len(g))]).values()))
    r.with_null(
        null, f"group labels shuffled, {n_null} permutations", passed=bool(np.mean(null) < max_d)
    )
    if np.ptp(values) == 0:
        r.decided("the circuit's logit diff is the same on every prompt: every d is 0")
    return r


# ------------------------------------------------------------------ EX11: Weber / JND
def jnd(
    scales: Iterable[float],
    responses: Iterable[float],
    baseline_response: float,
    rel_threshold: float = 0.05,
) -> float | None:
    """Smallest ``1 - s`` whose response differs from the baseline by more than
    ``rel_threshold * |baseline|`` in either direction; ``None`` if no scale is detectable.

    ``scales`` are relative to the baseline (1.0 = the baseline itself).
    """
    best = None
    tol = rel_threshold * abs(baseline_response)
    for s, r in zip(scales, responses):
        if s == 1.0:
            continue
        if abs(r - baseline_response) > tol and (best is None or abs(1 - s) < best):
            best = abs(1 - s)
    return best


def weber_consistency(fractions: Iterable[float]) -> float | None:
    """``1 - std / mean`` of the Weber fractions (``None`` with fewer than two or mean 0)."""
    x = np.asarray([f for f in fractions if f is not None], float)
    if len(x) < 2 or x.mean() == 0:
        return None
    return float(1 - x.std() / x.mean())


def weber_curves(
    model,
    batch: IOIBatch,
    means: Tensor,
    heads: list[Head],
    scales: Iterable[float] = WEBER_SCALES,
    baselines: Iterable[float] = WEBER_BASELINES,
) -> dict[str, dict[str, list[float]]]:
    """Mean logit diff with each head's output scaled by ``b * s``: ``{head: {str(b): [...]}}``."""
    scales, baselines = list(scales), list(baselines)
    out: dict[str, dict[str, list[float]]] = {}
    for h in heads:
        seen: dict[float, float] = {}  # b * s -> its mean: (1.0, 0.5) and (0.5, 1.0) run once

        def mean_at(factor: float, h=h) -> float:
            if factor not in seen:
                seen[factor] = float(
                    run_heads(model, batch, means, scale={cast(Head, tuple(h)): factor}).mean()
                )
            return seen[factor]

        out[f"{h[0]}.{h[1]}"] = {str(b): [mean_at(b * s) for s in scales] for b in baselines}
    return out


def weber_audit(
    curves: dict[str, dict[str, list[float]]],
    scales: Iterable[float] = WEBER_SCALES,
    rel_threshold: float = 0.05,
    inputs: AuditInputs | None = None,
) -> AuditResult:
    """EX11 from ``weber_curves``. Pass: every circuit head has a detectable JND at full
    baseline.

    >>> from kit.audits.psychophysics import weber_audit
    >>> scales = [0.0, 0.5, 1.0, 1.5, 2.0]
    >>> curves = {"0.1": {"1.0": [0.0, 0.5, 1.0, 1.5, 2.0]}, "0.2": {"1.0": [1.0] * 5}}
    >>> r = weber_audit(curves, scales)  # head 0.2 ignores its scale: no JND, so EX11 fails
    >>> r.metric, r.values["jnd"], r.value, r.passed
    ('EX11', {'0.1': {'1.0': 0.5}, '0.2': {'1.0': None}}, 0.5, False)
    """
    scales = list(scales)
    if 1.0 not in scales:
        raise ValueError(f"scales must include 1.0 (the baseline itself), got {scales}")
    i1 = scales.index(1.0)
    jnds: dict[str, dict[str, float | None]] = {}
    fractions: list[float] = []
    for head, per_base in curves.items():
        jnds[head] = {}
        for b, resp in per_base.items():
            j = jnd(scales, resp, resp[i1], rel_threshold)
            jnds[head][b] = j
            # scales are relative to the baseline, so j is already JND / baseline
            if j is not None:
                fractions.append(j)
    detectable = {h: jnds[h].get("1.0") is not None for h in jnds}
    all_ok = bool(detectable) and all(detectable.values())
    cons = weber_consistency(fractions)
    return AuditResult(
        metric="EX11",
        name="Weber-Fechner / JND",
        value=float(np.mean(list(detectable.values()))) if detectable else None,
        values={
            "frac_heads_detectable": float(np.mean(list(detectable.values())))
            if detectable
            else None,
            "detectable": detectable,
            "jnd": jnds,
            "weber_fractions": fractions,
            "weber_consistency": cons,
            "scales": scales,
            "curves": curves,
        },
        pass_condition=f"every circuit head has a JND (|change| > {rel_threshold:.0%} of "
        "baseline, either direction)",
        passed=all_ok,
        inputs=inputs or AuditInputs(),
        notes="" if detectable else "empty circuit: no heads to test",
    )


# ------------------------------------------------------------------ null controls
def random_circuits(model, circuit: list[Head], n: int, seed: int = 0) -> list[list[Head]]:
    """``n`` random sets of heads of the circuit's size drawn from the heads outside it (from all
    heads when too few remain)."""
    keep = set(map(tuple, circuit))
    pool = [h for h in all_heads(model) if h not in keep]
    pool = pool if len(pool) >= len(circuit) else all_heads(model)
    rng = np.random.default_rng(seed)
    return [
        sorted(pool[i] for i in rng.choice(len(pool), len(circuit), replace=False))
        for _ in range(n)
    ]


def attach_random_circuit_nulls(
    model,
    batch: IOIBatch,
    means: Tensor,
    circuit: list[Head],
    ex1: AuditResult,
    ex11: AuditResult,
    scales: Iterable[float],
    baselines: Iterable[float],
    rel_threshold: float,
    n: int = 3,
    seed: int = 0,
    n_dprime: int | None = None,
) -> None:
    """EX1's d' and EX11's detectable fraction for random circuits of the same size (in place):
    ``n_dprime`` draws for EX1 (two forward passes each; default ``n``), the first ``n`` of them for
    EX11 (a Weber curve per head, scale and baseline each).

    EX11 is decided by construction when every random circuit passes too: at these scales and
    threshold every head of the model has a JND, so "every circuit head has one" holds for any
    circuit (a one-head circuit chosen for its large effect is the extreme case)."""
    if not circuit:
        return
    n_dprime = n if n_dprime is None else n_dprime
    d, d_passes, frac, passes = [], [], [], []
    # the full model's logit diffs are the same for every draw: one forward pass, not one per draw
    full = run_heads(model, batch, means).numpy() if n_dprime else None
    for i, heads in enumerate(random_circuits(model, circuit, max(n, n_dprime), seed)):
        if i < n_dprime and full is not None:
            r1 = dprime_audit(full, _ablated_logit_diffs(model, batch, means, heads).numpy())
            d.append(r1.value)
            d_passes.append(r1.passed)
        if i < n:
            r = weber_audit(
                weber_curves(model, batch, means, heads, scales, baselines), scales, rel_threshold
            )
            frac.append(r.value)
            passes.append(r.passed)
    how = f"random circuits of {len(circuit)} head(s) outside the circuit"
    ex1.with_null(d, f"{how}, {len(d)} draws", passed=all(d_passes))
    ex11.with_null(frac, f"{how}, {len(frac)} draws", passed=all(passes))
    if all(passes):
        ex11.decided(
            f"all {n} random {len(circuit)}-head circuits pass too: at scales down to "
            f"{min(scales)} and a {rel_threshold:.0%} threshold every head tried has a JND"
        )


# ------------------------------------------------------------------ model-level helpers
def circuit_logit_diffs(
    model, batch: IOIBatch, means: Tensor, circuit: list[Head]
) -> dict[str, Float[Tensor, " batch"]]:
    """Per-prompt logit diffs: ``full`` model, ``ablated`` (circuit heads mean-ablated) and
    ``circuit_only`` (every other head mean-ablated)."""
    keep = set(map(tuple, circuit))
    return {
        "full": run_heads(model, batch, means),
        "ablated": _ablated_logit_diffs(model, batch, means, circuit),
        "circuit_only": run_heads(
            model, batch, means, ablate=[h for h in all_heads(model) if h not in keep]
        ),
    }


def _ablated_logit_diffs(model, batch: IOIBatch, means: Tensor, circuit: list[Head]) -> Tensor:
    """Per-prompt logit diffs with the ``circuit`` heads mean-ablated."""
    return run_heads(model, batch, means, ablate=cast("list[Head]", list(set(map(tuple, circuit)))))


__all__ = [
    "clip_rate",
    "dprime",
    "roc_curve",
    "auc",
    "dprime_audit",
    "cohens_d",
    "dif_audit",
    "jnd",
    "weber_consistency",
    "weber_curves",
    "weber_audit",
    "circuit_logit_diffs",
]
