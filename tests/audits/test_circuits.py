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


def _float64_model(**cfg):
    from kit.models import tl

    base = dict(n_layers=2, d_model=16, n_heads=2, d_head=8, d_vocab=20, n_ctx=16, seed=0)
    return tl.build_model(dtype=torch.float64, **{**base, **cfg}).eval()


def _random_batch(n: int, n_pos: int = 8, d_vocab: int = 20, seed: int = 0) -> C.IOIBatch:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, d_vocab, (n, n_pos), generator=g)
    last = torch.tensor([n_pos - 1 - (i % 3) for i in range(n)])  # right padding of 0-2 tokens
    io, s = torch.randint(0, d_vocab, (2, n), generator=g)
    return C.IOIBatch(tokens, last, io, s, [str(i) for i in range(n)], [""] * n)


def test_edge_attribution_equals_patching_where_the_model_is_linear():
    """No LayerNorm, no MLP and W_Q = W_K = 0 (uniform causal attention): the logit diff is linear
    in every head's q/k/v input and in the final residual, so the first-order estimate is exact."""
    m = _float64_model(attn_only=True, normalization_type=None)
    with torch.no_grad():
        for block in m.blocks:
            for w in (block.attn.W_Q, block.attn.W_K, block.attn.b_Q, block.attn.b_K):
                w.zero_()
    b = _random_batch(6)
    means = C.head_means(m, b)
    patched = {(e.sender, e.receiver): e.score for e in C.edge_scores(m, b, means)}
    attributed = C.edge_attribution_scores(m, b, means)
    assert len(attributed) == len(C.graph_edges(2, 2)) == len(patched)
    for e in attributed:
        # abs 1e-6: the logit diff is read in float32 (logit_diff), the model runs in float64
        assert e.score == pytest.approx(patched[(e.sender, e.receiver)], abs=1e-6), (
            f"{e.sender} -> {e.receiver}: attribution must equal patching in a linear model "
            "(is the gradient summed over q, k and v and dotted with (z - mean) W_O?)"
        )
    assert max(abs(x) for x in patched.values()) > 1e-3, "the test needs edges that matter"
    # by hand: input -> logits moves the last position's residual by (resid0 - its batch mean)
    # per position (over real tokens), read through W_U[:, io] - W_U[:, s]
    emb = (m.W_E[b.tokens] + m.W_pos[: b.tokens.shape[1]]).detach()
    real = (torch.arange(b.tokens.shape[1])[None, :] <= b.last[:, None]).double()[:, :, None]
    centred = emb - (emb * real).sum(0) / real.sum(0)
    rows = torch.arange(len(b))
    direction = (m.W_U[:, b.io] - m.W_U[:, b.s]).T.detach()
    by_hand = float((centred[rows, b.last] * direction).sum(-1).mean())
    (input_logits,) = [e for e in attributed if (e.sender, e.receiver) == ("input", "logits")]
    assert input_logits.score == pytest.approx(by_hand, abs=1e-6)


@pytest.mark.parametrize("kind", ["layernorm+mlp", "grouped-query"])
def test_edge_attribution_is_patching_to_first_order(kind):
    """With LayerNorm, softmax and MLPs the estimate is first order: shrinking every delta
    (z - mean) by 10 shrinks the gap to patching by ~100 while the scores shrink by ~10."""
    extra = (
        dict(normalization_type="LN", d_mlp=32, act_fn="gelu")
        if kind == "layernorm+mlp"
        else dict(
            n_heads=4,
            d_head=4,
            n_key_value_heads=2,
            d_mlp=32,
            act_fn="silu",
            gated_mlp=True,
            normalization_type="RMS",
            positional_embedding_type="rotary",
            rotary_dim=4,
        )
    )
    m = _float64_model(**extra)
    b = _random_batch(1)  # one prompt: the means below differ from its activations by eps * noise
    own = C.head_means(m, b)
    noise = torch.randn(own.shape, generator=torch.Generator().manual_seed(1), dtype=own.dtype)

    def gap(eps: float) -> tuple[float, float]:
        means = own + eps * noise
        patched = {(e.sender, e.receiver): e.score for e in C.edge_scores(m, b, means)}
        att = C.edge_attribution_scores(m, b, means)
        err = max(abs(e.score - patched[(e.sender, e.receiver)]) for e in att)
        return err, max(abs(x) for x in patched.values())

    # eps 0.1 and 0.01: gaps of ~1e-2 and ~1e-4, far above the float32 logit diff's rounding
    (err1, size1), (err2, size2) = gap(1e-1), gap(1e-2)
    assert size2 == pytest.approx(size1 / 10, rel=0.05), "patching scores are linear in eps"
    assert err1 < 0.1 * size1, "attribution must be close to patching for small deltas"
    assert 0.005 < err2 / err1 < 0.02, (
        f"the gap to patching must be second order in the delta (ratio {err2 / err1:.4f}, "
        "expected ~0.01)"
    )
    assert not m.cfg.use_split_qkv_input, "attribution must restore the model's split-qkv setting"


def test_unknown_edge_scoring_is_refused_naming_the_allowed_values(ioi_items, make_model):
    m = make_model()
    b = C.ioi_batch(m, ioi_items[:4])
    with pytest.raises(
        ValueError, match="edge_scores='gradient'; allowed values: patching, attribution"
    ):
        C.discover_circuit(m, b, C.head_means(m, b), edge_scoring="gradient")
    with pytest.raises(ValueError, match="not edges of the head graph"):
        C.edge_attribution_scores(m, b, C.head_means(m, b), edges=[("logits", "0.1")])
