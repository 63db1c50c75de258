"""kit.cg.saes: SAE names, labels from top-activating contexts, sparse item activations (eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from kit.cg import saes as cg_saes
from kit.cg.bench import synthetic_sae


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)


def test_spec_round_trip_and_defaults():
    s = cg_saes.MinilmSAESpec.from_name("minilm-sae/L4/topk-6144")
    assert (s.layer, s.width, s.k, s.train_tokens) == (4, 6144, 32, 100_000)
    assert s.site == "blocks.4.hook_resid_post"
    small = cg_saes.MinilmSAESpec.from_name("minilm-sae/L3/topk-256-k8-t6000")
    assert (small.k, small.train_tokens) == (
        8,
        6000,
    ) and small.name == "minilm-sae/L3/topk-256-k8-t6000"
    assert cg_saes.MinilmSAESpec(4, 6144).name == "minilm-sae/L4/topk-6144"
    assert s.cache_key() != small.cache_key(), "different SAEs must not share a cache entry"


@pytest.mark.parametrize(
    "bad, msg",
    [
        ("minilm-sae/topk-10", "must look like"),
        ("minilm-sae/L9/topk-64", "layers 0..5"),
        ("minilm-sae/L4/topk-64-k64", "k=64"),
        ("minilm-sae/L4/topk-64-k8-t10", "t=10"),
    ],
)
def test_spec_rejects_bad_names(bad, msg):
    with pytest.raises(ValueError, match=msg):
        cg_saes.MinilmSAESpec.from_name(bad)


def test_wordpieces_and_context():
    toks = ["the", "photo", "##synth", "##esis", "of", "plants"]
    assert cg_saes._merge_wordpieces(toks, 2) == "photosynthesis"
    assert cg_saes._merge_wordpieces(toks, 4) == "of"
    assert cg_saes._context(toks, 4, 2) == "photosynthesis [of] plants" or cg_saes._context(
        toks, 4, 2
    ).endswith("[of] plants")
    assert "##" not in cg_saes._context(toks, 4, 2).split("[")[0], (
        "the left window must not start mid-word"
    )


def test_label_from_contexts_most_frequent_words():
    ctx = [
        {"word": "Plants", "value": 1.0, "context": ""},
        {"word": "plants", "value": 0.5, "context": ""},
        {"word": "sun", "value": 0.9, "context": ""},
        {"word": "leaf", "value": 0.2, "context": ""},
    ]
    assert cg_saes.label_from_contexts(ctx, n_words=2) == "plants / sun"
    assert cg_saes.label_from_contexts([]) == "(dead)"


def test_contexts_from_acts_finds_the_strongest_tokens():
    sae = synthetic_sae(8, d_sae=16, k=2)
    acts = torch.randn(40, 8)
    refs = torch.tensor([(j // 10, j % 10) for j in range(40)], dtype=torch.int32)
    tokens = [[f"t{t}w{p}" for p in range(10)] for t in range(4)]
    # chunks force the running top-k
    ctx = cg_saes.contexts_from_acts(sae, acts, refs, tokens, n_top=3, chunk=7)
    feats = sae.encode(acts).detach()
    for c in range(16):
        expected = [v for v in feats[:, c].sort(descending=True).values[:3].tolist() if v > 0]
        got = [x["value"] for x in ctx[c]]
        assert np.allclose(got, np.round(expected, 4), atol=1e-4), (
            f"concept {c}: running top-k lost a maximum"
        )
        if ctx[c]:
            j = int(feats[:, c].argmax())
            assert ctx[c][0]["word"] == f"t{j // 10}w{j % 10}"


def test_encode_items_matches_per_item_mean():
    sae = synthetic_sae(8, d_sae=32, k=4)
    items = [torch.randn(3, 8), torch.randn(1, 8), torch.randn(5, 8)]
    # chunks split items: must not matter
    got = cg_saes.encode_items(items, {"s": sae}, chunk_tokens=2)["s"]
    for i, a in enumerate(items):
        assert torch.allclose(got[i], sae.encode(a).detach().mean(0), atol=1e-6), (
            "eq. 1: mean over the item's tokens"
        )


class _FakeEncoder:
    """Stands in for MiniLM: token activations are deterministic functions of the words."""

    name = "fake"

    def token_activations(self, texts, site, batch_size=32, max_length=256):
        out = []
        for t in texts:
            words = t.split()[:max_length]
            out.append(
                torch.stack(
                    [torch.tensor([float(hash(w) % 7), float(len(w)), 1.0, -1.0]) for w in words]
                )
            )
        return out


def test_item_concepts_streams_sparse_rows_and_caches(monkeypatch, tmp_path):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    sae = synthetic_sae(4, d_sae=64, k=3)
    monkeypatch.setattr(cg_saes, "load_minilm_sae", lambda name, device="cpu": sae)
    texts = ["a b c", "dd", "e f g h i", "j"]
    name = "minilm-sae/L4/topk-64-k3-t1000"
    out, lengths = cg_saes.item_concepts(_FakeEncoder(), [name], texts, batch_size=3)
    m = out[name]
    assert sp.isspmatrix_csr(m) and m.shape == (4, 64)
    assert lengths.tolist() == [3, 1, 5, 1]
    dense = cg_saes.encode_items(_FakeEncoder().token_activations(texts, "x"), {"s": sae})[
        "s"
    ].numpy()
    assert np.allclose(m.toarray(), dense, atol=1e-6)
    assert m.nnz == (dense != 0).sum(), "only active concepts may be stored"
    monkeypatch.setattr(cg_saes, "load_minilm_sae", lambda *a, **k: pytest.fail("cache not used"))
    again, _ = cg_saes.item_concepts(_FakeEncoder(), [name], texts, batch_size=3)
    assert (again[name] != m).nnz == 0
    with pytest.raises(ValueError, match="non-empty"):
        cg_saes.item_concepts(_FakeEncoder(), [name], ["ok", " "])


def test_item_concepts_rejects_saes_on_different_sites():
    with pytest.raises(ValueError, match="one site"):
        cg_saes.item_concepts(
            _FakeEncoder(), ["minilm-sae/L3/topk-64", "minilm-sae/L4/topk-64"], ["a"]
        )


@pytest.mark.slow
def test_build_tiny_minilm_sae_is_a_sae_lens_sae(monkeypatch, tmp_path):
    """End to end on the real offline MiniLM and data: a very small SAE, cached and labelled."""
    from sae_lens import SAE

    from kit.core.paths import DataError

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    torch.set_num_threads(1)
    name = "minilm-sae/L4/topk-64-k4-t1500"
    try:
        sae = cg_saes.load_minilm_sae(name)
    except DataError as e:
        pytest.skip(f"data directory unavailable: {e}")
    assert isinstance(sae, SAE) and sae.cfg.d_sae == 64 and sae.cfg.d_in == 384
    labels = cg_saes.minilm_sae_labels(name)
    assert len(labels) == 64 and sum(lab != "(dead)" for lab in labels) > 32
    assert (cg_saes.sae_dir(name) / "meta.json").is_file()
    import kit

    assert type(kit.load_sae(name)).__name__ == type(sae).__name__, (
        "kit.load_sae must dispatch minilm-sae/ names"
    )
