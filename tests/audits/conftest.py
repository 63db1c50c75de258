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


def random_saes(d_model: int, seed: int = 0) -> dict:
    """Untrained SAEs for the four roles of notebook 06 (seeded: the same weights every call)."""
    import torch
    from sae_lens import StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig

    torch.manual_seed(seed)
    return {
        "arch_a": StandardSAE(StandardSAEConfig(d_in=d_model, d_sae=64)),
        "arch_b": TopKSAE(TopKSAEConfig(d_in=d_model, d_sae=64, k=4)),
        "small": TopKSAE(TopKSAEConfig(d_in=d_model, d_sae=64, k=4)),
        "large": TopKSAE(TopKSAEConfig(d_in=d_model, d_sae=128, k=4)),
    }


def every_step(model, cfg, name: str = "random") -> dict:
    """Notebook 06's calls in order on ``model`` with :func:`random_saes`: the results of every
    step (``results``, the notebook's order), the SAE and circuit figures' inputs (``art``,
    ``c_art``) and the circuit context (``cc``)."""
    from kit.audits import circuit_family, suite

    saes = random_saes(model.cfg.d_model)
    names = {k: f"test/{k}" for k in saes}
    prompts, labels = suite.task_prompts(cfg.sae_tasks, cfg.n_prompts_per_task)
    ctx = suite.sae_context(
        model, name, saes, names, prompts, labels, hook="blocks.1.hook_resid_post"
    )
    r1, art = suite.run_sae_audits(ctx, model, cfg)
    m09 = suite.run_m09(ctx, cfg)
    cc = circuit_family.circuit_context(
        model, circuit_family.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model), cfg
    )
    r2, c_art = circuit_family.run_circuit_audits(model, cc, cfg, name)
    ex25 = suite.run_ex25(model, name, cc, ctx, cfg)
    m14 = suite.run_m14(model, name, cfg)
    results = r1 + [m09] + r2 + ex25 + [m14]
    return {"results": results, "sae": r1, "circuit": r2, "art": art, "c_art": c_art, "cc": cc}


@pytest.fixture(scope="session")
def audit_steps():
    """Factory: ``audit_steps(model, cfg, name="random")`` runs notebook 06's steps
    (:func:`every_step`)."""
    return every_step
