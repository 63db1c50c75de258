"""Tests of kit.mui.key_neurons: the paper's per-layer k and each threshold's key-neuron masks, by
hand."""

from __future__ import annotations

import torch

import kit.mui.key_neurons as kn

# one sample, two positions, two layers, four neurons
S = torch.tensor(
    [
        [
            [[5.0, 1.0, 0.0, 2.0], [0.0, 0.5, 0.4, 0.1]],  # position 0
            [[1.0, 4.0, 3.9, 0.0], [9.0, 0.0, 0.0, -1.0]],  # position 1
        ]
    ]
)


def test_default_k_is_one_thousandth():
    assert [kn.default_k(d) for d in (64, 3072, 11008, 14336, 1499, 1500)] == [1, 3, 11, 14, 1, 2]


def test_topk_is_per_token_not_per_response():
    got = kn.key_neuron_mask(S, "topk", k=1)
    want = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), (
        f"got {got.int().tolist()}: top-k must be taken per token, then united"
    )


def test_global_topk_ranks_all_layers_of_a_token_together():
    got = kn.key_neuron_mask(S, "global_topk", k=2)
    # pos 0: 5.0 (L0 n0), 2.0 (L0 n3); pos 1: 9.0 (L1 n0), 4.0 (L0 n1)
    want = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_top_pct_keeps_a_fraction_of_each_layer():
    got = kn.key_neuron_mask(S, "top_pct", frac=0.5)
    want = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_topscore_keeps_scores_above_a_fraction_of_the_layer_max():
    got = kn.key_neuron_mask(S, "topscore", frac=0.75)
    # pos0 L0 >= 3.75: n0; pos0 L1 >= .375: n1, n2; pos1 L0 >= 3: n1, n2; pos1 L1 >= 6.75: n0
    want = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_response_mask_excludes_prompt_positions():
    got = kn.key_neuron_mask(S, "topk", k=1, response_mask=torch.tensor([[False, True]]))
    want = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want)


def test_response_level_sum_scores():
    summed = kn.response_scores(S, torch.tensor([[True, True]]))
    assert torch.allclose(summed[0, 0, 0], torch.tensor([6.0, 5.0, 3.9, 2.0]))
    got = kn.key_neuron_mask(summed, "topk", k=1)
    want = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), "score_sum: one top-k per response, not per token"
