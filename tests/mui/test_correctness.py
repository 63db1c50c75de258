"""Tests of kit.mui.correctness: §3.7's equal counts within tasks."""

from __future__ import annotations

import numpy as np
import torch

import kit.mui.metric as mui
from kit.mui import correctness


def test_correct_vs_incorrect_equal_counts_within_tasks(monkeypatch):
    calls = []

    def fake(model, items, responses, per_sample=False, **kw):
        calls.append(list(items))
        masks = torch.zeros(len(items), 1, 10, dtype=torch.bool)
        for i, it in enumerate(items):
            masks[i, 0, : it % 10 + 1] = True
        return mui.MUIResult(
            mui=10.0,
            mask=masks.any(0),
            n_samples=len(items),
            per_sample=[mui.mui_of_mask(m) for m in masks],
            sample_masks=masks,
        )

    monkeypatch.setattr(mui, "utilization_for_items", fake)
    items = list(range(12))
    correct = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    strata = ["x"] * 6 + ["y"] * 6  # x: 5 correct / 1 wrong; y: 0 correct / 6 wrong
    out = correctness.correct_vs_incorrect(None, items, [""] * 12, correct, strata=strata)
    assert out["n_each"] == 1, "only task x has both sides: one of each"
    assert all(i < 6 for c in calls for i in c), (
        "task y (no correct answers) must not enter either side"
    )
    assert "mannwhitney_p" not in out, "with one sample a side there is no test"
