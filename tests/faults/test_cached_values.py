"""Fault injection on cached values (a damaged or changed file behind a valid key is named,
recomputed and rewritten, never used) and on the files of a built model directory."""

from __future__ import annotations

import json
import os
import stat
import warnings
from types import SimpleNamespace

import pytest

from kit.core import cached
from kit.core.cached import MISSING, DamagedCacheWarning, read_json, write_json


def test_a_dequantised_model_directory_has_one_file_mode(tmp_path, monkeypatch):
    """The dequantised model.safetensors was 0600 while the other files were 0644."""
    import transformers

    from kit.models import gguf

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    file = tmp_path / "m.Q4_K_M.gguf"
    file.write_bytes(b"GGUF not really")

    def save_weights(d):
        os.close(os.open(d / "model.safetensors", os.O_WRONLY | os.O_CREAT, 0o600))
        (d / "config.json").write_text("{}")

    model = SimpleNamespace(config=SimpleNamespace(), save_pretrained=save_weights)
    tokenizer = SimpleNamespace(save_pretrained=lambda d: (d / "tokenizer.json").write_text("{}"))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: model)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tokenizer)
    old = os.umask(0o022)
    try:
        out = gguf.dequantise(file)
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.path.iterdir()}
    assert modes["model.safetensors"] == 0o644 and set(modes.values()) == {0o644}, modes


def test_a_changed_file_hash_memo_is_not_believed(tmp_path, monkeypatch):
    """The identity memo says which sha256 a file has: a memo whose digest was changed would key
    every cache of that model under another model's name."""
    from kit.models import identity

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    right = identity.file_sha256(weights)
    cached._FILE_SHA256.clear()
    (memo,) = (tmp_path / "cache" / "identity").glob("*.json")
    doc = json.loads(memo.read_text())
    doc["value"]["sha256"] = "0" * 64
    memo.write_text(json.dumps(doc))
    with pytest.warns(DamagedCacheWarning, match=str(memo)):
        assert identity.file_sha256(weights) == right
    cached._FILE_SHA256.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert identity.file_sha256(weights) == right  # rewritten


def test_an_answers_record_with_uneven_lists_is_refused(tmp_path):
    from kit.cg.answers import answers_check

    good = {
        "model": "m",
        "benchmark": "b",
        "positions": [0, 3],
        "ids": ["a", "b"],
        "responses": ["x", "y"],
        "correct": [True, False],
        "truncated": [False, False],
        "max_new_tokens": 4,
    }
    path = tmp_path / "a.json"
    write_json(path, good)
    assert read_json(path, answers_check) == good
    path.write_text(json.dumps({**good, "correct": [True]}))  # legacy layout, one verdict short
    with pytest.warns(DamagedCacheWarning, match="correct: not one per position"):
        assert read_json(path, answers_check) is MISSING


def test_a_neuronvote_unit_with_a_changed_ranking_is_refused(tmp_path):
    from kit.neuronvote.units import UnitResult, unit_check

    unit = UnitResult(1, "word", "NN", rankings={"lasso": [2, 0, 1], "ridge": [0, 1, 2]})
    from dataclasses import asdict

    d = asdict(unit)
    assert unit_check(d) is None
    assert "not a permutation" in str(unit_check({**d, "rankings": {"lasso": [0, 0, 1]}}))
    assert unit_check({}) == "missing key 'layer'"
