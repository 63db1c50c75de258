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

The null is either one value (``null``: 0 for an effect, the untrained model's score) or a band
(``null_range``: the 2.5-97.5% range of a permutation or random-control distribution, or an
equivalence tolerance). :mod:`kit.core.stats` makes the intervals and nulls: paired bootstrap over
items, permutation nulls, Student-t intervals over seeds or reseeds, Wilson intervals for shares.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

VERDICTS = ("supported", "contradicted", "inconclusive", "not testable here")

DIRECTIONS = ("greater", "less", "within", "match")


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


def decide(ours: float | None, ci: tuple[float, float] | None, null: float | None,
           null_range: tuple[float, float] | None, direction: str, paper_value: Any = None,
           not_testable: str | None = None) -> tuple[str, str]:
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
        pv = _num(paper_value) if isinstance(paper_value, (int, float, np.floating, np.integer)) else None
        if pv is None:
            return "not testable here", "the paper prints no number to match"
        if ci is None:
            return "inconclusive", "no interval to hold the paper's value"
        inside = lo <= pv <= hi
        return ("supported" if inside else "contradicted",
                f"paper {_fmt(pv)} {'inside' if inside else 'outside'} our interval [{_fmt(lo)}, {_fmt(hi)}]")
    if null_range is not None:
        nlo, nhi = _num(null_range[0]), _num(null_range[1])
    else:
        nlo = nhi = _num(null)
    if nlo is None or nhi is None:
        return "not testable here", "no null or baseline could be computed"
    if ci is None and null_range is None:
        return "inconclusive", f"a single number ({_fmt(ours)}) against a single null ({_fmt(nlo)}): no interval"
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


def claim(paper: str, section: str, id: str, statement: str, ours, *, ci=None, null=None, null_range=None,
          null_how: str = "", direction: str = "greater", paper_value: Any = None, not_testable: str | None = None,
          interval_how: str = "", figure: str | None = None, caveat: str = "", notebook: str = "",
          **extra: Any) -> Claim:
    """Build a :class:`Claim` with its verdict computed by :func:`decide`.

    ``ci``: our 95% interval ``(low, high)``; ``null``: the null value; ``null_range``: a null band
    (overrides ``null`` for the verdict). ``caveat``: appended to ``why`` (e.g. "passes by
    construction"). A zero-width interval supports nothing unless ``interval_how`` says it is a
    ``deterministic`` recomputation. ``extra``: any other JSON-plain numbers worth keeping.
    """
    # A percentile bootstrap interval may miss the point estimate of a skewed statistic; that is
    # legitimate. Only an inverted interval is bad input.
    if ci is not None and None not in (_num(ci[0]), _num(ci[1])) and _num(ci[0]) > _num(ci[1]):
        raise ValueError(f"claim {id!r}: ci low {ci[0]} > high {ci[1]}")
    verdict, why = decide(ours, ci, null, null_range, direction, paper_value, not_testable)
    if (ci is not None and verdict in ("supported", "contradicted") and direction != "match"
            and not interval_how.startswith("deterministic") and _num(ci[0]) == _num(ci[1])):
        # Resampling that never varies measures no uncertainty (identical repeats, constant items).
        verdict, why = "inconclusive", f"{why}, but the interval has zero width: the resampling saw no variation"
    if caveat:
        why = f"{why}; {caveat}"
    pv = paper_value
    if isinstance(pv, (np.floating, np.integer)):
        pv = pv.item()
    return Claim(paper=paper, section=section, id=id, statement=statement, paper_value=pv, ours=_num(ours),
                 ci_low=None if ci is None else _num(ci[0]), ci_high=None if ci is None else _num(ci[1]),
                 null=_num(null) if null is not None else (None if null_range is None else _num(np.mean(null_range))),
                 null_low=None if null_range is None else _num(null_range[0]),
                 null_high=None if null_range is None else _num(null_range[1]),
                 null_how=null_how, direction=direction, verdict=verdict, why=why, notebook=notebook,
                 figure=figure, interval_how=interval_how, extra=extra)


def check_consistent(c: Claim | dict) -> None:
    """Raise if a recorded claim's verdict does not follow from its own numbers (used by tests
    and by :func:`record`). Caveats may only weaken a verdict, never strengthen one."""
    d = c.row() if isinstance(c, Claim) else dict(c)
    if d["verdict"] not in VERDICTS:
        raise ValueError(f"claim {d['id']!r}: verdict {d['verdict']!r}; allowed: {', '.join(VERDICTS)}")
    ci = None if d["ci_low"] is None or d["ci_high"] is None else (d["ci_low"], d["ci_high"])
    nr = None if d["null_low"] is None or d["null_high"] is None else (d["null_low"], d["null_high"])
    if d["verdict"] == "not testable here":
        return
    expected, _ = decide(d["ours"], ci, d["null"], nr, d["direction"], d["paper_value"])
    if d["verdict"] == "supported" and expected != "supported":
        raise ValueError(f"claim {d['id']!r} says supported but its numbers give {expected}")
    if d["verdict"] == "contradicted" and expected != "contradicted":
        raise ValueError(f"claim {d['id']!r} says contradicted but its numbers give {expected}")


def weaken(c: Claim, reason: str) -> Claim:
    """Demote a *supported* claim to *inconclusive* (e.g. the metric passes by construction)."""
    if c.verdict == "supported":
        c.verdict = "inconclusive"
    c.why = f"{c.why}; {reason}"
    return c


def table(claims: Sequence[Claim]):
    """A display DataFrame: one row per claim, the verdict last."""
    import pandas as pd

    def interval(c):
        return "" if c.ci_low is None else f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]"

    def nul(c):
        if c.null_low is not None:
            return f"{_fmt(c.null)} [{_fmt(c.null_low)}, {_fmt(c.null_high)}]"
        return _fmt(c.null)

    return pd.DataFrame([{"paper": c.paper, "section": c.section, "claim": c.statement,
                          "paper value": "" if c.paper_value is None else c.paper_value,
                          "ours": _fmt(c.ours), "95% interval": interval(c), "null": nul(c),
                          "null is": c.null_how, "verdict": c.verdict, "why": c.why} for c in claims])


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
