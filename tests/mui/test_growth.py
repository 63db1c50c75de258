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


def test_mixed_and_single_and_the_size_the_claim_reads():
    import pandas as pd

    # n = 4: every subset is the whole pool (no variation); n = 2: two subsets a side that differ
    rows = [("mixed", 4, 0, 9.0), ("a", 4, 0, 6.0), ("b", 4, 0, 8.0)]
    rows += [("mixed", 2, r, 7.0 + r) for r in range(2)]
    rows += [("a", 2, r, 4.0 + r) for r in range(2)] + [("b", 2, r, 6.0 + 2 * r) for r in range(2)]
    curves = pd.DataFrame(rows, columns=["pool", "n", "repeat", "mui"])
    mixed, single = growth.mixed_and_single(curves, 2)
    assert mixed.tolist() == [7.0, 8.0] and single.tolist() == [5.0, 6.5]  # mean of a and b
    assert growth.largest_varying_n(curves) == 2
    assert growth.largest_varying_n(curves[curves.n == 4]) == 4, "none varies: the largest n"
