import numpy as np
import pytest
import torch
from sae_lens import TopKSAE, TopKSAEConfig

from kit.audits import saebench as B


def test_cv_and_saebench():
    assert B.coefficient_of_variation([0.9, 0.9, 0.9]) == 0.0
    assert B.coefficient_of_variation([1.0, 3.0]) == pytest.approx(0.5)
    r = B.saebench_audit([0.90, 0.91, 0.92, 0.91], [0.60, 0.62, 0.61, 0.60])
    assert r.passed and r.values["discriminability_d"] > 0.8
    noisy = B.saebench_audit([0.5, 0.9, 0.4, 0.95], [0.6, 0.62, 0.61, 0.6])
    assert not noisy.passed
    assert r.null == pytest.approx(0.6075) and r.null_passed is False, (
        "the control against itself has d = 0 < 0.8: its null verdict is a fail"
    )


def test_sparse_probe_on_separable_feature():
    y = np.array([0, 1] * 50)
    x = np.random.default_rng(0).normal(size=(100, 5))
    x[:, 3] = y * 5.0
    assert B.sparse_probe_accuracy(x, y, k=1) == 1.0
    runs = B.probe_reseeds(torch.tensor(x), y, 3, k=1)
    assert runs == [1.0, 1.0, 1.0]


def test_random_like_is_a_different_sae_of_same_shape():
    torch.manual_seed(0)
    sae = TopKSAE(TopKSAEConfig(d_in=16, d_sae=32, k=4))
    r = B.random_like(sae, seed=1)
    assert type(r) is type(sae) and r.W_dec.shape == sae.W_dec.shape
    assert not torch.allclose(r.W_dec, sae.W_dec)
    assert torch.allclose(r.W_dec.norm(dim=1), torch.ones(32))
