import pytest
import torch

from kit.audits import superposition as S


def test_participation_ratio_cases():
    g = torch.Generator().manual_seed(0)
    iso = torch.randn(8000, 16, generator=g)
    assert S.participation_ratio(iso) == pytest.approx(16, rel=0.05), "isotropic data: PR = d"
    rank1 = torch.randn(500, 1, generator=g) * torch.randn(1, 16, generator=g)
    assert S.participation_ratio(rank1) == pytest.approx(1.0, abs=1e-6)
    few = torch.randn(5, 64, generator=g)
    assert S.participation_ratio(few) <= 4 + 1e-6, (
        "n samples cap PR at n - 1: the public sketch's bug"
    )


def test_interference_orthogonal_and_identical():
    g = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(64, 10, generator=g))
    assert S.interference(q.T) == pytest.approx(0.0, abs=1e-6)
    rand = torch.randn(10, 4096, generator=g)
    assert S.interference(rand) < 0.05, "random high-dimensional directions are nearly orthogonal"
    v = torch.randn(1, 8, generator=g)
    assert S.interference(v.repeat(3, 1)) == pytest.approx(1.0)


def test_regimes():
    assert S.classify_regime(0.5, 0.05) == "weak"
    assert S.classify_regime(1.0, 0.05) == "transition"
    assert S.classify_regime(1.3, 0.05) == "strong"
    assert S.classify_regime(0.5, 0.9) == "strong"


def test_superposition_flags_rank_capped():
    g = torch.Generator().manual_seed(0)
    ids = torch.arange(40) % 5
    r = S.superposition_regime({"blocks.0.hook_resid_post": torch.randn(40, 32, generator=g)}, ids)
    assert r.values["rank_capped"] is True
    ids = torch.arange(1000) % 5
    r = S.superposition_regime(
        {"blocks.0.hook_resid_post": torch.randn(1000, 32, generator=g)}, ids
    )
    assert r.values["rank_capped"] is False and r.diagnostic
    assert not r.can_fail and "<= 1.2" in r.by_construction, (
        "packing can never exceed 1: said, computed"
    )


def test_m13_nulls_by_hand():
    g = torch.Generator().manual_seed(0)
    # rank 1, variances 4, 1, 0, 0
    x = torch.randn(4000, 1, generator=g) * torch.tensor([[2.0, 1.0, 0.0, 0.0]])
    assert S.participation_ratio(x) == pytest.approx(1.0, abs=1e-6)
    assert S.diagonal_participation_ratio(x) == pytest.approx(25 / 17, rel=0.02)
    ids = torch.arange(4000) % 4
    r = S.superposition_regime({"blocks.0.hook_resid_post": x}, ids, n_directions=4)
    assert r.null == pytest.approx(25 / 17 / 4, rel=0.02) and r.value == pytest.approx(
        0.25, abs=1e-6
    )
