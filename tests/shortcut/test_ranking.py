"""Tests of kit.shortcut.ranking: the ranking rules, the best rule and its intervals, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from kit.shortcut import ranking, scores


def test_rule_specs_rerank_and_best_rule():
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    groups = [[(0, 0), (0, 1), (0, 2)], [(1, 0), (1, 1), (1, 2)]]

    def cs(score, m):
        return scores.CausalScores(groups, 1.0, 1.0, np.zeros(2), np.zeros(2), np.array(score), m)

    loc = ranking.Located(comp, cs([0.5, 1.5], "exact"), cs([1.5, 0.5], "teacher_forced"), comp, [])
    specs = ranking.rule_specs()
    assert (
        list(specs)[0] == "sum (exact)"
        and "comparative only" in specs
        and "causal only (exact)" in specs
    )
    veto = loc.rerank("veto (exact)")
    assert veto.rule == "veto (exact)" and veto.ranked[:3] == [(1, 0), (1, 2), (1, 1)], (
        "layer 0 vetoed (C < 1)"
    )
    assert loc.rerank("veto (teacher_forced)").ranked[:3] == [(0, 1), (0, 2), (0, 0)]
    assert torch.equal(
        loc.rerank("sum (exact)").combined,
        scores.combine_scores(comp, loc.causal_exact.per_neuron(2, 3), "sum"),
    )
    with pytest.raises(ValueError, match="rule 'max'.*allowed values"):
        loc.rerank("max")
    rules = pd.DataFrame(
        {"rule": ["sum (exact)", "veto (exact)", "comparative only"], "objective": [3.0, 5.0, 5.0]}
    )
    assert ranking.best_rule(rules) == "veto (exact)", "highest objective, first on ties"


def test_rule_intervals_by_hand():
    # 4 held-out items; row 0 unpatched, then rules A and B
    con = np.array([[1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]], float)  # drop: A 50 pts, B 25 pts
    un = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]], float)  # change: A 0, B -25 pts
    assert ranking.objective_items(con[0], con[1], un[0], un[1]) == 50.0
    assert ranking.objective_items(con[0], con[2], un[0], un[2]) == 0.0, "25 drop - |−25| change"
    rules = pd.DataFrame({"rule": ["A", "B"], "objective": [50.0, 0.0]})
    rules.attrs["items"] = {"con": con, "un": un}
    out = ranking.rule_intervals(rules, "A", n_boot=200, seed=0)
    a, b = out.set_index("rule").loc["A"], out.set_index("rule").loc["B"]
    assert a.vs_chosen == 0 and a.vs_chosen_low == 0 and a.vs_chosen_high == 0, (
        "the chosen rule vs itself"
    )
    assert (
        b.vs_chosen == -50.0
        and b.vs_chosen_low <= -50.0 <= b.vs_chosen_high
        and b.vs_chosen_high <= 0
    )
    with pytest.raises(ValueError, match="chosen='C'; allowed values: A, B"):
        ranking.rule_intervals(rules, "C")
    with pytest.raises(ValueError, match="attrs"):
        ranking.rule_intervals(pd.DataFrame({"rule": ["A"]}), "A")
