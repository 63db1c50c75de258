"""Tables and key numbers of the Competency Gaps notebook, computed from
:class:`kit.cg.suite.Suite`s.

Tables mirror the paper's: Table 1 (missing concepts of the suite), Table 2 (missing per
benchmark), Table 3 (best/worst performance and coverage concepts, two SAEs side by side).
The notebook's plain-language summary of the recorded numbers is :mod:`kit.cg.findings`'s.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from kit.cg import metrics as cg
from kit.cg import robustness as cg_robustness
from kit.cg import significance as cg_significance
from kit.cg.suite import Suite, best_match
from kit.core.stats import jaccard


def coverage_summary(suite: Suite, eps: float = cg.EPSILON) -> dict:
    """Counts of missing / under / over-represented concepts for the suite and per benchmark.

    Dead latents (:meth:`Suite.dead`: active neither on the SAE's own training text nor on any
    benchmark or response text read) are missing trivially; ``n_missing_alive`` counts the
    informative ones. ``n_dead_label_fires``: concepts labelled ``(dead)`` (no training-text
    context) that do fire on the benchmarks.
    """
    xb = suite.x_bench()
    cls = cg.coverage_classes(xb, eps)
    dead = suite.dead()
    frac = cg.missing_fraction(suite.acts, eps)
    chib = cg.chi_bench_table(suite.acts)
    jac = cg_robustness.jaccard_overlap(suite.acts, eps).to_numpy()
    off = jac[~np.eye(len(jac), dtype=bool)]
    return {
        "n_concepts": int(len(xb)),
        "n_missing_suite": int((cls == "missing").sum()),
        "frac_missing_suite": float((cls == "missing").mean()),
        "n_dead": int(dead.sum()),
        "n_dead_label_fires": int(sum(lab == "(dead)" for lab in suite.labels) - dead.sum()),
        "n_missing_alive": int(((cls == "missing") & ~dead).sum()),
        "frac_missing_alive": float(((cls == "missing") & ~dead).sum() / max(1, (~dead).sum())),
        "n_under": int((cls == "under").sum()),
        "n_over": int((cls == "over").sum()),
        "median_x_bench": float(np.median(xb)),
        "missing_frac_per_benchmark": {b: float(v) for b, v in frac.items()},
        "min_missing_frac_benchmark": float(frac.min()),
        "missing_frac_per_benchmark_alive": {
            b: float(((chib[b].to_numpy() < eps) & ~dead).sum() / max(1, (~dead).sum()))
            for b in chib.columns
        },
        "mean_jaccard_offdiag": float(off.mean()) if off.size else float("nan"),
    }


def missing_suite_table(suite: Suite, n: int = 10, eps: float = cg.EPSILON) -> pd.DataFrame:
    """Table 1: concepts missing from the whole suite that the SAE does know (they fired on the
    training corpus: the label's contexts), strongest corpus activation first."""
    xb = suite.x_bench()
    missing = np.flatnonzero(xb < eps)
    strength = np.array(
        [
            max((c["value"] for c in suite.contexts[i]), default=0) if suite.contexts else 0
            for i in missing
        ]
    )
    order = missing[np.argsort(-strength, kind="stable")]
    rows = [
        {
            "concept": int(c),
            "label": suite.labels[c],
            "example context": (
                suite.contexts[c][0]["context"] if suite.contexts and suite.contexts[c] else ""
            ),
        }
        for c in order
        if suite.labels[c] != "(dead)"
    ][:n]
    return pd.DataFrame(rows, columns=["concept", "label", "example context"])


def missing_per_benchmark_table(suite: Suite, n: int = 3, eps: float = cg.EPSILON) -> pd.DataFrame:
    """Table 2: per benchmark, concepts it misses that the *other* benchmarks cover best."""
    chib = cg.chi_bench_table(suite.acts)
    rows = []
    for b in chib.columns:
        others = chib.drop(columns=b).mean(axis=1)
        cand = chib.index[(chib[b] < eps).to_numpy()]
        top: Any = others.loc[cand].sort_values(ascending=False).head(n)  # concept index -> mean
        rows += [
            {
                "benchmark": b,
                "concept": int(c),
                "label": suite.labels[c],
                "mean chi_bench elsewhere": float(v),
            }
            for c, v in top.items()
        ]
    return pd.DataFrame(rows, columns=["benchmark", "concept", "label", "mean chi_bench elsewhere"])


def best_worst_table(
    suite: Suite, model: str | None, n: int = 5, min_activation_items: int = 3
) -> pd.DataFrame:
    """Best/worst concepts by coverage (X_bench) and, given ``model``, by performance (X_model).

    Performance ranks only concepts active on at least ``min_activation_items`` scored items: a
    concept seen once has X_model 0 or 1 by chance (the paper's suite is large enough not to care).
    """
    xb = suite.x_bench()
    rows = []
    order = np.argsort(xb, kind="stable")
    for rank, idx in (
        ("best coverage", order[::-1][:n]),
        ("worst coverage (not missing)", order[xb[order] >= cg.EPSILON][:n]),
    ):
        rows += [
            {"analysis": rank, "concept": int(c), "label": suite.labels[c], "score": float(xb[c])}
            for c in idx
        ]
    if model is not None:
        xm = cg.x_model(suite.model_acts[model], suite.model_scores[model])
        support = sum(
            (a > 0).sum(0).A1
            if hasattr((a > 0).sum(0), "A1")
            else np.asarray((a > 0).sum(0)).ravel()
            for a in suite.model_acts[model].values()
        )
        support = cast(np.ndarray, support)  # a sum of arrays (one per benchmark)
        ok = np.flatnonzero(~np.isnan(xm) & (support >= min_activation_items))
        # ties (many concepts at exactly 1.0 or 0.0) go to the concept seen on more items
        best = ok[np.lexsort((-support[ok], -xm[ok]))]
        worst = ok[np.lexsort((-support[ok], xm[ok]))]
        for rank, idx in (("best performance", best[:n]), ("worst performance", worst[:n])):
            rows += [
                {
                    "analysis": rank,
                    "concept": int(c),
                    "label": suite.labels[c],
                    "score": float(xm[c]),
                }
                for c in idx
            ]
    return pd.DataFrame(rows, columns=["analysis", "concept", "label", "score"])


def cross_sae_table(a: Suite, b: Suite, model: str | None, n: int = 3) -> pd.DataFrame:
    """Table 3: the best/worst concepts of SAE ``a`` with their best-matching concept of SAE ``b``
    (co-activation cosine over the same datapoints, :func:`kit.cg.suite.best_match`)."""
    t = best_worst_table(a, model, n)
    acts_a = {**a.acts, **(a.model_acts.get(model, {}) if model else {})}
    acts_b = {**b.acts, **(b.model_acts.get(model, {}) if model else {})}
    acts_a = {f"{k}#{i}": v for i, (k, v) in enumerate(acts_a.items())}
    acts_b = {f"{k}#{i}": v for i, (k, v) in enumerate(acts_b.items())}
    matches = best_match(acts_a, {k: acts_b[k] for k in acts_a}, t["concept"].tolist())
    t = t.rename(columns={"concept": f"{a.sae} concept", "label": f"{a.sae} label"})
    t[f"{b.sae} concept"] = [m for m, _ in matches]
    t[f"{b.sae} label"] = [b.labels[m] if m >= 0 else "" for m, _ in matches]
    t["cosine"] = [s for _, s in matches]
    return t


def cross_sae_summary(a: Suite, b: Suite, model: str | None) -> dict:
    """Distribution-level agreement of two SAEs (the paper's Figs. 3-4 orange vs blue curves)."""
    out = {}
    for s in (a, b):
        xb = s.x_bench()
        out[s.sae] = {
            "n_concepts": s.n_concepts,
            "median_x_bench": float(np.median(xb)),
            "frac_missing_suite": float((xb < cg.EPSILON).mean()),
        }
        if model is not None:
            xm = cg.x_model(s.model_acts[model], s.model_scores[model])
            out[s.sae]["median_x_model"] = float(np.nanmedian(xm))
    # per-benchmark missing fractions should rank benchmarks alike under both SAEs
    fa, fb = cg.missing_fraction(a.acts), cg.missing_fraction(b.acts)
    out["spearman_missing_frac_per_benchmark"] = (
        float(spearmanr(fa, fb[fa.index]).statistic) if len(fa) > 2 else float("nan")  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    )
    return out


def profile_comparison(
    acts_prompt,
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    labels: Sequence[str],
    n: int = 5,
    min_items: int = 3,
) -> tuple[dict, pd.DataFrame]:
    """Two models on the same items (concepts read from the prompts only): correlation of their
    chi_model profiles and the concepts where they differ most."""
    ca, cb = cg.chi_model(acts_prompt, scores_a), cg.chi_model(acts_prompt, scores_b)
    support = np.asarray((acts_prompt > 0).sum(0)).ravel()
    ok = ~np.isnan(ca) & ~np.isnan(cb) & (support >= min_items)
    d = ca - cb
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(d[idx], kind="stable")]
    rows = [
        {
            "direction": "A better",
            "concept": int(c),
            "label": labels[c],
            "chi_model A": ca[c],
            "chi_model B": cb[c],
        }
        for c in order[::-1][:n]
    ]
    rows += [
        {
            "direction": "B better",
            "concept": int(c),
            "label": labels[c],
            "chi_model A": ca[c],
            "chi_model B": cb[c],
        }
        for c in order[:n]
    ]
    summary = {
        "spearman": float(spearmanr(ca[ok], cb[ok]).statistic) if ok.sum() > 2 else float("nan"),  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
        "mean_abs_diff": float(np.abs(d[ok]).mean()) if ok.any() else float("nan"),
        "accuracy_A": float(np.mean(scores_a)),
        "accuracy_B": float(np.mean(scores_b)),
        "n_concepts_compared": int(ok.sum()),
    }
    return summary, pd.DataFrame(rows)


def robustness(
    suite: Suite,
    model: str | None,
    n_reruns: int,
    drop_frac: float,
    adv_n_concepts: int,
    adv_n_items: int,
    adv_repeats: int,
    seed: int = 0,
) -> dict:
    """The paper's section 4.2.3 numbers for one suite: dropout std of X_bench / X_model and
    the adversarial median shifts."""
    out = {}
    r = cg_robustness.dropout_robustness(suite.acts, None, n_reruns, drop_frac, seed)
    out["std_x_bench"] = r.mean_std_x_bench
    if model is not None:
        acts, scores = suite.model_acts[model], suite.model_scores[model]
        rm = cg_robustness.dropout_robustness(acts, scores, n_reruns, drop_frac, seed)
        out["std_x_model"] = rm.mean_std_x_model
        adv = cg_robustness.adversarial_removal(
            acts, scores, adv_n_concepts, adv_n_items, adv_repeats, seed=seed
        )
        out.update(
            adv_median_before=adv.median_before,
            adv_shift_best_pct=adv.mean_shift_best_pct,
            adv_shift_worst_pct=adv.mean_shift_worst_pct,
            adv_removed_frac=adv.removed_frac,
            adv_best_lowers=bool(np.mean(adv.shift_best) < 0),
            adv_worst_raises=bool(np.mean(adv.shift_worst) > 0),
        )
    return out


def model_summary(
    acts_by_benchmark: dict, scores_by_benchmark: dict, eps: float = cg.EPSILON
) -> dict:
    """X_model of one model: median, defined concepts, model gaps, worst-decile threshold."""
    xm = cg.x_model(acts_by_benchmark, scores_by_benchmark)
    cls = cg.model_gap_classes(xm, eps)
    defined = xm[~np.isnan(xm)]
    worst = defined[cls[~np.isnan(xm)] == "worst-decile"]
    return {
        "median": float(np.median(defined)) if defined.size else float("nan"),
        "n_defined": int(defined.size),
        "n_gaps": int((cls == "gap").sum()),
        "worst_decile": float(worst.max()) if worst.size else float("nan"),
        "accuracy": float(
            np.mean(np.concatenate([np.asarray(s, float) for s in scores_by_benchmark.values()]))
        ),
    }


def model_benchmarks(suite: Suite) -> pd.DataFrame:
    """Per (model, benchmark) it was scored on: items, accuracy, and how many concepts its chi_model
    defines (active on >= 1 item). X_model (eq. 5) averages chi_model over these rows'
    benchmarks."""
    rows = []
    for m, per in suite.model_scores.items():
        for b, sc in per.items():
            chi = cg.chi_model(suite.model_acts[m][b], sc)
            rows.append(
                {
                    "model": m,
                    "benchmark": b,
                    "items": int(len(sc)),
                    "accuracy": float(np.mean(sc)),
                    "concepts defined": int(np.isfinite(chi).sum()),
                }
            )
    return pd.DataFrame(
        rows, columns=["model", "benchmark", "items", "accuracy", "concepts defined"]
    )


def gap_significance(
    suite: Suite,
    model: str,
    n_perm: int = 1000,
    min_support: int = 5,
    alpha: float = 0.05,
    eps: float = cg.EPSILON,
    seed: int = 0,
) -> tuple[dict, cg_significance.GapTest]:
    """:func:`kit.cg.significance.gap_test` of one model, with its counts: the paper's gaps (X_model
    < eps), how many of them have the minimum support, and how many beat their null after FDR
    control."""
    t = cg_significance.gap_test(
        suite.model_acts[model], suite.model_scores[model], n_perm, min_support, alpha, seed
    )
    cls = t.classes(eps)
    paper_gap = t.x_model < eps
    summary = {
        "n_perm": n_perm,
        "min_support": min_support,
        "alpha": alpha,
        "n_gaps_paper": int(paper_gap.sum()),
        "n_gaps_with_support": int((paper_gap & (t.support >= min_support)).sum()),
        "median_support_of_gaps": float(np.median(t.support[paper_gap]))
        if paper_gap.any()
        else float("nan"),
        "n_tested": int(np.isfinite(t.p_low).sum()),
        **{f"n_{k.replace(' ', '_')}": int((cls == k).sum()) for k in ("gap", "weak", "strong")},
    }
    summary["n_gaps_significant"] = summary.pop("n_gap")
    return summary, t


def significant_concepts_table(
    t: cg_significance.GapTest, labels: Sequence[str], n: int = 10, eps: float = cg.EPSILON
) -> pd.DataFrame:
    """Concepts that beat their null (gap / weak / strong), most significant first; empty if
    none."""
    df = t.table(labels, eps)
    df = df[df["class"].isin(["gap", "weak", "strong"])]
    df = df.assign(q=np.fmin(df.q_low.fillna(1), df.q_high.fillna(1))).sort_values(
        ["q", "support"], ascending=[True, False]
    )
    return df.head(n).drop(columns="q")


def per_benchmark_classes(
    suite: Suite, n: int = 3, eps: float = cg.EPSILON
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Section 3.1's classes within each benchmark (chi_bench): counts per benchmark of missing /
    under / over-represented concepts, and per benchmark its ``n`` most under- and over-represented
    concepts (lowest / highest chi_bench among the non-missing)."""
    chib = cg.chi_bench_table(suite.acts)
    counts, rows = {}, []
    for b in chib.columns:
        x = chib[b].to_numpy()
        cls = cg.coverage_classes(x, eps)
        counts[b] = {k: int((cls == k).sum()) for k in cg.COVERAGE_CLASSES}
        for k, order in (
            ("under", np.argsort(x, kind="stable")),
            ("over", np.argsort(-x, kind="stable")),
        ):
            picked = [c for c in order if cls[c] == k][:n]
            rows += [
                {
                    "benchmark": b,
                    "class": k,
                    "concept": int(c),
                    "label": suite.labels[c],
                    "chi_bench": float(x[c]),
                }
                for c in picked
            ]
    return pd.DataFrame(counts).T, pd.DataFrame(
        rows, columns=["benchmark", "class", "concept", "label", "chi_bench"]
    )


def missing_calibration(
    suites: dict[str, Suite],
    sizes: Sequence[int],
    n_repeats: int = 5,
    seed: int = 0,
    eps: float = cg.EPSILON,
) -> pd.DataFrame:
    """How the missing fraction moves with items per benchmark and dictionary width: for every SAE
    and every size in ``sizes`` (capped at each benchmark's item count), the per-benchmark share of
    the dictionary with ``chi_bench < eps`` on random subsamples of that many items (mean and std
    over ``n_repeats``), and the share missing from the whole suite."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, s in suites.items():
        for size in sorted(set(int(x) for x in sizes)):
            for rep in range(n_repeats):
                sub = {
                    b: a[np.sort(rng.choice(a.shape[0], min(size, a.shape[0]), replace=False))]
                    for b, a in s.acts.items()
                }
                miss = {b: float((cg.chi_bench(a) < eps).mean()) for b, a in sub.items()}
                suite_miss = float((cg.x_bench(sub, s.x_bench_denominator) < eps).mean())
                rows += [
                    {
                        "sae": name,
                        "width": s.n_concepts,
                        "items": size,
                        "repeat": rep,
                        "benchmark": b,
                        "missing_frac": v,
                    }
                    for b, v in miss.items()
                ]
                rows.append(
                    {
                        "sae": name,
                        "width": s.n_concepts,
                        "items": size,
                        "repeat": rep,
                        "benchmark": "(suite)",
                        "missing_frac": suite_miss,
                    }
                )
    df = pd.DataFrame(rows)
    return (
        df.groupby(["sae", "width", "benchmark", "items"])
        .missing_frac.agg(["mean", "std"])
        .reset_index()
    )


def denominator_comparison(suite: Suite, eps: float = cg.EPSILON) -> dict[str, float]:
    """Eq. 3's two readings (:func:`kit.cg.metrics.x_bench`) on the same suite: Jaccard of the
    concepts each calls under- and over-represented, and how many missing concepts they share."""
    classes = {
        d: cg.coverage_classes(cg.x_bench(suite.acts, d), eps) for d in cg.X_BENCH_DENOMINATORS
    }
    out = {}
    for cls in ("missing", "under", "over"):
        a, b = (set(np.flatnonzero(classes[d] == cls)) for d in cg.X_BENCH_DENOMINATORS)
        out[f"jaccard_{cls}"] = jaccard(a, b, empty=1.0)
        out[f"n_{cls}_all"], out[f"n_{cls}_active"] = len(a), len(b)
    return out
