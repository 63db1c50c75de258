"""Fixtures shared by the seed 000 tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def clustered_grid() -> pd.DataFrame:
    """A law grid of 8 models x 6 tasks. Each model has one performance level and its own MUI
    offset on every task (a model effect the law does not explain), plus small per-cell noise: the
    points are not independent, the models are."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(8):
        perf = 10.0 + 10 * k
        offset = rng.normal(0, 3.0)
        for t in range(6):
            mui = 20 - 2 * np.log(perf) + offset + t + rng.normal(0, 0.2)
            rows.append({"model": f"m{k}", "task": f"t{t}", "performance": perf, "mui": mui})
    return pd.DataFrame(rows)
