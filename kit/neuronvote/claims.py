"""Claims of seed 004 (NeuronVote) tested by notebook 05, declared over its settings.

Each setting (:class:`kit.neuronvote.settings.Setting`: MiniLM on POS, on chunks, at every layer, a
decoder) gets the claims :data:`DECLARED` lists for its kind, one per question:

- ``order.paper_agreement``: the six methods' NeuronVote order matches the paper's table for the
  same task (Spearman; Random left out, since its last place holds by construction), against the
  exact null of every order of the k methods (k! of them, :func:`orders_null`): an interval above
  its 97.5% point, p < 0.025 (Spearman against 0 is no null: a random order of six methods reaches
  0.31 one time in four). With k! under 40 no order can reach it: cannot be decided here;
- ``agreement.beats_shuffled``: the methods agree on a concept's neurons (mean AvgOverlap of the
  voters) more than they agree when every one of them ranks the concept's labels shuffled among its
  words. Agreement above Random's (the chance IoU ~ s / (2d - s)) says nothing: any method that
  reads activations picks high-variance neurons and beats it; a method that beats shuffled labels
  has found label information;
- ``probeless.most_compatible``: Probeless's NeuronVote exceeds the best of the other voters'
  (the maximum re-taken in every resample, so picking the best is part of the interval);
- ``layer.probing_trend``: the probing methods' NeuronVote is lower at the last layer than the
  first;
- ``meanselect.beats_shuffled`` (main setting): MeanSelect's NeuronVote exceeds what it gets when
  all methods rank shuffled labels (Table 4's case study).

Intervals: bootstrap over concepts, each concept's scores averaged over its layers and s first: a
concept is a cluster (its layers share words and labels), never resampled as independent units.
Shuffled-label nulls: ``n_null`` draws of the setting's mean, each taking one of the K shuffled
copies of every (concept, layer) unit (the copies are independent across units; each copy's
distance from its unit's mean scaled by sqrt(K / (K - 1)), so a few copies do not narrow the band:
:func:`shuffled_null`), and an empirical p-value. The paper value comes from the table for the
setting's task and model (:mod:`kit.neuronvote.published`); a setting the paper did not run shows
none. Stability: the
claims recomputed under every further study seed (:func:`study_claims`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from kit.core.claims import (
    ALPHA,
    Claim,
    bootstrap_claim,
    claim,
    mark_stability,
    orders_floor,
    weaken,
)
from kit.core.stats import MAX_EXACT_ORDERS
from kit.neuronvote import published
from kit.neuronvote.methods import DISPLAY, PAPER_METHODS
from kit.neuronvote.published import PROBING

PAPER = "004"
MIN_CONCEPTS = 8
"""Fewest concepts (clusters) a bootstrap interval is computed from: a percentile bootstrap over a
handful of clusters covers far less than 95% (with 3 it has 10 distinct resample sets of 3), so
with fewer the claims are not testable."""
REQUIRED_IDS = {
    "05_neuronvote": [
        "order.paper_agreement",
        "agreement.beats_shuffled",
        "probeless.most_compatible",
        "layer.probing_trend",
        "meanselect.beats_shuffled",
    ]
}


def per_concept(scores: pd.DataFrame, metric: str, layers=None) -> pd.DataFrame:
    """concept x method means of ``metric`` (over layers and s; ``layers`` to restrict)."""
    d = scores[scores["metric"] == metric]
    if layers is not None:
        d = d[d["layer"].isin(layers)]
    return d.groupby(["concept", "method"])["score"].mean().unstack("method")


def _voters(setting) -> list[str]:
    return [
        v
        for v in (setting.result.voters or PAPER_METHODS)
        if v in set(setting.result.scores.method)
    ]


def _too_few(setting) -> str | None:
    n = setting.result.scores.concept.nunique()
    if n < MIN_CONCEPTS:
        return (
            f"{n} concepts: a bootstrap over fewer than {MIN_CONCEPTS} concepts (clusters) gives "
            "no usable 95% interval"
        )
    return None


def _how(setting) -> str:
    n = setting.result.scores.concept.nunique()
    k = setting.result.scores.layer.nunique()
    return f"bootstrap over {n} concepts (clusters of {k} layer(s) each)"


def shuffled_null(
    setting, metric: str, methods: Sequence[str], n_null: int = 1000, seed: int = 0
) -> np.ndarray | None:
    """``n_null`` draws of the setting-level mean of ``metric`` over ``methods`` when all methods
    rank shuffled labels: each draw picks one of the K shuffled copies of every (concept, layer)
    unit and averages. ``None`` when fewer than 2 shuffled copies per unit were run.
    Float[ndarray, "n_null"].

    Picking one of K copies gives each unit the spread of its K copies around their mean, which
    is (K - 1) / K of the unit's null variance (the 1/K versus 1/(K - 1) of a sample variance):
    with K = 2 or 3 the band came out 0.71 or 0.82 times too narrow. Each copy's distance from its
    unit's mean is therefore scaled by sqrt(K / (K - 1)) before the draws, so the draws' variance
    is the unbiased one, whatever K (running more copies would cost a ranking of every method on
    every copy)."""
    sh = setting.result.shuffled_scores
    if sh is None or sh.empty:
        return None
    d = sh[(sh["metric"] == metric) & sh["method"].isin(methods)]
    per = d.groupby(["concept", "layer", "shuffle"])["score"].mean().unstack("shuffle")
    vals = per.to_numpy(float)  # (units, K)
    k = vals.shape[1]
    if k < 2:
        return None
    centre = vals.mean(axis=1, keepdims=True)
    vals = centre + (vals - centre) * np.sqrt(k / (k - 1))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, vals.shape[1], size=(n_null, vals.shape[0]))
    return vals[np.arange(vals.shape[0]), pick].mean(axis=1)


def _no_null(setting) -> str:
    """Why :func:`shuffled_null` gave no null for ``setting``."""
    sh = setting.result.shuffled_scores
    k = 0 if sh is None or sh.empty else int(sh["shuffle"].nunique())
    if k == 0:
        return "no shuffled-label copies were run (shuffles: 0)"
    return (
        f"{k} shuffled-label copy per unit: its spread cannot be estimated (shuffles: at least 2)"
    )


MAX_ORDERS = MAX_EXACT_ORDERS
"""Most methods whose orders are enumerated exactly (8! = 40,320); beyond it, seeded draws
(:data:`kit.core.stats.MAX_EXACT_ORDERS`)."""


def orders_null(target: Sequence[float], n_draws: int = 20_000, seed: int = 0) -> np.ndarray:
    """Spearman's rho between ``target`` and every order of its k items (all k! when k <=
    :data:`MAX_ORDERS`, else ``n_draws`` seeded random orders): the exact null of a rank agreement
    with a reference order, under which every order of our methods is equally likely. Ties in
    ``target`` take average ranks. Float[ndarray, "k!"]. Drawn by
    :func:`kit.core.stats.rank_permutation_null` (``scipy.stats.permutation_test``)."""
    from kit.core.stats import rank_permutation_null

    t = np.asarray(target, float)
    return rank_permutation_null(np.arange(len(t), dtype=float), t, n_perm=n_draws, seed=seed)[1]


def order_claim(setting, seed: int, n_boot: int, n_null: int) -> Claim:
    from scipy.stats import spearmanr

    ref = setting.paper
    paper = published.mean_scores(ref, "NeuronVote")
    nv = per_concept(setting.result.scores, "NeuronVote")
    methods = [m for m in _voters(setting) if m in paper.index]
    statement = (
        f"{setting.title}: the voters' NeuronVote order matches the paper's ({ref.label}; Spearman "
        f"over {len(methods)} methods, Random left out)"
    )
    if len(methods) < 3:
        return claim(
            PAPER,
            "Table 2",
            setting.prefix + "order.paper_agreement",
            statement,
            None,
            not_testable=f"only {len(methods)} of the paper's methods run",
            rests_on=setting.rests_on,
        )
    target = paper[methods].to_numpy(float)

    def agree(rows):
        ours = np.nanmean(rows, axis=0)
        return float(spearmanr(ours, target).statistic) if np.ptp(ours) > 0 else float("nan")  # pyright: ignore[reportAttributeAccessIssue]  (scipy)

    rows = nv[methods].to_numpy(float)
    # the observed agreement's exact p goes into null_how, so it is read before the claim is built
    # (bootstrap_claim takes the same value as its point: one Spearman, deterministic)
    observed = agree(rows)
    order = ", ".join(DISPLAY[m] for m in paper[methods].sort_values(ascending=False).index)
    null = orders_null(target, seed=seed)
    # the band's edges are attained orders (never interpolated): beyond the top edge is p < 2.5%;
    # the exact null is not a draw of null_band's kind, so it goes in as null / null_range
    band = (
        float(np.quantile(null, ALPHA / 2, method="lower")),
        float(np.quantile(null, 1 - ALPHA / 2, method="higher")),
    )
    p = float(np.mean(null >= observed - 1e-9)) if np.isfinite(observed) else float("nan")
    exact = len(methods) <= MAX_ORDERS
    c = bootstrap_claim(
        PAPER,
        published.table_label(ref.compatibility or ref.neuronvote_by_layer),
        setting.prefix + "order.paper_agreement",
        statement,
        agree,
        rows,
        n_boot=n_boot,
        seed=seed,
        null=float(null.mean()),
        null_range=band,
        direction="greater",
        null_how=(
            f"every one of the {null.size} orders of the {len(methods)} methods (exact"
            if exact
            else f"{null.size} seeded random orders of the {len(methods)} methods (draws"
        )
        + f"; 95% band; one-sided p {p:.3g})",
        paper_value=f"order {order}",
        interval_how=_how(setting),
        rests_on=setting.rests_on,
        undecidable=orders_floor(len(methods), ALPHA / 2),
        p_value=p,
        n_orders=int(null.size),
    )
    if c.verdict == "supported" and not p < ALPHA / 2:
        # a percentile interval may sit above the observed order: the order itself must pass
        weaken(c, f"the observed order's exact p {p:.3g} is not under {ALPHA / 2:g}")
    return c


def agreement_claim(setting, seed: int, n_boot: int, n_null: int) -> Claim:
    voters = _voters(setting)
    ao = per_concept(setting.result.scores, "AvgOverlap")[voters].mean(axis=1).to_numpy(float)
    statement = (
        f"{setting.title}: the voters agree on a concept's top-s neurons (mean AvgOverlap) more "
        "than when each ranks the concept's labels shuffled among its words"
    )
    cid = setting.prefix + "agreement.beats_shuffled"
    null = shuffled_null(setting, "AvgOverlap", voters, n_null, seed)
    paper = _paper_agreement(setting.paper)
    if null is None:
        return claim(
            PAPER,
            "Fig. 1, Table 2",
            cid,
            statement,
            float(ao.mean()),
            paper_value=paper,
            not_testable=_no_null(setting),
            rests_on=setting.rests_on,
        )
    k = int(setting.result.shuffled_scores["shuffle"].nunique())
    return bootstrap_claim(
        PAPER,
        "Fig. 1, Table 2",
        cid,
        statement,
        np.mean,
        ao,
        n_boot=n_boot,
        seed=seed,
        null_draws=null,
        direction="greater",
        paper_value=paper,
        interval_how=_how(setting),
        null_how=(
            f"voters on shuffled labels: {null.size} draws of the mean, each one of {k} shuffled "
            f"copies per (concept, layer), their spread scaled by sqrt({k}/{k - 1})"
        ),
        rests_on=setting.rests_on,
    )


def _paper_agreement(ref) -> str | None:
    if ref is None:
        return None
    ao = published.mean_scores(ref, "AvgOverlap")
    if ao.empty:
        return None
    six = ao.drop("random", errors="ignore")
    return (
        f"AvgOverlap {six.min():.3f}-{six.max():.3f} vs Random "
        f"{ao.get('random', float('nan')):.3f} ({ref.label}; no shuffled-label control)"
    )


def probeless_claim(setting, seed: int, n_boot: int, n_null: int) -> Claim:
    voters = _voters(setting)
    cid = setting.prefix + "probeless.most_compatible"
    statement = (
        f"{setting.title}: Probeless has the highest NeuronVote of the voters (Probeless minus the "
        "best other voter, the best re-picked in every resample)"
    )
    others = [v for v in voters if v != "probeless"]
    if "probeless" not in voters or not others:
        return claim(
            PAPER,
            "Table 3",
            cid,
            statement,
            None,
            not_testable="Probeless or the other voters not run",
            rests_on=setting.rests_on,
        )
    nv = per_concept(setting.result.scores, "NeuronVote")[["probeless"] + others].to_numpy(float)

    def stat(rows: np.ndarray) -> float:
        return float(np.mean(rows[:, 0]) - np.max(np.mean(rows[:, 1:], axis=0)))

    means = nv.mean(axis=0)
    best = others[int(np.argmax(means[1:]))]
    return bootstrap_claim(
        PAPER,
        "Table 3, abstract",
        cid,
        statement,
        stat,
        nv,
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        direction="greater",
        null_how="tied with the best other voter (0)",
        paper_value=_paper_probeless(setting.paper),
        interval_how=_how(setting),
        rests_on=setting.rests_on,
        best_other=best,
        means={m: round(float(v), 4) for m, v in zip(["probeless"] + others, means)},
    )


def _paper_probeless(ref) -> str | None:
    if ref is None:
        return None
    nv = published.mean_scores(ref, "NeuronVote").drop(["random", "meanselect"], errors="ignore")
    best: Any = nv.drop("probeless").idxmax()  # a method name
    return (
        f"{nv['probeless'] - nv[best]:+.3f} (Probeless {nv['probeless']:.3f} vs {DISPLAY[best]} "
        f"{nv[best]:.3f}; {ref.label})"
    )


def trend_claim(setting, seed: int, n_boot: int, n_null: int) -> Claim:
    scores = setting.result.scores
    layers = sorted(scores["layer"].unique())
    probing = [m for m in PROBING if m in set(scores.method)]
    cid = setting.prefix + "layer.probing_trend"
    statement = (
        f"{setting.title}: NeuronVote of the probing methods (LCA, Lasso, Ridge) is lower at the "
        f"last layer than at the first (last - first, layers {layers[0]} and {layers[-1]})"
    )
    if len(layers) < 2 or not probing:
        return claim(
            PAPER,
            "Table 3",
            cid,
            statement,
            None,
            rests_on=setting.rests_on,
            not_testable="one layer only" if len(layers) < 2 else "no probing method run",
        )
    first = per_concept(scores, "NeuronVote", [layers[0]])[probing].mean(axis=1)
    last = per_concept(scores, "NeuronVote", [layers[-1]])[probing].mean(axis=1)
    idx = first.index.intersection(last.index)
    ref = setting.paper
    pv = (
        None
        if ref is None
        else f"{published.layer_trend(ref):+.3f} ({ref.label}, last - first printed layer)"
    )
    return bootstrap_claim(
        PAPER,
        "Table 3, §4.2",
        cid,
        statement,
        lambda a, b: float(np.mean(b - a)),
        first[idx].to_numpy(),
        last[idx].to_numpy(),
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        direction="less",
        null_how="no change (0)",
        paper_value=pv,
        interval_how=f"bootstrap over {len(idx)} concepts "
        "(paired: each concept's first and last layer)",
        rests_on=setting.rests_on,
    )


def meanselect_claim(setting, seed: int, n_boot: int, n_null: int) -> Claim:
    cid = setting.prefix + "meanselect.beats_shuffled"
    statement = (
        f"{setting.title}: MeanSelect's NeuronVote exceeds its NeuronVote when every method ranks "
        "the concept's labels shuffled among its words"
    )
    ref = setting.paper
    pv = None if ref is None else published.meanselect_mean(ref)
    pv = (
        None
        if pv is None or ref is None
        else f"{pv:.3f} ({ref.label}, mean over layers; vs Random only)"
    )
    nv = per_concept(setting.result.scores, "NeuronVote")
    if "meanselect" not in nv.columns:
        return claim(
            PAPER,
            "Table 4",
            cid,
            statement,
            None,
            not_testable="MeanSelect not run",
            rests_on=setting.rests_on,
        )
    ms = nv["meanselect"].to_numpy(float)
    null = shuffled_null(setting, "NeuronVote", ["meanselect"], n_null, seed)
    if null is None:
        return claim(
            PAPER,
            "Table 4",
            cid,
            statement,
            float(ms.mean()),
            paper_value=pv,
            rests_on=setting.rests_on,
            not_testable=_no_null(setting),
        )
    return bootstrap_claim(
        PAPER,
        "Table 4",
        cid,
        statement,
        np.mean,
        ms,
        n_boot=n_boot,
        seed=seed,
        null_draws=null,
        direction="greater",
        null_how=f"MeanSelect with all methods on shuffled labels ({null.size} draws of the mean, "
        "one shuffled copy per (concept, layer), their spread scaled as for K copies)",
        paper_value=pv,
        interval_how=_how(setting),
        rests_on=setting.rests_on,
    )


DECLARED: dict[str, tuple[Callable, ...]] = {
    "encoder": (order_claim, agreement_claim, probeless_claim, trend_claim, meanselect_claim),
    "chunking": (order_claim, agreement_claim, probeless_claim, trend_claim),
    "layers": (order_claim, agreement_claim, probeless_claim, trend_claim),
    "decoder": (agreement_claim, probeless_claim, trend_claim),
}
"""Which claims each kind of setting gets (the order claim needs a paper table for the setting)."""


def setting_claims(setting, seed: int = 0, n_boot: int = 1000, n_null: int = 1000) -> list[Claim]:
    """The claims :data:`DECLARED` for ``setting.name``, kind ``reproduction`` (a paper claim on
    our models' numbers); not testable when the setting has fewer than :data:`MIN_CONCEPTS`
    concepts."""
    out = [
        fn(setting, seed, n_boot, n_null)
        for fn in DECLARED[setting.name]
        if not (fn is order_claim and setting.paper is None)
    ]
    few = _too_few(setting)
    if few:
        out = [
            claim(
                c.paper,
                c.section,
                c.id,
                c.statement,
                c.ours,
                paper_value=c.paper_value,
                not_testable=few,
                rests_on=c.rests_on,
            )
            for c in out
        ]
    return out


def study_claims(
    settings: Sequence, seed: int = 0, n_boot: int = 1000, n_null: int = 1000
) -> list[Claim]:
    """Every setting's claims, with their stability: each claim recomputed under every further study
    seed of its setting (new tie-breaks, probe initialisations, Random draws; the seedless Gaussian
    and the shuffled copies kept) and with other bootstrap and null-draw seeds; a claim whose
    verdict changes is marked ``flips`` (:func:`kit.core.claims.mark_stability`). Without reseeds,
    only the resampling seeds change."""
    claims = [c for s in settings for c in setting_claims(s, seed, n_boot, n_null)]
    reseeds = sorted(
        {
            int(x)
            for s in settings
            if s.result.reseed_scores is not None
            for x in s.result.reseed_scores["seed"].unique()
        }
        - {seed}
    )
    runs = reseeds or [seed + 1, seed + 2]
    reruns = []
    for r, study_seed in enumerate(runs, 1):
        again = []
        for s in settings:
            rs = s.result.reseed_scores
            if reseeds and rs is not None:
                view = rs[rs["seed"] == study_seed].drop(columns="seed").reset_index(drop=True)
                s = replace(s, result=s.result.with_scores(view))
            again += setting_claims(s, seed + r, n_boot, n_null)
        reruns.append(again)
    how = (
        f"study seeds {', '.join(map(str, runs))} (tie-breaks, probe initialisations, Random "
        "draws) with bootstrap and null-draw seeds "
        if reseeds
        else "bootstrap and null-draw seeds "
    )
    how += ", ".join(str(seed + r) for r in range(1, len(runs) + 1))
    return mark_stability(claims, reruns, how)
