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


@pytest.fixture
def fake_hub(monkeypatch):
    """``kit.models.hub.snapshot`` answering every repo id with a twin's local directory (the
    repo's files as a download would leave them); records the calls."""
    from kit.models import twins

    calls = []

    def snapshot(repo_id, revision=None):
        calls.append((repo_id, revision))
        return str(twins.twin_path("qwen2" if "qwen" in repo_id.lower() else "llama"))

    monkeypatch.setattr(hub, "snapshot", snapshot)
    return calls


@pytest.mark.parametrize("name", ["lmsys/vicuna-7b-v1.3", "lmsys/vicuna-7b-v1.5", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
                                  "Qwen/Qwen2.5-Coder-7B-Instruct", "your-org/llama2-7b-gsm8k-contaminated"])
def test_any_hub_id_loads_through_the_snapshot_boundary(name, fake_hub):
    model = kit.load_model(name)
    assert fake_hub == [(name, None)]
    assert model.cfg.original_architecture in ("LlamaForCausalLM", "Qwen2ForCausalLM") and model.kit_name == name


def test_hub_revision_from_the_name_or_the_argument(fake_hub):
    kit.load_model("allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B")
    kit.load_model("EleutherAI/pythia-160m", revision="step3000")
    assert fake_hub == [("allenai/OLMo-2-1124-7B", "stage1-step1000-tokens5B"), ("EleutherAI/pythia-160m", "step3000")]


def test_offline_hub_failure_says_what_to_do(monkeypatch):
    def offline(repo_id, revision=None):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(hub, "snapshot", offline)
    with pytest.raises(OSError, match="network access"):
        kit.load_model("gpt2")


@pytest.mark.parametrize("files,weights", [(["config.json", "model-00001-of-00002.safetensors"], "*.safetensors"),
                                           (["config.json", "pytorch_model-00001-of-00002.bin"], "pytorch_model*.bin")])
def test_snapshot_fetches_safetensors_or_else_bin_weights(monkeypatch, files, weights):
    import huggingface_hub

    seen = {}
    monkeypatch.setattr(huggingface_hub, "list_repo_files", lambda repo, revision=None: files)
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo, revision=None, allow_patterns=None: seen.update(patterns=allow_patterns) or "/x")
    assert hub.snapshot("lmsys/vicuna-7b-v1.3", revision="main") == "/x"
    assert weights in seen["patterns"] and "*.json" in seen["patterns"]
    assert ("*.bin" not in seen["patterns"]) and (("*.safetensors" in seen["patterns"]) == (weights == "*.safetensors"))


def test_local_dir_without_config_and_unsupported_architectures(tmp_path):
    with pytest.raises(models.UnknownModelError, match="no config.json"):
        kit.load_model(str(tmp_path))
    (tmp_path / "config.json").write_text('{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}')
    with pytest.raises(models.UnknownModelError, match="allowed: llama"):
        kit.load_model(str(tmp_path))


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


@pytest.mark.parametrize("name, revision, expected", [
    ("allenai/OLMo-2-1124-7B", None, ("allenai/OLMo-2-1124-7B", None)),
    ("allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B", None, ("allenai/OLMo-2-1124-7B", "stage1-step1000-tokens5B")),
    ("EleutherAI/pythia-160m", "step3000", ("EleutherAI/pythia-160m", "step3000")),
    ("EleutherAI/pythia-160m@step3000", "step3000", ("EleutherAI/pythia-160m", "step3000")),  # the same, twice
    ("olmo2@step1", None, ("olmo2", "step1")),
])
def test_split_revision(name, revision, expected):
    assert models.split_revision(name, revision) == expected


@pytest.mark.parametrize("name, revision, match", [
    ("allenai/OLMo-2-1124-7B@", None, "empty revision after '@'"),
    ("@step1", None, "nothing before '@'"),
    ("a/b@step1@step2", None, "has 2 '@'"),
    ("a/b@step1", "step2", "names revision 'step1' but revision='step2'"),
    ("a/b", "", "revision=''"),
    ("a/b", "  ", "revision='  '"),
])
def test_bad_revisions_name_the_field_and_the_allowed_forms(name, revision, match):
    with pytest.raises(ValueError, match=match) as e:
        models.split_revision(name, revision)
    assert "allowed forms" in str(e.value) and "org/name@<revision>" in str(e.value)


def test_bad_revision_fails_before_any_hub_call(fake_hub):
    with pytest.raises(ValueError, match="empty revision"):
        kit.load_model("allenai/OLMo-2-1124-7B@")
    with pytest.raises(ValueError, match="empty revision"):
        kit.load_model("twin/olmo2@")
    assert fake_hub == []


def test_revision_reaches_the_hub_and_picks_the_revision_weights(monkeypatch):
    """The mocked hub answers each revision with a differently seeded twin (as the hub answers
    each checkpoint branch with other weights): the revision must reach it, and the loaded
    weights must be that revision's."""
    from kit.models import twins

    calls = []

    def snapshot(repo_id, revision=None):
        calls.append((repo_id, revision))
        return str(twins.twin_path("olmo2", revision=revision))

    monkeypatch.setattr(hub, "snapshot", snapshot)
    a = kit.load_model("allenai/OLMo-2-1124-7B@step1")
    b = kit.load_model("allenai/OLMo-2-1124-7B", revision="step2")
    plain = kit.load_model("allenai/OLMo-2-1124-7B")
    assert calls == [("allenai/OLMo-2-1124-7B", "step1"), ("allenai/OLMo-2-1124-7B", "step2"),
                     ("allenai/OLMo-2-1124-7B", None)]
    assert (a.kit_name, b.kit_name, plain.kit_name) == ("allenai/OLMo-2-1124-7B@step1", "allenai/OLMo-2-1124-7B@step2",
                                                        "allenai/OLMo-2-1124-7B")
    assert not torch.equal(a.W_out, b.W_out) and not torch.equal(a.W_out, plain.W_out)
    assert torch.equal(a.W_out, kit.load_model("twin/olmo2@step1").W_out)  # same revision, same weights
    with pytest.raises(ValueError, match="local directory"):
        kit.load_model(str(twins.twin_path("olmo2")), revision="step1")


def test_device_map_auto_splits_the_blocks_over_every_gpu(monkeypatch):
    # No GPU here: what is checked is that "auto" asks TransformerLens for one device per visible
    # GPU on cuda, and that any other device_map is refused naming the allowed values.
    import torch

    from kit.models import tl

    seen = {}
    real = tl.hooked_from_hf

    def spy(hf, tok, path, *, device="cpu", dtype=torch.float32, n_devices=1, **kw):
        seen.update(device=device, n_devices=n_devices)
        return real(hf, tok, path, device="cpu", dtype=dtype, n_devices=1, **kw)

    monkeypatch.setattr(tl, "hooked_from_hf", spy)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    kit.load_model("twin/llama", device_map="auto")
    assert seen == {"device": "cuda", "n_devices": 2}
    with pytest.raises(ValueError, match="allowed: None .* or 'auto'"):
        kit.load_model("twin/llama", device_map="balanced")
