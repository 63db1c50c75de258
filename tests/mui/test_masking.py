"""Tests of kit.mui.masking: §3.8's accuracy drops."""

from __future__ import annotations

import pandas as pd

from kit.mui import masking


def test_masking_summary():
    curve = pd.DataFrame(
        [
            {"k": 0, "kind": "key", "set": "A", "accuracy": 80.0},
            {"k": 0, "kind": "random", "set": "A", "accuracy": 80.0},
            {"k": 0, "kind": "key", "set": "B", "accuracy": 60.0},
            {"k": 0, "kind": "random", "set": "B", "accuracy": 60.0},
            {"k": 4, "kind": "key", "set": "A", "accuracy": 20.0},
            {"k": 4, "kind": "random", "set": "A", "accuracy": 78.0},
            {"k": 4, "kind": "key", "set": "B", "accuracy": 55.0},
            {"k": 4, "kind": "random", "set": "B", "accuracy": 60.0},
        ]
    )
    s = masking.masking_summary(curve, "A", "B")
    assert s == {
        "k_max": 4,
        "drop_key_a": 60.0,
        "drop_random_a": 2.0,
        "drop_key_b": 5.0,
        "drop_random_b": 0.0,
        "acc_key_a": 20.0,
        "acc_random_a": 78.0,
        "acc_key_b": 55.0,
        "acc_random_b": 60.0,
    }


def test_rank_neurons_by_count_then_total_then_index():
    import torch

    # 2 layers x 3 neurons: counts rank first, the summed contribution breaks ties, then the index;
    # (1, 2) has count 0 and total <= 0: not a candidate at all
    counts = torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    total = torch.tensor([[0.5, 3.0, 0.1], [0.9, 0.0, -1.0]])
    assert masking.rank_neurons(counts, total) == [(0, 0), (1, 0), (0, 2), (0, 1)]
    # the dataset's key neurons are those with a positive count (the union of the samples' sets)
    assert int((counts > 0).sum()) == 3
