"""Tests of kit.mui.scores: the neuron contribution scores against the public algorithm, hook sites,
streaming, integrated gradients and padding invariance (the hand-computed cases are in
test_hand_model.py)."""

from __future__ import annotations

import pytest
import torch

from kit.models.load import random_model
from kit.mui import scores as mui_scores


@pytest.mark.parametrize("shape", ["tiny-gelu", "tiny-gated"])
def test_fast_scores_equal_public_algorithm(shape):
    # The public loop on Eq. 3's activation (hook_post, the input of W_out): the same numbers by a
    # d_mlp x vocab projection. Before, the loop read hook_post by default, which the
    # public code does not (it reads act_fn's output: test_public_loop_is_the_public_codes_...).
    model = random_model(shape)
    tokens = torch.randint(0, model.cfg.d_vocab, (3, 9))
    fast = mui_scores.neuron_scores(model, tokens, batch_size=2)
    slow = mui_scores.naive_public_scores(model, tokens, activation="hook_post")
    assert torch.allclose(fast, slow, atol=1e-5), (
        "gathered-column scores differ from the d_mlp x vocab projection"
    )
    public = mui_scores.naive_public_scores(model, tokens)
    if shape == "tiny-gated":
        assert not torch.allclose(fast, public, atol=1e-3), (
            "the public code reads act(gate), not act(gate) * up"
        )
    else:
        assert torch.allclose(fast, public, atol=1e-5), "a plain MLP's act_fn output is hook_post"
    with pytest.raises(ValueError, match="allowed values: act_fn, hook_post"):
        mui_scores.naive_public_scores(model, tokens, activation="hook_pre")


def test_public_loop_is_the_public_codes_arithmetic_on_a_hugging_face_twin():
    """A hand copy of MUI-Eval's get_neuron.py arithmetic on the Hugging Face copy of
    the llama twin (a forward hook on each layer's ``mlp.act_fn``; ``down_proj.weight.T @
    lm_head.weight.T``; the activation at each response position times the column of the token AT
    that position) equals :func:`naive_public_scores` with ``offset=0`` on kit's copy."""
    from transformers import AutoModelForCausalLM

    import kit
    from kit.models.twins import twin_path

    model = kit.load_model("twin/llama")
    hf = AutoModelForCausalLM.from_pretrained(twin_path("llama"), torch_dtype=torch.float32).eval()
    tokens = torch.randint(
        3, model.cfg.d_vocab, (2, 10), generator=torch.Generator().manual_seed(0)
    )
    response = torch.zeros_like(tokens, dtype=torch.bool)
    response[0, 4:9], response[1, 6:9] = True, True  # positions < seq - 1: the loop scores those

    act: dict[int, torch.Tensor] = {}
    layers = hf.model.layers
    handles = [
        layer.mlp.act_fn.register_forward_hook(
            lambda mod, inp, out, n=n: act.__setitem__(n, out.detach())
        )
        for n, layer in enumerate(layers)
    ]
    with torch.no_grad():
        hf(input_ids=tokens, attention_mask=torch.ones_like(tokens))
    for h in handles:
        h.remove()
    b_idx, p_idx = response.nonzero(as_tuple=True)
    input_ids = tokens[b_idx, p_idx]
    unembedding = hf.lm_head.weight.data.T
    got = mui_scores.naive_public_scores(model, tokens, offset=0)
    for n, layer in enumerate(layers):
        projection = layer.mlp.down_proj.weight.data.T @ unembedding
        prob = act[n][b_idx, p_idx, :] * projection[:, input_ids].T
        assert torch.allclose(got[b_idx, p_idx, n], prob, atol=1e-4, rtol=1e-4), (
            f"layer {n}: the public loop differs from the public code's arithmetic by "
            f"{(got[b_idx, p_idx, n] - prob).abs().max():.3g}: is it reading act(gate) * up "
            "(hook_post) instead of act_fn's output?"
        )
    eq3_site = mui_scores.naive_public_scores(model, tokens, offset=0, activation="hook_post")
    assert not torch.allclose(eq3_site[b_idx, p_idx], got[b_idx, p_idx], atol=1e-3)


def test_hook_post_is_the_input_of_w_out_for_gated_mlps():
    model = random_model("tiny-gated")
    tokens = torch.randint(0, model.cfg.d_vocab, (2, 7))
    _, cache = model.run_with_cache(tokens)
    mlp = model.blocks[0].mlp
    gate, up = cache["blocks.0.mlp.hook_pre"], cache["blocks.0.mlp.hook_pre_linear"]
    post = cache["blocks.0.mlp.hook_post"]
    assert torch.allclose(post, torch.nn.functional.silu(gate) * up, atol=1e-6), (
        "hook_post != act(gate) * up"
    )
    assert torch.allclose(
        post @ mlp.W_out + mlp.b_out, cache["blocks.0.hook_mlp_out"], atol=1e-5
    ), "hook_post is not the real input of W_out"
    s = mui_scores.neuron_scores(model, tokens)
    by_hand = post[:, :-1] * torch.einsum("md,dbp->bpm", mlp.W_out, model.W_U[:, tokens[:, 1:]])
    assert torch.allclose(s[:, :, 0], by_hand, atol=1e-5), (
        "gated score must use act(gate)*up as activation"
    )


def test_activate_score_is_hook_post():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (2, 6))
    _, cache = model.run_with_cache(tokens)
    a = mui_scores.neuron_scores(model, tokens, "activate")
    assert torch.allclose(a[:, :, 1], cache["blocks.1.mlp.hook_post"][:, :-1])


def test_streaming_yields_one_layer_of_one_chunk_at_a_time():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (5, 6))
    pieces = list(mui_scores.iter_neuron_scores(model, tokens, batch_size=2))
    assert [(p.rows.start, p.layer) for p in pieces] == [
        (0, 0),
        (0, 1),
        (2, 0),
        (2, 1),
        (4, 0),
        (4, 1),
    ]
    assert all(p.scores.shape == (p.rows.stop - p.rows.start, 5, 64) for p in pieces)


@pytest.mark.parametrize("shape", ["tiny-gelu", "tiny-gated"])
def test_gradient_matches_a_plain_riemann_loop(shape):
    model = random_model(shape)
    tokens = torch.randint(0, 97, (3, 7))
    name = "blocks.1.mlp.hook_post"
    _, cache = model.run_with_cache(tokens)
    a = cache[name]
    total = torch.zeros_like(a)
    for k in range(1, mui_scores.IG_STEPS + 1):
        scaled = (a * k / mui_scores.IG_STEPS).clone().requires_grad_(True)
        logits = model.run_with_hooks(tokens, fwd_hooks=[(name, lambda act, hook: scaled)])
        (g,) = torch.autograd.grad(logits[:, :-1].gather(-1, tokens[:, 1:, None]).sum(), scaled)
        total += g
    want = (a * total / mui_scores.IG_STEPS)[:, :-1]
    got = mui_scores.neuron_scores(model, tokens, "gradient", ig_mode="shared")[:, :, 1]
    assert torch.allclose(got, want, atol=1e-5), (
        "batched integrated gradients differ from the step-by-step Riemann sum"
    )


@pytest.mark.parametrize("ig_output", ["logit", "prob"])
@pytest.mark.parametrize("shape", ["tiny-gelu", "tiny-gated"])
def test_gradient_per_token_matches_eq14_loop(shape, ig_output):
    # Eq. 14 per response token: only a(p) is interpolated, the gradient is that of p's own target.
    model = random_model(shape)
    tokens = torch.randint(0, 97, (2, 6))
    positions = torch.tensor([[False, True, False, True, True], [True, False, False, False, True]])
    name = "blocks.1.mlp.hook_post"
    _, cache = model.run_with_cache(tokens)
    a = cache[name]
    want = torch.zeros(2, 5, a.shape[-1])
    for b, p in positions.nonzero().tolist():
        total = torch.zeros(a.shape[-1])
        for k in range(1, mui_scores.IG_STEPS + 1):
            x = (a[b, p] * k / mui_scores.IG_STEPS).clone().requires_grad_(True)

            def patch(act, hook, b=b, p=p, x=x):
                act = act.clone()
                act[b, p] = x
                return act

            logits = model.run_with_hooks(tokens, fwd_hooks=[(name, patch)])
            out = logits[b, p].softmax(-1) if ig_output == "prob" else logits[b, p]
            (g,) = torch.autograd.grad(out[tokens[b, p + 1]], x)
            total += g
        want[b, p] = a[b, p] * total / mui_scores.IG_STEPS
    got = mui_scores.neuron_scores(
        model, tokens, "gradient", positions=positions, ig_output=ig_output
    )[:, :, 1]
    assert torch.allclose(got, want, atol=1e-5), (
        "per-token integrated gradients differ from the Eq. 14 loop"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(score="score"),
        dict(score="activate"),
        dict(score="gradient"),
        dict(score="gradient", ig_mode="shared"),
        dict(score="gradient", ig_output="prob"),
    ],
)
def test_every_token_score_is_padding_invariant(kwargs):
    # A row's scores must not change when a longer row (more right padding for it) joins its batch.
    model = random_model("tiny-gated")
    short = torch.randint(1, 97, (1, 5))
    pad = torch.zeros(1, 4, dtype=torch.long)
    batch = torch.cat([torch.cat([short, pad], 1), torch.randint(1, 97, (1, 9))])
    pos_short = torch.tensor([[False, False, True, True]])
    pos_batch = torch.zeros(2, 8, dtype=torch.bool)
    pos_batch[0, :4] = pos_short[0]
    pos_batch[1, 3:] = True
    alone = mui_scores.neuron_scores(model, short, positions=pos_short, **kwargs)
    together = mui_scores.neuron_scores(model, batch, positions=pos_batch, **kwargs)
    assert torch.allclose(alone[0], together[0, :4], atol=1e-5), (
        f"{kwargs}: max |diff| {(alone[0] - together[0, :4]).abs().max():.2e} from the batch's "
        "padding"
    )
