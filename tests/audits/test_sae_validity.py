import copy
import math

import numpy as np
import pytest
import torch
from sae_lens import StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig

from kit.audits import sae_validity as V


def topk_sae(d_in=16, d_sae=32, k=4, seed=0):
    torch.manual_seed(seed)
    return TopKSAE(TopKSAEConfig(d_in=d_in, d_sae=d_sae, k=k))


def identity_sae(d: int) -> StandardSAE:
    """Feature f = relu(x_f), decoder row f = e_f."""
    sae = StandardSAE(StandardSAEConfig(d_in=d, d_sae=d))
    with torch.no_grad():
        sae.W_enc.copy_(torch.eye(d))
        sae.W_dec.copy_(torch.eye(d))
        sae.b_enc.zero_()
        sae.b_dec.zero_()
    return sae


# ---------------------------------------------------------------- M07
def test_identical_saes_agree_fully():
    sae = topk_sae()
    acts = torch.randn(200, 16)
    r = V.architecture_duality(sae, copy.deepcopy(sae), acts)
    assert r.values["feature_overlap"] == pytest.approx(1.0), (
        "identical SAEs must activate the same (matched) features"
    )
    assert r.values["direction_agreement"] == pytest.approx(1.0, abs=1e-5)
    assert r.value == pytest.approx(1.0, abs=1e-5) and r.passed
    assert not r.can_fail and "same encoder" in r.by_construction, (
        "an SAE compared with itself passes by construction"
    )
    other = V.architecture_duality(sae, topk_sae(seed=1), acts)
    assert other.can_fail, "two different SAEs: the verdict is open"


def test_orthogonal_directions_disagree():
    a = torch.eye(8)[:4]
    b = torch.eye(8)[4:]
    assert V.direction_agreement(a, b) == pytest.approx(0.0)
    assert V.direction_agreement(a, a) == pytest.approx(1.0)


def test_feature_overlap_uses_matching_not_indices():
    # B is A with features permuted: raw-index Jaccard would be ~0, matched must be 1
    fa = torch.tensor([[1, 0, 0], [0, 1, 1]], dtype=torch.bool)
    perm = torch.tensor([2, 0, 1])  # feature j of A is feature perm[j] of B
    fb = torch.zeros_like(fa)
    fb[:, perm] = fa
    inv = torch.argsort(perm)
    assert V.feature_overlap(fa, fb, perm, inv) == pytest.approx(1.0)


# ---------------------------------------------------------------- M08
def test_weightlens_agreement_one_when_descriptions_coincide():
    d = 8
    sae = identity_sae(d)
    tokens = torch.arange(d).repeat(5)
    acts = torch.nn.functional.one_hot(tokens, d).float()  # token t activates feature t only
    W_U = torch.eye(d)  # feature f promotes token f
    r = V.weightlens(sae, acts, tokens, W_U, top_k=1, n_features=None)
    assert r.value == pytest.approx(1.0), (
        "feature f promotes token f and fires before token f: agreement 1"
    )
    shifted = (tokens + 1) % d
    r2 = V.weightlens(sae, acts, shifted, W_U, top_k=1, n_features=None)
    assert r2.value == pytest.approx(0.0) and not r2.passed


def test_activation_top_tokens_ignores_last_position():
    feats = torch.tensor([[1.0], [5.0], [2.0]])
    ids = torch.tensor([3, -1, 4])
    assert V.activation_top_tokens(feats, ids, 6, 2) == [[4, 3]]


# ---------------------------------------------------------------- M10
def test_count_clusters():
    g = torch.Generator().manual_seed(0)
    one = torch.tensor([1.0, 0, 0, 0]) + 0.01 * torch.randn(6, 4, generator=g)
    two = torch.cat([one[:3], torch.tensor([0, 0, 1.0, 0]) + 0.01 * torch.randn(3, 4, generator=g)])
    assert V.count_clusters(one, 0.5) == 1
    assert V.count_clusters(two, 0.5) == 2, "orthogonal context groups must split into 2 clusters"


def test_prism_runs_on_real_sae():
    sae = topk_sae()
    acts = torch.randn(300, 16)
    pidx = torch.arange(300) // 10
    pos = torch.arange(300) % 10
    r = V.prism(sae, acts, pidx, pos, n_features=8)
    assert 0 <= r.value <= 1 and r.diagnostic and r.passed


# ---------------------------------------------------------------- M11
def test_identical_scales_fully_consistent():
    f = torch.relu(torch.randn(500, 6))
    dec = torch.eye(6)
    v = V.cross_scale_consistency(f, f.clone(), dec)
    assert v["cross_scale_consistency"] == pytest.approx(1.0)


def test_absorption_and_incoherent_split():
    g = torch.Generator().manual_seed(0)
    s = (torch.rand(2000, 2, generator=g) < 0.3).float() * torch.rand(2000, 2, generator=g)
    # large feature 0 absorbs both small features; large features 1, 2 are unrelated noise
    large = torch.stack(
        [s[:, 0] + s[:, 1], torch.rand(2000, generator=g), torch.rand(2000, generator=g)], 1
    )
    v = V.cross_scale_consistency(s, large, torch.eye(3), top_k=1)
    assert v["absorption_rate"] == pytest.approx(1 / 3), (
        "the page's denominator: all 3 large features"
    )
    v = V.cross_scale_consistency(s, large, torch.eye(3), top_k=1, absorption="matched")
    assert v["absorption_rate"] == pytest.approx(1.0), (
        "the 1 matched large feature is the best match of both"
    )
    with pytest.raises(ValueError, match="absorption.*all, matched"):
        V.cross_scale_consistency(s, large, torch.eye(3), absorption="some")
    # small feature = sum of two large features with orthogonal decoders: an incoherent split
    a, b = (torch.rand(2000, 2, generator=g) < 0.3).float().unbind(1)
    small = (a + b)[:, None]
    v2 = V.cross_scale_consistency(small, torch.stack([a, b], 1), torch.eye(2), top_k=2)
    assert v2["splitting_rate"] == pytest.approx(1.0)
    v3 = V.cross_scale_consistency(
        small, torch.stack([a, b], 1), torch.tensor([[1.0, 0], [1.0, 0]]), top_k=2
    )
    assert v3["splitting_rate"] == 0.0, "a split into parallel decoder directions is coherent"


def test_chunked_correlations_match_one_block():
    g = torch.Generator().manual_seed(0)
    fs, fl = (
        torch.relu(torch.randn(300, 5, generator=g)),
        torch.relu(torch.randn(300, 37, generator=g)),
    )
    fl[:, 3] = 2 * fs[:, 1]  # a perfect partner, found across blocks
    v1, i1 = V.top_correlations(fs, fl, top_k=3, chunk=4)
    v2, i2 = V.top_correlations(fs, fl, top_k=3, chunk=1000)
    assert torch.allclose(v1, v2, atol=1e-5) and torch.equal(i1, i2)
    assert i1[1, 0] == 3 and v1[1, 0] == pytest.approx(1.0, abs=1e-5)
    ref = torch.corrcoef(torch.cat([fs, fl], 1).T)[:5, 5:]
    assert torch.allclose(v1, ref.topk(3, dim=1).values, atol=1e-5)


def test_matryoshka_rejects_swapped_widths():
    with pytest.raises(ValueError, match="swap"):
        V.matryoshka(topk_sae(d_sae=64), topk_sae(d_sae=32), torch.randn(10, 16))


# ---------------------------------------------------------------- M12
def test_fixed_k_has_no_mismatch_and_undefined_correlation():
    v = V.sparsity_mismatch(torch.full((100,), 8.0), torch.rand(100) + 1)
    assert v["k_mismatch_rate"] == 0.0 and math.isnan(v["complexity_k_correlation"])


def test_mismatch_flags_outliers():
    c = torch.linspace(1, 2, 100)
    k = 10 * c
    k[50] = 3 * k[50]  # one token with 3x the expected active count
    v = V.sparsity_mismatch(k, c, threshold=0.5)
    assert v["k_mismatch_rate"] == pytest.approx(0.01) and v[
        "over_activation_rate"
    ] == pytest.approx(0.01)
    assert v["under_activation_rate"] == 0.0
    assert V.sparsity_mismatch(10 * c, c)["complexity_k_correlation"] == pytest.approx(1.0)


def test_topk_sae_passes_m12_by_construction():
    r = V.adaptive_sparsity(topk_sae(k=4), torch.randn(100, 16))
    assert r.values["mean_k"] == pytest.approx(4.0) and r.passed
    assert not r.can_fail and "by construction" in r.by_construction


def test_m12_threshold_is_the_pages_and_can_fail():
    c = torch.linspace(1, 2, 100)
    k = 10 * c
    k[:30] = 4 * k[:30]  # 30% of tokens far above the fit: flagged at 0.5
    assert V.sparsity_mismatch(k, c, threshold=0.5)["k_mismatch_rate"] > 0.2
    r = V.adaptive_sparsity(
        identity_sae(16), torch.randn(100, 16, generator=torch.Generator().manual_seed(0))
    )
    assert r.can_fail and "2.0" in r.pass_condition, (
        "a ReLU SAE's k varies per token: the verdict is open"
    )


# ---------------------------------------------------------------- EX34
def test_nla_direction_recovers_feature_direction():
    d = 16
    sae = identity_sae(d)
    g = torch.Generator().manual_seed(0)
    acts = 0.01 * torch.randn(400, d, generator=g)
    acts[:50, 3] += torch.rand(50, generator=g) + 1.0  # feature 3 fires along e_3
    r = V.nla_sae_convergence(sae, acts, torch.eye(d), n_features=d, top_k=20, top_tokens=1)
    per = dict(zip(range(d), r.values["per_feature_cosine"]))
    assert max(r.values["per_feature_cosine"]) > 0.95, (
        "top activations along the decoder direction give cosine ~1"
    )
    assert r.values["n_features"] >= 1
    assert 3 in per


def test_m11_chunked_equals_unchunked():
    """M11's result does not depend on how many large features are correlated at once."""
    small, large = topk_sae(d_sae=16, seed=1), topk_sae(d_sae=48, seed=2)
    acts = torch.randn(400, 16, generator=torch.Generator().manual_seed(0))
    one = V.matryoshka(small, large, acts, min_corr=0.1, chunk=10_000)
    chunked = V.matryoshka(small, large, acts, min_corr=0.1, chunk=5)  # 48 features in 10 blocks
    assert one.values["n_large_matched"] > 0, (
        "the case must have matches for the comparison to mean anything"
    )
    assert chunked.value == pytest.approx(one.value, abs=1e-9)
    for k in ("splitting_rate", "absorption_rate", "n_large_matched", "n_small_alive"):
        assert chunked.values[k] == pytest.approx(one.values[k], abs=1e-9), k
    assert np.allclose(chunked.values["best_corr"], one.values["best_corr"], atol=1e-5)
    assert one.values["absorption_denominator"] == "48 large features (all)"
    matched = V.matryoshka(small, large, acts, min_corr=0.1, absorption="matched")
    assert (
        matched.values["absorption_denominator"]
        == f"{one.values['n_large_matched']} matched large features"
    )


@pytest.mark.parametrize("arch", ["standard", "jumprelu", "topk"])
def test_feature_blocks_equal_the_full_encoding(arch):
    """M11's large SAE is encoded a block of features at a time; every block equals sae.encode's
    columns."""
    from sae_lens import JumpReLUSAE, JumpReLUSAEConfig

    from kit.audits.activations import FeatureBlocks, sae_features

    torch.manual_seed(3)
    sae = {
        "standard": lambda: StandardSAE(StandardSAEConfig(d_in=16, d_sae=40)),
        "jumprelu": lambda: JumpReLUSAE(JumpReLUSAEConfig(d_in=16, d_sae=40)),
        "topk": lambda: TopKSAE(TopKSAEConfig(d_in=16, d_sae=40, k=5)),
    }[arch]()
    with torch.no_grad():
        for p in sae.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    acts = torch.randn(200, 16, generator=torch.Generator().manual_seed(1))
    full = sae_features(sae, acts)
    fb = FeatureBlocks(sae, acts, chunk=7)  # 40 features in 6 blocks, the last one short
    assert fb.blockwise
    got = torch.cat([fb.block(j, min(j + 7, 40)) for j in range(0, 40, 7)], 1)
    assert (full > 0).float().mean() > 0.05, "the case must have active features"
    assert torch.allclose(got, full, atol=1e-5)
    if arch == "topk":
        assert ((got > 0).sum(1) <= 5).all()
