"""Tests of kit.mui.law (notebook 01's experiments) that need no built world."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import kit.mui.metric as mui
import kit.mui.law as ul
from kit.models.load import random_model


def test_law_fits_per_group_and_pooled():
    m = np.array([1.0, 2.0, 4.0, 8.0])
    df = pd.DataFrame({"benchmark": ["a"] * 4 + ["b"] * 4, "mui": np.r_[m, m],
                       "performance": np.r_[10 - 2 * np.log(m), 50 - 5 * np.log(m)]})
    fits = ul.law_fits(df, form="perf_vs_log_mui").set_index("benchmark")
    assert fits.loc["a", "slope"] == pytest.approx(-2) and fits.loc["b", "slope"] == pytest.approx(-5)
    assert fits.loc["all", "n"] == 8
    p = np.array([10.0, 20.0, 40.0, 80.0])
    paper = ul.law_fits(pd.DataFrame({"benchmark": ["a"] * 4, "performance": p, "mui": 28.305 - 4.632 * np.log(p)}))
    row = paper.set_index("benchmark").loc["a"]
    assert row["alpha"] == pytest.approx(4.632) and row["beta"] == pytest.approx(28.305)
    assert round(row["mui_at_100"], 2) == 6.97, "the default is the paper's form: MUI = -alpha ln P + beta"
    flat = ul.law_fits(pd.DataFrame({"benchmark": ["c"] * 3, "mui": [1.0, 2, 3], "performance": [5.0, 5, 5]}))
    assert pd.isna(flat.set_index("benchmark").loc["c"].get("slope", np.nan)), "constant performance: no fit"


def test_published_pur_comparison_and_ranking():
    cmp = ul.published_pur_comparison()
    covered = cmp.dropna(subset=["pur_ours"])
    assert len(cmp) == 54 and len(covered) == 48, (
        "9 models x 6 benchmarks, 8 of them in Table 5 (Gemma-2-9B-Instruct = Gemma2-9B-Instruct)")
    assert set(cmp.model) - set(covered.model) == {"Llama-3-8B-Instruct"}
    assert covered["diff"].abs().max() <= 0.1
    ranks = ul.published_rank_agreement(cmp)
    assert round(ranks["pur_table1"]["spearman_mean"], 1) == 88.6
    assert ranks["n_models_covered"] == 8


def test_name_key_matches_the_two_gemma_spellings():
    assert ul.name_key("Gemma-2-9B-Instruct") == ul.name_key("Gemma2-9B-Instruct")
    assert ul.name_key("Llama-3-8B-Instruct") != ul.name_key("Llama-3.1-8B-Instruct")


def test_published_law_on_the_general_models():
    general = ul.published_mui_table("general")
    assert sorted(general.model.unique()) == sorted(ul.PUBLISHED_GENERAL_MODELS) and len(ul.PUBLISHED_GENERAL_MODELS) == 8
    fits = ul.law_fits(general)
    per_bench = fits[fits.benchmark != "all"]
    assert (per_bench.slope < 0).all(), "on §3.2's general models every per-benchmark slope is negative"
    every = ul.law_fits(ul.published_mui_table("all"))
    assert every[every.benchmark != "all"].r2.median() < 0.1 < per_bench.r2.median()
    pm = ul.published_per_model(general)
    assert len(pm) == 8 and "MMLU" not in pm.benchmark.iloc[0]
    with pytest.raises(ValueError, match="allowed values: all, general"):
        ul.published_mui_table("some")


def test_published_b6_correlations_from_the_printed_tables():
    b6 = ul.published_b6_correlations().set_index("method")
    alt = b6.loc[["Table 13", "Table 14"], "pooled"]
    assert 0.65 < alt.mean() < 0.75 and b6.loc["Table 13", "quoted"] == 0.723, (
        "the printed Tables 13/14 give about 0.70 against Table 11 (the paper quotes 0.723)")


def test_coincident_methods_are_found_by_construction():
    grid = pd.DataFrame({"method": ["score/topk", "score/top_pct", "score_sum/topk", "score/topscore@0.2"],
                         "d_mlp": 512, "max_response_tokens": 1, "model": "m", "task": "t", "mui": 1.0})
    assert ul.coincident_methods(grid) == {"score/top_pct": "score/topk", "score_sum/topk": "score/topk"}
    assert ul.coincident_methods(grid.assign(max_response_tokens=3)) == {"score/top_pct": "score/topk"}


def test_ablation_hooks_zero_exactly_the_chosen_neurons():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (2, 5))
    seen = {}

    def look(act, hook):
        seen[hook.name] = act.clone()

    hooks = ul.ablation_hooks([(0, 3), (1, 5), (1, 7)])
    with model.hooks(fwd_hooks=hooks + [("blocks.0.mlp.hook_post", look), ("blocks.1.mlp.hook_post", look)]):
        model(tokens)
    _, clean = model.run_with_cache(tokens)
    assert (seen["blocks.0.mlp.hook_post"][..., 3] == 0).all()
    assert (seen["blocks.1.mlp.hook_post"][..., [5, 7]] == 0).all()
    keep = [i for i in range(64) if i != 3]
    assert torch.allclose(seen["blocks.0.mlp.hook_post"][..., keep], clean["blocks.0.mlp.hook_post"][..., keep]), (
        "other neurons of the ablated layer must be untouched"
    )


def test_mixed_pool_draws_evenly():
    pools = {"a": list(range(10)), "b": list(range(100, 110)), "c": list(range(200, 210))}
    mixed = ul.mixed_pool(pools, 9)
    assert sorted(x // 100 for x in mixed) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_correct_vs_incorrect_equal_counts_within_tasks(monkeypatch):
    calls = []

    def fake(model, items, responses, per_sample=False, **kw):
        calls.append(list(items))
        masks = torch.zeros(len(items), 1, 10, dtype=torch.bool)
        for i, it in enumerate(items):
            masks[i, 0, : it % 10 + 1] = True
        return mui.MUIResult(mui=10.0, mask=masks.any(0), n_samples=len(items),
                             per_sample=[mui.mui_of_mask(m) for m in masks], sample_masks=masks)

    monkeypatch.setattr(mui, "utilization_for_items", fake)
    items = list(range(12))
    correct = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    strata = ["x"] * 6 + ["y"] * 6  # x: 5 correct / 1 wrong; y: 0 correct / 6 wrong
    out = ul.correct_vs_incorrect(None, items, [""] * 12, correct, strata=strata)
    assert out["n_each"] == 1, "only task x has both sides: one of each"
    assert all(i < 6 for c in calls for i in c), "task y (no correct answers) must not enter either side"
    assert "mannwhitney_p" not in out, "with one sample a side there is no test"


def test_masking_summary():
    curve = pd.DataFrame([
        {"k": 0, "kind": "key", "set": "A", "accuracy": 80.0}, {"k": 0, "kind": "random", "set": "A", "accuracy": 80.0},
        {"k": 0, "kind": "key", "set": "B", "accuracy": 60.0}, {"k": 0, "kind": "random", "set": "B", "accuracy": 60.0},
        {"k": 4, "kind": "key", "set": "A", "accuracy": 20.0}, {"k": 4, "kind": "random", "set": "A", "accuracy": 78.0},
        {"k": 4, "kind": "key", "set": "B", "accuracy": 55.0}, {"k": 4, "kind": "random", "set": "B", "accuracy": 60.0},
    ])
    s = ul.masking_summary(curve, "A", "B")
    assert s == {"k_max": 4, "drop_key_a": 60.0, "drop_random_a": 2.0, "drop_key_b": 5.0, "drop_random_b": 0.0}


def test_task_choices_from_the_registry():
    tasks = ["add", "add2", "code", "facts", "boolean", "dyck"]
    assert ul.first_task_per_group(tasks) == ["add", "code", "facts", "boolean"]
    assert ul.masking_tasks(tasks, None, None) == ("add", "code")
    assert ul.masking_tasks(tasks, "facts", None) == ("facts", "add")
    assert ul.base_models(["zoo/base-s", "zoo/base-m+math", "zoo/base-l@step-3"]) == ["zoo/base-s"]
    assert ul.focus_model(["zoo/base-s", "zoo/base-m"]) == "zoo/base-m"


def test_pur_ranking_against_fresh_truth():
    grid = pd.DataFrame({
        "model": ["A", "B", "C"], "task": ["t"] * 3, "fresh": [60.0, 50.0, 10.0],
        "performance": [40.0, 50.0, 10.0], "mui": [1.0, 4.0, 1.0],  # PUR: 40, 25, 10
    })
    summary, g = ul.pur_ranking(grid)
    assert summary["reference_order"] == ["A", "B", "C"]
    assert g.pur.tolist() == pytest.approx([40.0, 25.0, 10.0])
    assert summary["pur"]["spearman_mean"] == pytest.approx(100.0)
    assert summary["performance"]["spearman_mean"] == pytest.approx(50.0), "one swap of three: 1 - 6*2/24"
    assert summary["pur_vs_task_truth"]["spearman_mean"] == pytest.approx(100.0)


def test_width_k_table_gives_base_xl_k_2():
    from kit.mui.law import width_k_table

    t = width_k_table(["zoo/base-s", "zoo/base-l", "zoo/base-xl", "twin/llama"], "micro").set_index("model")
    assert list(t.index) == ["zoo/base-s", "zoo/base-l", "zoo/base-xl"], "hub models are left out"
    assert t.loc["zoo/base-xl", "k"] == 2 and t.loc["zoo/base-xl", "d_mlp"] == 1536
    assert (t.drop("zoo/base-xl").k == 1).all()
    # one response token: n_layers * k key neurons of n_layers * d_mlp
    assert abs(t.loc["zoo/base-xl", "one_token_sample_mui"] - 100 * 2 / 1536) < 1e-12
    assert width_k_table(["zoo/base-xl"], "micro", k=5).k.tolist() == [5]


def test_multi_token_section_on_micro(micro_world):
    from types import SimpleNamespace

    from kit.mui.law import multi_token_section

    cfg = SimpleNamespace(world=micro_world, multi_token_n_items=8, seed=0, law_form="mui_vs_log_perf")
    with pytest.raises(ValueError, match="allowed values: sort-list, add-steps"):
        multi_token_section(["zoo/base-xl"], ["add"], "add", cfg)
    sec = multi_token_section(["zoo/base-s", "zoo/base-xl"], ["sort-list", "add-steps"], "add", cfg)
    s = sec.data["samples"]
    assert sec.record["multi_token"]["focus"] == "zoo/base-xl"
    one = s[(s.model == "zoo/base-xl") & (s.task == "add")]
    assert one.mui.nunique() == 1 and abs(one.mui.iloc[0] - 100 * 2 / 1536) < 1e-9, "one token: k / d_mlp"
    multi = s[(s.model == "zoo/base-xl") & (s.task == "sort-list")]
    assert (multi.mui <= 100 * 2 * multi.response_tokens / 1536 + 1e-9).all()  # at most k per token and layer
    assert multi.mui.nunique() > 1, "multi-token responses: per-sample MUI varies"
    # only base-xl answers them: the law is taken across its checkpoints (step 100, 300 and the final model)
    law = sec.data["law"]
    assert law["over"] == "checkpoints" and law["model"] == "zoo/base-xl" and law["n_models"] == 3
    assert (law["slope"] is None) == ("not_testable" in law) and "micro world" in law["where"]


def test_checkpoint_series_orders_steps_and_drops_the_final_step():
    from kit.mui.law import checkpoint_series

    members = ["zoo/base-s", "zoo/base-xl", "zoo/base-xl@step-500", "zoo/base-xl@step-100", "zoo/base-xl@step-300",
               "zoo/base-l@step-80"]
    assert checkpoint_series("zoo/base-xl", members, final_step=500) == [
        "zoo/base-xl@step-100", "zoo/base-xl@step-300", "zoo/base-xl"]
    assert checkpoint_series("zoo/base-xl", members)[-2:] == ["zoo/base-xl@step-500", "zoo/base-xl"]  # 500 not final
    assert checkpoint_series("zoo/base-s", members) == ["zoo/base-s"]  # no checkpoints: the model alone


def test_multi_token_law_across_models_or_checkpoints():
    import math

    from kit.mui.law import multi_token_law

    # MUI = -2 ln P + 10 exactly: slope -2 on both families
    def cells(models, perfs):
        return pd.DataFrame([{"model": m, "task": t, "performance": p, "mui": -2 * math.log(p) + 10}
                             for m, p in zip(models, perfs) for t in ("sort-list", "add-steps")])

    three = cells(["a", "b", "c"], [5.0, 20.0, 60.0])
    law, note = multi_token_law(three, "mui_vs_log_perf")
    assert abs(law["slope"] + 2) < 1e-9 and law["n"] == 6 and "over" not in law
    one = pd.concat([cells(["xl"], [40.0]), cells(["s", "m"], [1.0, 1.0]).assign(performance=0.0)])
    law, note = multi_token_law(one, "mui_vs_log_perf")
    assert law["slope"] is None and "only 1 model(s)" in law["not_testable"] and "none has checkpoints" in law["not_testable"]
    series = cells(["xl@step-10", "xl@step-20", "xl"], [2.0, 10.0, 40.0])
    law, note = multi_token_law(one, "mui_vs_log_perf", series)
    assert abs(law["slope"] + 2) < 1e-9 and law["n"] == 6 and law["over"] == "checkpoints"
    assert law["model"] == "xl" and law["n_models"] == 3 and set(law["per_task"]) == {"sort-list", "add-steps"}
    assert "slope -2.00" in law["per_task"]["sort-list"] and "not independent models" in note
    flat = series.assign(performance=[0.0, 0.0, 0.0, 0.0, 40.0, 40.0])  # one checkpoint answers: no fit
    law, _ = multi_token_law(one, "mui_vs_log_perf", flat)
    assert law["slope"] is None and "too few distinct" in law["not_testable"]
