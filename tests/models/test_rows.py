"""kit.models.rows: the tokens a teacher-forced pass (MUI, key neurons) scores for a generated
response are the tokens generation read and wrote, on a twin, on real SmolLM2 and on real
Qwen2.5-Coder-0.5B (where ``make real`` installed it): one tokenisation, the model's own
tokenizer's, with a BOS only where that tokenizer adds one.

TransformerLens swaps in a copy of the tokenizer that always prepends BOS; SmolLM2's and GPT-2's
tokenizers add none, so before the fix every teacher-forced row there began with a BOS that
generation never saw."""

from __future__ import annotations

import pytest

import kit
from kit.data.items import Item
from kit.models import generate as gen
from kit.models import real
from kit.models.rows import teacher_forced_rows
from kit.mui.metric import item_tokens

PROMPTS = ["Question: 12 + 30 =", "Sort the words: pear apple", "What is the capital of France?"]


def _generated(model, monkeypatch, prompt: str, chat: bool | None, max_new_tokens: int):
    """``(response, prompt ids, new ids)`` of greedy generation through ``transformers``, the ids
    read off its ``generate`` call; the new ids end before the first end-of-sequence token (the
    response is decoded without it)."""
    hf, tok = gen.hf_model(model.kit_path)
    calls = []
    generate = hf.generate

    def spy(**kwargs):
        out = generate(**kwargs)
        calls.append((kwargs["input_ids"], kwargs["attention_mask"], out))
        return out

    monkeypatch.setattr(hf, "generate", spy)
    settings = gen.GenerationSettings(max_new_tokens=max_new_tokens, chat=chat)
    (response,) = gen.generate_responses(model.kit_path, [prompt], settings, backend="hf")
    ((ids, mask, out),) = calls
    eos = hf.generation_config.eos_token_id
    stops = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
    new = out[0, ids.shape[1] :].tolist()
    new = new[: next((k for k, t in enumerate(new) if t in stops), len(new))]
    return response, ids[0][mask[0].bool()].tolist(), new


def _round_trips(model, ids: list[int]) -> bool:
    """Whether decoding ``ids`` and encoding the text gives ``ids`` back (a random twin often
    writes a byte of a character, or pieces the tokenizer would merge: text cannot carry those)."""
    tok = model.tokenizer
    return tok(tok.decode(ids), add_special_tokens=False)["input_ids"] == ids


def _check(model, monkeypatch, max_new_tokens: int) -> int:
    """Assert the scored rows equal the generated tokens (the prompt's always, the response's where
    its text carries its tokens); returns how many responses were compared whole."""
    whole = 0
    for chat in (False, True, None):
        for prompt in PROMPTS:
            response, prompt_ids, new = _generated(model, monkeypatch, prompt, chat, max_new_tokens)
            ((row, n_prompt),) = teacher_forced_rows(model, [prompt], [response], chat=chat)
            assert row[:n_prompt] == prompt_ids, (
                f"chat={chat}: the scored prompt tokens {row[:8]}... are not the generated ones "
                f"{prompt_ids[:8]}... (a BOS the model's tokenizer does not add?)"
            )
            if chat is None:  # MUI's rows of notebook 00 (the chat template when there is one)
                tokens, mask = item_tokens(model, [Item("q", prompt)], [response])
                assert tokens[0].tolist() == row and int(mask[0].sum()) == len(row) - n_prompt
            if _round_trips(model, new):
                assert row == prompt_ids + new, f"chat={chat}: scored {row}, generated {new}"
                whole += 1
    return whole


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_twin_rows_are_the_generated_tokens(arch, monkeypatch):
    # GPT-2's tokenizer adds no BOS (TransformerLens's copy did); the Llama twin's adds one
    model = kit.load_model(f"twin/{arch}")
    ids = model.tokenizer("a")["input_ids"]
    assert (ids[0] == model.tokenizer.bos_token_id) == (arch == "llama")
    assert model.to_tokens("a")[0].tolist() == ids
    assert _check(model, monkeypatch, max_new_tokens=3) >= 1


def test_smollm2_rows_are_the_generated_tokens(monkeypatch):
    model = kit.load_model("real/smollm2-135m-instruct")
    assert model.tokenizer("Question: hi")["input_ids"] == [17872, 42, 15876]
    assert _check(model, monkeypatch, max_new_tokens=12) == 3 * len(PROMPTS)
    gen.release()


def test_qwen_rows_are_the_generated_tokens(monkeypatch):
    # Qwen2.5's tokenizer adds no BOS either; its chat template writes a system turn of its own
    try:
        model = kit.load_model("real/qwen2.5-coder-0.5b-instruct")
    except real.RealModelMissing:
        pytest.skip("real/qwen2.5-coder-0.5b-instruct is installed by make real")
    assert (
        model.tokenizer("Question: hi")["input_ids"] == model.to_tokens("Question: hi")[0].tolist()
    )
    assert model.tokenizer.bos_token_id not in model.tokenizer("Question: hi")["input_ids"]
    assert _check(model, monkeypatch, max_new_tokens=12) == 3 * len(PROMPTS)
    gen.release()
