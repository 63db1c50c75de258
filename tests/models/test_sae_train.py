import pytest
import torch

from kit.models.sae_train import DEAD, label_from_contexts, top_activations


def test_label_from_contexts_hand_computed():
    ctx = [
        {"value": 1.0, "word": "Apples", "task": "add"},
        {"value": 3.0, "word": "pears", "task": "add2"},
        {"value": 0.5, "word": "apples", "task": "add"},
        {"value": 2.0, "word": "figs", "task": "count"},
    ]
    # apples x2; pears and figs once each, pears stronger (3.0 > 2.0)
    assert label_from_contexts(ctx) == "apples / pears / figs"
    assert label_from_contexts(ctx, n_words=1, group="task") == "add: apples"
    assert label_from_contexts([]) == DEAD == "(dead)"


def test_top_activations_matches_a_full_sort():
    class Identity:  # an "SAE" whose features are its inputs
        class cfg:
            d_sae = 3

        W_enc = torch.zeros(1)

        @staticmethod
        def encode(x):
            return x

    acts = torch.tensor([[0.0, 5, 1], [2, 0, 1], [3, 1, 0], [1, 4, 0], [0, 0, 0]])
    vals, rows = top_activations(Identity, acts, n_top=2, chunk=2)  # chunks force the running merge
    assert vals.tolist() == [[3, 2], [5, 4], [1, 1]]
    assert rows[:2].tolist() == [[2, 1], [0, 3]] and sorted(rows[2].tolist()) == [0, 1]


def test_train_sae_rejects_unknown_architectures():
    with pytest.raises(ValueError, match="allowed values: topk, standard"):
        from kit.models.sae_train import train_sae

        train_sae(torch.zeros(8, 4), 4, 8, architecture="gated")
