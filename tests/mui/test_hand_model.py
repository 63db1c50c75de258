"""The hand-computable one-layer model: Eq. 3's scores (kit.mui.scores), MUI of its key neurons
(kit.mui.key_neurons, kit.mui.metric), the public code's off-by-one and NaN activations, all
checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kit.mui.key_neurons as kn
import kit.mui.metric as mui
from kit.core.checks import NonFiniteError
from kit.mui import scores as mui_scores


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)


def hand_model(gated: bool = False):
    """A 1-layer model whose neuron contributions can be computed by hand.

    d_vocab = d_model = d_mlp = 4, no normalisation, attention and positions zeroed, W_E = 2 I,
    W_in = I (ReLU), W_out = I, W_U[i, y] = 10 i + y. So at position p only neuron ``t_p`` fires
    with activation 2, and its contribution to predicting y is ``2 * (10 t_p + y)``.
    Gated: W_gate = I with ReLU and W_in = 0.5 I, so act(gate) * up = 2 * 1 = 2... as well
    (hook_post = relu(2) * 0.5 * 2 = 2).
    """
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(
        n_layers=1,
        d_model=4,
        n_heads=1,
        d_head=4,
        d_mlp=4,
        d_vocab=4,
        n_ctx=8,
        act_fn="relu",
        normalization_type=None,
        gated_mlp=gated,
        seed=0,
    )
    model = HookedTransformer(cfg).eval()
    eye = torch.eye(4)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.embed.W_E.copy_(2 * eye)
        mlp = model.blocks[0].mlp
        if gated:
            mlp.W_gate.copy_(eye)
            mlp.W_in.copy_(0.5 * eye)
        else:
            mlp.W_in.copy_(eye)
        mlp.W_out.copy_(eye)
        model.unembed.W_U.copy_(10 * torch.arange(4.0)[:, None] + torch.arange(4.0)[None, :])
    return model


TOKENS = torch.tensor([[0, 2, 1, 3]])


# hand: position p, neuron t_p, value 2 * (10 t_p + t_{p+1})
HAND = {(0, 0): 2 * (0 + 2), (1, 2): 2 * (20 + 1), (2, 1): 2 * (10 + 3)}


def hand_expected() -> torch.Tensor:
    out = torch.zeros(1, 3, 1, 4)
    for (p, i), v in HAND.items():
        out[0, p, 0, i] = v
    return out


@pytest.mark.parametrize("gated", [False, True])
def test_score_is_next_token_contribution_by_hand(gated):
    got = mui_scores.neuron_scores(hand_model(gated), TOKENS)
    assert got.shape == (1, 3, 1, 4), "pos must be seq_len - 1 (the last position predicts nothing)"
    assert torch.allclose(got, hand_expected()), (
        f"got {got[0, :, 0].tolist()}, expected {hand_expected()[0, :, 0].tolist()}: "
        "did you score the activation at p against the token at p instead of p+1?"
    )


def test_public_off_by_one_fails_the_hand_case():
    model = hand_model()
    wrong = mui_scores.naive_public_scores(model, TOKENS, offset=0)
    right = mui_scores.naive_public_scores(model, TOKENS, offset=1)
    assert torch.allclose(right, hand_expected()), (
        "the faithful public algorithm with offset=1 must match"
    )
    assert not torch.allclose(wrong, hand_expected()), (
        "the off-by-one variant must NOT pass the hand case"
    )
    assert wrong[0, 1, 0, 2] == 2 * (20 + 2), "offset=0 scores token 2 at p=1 against itself"


def test_public_loop_reads_act_gate_not_act_gate_times_up_by_hand():
    # Gated hand model with up = 0.25 * 2 = 0.5: act(gate) = 2 (what mlp.act_fn outputs, and the
    # public code hooks), act(gate) * up = 1 (what enters W_out, Eq. 3's activation).
    model = hand_model(gated=True)
    with torch.no_grad():
        model.blocks[0].mlp.W_in.copy_(0.25 * torch.eye(4))
    public = mui_scores.naive_public_scores(model, TOKENS)
    assert torch.allclose(public, hand_expected()), (
        f"got {public[0, :, 0].tolist()}: the public code scores act(gate) = 2, not act(gate)*up"
    )
    eq3 = mui_scores.naive_public_scores(model, TOKENS, activation="hook_post")
    assert torch.allclose(eq3, hand_expected() / 2)
    assert torch.allclose(mui_scores.neuron_scores(model, TOKENS), eq3)


def test_gradient_equals_score_when_logits_are_linear_in_activations():
    # The hand model has no attention, no LN: logit_y = sum_i a_i W_U[i, y] + const, so IG = a *
    # W_U[i, y].
    got = mui_scores.neuron_scores(hand_model(), TOKENS, "gradient")
    assert torch.allclose(got, hand_expected(), atol=1e-4), (
        f"integrated gradients {got[0, :, 0].tolist()}"
    )


def test_utilization_counts_response_tokens_only_by_hand():
    model = hand_model()
    tokens = torch.tensor([[0, 2, 1, 3], [0, 1, 1, 2]])
    resp = torch.tensor([[False, False, True, True], [False, False, False, True]])
    res = mui.utilization(model, tokens, resp, k=1, per_sample=True)
    # sample 0 predicts 1 from p=1 (neuron 2) and 3 from p=2 (neuron 1); sample 1 predicts 2 from
    # p=2 (neuron 1)
    assert res.mask[0].tolist() == [False, True, True, False]
    assert res.mui == pytest.approx(100 * 2 / 4), "MUI = |union| / (n_layers * d_mlp) * 100"
    assert res.per_sample == pytest.approx([50.0, 25.0])
    assert res.n_samples == 2


def test_response_mask_on_first_token_is_rejected():
    model = hand_model()
    with pytest.raises(ValueError, match="first token"):
        mui.utilization(model, TOKENS, torch.ones_like(TOKENS, dtype=torch.bool))


@pytest.mark.parametrize("gated", [False, True])
def test_public_code_variant_reproduces_the_off_by_one_by_hand(gated):
    # Hand model, tokens [0, 2, 1, 3], response = the last two tokens (positions 2 and 3).
    # Paper: position 1 (neuron 2) predicts token 1 -> 2*(20+1) = 42; position 2 (neuron 1) predicts
    # 3 -> 26;
    #        per-token k=1 keeps neurons {2, 1}: MUI 2/4 = 50%.
    # Public code: position 2 (neuron 1) scored against the token AT 2 (1) -> 2*(10+1) = 22;
    # position 3
    #        (neuron 3) against 3 -> 2*(30+3) = 66; top-1 over the response keeps {3}: MUI 25%.
    model = hand_model(gated)
    # up = 0.25 * 2 = 0.5: act(gate) * up = 1 enters W_out, but the public code reads act(gate) = 2
    if gated:
        with torch.no_grad():
            model.blocks[0].mlp.W_in.copy_(0.25 * torch.eye(4))
    mask = torch.tensor([[False, False, True, True]])
    paper = mui.utilization(model, TOKENS, mask, k=1)
    public = mui.utilization(model, TOKENS, mask, variant="public_code", k=1)
    assert paper.mask[0].tolist() == [False, True, True, False] and paper.mui == 50.0
    assert public.mask[0].tolist() == [False, False, False, True] and public.mui == 25.0
    scores = mui_scores.neuron_scores(model, TOKENS)
    assert scores[0, 1, 0, 2] == pytest.approx(42 / (2 if gated else 1)), (
        "the paper scores act(gate)*up"
    )
    with pytest.raises(ValueError, match="pass k explicitly"):
        mui.utilization(model, TOKENS, mask, variant="public_code")
    with pytest.raises(ValueError, match="allowed values: paper, public_code"):
        mui.utilization(model, TOKENS, mask, variant="mui-eval")


def nan_neuron_model():
    model = hand_model()
    with torch.no_grad():
        model.blocks[0].mlp.W_in[:, 3] = float("nan")  # neuron 3's activation is NaN everywhere
    return model


@pytest.mark.parametrize(
    "score, threshold", [("score", "topk"), ("activate", "global_topk"), ("score", "topscore")]
)
def test_nan_activation_stops_utilization_naming_the_hook(score, threshold):
    resp = torch.tensor([[False, True, True, True]])
    with pytest.raises(NonFiniteError, match=rf"{score} scores at blocks\.0\.mlp\.hook_post"):
        mui.utilization(nan_neuron_model(), TOKENS, resp, score=score, threshold=threshold)


def test_nan_scores_are_not_ranked_as_key_neurons():
    scores = hand_expected()
    scores[0, 1, 0, 3] = float("nan")
    with pytest.raises(NonFiniteError, match="scores"):
        kn.key_neuron_mask(scores, "topk", k=1)
    with pytest.raises(NonFiniteError, match="scores"):
        kn.key_neuron_mask(scores, "global_topk", k=1)
