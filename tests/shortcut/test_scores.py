"""Tests of kit.shortcut.scores: the comparative (eq. 3) and causal (eq. 4) scores and their
combination, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kit.models.load import random_model
from kit.shortcut import patching as pt
from kit.shortcut import scores


def test_comparative_score_hand_computed_and_streaming():
    con = torch.tensor([[[1.0, 2.0]], [[3.0, 4.0]], [[0.0, 0.0]]])  # [prompt=3, layer=1, d_mlp=2]
    un = torch.tensor([[[0.0, 4.0]], [[0.0, 4.0]], [[1.0, 0.0]]])
    # diffs: neuron 0: 1, 3, -1 -> sqrt(11/3); neuron 1: -2, 0, 0 -> sqrt(4/3)
    want = torch.tensor([[math.sqrt(11 / 3), math.sqrt(4 / 3)]])
    assert torch.allclose(scores.comparative_scores(con, un), want), (
        "eq. 3 is the RMS over prompts of the difference"
    )
    assert torch.allclose(scores.comparative_scores(con, un, chunk=1), want), (
        "streaming over chunks changed the result"
    )
    assert torch.allclose(scores.comparative_scores(un, con), want), (
        "the score is symmetric in the two models"
    )
    with pytest.raises(ValueError, match="shape"):
        scores.comparative_scores(con, un[:, :, :1])
    with pytest.raises(ValueError, match="no prompts"):
        scores.ComparativeAccumulator().scores()


def test_causal_score_hand_computed():
    # contaminated drops 0.8 -> 0.3 under the patch, uncontaminated 0.6 -> 0.55
    # 1.45
    assert scores.causal_score(0.8, 0.3, 0.6, 0.55) == pytest.approx(0.8 - 0.3 + 1 - (0.6 - 0.55))
    assert scores.causal_score(0.5, 0.5, 0.4, 0.4) == pytest.approx(1.0), (
        "a patch that changes nothing scores 1"
    )
    assert scores.causal_score(0.5, 0.5, 0.9, 0.1) == pytest.approx(0.2), (
        "hurting the clean model must lower C"
    )
    arr = scores.causal_score(
        np.array([1.0, 0.5]), np.array([0.0, 0.5]), np.array([0.2, 0.2]), np.array([0.2, 0.0])
    )
    assert np.allclose(arr, [2.0, 0.8])
    with pytest.raises(ValueError, match="acc_con.*fractions"):
        scores.causal_score(80.0, 30.0, 60.0, 55.0)


def test_neuron_groups_are_adjacent_and_cover_each_layer():
    groups = scores.neuron_groups(2, 10, 4)
    assert [len(g) for g in groups] == [4, 4, 2, 4, 4, 2]
    assert groups[1] == [(0, 4), (0, 5), (0, 6), (0, 7)] and groups[3][0] == (1, 0)
    assert scores.neuron_groups(3, 10, 5, layers=[2]) == [
        [(2, i) for i in range(5)],
        [(2, i) for i in range(5, 10)],
    ]


def test_combine_scores_and_top_neurons_by_hand():
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 1.9, 1.9], [1.2, 1.2, float("nan")]])
    combined = scores.combine_scores(comp, caus, "rank_mean", causal_weight=0.5)
    # pct ranks comp: 0.1->2/6, 5->1, .2->3/6, 3->5/6, 0->1/6, .3->4/6
    # causal (nan -> 0): 1.0->1/5, 1.9->4.5/5, 1.2->2.5/5
    want = 0.5 * torch.tensor(
        [[1 / 5, 4.5 / 5, 4.5 / 5], [2.5 / 5, 2.5 / 5, 0]]
    ) + 0.5 * torch.tensor([[2 / 6, 1, 3 / 6], [5 / 6, 1 / 6, 4 / 6]])
    assert torch.allclose(combined, want)
    assert scores.top_neurons(combined, 3) == [(0, 1), (0, 2), (1, 0)]
    assert scores.top_neurons(scores.combine_scores(comp, None), 2) == [(0, 1), (1, 0)]
    with pytest.raises(ValueError, match="n=7"):
        scores.top_neurons(combined, 7)


def test_combine_scores_veto_by_hand():
    """Comparative order, except neurons of groups with C < 1 go last; unscored (NaN) stay."""
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 0.9, 1.9], [0.5, 1.2, float("nan")]])
    veto = scores.combine_scores(comp, caus)
    # kept by comparative: (0,2) .2, (1,2) .3, (0,0) .1, (1,1) 0 -> then vetoed: (0,1) 5.0, (1,0)
    # 3.0
    assert scores.top_neurons(veto, 6) == [(1, 2), (0, 2), (0, 0), (1, 1), (0, 1), (1, 0)]
    with pytest.raises(ValueError, match="rule='max'.*veto, rank_mean, sum"):
        scores.combine_scores(comp, caus, "max")


def test_combine_scores_sum_is_the_public_codes_rule_by_hand():
    """Public code: change_scores + (a_con - a_con_p) - (a_un - a_un_p) = S + C - 1, raw units."""
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 0.9, 1.9], [0.5, 1.2, float("nan")]])
    got = scores.combine_scores(comp, caus, "sum")
    want = torch.tensor([[0.1, 4.9, 1.1], [2.5, 0.2, 0.3]])  # NaN (unscored): C - 1 taken as 0
    assert torch.allclose(got, want), "sum rule is S + C - 1 (not percentile ranks)"
    assert scores.top_neurons(got, 3) == [(0, 1), (1, 0), (0, 2)]
    # public code's two causal terms with hand accuracies: con 0.8 -> 0.3, un 0.6 -> 0.55
    c = scores.causal_score(0.8, 0.3, 0.6, 0.55)
    assert float(
        scores.combine_scores(torch.tensor([[2.0]]), torch.tensor([[c]]), "sum")
    ) == pytest.approx(2.0 + 0.5 - 0.05)


def test_default_n_patched_scales_like_the_paper():
    assert scores.default_n_patched(32, 11008) == 5000
    assert scores.default_n_patched(4, 512) == round(5000 / 352256 * 2048)  # 29 neurons, 1.42%


def test_neuron_acts_last_token_and_completion_rows():
    m = random_model("tiny-gelu", seed=0)
    tokens = torch.randint(4, 97, (2, 6))
    lengths = torch.tensor([4, 3])
    _, cache = m.run_with_cache(tokens)
    last = scores.neuron_acts(m, tokens, lengths)
    assert last.shape == (2, 2, 64)
    assert torch.allclose(last[1, 1], cache["blocks.1.mlp.hook_post"][1, 2]), (
        "last prompt token is lengths - 1"
    )
    comp = scores.neuron_acts(m, tokens, lengths, "completion", torch.tensor([2, 1]))
    # comparative over M_con's greedy completion: both models read on the same generated sequence
    other = random_model("tiny-gelu", seed=1)
    gen = pt.generate(m, tokens, 2, lengths=lengths)
    want = scores.comparative_scores(
        scores.neuron_acts(m, gen, lengths, "completion", torch.tensor([2, 2])),
        scores.neuron_acts(other, gen, lengths, "completion", torch.tensor([2, 2])),
    )
    got = scores.comparative_scores_of_models(
        m, other, [(tokens, lengths)], "completion", max_new_tokens=2
    )
    assert torch.allclose(got, want, atol=1e-6)
    assert not torch.allclose(
        got, scores.comparative_scores_of_models(m, other, [(tokens, lengths)])
    )
    with pytest.raises(ValueError, match="position='all'.*last, completion"):
        scores.comparative_scores_of_models(m, other, [(tokens, lengths)], "all")
    assert comp.shape == (3, 2, 64)
    assert torch.allclose(comp[2, 0], cache["blocks.0.mlp.hook_post"][1, 3])
    with pytest.raises(ValueError, match="position"):
        scores.neuron_acts(m, tokens, lengths, "first")
