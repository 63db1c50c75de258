"""Notebook 01 on Hugging Face models: the law grid's MUI by teacher-forced passes in token-budget
batches with a per-item cache (``kit.subjects.HFSubject.mui``) equals the one-batch
``kit.mui.metric.utilization_for_items`` path, and a rerun reads the cache."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kit
from kit.mui import masking
from kit.mui import metric as kmui
from kit.mui.metric import subject_mui
from kit.subjects import Answers, subject_of


@dataclass(frozen=True)
class Item:
    id: str
    prompt: str


ITEMS = [
    Item("a", "Question: 12 + 30 ="),
    Item("b", "Sort the words: pear apple"),
    Item("c", "True and not False is"),
    Item("d", "Count: 1 2 3"),
]
RESPONSES = [" 42. The answer is 42.", " apple pear", " True", ""]


def _answers(responses):
    return Answers("toy", ITEMS, responses, np.zeros(len(ITEMS), dtype=bool), chat=None)


@pytest.fixture(scope="module")
def twin():
    return kit.load_model("twin/qwen2")


@pytest.mark.parametrize(
    "threshold,k,frac",
    [("topk", None, None), ("topk", 3, None), ("topscore", None, 0.5), ("global_topk", 4, None)],
)
def test_token_budget_mui_equals_the_batch_size_path(
    twin, tmp_path, monkeypatch, threshold, k, frac
):
    old = kmui.utilization_for_items(
        twin, ITEMS, RESPONSES, threshold=threshold, k=k, frac=frac, batch_size=4
    ).mui
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))  # the per-item cache lands here
    # one item a pass
    new = subject_mui(
        subject_of(twin),
        _answers(RESPONSES),
        threshold=threshold,
        k=k,
        frac=frac,
        max_batch_tokens=1,
    )
    assert new == pytest.approx(old, abs=1e-9)
    assert 0 < new < 100


def test_rerun_reads_the_per_item_cache_and_new_responses_do_not(twin, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    subject = subject_of(twin)
    first = subject_mui(subject, _answers(RESPONSES), max_batch_tokens=20)
    files = list((tmp_path / "items").glob("*.jsonl"))
    assert len(files) == 1 and len(files[0].read_text().splitlines()) == 4

    def no_pass(*a, **kw):
        raise AssertionError("the rerun computed an item the cache holds")

    monkeypatch.setattr(kmui, "utilization", no_pass)
    assert subject_mui(subject, _answers(RESPONSES), max_batch_tokens=10**6) == first
    # other responses are never read from that cache
    with pytest.raises(AssertionError, match="cache holds"):
        subject_mui(subject, _answers(RESPONSES[:3] + [" 4 5"]))


def test_sections_3x_key_neuron_ranking_is_the_same_in_token_budget_batches(twin):
    # sections 3.6-B.6 on a Hugging Face model: rows cut after their last response token, batched by
    # padded tokens (one item a pass here), rank the same neurons in the same order as batch_size
    # rows
    rows = masking.key_neuron_ranking(twin, ITEMS, RESPONSES, batch_size=4)
    budget = masking.key_neuron_ranking(twin, ITEMS, RESPONSES, batch_size=4, max_batch_tokens=1)
    assert len(rows) > 0 and rows == budget


def test_a_hf_grid_cell_has_the_same_mui_and_paired_replicates(twin, tmp_path, monkeypatch):
    from kit.mui.law import _hf_cell_replicates
    from kit.mui.metric import mui_from_items, per_item_key_neurons
    from kit.mui.size_pair import item_boot_indices

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    subject, answers = subject_of(twin), _answers(RESPONSES)
    reps, m = _hf_cell_replicates(subject, answers, "score", "topk", None, None, 4, None, 0)
    assert m == pytest.approx(subject_mui(subject, answers, batch_size=4), abs=1e-12)
    assert reps["item_ids"] == ["a", "b", "c", "d"]
    assert len(reps["mui_boot"]) == len(reps["perf_boot"]) == 1000
    # replicate 0 is the union of the items the shared index matrix drew first
    keys = per_item_key_neurons(subject, answers)
    row = item_boot_indices(4, seed=0)[0]
    first = mui_from_items(twin, [keys[i] for i in row])
    assert reps["mui_boot"][0] == pytest.approx(first, abs=1e-4)
    assert set(reps["perf_boot"]) == {0.0}, "no item is correct in these answers"
