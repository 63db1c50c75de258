"""Coverage at equal size (kit.cg.size_control): the nulls of the two coverage claims."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import size_control as sc
from kit.cg.claims import coverage_claim, swap_claim


def test_token_prefix_by_hand():
    lengths = np.array([5, 3, 4, 10])
    # 4 + 5 = 9 reaches 9
    assert sc.token_prefix(lengths, np.array([2, 0, 1, 3]), 9).tolist() == [
        0,
        2,
    ]
    # 4 + 5 + 3 = 12
    assert sc.token_prefix(lengths, np.array([2, 0, 1, 3]), 10).tolist() == [
        0,
        1,
        2,
    ]
    assert sc.token_prefix(lengths, np.array([3, 0]), 1).tolist() == [3]
    assert sc.token_prefix(lengths, np.array([1, 2]), 100).tolist() == [1, 2], (
        "fewer tokens: all of the order"
    )
    with pytest.raises(ValueError, match="at least 1 token"):
        sc.token_prefix(lengths, np.array([0]), 0)


def test_missing_mask_by_hand():
    acts = np.array([[1.0, 0.0, 0.0], [0.5, 0.0, 2.0]])
    assert sc.missing_mask(acts).tolist() == [False, True, False]
    assert sc.missing_mask(np.zeros((2, 3))).all(), "nothing read: every concept is missing"
    # eq. 2 is relative: 1e-9 against a mean concept mass of ~0.33 is below eps 1e-5
    assert sc.missing_mask(np.array([[1.0, 1e-9, 0.0]])).tolist() == [False, True, True]


def _texts(n, d, concepts, rng, per=3):
    """``n`` items each firing ``per`` concepts drawn from ``concepts`` (all 10 tokens long)."""
    rows = np.zeros((n, d))
    for i in range(n):
        rows[i, rng.choice(concepts, per, replace=False)] = 1.0
    return sp.csr_matrix(rows), np.full(n, 10)


def test_coverage_vs_text_null_equivalent_is_inconclusive_and_a_narrow_suite_is_supported():
    rng = np.random.default_rng(0)
    d = 200
    text, text_len = _texts(600, d, np.arange(d), rng)
    live = np.ones(d, dtype=bool)
    # null-equivalent: the suite's items come from the same distribution as the general text
    same = {b: _texts(150, d, np.arange(d), rng) for b in ("b1", "b2")}
    cov = sc.coverage_vs_text(
        {b: a for b, (a, _) in same.items()},
        {b: n for b, (_, n) in same.items()},
        text,
        text_len,
        live,
        draws=100,
        seed=1,
        text_source="corpus",
    )
    assert cov.tokens == int(300 * 10 / 3) and cov.suite.shape == cov.text.shape == (100,)
    c = coverage_claim(cov, "test")
    assert c.verdict == "inconclusive", c.why
    # decided: the benchmarks only ever use the first half of the dictionary
    narrow = {b: _texts(150, d, np.arange(d // 2), rng) for b in ("b1", "b2")}
    cov = sc.coverage_vs_text(
        {b: a for b, (a, _) in narrow.items()},
        {b: n for b, (_, n) in narrow.items()},
        text,
        text_len,
        live,
        draws=100,
        seed=1,
    )
    c = coverage_claim(cov, "test")
    assert c.verdict == "supported" and c.ours >= 0.5 and c.margin > 0, c.why
    assert cov.p_value == pytest.approx(1 / 101), "no text draw misses as much as the suite"
    # and a suite broader than the text is contradicted
    broad_text, broad_len = _texts(600, d, np.arange(d // 2), rng)
    cov = sc.coverage_vs_text(
        {b: a for b, (a, _) in same.items()},
        {b: n for b, (_, n) in same.items()},
        broad_text,
        broad_len,
        live,
        draws=100,
        seed=1,
    )
    assert coverage_claim(cov, "test").verdict == "contradicted"


def test_coverage_vs_text_refuses_mismatched_inputs():
    acts, n = sp.csr_matrix(np.eye(3)), np.ones(3)
    with pytest.raises(ValueError, match="3 items but 2 token counts"):
        sc.coverage_vs_text({"b": acts}, {"b": np.ones(2)}, acts, n, np.ones(3, bool))
    with pytest.raises(ValueError, match="live"):
        sc.coverage_vs_text({"b": acts}, {"b": n}, acts, n, np.zeros(3, bool))
    with pytest.raises(ValueError, match="draws"):
        sc.coverage_vs_text({"b": acts}, {"b": n}, acts, n, np.ones(3, bool), draws=1)
    assert coverage_claim(None, "t", "no text").verdict == "not testable here"


def test_missing_at_equal_size_cuts_every_benchmark_to_the_smallest():
    rng = np.random.default_rng(0)
    small, n_small = _texts(10, 50, np.arange(50), rng)
    big, n_big = _texts(100, 50, np.arange(50), rng)
    out = sc.missing_at_equal_size(
        {"small": small, "big": big}, {"small": n_small, "big": n_big}, draws=10
    )
    # the same content at the same size misses about the same share; whole, the big one would miss
    # none
    assert abs(out["small"] - out["big"]) < 0.15
    assert sc.missing_mask(big).mean() < out["big"]


def test_sae_swap_size_alone_does_not_pass_but_agreement_in_content_does():
    """Benchmarks that differ only in size rank alike under any two SAEs at full size; at equal size
    that agreement is gone. Benchmarks that differ in how many concepts they use keep it."""
    rng = np.random.default_rng(0)
    d, names = 120, [f"b{i}" for i in range(6)]
    sizes = [20, 40, 60, 90, 130, 180]
    acts_a, acts_b, lengths = {}, {}, {}
    # same content, different sizes; SAE B sees other random concepts
    for b, n in zip(names, sizes):
        acts_a[b], lengths[b] = _texts(n, d, np.arange(d), rng)
        acts_b[b], _ = _texts(n, d, np.arange(d), rng)
    swap = sc.sae_swap(acts_a, acts_b, lengths, draws=5, seed=0)
    assert swap.rho_full > 0.9 and swap.rho_size_a < -0.9, "at full size, size alone ranks them"
    assert swap.null.size == 720, "6 benchmarks: all orders"
    assert swap_claim(swap, "t").verdict == "inconclusive"
    # content: benchmark b uses k concepts
    for b, n, k in zip(names, sizes, [10, 20, 40, 60, 90, 120]):
        acts_a[b], lengths[b] = _texts(n, d, np.arange(k), rng)
        acts_b[b], _ = _texts(n, d, np.arange(k), rng)
    swap = sc.sae_swap(acts_a, acts_b, lengths, draws=5, seed=0)
    c = swap_claim(swap, "t")
    assert c.verdict == "supported" and swap.rho > 0.9, c.why
    with pytest.raises(ValueError, match=">= 3 benchmarks"):
        sc.sae_swap({"a": acts_a["b0"]}, {"a": acts_b["b0"]}, {"a": lengths["b0"]})
