"""Claims of seed 003 (measurement audits) tested by notebook 06: each audit's pass condition
against its null control, kind ``audit`` (verdicts pass / fail, :mod:`kit.core.claims`).

Seed 003 sets pass conditions for instruments, not empirical claims about a paper's models. One
claim per audit (``{metric}.vs_null``) asks: does the instrument meet the page's condition *and*
land beyond what an instrument with nothing to measure gives? Its null control is carried by the
:class:`kit.audits.result.AuditResult` (``null_values``: untrained SAEs for M07, M08, M10, M11,
M12, EX34; random cores for M09; dimension-shuffled activations for M13; shuffled labels for M14
and EX2; random circuits of the same size for EX1 and EX11; random edge rankings for MIB; each
run's values shuffled across ids for EX25, shown beside its test: EX25's coherence is tested
against the page's threshold with a bootstrap over ids, since any id-dependent pipeline beats the
shuffle). The claim's direction is the side of the null the page's pass condition asks for
(:data:`DIRECTION`; EX2's "no DIF" is ``within`` the label-noise band).

The verdict (pass / fail / inconclusive) follows from the value against the null band, then:

- a null of fewer than :data:`MIN_DRAWS` draws cannot give a 95% test (the smallest empirical
  p-value with ``n`` draws is ``1 / (n + 1)``): the claim says ``inconclusive: n draws``; with
  enough draws a decided verdict also needs its empirical p-value (:func:`empirical_p`) below 0.05;
- a pass is weakened (:func:`kit.core.claims.weaken`) when the audit's verdict is decided by
  construction (``can_fail`` False, a report-only metric included), when its null control meets
  the same pass condition (a pass says nothing), or when the page's condition itself fails;
- circuits (MIB, EX1, EX2, EX11) are found on one half of the IOI prompts and audited on the other
  (:func:`kit.audits.circuit_family.circuit_context`), so the heads are not chosen by the score
  audited.

Stability (:func:`study_claims`): the claims recomputed with the null draws resampled (bootstrap)
under other seeds; a verdict that changes is marked ``flips``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kit.core.claims import (
    Claim,
    band_claim,
    bootstrap_claim,
    claim,
    decided,
    mark_stability,
    weaken,
)
from kit.core.stats import welch_interval

from .stability import coherence_by_id

PAPER = "003"
ALPHA = 0.05
MIN_DRAWS = 20
"""Fewest null draws a decided verdict rests on: with ``n`` draws the smallest empirical p-value
is ``1 / (n + 1)``, below 0.05 only from 20 draws on."""
N_BOOT = 1000
"""Bootstrap resamples of EX25's coherence interval."""
DIRECTION = {
    "M07": "greater",
    "M08": "greater",
    "M09": "greater",
    "M10": "less",
    "M11": "greater",
    "M12": "less",
    "M13": "less",
    "M14": "less",
    "EX1": "greater",
    "EX2": "within",
    "EX11": "greater",
    "EX25": "greater",
    "EX34": "greater",
    "MIB": "greater",
}
"""The side of its null the page's pass condition asks for (EX2: a circuit's DIF within label
noise)."""
REQUIRED_IDS = {
    "06_measurement_audits": [f"{m}.vs_null" for m in [*DIRECTION, "EX24"]] + ["MIB.log_vs_null"]
}


def empirical_p(null: Sequence[float], ours: float, direction: str) -> float:
    """Empirical p-value of ``ours`` against ``null`` draws, ``(1 + k) / (n + 1)`` with ``k`` the
    draws at least as extreme on the predicted side (``greater``: ``>= ours``; ``less``:
    ``<= ours``; ``within``: ``>= ours``, the chance that noise alone gives a value this large).

    >>> empirical_p([0.1, 0.2, 0.3], 0.25, "greater")
    0.5
    """
    x = np.asarray(null, float)
    k = int(np.sum(x <= ours)) if direction == "less" else int(np.sum(x >= ours))
    # ``within`` asks whether noise alone reaches a value this large (the upper tail)
    return float((1 + k) / (x.size + 1))


def _demote(c: Claim, reason: str) -> Claim:
    """A decided verdict (pass or fail) to inconclusive, with the reason (only ever weakens)."""
    if decided(c):
        c.verdict = "inconclusive"
    c.why = f"{c.why}; {reason}"
    return c


def rests_on(r: Any) -> str:
    """What an audit's number rests on, from its inputs: the model, its SAEs or circuit, the
    prompts."""
    i = r.inputs
    parts = [
        f"model {i.model}" if i.model else "",
        f"SAEs {', '.join(dict.fromkeys(i.sae))}" if i.sae else "",
        f"hook {i.hook}" if i.hook else "",
        f"prompts of {i.task}" if i.task else "",
        f"n = {i.n}" if i.n is not None else "",
    ]
    circuit = i.extra.get("circuit")
    if circuit is not None:
        src = r.values.get("circuit_source", "")
        found = i.extra.get("discovery_n")
        parts.append(
            f"{src} circuit {circuit}" + (f" (found on {found} other IOI prompts)" if found else "")
        )
    return "; ".join(p for p in parts if p) or "the audit's own inputs"


def _statement(r: Any, what: str, direction: str) -> str:
    side = {"greater": "above", "less": "below", "within": "within"}[direction]
    cond = (
        "report-only (no pass condition)"
        if r.diagnostic
        else f"{r.pass_condition}: audit {r.verdict()}"
    )
    return f"{r.metric} {r.name}: {what} {side} its null control; seed 003's condition {cond}"


def _scoring(r: Any) -> str:
    """MIB: how its edges were ranked, at what estimated cost and against which budget."""
    how = r.values.get("edge_scoring") if r.metric == "MIB" else None
    return f"; {how}" if how else ""


def _null_draws(r: Any, values: Sequence[float], seed: int) -> list[float]:
    """The null draws, or (``seed`` > 0) a bootstrap resample of them: the stability reruns."""
    vals = [float(v) for v in values]
    if seed == 0 or len(vals) < 2:
        return vals
    rng = np.random.default_rng(seed)
    return [vals[i] for i in rng.integers(0, len(vals), len(vals))]


def _vs_null(
    r: Any,
    cid: str,
    statement: str,
    ours: float,
    nulls: list[float],
    direction: str,
    null_how: str,
    **common: Any,
) -> Claim:
    """The claim of ``ours`` against the null draws, with the draw-count and p-value rule."""
    p = empirical_p(nulls, ours, direction)
    c = band_claim(
        PAPER,
        r.metric,
        cid,
        statement,
        ours,
        nulls,
        direction=direction,
        null_how=null_how,
        p_value=p,
        n_null_draws=len(nulls),
        **common,
    )
    if len(nulls) < MIN_DRAWS:
        return _demote(
            c,
            f"inconclusive: {len(nulls)} null draws (a 95% test needs >= {MIN_DRAWS}: the "
            f"smallest empirical p-value is 1/(n+1) = {1 / (len(nulls) + 1):.2f})",
        )
    if c.verdict == "fail":  # the wrong side: its p-value is the other tail's
        side = (
            "less"
            if direction == "greater"
            else "greater"
            if direction == "less"
            else "greater"
            if c.null_high is not None and ours > c.null_high  # None: a band of no finite draw
            else "less"
        )
        p = empirical_p(nulls, ours, side)
        c.extra["p_value"] = p
    if decided(c) and (direction != "within" or c.verdict == "fail") and p >= ALPHA:
        return _demote(
            c, f"empirical p = {p:.3f} over {len(nulls)} null draws is not below {ALPHA}"
        )
    return c


def _weaken_audit(c: Claim, r: Any) -> Claim:
    """Weaken a pass the audit cannot back: decided by construction, matched by its null, or the
    page's own condition failing. Other verdicts keep these as notes (a fail is not weakened)."""
    reasons = []
    if not r.can_fail:
        reasons.append(f"decided by construction ({r.by_construction})")
    elif r.by_construction:
        c.why = f"{c.why}; {r.by_construction}"
    if r.null_passed and c.verdict == "pass":
        reasons.append("the null control meets the pass condition too: a pass says nothing")
    if not r.diagnostic and not r.passed:
        reasons.append(f"the page's condition fails ({r.pass_condition}): audit FAIL")
    if c.verdict == "pass" and reasons:
        return weaken(c, "; ".join(reasons))
    if reasons:
        c.why = f"{c.why}; {'; '.join(reasons)}"
    return c


def audit_claim(r: Any, cid: str, seed: int = 0) -> Claim:
    """The ``{metric}.vs_null`` claim of one audit result (see the module docstring)."""
    what = r.null_of or "value"
    ours = r.value if not r.null_of else r.values.get(r.null_of)
    direction = DIRECTION.get(r.metric, "greater")
    statement = _statement(r, what, direction) + _scoring(r)
    common = dict(paper_value=r.pass_condition, kind="audit", rests_on=rests_on(r))
    if r.metric == "EX24":
        return _ex24_claim(r, cid, common)
    if r.metric == "EX25" and "per_id" in r.values:
        return _ex25_claim(r, cid, seed, common)

    def untestable(why: str) -> Claim:
        return claim(PAPER, r.metric, cid, statement, ours, not_testable=why, **common)

    if r.values.get("not_run"):  # a part switched off (e.g. MIB's edge patching): say so first
        return untestable(r.values["not_run"])
    signal = r.values.get("task_signal") or {}
    if signal.get("does_task") is False:
        return untestable(
            "the model does not do the task, so there is no circuit to audit (mean "
            f"logit diff {signal.get('mean_logit_diff', float('nan')):.3g})"
        )
    if ours is None or not r.null_values:
        return untestable("no value" if ours is None else "no null control computed")
    nulls = _null_draws(r, r.null_values, seed)
    c = _vs_null(
        r,
        cid,
        statement,
        float(ours),
        nulls,
        direction,
        r.null_how,
        figure="mib_faithfulness_curve" if r.metric == "MIB" else None,
        **common,
    )
    return _weaken_audit(c, r)


def _ex24_claim(r: Any, cid: str, common: dict) -> Claim:
    runs, ctrl = r.values.get("runs", []), r.values.get("control_runs", [])
    statement = (
        f"EX24: {r.values.get('metric', 'probe accuracy')} of the trained SAE exceeds its "
        f"untrained copy's (trained - untrained); seed 003's condition {r.pass_condition}: "
        f"audit {r.verdict()}"
    )
    if len(runs) < 2 or len(ctrl) < 2:
        return claim(
            PAPER,
            "EX24",
            cid,
            statement,
            None,
            not_testable="fewer than 2 reseeds a side",
            **common,
        )
    d, lo, hi = welch_interval(runs, ctrl)
    c = claim(
        PAPER,
        "EX24",
        cid,
        statement,
        d,
        ci=(lo, hi),
        null=0.0,
        direction="greater",
        null_how=r.null_how,
        interval_how=f"Welch t over {len(runs)} + {len(ctrl)} reseeds",
        **common,
    )
    return _weaken_audit(c, r)


def _ex25_claim(r: Any, cid: str, seed: int, common: dict) -> Claim:
    """EX25's coherence against the page's threshold, bootstrapped over the ids every run shares.
    The id-shuffle null is not the test: any pipeline whose values depend on the id beats it, and a
    fully deterministic pipeline (every run equal) has a zero-width interval, which decides
    nothing."""
    mat = np.asarray(r.values.get("per_id") or [], float)
    thr = float(r.values.get("min_coherence", 0.9))
    statement = (
        f"EX25 {r.name}: coherence of the runs' per-id values (mean pairwise Spearman) above "
        "the page's "
        f"{thr:g}; seed 003's condition {r.pass_condition}: audit {r.verdict()}"
    )
    if mat.ndim != 2 or mat.shape[1] < 3:
        return claim(
            PAPER,
            "EX25",
            cid,
            statement,
            r.values.get("coherence_score"),
            not_testable="fewer than 3 ids shared by every run: coherence undefined",
            **common,
        )
    shuffle = f"; the id-shuffle null gives {r.null:.3g}" if r.null is not None else ""
    c = bootstrap_claim(  # coherence_interval's bootstrap over the shared ids, as one claim
        PAPER,
        "EX25",
        cid,
        statement,
        coherence_by_id,
        mat.T,
        n_boot=N_BOOT,
        seed=seed,
        null=thr,
        direction="greater",
        null_how=f"the page's threshold ({thr:g}){shuffle}, which any id-dependent pipeline beats",
        interval_how=f"bootstrap over {mat.shape[1]} shared ids ({mat.shape[0]} runs)",
        **common,
    )
    return _weaken_audit(c, r)


def _mib_log_claim(r: Any, linear: Claim, seed: int = 0) -> Claim:
    """MIB's log-scale CPR against the same random edge rankings' log-scale CPR: the curve's
    small-circuit end, which the linear CPR hardly weighs (and saturation cannot decide unless
    its ``cpr_log_floor`` passes too). Not testable when the linear claim is not (edges not
    scored, no task signal) or no log-scale CPR was computed."""
    cid = linear.id.replace("vs_null", "log_vs_null")
    statement = (
        "MIB faithfulness curve: log-scale CPR (MIB's log_scale option) above random edge rankings'"
    ) + _scoring(r)
    common: dict[str, Any] = dict(
        paper_value="log-scale CPR (MIB's option)", kind="audit", rests_on=rests_on(r)
    )
    if linear.verdict == "not testable here":
        return claim(PAPER, "MIB", cid, statement, None, not_testable=linear.why, **common)
    if r.values.get("cpr_log") is None or not r.values.get("null_cpr_log"):
        return claim(
            PAPER,
            "MIB",
            cid,
            statement,
            r.values.get("cpr_log"),
            not_testable="no log-scale CPR or no null rankings computed",
            **common,
        )
    nulls = _null_draws(r, r.values["null_cpr_log"], seed)
    floor = r.values.get("cpr_log_floor")
    c = _vs_null(
        r,
        cid,
        statement,
        float(r.values["cpr_log"]),
        nulls,
        "greater",
        f"the same edges ranked at random, {len(nulls)} draws (log-scale CPR)",
        figure="mib_faithfulness_curve",
        **common,
    )
    if floor is not None and floor > 0.5:
        weaken(c, f"the log-scale CPR's saturation floor {floor:.2f} passes 0.5 by construction")
    elif floor is not None:
        c.why = f"{c.why}; saturation floor {floor:.2f} (f = 1 where every head is in)"
    return c


def audit_claims(results: Sequence[Any], seed: int = 0, world: str | None = None) -> list[Claim]:
    """One claim per audit result (ids ``{metric}.vs_null``, then ``.2``, ``.3`` for repeats), plus
    MIB's log-scale claim. ``seed`` > 0 resamples every null's draws (the stability reruns)."""
    out, seen = [], {}
    for r in results:
        seen[r.metric] = seen.get(r.metric, 0) + 1
        cid = f"{r.metric}.vs_null" + ("" if seen[r.metric] == 1 else f".{seen[r.metric]}")
        out.append(audit_claim(r, cid, seed))
        if r.metric == "MIB":
            out.append(_mib_log_claim(r, out[-1], seed))
    if world:  # the models' construction: which world they were trained in (zoo/ members only)
        for c in out:
            if "model zoo/" in c.rests_on:
                c.rests_on = f"the {world} world's members; {c.rests_on}"
    return out


def study_claims(
    results: Sequence[Any], reseeds: Sequence[int] = (1, 2), world: str | None = None
) -> list[Claim]:
    """:func:`audit_claims` with their stability: recomputed with every null's draws resampled
    (bootstrap) under each of ``reseeds`` (:func:`kit.core.claims.mark_stability`)."""
    claims = audit_claims(results, world=world)
    reruns = [audit_claims(results, s, world) for s in reseeds]
    return mark_stability(
        claims, reruns, f"null draws resampled with seeds {', '.join(map(str, reseeds))}"
    )
