"""Consensus of neuron rankings (seed 004 section 3.2): overlap of top-s sets (eq. 7),
AvgOverlap (eq. 8), the Borda aggregate and NeuronVote (eq. 9), pairwise overlap matrices.

``rankings``: method -> Int[ndarray, "n_neurons"] (best first).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd


def _top_sets(rankings: Mapping[str, Sequence[int] | np.ndarray], s: int) -> dict[str, set[int]]:
    if not isinstance(s, (int, np.integer)) or s < 1:
        raise ValueError(f"s (number of top neurons) must be a positive integer, got {s!r}")
    if len(rankings) < 2:
        raise ValueError(f"need at least two methods' rankings, got {list(rankings)}")
    out = {}
    for m, r in rankings.items():
        r = np.asarray(r).ravel()
        if r.shape[0] < s:
            raise ValueError(f"ranking of {m!r} has {r.shape[0]} neurons, fewer than s={s}")
        top = r[:s]
        if len(set(top.tolist())) != s:
            raise ValueError(f"ranking of {m!r} repeats neurons in its top {s}")
        out[m] = set(int(v) for v in top)
    return out


def overlap(a: Iterable[int], b: Iterable[int]) -> float:
    """Eq. 7: intersection over union of two neuron sets."""
    a, b = set(a), set(b)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _voters_for(method: str, rankings: Mapping, voters: Sequence[str] | None) -> list[str]:
    pool = list(rankings) if voters is None else list(voters)
    unknown = [v for v in pool if v not in rankings]
    if unknown:
        raise ValueError(f"voters {unknown} have no ranking; rankings given: {list(rankings)}")
    others = [v for v in pool if v != method]
    if not others:
        raise ValueError(
            f"method {method!r} has no other voter to be compared with (voters={pool})"
        )
    return others


def avg_overlap(
    rankings: Mapping[str, Sequence[int]], s: int, voters: Sequence[str] | None = None
) -> dict[str, float]:
    """Eq. 8: AvgOverlap_m = mean over the voters v != m of o(S_m, S_v).

    ``rankings``: method -> ranking (best first). ``voters``: which methods form the reference
    (default: all given); a method outside ``voters`` (e.g. Random, or a new method under test)
    is still scored against all of them. Returns method -> score in [0, 1].
    """
    tops = _top_sets(rankings, s)
    return {
        m: float(np.mean([overlap(tops[m], tops[v]) for v in _voters_for(m, rankings, voters)]))
        for m in rankings
    }


def borda_top(
    rankings: Mapping[str, Sequence[int]], s: int, voters: Sequence[str] | None = None
) -> list[int]:
    """Eq. 9: the top-``s`` neurons of the Borda aggregate of ``voters`` (default all).

    Each voter gives its neuron at 0-based position i of its top-s list ``s - i`` points.
    Tie rule (documented, deterministic, independent of any method under test): more points
    first; then the neuron named by more voters; then the smaller neuron index.
    """
    voters = list(rankings) if voters is None else list(voters)
    points: dict[int, int] = {}
    votes: dict[int, int] = {}
    for v in voters:
        r = np.asarray(rankings[v]).ravel()
        if r.shape[0] < s:
            raise ValueError(f"ranking of {v!r} has {r.shape[0]} neurons, fewer than s={s}")
        for i, neuron in enumerate(r[:s].tolist()):
            points[neuron] = points.get(neuron, 0) + (s - i)
            votes[neuron] = votes.get(neuron, 0) + 1
    ordered = sorted(points, key=lambda nrn: (-points[nrn], -votes[nrn], nrn))
    return ordered[:s]


def neuron_vote(
    rankings: Mapping[str, Sequence[int]], s: int, voters: Sequence[str] | None = None
) -> dict[str, float]:
    """NeuronVote_m = o(S_m, S_best(-m)), S_best(-m) the Borda top-s of the voters v != m
    (leave-one-out: a method never votes for itself). Returns method -> score in [0, 1]."""
    tops = _top_sets(rankings, s)
    return {
        m: overlap(tops[m], borda_top(rankings, s, _voters_for(m, rankings, voters)))
        for m in rankings
    }


def pairwise_overlap(
    rankings: Mapping[str, Sequence[int] | np.ndarray], s: int | Sequence[int]
) -> pd.DataFrame:
    """Method x method matrix of o(S_m1, S_m2) (eq. 7); a list of ``s`` averages the matrices
    (the paper's Figure 1 averages s = 10..50). Diagonal is 1."""
    s_list = [s] if isinstance(s, (int, np.integer)) else list(s)
    names = list(rankings)
    mats = []
    for s_ in s_list:
        tops = _top_sets(rankings, s_)
        mats.append([[overlap(tops[a], tops[b]) for b in names] for a in names])
    return pd.DataFrame(np.mean(mats, axis=0), index=names, columns=names)
