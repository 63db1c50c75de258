"""The Competency Gaps notebook's findings: what was measured, in plain language, from the
recorded numbers of :meth:`kit.cg.study.CGStudy.results` (section 12).

Descriptive only; whether a number supports a claim of the paper is said by the claims
(:mod:`kit.cg.claims`).
"""

from __future__ import annotations

POOLING_NOTE = {"mean": "eq. 1, CG as published", "last": "last token, our ablation"}
"""How the findings name each ``gap_pooling`` value (:data:`kit.cg.metrics.POOLINGS`)."""


def findings(r: dict) -> list[str]:
    """What was measured, in plain language, from the recorded numbers ``r``
    (:meth:`kit.cg.study.CGStudy.results`).

    Descriptive only: counts, accuracies and distances as measured. Whether any of them supports
    a claim of the paper is said by the claims (:func:`kit.core.claims.findings`), not here."""
    lines = []
    main = r.get("main_sae", "")
    cov = r.get("coverage", {}).get(main, {})
    if cov:
        lines.append(
            f"Coverage ({main}, {cov['n_concepts']} concepts, "
            f"{len(cov['missing_frac_per_benchmark'])} real benchmarks): {cov['n_missing_suite']} "
            f"concepts ({100 * cov['frac_missing_suite']:.1f}%) are missing from the whole suite, "
            f"{cov['n_dead']} of them dead latents (firing neither on the SAE's training text nor "
            f"on any benchmark text; {cov.get('n_dead_label_fires', 0)} concepts without a "
            f"training-text context do fire); {cov['n_missing_alive']} live concepts "
            f"({100 * cov['frac_missing_alive']:.1f}% of the live ones) fire on the "
            "corpus but on no benchmark (paper, Llama SAE: 314, 1%); every benchmark misses at "
            f"least {100 * cov['min_missing_frac_benchmark']:.0f}% "
            "of the dictionary "
            f"({100 * min(cov['missing_frac_per_benchmark_alive'].values()):.0f}% of the live "
            "concepts; paper: >= 30%); mean pairwise Jaccard overlap of covered sets "
            f"{cov['mean_jaccard_offdiag']:.2f}."
        )
    ct = r.get("coverage_vs_text")
    if ct:
        lines.append(
            f"At equal size ({ct['tokens']:,} tokens, {ct['draws']} draws): the suite misses "
            f"{100 * ct['suite_mean']:.1f}% of {ct['n_live']} live concepts, {ct['text_source']} "
            f"{100 * ct['text_mean']:.1f}%; the whole suite ({ct['suite_tokens']:,} tokens) misses "
            f"{100 * cov.get('frac_missing_alive', float('nan')):.1f}%."
        )
    for name, acc in r.get("response_accuracy", {}).items():
        lines.append(
            f"Published responses {name}: accuracy {acc:.3f} (parse rate "
            f"{r['response_parse_rate'][name]:.3f})."
        )
    for a in r.get("answers", []):
        lines.append(
            f"{a['model']} on {a['benchmark']}: accuracy {a['accuracy']:.3f} "
            f"[{a['accuracy_low']:.3f}, {a['accuracy_high']:.3f}] over {a['items']} items, "
            f"{a['truncated']} cut at {a['max_new_tokens']} tokens."
        )
    for model, s in r.get("model_performance", {}).items():
        lines.append(
            f"{model}: median chi_model {s['median']:.3f} over {s['n_defined']} concepts; "
            f"{s['n_gaps']} model gaps (X_model < eps), worst decile <= {s['worst_decile']:.3f}."
        )
    for model, g in r.get("significance", {}).items():
        lines.append(
            f"{model}: of its {g['n_gaps_paper']} gaps (X_model < eps; median support "
            f"{g['median_support_of_gaps']:.0f} items), {g['n_gaps_with_support']} are active on "
            f">= {g['min_support']} items and {g['n_gaps_significant']} have a BH q-value <= "
            f"{g['alpha']} ({g['n_weak']} more concepts with q <= {g['alpha']} on the low side "
            f"above eps, {g['n_strong']} on the high side, of {g['n_tested']} tested)."
        )
    pc = r.get("llama_vs_qwen")
    if pc:
        lines.append(
            f"{pc['A']} vs {pc['B']} on the same ARC items: Spearman of chi_model profiles "
            f"{pc['spearman']:.2f}, mean |difference| {pc['mean_abs_diff']:.3f} (accuracies "
            f"{pc['accuracy_A']:.3f} vs {pc['accuracy_B']:.3f})."
        )
    rb = r.get("robustness", {})
    if rb:
        lines.append(
            f"Robustness ({r.get('robustness_model', '')}): std over {r.get('n_reruns')} reruns "
            f"dropping {100 * r.get('drop_frac', 0):.0f}%: X_bench {rb['std_x_bench']:.3f} (paper "
            f"0.025), X_model {rb.get('std_x_model', float('nan')):.3f} (paper 0.014). Adversarial "
            f"removal of {100 * rb.get('adv_removed_frac', 0):.1f}% of items: median X_model "
            f"{rb.get('adv_shift_best_pct', float('nan')):+.1f}% (best concepts' items; paper "
            f"-0.6%), {rb.get('adv_shift_worst_pct', float('nan')):+.1f}% (worst; paper +1.3%)."
        )
    xs = r.get("cross_sae", {})
    if xs:
        meds = "; ".join(
            f"{k}: median X_bench {v['median_x_bench']:.3f}, missing "
            f"{100 * v['frac_missing_suite']:.1f}%"
            for k, v in xs.items()
            if isinstance(v, dict)
        )
        sw = r.get("sae_swap")
        lines.append(
            f"Two SAEs: {meds}."
            + (
                f" Spearman of the benchmarks' missing fractions: {sw['rho_full_size']:.2f} at "
                f"full size, where benchmark length alone gives {sw['rho_missing_vs_tokens']:.2f}; "
                f"{sw['rho']:.2f} with every benchmark cut to {sw['tokens']:,} tokens."
                if sw
                else ""
            )
        )
    z = r.get("zoo", {})
    if z:
        lines.append(
            f"Tiny-world suite ({z['model']} with its own SAE {z['sae']}, {z['n_tasks']} tasks): "
            f"{z['n_missing_suite']} of {z['n_concepts']} features missing, median X_model "
            f"{z['median_x_model']:.3f}, {z['n_gaps']} model gaps; dropout std X_bench "
            f"{z['std_x_bench']:.3f}, X_model {z['std_x_model']:.3f}; adversarial "
            f"{z['adv_shift_best_pct']:+.1f}% / {z['adv_shift_worst_pct']:+.1f}%."
        )
    elif r.get("zoo_error"):
        lines.append(f"Tiny-world suite not run: {r['zoo_error']}")
    for entry, pg in (r.get("planted_gap_by_sae") or {}).items():
        d, pool = entry.rsplit("/", 1) if "/" in entry else (entry, "")
        name = f"dictionary {d!r}" + (
            f", {pool} pooling ({POOLING_NOTE.get(pool, pool)})" if pool else ""
        )
        if "skipped" in pg:
            lines.append(f"Planted gap, {name}: skipped ({pg['skipped']}).")
            continue
        lines.append(
            f"Planted gap, {name} ({pg['sae']} at {pg['sae_hook']}; {pg['member']} vs "
            f"{pg['parent']}: {pg['gap']}; {pg['n_planted_items']} planted items): accuracy there "
            f"{pg['accuracy_planted_member']:.2f} vs {pg['accuracy_planted_parent']:.2f}, on the "
            f"other tasks {pg['accuracy_other_member']:.2f} vs {pg['accuracy_other_parent']:.2f}. "
            f"The gap test flags {pg['n_found']} concept(s) low for the member and not the parent, "
            f"{pg['n_found_planted']} of them planted concepts (of "
            f"{pg['n_planted_concepts_tested']} planted among {pg['n_tested']} tested)."
        )
    if not r.get("planted_gap_by_sae") and r.get("planted_gap_error"):
        lines.append(f"Planted-gap check not run: {r['planted_gap_error']}")
    per_model = {}
    for row in r.get("model_benchmarks", []):
        per_model.setdefault(row["model"], []).append(row["benchmark"])
    for m, bs in per_model.items():
        lines.append(
            f"{m}: X_model averages chi_model over {len(bs)} scored benchmark(s) ({', '.join(bs)})."
        )
    tokens = {m.get("train_tokens") for m in r.get("sae_meta", {}).values()}
    n_bench = len(cov.get("missing_frac_per_benchmark", {}))
    if tokens:
        one = all(len(bs) == 1 for bs in per_model.values())
        lines.append(
            f"Gaps vs the paper: the concept space is a 6-layer sentence encoder's SAE trained on "
            f"{max(tokens):,} tokens, not an 8B model's own 65k-concept SAE (dead latents "
            "inflate 'missing'); "
            + (
                "each published response set scores its model on one benchmark, so its X_model is "
                "that benchmark's chi_model; "
                if one
                else ""
            )
            + f"the suite is {n_bench} benchmarks with a sample of items each; labels are "
            f"top-activating words ({r.get('label_source', 'local')}), not LLM-written "
            "descriptions."
        )
    return lines
