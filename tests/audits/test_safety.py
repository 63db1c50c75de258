import numpy as np
import pytest
import torch

from kit.audits import safety as S


def test_one_shared_direction_has_zero_entropy():
    d = torch.randn(1, 16).repeat(4, 1)
    sve, rank = S.spectral_entropy(d)
    assert sve == pytest.approx(0.0, abs=1e-9) and rank == 1


def test_orthogonal_equal_directions_have_log_n_entropy():
    sve, rank = S.spectral_entropy(torch.eye(16)[:4])
    assert sve == pytest.approx(np.log(4)), "p_i = 1/4 each: SVE = log 4"
    assert rank == 4, "90% of variance needs all four equal directions"


def test_zero_directions_fail_early():
    with pytest.raises(ValueError, match="identical"):
        S.spectral_entropy(torch.zeros(3, 5))


def test_safety_sve_stable_compact_contrast_passes():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(16, generator=g)
    pos = {
        f"blocks.{L}.hook_resid_post": torch.randn(40, 16, generator=g) * 0.1 + u for L in range(3)
    }
    neg = {h: torch.randn(40, 16, generator=g) * 0.1 for h in pos}
    r = S.safety_sve(pos, neg, n_stability_runs=4)
    assert r.value < 0.2 and r.values["effective_rank"] == 1 and r.passed
    assert r.values["max_possible_sve"] == pytest.approx(np.log(3))
    assert r.can_fail and "log(n_layers) = 1.10" in r.by_construction, "stability can still fail"
    # shuffled labels: no shared direction, the per-layer directions are unrelated noise
    assert len(r.null_values) == 4 and r.null > r.value + 0.5
    one = S.safety_sve(
        {h: v for h, v in list(pos.items())[:1]}, {h: v for h, v in list(neg.items())[:1]}
    )
    assert one.passed and not one.can_fail, "a one-layer model passes M14 by construction"


def test_last_token_resid(model):
    out = S.last_token_resid(model, ["tom has 3 apples", "ann has 4"], ["blocks.0.hook_resid_post"])
    assert out["blocks.0.hook_resid_post"].shape == (2, model.cfg.d_model)
    _, cache = model.run_with_cache(model.to_tokens("ann has 4"))
    assert torch.allclose(
        out["blocks.0.hook_resid_post"][1], cache["blocks.0.hook_resid_post"][0, -1], atol=1e-5
    )
