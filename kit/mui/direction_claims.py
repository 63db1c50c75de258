"""Notebook 02's claims (seed 000, corollaries 1 and 2), declared over a :class:`TrajectoryStudy`.

Each question is asked once per source: on the paper's printed Tables 8-10 (ids ``paper.*``, kind
``re-analysis``) and on the models measured here (no prefix, kind ``reproduction``). Nulls are
conditioned on what the setting fixes:

- **a predicted direction** (accumulating early in pre-training, evolving late, accumulating in
  domain, coarsening out of domain, accumulating on the leaked benchmark): a direction is the pair
  (sign of Δperformance, sign of ΔMUI). Early pre-training, specialisation in domain and leaked
  test data all fix the sign of Δperformance (up in 28 of the paper's 35 early steps), so a share
  of "accumulating" among all changes is beaten by any MUI that moves at random. The claim is
  therefore conditional: among the changes whose performance moved the predicted way (and whose MUI
  moved beyond the tolerance), the share whose MUI moved the predicted way, against a fair coin
  (1/2). Changes are clustered (the steps of one benchmark's trajectory; the benchmarks of one
  fine-tune), so the Wilson interval uses the number of clusters as its sample size (the design
  effect at its largest: each cluster counts as one unit), and the exact binomial p-value at that
  size is recorded. With so few clusters that even all of them going the predicted way leaves
  the Wilson lower bound at or under 1/2 (3 or fewer), the claim cannot be decided here.
- **collapsing out of domain under contamination** (§3.3: collapsing "only observed when data
  contamination occurs"): contaminated fine-tunes against the uncontaminated ones (specialised and
  control fine-tunes; on the paper's tables, Table 9's specialised models), the model as the unit:
  the difference of the mean per-model collapse rates over OOD changes, against the exact
  permutation distribution of the contaminated/uncontaminated labels over the models (every
  arrangement). The verdict reads the observed difference against that distribution's 2.5-97.5%
  band (its order statistics, not interpolated, so a test with too few models cannot pass). A
  design whose most extreme arrangement is not under 2.5% (3 against 2 models: 1 in 10) cannot be
  decided here.
- **set-up check** (the world's contamination did leak): on the leaked task, the contaminated
  fine-tunes' test-split score minus their fresh-item score, minus their bases' same gap (points),
  with a normal interval from the accuracies' binomial variance over items (needs ``fresh``).

Stability: the measured claims again on other item draws (:func:`study_claims`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence, cast

import numpy as np
import pandas as pd

from kit.core.claims import Claim, claim, mark_stability, permutation_floor, wilson_floor
from kit.core.stats import proportions_contrast_interval, wilson_interval

if TYPE_CHECKING:  # kit.mui.trajectories imports the world's loaders: only for the annotation
    from kit.mui.trajectories import TrajectoryStudy

PAPER = "000"
REQUIRED_IDS = [
    "corollary1.early_accumulating",
    "corollary1.late_evolving",
    "corollary1.specialised_in_domain",
    "corollary1.specialised_ood",
    "corollary2.contamination_in_domain",
    "corollary2.contamination_ood",
    "setup.leak_on_test_split",
]
"""Notebook 02's required claim ids (the measured models' claims)."""

SIGNS: dict[str, tuple[int, int]] = {
    "evolving": (1, -1),
    "accumulating": (1, 1),
    "coarsening": (-1, 1),
    "collapsing": (-1, -1),
}
"""Each direction as (sign of Δperformance, sign of ΔMUI) (:func:`kit.mui.directions.direction`)."""

MAX_EXACT = 20_000
"""Largest number of label arrangements enumerated exactly; beyond it, ``n_perm`` seeded draws."""


@dataclass(frozen=True)
class Question:
    """One direction claim: which changes it reads and the direction it predicts."""

    id: str
    corollary: str
    setting: str
    subset: str
    expected: str


QUESTIONS: tuple[Question, ...] = (
    Question("corollary1.early_accumulating", "1", "pre-training", "early steps", "accumulating"),
    Question("corollary1.late_evolving", "1", "pre-training", "late steps", "evolving"),
    Question(
        "corollary1.specialised_in_domain", "1", "specialisation", "in-domain", "accumulating"
    ),
    Question("corollary1.specialised_ood", "1", "specialisation", "ood", "coarsening"),
    Question(
        "corollary2.contamination_in_domain", "2", "contamination", "in-domain", "accumulating"
    ),
)


@dataclass
class DirectionTables:
    """Labelled changes of one source (outputs of :mod:`kit.mui.directions`), one split.

    ``pretraining``: ``step_directions`` rows (``task, step, n_steps, direction``); the others
    ``pair_directions`` rows (``model, task, domain, direction``). ``controls``: uncontaminated
    fine-tunes other than the specialised ones (empty for the paper's tables)."""

    source: str
    """``paper tables`` or the measured models' label (``tiny world``, ``measured``)."""
    pretraining: pd.DataFrame
    specialised: pd.DataFrame
    contaminated: pd.DataFrame
    controls: pd.DataFrame
    late_steps: int
    rests_on: dict[str, str]
    """Setting (``pre-training``, ``specialisation``, ``contamination``) -> what its changes
    rest on."""

    def subset(self, q: Question) -> tuple[pd.DataFrame, str]:
        """The changes question ``q`` reads and their cluster column."""
        if q.setting == "pre-training":
            p = self.pretraining
            if p.empty:
                return p, "task"
            late = p["step"] > p["n_steps"] - self.late_steps
            return (p[late] if q.subset == "late steps" else p[~late]), "task"
        frame = self.specialised if q.setting == "specialisation" else self.contaminated
        if frame.empty:
            return frame, "model"
        return frame[frame["domain"] == q.subset], "model"

    def measured(self, setting: str) -> bool:
        """Does this run have any change of ``setting`` (any model for it)?"""
        return not {
            "pre-training": self.pretraining,
            "specialisation": self.specialised,
            "contamination": self.contaminated,
        }[setting].empty


_NO_MODELS = {
    "pre-training": "no training checkpoints (checkpoints: [])",
    "specialisation": "no specialised fine-tunes (specialised: {})",
    "contamination": "no contaminated fine-tunes (contaminated: {})",
}
"""Why a setting has no changes at all (the profile lists no models for it)."""


def conditional_share(changes: pd.DataFrame, expected: str, cluster: str) -> dict[str, Any]:
    """Among ``changes`` whose Δperformance has the sign ``expected`` predicts (and whose MUI moved
    beyond the tolerance: neither coordinate ``flat``), the share whose ΔMUI has the predicted sign.

    ``changes``: rows with ``direction`` and the ``cluster`` column. Returns ``k`` (changes in the
    predicted direction), ``m`` (changes with the predicted performance sign), ``share`` (k/m, NaN
    when m = 0), ``clusters`` (clusters with m > 0), ``n_changes`` (all rows).
    """
    s_perf, _ = SIGNS[expected]
    same_perf = [d for d, (sp, _) in SIGNS.items() if sp == s_perf]
    given = changes[changes["direction"].isin(same_perf)]
    k = int((given["direction"] == expected).sum())
    m = int(len(given))
    return {
        "k": k,
        "m": m,
        "share": k / m if m else float("nan"),
        "clusters": int(given[cluster].nunique()) if m else 0,
        "n_changes": int(len(changes)),
    }


def clustered_wilson(share: float, clusters: int) -> tuple[float, float]:
    """Wilson 95% interval of ``share`` with the number of clusters as the sample size (each cluster
    one unit: the design effect at its largest, so the interval holds however correlated the changes
    of a cluster are)."""
    _, lo, hi = wilson_interval(share * clusters, clusters)
    return lo, hi


def _few(floor: str | None, unit: str) -> str | None:
    """A design floor's reason (:mod:`kit.core.claims`) with the units it counts named."""
    return None if floor is None else f"too few {unit} to decide: {floor}"


def _design_floor(tables: DirectionTables, q: Question, cluster: str, unit: str) -> str | None:
    """Why ``q`` cannot be decided from its design alone: the units its setting measured (every
    fine-tune or trajectory of the setting, before any change is read) are too few for a Wilson
    interval to clear 1/2 even if all agreed; None when the setting measured nothing."""
    if not tables.measured(q.setting):
        return None
    frame = {
        "pre-training": tables.pretraining,
        "specialisation": tables.specialised,
        "contamination": tables.contaminated,
    }[q.setting]
    n = int(frame[cluster].nunique()) if cluster in frame else 0
    return _few(wilson_floor(n, 0.5), unit) if n else None


def direction_claim(tables: DirectionTables, q: Question, prefix: str, kind: str) -> Claim:
    """Question ``q`` on one source: the conditional share against a fair coin (module
    docstring)."""
    from scipy.stats import binomtest

    changes, cluster = tables.subset(q)
    s_perf, s_mui = SIGNS[q.expected]
    perf_word = "rose" if s_perf > 0 else "fell"
    mui_word = "rose" if s_mui > 0 else "fell"
    unit = "benchmark trajectories" if cluster == "task" else "fine-tunes"
    where = f"{tables.source}: {q.setting}, {q.subset}"
    rests_on = tables.rests_on.get(q.setting, "")
    stat = conditional_share(changes, q.expected, cluster) if len(changes) else None
    if stat is None or stat["m"] == 0:
        # the design first: a setting with too few fine-tunes (or trajectories) cannot be decided
        # whatever its changes say (e.g. one specialised fine-tune on real models)
        design = _design_floor(tables, q, cluster, unit)
        return claim(
            PAPER,
            f"§3.3-3.4 (corollary {q.corollary})",
            prefix + q.id,
            f"{where}: {q.expected} (MUI {mui_word} where performance {perf_word})",
            None,
            undecidable=design or None,
            not_testable=None
            if design
            else (
                f"no change in this subset where performance {perf_word} beyond the tolerance "
                "and MUI moved"
                if tables.measured(q.setting)
                else f"nothing measured in this run for {q.setting}: {_NO_MODELS[q.setting]}"
            ),
            kind=kind,
            rests_on=rests_on,
        )
    k, m, nc = stat["k"], stat["m"], stat["clusters"]
    statement = (
        f"{where}: {q.expected}, i.e. among the changes where performance {perf_word} and MUI "
        f"moved, the share where MUI {mui_word} ({k} of {m}; {stat['n_changes']} changes in the "
        f"subset, {nc} {unit})"
    )
    lo, hi = clustered_wilson(stat["share"], nc)
    p = binomtest(int(round(stat["share"] * nc)), nc, 0.5, alternative="greater").pvalue
    return claim(
        PAPER,
        f"§3.3-3.4 (corollary {q.corollary})",
        prefix + q.id,
        statement,
        stat["share"],
        ci=(lo, hi),
        null=0.5,
        direction="greater",
        kind=kind,
        rests_on=rests_on,
        null_how=f"MUI's sign a fair coin given performance {perf_word} (1/2)",
        paper_value=q.expected,
        figure="direction_counts",
        interval_how=f"Wilson 95% over {nc} {unit} (clusters; the design effect at its largest)",
        undecidable=_few(wilson_floor(nc, 0.5), unit),
        p_value=float(p),
        k=k,
        m=m,
        clusters=nc,
    )


def collapse_rates(pairs: pd.DataFrame) -> pd.Series:
    """Per fine-tune, the share of its out-of-domain changes that are ``collapsing`` (flat
    changes count as not collapsing). ``pairs``: ``pair_directions`` rows with ``model, domain,
    direction``."""
    if pairs is None or pairs.empty:
        return pd.Series(dtype=float)
    ood = pairs[pairs["domain"] == "ood"]
    return ood.groupby("model")["direction"].apply(lambda d: float((d == "collapsing").mean()))


def label_permutation_null(
    treated: Sequence[float], control: Sequence[float], n_perm: int = 10_000, seed: int = 0
) -> tuple[float, np.ndarray, bool]:
    """Difference of means ``mean(treated) - mean(control)`` and its distribution under every
    arrangement of the labels over the units (exact when there are at most :data:`MAX_EXACT`
    arrangements, else ``n_perm`` seeded draws). Returns ``(observed, null, exact)``.

    Written here rather than with ``scipy.stats.permutation_test``: scipy refuses a side of one
    unit, which the smallest designs have (one contaminated fine-tune against the rest)."""
    a, b = np.asarray(treated, float), np.asarray(control, float)
    pooled, n_a = np.concatenate([a, b]), len(a)
    observed = float(a.mean() - b.mean())
    total = pooled.sum()
    n_arr = math.comb(len(pooled), n_a)
    if n_arr <= MAX_EXACT:
        picks = (list(c) for c in itertools.combinations(range(len(pooled)), n_a))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        picks = (rng.choice(len(pooled), n_a, replace=False) for _ in range(n_perm))
        exact = False
    null = []
    for idx in picks:
        s = pooled[idx].sum()
        null.append(s / n_a - (total - s) / (len(pooled) - n_a))
    return observed, np.asarray(null, float), exact


def order_band(null: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Central ``level`` band of a null distribution read from its order statistics (``lower`` and
    ``higher`` quantiles, never interpolated): an observed value beyond it has an exact one-sided
    p-value under (1 - level) / 2, and with too few arrangements no value can be beyond it."""
    a = (1 - level) / 2
    return float(np.quantile(null, a, method="lower")), float(
        np.quantile(null, 1 - a, method="higher")
    )


def contamination_ood_claim(
    contaminated: pd.DataFrame,
    uncontaminated: pd.DataFrame,
    source: str,
    prefix: str,
    kind: str,
    rests_on: str,
    seed: int = 0,
) -> Claim:
    """Corollary 2 out of domain: contaminated fine-tunes collapse more often than uncontaminated
    ones, the model as the unit, against the exact label-permutation null (module docstring)."""
    cid = prefix + "corollary2.contamination_ood"
    statement = (
        f"{source}: contamination, ood: contaminated fine-tunes' share of collapsing OOD changes "
        "minus the uncontaminated fine-tunes' (mean over models)"
    )
    a, b = collapse_rates(contaminated), collapse_rates(uncontaminated)
    if len(a) < 1 or len(b) < 1:
        return claim(
            PAPER,
            "§3.3-3.4 (corollary 2)",
            cid,
            statement,
            None,
            kind=kind,
            rests_on=rests_on,
            not_testable=f"{len(a)} contaminated and {len(b)} uncontaminated fine-tunes with OOD "
            "changes: a model-level test needs one of each",
        )
    observed, null, exact = label_permutation_null(a.to_numpy(), b.to_numpy(), seed=seed)
    band = order_band(null)
    p = float(
        (np.sum(null >= observed - 1e-12) + (0 if exact else 1)) / (null.size + (0 if exact else 1))
    )
    how = (
        f"{'every' if exact else str(null.size)} arrangement{'s' if null.size > 1 else ''} of the "
        f"contaminated/uncontaminated labels over {len(a) + len(b)} models "
        f"({null.size} {'exact' if exact else 'seeded draws'}; one-sided p {p:.3g})"
    )
    return claim(
        PAPER,
        "§3.3-3.4 (corollary 2)",
        cid,
        f"{statement}: {a.mean():.2f} over {len(a)} contaminated vs {b.mean():.2f} over {len(b)} "
        "uncontaminated",
        observed,
        null_range=band,
        null=float(null.mean()),
        direction="greater",
        null_how=how,
        paper_value="collapsing",
        kind=kind,
        rests_on=rests_on,
        interval_how="none: the models are the units; the verdict is the exact permutation test",
        figure="direction_counts",
        undecidable=_few(
            permutation_floor(len(a), len(b)), "fine-tunes (contaminated against uncontaminated)"
        ),
        p_value=p,
        exact=exact,
        contaminated_rates={str(k): round(v, 4) for k, v in a.items()},
        uncontaminated_rates={str(k): round(v, 4) for k, v in b.items()},
    )


def leak_claim(
    measurements: pd.DataFrame | None,
    contaminated: dict[str, str],
    leaked_tasks: Sequence[str],
    rests_on: str,
) -> Claim:
    """Set-up check: on the leaked task(s), the contaminated fine-tunes' test-minus-fresh accuracy
    gap exceeds their bases' (points, mean over fine-tune x task). The models are fixed (the
    question is whether these fine-tunes leaked); the items are the sample: the contrast of the
    accuracies (a base's counted once per fine-tune that subtracts it) with Price and Bonett's
    adjusted Wald interval (:func:`kit.core.stats.proportions_contrast_interval`; the plain Wald
    interval has zero width at accuracies of 0 or 100% and too little coverage at a few items)."""
    cid = "setup.leak_on_test_split"
    statement = (
        "set-up: the contaminated fine-tunes score higher on the leaked task's public test items "
        "than on its fresh items, beyond their bases' gap (points, mean over fine-tunes)"
    )

    def untestable(why: str) -> Claim:
        return claim(
            PAPER,
            "§3.4 (set-up)",
            cid,
            statement,
            None,
            kind="set-up check",
            rests_on=rests_on,
            not_testable=why,
        )

    if measurements is None or not contaminated or "fresh" not in set(measurements["split"]):
        return untestable("no fresh split or no contaminated fine-tunes measured")
    m = measurements[measurements["task"].isin(list(leaked_tasks))].set_index(
        ["model", "task", "split"]
    )
    terms: list[tuple[str, str, float]] = []  # (model, task, sign) of each accuracy in the sum
    for ft, base in contaminated.items():
        for t in leaked_tasks:
            keys = [(x, t, sp) for x in (ft, base) for sp in ("test", "fresh")]
            if all(k in m.index for k in keys):
                terms += [(ft, t, 1.0), (base, t, -1.0)]
    pairs = len(terms) // 2
    if pairs < 1:
        return untestable("no contaminated fine-tune with both splits measured beside its base")
    coef: dict[tuple[str, str, str], float] = {}
    for model, t, sign in terms:
        for sp, s2 in (("test", 1.0), ("fresh", -1.0)):
            coef[(model, t, sp)] = coef.get((model, t, sp), 0.0) + sign * s2 / pairs
    shares = []  # (coefficient, correct items, items) of each accuracy, once per key
    for key, c in coef.items():
        n = int(cast(Any, m.loc[key, "n"]))  # one row per key
        shares.append((100.0 * c, round(float(cast(Any, m.loc[key, "perf"])) * n / 100.0), n))
    gap, low, high = proportions_contrast_interval(shares)
    return claim(
        PAPER,
        "§3.4 (set-up)",
        cid,
        statement,
        gap,
        ci=(low, high),
        null=0.0,
        direction="greater",
        null_how="no leak (0)",
        kind="set-up check",
        rests_on=rests_on,
        interval_how=(
            f"Price-Bonett adjusted Wald 95% over each accuracy's items ({pairs} fine-tune x "
            f"task pairs; models fixed, items sampled)"
        ),
    )


def source_claims(tables: DirectionTables, prefix: str, kind: str, seed: int = 0) -> list[Claim]:
    """Every direction question and the contamination-vs-controls claim on one source."""
    out = [direction_claim(tables, q, prefix, kind) for q in QUESTIONS]
    clean = (
        pd.concat([t for t in (tables.specialised, tables.controls) if len(t)], ignore_index=True)
        if len(tables.specialised) or len(tables.controls)
        else tables.controls
    )
    out.append(
        contamination_ood_claim(
            tables.contaminated,
            clean,
            tables.source,
            prefix,
            kind,
            tables.rests_on.get("contamination", ""),
            seed,
        )
    )
    return out


PUBLISHED_RESTS_ON = {
    "pre-training": "the paper's Table 8 (OLMo-2-7B, 8 checkpoints 0.5T-4T, 7 benchmarks)",
    "specialisation": "the paper's Table 9 (CodeLlama, Qwen2.5-Coder, Qwen2.5-Math vs their bases)",
    "contamination": "the paper's Table 10 (the '-Leakage' fine-tunes vs their bases; Table 9's "
    "specialised models as the uncontaminated fine-tunes)",
}


def published_tables(
    olmo_steps: pd.DataFrame,
    specialised: pd.DataFrame,
    contamination: pd.DataFrame,
    late_steps: int,
) -> DirectionTables:
    """The paper's Tables 8-10 labelled (``step_directions`` / ``pair_directions`` outputs)."""
    empty = specialised.iloc[:0]
    return DirectionTables(
        "paper tables (Tables 8-10)",
        olmo_steps,
        specialised,
        contamination,
        empty,
        late_steps,
        PUBLISHED_RESTS_ON,
    )


def measured_tables(
    directions: dict[str, pd.DataFrame],
    split: str,
    source: str,
    late_steps: int,
    rests_on: dict[str, str],
) -> DirectionTables:
    """The measured models' labelled changes on ``split`` (``directions``: the output of
    :func:`kit.mui.trajectories.analyse`)."""

    def on(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["split"] == split] if len(frame) else frame

    return DirectionTables(
        f"{source} ({split} split)",
        on(directions["pretraining"]),
        on(directions["specialised"]),
        on(directions["contaminated"]),
        on(directions["controls"]),
        late_steps,
        rests_on,
    )


def measured_claims(
    directions: dict[str, pd.DataFrame],
    measurements: pd.DataFrame | None,
    contaminated: dict[str, str],
    leaked_tasks: Sequence[str],
    split: str,
    source: str,
    late_steps: int,
    rests_on: dict[str, str],
    seed: int = 0,
) -> list[Claim]:
    """The measured models' claims (kind ``reproduction``) and the leak's set-up check."""
    tables = measured_tables(directions, split, source, late_steps, rests_on)
    return source_claims(tables, "", "reproduction", seed) + [
        leak_claim(measurements, contaminated, leaked_tasks, rests_on.get("contamination", ""))
    ]


def study_claims(
    study: TrajectoryStudy,
    split: str,
    late_steps: int,
    published_late_steps: int = 2,
    seed: int = 0,
) -> list[Claim]:
    """Notebook 02's claims from a :class:`kit.mui.trajectories.TrajectoryStudy`: the paper's tables
    (``paper.`` ids, ``re-analysis``), the measured models on ``split`` (``reproduction``) and the
    leak (``set-up check``); the measured claims marked stable or not under the study's further item
    draws (``study.reseeds``: item seed -> the directions of the same models on those items)."""
    s = study.settings
    # set by a run study (its settings and the paper's tables)
    assert s is not None and study.olmo_steps is not None
    assert study.published_specialised is not None and study.published_contamination is not None
    pub = published_tables(
        study.olmo_steps,
        study.published_specialised,
        study.published_contamination,
        published_late_steps,
    )
    out = source_claims(pub, "paper.", "re-analysis", seed)
    mine = measured_claims(
        study.directions,
        study.measurements,
        s.contaminated,
        s.contaminated_tasks,
        split,
        study.source,
        late_steps,
        study.rests_on,
        seed,
    )
    reruns = [
        measured_claims(
            d,
            m,
            s.contaminated,
            s.contaminated_tasks,
            split,
            study.source,
            late_steps,
            study.rests_on,
            seed,
        )
        for m, d in study.reseeds.values()
    ]
    if reruns:
        mark_stability(mine, reruns, "item draws with seeds " + ", ".join(map(str, study.reseeds)))
    return out + mine


def smallest_p(n_treated: int, n_control: int) -> float:
    """Smallest one-sided p-value an exact label permutation over ``n_treated + n_control``
    units can give: one arrangement in C(n, n_treated)."""
    return 1.0 / math.comb(n_treated + n_control, n_treated)


def real_model_scope(
    contaminated: Sequence[str],
    controls: Sequence[str],
    offline: Sequence[str] = ("real/smollm2-135m-instruct", "real/gemma-3-270m"),
) -> list[str]:
    """Which of this notebook's claims the offline real models could test, and why not, computed
    from the real fine-tunes' counts (``contaminated``, ``controls``: model names, e.g.
    ``kit.models.recipes.CONTAMINATED`` / ``CONTROLS``; each contaminated one leaks one
    benchmark)."""
    n_c, n_u = len(contaminated), len(controls)
    lo = wilson_interval(n_c, n_c)[1] if n_c else float("nan")
    p = smallest_p(n_c, n_u) if n_c and n_u else float("nan")
    n_arr = math.comb(n_c + n_u, n_c) if n_c and n_u else 0
    return [
        f"Corollary 1, pre-training: not testable: {' and '.join(offline)} ship their final "
        "weights only (no training checkpoints offline); the paper and paper-pythia profiles name "
        "hub checkpoints.",
        "Corollary 1, specialisation: not testable: no specialised fine-tune of an offline real "
        "model (the paper's pairs are 7B hub models).",
        f"Corollary 2, in domain: {n_c} contaminated fine-tunes, one leaked benchmark each, are "
        f"{n_c} units: even {n_c} of {n_c} accumulating has a Wilson lower bound of {lo:.3f}, "
        + ("so it could be decided." if lo > 0.5 else "under 1/2, so it cannot be supported."),
        f"Corollary 2, out of domain: {n_c} contaminated against {n_u} clean fine-tunes, the model "
        f"as the unit: {n_arr} label arrangements, smallest one-sided p {p:.3g}"
        + (", so it cannot be decided at 2.5%." if not p <= 0.025 else "."),
        "Set-up check (the leak): testable on them (test-minus-fresh accuracy on the leaked "
        "benchmark).",
    ]
