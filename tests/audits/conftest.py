"""Tiny random models that speak the world's word-level vocabulary (no built world needed)."""

from __future__ import annotations

import pytest


def world_model(n_layers: int = 2, attn_only: bool = False, seed: int = 0, d_model: int = 32):
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from kit.world.tokenizer import build_tokenizer, vocab

    cfg = HookedTransformerConfig(
        n_layers=n_layers,
        d_model=d_model,
        n_heads=4,
        d_head=8,
        d_mlp=64,
        d_vocab=len(vocab()),
        n_ctx=64,
        act_fn="gelu",
        normalization_type="LN",
        attn_only=attn_only,
        seed=seed,
    )
    return HookedTransformer(cfg, tokenizer=build_tokenizer()).eval()


@pytest.fixture(scope="session")
def make_model():
    """Factory: ``make_model(n_layers=2, attn_only=False, seed=0)``."""
    return world_model


@pytest.fixture(scope="module")
def model():
    return world_model()


@pytest.fixture(scope="module")
def ioi_items():
    from kit.world.tasks import get_task

    return get_task("ioi").items("test", 16)


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    # 2 shared cores: threads only fight each other on these tiny shapes
    import torch

    torch.set_num_threads(1)
