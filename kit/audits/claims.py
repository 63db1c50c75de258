"""Claims of seed 003 (measurement audits) tested by notebook 06: each audit beside a null control.

An audit's number means something only against what an instrument with nothing to measure gets:

- M07, M08, M10: the same metric on **untrained copies** of the SAEs
  (:func:`kit.audits.sae_validity.random_like`, several seeds: the null band);
- EX24: the trained SAE's probe accuracy over reseeds against its untrained copy's (Welch interval);
- MIB: the CPR a **degenerate curve** gets (f = 0 below 50% of the edges, 1 from there), on the
  same thresholds: if it passes CPR > 0.5 too, a pass says nothing.

Audits without a control here are listed as *not testable here* with their own pass/fail.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kit.audits import sae_validity as V
from kit.audits.circuits import cpr_cmd
from kit.core.claims import Claim, claim, null_band, welch_interval

PAPER = "003"
REQUIRED_IDS = {"06_measurement_audits": ["M07.vs_untrained", "M08.vs_untrained", "M10.vs_untrained",
                                          "EX24.vs_untrained", "MIB.vs_degenerate"]}
CONTROLLED = ("M07", "M08", "M10", "EX24", "MIB")


def untrained_controls(ctx, model, cfg, seeds: Sequence[int]) -> dict[str, list[float]]:
    """M07, M08 and M10 headline values on untrained copies of the SAEs, one per seed (the same
    calls as :func:`kit.audits.suite.run_sae_audits`)."""
    from kit.models import tl

    s, acts = ctx.saes, ctx.acts
    W_U = tl.unembed(model).detach()
    target = ctx.ta.next_ids if cfg.weightlens_side == "next" else ctx.ta.token_ids
    out: dict[str, list[float]] = {"M07": [], "M08": [], "M10": []}
    for seed in seeds:
        a, b = V.random_like(s["arch_a"], seed=seed), V.random_like(s["arch_b"], seed=seed + 10_000)
        out["M07"].append(V.architecture_duality(a, b, acts).value)
        out["M08"].append(V.weightlens(a, acts, target, W_U, top_k=cfg.weightlens_top_k, n_features=cfg.n_features,
                                       seed=cfg.seed).value)
        out["M10"].append(V.prism(a, acts, ctx.ta.prompt_index, ctx.ta.position, n_features=cfg.n_features,
                                  top_n=cfg.prism_top_n, window=cfg.prism_window, threshold=cfg.prism_threshold,
                                  seed=cfg.seed).value)
    return out


def degenerate_cpr(thresholds: Sequence[float], cut: float = 0.5) -> float:
    """CPR of a curve that is 0 below ``cut`` of the edges and 1 from there (a circuit that does
    nothing until half the graph is in), on the audit's own thresholds."""
    t = np.asarray(list(thresholds), float)
    return cpr_cmd(t, (t >= cut).astype(float))[0]


def _verdict(r) -> str:
    return "diagnostic" if r.diagnostic else ("passed" if r.passed else "failed")


def audit_claims(results: Sequence[Any], controls: dict[str, list[float]] | None) -> list[Claim]:
    """Claims from the notebook's :class:`kit.audits.result.AuditResult` list and the
    :func:`untrained_controls` values."""
    first = {}
    for r in results:
        first.setdefault(r.metric, r)
    out = []
    for metric, direction, what in (("M07", "greater", "agreement of two SAE architectures"),
                                    ("M08", "greater", "weight-activation agreement"),
                                    ("M10", "less", "polysemanticity rate")):
        r = first.get(metric)
        ctrl = (controls or {}).get(metric, [])
        if r is None or not ctrl:
            out.append(claim(PAPER, metric, f"{metric}.vs_untrained", f"{metric}: trained beats untrained", None,
                             not_testable="audit or control not run"))
            continue
        m, lo, hi = null_band(ctrl)
        out.append(claim(PAPER, metric, f"{metric}.vs_untrained",
                         f"{metric} {r.name}: the trained SAEs' {what} is {'above' if direction == 'greater' else 'below'} "
                         f"untrained copies' (audit {_verdict(r)}: {r.pass_condition})", r.value, null=m,
                         null_range=(lo, hi), direction=direction,
                         null_how=f"untrained copies (random_like), {len(ctrl)} seeds (range)",
                         paper_value=r.pass_condition, controls=ctrl))
    r = first.get("EX24")
    if r is not None and len(r.values.get("runs", [])) >= 2 and len(r.values.get("control_runs", [])) >= 2:
        d, lo, hi = welch_interval(r.values["runs"], r.values["control_runs"])
        out.append(claim(PAPER, "EX24", "EX24.vs_untrained",
                         f"EX24: {r.values.get('metric', 'probe accuracy')} of the trained SAE exceeds its untrained "
                         f"copy's (trained - untrained; audit {_verdict(r)})", d, ci=(lo, hi), null=0.0,
                         direction="greater", null_how="untrained copy (random_like), same reseeds",
                         paper_value=r.pass_condition,
                         interval_how=f"Welch t over {len(r.values['runs'])} + {len(r.values['control_runs'])} reseeds"))
    else:
        out.append(claim(PAPER, "EX24", "EX24.vs_untrained", "EX24: trained beats untrained", None,
                         not_testable="fewer than 2 reseeds a side"))
    r = first.get("MIB")
    if r is not None and r.values.get("threshold"):
        deg = degenerate_cpr(r.values["threshold"])
        passes = deg > 0.5
        out.append(claim(PAPER, "MIB", "MIB.vs_degenerate",
                         f"MIB: the circuit's CPR exceeds that of a curve that is zero below 50% of the edges "
                         f"(audit {_verdict(r)}: {r.pass_condition})", r.value, null=deg, direction="greater",
                         null_how="degenerate curve f = 1[t >= 0.5] on the same thresholds",
                         paper_value=r.pass_condition, figure="mib_faithfulness_curve",
                         interval_how="none (one circuit, one curve)",
                         caveat=(f"the degenerate curve scores {deg:.2f} and passes CPR > 0.5 too: "
                                 "the pass condition can be met by construction") if passes else ""))
    else:
        out.append(claim(PAPER, "MIB", "MIB.vs_degenerate", "MIB faithfulness", None, not_testable="no MIB curve"))
    for metric, r in first.items():
        if metric in CONTROLLED:
            continue
        out.append(claim(PAPER, metric, f"{metric}.audit", f"{metric} {r.name}: {r.pass_condition}", r.value,
                         not_testable=f"no null control computed here (the audit itself {_verdict(r)})"))
    return out
