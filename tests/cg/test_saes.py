"""kit.cg.saes: sparse item activations (eq. 1)."""

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
