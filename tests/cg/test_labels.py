"""Concept labels: the stop-word filter, the labeller interface, Neuronpedia's
explanations through the one network boundary (kit.models.hub, mocked here)."""

from __future__ import annotations

import gzip
import json

import pytest

from kit.cg import labels as L
from kit.models import hub


def ctx(*words, value=1.0):
    return [{"value": value, "word": w, "context": f"[{w}]"} for w in words]


def test_content_words_exclude_stopwords_punctuation_and_special_tokens():
    assert [
        w
        for w in [
            "the",
            "The",
            ",",
            "...",
            "[CLS]",
            "<s>",
            "<|user|>",
            " ",
            "apples",
            "42",
            "B",
            "d",
        ]
        if L.is_content_word(w)
    ] == ["apples", "42", "B", "d"], "answer letters (B, d) are kept"


def test_top_context_labeller_drops_function_words_and_says_when_nothing_is_left():
    lab = L.TopContextLabeller(n_words=2)
    # 'the' is the most frequent word but a stop-word: the label is made of the content words
    assert lab.label(ctx("the", "the", "the", "apples", "apples", "pears", ",")) == "apples / pears"
    assert lab.label(ctx("the", "of", "the", ",")) == "(stop-words/punctuation: the / ,)"
    assert lab.label([]) == "(dead)"
    assert lab([ctx("cat"), []]) == ["cat", "(dead)"], "one label per concept, in order"


def test_a_custom_labeller_plugs_in_through_the_interface():
    class Upper:
        name = "upper"

        def __call__(self, contexts):
            return [c[0]["word"].upper() if c else "-" for c in contexts]

    labels, source, contexts = L.sae_labels(
        "twin-sae/llama/blocks.1.hook_resid_post",
        2,
        "local",
        lambda: [ctx("cat"), []],
        labeller=Upper(),
    )
    assert labels == ["CAT", "-"] and source == "local: upper" and contexts == [ctx("cat"), []]


def test_neuronpedia_ids_come_from_sae_lens_directory():
    assert (
        L.neuronpedia_id("gemma-scope-2b-pt-res-canonical/layer_20/width_16k/canonical")
        == "gemma-2-2b/20-gemmascope-res-16k"
    )
    for local in (
        "twin-sae/llama/blocks.1.hook_resid_post",
        "minilm-sae/w128",
        "no-such-release/x",
    ):
        assert L.neuronpedia_id(local) is None


GEMMA = "gemma-scope-2b-pt-res-canonical/layer_20/width_16k/canonical"


def test_auto_labels_read_neuronpedia_and_skip_the_local_contexts(monkeypatch):
    calls = []
    monkeypatch.setattr(
        hub, "neuronpedia_explanations", lambda npid: calls.append(npid) or {0: "dates", 2: "code"}
    )

    def never():
        raise AssertionError("local contexts must not be computed when Neuronpedia answers")

    labels, source, contexts = L.sae_labels(GEMMA, 3, "auto", never)
    assert calls == ["gemma-2-2b/20-gemmascope-res-16k"]
    assert labels == ["dates", "(no explanation)", "code"] and contexts is None
    assert source == "Neuronpedia explanations (gemma-2-2b/20-gemmascope-res-16k)"


def test_auto_labels_fall_back_to_local_offline_and_say_why(monkeypatch):
    def offline(npid):
        raise OSError("no network")

    monkeypatch.setattr(hub, "neuronpedia_explanations", offline)
    labels, source, _ = L.sae_labels(GEMMA, 2, "auto", lambda: [ctx("the", "cat"), []])
    assert labels == ["cat", "(dead)"]
    assert "labels are local (Neuronpedia unreachable (OSError))" in source
    with pytest.raises(OSError, match="labels='neuronpedia'.*offline"):
        L.sae_labels(GEMMA, 2, "neuronpedia", lambda: [])
    _, source, _ = L.sae_labels(
        "twin-sae/llama/blocks.1.hook_resid_post", 1, "auto", lambda: [ctx("x")]
    )
    assert source.endswith("labels are local (no Neuronpedia id)")


def test_bad_label_settings_fail_early():
    with pytest.raises(ValueError, match="allowed values: auto, local, neuronpedia"):
        L.sae_labels(GEMMA, 1, "gpt", lambda: [])
    with pytest.raises(ValueError, match="has no Neuronpedia id"):
        L.sae_labels("twin-sae/llama/blocks.1.hook_resid_post", 1, "neuronpedia", lambda: [])
    with pytest.raises(ValueError, match="gave 1 concepts, the SAE has 2"):
        L.sae_labels("twin-sae/llama/blocks.1.hook_resid_post", 2, "local", lambda: [ctx("x")])


def _gz(rows):
    return gzip.compress("\n".join(json.dumps(r) for r in rows).encode() + b"\n")


def test_neuronpedia_exports_are_read_batch_by_batch_until_absent(monkeypatch):
    batches = {
        0: _gz([{"index": "0", "description": " dates "}, {"index": "1", "description": ""}]),
        1: _gz([{"index": "0", "description": "later"}, {"index": "1", "description": "code"}]),
    }
    urls = []

    def read(url, timeout):
        urls.append(url)
        return batches.get(int(url.rsplit("batch-", 1)[1].split(".")[0]))

    monkeypatch.setattr(hub, "_read_url", read)
    assert hub.neuronpedia_explanations("gemma-2-2b/20-gemmascope-res-16k") == {
        0: "dates",
        1: "code",
    }, "first non-empty description wins"
    assert (
        urls[0] == f"{hub.NEURONPEDIA_EXPORTS}/gemma-2-2b/20-gemmascope-res-16k"
        "/explanations/batch-0.jsonl.gz"
    )
    assert len(urls) == 3, "stops at the first absent batch"
    monkeypatch.setattr(hub, "_read_url", lambda url, timeout: None)
    with pytest.raises(FileNotFoundError, match="no exported explanations"):
        hub.neuronpedia_explanations("gemma-2-2b/20-gemmascope-res-16k")
    with pytest.raises(ValueError, match="<modelId>/<sourceId>"):
        hub.neuronpedia_explanations("gemma-2-2b")
