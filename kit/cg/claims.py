"""Claims of seed 002 (Competency Gaps) tested by notebook 04, declared over its study
(:class:`kit.cg.study.CGStudy`), each beside a null a random or by-construction result would not
beat.

- ``benchmark_gaps.missing_alive``: the suite misses more live concepts than general text of the
  same size (:func:`kit.cg.size_control.coverage_vs_text`): missing counts fall with size, so a
  null of 0 could never be contradicted and a bootstrap of a unique-set count is biased.
- ``model_gaps.*``, ``robustness.*``: each model statistic against the same statistic of the model
  with its correctness shuffled within each benchmark (:mod:`kit.cg.nulls`, >= 100 draws), and the
  per-concept gap test's discoveries under Benjamini-Hochberg.
- ``sae_swap.missing_frac_rank``: two SAEs rank the benchmarks' missing fractions alike *at equal
  size* (:func:`kit.cg.size_control.sae_swap`): at full size, benchmark length alone ranks them.
- ``planted_gap.*``: the one test with ground truth. A zoo member fine-tuned to fail one concept:
  do the concepts CG flags for it hold more planted concepts than a random draw (hypergeometric
  band, Bonferroni over the settings run), does its X_model drop profile follow the planted share,
  and (set-up check) does the member fail the planted items at all.

Kinds: every claim here is a ``reproduction`` (a claim of the paper tested on models run or read
here) except ``planted_gap.setup_drop`` (a ``set-up check`` of the world). :func:`stability_reruns`
recomputes them under other seeds for :func:`kit.core.claims.mark_stability`.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from scipy import stats

from kit.cg.nulls import ModelNulls, model_nulls
from kit.cg.planted import PlantedGapResult, planted_gap_analysis
from kit.cg.planted_settings import primary_setting
from kit.cg.report import gap_significance
from kit.cg.size_control import EqualSizeCoverage, SaeSwap, coverage_vs_text, sae_swap
from kit.core.claims import Claim, band_claim, claim, mean_diff_claim

PAPER = "002"
MODEL_IDS = (
    "model_gaps.vs_shuffled",
    "model_gaps.significant",
    "model_gaps.split_half",
    "robustness.dropout_vs_shuffled",
    "robustness.adversarial_best",
    "robustness.adversarial_worst",
)
PLANTED_IDS = ("planted_gap.recovered", "planted_gap.profile_points", "planted_gap.setup_drop")
REQUIRED_IDS = {
    "04_competency_gaps": [
        "benchmark_gaps.missing_alive",
        *MODEL_IDS,
        "sae_swap.missing_frac_rank",
        *PLANTED_IDS,
    ]
}


def _printed(topic: str, quantity: str, model: str = "Llama3.1-8B-Instruct") -> str:
    """A number the paper prints in its text (``002_text_numbers_robustness_and_summary``), with its
    unit."""
    from kit.data.paper_tables import load_table  # lazy: reads the tables directory

    t = load_table("002_text_numbers_robustness_and_summary")
    r = t[t.topic.str.contains(topic) & (t.quantity == quantity) & (t.model == model)]
    if r.empty:
        return ""
    d = r.direction.iloc[0]
    return f"{r.value.iloc[0]} {r.unit.iloc[0]}" + (f" ({d})" if isinstance(d, str) and d else "")


def coverage_claim(cov: EqualSizeCoverage | None, rests_on: str, why_not: str = "") -> Claim:
    """``benchmark_gaps.missing_alive``: the suite's missing share of live concepts at ``m`` tokens
    (its range over subsamples) against general text's at the same ``m``."""
    cid, where = "benchmark_gaps.missing_alive", "§4.2.1, Table 1"
    paper = _printed(
        "benchmark gaps \\(10", "share of SAE concepts entirely missing from the suite"
    )
    if cov is None:
        return claim(
            PAPER,
            where,
            cid,
            "The suite leaves concepts uncovered that general text of the same size covers",
            None,
            not_testable=why_not or "no general text read",
            paper_value=paper,
            rests_on=rests_on,
        )
    s = cov.summary()
    return claim(
        PAPER,
        where,
        cid,
        "The suite leaves more of the SAE's live concepts uncovered than general text of the same "
        f"size (share of {cov.n_live} live concepts missing from {cov.tokens:,} tokens)",
        s["suite_mean"],
        ci=(s["suite_low"], s["suite_high"]),
        null=s["text_mean"],
        null_range=(s["text_low"], s["text_high"]),
        direction="greater",
        paper_value=paper,
        null_how=f"{cov.tokens:,} tokens of {cov.text_source}, {s['draws']} draws (95% range)",
        interval_how=f"2.5-97.5% range over {s['draws']} subsamples of {cov.tokens:,} tokens of "
        "the suite (without replacement, one size for both sides)",
        rests_on=rests_on,
        figure="fig03_coverage_distribution",
        p_value=s["p_value"],
        suite_tokens=cov.suite_tokens,
    )


def _band_claim(
    cid: str,
    section: str,
    statement: str,
    ours: float,
    null: np.ndarray,
    direction: str,
    null_how: str,
    rests_on: str,
    p: float,
    **kw: Any,
) -> Claim:
    return band_claim(
        PAPER,
        section,
        cid,
        statement,
        ours,
        null,
        direction=direction,
        null_how=null_how,
        rests_on=rests_on,
        p_value=p,
        **kw,
    )


def model_claims(
    n: ModelNulls | None,
    significance: dict | None,
    rests_on: str,
    suffix: str = "",
    constant: str = "",
) -> list[Claim]:
    """The model-gap and robustness claims of one model (ids carry ``suffix`` for a second model).
    ``constant``: why its scores say nothing (e.g. every answer wrong): all not testable."""
    ids = [f"{i}{suffix}" for i in MODEL_IDS]
    if constant:
        return [
            claim(PAPER, "§4.2.2-4.2.3", i, i, None, not_testable=constant, rests_on=rests_on)
            for i in ids
        ]
    assert n is not None  # a model without nulls comes with a constant reason
    shuffled = f"shuffled correctness within each benchmark, {n.n_draws} draws (95% range)"
    out = [
        _band_claim(
            ids[0],
            "§4.2.2, Fig. 4",
            f"{n.model} has more model gaps (concepts with X_model < eps) than the same model with "
            "its correctness shuffled within each benchmark (count)",
            n.gaps,
            n.gaps_null,
            "greater",
            shuffled,
            rests_on,
            n.p_value("gaps", "greater"),
            paper_value="gaps reveal concept-specific weaknesses",
            figure="fig04_performance_distribution",
        )
    ]
    sig = (significance or {}).get("n_gaps_significant")
    with_support = (significance or {}).get("n_gaps_with_support")
    # which gaps can be tested is fixed by the activations alone, before any correctness is read
    untestable_gaps = (
        f"none of the {significance.get('n_gaps_paper', '?')} gaps is active on >= "
        f"{significance.get('min_support', n.min_support)} items, the fewest a per-concept "
        "permutation test can decide on: the count is 0 whatever the model does"
        if significance is not None and with_support == 0
        else None
    )
    out.append(
        claim(
            PAPER,
            "§4.2.2",
            ids[1],
            f"{n.model} has concept gaps that beat their own null: X_model < eps, active on >= "
            f"{n.min_support} items, and significantly below the model's accuracy (permutation "
            "test, Benjamini-Hochberg; count)",
            sig,
            null=0.0,
            null_range=(0.0, 0.0),
            direction="greater",
            null_how="Benjamini-Hochberg: with no real gap, any discovery has probability <= alpha",
            not_testable=None if significance is not None else "per-concept test not run",
            undecidable=untestable_gaps,
            interval_how="deterministic count of FDR discoveries",
            rests_on=rests_on,
        )
    )
    out.append(
        _band_claim(
            ids[2],
            "§4.2.2",
            f"{n.model}'s X_model profile is reproducible: Spearman over concepts (on >= "
            f"{n.min_support} items) between two random halves of the items, mean of {n.n_splits} "
            "splits",
            n.split_half,
            n.split_half_null,
            "greater",
            shuffled,
            rests_on,
            n.p_value("split_half", "greater"),
            all_concepts=n.split_half_all,
        )
    )
    out.append(
        _band_claim(
            ids[3],
            "§4.2.3",
            f"{n.model}'s X_model is more stable under 20% item dropout than a profile of noise "
            f"(mean std over concepts, {n.n_reruns} reruns)",
            n.dropout,
            n.dropout_null,
            "less",
            shuffled,
            rests_on,
            n.p_value("dropout", "less"),
            paper_value=_printed("robustness: randomly", "std of X_model"),
        )
    )
    undefined = None
    if not (np.isfinite(n.median_x_model) and n.median_x_model != 0):
        # a shift in % of a zero median is undefined, whatever the removal does
        undefined = (
            f"{n.model}'s median X_model over concepts is {n.median_x_model:g} (most concepts "
            "have no item it answers right): a shift in % of the median is undefined"
        )
    for key, cid, word, direction in (
        ("adv_best", ids[4], "best", "less"),
        ("adv_worst", ids[5], "worst", "greater"),
    ):
        out.append(
            _band_claim(
                cid,
                "§4.2.3",
                f"Removing the items most salient for {n.model}'s {word} concepts moves its median "
                f"X_model {'down' if word == 'best' else 'up'} more than the same removal under "
                "shuffled correctness (% of the median)",
                getattr(n, key),
                getattr(n, f"{key}_null"),
                direction,
                shuffled,
                rests_on,
                n.p_value(key, direction),
                paper_value=_printed(f"{word}-performing", "average change in median X_model"),
                not_testable=undefined,
            )
        )
    return out


def swap_claim(swap: SaeSwap | None, rests_on: str, why_not: str = "") -> Claim:
    """``sae_swap.missing_frac_rank``: the equal-size Spearman against the benchmarks' orders."""
    cid, where = "sae_swap.missing_frac_rank", "§4.2.3, Table 3"
    if swap is None:
        return claim(
            PAPER,
            where,
            cid,
            "Benchmark gaps survive an SAE swap",
            None,
            not_testable=why_not or "one SAE or fewer than 3 benchmarks",
            rests_on=rests_on,
        )
    exact = swap.null.size <= 40320
    return _band_claim(
        cid,
        where,
        f"Benchmark gaps survive an SAE swap at equal size: Spearman over {len(swap.missing_a)} "
        f"benchmarks of the share of missing concepts on {swap.tokens:,} tokens each, "
        f"{swap.sae_a.split('/')[-1]} vs {swap.sae_b.split('/')[-1]}",
        swap.rho,
        swap.null,
        "greater",
        (
            f"all {swap.null.size} orders of the benchmarks"
            if exact
            else f"{swap.null.size} random orders of the benchmarks"
        )
        + " (95% range)",
        rests_on,
        swap.p_value,
        paper_value="findings hold with Gemma's SAE",
        rho_full_size=swap.rho_full,
        rho_missing_vs_tokens=swap.rho_size_a,
    )


def planted_rests_on(r: PlantedGapResult) -> str:
    s = r.summary
    return (
        f"tiny world: {s['member']} ({s['parent']} fine-tuned to answer {s['gap']} at random) "
        f"against {s['parent']}, read through {s['sae']} at {s['sae_hook']}, {s['pooling']} pooling"
    )


def recovered_claim(cid: str, r: PlantedGapResult, k: int, alpha: float = 0.05) -> Claim:
    """CG's flagged concepts hold more planted concepts than a random draw of as many tested
    concepts (hypergeometric band at ``alpha`` two-sided, Bonferroni over ``k`` settings)."""
    s = r.summary
    setting = f"{s['sae_hook']}, {s['pooling']} pooling"
    statement = (
        f"CG finds the planted gap ({setting}): the concepts its gap test flags low for the member "
        "and not its parent hold more planted concepts than a random draw of as many tested "
        "concepts (count)"
    )
    if s["n_planted_concepts_tested"] == 0:
        return claim(
            PAPER,
            "§4.2.2",
            cid,
            statement,
            None,
            rests_on=planted_rests_on(r),
            not_testable="no tested concept is a planted one: this dictionary has no concept for "
            f"the gap (the most concentrated holds {s.get('max_planted_share', float('nan')):.2f} "
            "of its mass on the planted items)",
        )
    dist = stats.hypergeom(s["n_tested"], s["n_planted_concepts_tested"], s["n_found"])
    a = alpha / (2 * max(1, k))
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy's moments of a draw of 0 concepts
        lo, hi, mean = float(dist.ppf(a)), float(dist.ppf(1 - a)), float(dist.mean())
    return claim(
        PAPER,
        "§4.2.2",
        cid,
        statement,
        s["n_found_planted"],
        null=mean,
        null_range=(lo, hi),
        direction="greater",
        rests_on=planted_rests_on(r),
        interval_how="deterministic count",
        null_how=(
            f"hypergeometric: {s['n_found']} of {s['n_tested']} tested concepts drawn at random, "
            f"{s['n_planted_concepts_tested']} planted ({100 * (1 - 2 * a):.2f}% range, Bonferroni "
            f"over {k} setting(s))"
        ),
        n_found=s["n_found"],
        precision=s["precision"],
        p_overlap=s["p_overlap"],
    )


def profile_claim(cid: str, r: PlantedGapResult) -> Claim:
    """The X_model drop (parent - member) follows the planted share, over the tested concepts."""
    s = r.summary
    statement = (
        "CG's X_model profile points at the planted gap: Spearman over tested concepts of the "
        "planted share and the X_model drop from parent to member"
    )
    rho = s.get("drop_share_spearman", float("nan"))
    if not np.isfinite(rho):
        return claim(
            PAPER,
            "§4.2.2",
            cid,
            statement,
            None,
            rests_on=planted_rests_on(r),
            not_testable="the drop or the planted share is constant over the tested concepts",
        )
    return claim(
        PAPER,
        "§4.2.2",
        cid,
        statement,
        rho,
        null=0.0,
        null_range=(s["drop_share_null_low"], s["drop_share_null_high"]),
        direction="greater",
        null_how="planted shares shuffled across concepts (95% range)",
        rests_on=planted_rests_on(r),
        p_value=s["drop_share_p"],
    )


def setup_claim(cid: str, r: PlantedGapResult, seed: int = 0) -> Claim:
    """Set-up check: the member answers the planted items worse than its parent (paired items)."""
    s, suite = r.summary, r.suite
    assert suite is not None and r.planted is not None  # kept by planted_gap_analysis
    hosts = [b for b, m in r.planted.items() if np.any(m)]
    parent = np.concatenate(
        [np.asarray(suite.model_scores[s["parent"]][b])[r.planted[b]] for b in hosts]
    )
    member = np.concatenate(
        [np.asarray(suite.model_scores[s["member"]][b])[r.planted[b]] for b in hosts]
    )
    return mean_diff_claim(
        PAPER,
        "world",
        cid,
        f"The planted gap exists: {s['parent']} minus {s['member']} accuracy on the {parent.size} "
        "planted items",
        parent,
        member,
        paired=True,
        seed=seed,
        null=0.0,
        direction="greater",
        kind="set-up check",
        interval_how=f"paired bootstrap over the {parent.size} planted items",
        null_how="no gap (0)",
        rests_on=planted_rests_on(r),
        chance=s.get("chance"),
    )


def planted_claims(
    planted: dict[str, tuple[PlantedGapResult | None, str]], alpha: float = 0.05, seed: int = 0
) -> list[Claim]:
    """``planted_gap.recovered`` / ``profile_points`` / ``setup_drop`` on the primary setting
    (:func:`primary_setting`), and ``planted_gap.recovered[<dictionary/pooling>]`` for the
    others."""
    main = primary_setting(planted)
    if main is None:
        why = "; ".join(f"{k}: {w}" for k, (_, w) in planted.items()) or "section 8b not run"
        return [
            claim(
                PAPER,
                "§4.2.2",
                i,
                i,
                None,
                not_testable=why,
                kind="set-up check" if "setup" in i else "reproduction",
            )
            for i in PLANTED_IDS
        ]
    ran = [k for k, (r, _) in planted.items() if r is not None]
    r = planted[main][0]
    assert r is not None  # primary_setting picks a setting that ran
    out = [
        recovered_claim("planted_gap.recovered", r, len(ran), alpha),
        profile_claim("planted_gap.profile_points", r),
        setup_claim("planted_gap.setup_drop", r, seed),
    ]
    out += [
        recovered_claim(
            f"planted_gap.recovered[{k}]", cast(PlantedGapResult, planted[k][0]), len(ran), alpha
        )
        for k in ran
        if k != main
    ]
    return out


def _constant_scores(scores: dict[str, np.ndarray]) -> str:
    flat = np.concatenate([np.asarray(s, float) for s in scores.values()])
    if flat.size and np.all(flat == flat[0]):
        return (
            f"every scored answer is {'right' if flat[0] else 'wrong'} ({flat.size} items): "
            "no per-item variation"
        )
    return ""


def cg_claims(study) -> list[Claim]:
    """Every claim of notebook 04 from a filled :class:`kit.cg.study.CGStudy`."""
    suite, cfg = study.suite, study.cfg
    n_items = sum(a.shape[0] for a in suite.acts.values())
    cov_on = (
        f"{study.main_sae} over {len(suite.acts)} real benchmarks ({n_items} items), "
        f"against {suite.text_source}"
    )
    out = [
        coverage_claim(study.coverage_vs_text, cov_on, "no general text read (null_text_items: 0)")
    ]
    for i, m in enumerate(study.claim_models()):
        n = study.nulls.get(m)
        const = _constant_scores(suite.model_scores[m])
        if n is None and not const:
            const = "its nulls were not computed"
        out += model_claims(
            n, study.significance.get(m), study.source_of(m), "" if i == 0 else f"[{m}]", const
        )
    if not study.claim_models():
        out += [
            claim(PAPER, "§4.2.2-4.2.3", i, i, None, not_testable="no model with per-item scores")
            for i in MODEL_IDS
        ]
    out.append(
        swap_claim(
            study.sae_swap,
            f"{' and '.join(study.sae_names)} over the same items",
            "one SAE, fewer than 3 benchmarks, or token counts unknown",
        )
    )
    out += planted_claims(study.planted, cfg.alpha, cfg.seed)
    return out


def stability_reruns(study, seeds: list[int]) -> list[list[Claim]]:
    """The claims again under each seed of ``seeds`` (the resamplings' seeds only: permutations,
    splits, reruns, subsamples, equal-size cuts, the planted gap test's permutations; the items, the
    models and the world stay): one list per seed, for :func:`kit.core.claims.mark_stability`."""
    import copy

    cfg, out = study.cfg, []
    for s in seeds:
        again = copy.copy(study)
        suite = study.suite
        if study.coverage_vs_text is not None:
            again.coverage_vs_text = coverage_vs_text(
                suite.acts,
                suite.n_tokens,
                suite.text_acts,
                suite.text_tokens,
                suite.live(),
                cfg.eps,
                cfg.size_draws,
                s,
                text_source=suite.text_source,
            )
        again.nulls = {
            m: model_nulls(
                m,
                suite.model_acts[m],
                suite.model_scores[m],
                cfg.eps,
                cfg.adv_n_concepts,
                cfg.adv_n_items,
                cfg.adv_repeats,
                cfg.claim_reruns,
                cfg.drop_frac,
                cfg.min_support,
                s,
                cfg.null_perms,
            )
            for m in study.nulls
        }
        again.significance = {
            m: gap_significance(suite, m, cfg.gap_n_perm, cfg.min_support, cfg.alpha, cfg.eps, s)[0]
            for m in study.significance
        }
        if study.sae_swap is not None:
            small = study.suites[study.small_sae]
            again.sae_swap = sae_swap(
                suite.acts,
                small.acts,
                suite.n_tokens,
                cfg.eps,
                cfg.swap_draws,
                s,
                (study.main_sae, study.small_sae),
            )
        again.planted = {
            k: (None if r is None else reanalyse_planted(r, s, cfg), why)
            for k, (r, why) in study.planted.items()
        }
        out.append(cg_claims(again))
    return out


def reanalyse_planted(r: PlantedGapResult, seed: int, cfg) -> PlantedGapResult:
    """:func:`kit.cg.planted.planted_gap_analysis` of the same suite with another permutation
    seed."""
    s = r.summary
    assert r.suite is not None and r.planted is not None  # kept by planted_gap_analysis
    again = planted_gap_analysis(
        r.suite,
        s["member"],
        s["parent"],
        r.planted,
        cfg.gap_n_perm,
        cfg.min_support,
        cfg.alpha,
        cfg.eps,
        cfg.gap_share,
        seed,
    )
    again.summary = {**s, **again.summary}
    return again
