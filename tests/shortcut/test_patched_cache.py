"""Tests of kit.shortcut.patched_cache: patched answers to benchmark items are read back instead of
recomputed, only for the question they were made for (model and donor content, neuron set, prompt),
never for a model known by name only; the one-pass first-token answers equal generation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from kit.shortcut import evaluate, patched_cache, patching
from kit.shortcut import items as shortcut_items


def _model(seed: int, files: dict[str, str] | None = None, where: Path | None = None):
    """A tiny free-text model (asked through its tokenizer, not the world's way); with ``files``,
    a directory of that content stands for its weights (its identity)."""
    from kit.world.train import Arch, make_model

    m = make_model(Arch(1, 32, 2, 64, n_ctx=64), seed=seed).eval()
    assert m.tokenizer is not None
    m.tokenizer.name_or_path = "not-the-world-vocabulary"
    if files is not None:
        assert where is not None
        where.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (where / name).write_text(text)
        setattr(m, "kit_path", str(where))  # what kit.load_model sets
        setattr(m, "kit_name", f"test/{where.name}")
    return m


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    model = _model(0, {"weights": "model"}, tmp_path / "model")
    donor = _model(1, {"weights": "donor"}, tmp_path / "donor")
    data = shortcut_items.task_data(model, shortcut_items.study_items("add", "test", 6))
    assert data.items is not None
    return model, donor, data


def _counting(monkeypatch):
    """Record the (sets, prompts) every generation is asked for."""
    calls = []
    real = evaluate.group_patched_generate

    def spy(model, base, tokens, groups, *a, **k):
        calls.append((len(groups), tokens.shape[0]))
        return real(model, base, tokens, groups, *a, **k)

    monkeypatch.setattr(evaluate, "group_patched_generate", spy)
    return calls


def test_answers_are_read_back_and_only_missing_ones_computed(world, monkeypatch):
    model, donor, data = world
    a, b = [(0, 1), (0, 2)], [(0, 5)]
    calls = _counting(monkeypatch)
    first = evaluate.item_correct(model, donor, data, [[], a], max_new_tokens=3)
    assert calls == [(2, 6)]
    again = evaluate.item_correct(model, donor, data, [[], a], max_new_tokens=3)
    assert calls == [(2, 6)] and np.array_equal(first, again)  # nothing asked the model
    # a set in another order is the same set; a new set is the only one computed
    more = evaluate.item_correct(model, donor, data, [list(reversed(a)), b], max_new_tokens=3)
    assert calls == [(2, 6), (1, 6)] and np.array_equal(more[0], first[1])
    # the cached answers are what the model gives without a cache
    monkeypatch.setattr(patched_cache, "item_cache", lambda *a, **k: None)
    fresh = evaluate.item_correct(model, donor, data, [[], a, b], max_new_tokens=3)
    assert np.array_equal(fresh[:2], first) and np.array_equal(fresh[2], more[1])


def test_other_content_settings_or_prompts_are_not_read(world, tmp_path, monkeypatch):
    model, donor, data = world
    calls = _counting(monkeypatch)
    evaluate.item_correct(model, donor, data, [[(0, 1)]], max_new_tokens=3)
    evaluate.item_correct(model, donor, data, [[(0, 1)]], max_new_tokens=2)  # other settings
    assert len(calls) == 2
    (tmp_path / "donor" / "weights").write_text("retrained")  # the donor's files changed
    evaluate.item_correct(model, donor, data, [[(0, 1)]], max_new_tokens=3)
    assert len(calls) == 3
    two = patched_cache.subset(data, [0, 1])  # other prompts: only those not yet answered
    evaluate.item_correct(model, donor, two, [[(0, 1)]], max_new_tokens=3)
    assert len(calls) == 3
    other = shortcut_items.task_data(model, shortcut_items.study_items("add", "test", 8))
    evaluate.item_correct(model, donor, other, [[(0, 1)]], max_new_tokens=3)
    assert calls[-1] == (1, 2)  # the two new prompts


def test_models_known_by_name_and_sampled_answers_are_never_cached(world, monkeypatch):
    model, donor, data = world
    named = _model(2)
    setattr(named, "kit_name", "some/hub-id")  # a name could mean other weights tomorrow
    assert patched_cache.content_identity(named) is None
    assert patched_cache.content_identity(None) == "none"
    assert patched_cache.item_cache(named, donor, data, "responses", {}) is None
    assert patched_cache.item_cache(model, named, data, "responses", {}) is None
    assert patched_cache.item_cache(model, donor, data, "responses", {}) is not None
    tokens_only = shortcut_items.TaskData(data.tokens, data.lengths, data.targets, data.n)
    assert patched_cache.item_cache(model, donor, tokens_only, "responses", {}) is None
    from kit.models.generate import GenerationSettings

    sampled = shortcut_items.TaskData(
        data.tokens, data.lengths, data.targets, data.n, data.items,
        decoding=GenerationSettings(do_sample=True, temperature=1.0, seed=0),
    )  # fmt: skip
    assert patched_cache.item_cache(model, donor, sampled, "responses", {}) is None


def test_set_and_prompt_digests():
    assert patched_cache.set_digest([(0, 1), (1, 2)]) == patched_cache.set_digest([(1, 2), (0, 1)])
    assert patched_cache.set_digest([(0, 1)]) != patched_cache.set_digest([(0, 2)])
    m = _model(0)
    data = shortcut_items.task_data(m, shortcut_items.study_items("add", "test", 4))
    plain, with_target = (
        patched_cache.prompt_digests(data),
        patched_cache.prompt_digests(data, with_target=True),
    )
    assert len(set(plain)) == 4 and not set(plain) & set(with_target)
    # padding is not part of a prompt: the same prompt alone has the same digest
    assert patched_cache.prompt_digests(patched_cache.subset(data, [2])) == [plain[2]]


def test_first_tokens_are_greedy_one_token_answers_and_teacher_forced_probabilities(world):
    """One teacher-forced pass gives both locate's scores: the argmax is the token greedy
    generation gives first, and the probability is group_patched_logprobs'."""
    model, donor, data = world
    sets = [[], [(0, 1), (0, 2)], [(0, i) for i in range(0, 64, 3)]]
    prob, top = evaluate.first_tokens(model, donor, data, sets)
    gen = patching.group_patched_generate(model, donor, data.tokens, sets, 1, lengths=data.lengths)
    for p, n in enumerate(data.lengths.tolist()):
        assert gen[:, p, n].tolist() == top[:, p].tolist()
    first = torch.tensor([t[0] for t in data.targets])
    lp, hit = patching.group_patched_logprobs(
        model, donor, data.tokens, data.lengths - 1, first, sets
    )
    assert np.allclose(prob, lp.exp().numpy(), atol=1e-6)
    assert np.array_equal(hit.numpy(), top == first.numpy()[None, :])
    assert np.array_equal(
        evaluate.first_token_correct(model, data, top),
        evaluate.item_correct(model, donor, data, sets, max_new_tokens=1),
    )
    again, _ = evaluate.first_tokens(model, donor, data, sets)  # read back: the same values
    assert np.allclose(again, prob, atol=1e-12)


def test_first_tokens_keep_no_autograd_graph(world):
    """Without inference mode a 30-layer model's activations stay alive for every chunk (a real
    run of notebook 03 ran out of memory that way)."""
    model, donor, data = world
    first = torch.tensor([t[0] for t in data.targets])
    lp, top = patching.group_patched_first_token(
        model, donor, data.tokens, data.lengths - 1, first, [[(0, 1)], [(0, 2)]]
    )
    assert lp.grad_fn is None and not lp.requires_grad


def test_a_run_killed_midway_keeps_the_calls_it_finished(world):
    model, donor, data = world
    cache = patched_cache.item_cache(model, donor, data, "test-values", {})
    sets = [[(0, g)] for g in range(5)]
    asked = []

    def dies_on_third_call(set_idx, prompts):
        asked.append(list(set_idx))
        if len(asked) == 3:
            raise KeyboardInterrupt
        return [[10 * g + p for p in prompts] for g in set_idx]

    with pytest.raises(KeyboardInterrupt):
        patched_cache.per_set_and_prompt(cache, data, sets, dies_on_third_call, sets_per_call=2)
    resumed = []

    def finishes(set_idx, prompts):
        resumed.append(list(set_idx))
        return [[10 * g + p for p in prompts] for g in set_idx]

    values = patched_cache.per_set_and_prompt(cache, data, sets, finishes, sets_per_call=2)
    assert values == [[10 * g + p for p in range(data.n)] for g in range(5)]
    assert resumed == [[4]]  # the two finished calls (sets 0-3) were kept
    asked.clear()
    again = patched_cache.per_set_and_prompt(cache, data, sets, dies_on_third_call)
    assert again == values and asked == []


@pytest.mark.parametrize("damage", ["{}", "truncated", "changed answer", "impossible answer"])
def test_a_damaged_patched_answer_is_named_and_recomputed(world, monkeypatch, damage):
    """The patched-answer cache checked no value at all: a changed answer behind its valid id was
    used as it was. Now the digest and the answers' check refuse it, and the file is named."""
    from kit.models import cache as item_cache

    item_cache._WARNED.clear()
    model, donor, data = world
    sets = [[(0, 1)], [(0, 2)]]
    good = evaluate.responses_of(model, donor, data, sets, max_new_tokens=3)
    cache = patched_cache.item_cache(model, donor, data, "responses", {"max_new_tokens": 3})
    assert cache is not None
    tok = model.tokenizer
    cache = cache.extended(stop=[tok.eos_token_id] if tok.eos_token_id is not None else [])
    lines = cache.path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2 * data.n, "one record per (set, prompt)"
    rec = json.loads(lines[0])
    if damage == "{}":
        lines[0] = b"{}\n"
    elif damage == "truncated":
        lines[0] = lines[0][: len(lines[0]) // 2] + b"\n"
    elif damage == "changed answer":  # plausible token ids: only the digest sees the change
        rec["value"] = [(t + 1) % model.cfg.d_vocab for t in rec["value"]]
        lines[0] = json.dumps(rec).encode() + b"\n"
    else:  # no digest (as an older record) but token ids this vocabulary does not have
        del rec["sha"]
        rec["value"] = [model.cfg.d_vocab + 5] * len(rec["value"])
        lines[0] = json.dumps(rec).encode() + b"\n"
    cache.path.write_bytes(b"".join(lines))
    calls = _counting(monkeypatch)
    with pytest.warns(item_cache.DamagedCacheWarning) as seen:
        again = evaluate.responses_of(model, donor, data, sets, max_new_tokens=3)
    assert again == good and calls == [(1, 1)], "only the damaged answer is recomputed"
    assert any(str(cache.path) in str(w.message) for w in seen)
