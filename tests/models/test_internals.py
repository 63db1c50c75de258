"""Teacher-forced internals: token-budget batches, truncation, per-item MUI with a resumable
cache."""

from __future__ import annotations

import pytest
import torch

import kit
from kit.models.cache import ItemCache
from kit.mui import metric as it

PROMPTS = [
    "Question: 12 + 30 =",
    "Sort the words: apple banana",
    "True and not False is",
    "Count: 1 2 3",
]
RESPONSES = [" 42. The answer is 42.", " apple banana cherry", " True", ""]


@pytest.fixture(scope="module")
def model():
    return kit.load_model("twin/llama")


def test_token_budget_batches_hand_case():
    # sorted by length: 1 (3), 3 (3), 0 (5), 2 (8); [1, 3] pads to 2 x 3 = 6 <= 10, adding 0 would
    # be 3 x 5.
    assert it.token_budget_batches([5, 3, 8, 3], 10) == [[1, 3], [0], [2]]
    assert it.token_budget_batches([20], 10) == [[0]]  # longer than the budget: alone
    with pytest.raises(ValueError, match="max_batch_tokens"):
        it.token_budget_batches([1], 0)


def test_rows_mark_the_response_after_the_prompt(model):
    rows = it.teacher_forced_rows(model, PROMPTS, RESPONSES)
    tok = model.tokenizer
    for (ids, n), p, r in zip(rows, PROMPTS, RESPONSES):
        assert ids[:n] == tok(p)["input_ids"] and ids == tok(p + r)["input_ids"]
    tokens, mask = it.pad_rows(rows, 0)
    assert mask[3].sum() == 0 and mask[0].sum() == len(rows[0][0]) - rows[0][1]


def test_too_long_items_lose_prompt_tokens_first(model):
    n_ctx = model.cfg.n_ctx
    with pytest.warns(UserWarning, match="dropped .* prompt tokens"):
        ((ids, n),) = it.teacher_forced_rows(
            model, ["word " * (n_ctx + 10)], [" The answer is 42."]
        )
    assert (
        len(ids) == n_ctx
        and ids[n:] == model.tokenizer(" The answer is 42.", add_special_tokens=False)["input_ids"]
    )


def test_per_item_key_neurons_match_one_dataset_pass(model):
    items = it.mui_key_neurons(model, PROMPTS, RESPONSES, max_batch_tokens=24, k=2)
    tokens, mask = it.pad_rows(it.teacher_forced_rows(model, PROMPTS, RESPONSES), 0)
    whole = kit.mui.utilization(model, tokens, mask, k=2, per_sample=True)
    for keys, m in zip(items, whole.sample_masks):
        assert keys == torch.nonzero(m.flatten()).flatten().tolist()
    assert items[3] == []  # an empty response has no key neuron
    assert it.mui_from_items(model, items) == pytest.approx(whole.mui)


def test_resume_after_a_killed_run(model, tmp_path, monkeypatch):
    cache = ItemCache("twin/llama", "toy", {"k": 2}, root=tmp_path)
    full = it.mui_key_neurons(
        model, PROMPTS, RESPONSES, ids=["a", "b", "c", "d"], max_batch_tokens=16, k=2
    )
    real, calls = kit.mui.metric.utilization, []

    def dies_on_second_batch(*a, **kw):
        calls.append(a[1].shape[0])
        if len(calls) == 2:
            raise KeyboardInterrupt  # what a kill looks like from inside
        return real(*a, **kw)

    monkeypatch.setattr(kit.mui.metric, "utilization", dies_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        it.mui_key_neurons(
            model,
            PROMPTS,
            RESPONSES,
            ids=["a", "b", "c", "d"],
            max_batch_tokens=16,
            k=2,
            cache=cache,
        )
    first = len(cache.load())
    assert 0 < first < 4
    with open(cache.path, "a") as f:
        f.write('{"id": "x", "val')  # a torn last line
    monkeypatch.setattr(
        kit.mui.metric,
        "utilization",
        lambda *a, **kw: calls.append(a[1].shape[0]) or real(*a, **kw),
    )
    calls.clear()
    resumed = it.mui_key_neurons(
        model, PROMPTS, RESPONSES, ids=["a", "b", "c", "d"], max_batch_tokens=16, k=2, cache=cache
    )
    assert resumed == full and sum(calls) == 4 - first, "the rerun recomputed finished items"
    # other settings, other records
    assert ItemCache("twin/llama", "toy", {"k": 3}, root=tmp_path).load() == {}


def test_published_responses_feed_teacher_forcing():
    from kit.data.responses import load_responses

    rs = load_responses("gsm8k/gemma2-9b-base", limit=3)
    model = kit.load_model("twin/gemma2")
    keys = it.mui_key_neurons(model, rs.prompts, rs.responses, ids=rs.ids, max_batch_tokens=4096)
    assert len(keys) == 3 and all(keys) and 0 < it.mui_from_items(model, keys) <= 100
