"""Tests of kit.mui.methods: methods of the B.6 grid that coincide by construction."""

from __future__ import annotations

import pandas as pd

from kit.mui import methods


def test_coincident_methods_are_found_by_construction():
    grid = pd.DataFrame(
        {
            "method": ["score/topk", "score/top_pct", "score_sum/topk", "score/topscore@0.2"],
            "d_mlp": 512,
            "max_response_tokens": 1,
            "model": "m",
            "task": "t",
            "mui": 1.0,
        }
    )
    assert methods.coincident_methods(grid) == {
        "score/top_pct": "score/topk",
        "score_sum/topk": "score/topk",
    }
    assert methods.coincident_methods(grid.assign(max_response_tokens=3)) == {
        "score/top_pct": "score/topk"
    }
