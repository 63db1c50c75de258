"""Tests of kit.mui.growth: the mixed pool of §3.6."""

from __future__ import annotations

from kit.mui import growth


def test_mixed_pool_draws_evenly():
    pools = {"a": list(range(10)), "b": list(range(100, 110)), "c": list(range(200, 210))}
    mixed = growth.mixed_pool(pools, 9)
    assert sorted(x // 100 for x in mixed) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_subsets_at_one_size_are_disjoint():
    import random

    rng = random.Random(0)
    subs = growth.disjoint_subsets(100, 20, 5, rng)
    assert len(subs) == 5 and all(len(s) == 20 for s in subs)
    flat = [i for s in subs for i in s]
    assert len(set(flat)) == 100, "no item in two subsets"
    # fewer fit than asked: as many as the pool holds, still disjoint
    subs = growth.disjoint_subsets(100, 40, 5, rng)
    assert len(subs) == 2 and not set(subs[0]) & set(subs[1])
    assert (
        growth.disjoint_subsets(12, 12, 3, rng)[0] != []
        and len(growth.disjoint_subsets(12, 12, 3, rng)) == 1
    )
    import pytest

    with pytest.raises(ValueError, match="repeats"):
        growth.disjoint_subsets(10, 2, 0, rng)
