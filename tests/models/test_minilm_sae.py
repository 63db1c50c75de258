"""kit.models.minilm_sae: SAE names, labels from top-activating contexts, a tiny build."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kit.cg.bench import synthetic_sae
from kit.models import minilm_sae


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)


def test_spec_round_trip_and_defaults():
    s = minilm_sae.MinilmSAESpec.from_name("minilm-sae/L4/topk-6144")
    assert (s.layer, s.width, s.k, s.train_tokens) == (4, 6144, 32, 100_000)
    assert s.site == "blocks.4.hook_resid_post"
    small = minilm_sae.MinilmSAESpec.from_name("minilm-sae/L3/topk-256-k8-t6000")
    assert (small.k, small.train_tokens) == (
        8,
        6000,
    ) and small.name == "minilm-sae/L3/topk-256-k8-t6000"
    assert minilm_sae.MinilmSAESpec(4, 6144).name == "minilm-sae/L4/topk-6144"
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
        minilm_sae.MinilmSAESpec.from_name(bad)


def test_wordpieces_and_context():
    toks = ["the", "photo", "##synth", "##esis", "of", "plants"]
    assert minilm_sae._merge_wordpieces(toks, 2) == "photosynthesis"
    assert minilm_sae._merge_wordpieces(toks, 4) == "of"
    assert minilm_sae._context(toks, 4, 2) == "photosynthesis [of] plants" or minilm_sae._context(
        toks, 4, 2
    ).endswith("[of] plants")
    assert "##" not in minilm_sae._context(toks, 4, 2).split("[")[0], (
        "the left window must not start mid-word"
    )


def test_label_from_contexts_most_frequent_words():
    ctx = [
        {"word": "Plants", "value": 1.0, "context": ""},
        {"word": "plants", "value": 0.5, "context": ""},
        {"word": "sun", "value": 0.9, "context": ""},
        {"word": "leaf", "value": 0.2, "context": ""},
    ]
    assert minilm_sae.label_from_contexts(ctx, n_words=2) == "plants / sun"
    assert minilm_sae.label_from_contexts([]) == "(dead)"


def test_contexts_from_acts_finds_the_strongest_tokens():
    sae = synthetic_sae(8, d_sae=16, k=2)
    acts = torch.randn(40, 8)
    refs = torch.tensor([(j // 10, j % 10) for j in range(40)], dtype=torch.int32)
    tokens = [[f"t{t}w{p}" for p in range(10)] for t in range(4)]
    # chunks force the running top-k
    ctx = minilm_sae.contexts_from_acts(sae, acts, refs, tokens, n_top=3, chunk=7)
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


@pytest.mark.slow
def test_build_tiny_minilm_sae_is_a_sae_lens_sae(monkeypatch, tmp_path):
    """End to end on the real offline MiniLM and data: a very small SAE, cached and labelled."""
    from sae_lens import SAE

    from kit.core.paths import DataError

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    torch.set_num_threads(1)
    name = "minilm-sae/L4/topk-64-k4-t1500"
    try:
        sae = minilm_sae.load_minilm_sae(name)
    except DataError as e:
        pytest.skip(f"data directory unavailable: {e}")
    assert isinstance(sae, SAE) and sae.cfg.d_sae == 64 and sae.cfg.d_in == 384
    labels = minilm_sae.minilm_sae_labels(name)
    assert len(labels) == 64 and sum(lab != "(dead)" for lab in labels) > 32
    assert (minilm_sae.sae_dir(name) / "meta.json").is_file()
    import kit

    assert type(kit.load_sae(name)).__name__ == type(sae).__name__, (
        "kit.load_sae must dispatch minilm-sae/ names"
    )
