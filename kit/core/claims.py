"""The claims ledger: each paper claim with our number, its 95% interval, a null and a verdict.

A :class:`Claim` is built by :func:`claim`, which computes the verdict from the numbers (never
typed by hand). The rule, for the claim's ``direction``:

- ``greater`` / ``less``: *supported* when our interval lies entirely above (below) the null band,
  *contradicted* when it lies entirely on the other side, *inconclusive* otherwise. A single
  number without an interval against a single null value is *inconclusive*: a point cannot
  exclude anything.
- ``within`` (equivalence, e.g. "leaves clean models unchanged"): *supported* when our interval
  lies inside the null band (the tolerance), *contradicted* when it lies entirely outside it.
- ``match`` (a reproduction of a printed number): *supported* when the paper's value lies in our
  interval, *contradicted* otherwise.
- *not testable here* when a reason is given or our value could not be computed.

Every claim also has a **kind** (:data:`KINDS`), kept apart in every table and report:

- ``reproduction``: a paper claim tested on our own measurements (the tiny world's models or real
  models run here). Only these count in a report's headline.
- ``re-analysis``: a claim recomputed from the paper's own printed tables (no model run here).
- ``set-up check``: the world does what it was built to do (a planted leak exists, a control is
  clean); it tests our construction, not the paper.
- ``audit``: a pass condition of the measurement-theory page (seed 003). Its verdicts read
  **pass** / **fail** (same rule: pass when the interval clears the threshold on the required side),
  never "supported".

and a **margin** (:func:`margin`): how far the interval sits from its null on the predicted side, in
the claim's units (negative when it overlaps or lies on the wrong side), so a verdict that holds by
a hair says so. :func:`mark_stability` records whether a verdict survives a rerun with other seeds.

The null is either one value (``null``: 0 for an effect, the untrained model's score) or a band
(``null_range``: the 2.5-97.5% range of a permutation or random-control distribution, or an
equivalence tolerance). :mod:`kit.core.stats` makes the intervals and nulls: paired bootstrap over
items, permutation nulls, Student-t intervals over seeds or reseeds, Wilson intervals for shares.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence, cast

import numpy as np

VERDICTS = ("supported", "contradicted", "inconclusive", "not testable here")
AUDIT_VERDICTS = ("pass", "fail", "inconclusive", "not testable here")
"""An audit's verdicts: ``pass`` / ``fail`` stand where other kinds say supported / contradicted."""
_AUDIT_WORD = {"supported": "pass", "contradicted": "fail"}
ALL_VERDICTS = VERDICTS + AUDIT_VERDICTS[:2]
DIRECTIONS = ("greater", "less", "within", "match")
KINDS = ("reproduction", "re-analysis", "set-up check", "audit")
FRAGILE = 0.1
"""A decided verdict is *fragile* when its margin is below this share of its interval's width."""


@dataclass
class Claim:
    """One paper claim tested here. Numbers are in the units ``statement`` names."""

    paper: str
    """Seed id of the paper: ``000``, ``001``, ``002``, ``003``, ``004``."""
    section: str
    """Where the paper states it (``§3.2``, ``Table 2``)."""
    id: str
    """Short stable id, unique within a notebook (``law.pooled_slope``); tests list these."""
    statement: str
    """The claim as we test it, with the quantity and its units."""
    paper_value: Any
    """What the paper prints (number or text), or ``None``."""
    ours: float | None
    ci_low: float | None
    ci_high: float | None
    null: float | None
    null_low: float | None
    null_high: float | None
    null_how: str
    """How the null or baseline was made (shuffled labels, untrained copy, 0, tolerance...)."""
    direction: str
    verdict: str
    why: str
    """The verdict's reason in numbers, plus any caveat."""
    notebook: str = ""
    figure: str | None = None
    """Figure name (without extension) in the notebook's ``figures/`` that shows it."""
    interval_how: str = ""
    """Where the interval comes from (bootstrap over N items, t over seeds, OLS...)."""
    kind: str = "reproduction"
    """One of :data:`KINDS`: what the claim tests (the paper on our models, the paper's tables, our
    own set-up, or a measurement-theory pass condition)."""
    rests_on: str = ""
    """What the number rests on: the models and their construction (``tiny world, sparse fine-tunes
    with separate plastic sets``), or the printed table it re-analyses."""
    margin: float | None = None
    """Distance of the interval from the null on the predicted side (:func:`margin`), in the claim's
    units; negative when they overlap or the interval lies on the wrong side."""
    fragile: bool = False
    """A decided verdict whose margin is under :data:`FRAGILE` of its interval's width."""
    stability: str = ""
    """``""`` (not checked), ``stable`` or ``flips: ...`` (:func:`mark_stability`)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return asdict(self)


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def decide(
    ours: float | None,
    ci: tuple[float, float] | None,
    null: float | None,
    null_range: tuple[float, float] | None,
    direction: str,
    paper_value: Any = None,
    not_testable: str | None = None,
) -> tuple[str, str]:
    """The verdict rule (see the module docstring). Returns ``(verdict, why)``."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction={direction!r}; allowed values: {', '.join(DIRECTIONS)}")
    if not_testable:
        return "not testable here", not_testable
    ours = _num(ours)
    if ours is None:
        return "not testable here", "our value could not be computed (undefined or missing)"
    lo, hi = (ours, ours) if ci is None else (_num(ci[0]), _num(ci[1]))
    if lo is None or hi is None:
        return "inconclusive", "the interval is undefined"
    if direction == "match":
        pv = (
            _num(paper_value)
            if isinstance(paper_value, (int, float, np.floating, np.integer))
            else None
        )
        if pv is None:
            return "not testable here", "the paper prints no number to match"
        if ci is None:
            return "inconclusive", "no interval to hold the paper's value"
        inside = lo <= pv <= hi
        return (
            "supported" if inside else "contradicted",
            f"paper {_fmt(pv)} {'inside' if inside else 'outside'} our interval [{_fmt(lo)}, "
            f"{_fmt(hi)}]",
        )
    if null_range is not None:
        nlo, nhi = _num(null_range[0]), _num(null_range[1])
    else:
        nlo = nhi = _num(null)
    if nlo is None or nhi is None:
        return "not testable here", "no null or baseline could be computed"
    if ci is None and null_range is None:
        return (
            "inconclusive",
            f"a single number ({_fmt(ours)}) against a single null ({_fmt(nlo)}): no interval",
        )
    band = f"null {'[' + _fmt(nlo) + ', ' + _fmt(nhi) + ']' if nlo != nhi else _fmt(nlo)}"
    ours_s = f"ours {_fmt(ours)}" + (f" [{_fmt(lo)}, {_fmt(hi)}]" if ci is not None else "")
    if direction == "within":
        if nlo <= lo and hi <= nhi:
            return "supported", f"{ours_s} inside {band}"
        if hi < nlo or lo > nhi:
            return "contradicted", f"{ours_s} entirely outside {band}"
        return "inconclusive", f"{ours_s} overlaps the edge of {band}"
    above, below = lo > nhi, hi < nlo
    if (direction == "greater" and above) or (direction == "less" and below):
        return "supported", f"{ours_s} excludes {band} on the predicted side"
    if (direction == "greater" and below) or (direction == "less" and above):
        return "contradicted", f"{ours_s} excludes {band} on the wrong side"
    return "inconclusive", f"{ours_s} overlaps {band}"


def margin(
    ours: float | None,
    ci: tuple[float, float] | None,
    null: float | None,
    null_range: tuple[float, float] | None,
    direction: str,
    paper_value: Any = None,
) -> float | None:
    """How far the interval ``ci`` (or the point ``ours``) sits from the null on the predicted side,
    in the claim's units: ``greater``: low - null high; ``less``: null low - high; ``within``: the
    smaller distance from an interval end to the tolerance's edge (inside positive); ``match``: the
    paper's value's distance to the nearer interval end (inside positive). Negative: the interval
    overlaps the null or lies on the wrong side. ``None`` when a number is missing.

    >>> margin(0.3, (0.2, 0.4), 0.0, None, "greater")
    0.2
    """
    lo, hi = (ours, ours) if ci is None else ci
    lo, hi = _num(lo), _num(hi)
    if lo is None or hi is None:
        return None
    if direction == "match":
        pv = (
            _num(paper_value)
            if isinstance(paper_value, (int, float, np.floating, np.integer))
            else None
        )
        return None if pv is None else min(pv - lo, hi - pv)
    nlo, nhi = (null, null) if null_range is None else null_range
    nlo, nhi = _num(nlo), _num(nhi)
    if nlo is None or nhi is None:
        return None
    if direction == "greater":
        return lo - nhi
    if direction == "less":
        return nlo - hi
    return min(lo - nlo, nhi - hi)


def _zero_width(ci: tuple[float, float]) -> bool:
    """Whether an interval is a point up to float rounding (a mean of identical values may differ
    from them in the last bit: 0.9999999999999998 and 1.0 are one value)."""
    lo, hi = _num(ci[0]), _num(ci[1])
    return lo is not None and hi is not None and abs(hi - lo) <= 1e-9 * max(1.0, abs(lo), abs(hi))


def _wrong_side_gap(
    ours: float | None,
    ci: tuple[float, float] | None,
    null: float | None,
    null_range: tuple[float, float] | None,
) -> float | None:
    """The gap between the interval (or point) and the null band on whichever side they part
    (positive when they do not overlap); ``None`` when a number is missing."""
    lo, hi = (ours, ours) if ci is None else ci
    nlo, nhi = (null, null) if null_range is None else null_range
    nums = [_num(v) for v in (lo, hi, nlo, nhi)]
    if None in nums:
        return None
    lo, hi, nlo, nhi = cast("list[float]", nums)
    return max(lo - nhi, nlo - hi)


def claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    ours,
    *,
    ci=None,
    null=None,
    null_range=None,
    null_how: str = "",
    direction: str = "greater",
    paper_value: Any = None,
    not_testable: str | None = None,
    interval_how: str = "",
    figure: str | None = None,
    caveat: str = "",
    notebook: str = "",
    kind: str = "reproduction",
    rests_on: str = "",
    **extra: Any,
) -> Claim:
    """Build a :class:`Claim` with its verdict computed by :func:`decide`.

    ``ci``: our 95% interval ``(low, high)``; ``null``: the null value; ``null_range``: a null band
    (overrides ``null`` for the verdict). ``caveat``: appended to ``why`` (e.g. "passes by
    construction"). A zero-width interval supports nothing unless ``interval_how`` says it is a
    ``deterministic`` recomputation. ``kind``: one of :data:`KINDS` (an ``audit`` reads pass/fail);
    ``rests_on``: the models or tables the number comes from. ``extra``: any other JSON-plain
    numbers.
    """
    if kind not in KINDS:
        raise ValueError(f"claim {id!r}: kind={kind!r}; allowed values: {', '.join(KINDS)}")
    # A percentile bootstrap interval may miss the point estimate of a skewed statistic; that is
    # legitimate. Only an inverted interval is bad input.
    c0, c1 = (None, None) if ci is None else (_num(ci[0]), _num(ci[1]))
    if ci is not None and c0 is not None and c1 is not None and c0 > c1:
        raise ValueError(f"claim {id!r}: ci low {ci[0]} > high {ci[1]}")
    verdict, why = decide(ours, ci, null, null_range, direction, paper_value, not_testable)
    if (
        ci is not None
        and verdict in ("supported", "contradicted")
        and direction != "match"
        and not interval_how.startswith("deterministic")
        and _zero_width(ci)
    ):
        # Resampling that never varies measures no uncertainty (identical repeats, constant items).
        verdict = "inconclusive"
        why = f"{why}, but the interval has zero width: the resampling saw no variation"
    if caveat:
        why = f"{why}; {caveat}"
    pv = paper_value
    if isinstance(pv, (np.floating, np.integer)):
        pv = pv.item()
    m = (
        None
        if verdict == "not testable here"
        else margin(ours, ci, null, null_range, direction, pv)
    )
    width = None if c0 is None or c1 is None else c1 - c0
    # A contradicted verdict's margin is on the predicted side (far off); its fragility is the gap
    # between the interval and the null on the side it fell (a hair under the null is fragile too).
    near = (
        _wrong_side_gap(ours, ci, null, null_range)
        if verdict == "contradicted" and direction != "match"
        else m
    )
    fragile = bool(
        verdict in ("supported", "contradicted")
        and near is not None
        and width
        and abs(near) < FRAGILE * width
    )
    if kind == "audit":
        verdict = _AUDIT_WORD.get(verdict, verdict)
    null_mid = None if null_range is None else _num(np.mean(null_range))
    return Claim(
        paper=paper,
        section=section,
        id=id,
        statement=statement,
        paper_value=pv,
        ours=_num(ours),
        ci_low=None if ci is None else _num(ci[0]),
        ci_high=None if ci is None else _num(ci[1]),
        null=_num(null) if null is not None else null_mid,
        null_low=None if null_range is None else _num(null_range[0]),
        null_high=None if null_range is None else _num(null_range[1]),
        null_how=null_how,
        direction=direction,
        verdict=verdict,
        why=why,
        notebook=notebook,
        figure=figure,
        interval_how=interval_how,
        kind=kind,
        rests_on=rests_on or ("the paper's printed tables" if kind == "re-analysis" else ""),
        margin=None if m is None else float(m),
        fragile=fragile,
        extra=extra,
    )


def decided(c: "Claim | dict") -> bool:
    """True when a claim's verdict excludes its null either way (supported, contradicted, pass,
    fail)."""
    v = c.verdict if isinstance(c, Claim) else c["verdict"]
    return v in ("supported", "contradicted", "pass", "fail")


def check_consistent(c: Claim | dict) -> None:
    """Raise if a recorded claim's verdict does not follow from its own numbers (used by tests
    and by :func:`record`). Caveats may only weaken a verdict, never strengthen one."""
    d = c.row() if isinstance(c, Claim) else dict(c)
    kind = d.get("kind", "reproduction")
    if kind not in KINDS:
        raise ValueError(f"claim {d['id']!r}: kind {kind!r}; allowed: {', '.join(KINDS)}")
    allowed = AUDIT_VERDICTS if kind == "audit" else VERDICTS
    if d["verdict"] not in allowed:
        raise ValueError(
            f"claim {d['id']!r} ({kind}): verdict {d['verdict']!r}; allowed: {', '.join(allowed)}"
        )
    ci = None if d["ci_low"] is None or d["ci_high"] is None else (d["ci_low"], d["ci_high"])
    nr = (
        None if d["null_low"] is None or d["null_high"] is None else (d["null_low"], d["null_high"])
    )
    if d["verdict"] == "not testable here":
        return
    expected, _ = decide(d["ours"], ci, d["null"], nr, d["direction"], d["paper_value"])
    if kind == "audit":
        expected = _AUDIT_WORD.get(expected, expected)
    for strong in ("supported", "contradicted", "pass", "fail"):
        if d["verdict"] == strong and expected != strong:
            raise ValueError(f"claim {d['id']!r} says {strong} but its numbers give {expected}")


def weaken(c: Claim, reason: str) -> Claim:
    """Demote a *supported* claim (an audit's *pass*) to *inconclusive*: e.g. the metric passes by
    construction, so passing says nothing."""
    if c.verdict in ("supported", "pass"):
        c.verdict = "inconclusive"
    c.why = f"{c.why}; {reason}"
    return c


def mark_stability(claims: list[Claim], reruns: Sequence[Sequence[Claim]], how: str) -> list[Claim]:
    """Set each claim's ``stability`` from the same claims computed again under other seeds
    (``reruns``: one list per rerun, matched by id; ``how`` names what changed, e.g. "bootstrap and
    permutation seeds 1, 2" or "world seed 1"). A claim whose verdict differs in any rerun is marked
    ``flips: <verdicts>``; one missing from a rerun stays unmarked."""
    for c in claims:
        again = [next((r for r in run if r.id == c.id), None) for run in reruns]
        if not again or any(r is None for r in again):
            continue
        verdicts = [r.verdict for r in again if r is not None]
        c.stability = (
            f"stable under {how}"
            if all(v == c.verdict for v in verdicts)
            else f"flips under {how}: {c.verdict} -> {', '.join(verdicts)}"
        )
    return claims


def finding(c: Claim | dict) -> str:
    """One sentence that states exactly what a claim's verdict says, no more: the statement, the
    verdict, our number and interval against the null, the margin, and what it rests on."""
    d = c.row() if isinstance(c, Claim) else dict(c)
    ours = _fmt(d["ours"]) + (
        "" if d["ci_low"] is None else f" [{_fmt(d['ci_low'])}, {_fmt(d['ci_high'])}]"
    )
    if d["null_low"] is not None:
        null = f"null [{_fmt(d['null_low'])}, {_fmt(d['null_high'])}]"
    else:
        null = f"null {_fmt(d['null'])}" if d["null"] is not None else ""
    if d["direction"] == "match" and d["paper_value"] is not None:
        null = f"paper {d['paper_value']}"
    parts = [f"{d['statement']}: **{d['verdict']}** ({d.get('kind', 'reproduction')})"]
    if d["verdict"] == "not testable here":
        return f"{parts[0]}: {d['why']}."
    parts.append(f"ours {ours}" + (f" vs {null}" if null else ""))
    if d.get("margin") is not None:
        parts.append(f"margin {_fmt(d['margin'])}" + (" (fragile)" if d.get("fragile") else ""))
    if d.get("stability"):
        parts.append(d["stability"])
    if d.get("rests_on"):
        parts.append(f"rests on {d['rests_on']}")
    return "; ".join(parts) + "."


def findings(claims: Sequence[Claim | dict]) -> list[str]:
    """:func:`finding` for each claim, reproductions first."""
    order = {k: i for i, k in enumerate(KINDS)}
    rows = sorted(
        claims,
        key=lambda c: order[(c.kind if isinstance(c, Claim) else c.get("kind", "reproduction"))],
    )
    return [finding(c) for c in rows]


def table(claims: Sequence[Claim]):
    """A display DataFrame: one row per claim, reproductions first, the verdict last."""
    import pandas as pd

    def interval(c):
        return "" if c.ci_low is None else f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]"

    def nul(c):
        if c.null_low is not None:
            return f"{_fmt(c.null)} [{_fmt(c.null_low)}, {_fmt(c.null_high)}]"
        return _fmt(c.null)

    order = {k: i for i, k in enumerate(KINDS)}
    rows = sorted(claims, key=lambda c: order[c.kind])
    return pd.DataFrame(
        [
            {
                "kind": c.kind,
                "paper": c.paper,
                "section": c.section,
                "claim": c.statement,
                "paper value": "" if c.paper_value is None else c.paper_value,
                "ours": _fmt(c.ours),
                "95% interval": interval(c),
                "null": nul(c),
                "null is": c.null_how,
                "margin": _fmt(c.margin) + (" !" if c.fragile else ""),
                "verdict": c.verdict,
                "why": c.why,
            }
            for c in rows
        ]
    )


def record(run, claims: Sequence[Claim]):
    """Check every claim, stamp the notebook, write them to ``results.json`` under ``claims`` and
    return the display table. Ids must be unique within the notebook."""
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate claim ids {dup}: ids must be unique within a notebook")
    for c in claims:
        c.notebook = run.notebook
        check_consistent(c)
    run.record(claims=[c.row() for c in claims])
    return table(claims)
