"""Measurement-theory audits of interpretability metrics (seed 003): is the instrument trustworthy?

One module per metric family, each metric a function returning an :class:`AuditResult`
(value(s), pass condition, verdict, inputs; JSON-serialisable):

- ``kit.audits.stability``: M09 core stability, EX25 reproducibility (also of
  ``kit.mui.metric``/``kit.cg.metrics``);
- ``kit.audits.sae_validity``: M07, M08, M10, M11, M12, EX34;
- ``kit.audits.superposition``: M13 superposition regime;
- ``kit.audits.saebench``: EX24 SAEBench audit;
- ``kit.audits.psychophysics``: EX1 d-prime, EX2 DIF, EX11 Weber/JND;
- ``kit.audits.safety``: M14 Safety SVE;
- ``kit.audits.circuits``: IOI circuit discovery by mean-ablation patching;
- ``kit.audits.mib``: the MIB faithfulness curve (CPR / CMD) of a circuit's edges.

``AUDITS`` maps each metric id of the seed's summary table to its function and what it
measures. Around them:
``kit.audits.activations`` (token-level activations at TransformerLens hooks), ``kit.audits.suite``
(notebook 06's steps on the tiny world, a real model or GPT-2; its circuit family in
``kit.audits.circuit_family``), ``kit.audits.real_saes`` (SAEs
trained on a real model's own activations, cached by content), ``kit.audits.sources`` (prompt
sources), ``kit.audits.plots`` (its figures) and
``kit.audits.bench`` (``python -m kit bench audits``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from kit.core.registry import Registry

from . import circuits, mib, psychophysics, sae_validity, saebench, safety, stability, superposition
from .result import AuditInputs, AuditResult, dumps, fail_check, jsonable

AUDITS = Registry("an audit")
"""Metric id of the seed's summary table -> the function computing it (each returns an
:class:`AuditResult`) and what it measures."""

for _id, _fn, _what in (
    ("M07", sae_validity.architecture_duality, "architecture duality: two SAEs at one hook agree"),
    ("M08", sae_validity.weightlens, "WeightLens: a feature's promoted tokens vs where it fires"),
    ("M09", stability.core_stability, "core stability over distillation cycles"),
    ("M10", sae_validity.prism, "PRISM: polysemantic features (top contexts in > 1 cluster)"),
    ("M11", sae_validity.matryoshka, "Matryoshka: absorption between SAE widths"),
    ("M12", sae_validity.adaptive_sparsity, "adaptive sparsity: active features vs residual norm"),
    ("M13", superposition.superposition_regime, "superposition regime (participation ratio)"),
    ("M14", safety.safety_sve, "safety SVE: a concept direction from contrast prompts"),
    ("EX1", psychophysics.dprime_audit, "d-prime of a circuit's signal against its ablation"),
    ("EX2", psychophysics.dif_audit, "differential item functioning (Cohen's d between groups)"),
    ("EX11", psychophysics.weber_audit, "Weber / just-noticeable difference of circuit heads"),
    ("EX24", saebench.saebench_audit, "SAEBench metrics: reseed noise vs discriminability"),
    ("EX25", stability.reproducibility, "reproducibility of a metric over runs"),
    ("EX34", sae_validity.nla_sae_convergence, "NLA-SAE convergence of feature directions"),
    ("MIB", mib.mib_audit, "MIB faithfulness curve of a circuit's edges (CPR / CMD)"),
):
    AUDITS.add(_id, _fn, _what)

REGISTRY = AUDITS
"""The same table under its older name."""

ORDER = list(AUDITS)


def get_audit(metric: str) -> Callable[..., object]:
    """The function of metric ``metric`` (e.g. ``"M07"``); unknown ids list the allowed ones.

    >>> from kit.audits import get_audit
    >>> get_audit("EX2").__name__, get_audit("MIB").__name__
    ('dif_audit', 'mib_audit')
    """
    AUDITS.check(metric, "metric")
    return AUDITS[metric].fn


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def summary_table(results: list[AuditResult]) -> pd.DataFrame:
    """One row per result: metric, name, value, its null (and what the null is of), pass
    condition, verdict (pass / FAIL / report), whether the verdict could fail and why not, and
    the computed can-fail check (:func:`kit.audits.result.fail_check`)."""
    key = {m: i for i, m in enumerate(ORDER)}
    rows = sorted(results, key=lambda r: (key.get(r.metric, len(key)), r.name))
    return pd.DataFrame(
        [
            {
                "metric": r.metric,
                "name": r.name,
                "value": r.value,
                "null": r.null,
                "null_of": r.null_of or "value",
                "null_passes": r.null_passed,
                "pass_condition": r.pass_condition,
                "verdict": r.verdict(),
                "passed": r.passed,
                "can_fail": r.can_fail,
                "fail_check": fail_check(r),
                "by_construction": r.by_construction,
                "notes": r.notes,
            }
            for r in rows
        ]
    )


def save_audits(results: list[AuditResult], path: str | Path) -> Path:
    """Write ``results`` as a JSON list (``audits.json``), atomically."""
    from kit.core.paths import atomic_write_text

    path = Path(path)
    atomic_write_text(path, dumps(results) + "\n")
    return path


def load_audits(path: str | Path) -> list[AuditResult]:
    import json

    return [AuditResult.model_validate(x) for x in json.loads(Path(path).read_text())]


def findings(results: list[AuditResult], paper_note: bool = False) -> list[str]:
    """A plain-text findings summary with every headline number and verdict."""
    lines = []
    for r in sorted(results, key=lambda r: ORDER.index(r.metric) if r.metric in ORDER else 99):
        extra = {
            k: v
            for k, v in r.values.items()
            if isinstance(v, (int, float, str, bool)) and k != "metric"
        }
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in list(extra.items())[:5])
        null = (
            (
                f" null{'(' + r.null_of + ')' if r.null_of else ''}={_fmt(r.null)}"
                + (" (passes too)" if r.null_passed else "")
            )
            if r.null is not None
            else ""
        )
        lines.append(
            f"{r.metric:5s} {r.name}: {_fmt(r.value)}{null} [{r.verdict()}: {r.pass_condition}] "
            f"{shown}"
            + (f"  NOTE: {r.notes}" if r.notes else "")
            + ("" if r.can_fail else f"  CANNOT FAIL: {r.by_construction}")
            + (f"  CAN FAIL? {fail_check(r)}" if r.can_fail and not r.diagnostic else "")
        )
    n_fail = sum(1 for r in results if not r.diagnostic and not r.passed)
    n_pass = sum(1 for r in results if not r.diagnostic and r.passed)
    lines.append(
        f"{n_pass} audits pass, {n_fail} fail, {sum(r.diagnostic for r in results)} report-only."
    )
    if paper_note:
        lines.append(
            "Seed 003 publishes no result numbers (paper_tables/README.md): these verdicts compare "
            "with its pass conditions only, not with published values."
        )
    return lines


__all__ = [
    "AuditInputs",
    "AuditResult",
    "REGISTRY",
    "get_audit",
    "summary_table",
    "save_audits",
    "load_audits",
    "findings",
    "fail_check",
    "jsonable",
    "circuits",
    "mib",
    "psychophysics",
    "safety",
    "sae_validity",
    "saebench",
    "stability",
    "superposition",
]
