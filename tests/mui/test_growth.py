"""Tests of kit.mui.growth: the mixed pool of §3.6."""

from __future__ import annotations

from kit.mui import growth


def test_mixed_pool_draws_evenly():
    pools = {"a": list(range(10)), "b": list(range(100, 110)), "c": list(range(200, 210))}
    mixed = growth.mixed_pool(pools, 9)
    assert sorted(x // 100 for x in mixed) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
