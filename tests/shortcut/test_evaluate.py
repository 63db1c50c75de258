"""Tests of kit.shortcut.evaluate: agreement by hand, Table 2's summary and findings, per-item
correctness (item_correct, te_items), the vanilla row under patching, free-text scoring."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from kit.shortcut import evaluate, study
from kit.shortcut import items as shortcut_items


def test_agreement_hand_computed():
    ref = [10.0, 20.0, 30.0, 40.0]
    a = evaluate.agreement([12.0, 22.0, 32.0, 42.0], ref)
    assert a["spearman"] == pytest.approx(1.0) and a["rmse"] == pytest.approx(0.0, abs=1e-9)
    assert a["mean_abs_diff"] == pytest.approx(2.0)
    # y = [1, 3, 2, 4] on x = [1, 2, 3, 4]: fit y = 0.8x + 0.5, residuals -.3, .9, -.9, .3
    b = evaluate.agreement([1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    assert b["slope"] == pytest.approx(0.8) and b["rmse"] == pytest.approx(
        math.sqrt((0.09 + 0.81) * 2 / 4)
    )
    assert b["spearman"] == pytest.approx(0.8)
    # a constant reference (every variant at 0% on a twin): no line, e = spread of the scores about
    # their mean
    c = evaluate.agreement([1.0, 3.0, 2.0], [5.0, 5.0, 5.0])
    assert (
        math.isnan(c["slope"])
        and math.isnan(c["spearman"])
        and c["rmse"] == pytest.approx(math.sqrt(2 / 3))
    )


def test_table2_summary_and_findings():
    t = pd.DataFrame(
        {
            "contaminated": [True, True, False],
            "ref": [20.0, 30.0, 25.0],
            "ori": [60.0, 50.0, 26.0],
            "te": [25.0, 28.0, 24.0],
        }
    )
    s = evaluate.table2_summary(t)
    assert s["contaminated_mean_abs_ori_minus_ref"] == pytest.approx(30.0)
    assert s["contaminated_mean_abs_te_minus_ref"] == pytest.approx(3.5)
    assert s["uncontaminated_mean_abs_delta_acc"] == pytest.approx(2.0)
    text = "\n".join(study.findings(s, 29, 2048))
    assert "1.42%" in text and "|TE-Ref| = 3.5" in text
    # point values only: the words that would state a verdict come from the claims
    assert "closer to" not in text and "AWAY" not in text and "claim te.contaminated_drop" in text


def _world_model(seed: int):
    from kit.world.train import Arch, make_model

    m = make_model(Arch(1, 32, 2, 64, n_ctx=64), seed=seed)
    m.cfg.model_name = f"zoo/test-{seed}"
    return m.eval()


def test_item_correct_is_the_per_item_twin_of_accuracies():
    base, other = _world_model(0), _world_model(1)
    test = shortcut_items.task_data(base, shortcut_items.study_items("add", "test", 16))
    fresh = shortcut_items.task_data(base, shortcut_items.study_items("add", "fresh", 12))
    neurons = [(0, i) for i in range(0, 64, 2)]
    per_item = evaluate.item_correct(other, base, test, [[], neurons])
    assert per_item.shape == (2, 16) and set(np.unique(per_item)) <= {0.0, 1.0}
    assert np.allclose(per_item.mean(1), evaluate.accuracies(other, base, test, [[], neurons]))
    te = evaluate.te_items({"Vanilla": base, "+x": other}, base, test, fresh, neurons)
    assert (te["Vanilla"]["ori"] == te["Vanilla"]["te"]).all(), (
        "patching the base with itself changes nothing"
    )
    assert te["+x"]["ref"].shape == (12,)


def test_trustworthy_table_vanilla_row_is_unchanged_by_patching_itself():
    base, other = _world_model(0), _world_model(1)
    test = shortcut_items.task_data(base, shortcut_items.study_items("add", "test", 16))
    fresh = shortcut_items.task_data(base, shortcut_items.study_items("add", "fresh", 16))
    assert test.tokens.shape[0] == 16 and all(len(t) == 1 for t in test.targets)
    assert (test.tokens[torch.arange(16), test.lengths - 1] != 0).all(), (
        "lengths must point at the last prompt token"
    )
    neurons = [(0, i) for i in range(0, 64, 2)]
    t2 = evaluate.trustworthy_table(
        {"Vanilla": base, "+x": other}, base, test, fresh, neurons, ["+x"]
    )
    assert list(t2.columns) == ["variant", "contaminated", "ref", "ori", "te", "delta_acc"]
    van = t2.set_index("variant").loc["Vanilla"]
    assert van.te == van.ori and van.delta_acc == 0, (
        "TE of the base model patched with itself must equal Ori"
    )
    assert t2[["ref", "ori", "te"]].apply(lambda c: c.between(0, 100)).all().all(), (
        "scores are percentages"
    )
    t3 = evaluate.side_effect_table(
        {"+x": other},
        base,
        {"add2": shortcut_items.task_data(base, shortcut_items.study_items("add2", "test", 8))},
        neurons,
    )
    assert list(t3.columns) == ["variant", "task", "ori", "te", "delta_acc"] and len(t3) == 1


def test_text_scoring_for_free_text_benchmarks():
    """Free-text responses are scored by the benchmark's own rule (kit.data.scorers.score), the
    benchmark read from the item's id."""
    from kit.data.items import Item
    from kit.data.scorers import score
    from kit.subjects import benchmark_of

    num = Item("gsm8k/test/1", "q", answer="18")
    assert benchmark_of(num) == "gsm8k"
    assert score(benchmark_of(num), num, "so 9 + 9 = 18 .") and not score(
        benchmark_of(num), num, "the answer is 17"
    )
    mc = Item("mmlu/test/anatomy/1", "q", choices=("a", "b", "c", "d"), label=2)
    assert score(benchmark_of(mc), mc, "C") and not score(benchmark_of(mc), mc, "A")
    word = Item("add/test/0", "q", answer="7")
    assert (
        benchmark_of(word) == "tiny/add"
        and score("tiny/add", word, " 7 ")
        and not score("tiny/add", word, "17")
    )
    # the free-text path runs end to end on a model that is not a zoo member (tokenizer path)
    m = _world_model(0)
    m.tokenizer.name_or_path = (
        "not-the-world-vocabulary"  # its subject is no WorldSubject: asked as free text
    )
    data = shortcut_items.task_data(m, shortcut_items.study_items("add", "test", 6))
    assert data.items is not None and data.tokens.shape[0] == 6
    acc = evaluate.accuracies(m, _world_model(1), data, [[], [(0, 1), (0, 2)]], max_new_tokens=2)
    assert acc.shape == (2,) and ((acc >= 0) & (acc <= 1)).all()
