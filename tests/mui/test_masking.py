"""Tests of kit.mui.masking: §3.8's accuracy drops."""

from __future__ import annotations

import pandas as pd

from kit.mui import masking


def test_masking_summary():
    curve = pd.DataFrame([
        {"k": 0, "kind": "key", "set": "A", "accuracy": 80.0}, {"k": 0, "kind": "random", "set": "A", "accuracy": 80.0},
        {"k": 0, "kind": "key", "set": "B", "accuracy": 60.0}, {"k": 0, "kind": "random", "set": "B", "accuracy": 60.0},
        {"k": 4, "kind": "key", "set": "A", "accuracy": 20.0}, {"k": 4, "kind": "random", "set": "A", "accuracy": 78.0},
        {"k": 4, "kind": "key", "set": "B", "accuracy": 55.0}, {"k": 4, "kind": "random", "set": "B", "accuracy": 60.0},
    ])
    s = masking.masking_summary(curve, "A", "B")
    assert s == {"k_max": 4, "drop_key_a": 60.0, "drop_random_a": 2.0, "drop_key_b": 5.0, "drop_random_b": 0.0}
