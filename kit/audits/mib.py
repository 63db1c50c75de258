"""The MIB faithfulness curve of a circuit's ranked edges (CPR / CMD) and its audit.

Mueller et al. 2025 (MIB): ``faithfulness_curve`` keeps the top edges **by score** at each
threshold, keeps the heads they touch, mean-ablates every other head
(:func:`kit.audits.circuits.circuit_performance`), and normalises
``f = (m(C) - m(empty)) / (m(N) - m(empty))``. CPR = area under f, CMD = area of |1 - f|.
``mib_audit`` adds the saturation floor and a random-ranking null.

The public sketch sorted edges by layer and reported the raw logit-diff ratio; both are fixed here.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from torch import Tensor

from .circuits import (
    Edge,
    IOIBatch,
    all_heads,
    circuit_performance,
    edges_to_heads,
    run_heads,
)
from .result import AuditInputs, AuditResult

MIB_THRESHOLDS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def faithfulness(m_circuit: float, m_full: float, m_empty: float) -> float:
    """MIB's normalised faithfulness ``(m(C) - m(empty)) / (m(N) - m(empty))``; NaN if N = empty."""
    denom = m_full - m_empty
    return float("nan") if abs(denom) < 1e-12 else (m_circuit - m_empty) / denom


def cpr_cmd(
    thresholds: Iterable[float], f: Iterable[float], log_scale: bool = False
) -> tuple[float, float]:
    """CPR = area under f(t), CMD = area of |1 - f(t)| (trapezoid over the thresholds'
    span, divided by that span so that f = 1 gives CPR = 1 and CMD = 0 exactly).

    ``log_scale``: integrate over ``ln t`` (MIB's ``evaluate_area_under_curve(log_scale=True)``),
    which weighs 0.1%-1% of the edges as much as 10%-100%; the page integrates over ``t``
    (linear), where everything below 10% of the edges is under 10% of the area. MIB reports the
    raw area (in units of ``ln t``); we divide by the span in both cases.
    MIB takes the absolute deficit: an over-faithful f > 1 is also a deviation from the model.
    """
    t, y = np.asarray(list(thresholds), float), np.asarray(list(f), float)
    if t.shape != y.shape or len(t) < 2:
        raise ValueError(
            f"need >= 2 thresholds with one f each, got {len(t)} thresholds and {len(y)} values"
        )
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"thresholds must be strictly increasing, got {t.tolist()}")
    if log_scale:
        if t[0] <= 0:
            raise ValueError(f"log_scale needs thresholds > 0, got {t[0]}")
        t = np.log(t)
    span = t[-1] - t[0]
    return float(np.trapezoid(y, t) / span), float(np.trapezoid(np.abs(1 - y), t) / span)


def faithfulness_curve(
    model,
    batch: IOIBatch,
    means: Tensor,
    edges: list[Edge],
    thresholds: Iterable[float] = MIB_THRESHOLDS,
    ends: tuple[float, float] | None = None,
) -> dict[str, list]:
    """f(t) at each edge fraction t: the top ``max(1, floor(t * E))`` edges by score.

    ``edges`` are re-sorted by score here, so a caller's order (e.g. by layer) cannot leak in.
    ``ends``: ``(m(N), m(empty))`` already computed on this batch (:func:`curve_ends`), so that
    curves of several rankings run them once. One forward pass per distinct set of heads other
    than every head (``m(N)``, nothing ablated) and none (``m(empty)``).
    """
    ranked = sorted(edges, key=lambda e: -e.score)
    m_full, m_empty = ends if ends is not None else curve_ends(model, batch, means)
    # every head kept ablates nothing and none kept ablates all: the passes of m(N) and m(empty)
    cache: dict[frozenset, float] = {frozenset(all_heads(model)): m_full, frozenset(): m_empty}
    out: dict[str, list] = {"threshold": [], "n_edges": [], "n_heads": [], "f": []}
    for t in thresholds:
        n = max(1, int(np.floor(t * len(ranked))))
        heads = frozenset(edges_to_heads(ranked[:n]))
        if heads not in cache:
            cache[heads] = circuit_performance(model, batch, means, heads)
        out["threshold"].append(float(t))
        out["n_edges"].append(n)
        out["n_heads"].append(len(heads))
        out["f"].append(faithfulness(cache[heads], m_full, m_empty))
    out["m_full"], out["m_empty"] = [m_full], [m_empty]
    return out


def curve_ends(model, batch: IOIBatch, means: Tensor) -> tuple[float, float]:
    """``(m(N), m(empty))``: the mean logit diff with no head ablated and with every head
    mean-ablated (MIB's normalisation)."""
    return float(run_heads(model, batch, means).mean()), circuit_performance(
        model, batch, means, []
    )


def _mib_note(cpr: float, m_full: float, m_empty: float) -> str:
    if not np.isfinite(cpr):
        return "m(N) = m(empty): ablating every head changes nothing, f undefined"
    if m_full < m_empty:
        return (
            f"m(N)={m_full:.3g} < m(empty)={m_empty:.3g}: the heads lower the task metric on "
            "average, so f's sign is flipped and CPR is not interpretable"
        )
    if (
        abs(m_full - m_empty) < 0.1 * max(abs(m_full), abs(m_empty), 1e-12)
        or abs(m_full - m_empty) < 0.05
    ):
        return (
            f"m(N)={m_full:.3g} and m(empty)={m_empty:.3g} nearly coincide: the heads barely carry "
            "the task, so the normalised f is dominated by noise"
        )
    return ""


def cpr_floor(
    thresholds: Iterable[float], saturated: Iterable[bool], log_scale: bool = False
) -> float:
    """CPR a circuit gets for free: f = 1 wherever every head is kept (the full model, by
    construction) and f = 0 (no better than the empty circuit) everywhere else."""
    return cpr_cmd(thresholds, np.asarray(list(saturated), float), log_scale)[0]


def random_ranking_cprs(
    model,
    batch: IOIBatch,
    means: Tensor,
    edges: list[Edge],
    thresholds: Iterable[float],
    seeds: Iterable[int],
    ends: tuple[float, float] | None = None,
) -> dict[str, list[float]]:
    """Linear and log CPR of the same edges ranked at random (a random circuit of each size), one
    per seed. ``ends``: as in :func:`faithfulness_curve`."""
    out: dict[str, list[float]] = {"cpr": [], "cpr_log": []}
    thresholds = list(thresholds)
    ends = ends if ends is not None else curve_ends(model, batch, means)
    for seed in seeds:
        r = np.random.default_rng(seed).permutation(len(edges))
        shuffled = [Edge(e.sender, e.receiver, float(-r[i])) for i, e in enumerate(edges)]
        f = faithfulness_curve(model, batch, means, shuffled, thresholds, ends)["f"]
        if np.isnan(f).any():
            continue
        out["cpr"].append(cpr_cmd(thresholds, f)[0])
        out["cpr_log"].append(cpr_cmd(thresholds, f, log_scale=True)[0])
    return out


def mib_audit(
    model,
    batch: IOIBatch,
    means: Tensor,
    edges: list[Edge],
    thresholds: Iterable[float] = MIB_THRESHOLDS,
    inputs: AuditInputs | None = None,
    min_cpr: float = 0.5,
    null_seeds: Iterable[int] = (1, 2, 3),
    scoring: str = "",
) -> tuple[AuditResult, dict[str, list]]:
    """MIB faithfulness curve; pass condition ``CPR > 0.5`` on the page's linear curve, with
    MIB's log-scale CPR beside it. Returns the result and the curve. ``scoring``: how the edges
    were scored and what that cost, in words (``values['edge_scoring']``, which the claims quote).

    Saturation: ``saturation_threshold`` is the first edge fraction whose edges touch every head
    (from there f = 1 by construction); ``cpr_floor`` the CPR of f = 1 there and 0 elsewhere. If
    that floor passes, the verdict is decided by construction. Null: the same edges ranked at
    random (``null_seeds``).

    >>> from transformer_lens import HookedTransformer, HookedTransformerConfig
    >>> from kit.audits.circuits import edge_scores, head_means, ioi_batch
    >>> from kit.audits.mib import mib_audit
    >>> from kit.world.tasks import get_task
    >>> from kit.world.tokenizer import build_tokenizer, vocab
    >>> cfg = HookedTransformerConfig(n_layers=1, d_model=16, n_heads=2, d_head=8,
    ...                               d_vocab=len(vocab()), n_ctx=64, attn_only=True, seed=0)
    >>> model = HookedTransformer(cfg, tokenizer=build_tokenizer()).eval()
    >>> batch = ioi_batch(model, get_task("ioi").items("test", 4))
    >>> means = head_means(model, batch)
    >>> edges = edge_scores(model, batch, means)
    >>> r, curve = mib_audit(model, batch, means, edges, null_seeds=[1])
    >>> r.metric, len(edges), round(r.value, 2), r.passed
    ('MIB', 5, 1.41, True)
    """
    thresholds = list(thresholds)
    curve = faithfulness_curve(model, batch, means, edges, thresholds)
    f = np.asarray(curve["f"], float)
    if np.isnan(f).any():
        cpr = cmd = cpr_log = cmd_log = float("nan")
    else:
        (cpr, cmd), (cpr_log, cmd_log) = (
            cpr_cmd(thresholds, f),
            cpr_cmd(thresholds, f, log_scale=True),
        )
    n_all = model.cfg.n_layers * model.cfg.n_heads
    saturated = [n == n_all for n in curve["n_heads"]]
    sat_t = next((t for t, s in zip(thresholds, saturated) if s), None)
    floor, floor_log = (
        cpr_floor(thresholds, saturated),
        cpr_floor(thresholds, saturated, log_scale=True),
    )
    n_points = len(set(zip(curve["n_heads"], curve["f"])))
    notes = [
        n
        for n in (
            _mib_note(cpr, curve["m_full"][0], curve["m_empty"][0]),
            f"saturated: from {sat_t:.3g} of the edges every head is in the circuit (f = 1 by "
            "construction)"
            if sat_t is not None and sat_t < thresholds[-1]
            else "",
            f"only {n_points} distinct points on the curve ({len(edges)} edges)"
            if n_points < 5
            else "",
        )
        if n
    ]
    res = AuditResult(
        metric="MIB",
        name="MIB faithfulness curve",
        value=cpr,
        values={
            "cpr": cpr,
            "cmd": cmd,
            "cpr_log": cpr_log,
            "cmd_log": cmd_log,
            "n_edges_total": len(edges),
            "saturation_threshold": sat_t,
            "cpr_floor": floor,
            "cpr_log_floor": floor_log,
            "n_distinct_points": n_points,
            "n_heads_total": n_all,
            **({"edge_scoring": scoring} if scoring else {}),
            **curve,
        },
        pass_condition=f"CPR > {min_cpr} (page: linear in t; f = "
        "(m(C)-m(empty))/(m(N)-m(empty)), edges ranked by score)",
        passed=bool(np.isfinite(cpr) and cpr > min_cpr),
        inputs=inputs or AuditInputs(n=len(batch)),
        notes="; ".join(notes),
    )
    if floor > min_cpr:
        res.decided(
            f"every head is in from {sat_t:.3g} of the edges, so f = 1 there and CPR >= "
            f"{floor:.2f} > {min_cpr} "
            "for any circuit no worse than the empty one below it"
            + (
                f"; MIB's log-scale CPR ({cpr_log:.2f}, floor {floor_log:.2f}) is not decided"
                if floor_log <= min_cpr
                else ""
            )
        )
    ends = (curve["m_full"][0], curve["m_empty"][0])
    null = random_ranking_cprs(model, batch, means, edges, thresholds, null_seeds, ends)
    res.values["null_cpr_log"] = null["cpr_log"]
    res.with_null(
        null["cpr"],
        f"the same edges ranked at random, {len(null['cpr'])} seeds",
        passed=bool(null["cpr"]) and float(np.mean(null["cpr"])) > min_cpr,
    )
    return res, curve
