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
- *cannot be decided here* when the design, read before its data, cannot reach a decision: the
  smallest p-value or the narrowest interval it can give does not clear the 95% level (a
  permutation test over C(n, k) arrangements, a Wilson interval over a few clusters, k! orders of
  k methods, an equivalence test whose one changed answer already moves past the tolerance), or a
  named precondition does not hold (TE lowering a leak that is not established). Its reason is
  shown and it is kept out of a report's headline counts. See :func:`permutation_floor`,
  :func:`orders_floor`, :func:`wilson_floor`, :func:`equivalence_floor`, :func:`mark_undecidable`.
- *not testable here* when a reason is given or our value could not be computed: only for what
  this machine cannot run or measure.

Where the paper prints an effect (a range of published values), :func:`versus_paper` reads our
interval against it as well (the claim's ``vs_paper``): *replicated* (the interval excludes no
effect and reaches the paper's range), *smaller than the paper's* (an effect, but below every
published one), *not replicated* (the interval excludes the whole published range on the side of
no effect and does not show the effect), *undetermined* otherwise.

Every claim also has a **kind** (:data:`KINDS`), kept apart in every table and report:

- ``reproduction``: a paper claim tested on our own measurements (the tiny world's models or real
  models run here). Only these count in a report's headline; a real profile's headline counts only
  those that rest on a real LLM run here (:func:`basis`, :func:`headline_bases`).
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

UNDECIDABLE = "cannot be decided here"
"""The verdict of a claim whose design cannot reach a decision (module docstring)."""
VERDICTS = ("supported", "contradicted", "inconclusive", UNDECIDABLE, "not testable here")
AUDIT_VERDICTS = ("pass", "fail", "inconclusive", UNDECIDABLE, "not testable here")
"""An audit's verdicts: ``pass`` / ``fail`` stand where other kinds say supported / contradicted."""
_AUDIT_WORD = {"supported": "pass", "contradicted": "fail"}
ALL_VERDICTS = VERDICTS + AUDIT_VERDICTS[:2]
DIRECTIONS = ("greater", "less", "within", "match")
KINDS = ("reproduction", "re-analysis", "set-up check", "audit")
FRAGILE = 0.1
"""A decided verdict is *fragile* when its margin is below this share of its interval's width."""
ALPHA = 0.05
"""The level every interval and band of the ledger is read at (95%)."""
VS_PAPER = ("replicated", "smaller than the paper's", "not replicated", "undetermined")
"""The readings of our interval against the paper's published effect (:func:`versus_paper`)."""


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
    unit: str = ""
    """The independent unit the interval and the null resample (``items``, ``models``, ``contents``,
    ``seeds``, ``shuffle copies``...), shown in every table row so a reader sees what was counted as
    independent; ``""`` for a claim with no resampling (a recomputation, a count)."""
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
    paper_effect_low: float | None = None
    paper_effect_high: float | None = None
    """The range of the paper's published effect in the claim's units (``None``: none given)."""
    vs_paper: str = ""
    """Our interval against the paper's effect (:data:`VS_PAPER`); ``""``: the paper gives none."""
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return asdict(self)


def resampling_unit(interval_how: str) -> str:
    """The unit an ``interval_how`` says it resamples: the words after its first ``over`` or
    ``across`` up to a bracket or punctuation, counts dropped; ``""`` for a deterministic
    recomputation or when none is named.

    >>> resampling_unit("bootstrap over 12 contents (200 test items)")
    'contents'
    >>> resampling_unit("paired bootstrap over 200 test items and 400 fresh items")
    'test items and fresh items'
    """
    import re

    if interval_how.startswith("deterministic"):
        return ""
    m = re.search(r"\b(?:over|across)\s+(.*?)(?:\s*[(,;:]|$)", interval_how)
    if not m:
        return ""
    words = [w for w in m.group(1).split() if not w.replace(".", "").isdigit() and w != "the"]
    return " ".join(words)


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
    undecidable: str | None = None,
) -> tuple[str, str]:
    """The verdict rule (see the module docstring). Returns ``(verdict, why)``. ``undecidable``:
    why the design cannot reach a decision (computed from the design, never from the numbers)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction={direction!r}; allowed values: {', '.join(DIRECTIONS)}")
    if not_testable:
        return "not testable here", not_testable
    if undecidable:
        return UNDECIDABLE, undecidable
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
    unit: str = "",
    figure: str | None = None,
    caveat: str = "",
    notebook: str = "",
    kind: str = "reproduction",
    rests_on: str = "",
    undecidable: str | None = None,
    paper_effect: tuple[float, float] | None = None,
    **extra: Any,
) -> Claim:
    """Build a :class:`Claim` with its verdict computed by :func:`decide`.

    ``ci``: our 95% interval ``(low, high)``; ``null``: the null value; ``null_range``: a null band
    (overrides ``null`` for the verdict). ``caveat``: appended to ``why`` (e.g. "passes by
    construction"). A zero-width interval supports nothing unless ``interval_how`` says it is a
    ``deterministic`` recomputation. ``kind``: one of :data:`KINDS` (an ``audit`` reads pass/fail);
    ``rests_on``: the models or tables the number comes from. ``undecidable``: why the design
    cannot reach a decision (from :func:`permutation_floor` and its kin, or a precondition), which
    makes the verdict *cannot be decided here* whatever the numbers. ``unit``: the independent unit
    resampled (default: read from ``interval_how``, :func:`resampling_unit`). ``paper_effect``: the
    range of the paper's published effect, read against our interval by :func:`versus_paper`.
    ``extra``: any other JSON-plain numbers.
    """
    if kind not in KINDS:
        raise ValueError(f"claim {id!r}: kind={kind!r}; allowed values: {', '.join(KINDS)}")
    # A percentile bootstrap interval may miss the point estimate of a skewed statistic; that is
    # legitimate. Only an inverted interval is bad input.
    c0, c1 = (None, None) if ci is None else (_num(ci[0]), _num(ci[1]))
    if ci is not None and c0 is not None and c1 is not None and c0 > c1:
        raise ValueError(f"claim {id!r}: ci low {ci[0]} > high {ci[1]}")
    verdict, why = decide(
        ours, ci, null, null_range, direction, paper_value, not_testable, undecidable
    )
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
    if (
        ci is not None
        and direction == "within"
        and verdict in ("supported", "inconclusive")
        and not interval_how.startswith("deterministic")
        and _zero_width(ci)
    ):
        # "unchanged" with nothing that changed (no item moved): the test cannot come out either
        # way, so it is no test of the claim
        verdict = UNDECIDABLE
        why = (
            "the interval has zero width (nothing changed under resampling, e.g. no item moved): "
            f"an equivalence cannot be read from no variation ({why})"
        )
    if caveat:
        why = f"{why}; {caveat}"
    pv = paper_value
    if isinstance(pv, (np.floating, np.integer)):
        pv = pv.item()
    m = (
        None
        if verdict in ("not testable here", UNDECIDABLE)
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
        unit=unit or resampling_unit(interval_how),
        kind=kind,
        rests_on=rests_on or ("the paper's printed tables" if kind == "re-analysis" else ""),
        margin=None if m is None else float(m),
        fragile=fragile,
        paper_effect_low=None if paper_effect is None else _num(min(paper_effect)),
        paper_effect_high=None if paper_effect is None else _num(max(paper_effect)),
        vs_paper=(
            ""
            if paper_effect is None or verdict in ("not testable here", UNDECIDABLE)
            else versus_paper(ci, paper_effect, null, null_range, direction)
        ),
        extra=extra,
    )


def bootstrap_claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    stat,
    *arrays,
    n_boot: int = 1000,
    seed: int = 0,
    null_draws: Sequence[float] | np.ndarray | None = None,
    direction: str = "greater",
    **kw: Any,
) -> Claim:
    """The claim most notebooks make: ``stat`` over the rows of ``arrays`` with a paired percentile
    bootstrap interval (:func:`kit.core.stats.bootstrap_ci`, ``n_boot`` resamples, ``seed``),
    against ``null`` / ``null_range`` as given in ``kw``, or, with ``null_draws`` (a permutation or
    shuffled-label null's draws), against their central 95% band
    (:func:`kit.core.stats.null_band`), recording the empirical one-sided p-value ``p_value``
    (``(1 + #draws at least as far on the predicted side) / (1 + #draws)``) and the draws' mean
    ``null_mean``. ``kw``: the other arguments of :func:`claim`.
    """
    from kit.core.stats import bootstrap_ci

    est = bootstrap_ci(stat, *arrays, n_boot=n_boot, seed=seed)
    return _estimate_claim(paper, section, id, statement, est, null_draws, direction, kw)


def bootstrap_groups_claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    stat,
    groups: Sequence[Sequence],
    *,
    clusters: Sequence[Any] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    null_draws: Sequence[float] | np.ndarray | None = None,
    direction: str = "greater",
    **kw: Any,
) -> Claim:
    """:func:`bootstrap_claim` for a statistic over several item tables resampled independently,
    items sharing a content together (:func:`kit.core.stats.bootstrap_groups_ci`: ``stat`` takes
    the list of resampled ``groups``; ``clusters``: one entry per group, None or a label per item),
    e.g. Ori and TE of rows scored on the same test items, beside Ref on fresh ones. ``null_draws``
    and ``kw`` as there."""
    from kit.core.stats import bootstrap_groups_ci

    est = bootstrap_groups_ci(stat, groups, n_boot=n_boot, seed=seed, clusters=clusters)
    return _estimate_claim(paper, section, id, statement, est, null_draws, direction, kw)


def _estimate_claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    est: tuple[float, float, float],
    null_draws: Sequence[float] | np.ndarray | None,
    direction: str,
    kw: dict[str, Any],
) -> Claim:
    """The claim of a bootstrap estimate ``(point, low, high)``, against ``null_draws``' central
    95% band with its empirical one-sided p-value when given (:func:`bootstrap_claim`)."""
    from kit.core.stats import null_band

    if null_draws is not None:
        draws = np.asarray(null_draws, float)
        band = null_band(draws)
        far = draws <= est[0] if direction == "less" else draws >= est[0]
        kw = dict(kw, null_range=band[1:])
        kw["p_value"] = float((1 + np.sum(far)) / (draws.size + 1))
        kw["null_mean"] = band[0]
    return claim(paper, section, id, statement, est[0], ci=est[1:], direction=direction, **kw)


def band_claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    ours: float,
    null_draws: Sequence[float] | np.ndarray,
    **kw: Any,
) -> Claim:
    """The other claim most notebooks make: a point ``ours`` (no interval of its own) against
    the central 95% band of a null's draws (:func:`kit.core.stats.null_band`: their mean as
    ``null``, the band as ``null_range``; non-finite draws dropped). ``kw``: the other arguments
    of :func:`claim` (``direction``, ``null_how``, a ``p_value`` computed by the caller...).
    """
    from kit.core.stats import null_band

    m, lo, hi = null_band(null_draws)
    return claim(paper, section, id, statement, ours, null=m, null_range=(lo, hi), **kw)


def mean_diff_claim(
    paper: str,
    section: str,
    id: str,
    statement: str,
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    paired: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    direction: str = "greater",
    **kw: Any,
) -> Claim:
    """A difference of means with its bootstrap interval (:func:`kit.core.stats.mean_diff_ci`,
    ``n_boot`` resamples, ``seed``): ``mean(a - b)`` over paired items (same index = same item,
    as :func:`bootstrap_claim` resamples them), or, ``paired=False``, ``mean(a) - mean(b)`` of two
    independent samples, each resampled on its own. ``kw``: the other arguments of :func:`claim`
    (``null`` or ``null_range``, ``null_how``...).
    """
    from kit.core.stats import mean_diff_ci

    est = mean_diff_ci(a, b, paired=paired, n_boot=n_boot, seed=seed)
    return claim(paper, section, id, statement, est[0], ci=est[1:], direction=direction, **kw)


def versus_paper(
    ci: tuple[float, float] | None,
    paper_effect: tuple[float, float],
    null: float | None,
    null_range: tuple[float, float] | None,
    direction: str,
) -> str:
    """Our interval against the paper's published effect (a range ``paper_effect`` of printed
    values, in the claim's units), beside the test against the null (:data:`VS_PAPER`):

    - *replicated*: the interval excludes the null on the predicted side and reaches the paper's
      range (not entirely on the null's side of it);
    - *smaller than the paper's*: it excludes the null on the predicted side but lies entirely
      between the null and the paper's range (an effect, smaller than every published one);
    - *not replicated*: it lies entirely on the null's side of the paper's range and does not
      exclude the null (or lies on the wrong side of it): the published effect is excluded and no
      effect is shown;
    - *undetermined*: it holds the null and reaches the paper's range, or there is no interval.

    ``direction``: ``greater`` (the paper's effect lies above the null) or ``less``.

    >>> versus_paper((-0.63, 1.12), (-49.8, -7.1), 0.0, None, "less")
    'not replicated'
    """
    if direction not in ("greater", "less"):
        raise ValueError(
            f"direction={direction!r}: a paper effect is read for 'greater' or 'less' claims"
        )
    if ci is None or _num(ci[0]) is None or _num(ci[1]) is None:
        return "undetermined"
    lo, hi = cast("tuple[float, float]", (_num(ci[0]), _num(ci[1])))
    plo, phi = sorted(cast("list[float]", [_num(v) for v in paper_effect]))
    nlo, nhi = (null, null) if null_range is None else null_range
    if direction == "greater":
        effect, beyond = lo > cast(float, _num(nhi)), hi < plo
    else:
        effect, beyond = hi < cast(float, _num(nlo)), lo > phi
    if effect:
        return "smaller than the paper's" if beyond else "replicated"
    return "not replicated" if beyond else "undetermined"


def permutation_floor(n_a: int, n_b: int, alpha: float = ALPHA / 2) -> str | None:
    """Why an exact label permutation of ``n_a`` against ``n_b`` units cannot reach a one-sided
    p-value at ``alpha`` (its smallest p-value, :func:`kit.core.stats.smallest_p`: the most
    extreme arrangement is one in C(n_a + n_b, n_a)), or ``None`` when it can. Read from the
    design alone: the ledger's reason for *cannot be decided here*, where ``smallest_p`` is the
    number.

    >>> permutation_floor(3, 2)
    '3 against 2 units: 10 label arrangements, so the smallest one-sided p-value is 0.1 > 0.025'
    """
    from kit.core.stats import smallest_p

    n_arr = math.comb(n_a + n_b, n_a)  # for the reason's text
    p = smallest_p(n_a, n_b)
    if p <= alpha:
        return None
    return (
        f"{n_a} against {n_b} units: {n_arr} label arrangements, so the smallest one-sided p-value "
        f"is {p:.3g} > {alpha:g}"
    )


def orders_floor(k: int, alpha: float = ALPHA) -> str | None:
    """Why a rank agreement of ``k`` items with a reference order, tested against all ``k!``
    orders, cannot reach a one-sided p-value at ``alpha`` (a perfect match is one order in ``k!``),
    or ``None`` when it can.

    >>> orders_floor(3)
    '3 ranked items: 6 orders, so even the reference order itself has p = 0.167 > 0.05'
    """
    n = math.factorial(k)
    if 1.0 / n <= alpha:
        return None
    return (
        f"{k} ranked items: {n} orders, so even the reference order itself has p = {1 / n:.3g} > "
        f"{alpha:g}"
    )


def wilson_floor(n: int, null: float, level: float = 1 - ALPHA) -> str | None:
    """Why a share over ``n`` units (a Wilson interval) cannot exclude ``null`` from above even if
    every unit goes the predicted way (n of n), or ``None`` when it can.

    >>> wilson_floor(3, 0.5)
    '3 units: even 3 of 3 has a Wilson 95% lower bound of 0.439, not above 0.5'
    """
    from kit.core.stats import wilson_interval

    if n < 1:
        return "no units"
    low = wilson_interval(n, n, level)[1]
    if low > null:
        return None
    return (
        f"{n} unit{'s' if n != 1 else ''}: even {n} of {n} has a Wilson {level:.0%} lower bound "
        f"of {low:.3g}, not above {null:g}"
    )


def equivalence_floor(
    n_items: int,
    tolerance: float,
    cells: int = 1,
    level: float = 1 - ALPHA,
    n_units: int | None = None,
) -> str | None:
    """Why an equivalence test of an accuracy change (points) within ``±tolerance``, bootstrapped
    over ``n_items`` items (a mean over ``cells`` rows or cells sharing them), can never be
    supported, or ``None`` when it can. One changed answer moves a cell by 100 / n_items points;
    a bootstrap draws its unit q times, q the ``(1 + level) / 2`` quantile of Binomial(n_units,
    1 / n_units) (``n_units``: the resampled units, clusters of items when they are resampled
    together; default the items), so the narrowest interval that saw any change reaches
    q * 100 / (n_items * cells) points; an interval that saw none has zero width and supports
    nothing either.

    >>> equivalence_floor(20, 2.0).split(",")[0]
    '20 items: one changed answer moves the interval to 15 points'
    """
    from scipy.stats import binom

    if n_items < 1:
        return "no items"
    units = n_items if n_units is None else max(1, n_units)
    q = max(1.0, float(binom.ppf(0.5 + level / 2, units, 1.0 / units)))
    reach = q * 100.0 / (n_items * max(1, cells))
    if reach <= tolerance:
        return None
    return (
        f"{n_items} items: one changed answer moves the interval to {reach:.3g} points, past the "
        f"tolerance ±{tolerance:g} (no change at all gives a zero-width interval)"
    )


def mark_undecidable(c: Claim, reason: str) -> Claim:
    """Make a claim *cannot be decided here* for ``reason``: a precondition that does not hold
    (e.g. TE lowering a leak that is not established) or a design that cannot reach a decision.
    The numbers stay for display; the margin and the reading against the paper go. A claim not
    testable here stays so."""
    if c.verdict == "not testable here":
        return c
    c.verdict = UNDECIDABLE
    c.why = f"{reason} (the numbers: {c.why})"
    c.margin, c.fragile, c.vs_paper = None, False, ""
    return c


def excludes_null(c: Claim) -> bool:
    """Whether a claim's own numbers exclude its null on the predicted side, before any weakening
    (:func:`weaken`) or design verdict: e.g. is a leak established, does a patch act at all."""
    ci = None if c.ci_low is None or c.ci_high is None else (c.ci_low, c.ci_high)
    nr = None if c.null_low is None or c.null_high is None else (c.null_low, c.null_high)
    if c.ours is None:
        return False
    verdict, _ = decide(c.ours, ci, c.null, nr, c.direction, c.paper_value)
    if verdict == "supported" and ci is not None and _zero_width(ci):
        return c.interval_how.startswith("deterministic")
    return verdict == "supported"


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
    if d["verdict"] in ("not testable here", UNDECIDABLE):
        if not str(d.get("why", "")).strip():
            raise ValueError(f"claim {d['id']!r} is {d['verdict']!r} without a reason")
        return
    expected, _ = decide(d["ours"], ci, d["null"], nr, d["direction"], d["paper_value"])
    if kind == "audit":
        expected = _AUDIT_WORD.get(expected, expected)
    for strong in ("supported", "contradicted", "pass", "fail"):
        if d["verdict"] == strong and expected != strong:
            raise ValueError(f"claim {d['id']!r} says {strong} but its numbers give {expected}")
    if d.get("vs_paper") and d.get("paper_effect_low") is not None:
        again = versus_paper(
            ci, (d["paper_effect_low"], d["paper_effect_high"]), d["null"], nr, d["direction"]
        )
        if again != d["vs_paper"]:
            raise ValueError(
                f"claim {d['id']!r} reads {d['vs_paper']!r} against the paper but its numbers "
                f"give {again!r}"
            )


def weaken(c: Claim, reason: str) -> Claim:
    """Demote a *supported* claim (an audit's *pass*) to *inconclusive*, and drop a reading of
    *replicated* against the paper: e.g. the metric passes by construction, so passing says
    nothing."""
    if c.verdict in ("supported", "pass"):
        c.verdict = "inconclusive"
    if c.vs_paper in ("replicated", "smaller than the paper's"):
        # an effect that is built in replicates nothing either; a non-replication still stands
        c.vs_paper = ""
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
    if d["verdict"] == UNDECIDABLE:
        return f"{parts[0]}: {d['why']}."
    parts.append(f"ours {ours}" + (f" vs {null}" if null else ""))
    if d.get("vs_paper"):
        parts.append(
            f"against the paper's {_fmt(d['paper_effect_low'])} to "
            f"{_fmt(d['paper_effect_high'])}: {d['vs_paper']}"
        )
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
                "resampled unit": c.unit,
                "null": nul(c),
                "null is": c.null_how,
                "margin": _fmt(c.margin) + (" !" if c.fragile else ""),
                "verdict": c.verdict,
                "vs paper": c.vs_paper,
                "why": c.why,
            }
            for c in rows
        ]
    )


def record(run, claims: Sequence[Claim]):
    """Check every claim, stamp the notebook, write them to ``results.json`` under ``claims`` and
    return the display table (:class:`kit.core.claims_html.ClaimsTable`: full claim text, verdicts
    coloured, wrapped to the page; its ``frame`` is :func:`table`'s DataFrame). Ids must be unique
    within the notebook."""
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate claim ids {dup}: ids must be unique within a notebook")
    for c in claims:
        c.notebook = run.notebook
        check_consistent(c)
    run.record(claims=[c.row() for c in claims])
    from kit.core.claims_html import ClaimsTable

    return ClaimsTable(table(claims))


REAL_LLM = "real LLM"
BASES = (
    REAL_LLM,
    "published responses",
    "MiniLM",
    "tiny world",
    "random twin",
    "paper's tables",
    "unstated",
)
"""What a claim's number rests on, coarsely (:func:`basis`): a real LLM run here, a real LLM's
published responses (read, not run), MiniLM (the offline encoder and its SAEs), the tiny world's
trained models, a random twin (numbers mean nothing), the paper's printed tables."""
# the words of ``rests_on`` that name each basis, tried in this order: a claim about SmolLM2 with a
# MiniLM concept space rests on SmolLM2 (its outputs are what is measured); published responses
# come first because they name a real model that was not run here
_BASIS_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("paper's tables", ("the paper's table", "the paper's printed", "the paper's tables")),
    ("published responses", ("published",)),
    (REAL_LLM, ("real/", "smollm2", "gemma-3", "qwen2.5", "real-sae/")),
    ("MiniLM", ("minilm",)),
    ("random twin", ("twin/", "twin-sae/")),
    ("tiny world", ("tiny world", "zoo/", "zoo-sae/", "micro world")),
)
_PROFILE_BASIS = {"tiny": "tiny world", "smoke": "tiny world", "dryrun": "random twin"}
"""The basis of a claim whose ``rests_on`` names none, by the profile that ran it: the tiny and
smoke profiles run on the world's models, dryrun on twins; elsewhere it stays ``unstated``."""


def basis(c: Claim | dict, profile: str = "") -> str:
    """What a claim rests on, one of :data:`BASES`, read from its ``kind`` and ``rests_on`` (the
    models it names), else from the ``profile`` that ran it (:data:`_PROFILE_BASIS`)."""
    d = c.row() if isinstance(c, Claim) else c
    if d.get("kind") == "re-analysis":
        return "paper's tables"
    text = str(d.get("rests_on") or "").lower()
    for name, words in _BASIS_WORDS:
        if any(w in text for w in words):
            return name
    return _PROFILE_BASIS.get(profile, "unstated")


def headline_bases(profile: str) -> tuple[str, ...]:
    """The bases a run of ``profile`` counts in its headline: a real profile (``real``,
    ``realsmoke``) counts what rests on a real LLM run here; the claims it shares with the tiny
    profile (MiniLM, the tiny world, published responses) are counted there, once. Every other
    profile counts all of its reproductions."""
    return (REAL_LLM,) if profile.startswith("real") else BASES
