import numpy as np
import pytest
import torch

from kit.audits import circuits as C


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


def test_select_heads():
    s = torch.tensor([[1.0, 0.1], [0.5, -2.0]])
    assert C.select_heads(s, frac=0.4) == [(0, 0), (1, 0)]
    assert C.select_heads(s, frac=0.4, max_heads=1) == [(0, 0)]
    assert C.select_heads(s, fixed=[(1, 1)]) == [(1, 1)]
    assert C.select_heads(-s.abs(), frac=0.5) == []


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
