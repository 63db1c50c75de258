import math

import numpy as np
import pytest
import torch

from kit.audits import circuits as C


def test_cpr_of_perfect_curve_is_one():
    t = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    cpr, cmd = C.cpr_cmd(t, [1.0] * len(t))
    assert cpr == pytest.approx(1.0), (
        "f = 1 everywhere must give CPR = 1 (is the area divided by the threshold span?)"
    )
    assert cmd == pytest.approx(0.0)


def test_cpr_hand_computed_linear_curve():
    # f(t) = t on [0, 1]: area 1/2; CMD = area of 1 - t = 1/2
    cpr, cmd = C.cpr_cmd([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])
    assert cpr == pytest.approx(0.5) and cmd == pytest.approx(0.5)


def test_cmd_counts_overshoot_as_deficit():
    # f = 1.5 is as far from the model as f = 0.5: MIB's absolute deficit
    _, cmd_hi = C.cpr_cmd([0.1, 1.0], [1.5, 1.5])
    _, cmd_lo = C.cpr_cmd([0.1, 1.0], [0.5, 0.5])
    assert cmd_hi == pytest.approx(cmd_lo) == pytest.approx(0.5)


def test_log_scale_cpr_by_hand():
    # f = 0 at t = 0.01, 1 at 0.1 and 1: in ln t the ramp spans half the range -> area 0.25 + 0.5
    t, f = [0.01, 0.1, 1.0], [0.0, 1.0, 1.0]
    assert C.cpr_cmd(t, f, log_scale=True) == pytest.approx((0.75, 0.25))
    # linear: ramp 0.01..0.1 (0.045) + 0.9 over a span of 0.99
    assert C.cpr_cmd(t, f)[0] == pytest.approx(0.945 / 0.99)


def test_cpr_floor_is_what_saturation_gives_for_free():
    t = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    # every head is in from 10% of the edges: f = 1 there by construction, 0 assumed below
    sat = [x >= 0.1 for x in t]
    assert C.cpr_floor(t, sat) == pytest.approx((0.9 + 0.05 * 0.5) / 0.999)  # ramp 0.05 -> 0.1
    assert C.cpr_floor(t, sat, log_scale=True) == pytest.approx(
        (np.log(10) + 0.5 * np.log(2)) / np.log(1000)
    )
    assert C.cpr_floor(t, sat, log_scale=True) < 0.5 < C.cpr_floor(t, sat), (
        "only the linear CPR passes for free"
    )
    assert C.cpr_floor(t, [x >= 1.0 for x in t]) < 0.5


def test_cpr_rejects_unsorted_thresholds():
    with pytest.raises(ValueError, match="increasing"):
        C.cpr_cmd([0.5, 0.1], [1, 1])


def test_faithfulness_normalisation():
    assert C.faithfulness(3.0, 5.0, 1.0) == pytest.approx(0.5), (
        "f must be (m(C)-m(empty))/(m(N)-m(empty))"
    )
    assert C.faithfulness(1.0, 5.0, 1.0) == 0.0
    assert math.isnan(C.faithfulness(2.0, 1.0, 1.0))


def test_wang_heads_constants():
    heads = C.ioi_heads_gpt2()
    for h in [
        (9, 6),
        (9, 9),
        (10, 0),
        (7, 3),
        (7, 9),
        (8, 6),
        (8, 10),
        (5, 5),
        (6, 9),
        (0, 1),
        (3, 0),
        (2, 2),
        (4, 11),
        (10, 7),
        (11, 10),
    ]:
        assert h in heads, f"Wang et al.'s head {h} missing from IOI_HEADS_GPT2"


def test_graph_edges_count():
    # 2 layers x 2 heads: input->4 heads, input->logits, 2 layer-0 heads -> 2 layer-1 heads, 4
    # heads->logits
    assert len(C.graph_edges(2, 2)) == 4 + 1 + 4 + 4


def test_ioi_batch_tokens(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    it = ioi_items[0]
    assert int(b.io[0]) == C.name_token(model, it.metadata["io"])
    assert (
        int(b.tokens[0, b.last[0]]) == C.name_token(model, "to")
        or model.to_string(b.tokens[0, b.last[0]]) == "to"
    )
    assert set(b.groups) <= {"frequent", "rare"}


def test_mean_ablation_with_own_mean_is_identity(model, ioi_items):
    """Mean ablation by definition: with the reference set = this one prompt, the mean *is* the
    activation, so ablating every head changes nothing."""
    b = C.ioi_batch(model, ioi_items[:1])
    means = C.head_means(model, b)
    full = C.run_heads(model, b, means)
    abl = C.run_heads(model, b, means, ablate=C.all_heads(model))
    assert torch.allclose(full, abl, atol=1e-4), "ablation did not write the mean into hook_z"


def test_zero_output_head_scores_zero(ioi_items, make_model):
    m = make_model(seed=1)
    with torch.no_grad():
        m.blocks[0].attn.W_O[2].zero_()
    b = C.ioi_batch(m, ioi_items)
    means = C.head_means(m, b)
    scores = C.head_scores(m, b, means)
    assert scores[0, 2].abs() < 1e-5, "a head with zero output cannot matter"
    assert scores.abs().sum() > 0
    edges = C.edge_scores(m, b, means)
    assert all(abs(e.score) < 1e-5 for e in edges if e.sender == "0.2")


def test_last_layer_edge_to_logits_equals_head_ablation(ioi_items, make_model):
    """In an attention-only model a last-layer head reaches the logits only directly."""
    m = make_model(attn_only=True, seed=2)
    b = C.ioi_batch(m, ioi_items)
    means = C.head_means(m, b)
    scores = C.head_scores(m, b, means)
    edges = {(e.sender, e.receiver): e.score for e in C.edge_scores(m, b, means)}
    for H in range(m.cfg.n_heads):
        assert edges[(f"1.{H}", "logits")] == pytest.approx(float(scores[1, H]), abs=1e-4), (
            "edge u->logits must remove only u's direct path (check the delta (z - mean) W_O)"
        )


def test_edges_sorted_by_score_and_curve_ignores_input_order(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    edges = C.edge_scores(model, b, means)
    assert [e.score for e in edges] == sorted([e.score for e in edges], reverse=True)
    by_layer = sorted(edges, key=lambda e: e.sender)  # the public sketch's order
    t = [0.05, 0.2, 1.0]
    a = C.faithfulness_curve(model, b, means, edges, t)
    c = C.faithfulness_curve(model, b, means, by_layer, t)
    assert a["f"] == c["f"], "the curve must rank edges by score itself"
    assert a["f"][-1] == pytest.approx(1.0), "all edges kept -> every head kept -> f = 1"


def test_select_heads():
    s = torch.tensor([[1.0, 0.1], [0.5, -2.0]])
    assert C.select_heads(s, frac=0.4) == [(0, 0), (1, 0)]
    assert C.select_heads(s, frac=0.4, max_heads=1) == [(0, 0)]
    assert C.select_heads(s, fixed=[(1, 1)]) == [(1, 1)]
    assert C.select_heads(-s.abs(), frac=0.5) == []


def test_mib_audit_result(model, ioi_items):
    b = C.ioi_batch(model, ioi_items)
    means = C.head_means(model, b)
    edges = C.edge_scores(model, b, means)
    res, curve = C.mib_audit(model, b, means, edges, null_seeds=[1, 2])
    assert res.metric == "MIB" and np.isfinite(res.value)
    assert res.passed == (res.value > 0.5)
    v = res.values
    assert (
        np.isfinite(v["cpr_log"])
        and len(res.null_values) == 2
        and res.null_passed == (res.null > 0.5)
    )
    sat = [n == v["n_heads_total"] for n in v["n_heads"]]
    assert v["cpr_floor"] == pytest.approx(C.cpr_floor(v["threshold"], sat))
    assert res.can_fail == (v["cpr_floor"] <= 0.5)
    res.model_dump_json()


def test_mib_note_flags_degenerate_denominator():
    assert "nearly coincide" in C._mib_note(0.3, 0.50, 0.49)
    assert C._mib_note(0.8, 2.0, 0.1) == ""
    assert "undefined" in C._mib_note(float("nan"), 1.0, 1.0)
    assert "flipped" in C._mib_note(-0.5, 0.05, 0.15)


def test_edge_patching_runs_on_grouped_query_attention(ioi_items):
    """Llama-style models share k/v inputs between heads (``--model random/llama-1b`` in the
    bench)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from kit.world.tokenizer import build_tokenizer, vocab

    cfg = HookedTransformerConfig(
        n_layers=2,
        d_model=32,
        n_heads=4,
        d_head=8,
        n_key_value_heads=2,
        d_mlp=64,
        d_vocab=len(vocab()),
        n_ctx=64,
        act_fn="silu",
        gated_mlp=True,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=8,
        seed=0,
    )
    m = HookedTransformer(cfg, tokenizer=build_tokenizer()).eval()
    b = C.ioi_batch(m, ioi_items[:4])
    means = C.head_means(m, b)
    edges = C.edge_scores(m, b, means)
    assert len(edges) == len(C.graph_edges(2, 4))
    assert all(np.isfinite(e.score) for e in edges)
    assert not m.cfg.use_split_qkv_input, "edge patching must restore the model's split-qkv setting"
