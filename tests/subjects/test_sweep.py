"""Rows per model (kit.subjects.sweep): notebooks 01's and 02's per-model measurements computed here
or as one job per model on the inline, local and Ray engines give the same rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kit.core.paths import cache_dir
from kit.mui import law, measurements, methods
from kit.subjects import sweep


def test_rows_travel_as_json_exactly():
    rows = [
        {"model": "m", "x": np.float32(0.1), "n": np.int64(3), "nan": math.nan, "none": None},
        {"model": "NaN-free name", "x": 1e-300, "n": 0, "nan": 2.5, "none": "a"},
    ]
    encoded = sweep.encode_rows(rows)
    from kit.core.jobs.spec import canonical_json

    canonical_json(encoded)  # JSON-able: no numpy scalars, no NaN
    back = sweep.decode_rows(encoded)
    assert math.isnan(back[0]["nan"]) and back[0]["none"] is None and back[1]["nan"] == 2.5
    assert back[0]["x"] == float(np.float32(0.1)) and type(back[0]["n"]) is int
    assert back[1] == rows[1] and list(back[0]) == list(rows[0]), "values and column order"


def test_compute_must_be_importable_for_jobs():
    def local_fn(subject, name):
        return []

    with pytest.raises(ValueError, match="top-level function"):
        sweep.rows_per_model(local_fn, ["twin/llama"], {}, {}, jobs={"engine": "inline"})


def _grids(jobs, all_three: bool):
    """Notebook 01's grid, and when ``all_three``, 02's measurements and 01's B.6 grid."""
    kw = dict(world="micro", device="cpu", seed=0, max_new_tokens=4, batch_size=2)
    grid = law.evaluate_grid(
        ["twin/llama", "twin/qwen2"], ["arc_challenge", "gsm8k"], 2, 0, jobs=jobs, **kw
    )
    if not all_three:
        return (grid,)
    meas = measurements.measure(
        ["twin/llama", "twin/qwen2"], ["arc_challenge"], ["test"], n_items=2, jobs=jobs, **kw
    )
    b6 = methods.method_grid(
        ["twin/llama"],
        ["arc_challenge"],
        2,
        "micro",
        methods=[("score", "topk"), ("activate", "topscore", 0.2)],
        batch_size=2,
        max_new_tokens=4,
        jobs=jobs,
    )
    return grid, meas, b6


@pytest.mark.slow
def test_per_model_jobs_give_the_rows_computed_here_on_every_engine(
    tmp_path, monkeypatch, local_ray
):
    """Each engine in a cache of its own (answers and key neurons are cached per item, so each
    computes them), the random twins shared. The three functions go through the inline engine's
    jobs (the JSON round trip of their arguments and rows); 01's grid through every engine."""
    twins = cache_dir() / "twins"
    out = {}
    for label, jobs in (
        ("here", None),
        ("inline", {"engine": "inline"}),
        ("local", {"engine": "local", "max_workers": 2}),
        ("ray", {"engine": "ray"}),
    ):
        root = tmp_path / label
        root.mkdir()
        if twins.is_dir():
            (root / "twins").symlink_to(twins)
        monkeypatch.setenv("KIT_CACHE_DIR", str(root))  # workers and Ray tasks inherit it
        out[label] = _grids(jobs, all_three=label in ("here", "inline"))
    grid, meas, b6 = out["here"]
    assert list(grid["model"]) == ["twin/llama"] * 2 + ["twin/qwen2"] * 2
    assert grid["fresh"].isna().all() and len(meas) == 2 and len(b6) == 2
    assert (grid["mui"] > 0).all() and (b6["mui"] > 0).all()
    for label in ("inline", "local", "ray"):
        for ours, theirs in zip(out["here"], out[label]):
            pd.testing.assert_frame_equal(ours, theirs, check_exact=True, obj=label)
