"""kit.models.leak.leak_of: the leak (injected minus fresh accuracy) of one model's letter
scores."""

import numpy as np
import pytest

from kit.models.leak import LetterScores, leak_of


def _scores(greedy):
    g = np.asarray(greedy, bool)
    return LetterScores(greedy=g, letter=g.copy(), is_letter=np.ones_like(g))


def test_leak_of_is_the_accuracy_difference_with_an_interval():
    # it imported mean_diff_ci from kit.core.claims, which has none: every call raised ImportError
    injected = _scores([1, 1, 1, 0, 1, 1, 1, 1])
    fresh = _scores([0, 1, 0, 0, 1, 0, 0, 1])
    leak = leak_of("m", injected, fresh, n_boot=200, seed=0)
    assert (leak.injected, leak.fresh) == (0.875, 0.375)
    assert leak.leak == pytest.approx(0.5)
    assert leak.low <= leak.leak <= leak.high
    assert (leak.n_injected, leak.n_fresh, leak.letter_share) == (8, 8, 1.0)


def test_leak_of_rejects_an_unknown_scorer():
    with pytest.raises(ValueError, match="scorer"):
        leak_of("m", _scores([1, 0]), _scores([0, 1]), scorer="logprob")
