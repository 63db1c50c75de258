"""Batched generation (HF generate, KV cache, chat templates, truncation; the vLLM backend through a
stand-in)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from kit.models import generate as gen
from kit.models import twins

PROMPTS = [
    "Question: 12 + 30 =",
    "The astronaut drops a feather and a hammer on the moon. Which lands first?",
    "Sort:",
]


@pytest.fixture(scope="module")
def llama():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = twins.twin_path("llama")
    return (
        path,
        AutoModelForCausalLM.from_pretrained(path).eval(),
        AutoTokenizer.from_pretrained(path),
    )


def test_batched_greedy_equals_one_at_a_time(llama):
    path, model, tok = llama
    settings = gen.GenerationSettings(max_new_tokens=5)
    got = gen.generate_responses(path, PROMPTS, settings, batch_size=2)
    for prompt, response in zip(PROMPTS, got):  # unbatched, no padding, the chat template by hand
        text = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        ids = torch.tensor([gen.encode(tok, text)])
        out = model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=tok.pad_token_id)
        assert response == tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


def test_chat_template_on_when_the_tokenizer_has_one(llama):
    _, _, tok = llama
    assert gen.use_chat(tok, None) and not gen.use_chat(tok, False)
    assert gen.prompt_text(tok, "hi", True) == "<|user|>\nhi</s>\n<|assistant|>\n"
    assert gen.encode(tok, "<s>hi")[:2] != [tok.bos_token_id, tok.bos_token_id], "BOS written twice"
    from transformers import AutoTokenizer

    plain = AutoTokenizer.from_pretrained(twins.twin_path("gpt2"))
    plain.chat_template = None
    assert not gen.use_chat(plain, None)
    with pytest.raises(ValueError, match="no chat_template"):
        gen.use_chat(plain, True)


def test_sampling_is_seeded_and_differs_from_greedy(llama):
    path = llama[0]
    sample = gen.GenerationSettings(
        max_new_tokens=8, do_sample=True, temperature=1.0, top_k=50, seed=3
    )
    a = gen.generate_responses(path, PROMPTS, sample)
    assert a == gen.generate_responses(path, PROMPTS, sample)
    assert a != gen.generate_responses(path, PROMPTS, gen.GenerationSettings(max_new_tokens=8))
    assert gen.SHORTCUT_PAPER_SAMPLING.do_sample and gen.SHORTCUT_PAPER_SAMPLING.top_k == 50
    with pytest.raises(ValueError, match="temperature"):
        gen.GenerationSettings(do_sample=True, temperature=0.0)


def test_long_prompts_are_truncated_with_a_warning(llama):
    path = llama[0]
    with pytest.warns(UserWarning, match="exceed the model's context"):
        out = gen.generate_responses(
            path, ["one two three " * 200], gen.GenerationSettings(max_new_tokens=3)
        )
    assert len(out) == 1


def test_bad_backend_and_empty_prompts(llama):
    with pytest.raises(ValueError, match="allowed: auto, hf, vllm"):
        gen.generate_responses(llama[0], PROMPTS, backend="tgi")
    with pytest.raises(ValueError, match="empty"):
        gen.generate_responses(llama[0], [])


def test_respond_ablates_and_refuses_to_cache_ablated_responses(tmp_path):
    from kit.models.cache import ItemCache
    from kit.models.load import load_model

    hooked = load_model("twin/llama")
    settings = gen.GenerationSettings(max_new_tokens=6)
    plain = gen.respond(hooked, PROMPTS, settings)
    every = [(L, i) for L in range(hooked.cfg.n_layers) for i in range(hooked.cfg.d_mlp)]
    assert gen.respond(hooked, PROMPTS, settings, ablate=every) != plain
    assert gen.respond(hooked, PROMPTS, settings) == plain, "the ablation hooks outlived the call"
    with pytest.raises(ValueError, match="ablate and cache"):
        gen.generate_responses(
            hooked.kit_path,
            PROMPTS,
            settings,
            ablate=every,
            cache=ItemCache("m", "b", settings.as_dict(), root=tmp_path),
        )
    with pytest.raises(ValueError, match="not loaded from a Hugging Face directory"):
        gen.respond(object(), PROMPTS, settings)


@pytest.fixture
def fake_vllm(llama, monkeypatch):
    """vLLM is not installed here: a stand-in module records what kit hands to it; a 80 GiB GPU
    with ``gpu["free"]`` bytes free stands in for torch.cuda's memory query."""
    import sys
    import types

    _, _, tok = llama
    calls, gpu = {"engines": 0}, {"free": 60 * 2**30, "total": 80 * 2**30}

    class LLM:
        def __init__(self, model, dtype, seed, gpu_memory_utilization):
            import os

            calls["init"] = (model, dtype, seed)
            calls["utilization"] = gpu_memory_utilization
            calls["engines"] += 1
            # where the engine would start: vLLM's engine process uses the first GPU it sees
            calls["env"] = {
                k: os.environ.get(k)
                for k in ("CUDA_VISIBLE_DEVICES", "VLLM_ENABLE_V1_MULTIPROCESSING")
            }

        def get_tokenizer(self):
            return tok

        def generate(self, prompts, params):
            calls["prompts"], calls["params"] = prompts, params
            return [
                types.SimpleNamespace(outputs=[types.SimpleNamespace(text=f"r{i}")])
                for i in range(len(prompts))
            ]

    fake = types.ModuleType("vllm")
    fake.LLM, fake.SamplingParams = LLM, lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)

    def memory(device):
        calls["measured"] = device
        return gpu["free"], gpu["total"]

    monkeypatch.setattr(gen, "_gpu_memory", memory)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    yield calls, gpu
    gen.release()


def test_vllm_backend_gets_the_chat_template_and_the_sampling_settings(llama, fake_vllm, tmp_path):
    path, _, tok = llama
    calls, _ = fake_vllm

    # the twin's context is 256 tokens
    paper = replace(gen.SHORTCUT_PAPER_SAMPLING, max_new_tokens=8)
    out = gen.generate_responses(
        path, PROMPTS[:2], paper, backend="vllm", dtype="bf16", device="cuda"
    )
    assert out == ["r0", "r1"] and calls["init"] == (str(path), "bfloat16", 0)
    # the engine's budget: half of the 60 GiB free, as a share of the 80 GiB card
    assert calls["utilization"] == pytest.approx(0.5 * 60 / 80)
    # the token rows of the HF path: the chat template, one BOS
    assert calls["prompts"][0] == {
        "prompt_token_ids": gen.encode(tok, gen.prompt_text(tok, PROMPTS[0], True))
    }
    eos = [tok.eos_token_id]  # the twin's generation_config stops at its eos, as transformers does
    assert calls["params"][0] == {
        "max_tokens": 8,
        "seed": gen.item_seed(0, 0),
        "repetition_penalty": 1.0,
        "stop_token_ids": eos,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
    }
    assert calls["params"][1]["seed"] == gen.item_seed(0, 1) != calls["params"][0]["seed"], (
        "one seed per item"
    )
    gen.generate_responses(
        path,
        PROMPTS[:1],
        gen.GenerationSettings(max_new_tokens=4),
        backend="vllm",
        dtype="bf16",
        device="cuda",
    )
    # greedy
    assert calls["params"] == [
        {
            "max_tokens": 4,
            "seed": gen.item_seed(0, 0),
            "repetition_penalty": 1.0,
            "stop_token_ids": eos,
            "temperature": 0.0,
        }
    ]
    assert calls["engines"] == 1, "the engine of the same model was not kept"
    with pytest.raises(ValueError, match="max_new_tokens leaves 0"):  # no room for the prompt
        gen.generate_responses(
            path,
            PROMPTS[:1],
            gen.GenerationSettings(max_new_tokens=256),
            backend="vllm",
            device="cuda",
        )
    with pytest.raises(ValueError, match="ablate needs backend='hf'"):
        gen.generate_responses(path, PROMPTS[:1], backend="vllm", ablate=[(0, 1)], device="cuda")
    from kit.models.cache import ItemCache

    cache = ItemCache("twin/llama", "toy", {"max_new_tokens": 4}, root=tmp_path)
    greedy = gen.GenerationSettings(max_new_tokens=4)
    gen.generate_responses(
        path, PROMPTS[:2], greedy, backend="vllm", cache=cache, ids=["a", "b"], device="cuda"
    )
    calls.pop("prompts")
    assert gen.generate_responses(
        path, PROMPTS, greedy, backend="vllm", cache=cache, ids=["a", "b", "c"], device="cuda"
    ) == ["r0", "r1", "r0"]
    assert len(calls["prompts"]) == 1, "a rerun generated items the cache holds"
    assert calls["params"][0]["seed"] == gen.item_seed(0, "c"), (
        "a resumed item is seeded by its id, not its batch"
    )
    assert not cache.load() and cache.extended(backend="vllm").load(), (
        "vLLM's responses went under the HF key"
    )


def test_vllm_starts_on_the_gpu_whose_memory_it_measured(llama, fake_vllm, monkeypatch):
    """vLLM takes no device: its engine process uses the first GPU it sees. kit measures the free
    memory of ``device`` and starts the engine with only that GPU visible."""
    import os

    path = llama[0]
    calls, _ = fake_vllm
    gen.generate_responses(
        path, PROMPTS[:1], gen.GenerationSettings(max_new_tokens=4), backend="vllm", device="cuda:1"
    )
    assert calls["measured"] == "cuda:1"
    assert calls["env"] == {"CUDA_VISIBLE_DEVICES": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
    assert "CUDA_VISIBLE_DEVICES" not in os.environ, "this process's environment was left changed"
    gen.release()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")  # torch's cuda:1 is the machine's GPU 6
    gen.generate_responses(
        path, PROMPTS[:1], gen.GenerationSettings(max_new_tokens=4), backend="vllm", device="cuda:1"
    )
    assert (
        calls["env"]["CUDA_VISIBLE_DEVICES"] == "6" and os.environ["CUDA_VISIBLE_DEVICES"] == "4,6"
    )
    with pytest.raises(ValueError, match="only 2 GPU.s. visible"):
        gen.vllm_device_environment("cuda:2")
    with pytest.raises(ValueError, match="vLLM runs on a GPU"):
        gen.generate_responses(path, PROMPTS[:1], backend="vllm", device="cpu")


@pytest.fixture
def penalised_twin(llama, tmp_path):
    """twin/llama whose generation_config.json carries repetition_penalty 1.3, as some instruct
    models ship one."""
    import shutil

    path = tmp_path / "llama-rp"
    shutil.copytree(llama[0], path)
    config = json.loads((path / "generation_config.json").read_text())
    (path / "generation_config.json").write_text(json.dumps({**config, "repetition_penalty": 1.3}))
    yield path
    gen.release()


def test_the_models_generation_config_is_honoured_or_overridden_on_both_backends(
    penalised_twin, llama, fake_vllm
):
    from transformers import AutoModelForCausalLM

    _, _, tok = llama
    calls, _ = fake_vllm
    settings = gen.GenerationSettings(max_new_tokens=12, chat=False)
    hf = gen.generate_responses(penalised_twin, PROMPTS, settings, backend="hf")
    plain = gen.generate_responses(
        penalised_twin, PROMPTS, replace(settings, repetition_penalty=1.0), backend="hf"
    )
    assert hf != plain, "the penalty changes nothing here: the test would not see it"
    model = AutoModelForCausalLM.from_pretrained(penalised_twin).eval()
    ids = torch.tensor([gen.encode(tok, PROMPTS[0])])
    # its config
    want = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=tok.pad_token_id)
    assert hf[0] == tok.decode(want[0, ids.shape[1] :], skip_special_tokens=True)
    gen.generate_responses(penalised_twin, PROMPTS[:1], settings, backend="vllm", device="cuda")
    assert calls["params"][0]["repetition_penalty"] == 1.3, "vLLM was not given the model's penalty"
    gen.generate_responses(
        penalised_twin,
        PROMPTS[:1],
        replace(settings, repetition_penalty=1.0),
        backend="vllm",
        device="cuda",
    )
    assert calls["params"][0]["repetition_penalty"] == 1.0, (
        "an explicit setting is not applied on both"
    )
    assert settings.as_dict() == replace(settings, repetition_penalty=None).as_dict()
    assert "repetition_penalty" not in settings.as_dict(), (
        "the default keeps the cache keys written before it"
    )
    with pytest.raises(ValueError, match="repetition_penalty"):
        gen.GenerationSettings(repetition_penalty=0)


def test_a_generation_config_vllm_cannot_apply_keeps_generation_on_transformers(
    penalised_twin, fake_vllm
):
    config = json.loads((penalised_twin / "generation_config.json").read_text())
    (penalised_twin / "generation_config.json").write_text(
        json.dumps({**config, "no_repeat_ngram_size": 3})
    )
    backend, why = gen.choose_backend(penalised_twin, "cuda", "bf16")
    assert backend == "hf" and "no_repeat_ngram_size=3" in why
    with pytest.raises(
        ValueError, match="vLLM cannot apply the model's generation_config no_repeat_ngram_size=3"
    ):
        gen.generate_responses(
            penalised_twin,
            PROMPTS[:1],
            gen.GenerationSettings(max_new_tokens=4),
            backend="vllm",
            device="cuda",
        )
    assert fake_vllm[0]["engines"] == 0, "the engine started before the refusal"


def test_weight_bytes_counts_the_parameters_without_loading(llama):
    path, model, _ = llama
    n = sum(p.numel() for p in model.parameters())
    assert gen.weight_bytes(path, "bf16") == 2 * n and gen.weight_bytes(path, None) == 4 * n


def test_auto_backend_takes_vllm_only_when_installed_on_a_gpu_and_the_model_fits(
    llama, fake_vllm, monkeypatch
):
    path, _, _ = llama
    calls, gpu = fake_vllm
    need = gen.weight_bytes(path, "bf16")
    assert gen.choose_backend(path, "cpu", "bf16")[0] == "hf"
    assert gen.choose_backend(path, "cuda", "bf16", ablate=[(0, 1)])[0] == "hf"
    assert gen.choose_backend(path, "cuda:0", "bf16")[0] == "vllm"
    # the weights must fit in 60% of half the free memory: just below and just above the line
    gpu["free"] = int(need / (gen.VLLM_WEIGHT_SHARE * gen.VLLM_MEMORY_SHARE)) + 8
    assert gen.choose_backend(path, "cuda", "bf16")[0] == "vllm"
    gpu["free"] = int(need / (gen.VLLM_WEIGHT_SHARE * gen.VLLM_MEMORY_SHARE)) - 8
    backend, why = gen.choose_backend(path, "cuda", "bf16")
    assert backend == "hf" and "budget" in why
    # auto on a GPU that fits: the engine generates; on the CPU: transformers does (same as hf)
    gpu["free"] = 60 * 2**30
    assert gen.generate_responses(
        path, PROMPTS[:2], gen.GenerationSettings(max_new_tokens=4), device="cuda", dtype="bf16"
    ) == ["r0", "r1"]
    assert calls["engines"] == 1
    cpu = gen.generate_responses(path, PROMPTS[:2], gen.GenerationSettings(max_new_tokens=4))
    assert cpu == gen.generate_responses(
        path, PROMPTS[:2], gen.GenerationSettings(max_new_tokens=4), backend="hf"
    )
    assert cpu != ["r0", "r1"]
    monkeypatch.delitem(__import__("sys").modules, "vllm")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    assert gen.choose_backend(path, "cuda", "bf16") == ("hf", "vllm is not installed")
    with pytest.raises(ValueError, match="allowed: auto, hf, vllm"):
        gen.generate_responses(path, PROMPTS, backend="tgi")
    with pytest.raises(ValueError, match="vllm_memory_share"):
        gen.generate_responses(path, PROMPTS, vllm_memory_share=0)
