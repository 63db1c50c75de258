"""The law within one family (kit.mui.size_pair): paired replicates, hand-computed cases, and the
claims on synthetic grids where the larger model does or does not score higher with a lower MUI."""

from __future__ import annotations

import numpy as np
import pytest

from kit.core.claims import check_consistent
from kit.mui.size_pair import cell_replicates, item_boot_indices, size_pair_claims

SMALL, LARGE = "real/qwen2.5-coder-0.5b-instruct", "real/qwen2.5-coder-1.5b-instruct"


def test_replicates_by_hand():
    # 3 items; draws [0, 0, 1] and [2, 2, 2]
    idx = np.array([[0, 0, 1], [2, 2, 2]])
    correct = [True, False, True]
    keys = [[0, 1], [1, 2], [5]]
    perf, mui = cell_replicates(correct, keys, 10, idx)
    assert perf == pytest.approx([100 * 2 / 3, 100.0])
    # union of items {0, 1}: {0, 1, 2} -> 30%; item {2}: {5} -> 10%
    assert mui == pytest.approx([30.0, 10.0])
    with pytest.raises(ValueError, match="must count the same items"):
        cell_replicates(correct[:2], keys, 10, idx)
    with pytest.raises(ValueError, match="n >= 2"):
        item_boot_indices(1)


def test_index_draws_are_the_same_for_every_model():
    assert np.array_equal(item_boot_indices(24, 50, seed=3), item_boot_indices(24, 50, seed=3))


def _cell(model, task, correct, keys, n_neurons, ids):
    idx = item_boot_indices(len(correct), 400, seed=0)
    perf_boot, mui_boot = cell_replicates(correct, keys, n_neurons, idx)
    union = set().union(*map(set, keys))
    return {
        "model": model,
        "task": task,
        "performance": 100 * float(np.mean(correct)),
        "mui": 100 * len(union) / n_neurons,
        "item_ids": ids,
        "perf_boot": perf_boot,
        "mui_boot": mui_boot,
    }


def _grid(large_correct_p: float, large_keys_per_item: int, seed: int = 0):
    """Two benchmarks x 40 items. The small model: half right, 30 private key neurons an item out
    of 1000. The large model: right with ``large_correct_p``, ``large_keys_per_item`` an item out of
    1000 (MUI is a share, so both use the same denominator here)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("arc_challenge", "mmlu"):
        ids = [f"{task}-{i}" for i in range(40)]
        small_keys = [list(rng.choice(1000, 30, replace=False)) for _ in ids]
        large_keys = [list(rng.choice(1000, large_keys_per_item, replace=False)) for _ in ids]
        rows.append(_cell(SMALL, task, rng.random(40) < 0.5, small_keys, 1000, ids))
        rows.append(_cell(LARGE, task, rng.random(40) < large_correct_p, large_keys, 1000, ids))
    return rows


def test_the_law_s_prediction_is_supported_when_the_larger_model_is_better_and_sparser():
    claims = {c.id: c for c in size_pair_claims(_grid(0.95, 3), SMALL, LARGE)}
    for c in claims.values():
        check_consistent(c)
    assert claims["pair.larger_scores_higher"].verdict == "supported"
    assert claims["pair.larger_lower_mui"].verdict == "supported"
    assert claims["pair.larger_lower_mui"].ours < 0 < claims["pair.larger_scores_higher"].ours
    assert SMALL in claims["pair.larger_lower_mui"].rests_on


def test_a_larger_model_with_more_key_neurons_contradicts_the_mui_claim():
    claims = {c.id: c for c in size_pair_claims(_grid(0.5, 80), SMALL, LARGE)}
    assert claims["pair.larger_lower_mui"].verdict == "contradicted"
    # equal accuracy in distribution: the performance difference is not supported
    assert claims["pair.larger_scores_higher"].verdict != "supported"


def test_the_pair_is_not_testable_without_replicates_or_on_different_items():
    grid = _grid(0.95, 3)
    no_reps = [{k: v for k, v in r.items() if k not in ("mui_boot", "perf_boot")} for r in grid]
    for c in size_pair_claims(no_reps, SMALL, LARGE):
        assert c.verdict == "not testable here" and "replicates" in c.why
    other = [dict(r, item_ids=r["item_ids"][::-1]) if r["model"] == LARGE else r for r in grid]
    for c in size_pair_claims(other, SMALL, LARGE):
        assert c.verdict == "not testable here" and "different items" in c.why
    for c in size_pair_claims(grid, SMALL, "real/absent"):
        assert c.verdict == "not testable here" and "no benchmark" in c.why


def test_one_right_answer_in_six_does_not_decide_the_performance_difference():
    """Seen on the real models (6 ARC items, one right against none): a third of the resamples miss
    the one item and differ by exactly 0, so the interval's upper edge is 0 and nothing is
    decided; centring those replicates on the observed mean would have moved it below 0."""
    ids = [f"i{k}" for k in range(6)]
    keys = [[k] for k in range(6)]
    grid = [
        _cell(SMALL, "arc_challenge", [False] * 6, keys, 100, ids),
        _cell(LARGE, "arc_challenge", [True] + [False] * 5, keys, 100, ids),
    ]
    c = {x.id: x for x in size_pair_claims(grid, SMALL, LARGE)}["pair.larger_scores_higher"]
    assert c.ours == pytest.approx(100 / 6) and c.ci_low == 0.0
    assert c.verdict == "inconclusive"
