"""Tests of kit.shortcut.items: fresh and reference items, prompt truncation, decoding settings and
the chat switch, and the decoding reaching the patched generator."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kit.shortcut import evaluate, patched_cache
from kit.shortcut import items as shortcut_items
from kit.shortcut import patching as pt
from kit.subjects import load_model_any


def test_fresh_items_have_one_item_per_content():
    """Re-rendered contents are correlated items: a tiny-world fresh set holds each content once."""
    from kit.world import get_task

    items = shortcut_items.study_items("add", "fresh", 300, seed=2)
    assert len(items) == 300 == len({it.metadata["content"] for it in items})
    drawn = get_task("add").items("fresh", n=300, seed=2)
    assert len({it.metadata["content"] for it in drawn}) < 300, (
        "the plain split repeats contents (else this test is moot)"
    )
    assert (
        items[0] == drawn[0] and shortcut_items.study_items("add", "fresh", 300, seed=2) == items
    ), "seeded, first draws first"
    assert shortcut_items.reference_items("add", 300, seed=2) == items
    assert shortcut_items.study_items("add", "test", 50) == get_task("add").items("test", n=50), (
        "other splits unchanged"
    )
    with pytest.raises(
        ValueError, match="n=1000: task 'add' has .* distinct fresh contents.*n_ref, n_format"
    ):
        shortcut_items.study_items("add", "fresh", 1000)


def test_reference_items_are_never_the_evaluated_test_items():
    test = shortcut_items.study_items("gsm8k", "test", 5)
    ref = shortcut_items.reference_items("gsm8k", 5, ref_task="mawps")
    assert len(ref) == 5 and not {it.id for it in ref} & {it.id for it in test}
    assert [
        it.id
        for it in shortcut_items.reference_items("gsm8k", 3, ref_task="gsm8k", ref_split="train")
    ][0].startswith("gsm8k/train/")
    with pytest.raises(ValueError, match="ref_task is required"):
        shortcut_items.reference_items("gsm8k", 5)
    with pytest.raises(ValueError, match="Ref would equal Ori"):
        shortcut_items.reference_items("gsm8k", 5, ref_task="gsm8k")
    with pytest.raises(ValueError, match="no 'fresh' split"):
        shortcut_items.study_items("gsm8k", "fresh", 5)


def test_task_data_truncates_prompts_to_the_context_left_for_the_answer():
    """A prompt + its answer must fit the context (GSM8K item 4 is 256 twin tokens, the twin's
    n_ctx): long prompts keep BOS and their last tokens, with a warning; a generation then runs."""
    m = load_model_any("twin/llama")
    items = shortcut_items.study_items("gsm8k", "test", 5)
    full = m.to_tokens(items[4].prompt, prepend_bos=True)[0].tolist()
    assert len(full) >= m.cfg.n_ctx - 8
    with pytest.warns(UserWarning, match="1 of 5 prompts.*truncated"):
        d = shortcut_items.task_data(m, items, max_new_tokens=8)
    L = int(d.lengths[4])
    assert L == m.cfg.n_ctx - 8 and d.tokens[4, :L].tolist() == full[:1] + full[-(L - 1) :]
    assert d.lengths[:4].tolist() == [len(m.to_tokens(it.prompt)[0]) for it in items[:4]], (
        "short prompts untouched"
    )
    assert evaluate.item_correct(m, None, d, [[]], max_new_tokens=8).shape == (1, 5)
    with pytest.raises(ValueError, match="max_new_tokens=300"):
        shortcut_items.task_data(m, items, max_new_tokens=300)


def test_decoding_fields_validate_and_reach_the_settings():
    """The paper samples at T=1, top-k 50 (section 4.1): the paper profile does, dryrun inherits it,
    the tiny world stays greedy; bad values fail naming the field and the allowed values."""
    import kit

    paper, dry, tiny = (
        kit.load_params("03_shortcut_neurons", p) for p in ("paper", "dryrun", "tiny")
    )
    assert (
        (paper.decoding, paper.temperature, paper.top_k)
        == (dry.decoding, dry.temperature, dry.top_k)
        == ("sample", 1.0, 50)
    )
    assert tiny.decoding == "greedy" and tiny.chat is None and paper.chat is None
    st = shortcut_items.decoding_settings(paper)
    assert (st.do_sample, st.temperature, st.top_k, st.seed, st.chat, st.max_new_tokens) == (
        True,
        1.0,
        50,
        0,
        None,
        256,
    )
    assert (
        shortcut_items.decoding_settings(
            paper.model_copy(update={"generation_seed": 7, "seed": 3})
        ).seed
        == 7
    )
    assert shortcut_items.decoding_settings(paper.model_copy(update={"seed": 3})).seed == 3, (
        "generation_seed None = seed"
    )
    assert not shortcut_items.decoding_settings(tiny).do_sample
    d = shortcut_items.TaskData(torch.zeros(1, 1), torch.ones(1), [[0]], 1, decoding=st)
    assert shortcut_items.generation_kwargs(d) == dict(
        do_sample=True, temperature=1.0, top_k=50, top_p=None, seed=0
    )
    d.decoding = replace(st, top_k=0, temperature=0.5)
    assert (
        shortcut_items.generation_kwargs(d)["top_k"] is None
        and shortcut_items.generation_kwargs(d)["temperature"] == 0.5
    )
    d.decoding = shortcut_items.decoding_settings(tiny)
    assert (
        shortcut_items.generation_kwargs(d) == {}
        and shortcut_items.generation_kwargs(replace(d, decoding=None)) == {}
    )
    with pytest.raises(
        kit.ParamsError, match=r"(?s)field 'decoding'.*allowed values: 'greedy' or 'sample'"
    ):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"decoding": "beam"})
    with pytest.raises(kit.ParamsError, match="temperature"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"temperature": 0})
    with pytest.raises(kit.ParamsError, match="top_k"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"top_k": -1})
    with pytest.raises(kit.ParamsError, match="chat"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"chat": "yes please"})
    with pytest.raises(
        kit.ParamsError, match="(?s)decoding=.sample..*allowed values on them: greedy"
    ):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"decoding": "sample"})
    with pytest.raises(
        kit.ParamsError, match="(?s)chat=True.*allowed values on them: None or False"
    ):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"chat": True})
    assert kit.load_params("03_shortcut_neurons", "tiny", overrides={"chat": False}).chat is False


def test_world_models_refuse_sampling_and_chat_in_task_data():
    from kit.models.generate import GenerationSettings
    from kit.world.train import Arch, make_model

    # a world model by its vocabulary, not its name
    world = make_model(Arch(1, 32, 2, 64, n_ctx=64), seed=0)
    world.cfg.model_name = "any-name"
    for bad in (GenerationSettings(do_sample=True), GenerationSettings(chat=True)):
        with pytest.raises(
            ValueError, match="decoding: tiny-world models.*allowed on them: decoding='greedy'"
        ):
            shortcut_items.task_data(world, [object()], 1, bad)


def _gsm8k_twin(n: int = 3):
    m = load_model_any("twin/llama")
    items = [
        it
        for it in shortcut_items.study_items("gsm8k", "test", 8)
        if len(m.to_tokens(it.prompt)[0]) < 200
    ][:n]
    return m, items


def test_chat_switch_changes_the_prompt_tokens_of_a_tokenizer_with_a_template():
    """chat=None/True wrap the prompt in the twin's template (it has one), chat=False is the old raw
    prompt; a tokenizer without a template: None = raw, True fails naming the field."""
    from kit.models.generate import GenerationSettings

    m, items = _gsm8k_twin()
    tok = m.tokenizer
    raw = shortcut_items.task_data(m, items, 8)
    off = shortcut_items.task_data(m, items, 8, GenerationSettings(chat=False))
    auto = shortcut_items.task_data(m, items, 8, GenerationSettings(chat=None))
    on = shortcut_items.task_data(m, items, 8, GenerationSettings(chat=True))
    assert torch.equal(off.tokens, raw.tokens) and off.decoding.chat is False, (
        "chat off = the old prompt tokens"
    )
    assert torch.equal(auto.tokens, on.tokens) and auto.decoding.chat is True
    L0 = int(on.lengths[0])
    # the template by hand
    want = tok(f"<|user|>\n{items[0].prompt}{tok.eos_token}\n<|assistant|>\n")["input_ids"]
    assert (
        on.tokens[0, :L0].tolist() == want
        and want[0] == tok.bos_token_id
        and want.count(tok.bos_token_id) == 1
    )
    assert (on.lengths > raw.lengths).all(), "the template adds the role markers"
    saved = tok.chat_template
    try:
        tok.chat_template = None
        assert torch.equal(
            shortcut_items.task_data(m, items, 8, GenerationSettings(chat=None)).tokens, raw.tokens
        )
        with pytest.raises(ValueError, match="chat=True.*no chat_template"):
            shortcut_items.task_data(m, items, 8, GenerationSettings(chat=True))
    finally:
        tok.chat_template = saved


def test_decoding_reaches_the_patched_generator(monkeypatch):
    """Greedy = the old behaviour (the same generator call, the same tokens); sampling at T=1, top-k
    50 reaches the generator, differs from greedy and repeats exactly under the same seed (another
    seed differs)."""
    from kit.models.generate import SHORTCUT_PAPER_SAMPLING, GenerationSettings

    m, items = _gsm8k_twin()
    base = load_model_any("twin/llama@perturbed-1")
    calls = []

    def spy(*args, **kwargs):
        out = pt.group_patched_generate(*args, **kwargs)
        calls.append((kwargs, out.clone()))
        return out

    monkeypatch.setattr(evaluate, "group_patched_generate", spy)
    # every call must reach the generator: no answer read back from the patched-answer cache
    monkeypatch.setattr(patched_cache, "item_cache", lambda *a, **k: None)
    neurons = [[], [(0, i) for i in range(16)]]
    old = shortcut_items.task_data(m, items, 8)
    evaluate.item_correct(m, base, old, neurons, max_new_tokens=8)
    greedy = shortcut_items.task_data(m, items, 8, GenerationSettings(max_new_tokens=8, chat=False))
    evaluate.item_correct(m, base, greedy, neurons, max_new_tokens=8)
    (k_old, g_old), (k_greedy, g_greedy) = calls[-2:]
    assert (
        k_old.keys() == k_greedy.keys()
        and "do_sample" not in k_greedy
        and torch.equal(g_old, g_greedy)
    )
    ref = pt.group_patched_generate(
        m,
        base,
        old.tokens,
        neurons,
        8,
        lengths=old.lengths,
        max_rows=2048,
        stop_token_ids=[m.tokenizer.eos_token_id],
    )
    assert torch.equal(g_greedy, ref), "greedy is the generator's default (argmax) decoding"

    sampled = {}
    for seed in (0, 0, 1):
        data = shortcut_items.task_data(
            m, items, 8, replace(SHORTCUT_PAPER_SAMPLING, max_new_tokens=8, seed=seed, chat=False)
        )
        acc = evaluate.accuracies(m, base, data, neurons, max_new_tokens=8)
        kw, gen = calls[-1]
        assert (kw["do_sample"], kw["temperature"], kw["top_k"], kw["seed"]) == (
            True,
            1.0,
            50,
            seed,
        )
        sampled.setdefault(seed, []).append((gen, acc))
    (a, acc_a), (b, acc_b) = sampled[0]
    assert torch.equal(a, b) and np.array_equal(acc_a, acc_b), (
        "same seed, same samples, same accuracies"
    )
    assert not torch.equal(a, g_greedy), (
        "sampling at T=1 over the twin's near-flat logits must leave the argmax path"
    )
    assert not torch.equal(a, sampled[1][0][0]), "another generation_seed draws other samples"
