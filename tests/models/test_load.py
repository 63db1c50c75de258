"""Model and SAE names: one entry point, helpful errors, hub calls mocked at kit.models.hub."""

from __future__ import annotations

import pytest
import torch

import kit
from kit.models import hub as hub
from kit.models import load as models


def test_random_models_have_real_shapes():
    model = kit.load_model("random/tiny-gated")
    assert model.cfg.gated_mlp and model.cfg.d_mlp == 64
    tokens = torch.randint(0, model.cfg.d_vocab, (2, 5))
    assert model(tokens).shape == (2, 5, model.cfg.d_vocab)


def test_random_models_are_seeded():
    a, b = models.random_model("tiny-gelu", seed=3), models.random_model("tiny-gelu", seed=3)
    assert torch.equal(a.W_in, b.W_in)


def test_unknown_model_lists_what_exists():
    with pytest.raises(models.UnknownModelError) as e:
        kit.load_model("gpt-17")
    msg = str(e.value)
    assert "random/gpt2-small" in msg and "minilm" in msg and "transformer_lens" in msg


def test_unknown_random_shape_lists_shapes():
    with pytest.raises(models.UnknownModelError, match="random/llama-1b"):
        kit.load_model("random/llama-99b")


def test_hub_names_go_through_kit_hub_with_revision(monkeypatch):
    calls = []
    monkeypatch.setattr(hub, "hooked_transformer", lambda name, **kw: calls.append((name, kw)) or "model")
    assert kit.load_model("allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B") == "model"
    assert calls == [("allenai/OLMo-2-1124-7B", {"device": "cpu", "revision": "stage1-step1000-tokens5B"})]


def test_offline_hub_failure_says_what_to_do(monkeypatch):
    def offline(name, **kw):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(hub, "hooked_transformer", offline)
    with pytest.raises(OSError, match="network access"):
        kit.load_model("gpt2")


def test_pythia_revision_uses_checkpoint_value(monkeypatch):
    import transformer_lens

    seen = {}
    monkeypatch.setattr(transformer_lens.HookedTransformer, "from_pretrained",
                        classmethod(lambda cls, name, **kw: seen.update(name=name, **kw) or "m"))
    hub.hooked_transformer("EleutherAI/pythia-160m", revision="step3000")
    assert seen["name"] == "EleutherAI/pythia-160m" and seen["checkpoint_value"] == 3000


def test_sae_names_resolve_through_sae_lens_directory(monkeypatch):
    calls = []
    monkeypatch.setattr(hub, "sae_from_pretrained", lambda release, sae_id, device: calls.append((release, sae_id)) or "sae")
    assert kit.load_sae("gpt2-small-res-jb/blocks.8.hook_resid_pre") == "sae"
    assert calls == [("gpt2-small-res-jb", "blocks.8.hook_resid_pre")]


def test_unknown_sae_release_and_id():
    with pytest.raises(ValueError, match="no sae_lens release"):
        kit.load_sae("not-a-release/x")
    with pytest.raises(ValueError, match="not in release 'gpt2-small-res-jb'"):
        kit.load_sae("gpt2-small-res-jb/blocks.99.hook_resid_pre")
    with pytest.raises(ValueError, match="must look like"):
        kit.load_sae("nonsense")
