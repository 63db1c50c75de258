"""The paper's setting on the tiny random twins (offline): each model read from disk once, scored
on several benchmarks, its concepts read through its own sae_lens SAE in token-budget batches."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kit.cg import model_space as cg_space
from kit.cg import suite as cg_suite
from kit.models import cache as item_cache
from kit.models import load as models


def test_model_dir_resolves_twins_local_dirs_and_hub_ids(tmp_path, monkeypatch):
    from kit.models import hub, twins

    assert models.model_dir("twin/llama") == twins.twin_path("llama")
    assert models.model_dir(str(twins.twin_path("gemma2"))) == twins.twin_path("gemma2")
    with pytest.raises(models.UnknownModelError, match="no config.json"):
        models.model_dir(str(tmp_path))
    with pytest.raises(models.UnknownModelError, match="no Hugging Face directory"):
        models.model_dir("zoo/base-m")
    calls = []
    monkeypatch.setattr(
        hub, "snapshot", lambda repo, revision=None: calls.append((repo, revision)) or str(tmp_path)
    )
    assert models.model_dir("your-org/model@v2") == tmp_path and calls == [("your-org/model", "v2")]


@pytest.fixture
def tmp_items(tmp_path, monkeypatch):
    """Per-item caches in a temporary folder (not the shared cache)."""
    monkeypatch.setattr(
        item_cache, "ItemCache", functools.partial(item_cache.ItemCache, root=tmp_path / "items")
    )
    return tmp_path / "items"


def test_model_suites_read_each_model_once_and_score_every_benchmark(tmp_items, monkeypatch):
    import transformers

    loads = []
    real = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def counted(cls, path, *a, **k):
        loads.append(str(path).rsplit("/", 1)[-1])
        return real(cls, path, *a, **k)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(counted))
    from kit.data import hub_benchmarks

    docs = [
        {"source": f"Document {i}: the river rose {i} metres.", "summary": "", "model": "m"}
        for i in range(4)
    ]
    # Vectara's set, offline: the hub boundary (commit lookup and streamed rows) is mocked
    monkeypatch.setattr(hub_benchmarks, "resolve_revision", lambda path, revision: "0" * 40)
    monkeypatch.setattr(hub_benchmarks, "_stream", lambda path, config, split, revision: iter(docs))
    benchmarks = ["gsm8k", "arc_challenge"]
    saes = ["twin-sae/gemma2/blocks.1.hook_resid_post", "twin-sae/llama/blocks.1.hook_resid_post"]
    suites = cg_space.model_suites(
        ["twin/gemma2", "twin/llama"],
        saes,
        benchmarks + ["vectara_hallucination"],
        n_items=3,
        max_new_tokens=2,
        max_length=64,
        device="cpu",
        labels="local",
        label_texts=4,
        max_batch_tokens=64,
    )
    assert loads == ["gemma2", "llama"], (
        f"each model is read from disk once, one after the other; got {loads}"
    )
    assert list(suites) == saes
    for s in suites.values():
        assert set(s.model_scores) == {"gemma2", "llama"}
        for m in s.model_scores:
            assert list(s.model_scores[m]) == benchmarks, (
                "every model is scored on every benchmark with a scorer"
            )
            assert list(s.model_acts[m]) == benchmarks
            assert all(
                len(v) == 3 and set(np.unique(v)) <= {0.0, 1.0} for v in s.model_scores[m].values()
            )
        assert s.acts["vectara_hallucination"].shape == (3, len(s.labels)), (
            "unscored: coverage only"
        )
        assert s.acts["gsm8k"].shape == (3, len(s.labels)) and s.label_source.startswith(
            "local: top-context"
        )
        assert len(s.contexts) == len(s.labels)
        # X_model (eq. 5) averages chi_model over both benchmarks
        from kit import cg

        x = cg_suite.model_x(s, "llama")
        per = [
            cg.chi_model(s.model_acts["llama"][b], s.model_scores["llama"][b]) for b in benchmarks
        ]
        assert np.allclose(x, np.mean(per, axis=0))
    # a rerun reads the cached responses and concepts: the same numbers
    again = cg_space.model_suites(
        ["twin/gemma2", "twin/llama"],
        saes,
        benchmarks + ["vectara_hallucination"],
        n_items=3,
        max_new_tokens=2,
        max_length=64,
        device="cpu",
        labels="local",
        label_texts=4,
        max_batch_tokens=64,
    )
    for n in saes:
        for b in benchmarks:
            assert (again[n].acts[b] != suites[n].acts[b]).nnz == 0
    with pytest.raises(ValueError, match="none has a scorer"):
        cg_space.model_suites(["twin/llama"], saes[1:], ["vectara_hallucination"], 2, 2)
    with pytest.raises(ValueError, match="pair up one to one"):
        cg_space.model_suites(["twin/llama"], saes, benchmarks, 2, 2)


def test_batched_concepts_equal_one_text_at_a_time(tmp_items):
    import kit

    model, sae = (
        kit.load_model("twin/llama"),
        kit.load_sae("twin-sae/llama/blocks.1.hook_resid_post"),
    )
    texts = [
        "A short one.",
        "A somewhat longer text, to make the padding matter in this batch.",
        "Mid length text.",
    ]
    batched = cg_space.hooked_item_concepts(model, sae, texts, max_batch_tokens=1000)
    single = [cg_space.hooked_item_concepts(model, sae, [t], max_batch_tokens=1) for t in texts]
    for i, s in enumerate(single):
        assert np.allclose(batched[i].toarray(), s.toarray(), atol=1e-4), (
            "right padding must change no real position"
        )
    with pytest.warns(UserWarning, match="longer than 4 tokens"):
        cg_space.hooked_item_concepts(model, sae, texts, max_length=4)
    contexts = cg_space.hooked_contexts(model, sae, texts, n_top=2)
    assert len(contexts) == sae.cfg.d_sae
    fired = [c for c in contexts if c]
    assert fired and all(
        c[0]["value"] >= c[-1]["value"] > 0 and "[" in c[0]["context"] for c in fired
    )


def test_hub_only_benchmarks_are_read_from_the_hub():
    assert cg_suite.benchmark_split("gsm8k") == ("test", "local")
    assert cg_suite.benchmark_split("socialiqa") == ("validation", "hf")
    assert cg_suite.benchmark_split("vectara_hallucination") == ("train", "hf")
    assert cg_suite.benchmark_split("lmsys_arena") == ("train", "hf")
