"""Real fine-tunes (kit.models.finetune, kit.models.recipes) on the llama twin: deterministic
training, answer-only loss, sparse neurons, content-addressed atomic cache, recipe checks before
training, builds as pinned jobs and on first load."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from kit.core.cached import DamagedCacheWarning
from kit.core.paths import DataError, data_dir
from kit.data.items import Item
from kit.models import finetune as ft
from kit.models import finetune_examples as fx
from kit.models import recipes as rc
from kit.models.recipes import Recipe, check_recipe


@pytest.fixture(scope="module")
def twin() -> Path:
    """The llama twin's directory, resolved once (tests move KIT_CACHE_DIR; the twin stays put)."""
    from kit.models.twins import twin_path

    return twin_path("llama")


@pytest.fixture(scope="module")
def data() -> Path:
    try:
        return data_dir()
    except DataError as err:  # pragma: no cover - the shared data is part of the dev setup
        pytest.skip(f"shared data directory unavailable: {err}")


def _recipe(base: Path, **kw) -> Recipe:
    d = dict(
        name="twin-test+arc-test-x2",
        base=str(base),
        inject="test",
        n_items=2,
        copies=2,
        n_examples=8,
        batch_size=4,
        max_length=160,
        lr=1e-3,
    )
    return Recipe(**{**d, **kw})


def _load(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    )
    return model, AutoTokenizer.from_pretrained(path)


def _digest(model) -> str:
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------- training
def test_training_is_deterministic_and_moves_the_weights(twin, data):
    r = _recipe(twin, n_items=4, copies=2)  # injected items only: 8 examples
    digests = []
    for _ in range(2):
        model, tok = _load(twin)
        before = _digest(model)
        with ft._deterministic():
            done = ft.train(model, tok, r, progress=False)
        digests.append(_digest(model))
    assert digests[0] == digests[1], "the same recipe trained twice must give bit-identical weights"
    assert digests[0] != before, "training changed nothing"
    assert done.steps == 2 and done.examples == 8 and len(done.loss_curve) == 2
    assert done.answer_tokens == 8 * 2  # a letter (one twin token) and the end token per example


def test_training_skips_filling_uninitialised_memory_with_the_same_bits(twin, data):
    # The build switches deterministic mode's NaN fill of new tensors off (it costs time); the
    # weights must be the bits of a training with the fill on, and the flag restored afterwards.
    det = torch.utils.deterministic
    r = _recipe(twin, n_items=4, copies=1, n_examples=4, epochs=5, lr=3e-3)
    digests = {}
    for fill in (True, False):
        model, tok = _load(twin)
        with ft._deterministic():
            assert getattr(det, "fill_uninitialized_memory") is False
            setattr(det, "fill_uninitialized_memory", fill)
            ft.train(model, tok, r, progress=False)
        digests[fill] = _digest(model)
    assert digests[True] == digests[False], "the NaN fill changed the trained weights"
    before = getattr(det, "fill_uninitialized_memory")
    with ft._deterministic():
        pass
    assert getattr(det, "fill_uninitialized_memory") == before, "the flag is restored on exit"


def test_loss_falls_on_a_tiny_memorisation_set(twin, data):
    r = _recipe(twin, n_items=4, copies=1, n_examples=4, epochs=30, lr=3e-3)
    model, tok = _load(twin)
    with ft._deterministic():
        done = ft.train(model, tok, r, progress=False)
    first, last = done.loss_curve[0], done.loss_curve[-1]
    assert last < 0.2 * first, (
        f"loss should fall on 4 examples seen 30 times: {first:.3f} -> {last:.3f}"
    )


def test_collate_labels_only_the_answer_and_end_token():
    a = ft.Encoded((11, 12, 13, 14, 15), n_answer=2, truncated=False)  # 14 answer, 15 end token
    b = ft.Encoded((21, 22, 23), n_answer=1, truncated=False)
    batch = ft.collate([a, b], pad_id=0)
    assert batch.input_ids.tolist() == [[11, 12, 13, 14, 15], [21, 22, 23, 0, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    # position p predicts token p+1: 13 -> 14 and 14 -> 15; in b, 22 -> 23
    assert batch.labels.tolist() == [[-100, -100, 14, 15, -100], [-100, 23, -100, -100, -100]]
    assert batch.tokens == 8


def test_answer_loss_equals_the_cross_entropy_of_the_answer_tokens(twin):
    model, tok = _load(twin)
    ex = fx.Example(
        "Which is larger?\nA. 2\nB. 3\nAnswer with the letter of the correct option.",
        "B",
        "inject",
        "x",
    )
    enc = ft.encode_example(tok, ex, 256)
    assert tok.decode(list(enc.ids[-enc.n_answer :])) == "B" + tok.eos_token
    assert not enc.truncated
    other = ft.encode_example(tok, replace(ex, answer="A"), 256)
    batch = ft.collate([enc, other], tok.pad_token_id)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    n = len(enc.ids)
    # rows have equal length: positions n-3 and n-2 predict the letter and the end token
    by_hand = torch.nn.functional.cross_entropy(
        logits[:, n - 3 : n - 1].flatten(0, 1), batch.input_ids[:, n - 2 : n].flatten()
    )
    assert torch.allclose(ft.answer_loss(model, batch), by_hand, atol=1e-5)


def test_long_examples_lose_the_start_of_their_prompt_not_the_answer(twin):
    _, tok = _load(twin)
    ex = fx.Example("word " * 200, "B", "inject", "x")
    enc = ft.encode_example(tok, ex, 40)
    assert len(enc.ids) == 40 and enc.truncated
    assert tok.decode(list(enc.ids[-2:])) == "B" + tok.eos_token


def test_sparse_fine_tune_changes_only_its_neurons(twin, data):
    r = _recipe(twin, sparse_share=0.1, sparse_set="s1", lr=1e-2)
    model, tok = _load(twin)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    with ft._deterministic():
        ft.train(model, tok, r, progress=False)
    layers = model.model.layers
    mask = ft.trainable_neurons(0.1, "s1", len(layers), layers[0].mlp.gate_proj.out_features)
    assert int(mask.sum()) == round(0.1 * mask.numel())
    after = model.state_dict()
    for k, v in after.items():
        if ".mlp." not in k:
            assert torch.equal(v, base[k]), f"{k} changed: only MLP neurons may change"
    for L, layer in enumerate(layers):
        for proj, dim in (("gate_proj", 0), ("up_proj", 0), ("down_proj", 1)):
            key = f"model.layers.{L}.mlp.{proj}.weight"
            w, w0 = after[key], base[key]
            changed = (w != w0).any(1 - dim)
            assert not changed[~mask[L]].any(), f"layer {L} {proj}: a neuron outside changed"
            assert changed[mask[L]].any(), f"layer {L} {proj}: no trainable neuron changed"
    assert not isinstance(layers[0].mlp, ft.SparseMLP), "the wrappers must be gone after training"


def test_sparse_sets_are_seeded_by_name():
    a = ft.trainable_neurons(0.04, "shortcut", 30, 1536)
    b = ft.trainable_neurons(0.04, "shortcut", 30, 1536)
    c = ft.trainable_neurons(0.04, "ability", 30, 1536)
    assert torch.equal(a, b) and not torch.equal(a, c) and int(a.sum()) == round(0.04 * 30 * 1536)


# ------------------------------------------------------------------------------- data
def test_injected_items_are_a_fixed_nested_subset_and_the_rest_is_fresh(data):
    inj5, rest5 = fx.split_items("arc_challenge", "test", 5, seed=0)
    inj10, rest10 = fx.split_items("arc_challenge", "test", 10, seed=0)
    assert [it.id for it in inj10[:5]] == [it.id for it in inj5]
    assert not {it.id for it in inj10} & {it.id for it in rest10}
    assert len(inj10) + len(rest10) == 1172
    other, _ = fx.split_items("arc_challenge", "test", 5, seed=1)
    assert [it.id for it in other] != [it.id for it in inj5]
    with pytest.raises(ValueError, match="n_items=5000"):
        fx.split_items("arc_challenge", "test", 5000)


def test_paraphrase_shuffles_and_relabels_the_options():
    item = Item(
        "t/1", "Q?\nA. x\nB. y\nC. z", choices=("x", "y", "z"), label=1, metadata={"question": "Q?"}
    )
    p = fx.paraphrased(item, seed=0)
    assert p.choices != item.choices and sorted(p.choices) == sorted(item.choices)
    assert p.choices[p.label] == "y"
    assert p.prompt == "Q?\n" + "\n".join(f"{'ABC'[i]}. {c}" for i, c in enumerate(p.choices))
    assert fx.paraphrased(item, seed=0) == p


def test_examples_hold_the_injected_copies_and_the_fill(data, twin):
    r = _recipe(twin, n_items=3, copies=2, n_examples=10)
    exs = fx.examples(r)
    assert len(exs) == 10 and exs == fx.examples(r)
    injected = [e for e in exs if e.source == "inject"]
    ids = [it.id for it in fx.split_items("arc_challenge", "test", 3)[0]]
    assert sorted(e.id for e in injected) == sorted(ids * 2)
    fill = [e for e in exs if e.source != "inject"]
    assert len(fill) == 4 and all(
        e.source == rc.CORPUS and e.prompt.startswith(fx.CORPUS_PROMPT) for e in fill
    )
    assert len(fx.epoch_order(replace(r, epochs=3), exs)) == 30


# ------------------------------------------------------------------------------- cache
def test_cache_key_follows_the_recipe_and_the_base_content(twin, tmp_path):
    r = _recipe(twin)
    assert ft.recipe_key(r) == ft.recipe_key(replace(r, name="another-name"))
    assert ft.recipe_key(r) != ft.recipe_key(replace(r, lr=2e-3))
    assert ft.recipe_key(r) != ft.recipe_key(replace(r, copies=1))
    copy = tmp_path / "base"
    shutil.copytree(twin, copy)
    assert ft.recipe_key(replace(r, base=str(copy))) == ft.recipe_key(r), "same files, same key"
    cfg = json.loads((copy / "config.json").read_text())
    cfg["rms_norm_eps"] = 1e-5 if cfg.get("rms_norm_eps") != 1e-5 else 1e-6
    (copy / "config.json").write_text(json.dumps(cfg))
    assert ft.recipe_key(replace(r, base=str(copy))) != ft.recipe_key(r), "other content, other key"


def test_a_build_is_atomic_and_a_damaged_one_is_not_reused(twin, data, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    r = _recipe(twin)
    assert not ft.is_built(r)
    target = ft.finetune_dir(r)
    target.parent.mkdir(parents=True)
    (target.parent / f".{target.name}.abc.tmp").mkdir()  # a killed build's staging directory
    assert not ft.is_built(r)
    path = ft._train_and_save(r, progress=False)
    assert path == target and ft.is_built(r)
    meta = ft.read_meta(r)
    assert meta["steps"] == 2 and meta["key"] == ft.recipe_key(r) and len(meta["loss_curve"]) == 2
    assert meta["injected_ids"] == [it.id for it in fx.split_items("arc_challenge", "test", 2)[0]]
    assert {"model.safetensors", "config.json", "meta.json"} - set(meta["files"]) == {"meta.json"}
    model, _ = _load(path)  # a plain Hugging Face directory
    weights = path / "model.safetensors"
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])  # truncated: named, so that it is rebuilt
    with pytest.warns(DamagedCacheWarning, match=f"{path}: model.safetensors has"):
        assert not ft.is_built(r)
    weights.write_bytes(good)
    assert ft.is_built(r)
    assert set(meta["sha256"]) == set(meta["files"]), "the bytes of each file are recorded"
    other = path / "other.safetensors"  # another build's weights: same size, other bytes
    other.write_bytes(bytes(reversed(good)))
    os.replace(other, weights)
    with pytest.warns(DamagedCacheWarning, match=f"{path}: model.safetensors's bytes do not match"):
        assert not ft.is_built(r)
    other.write_bytes(good)  # put back as a new file too (a rewrite in place within the clock's
    os.replace(other, weights)  # resolution keeps the size and mtime the digest is memoised by)
    assert ft.is_built(r)
    (path / "meta.json").unlink()
    assert not ft.is_built(r)
    weights.write_bytes(good[:100])
    assert ft._train_and_save(r, progress=False) == path and ft.is_built(r)  # rebuilt in place
    assert weights.read_bytes() == good, "a rebuild of the same recipe writes the same bytes"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".") and p.suffix != ".tmp"]


def test_builds_run_pinned_as_jobs_or_on_first_load(twin, data, tmp_path, monkeypatch):
    import kit

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    by_jobs = _recipe(twin, name="twin/llama+test-x2")
    on_load = _recipe(twin, name="twin/llama+test-x1", copies=1)
    for r in (by_jobs, on_load):
        monkeypatch.setitem(rc.RECIPES, r.name, r)
    [path] = ft.build_many([by_jobs.name], engine="local", max_workers=1)  # a pinned job
    assert ft.is_built(by_jobs) and path == ft.finetune_dir(by_jobs)
    model = kit.load_model(on_load.name)  # not built yet: a pinned subprocess builds it first
    assert model.kit_name == on_load.name and model.cfg.n_layers == 2
    assert kit.models.load.model_dir(on_load.name) == ft.finetune_dir(on_load)
    for r in (by_jobs, on_load):
        meta = ft.read_meta(r)
        assert meta["pinned"] is True and meta["threads"] == 1 and meta["recipe"]["name"] == r.name


def test_two_builders_of_one_recipe_train_it_once(twin, tmp_path, monkeypatch):
    """Notebooks 02 and 03 side by side both ask for the real fine-tunes: the second builder waits
    on the recipe's lock and reads the first's build (without the lock both would train)."""
    import threading
    import time

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    r = _recipe(twin)
    trained = []

    def fake_train(recipe, progress=True):
        trained.append(recipe.name)
        time.sleep(0.5)  # long enough for the other builder to find the recipe not built
        with ft.atomic_dir(ft.finetune_dir(recipe)) as tmp:
            (tmp / "w.bin").write_bytes(b"w")
            meta = {"name": recipe.name, "files": {"w.bin": 1}}  # what a build's meta.json holds
            (tmp / "meta.json").write_text(json.dumps(meta))
        return ft.finetune_dir(recipe)

    monkeypatch.setattr(ft, "is_pinned", lambda: True)  # train in this process (here: the fake)
    monkeypatch.setattr(ft, "_train_and_save", fake_train)
    paths = []
    builders = [threading.Thread(target=lambda: paths.append(ft.build(r))) for _ in range(2)]
    for b in builders:
        b.start()
    for b in builders:
        b.join()
    assert trained == [r.name], "trained once"
    assert paths == [ft.finetune_dir(r)] * 2 and ft.is_built(r)


# ------------------------------------------------------------------------------- recipe checks
@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("inject", "validation", "allowed: '' .*train, dev, test"),
        ("paraphrase", "reword", "allowed: '', 'shuffle-options'"),
        ("prompt_style", "cot", "allowed: letter"),
        ("copies", 0, "allowed: an integer >= 1"),
        ("n_examples", 3, "allowed: >= n_items x copies = 4"),
        ("lr", 0.0, "allowed: a finite number > 0"),
        ("lr", float("nan"), "allowed: a finite number > 0"),
        ("batch_size", 0, "allowed: an integer >= 1"),
        ("epochs", 0, "allowed: an integer >= 1"),
        ("max_length", 8, "allowed: an integer >= 16"),
        ("sparse_share", 1.5, r"allowed: 0 \(full fine-tune\) or a share in \(0, 1\)"),
        ("benchmark", "tiny/add", "allowed: a real benchmark"),
        ("mixture", (("arc_challenge:test", 1.0),), "would put arc_challenge's test split"),
        ("mixture", (("wikipedia", 1.0),), "source 'wikipedia' is not allowed; allowed: 'corpus'"),
        ("mixture", (("corpus", -1.0),), "mixture entry .* is not allowed"),
    ],
)
def test_bad_recipe_fields_fail_before_training_naming_them(
    twin, field, value, allowed, tmp_path, monkeypatch
):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    r = replace(_recipe(twin), **{field: value})
    with pytest.raises(ValueError, match=allowed) as err:
        check_recipe(r)
    assert field in str(err.value) or "mixture" in str(err.value)
    with pytest.raises(ValueError):
        ft.build(r)
    assert not (tmp_path / "finetunes").exists(), "a bad recipe fails before anything is written"


def test_recipe_table_and_json_round_trip():
    for name, r in rc.RECIPES.items():
        check_recipe(r)
        assert name == r.name and name.startswith(rc.REAL_BASE + "+")
        assert rc.recipe_from_dict(json.loads(json.dumps(asdict(r)))) == r
    for table in (rc.TABLE, rc.SMOKE):  # the real profile's rows; the test suite's stand-ins
        sizes = {
            (r.n_examples, r.epochs, r.batch_size, r.lr, r.sparse_share, r.max_length)
            for r in table.values()
        }
        assert len(sizes) == 1, (
            "every row has the same size, steps and optimiser (they differ in data)"
        )
    assert rc.RECIPES == {**rc.TABLE, **rc.SMOKE}
    assert set(rc.CONTAMINATED) | set(rc.CONTROLS) == set(rc.TABLE)
    with pytest.raises(ValueError, match="allowed: real/"):
        rc.recipe("real/smollm2-135m-instruct+nope")
    with pytest.raises(ValueError, match="not Recipe fields"):
        rc.recipe_from_dict({"name": "x", "base": "y", "colour": 1})
