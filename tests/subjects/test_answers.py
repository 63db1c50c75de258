"""Answers: accuracy with its Wilson interval (hand-computed), chance, counts and the summary a
notebook records."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kit.data.items import Item
from kit.subjects import Answers, chance_of


def _answers(correct, failed=None, truncated=None, chance=0.25):
    items = [Item(str(i), "q", choices=("a", "b", "c", "d"), label=0) for i in range(len(correct))]
    return Answers(
        "arc_challenge", items, ["A"] * len(items), np.array(correct), failed, truncated, chance
    )


def test_accuracy_and_wilson_interval_by_hand():
    ans = _answers([True] * 12 + [False] * 38)
    assert ans.accuracy == pytest.approx(0.24) and ans.n_correct == 12 and ans.n == 50
    # Wilson, z = 1.959964: centre (p + z^2/2n) / (1 + z^2/n), half z sqrt(p(1-p)/n + z^2/4n^2) / (1
    # + z^2/n)
    z, p, n = 1.959963984540054, 0.24, 50
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert ans.interval == pytest.approx((centre - half, centre + half))
    assert ans.interval == pytest.approx((0.1430, 0.3741), abs=1e-4)


def test_counts_summary_and_line():
    ans = _answers(
        [True, False, False, False],
        failed=[False, True, True, False],
        truncated=[False, False, True, False],
    )
    s = ans.summary()
    assert (s["n"], s["n_correct"], s["parse_failures"], s["truncated"], s["chance"]) == (
        4,
        1,
        2,
        1,
        0.25,
    )
    json.dumps(s)  # results.json takes it as is
    assert (
        ans.describe().startswith("accuracy 0.250 [")
        and "parse failures 2/4, truncated 1/4" in ans.describe()
    )
    unknown = _answers([True, False])
    assert unknown.n_parse_failed is None and "parse failures unknown" in unknown.describe()
    sub = ans.subset([1, 2])
    assert sub.parse_failed.tolist() == [True, True] and sub.n == 2 and sub.chance == 0.25


def test_bad_answers_are_refused():
    with pytest.raises(ValueError, match="parse_failed has 1 entries for 2 items"):
        _answers([True, False], failed=[True])
    with pytest.raises(ValueError, match="allowed: generate, loglik-letter, loglik-text"):
        Answers("x", [], [], np.zeros(0, bool), scoring="vote")


def test_chance_is_the_mean_of_one_over_options_and_none_for_free_form():
    mc = [
        Item("a", "q", choices=("x", "y"), label=0),
        Item("b", "q", choices=("x", "y", "z", "w"), label=1),
    ]
    assert chance_of(mc) == pytest.approx((1 / 2 + 1 / 4) / 2)
    assert chance_of([Item("c", "q", answer="3")]) is None and chance_of([]) is None
