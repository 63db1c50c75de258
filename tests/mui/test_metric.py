"""Tests of kit.mui.metric: hand-computed scores, thresholds, the MUI denominator, PUR and Table 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kit.mui.metric as mui
from kit.core.checks import NonFiniteError
from kit.models.load import random_model


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

    cfg = HookedTransformerConfig(n_layers=1, d_model=4, n_heads=1, d_head=4, d_mlp=4, d_vocab=4, n_ctx=8,
                                  act_fn="relu", normalization_type=None, gated_mlp=gated, seed=0)
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


# ------------------------------------------------------------------ scores


@pytest.mark.parametrize("gated", [False, True])
def test_score_is_next_token_contribution_by_hand(gated):
    got = mui.neuron_scores(hand_model(gated), TOKENS)
    assert got.shape == (1, 3, 1, 4), "pos must be seq_len - 1 (the last position predicts nothing)"
    assert torch.allclose(got, hand_expected()), (
        f"got {got[0, :, 0].tolist()}, expected {hand_expected()[0, :, 0].tolist()}: "
        "did you score the activation at p against the token at p instead of p+1?"
    )


def test_public_off_by_one_fails_the_hand_case():
    model = hand_model()
    wrong = mui.naive_public_scores(model, TOKENS, offset=0)
    right = mui.naive_public_scores(model, TOKENS, offset=1)
    assert torch.allclose(right, hand_expected()), "the faithful public algorithm with offset=1 must match"
    assert not torch.allclose(wrong, hand_expected()), "the off-by-one variant must NOT pass the hand case"
    assert wrong[0, 1, 0, 2] == 2 * (20 + 2), "offset=0 scores token 2 at p=1 against itself"


@pytest.mark.parametrize("shape", ["tiny-gelu", "tiny-gated"])
def test_fast_scores_equal_public_algorithm(shape):
    model = random_model(shape)
    tokens = torch.randint(0, model.cfg.d_vocab, (3, 9))
    fast = mui.neuron_scores(model, tokens, batch_size=2)
    slow = mui.naive_public_scores(model, tokens)
    assert torch.allclose(fast, slow, atol=1e-5), "gathered-column scores differ from the d_mlp x vocab projection"


def test_hook_post_is_the_input_of_w_out_for_gated_mlps():
    model = random_model("tiny-gated")
    tokens = torch.randint(0, model.cfg.d_vocab, (2, 7))
    _, cache = model.run_with_cache(tokens)
    mlp = model.blocks[0].mlp
    gate, up = cache["blocks.0.mlp.hook_pre"], cache["blocks.0.mlp.hook_pre_linear"]
    post = cache["blocks.0.mlp.hook_post"]
    assert torch.allclose(post, torch.nn.functional.silu(gate) * up, atol=1e-6), "hook_post != act(gate) * up"
    assert torch.allclose(post @ mlp.W_out + mlp.b_out, cache["blocks.0.hook_mlp_out"], atol=1e-5), (
        "hook_post is not the real input of W_out"
    )
    s = mui.neuron_scores(model, tokens)
    by_hand = post[:, :-1] * torch.einsum("md,dbp->bpm", mlp.W_out, model.W_U[:, tokens[:, 1:]])
    assert torch.allclose(s[:, :, 0], by_hand, atol=1e-5), "gated score must use act(gate)*up as activation"


def test_activate_score_is_hook_post():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (2, 6))
    _, cache = model.run_with_cache(tokens)
    a = mui.neuron_scores(model, tokens, "activate")
    assert torch.allclose(a[:, :, 1], cache["blocks.1.mlp.hook_post"][:, :-1])


def test_gradient_equals_score_when_logits_are_linear_in_activations():
    # The hand model has no attention, no LN: logit_y = sum_i a_i W_U[i, y] + const, so IG = a * W_U[i, y].
    got = mui.neuron_scores(hand_model(), TOKENS, "gradient")
    assert torch.allclose(got, hand_expected(), atol=1e-4), f"integrated gradients {got[0, :, 0].tolist()}"


def test_streaming_yields_one_layer_of_one_chunk_at_a_time():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (5, 6))
    pieces = list(mui.iter_neuron_scores(model, tokens, batch_size=2))
    assert [(p.rows.start, p.layer) for p in pieces] == [(0, 0), (0, 1), (2, 0), (2, 1), (4, 0), (4, 1)]
    assert all(p.scores.shape == (p.rows.stop - p.rows.start, 5, 64) for p in pieces)


def test_bad_inputs_name_the_field():
    model = random_model("tiny-gelu")
    with pytest.raises(ValueError, match="score="):
        mui.neuron_scores(model, torch.zeros(1, 4, dtype=torch.long), score="attribution")
    with pytest.raises(ValueError, match="seq >= 2"):
        mui.neuron_scores(model, torch.zeros(1, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="threshold="):
        mui.key_neuron_mask(torch.zeros(1, 1, 1, 4), threshold="top")


# ------------------------------------------------------------------ thresholds

# one sample, two positions, two layers, four neurons
S = torch.tensor([[
    [[5.0, 1.0, 0.0, 2.0], [0.0, 0.5, 0.4, 0.1]],   # position 0
    [[1.0, 4.0, 3.9, 0.0], [9.0, 0.0, 0.0, -1.0]],  # position 1
]])


def test_default_k_is_one_thousandth():
    assert [mui.default_k(d) for d in (64, 3072, 11008, 14336, 1499, 1500)] == [1, 3, 11, 14, 1, 2]


def test_topk_is_per_token_not_per_response():
    got = mui.key_neuron_mask(S, "topk", k=1)
    want = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}: top-k must be taken per token, then united"


def test_global_topk_ranks_all_layers_of_a_token_together():
    got = mui.key_neuron_mask(S, "global_topk", k=2)
    # pos 0: 5.0 (L0 n0), 2.0 (L0 n3); pos 1: 9.0 (L1 n0), 4.0 (L0 n1)
    want = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_top_pct_keeps_a_fraction_of_each_layer():
    got = mui.key_neuron_mask(S, "top_pct", frac=0.5)
    want = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_topscore_keeps_scores_above_a_fraction_of_the_layer_max():
    got = mui.key_neuron_mask(S, "topscore", frac=0.75)
    # pos0 L0 >= 3.75: n0; pos0 L1 >= .375: n1, n2; pos1 L0 >= 3: n1, n2; pos1 L1 >= 6.75: n0
    want = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(got, want), f"got {got.int().tolist()}"


def test_response_mask_excludes_prompt_positions():
    got = mui.key_neuron_mask(S, "topk", k=1, response_mask=torch.tensor([[False, True]]))
    want = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want)


def test_response_level_sum_scores():
    summed = mui.response_scores(S, torch.tensor([[True, True]]))
    assert torch.allclose(summed[0, 0, 0], torch.tensor([6.0, 5.0, 3.9, 2.0]))
    got = mui.key_neuron_mask(summed, "topk", k=1)
    want = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(got, want), "score_sum: one top-k per response, not per token"


# ------------------------------------------------------------------ MUI


def test_mui_denominator_is_layers_times_width():
    mask = torch.zeros(2, 4, dtype=torch.bool)
    mask[0, :2] = True
    mask[1, 3] = True
    assert mui.mui_of_mask(mask) == pytest.approx(100 * 3 / 8)


def test_utilization_counts_response_tokens_only_by_hand():
    model = hand_model()
    tokens = torch.tensor([[0, 2, 1, 3], [0, 1, 1, 2]])
    resp = torch.tensor([[False, False, True, True], [False, False, False, True]])
    res = mui.utilization(model, tokens, resp, k=1, per_sample=True)
    # sample 0 predicts 1 from p=1 (neuron 2) and 3 from p=2 (neuron 1); sample 1 predicts 2 from p=2 (neuron 1)
    assert res.mask[0].tolist() == [False, True, True, False]
    assert res.mui == pytest.approx(100 * 2 / 4), "MUI = |union| / (n_layers * d_mlp) * 100"
    assert res.per_sample == pytest.approx([50.0, 25.0])
    assert res.n_samples == 2


@pytest.mark.parametrize("threshold", mui.THRESHOLDS)
@pytest.mark.parametrize("score", ["score", "activate", "score_sum", "activate_sum"])
def test_streaming_utilization_equals_dense_masks(threshold, score):
    model = random_model("tiny-gated")
    tokens = torch.randint(0, 97, (5, 8))
    resp = torch.zeros_like(tokens, dtype=torch.bool)
    resp[:, 5:] = True
    resp[3, 4] = True
    res = mui.utilization(model, tokens, resp, score=score, threshold=threshold, batch_size=2, k=2 if threshold != "topscore" else None)
    dense = mui.neuron_scores(model, tokens, score.split("_")[0])
    pos = resp[:, 1:]
    if score.endswith("_sum"):
        dense, pos = mui.response_scores(dense, pos), None
    want = mui.key_neuron_mask(dense, threshold, k=2 if threshold != "topscore" else None, response_mask=pos)
    assert torch.equal(res.mask, want), f"streamed {threshold}/{score} mask differs from the dense one"


def test_response_mask_on_first_token_is_rejected():
    model = hand_model()
    with pytest.raises(ValueError, match="first token"):
        mui.utilization(model, TOKENS, torch.ones_like(TOKENS, dtype=torch.bool))


def test_sae_utilization_denominator_and_top():
    from sae_lens import StandardSAE, StandardSAEConfig

    model = random_model("tiny-gelu")
    sae = StandardSAE(StandardSAEConfig(d_in=32, d_sae=16))
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(32, 16))
        sae.b_enc.zero_()
    tokens = torch.randint(0, 97, (3, 6))
    resp = torch.zeros_like(tokens, dtype=torch.bool)
    resp[:, 4:] = True
    saes = {"blocks.0.hook_resid_post": sae, "blocks.1.hook_resid_post": sae}
    res = mui.sae_utilization(model, saes, tokens, resp, top=2, reference_width=None)
    assert res.mask.shape == (2, 16), "one row per SAE, one column per feature"
    _, cache = model.run_with_cache(tokens)
    want = torch.zeros(2, 16, dtype=torch.bool)
    for j, h in enumerate(saes):
        f = sae.encode(cache[h][:, :-1])[resp[:, 1:]]
        for row in f:
            top = row.topk(2).indices
            want[j, top[row[top] > 0]] = True
    assert torch.equal(res.mask, want)
    assert res.mui == pytest.approx(100 * want.sum().item() / 32)
    assert mui.sae_top(131072) == 50 and mui.sae_top(16384) == 6 and mui.sae_top(512) == 1


# ------------------------------------------------------------------ law, PUR, directions, ranking


def test_fit_law_paper_form_by_hand():
    # MUI = -4.632 ln(P) + 28.305 exactly (the constants MUI-Eval's figure prints): the fit must give
    # them back, and MUI at P = 100 is 28.305 - 4.632 * ln(100) = 6.9738 (the paper's "6.97%").
    p = np.array([10.0, 20.0, 50.0, 80.0, 100.0])
    fit = mui.fit_law(p, -4.632 * np.log(p) + 28.305)
    assert fit.form == "mui_vs_log_perf", "the paper's form is the default"
    assert fit.alpha == pytest.approx(4.632) and fit.beta == pytest.approx(28.305)
    assert fit.mui_at(100) == pytest.approx(28.305 - 4.632 * math.log(100)) and round(fit.mui_at(100), 2) == 6.97
    assert fit.predict(50.0) == pytest.approx(-4.632 * math.log(50) + 28.305)
    with pytest.raises(ValueError, match="performance must be > 0"):
        mui.fit_law([0.0, 2, 3], [1.0, 2, 3])
    with pytest.raises(ValueError, match="allowed values: mui_vs_log_perf, perf_vs_log_mui"):
        mui.fit_law(p, p, form="linear")


def test_fit_law_recovers_a_log_law():
    m = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    fit = mui.fit_law(3 + 2 * np.log(m), m, form="perf_vs_log_mui")
    assert math.isnan(fit.alpha) and fit.mui_at(3 + 2 * np.log(4.0)) == pytest.approx(4.0)
    assert fit.slope == pytest.approx(2.0) and fit.intercept == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0) and fit.n == 5
    noisy = mui.fit_law(3 + 2 * np.log(m) + np.array([0.1, -0.2, 0.05, 0.1, -0.05]), m, form="perf_vs_log_mui")
    assert noisy.ci_low < 2.0 < noisy.ci_high and 0.9 < noisy.r2 < 1.0
    with pytest.raises(ValueError, match="> 0"):
        mui.fit_law([1, 2, 3], [1, 0, 2])


def test_pur_by_hand():
    assert mui.pur(11.9, 5.4) == pytest.approx(11.9 / math.sqrt(5.4))
    assert mui.pur(50.0, 4.0, alpha=1.0) == pytest.approx(12.5)
    np.testing.assert_allclose(mui.pur(np.array([10.0, 20.0]), np.array([4.0, 16.0])), [5.0, 5.0])


def test_pur_reproduces_table1_from_table5():
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    t5 = load_table("000_table05_neuron_mui_main")
    m = t1[t1.row_type == "model"].merge(t5, left_on=["row_label", "benchmark"], right_on=["model", "benchmark"])
    assert len(m) >= 40, "expected the 7 Table-1 models that Table 5 lists"
    diff = np.abs(mui.pur(m.performance.to_numpy(), m.mui.to_numpy(), alpha=0.5) - m.pur_value.to_numpy())
    assert diff.max() <= 0.1, f"PUR(alpha=0.5) misses Table 1 by up to {diff.max():.2f}"
    off = np.abs(mui.pur(m.performance.to_numpy(), m.mui.to_numpy(), alpha=1.0) - m.pur_value.to_numpy())
    assert off.max() > 1, "alpha=1 must not reproduce Table 1 (else this test proves nothing)"


@pytest.mark.parametrize("d_perf,d_mui,want", [
    (1, -1, "evolving"), (1, 1, "accumulating"), (-1, 1, "coarsening"), (-1, -1, "collapsing"),
    (0.0, 1, "flat"), (1, 0.0, "flat"),
])
def test_direction(d_perf, d_mui, want):
    assert mui.direction(d_perf, d_mui) == want


def test_direction_tolerance():
    assert mui.direction(0.4, 3, tol_perf=0.5) == "flat"
    assert mui.direction(0.6, 3, tol_perf=0.5) == "accumulating"


def test_rank_agreement_by_hand():
    ref = ["a", "b", "c", "d"]
    perfect = mui.rank_agreement({"x": {"a": 4, "b": 3, "c": 2, "d": 1}}, ref)
    assert perfect["spearman_mean"] == pytest.approx(100) and perfect["kendall_mean"] == pytest.approx(100)
    mixed = mui.rank_agreement({"x": {"a": 4, "b": 3, "c": 1, "d": 2}, "y": {"a": 1, "b": 2, "c": 3, "d": 4}}, ref)
    # x: one swap -> spearman 1 - 6*2/(4*15) = 0.8, kendall (5-1)/6; y reversed: -1, -1
    assert mixed["per_dataset"]["x"]["spearman"] == pytest.approx(0.8)
    assert mixed["per_dataset"]["x"]["kendall"] == pytest.approx(4 / 6)
    assert mixed["spearman_mean"] == pytest.approx(100 * (0.8 - 1) / 2)
    assert mixed["spearman_var"] == pytest.approx(100 * np.var([0.8, -1.0])), "population variance x 100"


def test_rank_agreement_reproduces_table1_summary():
    from kit.data.paper_tables import load_table

    t1 = load_table("000_table01_perf_pur_ranking")
    rows = t1[t1.row_type == "model"]
    ref = rows.drop_duplicates("row_label").sort_values("reference_rank").row_label.tolist()
    got = {}
    for col in ("perf_value", "pur_value"):
        by_ds = {b: dict(zip(g.row_label, g[col])) for b, g in rows.groupby("benchmark")}
        got[col] = mui.rank_agreement(by_ds, ref)
    summary = [round(got[c][k], 1) for k in ("spearman_mean", "spearman_var", "kendall_mean", "kendall_var")
               for c in ("perf_value", "pur_value")]
    assert summary == [86.4, 88.6, 1.8, 1.0, 76.9, 80.6, 3.2, 1.2], (
        f"got {summary}: mean in %, population variance of the coefficients x 100"
    )


def test_rank_agreement_constant_score_is_undefined_not_zero():
    got = mui.rank_agreement({"x": {"a": 1, "b": 1, "c": 1}, "y": {"a": 3, "b": 2, "c": 1}}, ["a", "b", "c"])
    assert math.isnan(got["per_dataset"]["x"]["spearman"]), "a constant score cannot rank: NaN, left out of the mean"
    assert got["spearman_mean"] == pytest.approx(100) and got["n_datasets"] == 1


@pytest.mark.parametrize("shape", ["tiny-gelu", "tiny-gated"])
def test_gradient_matches_a_plain_riemann_loop(shape):
    model = random_model(shape)
    tokens = torch.randint(0, 97, (3, 7))
    name = "blocks.1.mlp.hook_post"
    _, cache = model.run_with_cache(tokens)
    a = cache[name]
    total = torch.zeros_like(a)
    for k in range(1, mui.IG_STEPS + 1):
        scaled = (a * k / mui.IG_STEPS).clone().requires_grad_(True)
        logits = model.run_with_hooks(tokens, fwd_hooks=[(name, lambda act, hook: scaled)])
        (g,) = torch.autograd.grad(logits[:, :-1].gather(-1, tokens[:, 1:, None]).sum(), scaled)
        total += g
    want = (a * total / mui.IG_STEPS)[:, :-1]
    got = mui.neuron_scores(model, tokens, "gradient", ig_mode="shared")[:, :, 1]
    assert torch.allclose(got, want, atol=1e-5), "batched integrated gradients differ from the step-by-step Riemann sum"


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
        for k in range(1, mui.IG_STEPS + 1):
            x = (a[b, p] * k / mui.IG_STEPS).clone().requires_grad_(True)

            def patch(act, hook, b=b, p=p, x=x):
                act = act.clone()
                act[b, p] = x
                return act

            logits = model.run_with_hooks(tokens, fwd_hooks=[(name, patch)])
            out = logits[b, p].softmax(-1) if ig_output == "prob" else logits[b, p]
            (g,) = torch.autograd.grad(out[tokens[b, p + 1]], x)
            total += g
        want[b, p] = a[b, p] * total / mui.IG_STEPS
    got = mui.neuron_scores(model, tokens, "gradient", positions=positions, ig_output=ig_output)[:, :, 1]
    assert torch.allclose(got, want, atol=1e-5), "per-token integrated gradients differ from the Eq. 14 loop"


@pytest.mark.parametrize("kwargs", [dict(score="score"), dict(score="activate"), dict(score="gradient"),
                                    dict(score="gradient", ig_mode="shared"),
                                    dict(score="gradient", ig_output="prob")])
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
    alone = mui.neuron_scores(model, short, positions=pos_short, **kwargs)
    together = mui.neuron_scores(model, batch, positions=pos_batch, **kwargs)
    assert torch.allclose(alone[0], together[0, :4], atol=1e-5), (
        f"{kwargs}: max |diff| {(alone[0] - together[0, :4]).abs().max():.2e} from the batch's padding")


@pytest.mark.parametrize("kwargs", [dict(score=s) for s in mui.SCORES] + [dict(variant="public_code", k=2)])
def test_every_mui_variant_is_padding_invariant(kwargs):
    model = random_model("tiny-gated")
    short = torch.randint(1, 97, (1, 5))
    batch = torch.cat([torch.cat([short, torch.zeros(1, 4, dtype=torch.long)], 1), torch.randint(1, 97, (1, 9))])
    m_short = torch.tensor([[False, False, False, True, True]])
    m_batch = torch.zeros(2, 9, dtype=torch.bool)
    m_batch[0, :5] = m_short[0]
    m_batch[1, 4:] = True
    alone = mui.utilization(model, short, m_short, per_sample=True, **kwargs)
    together = mui.utilization(model, batch, m_batch, per_sample=True, **kwargs)
    assert torch.equal(alone.sample_masks[0], together.sample_masks[0]), f"{kwargs}: key neurons depend on padding"


def _ragged_batch(n: int = 7, width: int = 12, seed: int = 0):
    """Right-padded rows of different lengths, a response at the end of each (one row without any)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width, dtype=torch.bool)
    for i in range(n):
        length = int(torch.randint(3, width + 1, (1,), generator=g))
        tokens[i, :length] = torch.randint(1, 97, (length,), generator=g)
        if i != 2:  # row 2: prompt only
            mask[i, length - 1 - int(torch.randint(0, 2, (1,), generator=g)): length] = True
    return tokens, mask


def test_token_budget_chunks_cover_every_row_once_within_the_budget():
    tokens, mask = _ragged_batch()
    seen = []
    for idx, chunk, cmask in mui.token_budget_chunks(tokens, mask, max_batch_tokens=20):
        seen += idx.tolist()
        assert chunk.shape == cmask.shape
        assert len(idx) == 1 or chunk.numel() <= 20, "a batch of several rows stays within the budget"
        assert torch.equal(chunk, tokens[idx, : chunk.shape[1]]) and torch.equal(cmask, mask[idx, : chunk.shape[1]])
        assert not mask[idx, chunk.shape[1]:].any(), "no response token is cut off"
    assert sorted(seen) == list(range(len(tokens)))


@pytest.mark.parametrize("kwargs", [dict(score=s) for s in mui.SCORES]
                         + [dict(threshold="global_topk"), dict(variant="public_code", k=2)])
def test_token_budget_gives_the_same_key_neurons_as_row_batches(kwargs):
    model = random_model("tiny-gated")
    tokens, mask = _ragged_batch()
    rows = mui.utilization(model, tokens, mask, per_sample=True, batch_size=3, **kwargs)
    budget = mui.utilization(model, tokens, mask, per_sample=True, max_batch_tokens=20, **kwargs)
    assert torch.equal(rows.sample_masks, budget.sample_masks), f"{kwargs}: per-sample key neurons differ"
    assert torch.equal(rows.mask, budget.mask) and rows.mui == budget.mui and rows.per_sample == budget.per_sample
    assert not budget.sample_masks[2].any(), "the prompt-only row has no key neuron"


def test_sae_utilization_token_budget_equals_row_batches():
    from sae_lens import StandardSAE, StandardSAEConfig

    model = random_model("tiny-gelu")
    sae = StandardSAE(StandardSAEConfig(d_in=32, d_sae=16))
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(32, 16))
    tokens, mask = _ragged_batch()
    saes = {"blocks.1.hook_resid_post": sae}
    rows = mui.sae_utilization(model, saes, tokens, mask, top=2, reference_width=None, batch_size=2)
    budget = mui.sae_utilization(model, saes, tokens, mask, top=2, reference_width=None, max_batch_tokens=16)
    assert rows.mask.any() and torch.equal(rows.mask, budget.mask)


# ------------------------------------------------------------------ the public code's variant


def test_public_code_key_neurons_by_hand():
    s = torch.tensor([[1.0, 5.0, 0.0], [4.0, 2.0, 0.0]])
    assert mui.public_code_key_neurons(s, 2).tolist() == [True, True, False], "top-2 entries: 5 (n1), 4 (n0)"
    assert mui.public_code_key_neurons(s, 2, n_gpus=2).tolist() == [False, True, False], (
        "two GPUs duplicate every entry: the top-2 entries are 5 and its copy, one neuron")
    same = torch.tensor([[5.0, 0.0, 0.0], [4.0, 1.0, 0.0]])
    assert mui.public_code_key_neurons(same, 2).tolist() == [True, False, False], (
        "top-k over the whole response: a neuron that wins at two positions fills both slots")
    assert (mui.public_code_k(14336), mui.public_code_k(18944), mui.public_code_k(512)) == (14, 18, 0)
    assert (mui.default_k(18944), mui.default_k(512)) == (19, 1), "the paper's k rounds and is at least 1"


@pytest.mark.parametrize("gated", [False, True])
def test_public_code_variant_reproduces_the_off_by_one_by_hand(gated):
    # Hand model, tokens [0, 2, 1, 3], response = the last two tokens (positions 2 and 3).
    # Paper: position 1 (neuron 2) predicts token 1 -> 2*(20+1) = 42; position 2 (neuron 1) predicts 3 -> 26;
    #        per-token k=1 keeps neurons {2, 1}: MUI 2/4 = 50%.
    # Public code: position 2 (neuron 1) scored against the token AT 2 (1) -> 2*(10+1) = 22; position 3
    #        (neuron 3) against 3 -> 2*(30+3) = 66; top-1 over the response keeps {3}: MUI 25%.
    model = hand_model(gated)
    if gated:  # up = 0.25 * 2 = 0.5: act(gate) * up = 1 enters W_out, but the public code reads act(gate) = 2
        with torch.no_grad():
            model.blocks[0].mlp.W_in.copy_(0.25 * torch.eye(4))
    mask = torch.tensor([[False, False, True, True]])
    paper = mui.utilization(model, TOKENS, mask, k=1)
    public = mui.utilization(model, TOKENS, mask, variant="public_code", k=1)
    assert paper.mask[0].tolist() == [False, True, True, False] and paper.mui == 50.0
    assert public.mask[0].tolist() == [False, False, False, True] and public.mui == 25.0
    scores = mui.neuron_scores(model, TOKENS)
    assert scores[0, 1, 0, 2] == pytest.approx(42 / (2 if gated else 1)), "the paper scores act(gate)*up"
    with pytest.raises(ValueError, match="pass k explicitly"):
        mui.utilization(model, TOKENS, mask, variant="public_code")
    with pytest.raises(ValueError, match="allowed values: paper, public_code"):
        mui.utilization(model, TOKENS, mask, variant="mui-eval")


def test_item_tokens_marks_exactly_the_response_words():
    from kit.data.items import Item
    from kit.world.train import Arch, make_model

    model = make_model(Arch(1, 16, 2, 32), seed=0)  # random weights, the world's tokenizer: no built world needed
    items = [Item("a", "tom has 3 apples . how many apples does tom have ?", answer="3"),
             Item("b", "how many apples ?", answer="4")]
    tokens, mask = mui.item_tokens(model, items, ["3", ""])
    vocab = model.tokenizer.get_vocab()
    n0 = 1 + len(items[0].prompt.split())
    assert tokens[0, 0] == vocab["<bos>"] and tokens[0, n0] == vocab["3"]
    assert mask[0].nonzero().flatten().tolist() == [n0], "only the response token is a response position"
    assert not mask[1].any(), "an empty response has no response token"
    res = mui.utilization(model, tokens, mask, per_sample=True)
    assert res.per_sample[1] == 0.0 and res.mask.sum() == 1, "one response token, one layer, k=1: one key neuron"


# --------------------------------------------------------------------------------------------
# non-finite inputs (issue 16.3): a NaN neuron used to be chosen as the key neuron (topk ranks NaN highest)


def nan_neuron_model():
    model = hand_model()
    with torch.no_grad():
        model.blocks[0].mlp.W_in[:, 3] = float("nan")  # neuron 3's activation is NaN everywhere
    return model


@pytest.mark.parametrize("score, threshold", [("score", "topk"), ("activate", "global_topk"), ("score", "topscore")])
def test_nan_activation_stops_utilization_naming_the_hook(score, threshold):
    resp = torch.tensor([[False, True, True, True]])
    with pytest.raises(NonFiniteError, match=rf"{score} scores at blocks\.0\.mlp\.hook_post"):
        mui.utilization(nan_neuron_model(), TOKENS, resp, score=score, threshold=threshold)


def test_nan_scores_are_not_ranked_as_key_neurons():
    scores = hand_expected()
    scores[0, 1, 0, 3] = float("nan")
    with pytest.raises(NonFiniteError, match="scores"):
        mui.key_neuron_mask(scores, "topk", k=1)
    with pytest.raises(NonFiniteError, match="scores"):
        mui.key_neuron_mask(scores, "global_topk", k=1)


def test_law_pur_and_rank_agreement_refuse_nan():
    with pytest.raises(NonFiniteError, match="fit_law performance"):
        mui.fit_law([50.0, float("nan"), 70.0], [1.0, 2.0, 3.0])
    with pytest.raises(NonFiniteError, match="fit_law mui"):
        mui.fit_law([50.0, 60.0, 70.0], [1.0, float("inf"), 3.0])
    with pytest.raises(NonFiniteError, match="pur mui"):
        mui.pur([50.0, 60.0], [float("nan"), 4.0])
    with pytest.raises(NonFiniteError, match="pur performance"):
        mui.pur([float("nan"), 60.0], [1.0, 4.0])
    with pytest.raises(NonFiniteError, match="dataset 'x'"):
        mui.rank_agreement({"x": {"a": 1.0, "b": float("nan"), "c": 3.0}}, ["a", "b", "c"])
