"""A2 (notebook 03, section 11): the format claims on hand-computed per-item arrays."""

from __future__ import annotations

import numpy as np
import pytest

from kit.core.claims import check_consistent
from kit.shortcut import formats


def test_format_claims_hand_computed():
    """A2: a format costing Vanilla 30 points on 100 fresh items and the format model 0 is a +30
    advantage; TE lowering the format model's wrapped test score from 50% to 20% is a -30 Δacc."""

    def ones(k, n):
        return np.r_[np.ones(k), np.zeros(n - k)]

    fmt = {
        "fresh_plain": ones(40, 100),
        "fresh_format": ones(40, 100),
        "ori": ones(100, 200),
        "te": ones(40, 200),
        "ref": ones(40, 100),
        "plain": ones(80, 200),
    }
    van = {
        "fresh_plain": ones(40, 100),
        "fresh_format": ones(10, 100),
        "ori": ones(20, 200),
        "te": ones(20, 200),
        "ref": ones(40, 100),
        "plain": ones(80, 200),
    }
    out = {
        c.id: c
        for c in formats.format_claims(
            {"Vanilla": van, "+format train": fmt}, "+format train", "Vanilla", n_boot=300
        )
    }
    assert set(out) == {"a2.format_advantage[+format train]", "a2.format_te[+format train]"}
    for c in out.values():
        check_consistent(c)
    adv, te = out["a2.format_advantage[+format train]"], out["a2.format_te[+format train]"]
    assert adv.ours == pytest.approx(30.0) and te.ours == pytest.approx(-30.0)
    assert adv.verdict == te.verdict == "supported" and "-6.5" in str(te.paper_value)
    # no format effect on either row; TE RAISES the score 20 points
    same = dict(van, fresh_format=van["fresh_plain"])
    flat = formats.format_claims(
        {
            "Vanilla": same,
            "+format train": dict(fmt, fresh_format=fmt["fresh_plain"], te=ones(140, 200)),
        },
        "+format train",
        "Vanilla",
    )
    assert [(c.ours, c.verdict) for c in flat] == [
        (0.0, "inconclusive"),
        (pytest.approx(20.0), "contradicted"),
    ]
    with pytest.raises(ValueError, match="must be rows of per_item"):
        formats.format_claims({"Vanilla": van}, "+format train", "Vanilla")
