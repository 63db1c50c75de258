"""Claims of seed 003 (measurement audits) tested by notebook 06: every audit against its null control.

Each :class:`kit.audits.result.AuditResult` carries its null (``null``, ``null_values``,
``null_how``: untrained SAEs for M07/M08/M10/M11/M12/EX34, random cores for M09, shuffled
dimensions for M13, shuffled labels for M14 and EX2, random circuits of the same size for EX1 and
EX11, random edge rankings for MIB, shuffled ids for EX25's coherence) and its can-fail flag. A
claim reads the audit's value against that null band (the direction says which side an informative
instrument lands on); EX24 compares the trained and untrained probe accuracies with a Welch
interval over reseeds. When the verdict was decided by construction (``can_fail`` False) or the
null passes the same condition, the claim says so.
"""

from __future__ import annotations

from typing import Any, Sequence

from kit.core.claims import Claim, claim
from kit.core.stats import null_band, welch_interval

PAPER = "003"
DIRECTION = {"M07": "greater", "M08": "greater", "M09": "greater", "M10": "less", "M11": "greater",
             "M12": "less", "M13": "less", "M14": "less", "EX1": "greater", "EX2": "greater", "EX11": "greater",
             "EX25": "greater", "EX34": "greater", "MIB": "greater"}
"""Which side of its null an informative instrument lands on (EX2: a real DIF exceeds label noise)."""
REQUIRED_IDS = {"06_measurement_audits": [f"{m}.vs_null" for m in [*DIRECTION, "EX24"]]}


def _verdict(r) -> str:
    return "diagnostic" if r.diagnostic else ("passed" if r.passed else "failed")


def _caveat(r) -> str:
    out = []
    if not r.can_fail:
        out.append(f"the audit's verdict is decided by construction ({r.by_construction})")
    elif r.by_construction:
        out.append(r.by_construction)
    if r.null_passed:
        out.append("the null control meets the pass condition too: a pass says nothing")
    return "; ".join(out)


def audit_claims(results: Sequence[Any]) -> list[Claim]:
    """One claim per audit result (ids ``{metric}.vs_null``, then ``.2``, ``.3`` for repeats)."""
    out, seen = [], {}
    for r in results:
        seen[r.metric] = seen.get(r.metric, 0) + 1
        cid = f"{r.metric}.vs_null" + ("" if seen[r.metric] == 1 else f".{seen[r.metric]}")
        ours = r.value if not r.null_of else r.values.get(r.null_of)
        what = r.null_of or "value"
        common = dict(paper_value=r.pass_condition, caveat=_caveat(r), can_fail=r.can_fail)
        if r.metric == "EX24":
            runs, ctrl = r.values.get("runs", []), r.values.get("control_runs", [])
            if len(runs) < 2 or len(ctrl) < 2:
                out.append(claim(PAPER, "EX24", cid, "EX24: trained beats untrained", None,
                                 not_testable="fewer than 2 reseeds a side"))
                continue
            d, lo, hi = welch_interval(runs, ctrl)
            out.append(claim(PAPER, "EX24", cid, f"EX24: {r.values.get('metric', 'probe accuracy')} of the trained SAE "
                             f"exceeds its untrained copy's (trained - untrained; audit {_verdict(r)})", d, ci=(lo, hi),
                             null=0.0, direction="greater", null_how=r.null_how,
                             interval_how=f"Welch t over {len(runs)} + {len(ctrl)} reseeds", **common))
            continue
        direction = DIRECTION.get(r.metric, "greater")
        if r.values.get("not_run"):  # a part switched off (e.g. MIB's edge patching): say so first
            statement = f"{r.metric} {r.name}: {what} above its null"
            why = r.values["not_run"]
            out.append(claim(PAPER, r.metric, cid, statement, ours, not_testable=why, **common))
            continue
        signal = r.values.get("task_signal") or {}
        if signal.get("does_task") is False:
            out.append(claim(PAPER, r.metric, cid, f"{r.metric} {r.name}: {what} above its null", ours,
                             not_testable="the model does not do the task, so there is no circuit to audit "
                             f"(mean logit diff {signal.get('mean_logit_diff', float('nan')):.3g})", **common))
            continue
        statement = (f"{r.metric} {r.name}: {what} {'above' if direction == 'greater' else 'below'} its null "
                     f"(audit {_verdict(r)}: {r.pass_condition})")
        if ours is None or not r.null_values:
            out.append(claim(PAPER, r.metric, cid, statement, ours,
                             not_testable="no value" if ours is None else "no null control computed", **common))
            continue
        m, lo, hi = null_band(r.null_values)
        band = (lo, hi) if len(r.null_values) > 1 else None
        out.append(claim(PAPER, r.metric, cid, statement, ours, null=m, null_range=band, direction=direction,
                         null_how=r.null_how, controls=list(r.null_values),
                         figure="mib_faithfulness_curve" if r.metric == "MIB" else None, **common))
        if r.metric == "MIB" and r.values.get("cpr_log") is not None and len(r.values.get("null_cpr_log") or []) > 0:
            out.append(_mib_log_claim(r, cid))
    return out


def _mib_log_claim(r, cid: str) -> Claim:
    """MIB's log-scale CPR against the same random edge rankings' log-scale CPR: the curve's
    small-circuit end, which the linear CPR hardly weighs (and saturation cannot decide unless
    its ``cpr_log_floor`` passes too)."""
    nulls = list(r.values["null_cpr_log"])
    m, lo, hi = null_band(nulls)
    floor = r.values.get("cpr_log_floor")
    caveat = (f"the log-scale CPR's saturation floor is {floor:.2f}: f = 1 where every head is in gives that much "
              "for free" if floor is not None else "")
    return claim(PAPER, "MIB", cid.replace("vs_null", "log_vs_null"),
                 "MIB faithfulness curve: log-scale CPR (MIB's log_scale option) above random edge rankings'",
                 r.values["cpr_log"], null=m, null_range=(lo, hi) if len(nulls) > 1 else None, direction="greater",
                 null_how=f"the same edges ranked at random, {len(nulls)} seeds (log-scale CPR)", controls=nulls,
                 figure="mib_faithfulness_curve", caveat=caveat, paper_value="log-scale CPR (MIB's option)")
