"""Tests of kit.mui.sae: SAE-feature MUI's denominator and features per token."""

from __future__ import annotations

import pytest
import torch

from kit.models.load import random_model
from kit.mui import sae as mui_sae


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
    res = mui_sae.sae_utilization(model, saes, tokens, resp, top=2, reference_width=None)
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
    assert (
        mui_sae.sae_top(131072) == 50 and mui_sae.sae_top(16384) == 6 and mui_sae.sae_top(512) == 1
    )
