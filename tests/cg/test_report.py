"""kit.cg.suite / kit.cg.report on small hand-built suites (no encoder, no world)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import metrics as cg
from kit.cg import report as cg_report
from kit.cg.findings import findings
from kit.cg.suite import Suite, best_match


def _suite(name="s", seed=0, n_concepts=12):
    rng = np.random.default_rng(seed)
    dense = {
        b: rng.exponential(size=(20, n_concepts)) * (rng.random((20, n_concepts)) < 0.4)
        for b in ("a", "b", "c")
    }
    for a in dense.values():
        a[:, 0] = 0  # concept 0 is missing everywhere
    acts = {b: sp.csr_matrix(a) for b, a in dense.items()}
    labels = [f"concept {i}" for i in range(n_concepts)]
    contexts = [
        [{"value": 1.0 + i, "word": f"w{i}", "context": f"ctx {i}"}] for i in range(n_concepts)
    ]
    scores = {"a": rng.integers(0, 2, 20).astype(float)}
    return Suite(
        name,
        labels,
        {b: a.tocsr() for b, a in acts.items()},
        {b: [f"{b}{i}" for i in range(20)] for b in acts},
        {"m": {"a": acts["a"].tocsr()}},
        {"m": scores},
        {"m": {"a": [f"a{i}" for i in range(20)]}},
        contexts,
    )


def test_coverage_summary_counts_missing():
    s = _suite()
    cov = cg_report.coverage_summary(s)
    assert cov["n_concepts"] == 12 and cov["n_missing_suite"] >= 1
    assert cov["n_missing_suite"] == int((cg.x_bench(s.acts) < cg.EPSILON).sum())
    assert set(cov["missing_frac_per_benchmark"]) == {"a", "b", "c"}


def test_missing_suite_table_lists_concept_zero():
    t = cg_report.missing_suite_table(_suite())
    assert 0 in t["concept"].tolist() and t.loc[t.concept == 0, "example context"].item() == "ctx 0"


def test_best_worst_table_respects_support():
    s = _suite()
    t = cg_report.best_worst_table(s, "m", n=2, min_activation_items=3)
    perf = t[t.analysis.str.contains("performance")]
    support = np.asarray((s.model_acts["m"]["a"] > 0).sum(0)).ravel()
    assert (support[perf.concept.to_numpy()] >= 3).all(), (
        "rarely active concepts must not be ranked by performance"
    )
    best = t[t.analysis == "best performance"].score.to_numpy()
    assert (np.diff(best) <= 0).all()


def test_best_match_finds_identical_profile():
    s = _suite()
    perm = np.array([3, 1, 2, 0, 5, 4, 6, 7, 8, 9, 11, 10])  # SAE B = SAE A with concepts permuted
    b_acts = {k: a[:, perm] for k, a in s.acts.items()}
    inv = np.argsort(perm)
    got = best_match(s.acts, b_acts, [1, 3, 4])
    assert [g[0] for g in got] == [inv[1], inv[3], inv[4]]
    assert all(np.isclose(g[1], 1.0) for g in got)
    assert best_match(s.acts, b_acts, [0])[0][0] == -1, "a never-active concept has no partner"


def test_profile_comparison_identical_models():
    s = _suite()
    acts = s.model_acts["m"]["a"]
    sc = s.model_scores["m"]["a"]
    summary, table = cg_report.profile_comparison(acts, sc, sc, s.labels, n=2)
    assert np.isclose(summary["mean_abs_diff"], 0) and np.isclose(summary["spearman"], 1.0)


def test_robustness_and_findings():
    s = _suite()
    r = cg_report.robustness(
        s, "m", n_reruns=5, drop_frac=0.2, adv_n_concepts=2, adv_n_items=2, adv_repeats=2
    )
    assert {"std_x_bench", "std_x_model", "adv_shift_best_pct", "adv_shift_worst_pct"} <= set(r)
    text = "\n".join(
        findings(
            {
                "main_sae": "s",
                "coverage": {"s": cg_report.coverage_summary(s)},
                "robustness": r,
                "robustness_model": "m",
                "n_reruns": 5,
                "drop_frac": 0.2,
            }
        )
    )
    assert "missing from the whole suite" in text and "paper 0.025" in text


def test_dead_counts_only_concepts_that_fire_nowhere():
    s = _suite()
    s.labels[0] = s.labels[1] = (
        "(dead)"  # no training-text context; concept 1 does fire on the benchmarks
    )
    cov = cg_report.coverage_summary(s)
    assert s.dead().tolist() == [True] + [False] * 11
    assert cov["n_dead"] == 1 and cov["n_dead_label_fires"] == 1, (
        "a '(dead)' label that fires on a benchmark is alive"
    )
    s.model_acts["m"]["a"] = s.model_acts["m"]["a"].tolil()
    s.model_acts["m"]["a"][3, 0] = (
        1.0  # concept 0 fires on a model's text only: alive, but still missing
    )
    assert not s.dead()[0] and cg_report.coverage_summary(s)["n_missing_alive"] >= 1


def test_gap_significance_counts_and_table():
    s = _suite()
    a = np.zeros((60, 12))
    a[np.arange(60), np.arange(60) % 12] = 1.0
    sc = np.ones(60)
    sc[np.arange(60) % 12 == 3] = 0  # concept 3: all 5 items wrong
    s.model_acts["m"], s.model_scores["m"] = {"a": sp.csr_matrix(a)}, {"a": sc}
    summary, t = cg_report.gap_significance(s, "m", n_perm=400, min_support=5)
    assert (
        summary["n_gaps_paper"] == 1
        and summary["n_gaps_with_support"] == 1
        and summary["n_tested"] == 12
    )
    assert summary["n_gaps_significant"] == 1
    table = cg_report.significant_concepts_table(t, s.labels)
    assert table.concept.tolist() == [3] and table["class"].tolist() == ["gap"]


def test_per_benchmark_classes_match_coverage_classes():
    s = _suite()
    counts, table = cg_report.per_benchmark_classes(s, n=2)
    for b in s.acts:
        cls = cg.coverage_classes(cg.chi_bench(s.acts[b]))
        assert (
            counts.loc[b, "under"] == (cls == "under").sum()
            and counts.loc[b, "missing"] == (cls == "missing").sum()
        )
        under = table[(table.benchmark == b) & (table["class"] == "under")]
        assert (
            cls[under.concept.to_numpy()] == "under"
        ).all() and under.chi_bench.is_monotonic_increasing


def test_missing_calibration_falls_with_more_items_and_caps_at_the_suite():
    s = _suite()
    df = cg_report.missing_calibration({"s": s}, [2, 20, 50], n_repeats=3)
    suite_rows = df[df.benchmark == "(suite)"].set_index("items")["mean"]
    assert suite_rows[2] >= suite_rows[20], "fewer items can only leave more concepts missing"
    full = (cg.x_bench(s.acts) < cg.EPSILON).mean()
    assert np.isclose(suite_rows[50], full) and np.isclose(suite_rows[20], full), (
        "sizes are capped at the items there are"
    )
    assert set(df.width) == {12}


def test_config_profiles_validate_and_settings_are_coherent():
    import kit
    from kit.core.params import ParamsError

    for profile in ("tiny", "smoke", "paper", "real", "realsmoke", "dryrun"):
        cfg = kit.load_params("04_competency_gaps", profile)
        assert len(cfg.sae_names()) == 2 and cfg.null_perms >= 100 and cfg.size_draws >= 100
    with pytest.raises(ParamsError, match="needs models"):
        kit.load_params("04_competency_gaps", "tiny", overrides={"responses": "generate"})
    with pytest.raises(ParamsError, match="set response_sets: \\[\\]"):
        kit.load_params(
            "04_competency_gaps",
            "tiny",
            overrides={"responses": "generate", "models": ["real/smollm2-135m-instruct"]},
        )
    with pytest.raises(ParamsError, match="n_response_items=200 > n_items=150"):
        kit.load_params("04_competency_gaps", "real", overrides={"n_response_items": 200})
    with pytest.raises(ParamsError, match="allowed real models: real/smollm2-135m-instruct"):
        kit.load_params("04_competency_gaps", "real", overrides={"models": ["real/gpt-5"]})
    with pytest.raises(ParamsError, match="null_perms"):
        kit.load_params("04_competency_gaps", "tiny", overrides={"null_perms": 10})
    with pytest.raises(ParamsError, match="paired one to one"):
        kit.load_params("04_competency_gaps", "paper", overrides={"model_saes": []})
    with pytest.raises(ParamsError, match="sae_widths"):
        kit.load_params("04_competency_gaps", "tiny", overrides={"sae_widths": [64, 64]})
    with pytest.raises(ParamsError, match="allowed values"):
        kit.load_params("04_competency_gaps", "tiny", overrides={"response_sets": ["arc/gpt-5"]})


def test_hooked_item_concepts_matches_manual_encoding():
    """The paper-setting path (model + its own SAE) on a tiny random HookedTransformer."""
    import torch

    from kit.cg.bench import synthetic_sae
    from kit.cg.model_space import hooked_item_concepts
    from kit.models.load import random_model

    model = random_model("tiny-gelu")
    model.to_tokens = lambda text, prepend_bos=True: torch.tensor(
        [[1] + [3 + len(w) for w in text.split()]]
    )
    sae = synthetic_sae(32, d_sae=64, k=4)
    sae.cfg.metadata.hook_name = "blocks.0.hook_resid_post"
    texts = ["a bb ccc", "dddd"]
    m = hooked_item_concepts(model, sae, texts)
    assert m.shape == (2, 64)
    _, cache = model.run_with_cache(model.to_tokens(texts[0]))
    expected = sae.encode(cache["blocks.0.hook_resid_post"][0, 1:]).detach().mean(0).numpy()
    assert np.allclose(m[0].toarray().ravel(), expected, atol=1e-5), (
        "BOS must be excluded and tokens averaged (eq. 1)"
    )


def test_denominator_comparison_counts_both_readings():
    s = _suite()
    out = cg_report.denominator_comparison(s)
    for cls in ("missing", "under", "over"):
        assert 0.0 <= out[f"jaccard_{cls}"] <= 1.0
    # a concept is missing under both readings exactly when no benchmark activates it
    assert out["n_missing_all"] == out["n_missing_active"] and out["jaccard_missing"] == 1.0


def test_model_benchmarks_lists_what_x_model_averages_over():
    s = _suite()
    s.model_acts["m"]["b"] = s.acts["b"]
    s.model_scores["m"]["b"] = np.r_[np.ones(10), np.zeros(10)]
    t = cg_report.model_benchmarks(s)
    assert list(t.benchmark) == ["a", "b"] and list(t["items"]) == [20, 20]
    assert t.accuracy.iloc[1] == 0.5
    active_b = int((np.asarray((s.acts["b"] > 0).sum(0)).ravel() > 0).sum())
    assert t["concepts defined"].iloc[1] == active_b
    lines = findings({"model_benchmarks": t.to_dict(orient="records")})
    assert lines == ["m: X_model averages chi_model over 2 scored benchmark(s) (a, b)."]
