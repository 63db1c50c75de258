"""Fault injection on the built-directory caches (fine-tunes, MiniLM SAEs, real-model SAEs): a
truncated file, another build's file of the same size, and a ``{}`` meta.json are named, refused
and rebuilt, never used; a directory built before digests were recorded is accepted once on its
sizes and carries its digests from then on.

Each kind is read through its own entry point (``finetune.is_built``, ``build_minilm_sae``,
``build_real_sae``) at its own cache location; its training is replaced by a stand-in that writes
small files the way the builders do (``atomic_dir``, ``meta.json`` last with ``file_sizes`` and
``file_digests``): training a real one costs minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import pytest

import kit.core.cached as cached
from kit.audits import real_saes
from kit.core.cached import DamagedCacheWarning, file_digests, file_sizes
from kit.core.paths import atomic_dir
from kit.models import encoders, minilm_sae
from kit.models import finetune as ft


class Rebuilding(Exception):
    """Raised by the stand-in for a kind's training: the reader refused the directory."""


def _rebuilding(*args, **kwargs):
    raise Rebuilding


@dataclass
class Kind:
    what: str
    target: Callable[[], Path]
    used: Callable[[], bool]  # True: the reader used the directory; False: it started a rebuild
    files: dict[str, bytes]  # a stand-in build; the first file is the weights
    meta: dict


def _fine_tune(tmp_path, monkeypatch) -> Kind:
    target = tmp_path / "finetunes" / "stand-in-0123456789ab"
    monkeypatch.setattr(ft, "finetune_dir", lambda r: target)
    return Kind(
        "fine-tune",
        lambda: target,
        lambda: ft.is_built(None),  # type: ignore[arg-type]  # finetune_dir is the stand-in
        {"model.safetensors": b"w" * 4096, "config.json": b"{}", "tokenizer.json": b"{}"},
        {"name": "stand-in", "steps": 2},
    )


def _minilm_sae(tmp_path, monkeypatch) -> Kind:
    name = "minilm-sae/L4/topk-64-k3-t1000"
    monkeypatch.setattr(encoders, "load_encoder", _rebuilding)  # the first step of a build

    def used() -> bool:
        try:
            return minilm_sae.build_minilm_sae(name) == minilm_sae.sae_dir(name)
        except Rebuilding:
            return False

    return Kind(
        "MiniLM SAE",
        lambda: minilm_sae.sae_dir(name),
        used,
        {"sae_weights.safetensors": b"s" * 4096, "cfg.json": b"{}", "labels.json": b"{}"},
        {"name": name, "n_label_texts": 3},
    )


def _real_sae(tmp_path, monkeypatch) -> Kind:
    name = "real-sae/smollm2-135m-instruct/blocks.3.hook_resid_post/topk-64-k3-t1000"
    spec = real_saes.RealSAESpec.from_name(name)
    model = SimpleNamespace(kit_name=spec.model_name, kit_identity="stand-in-identity")
    monkeypatch.setattr(real_saes, "training_activations", _rebuilding)

    def used() -> bool:
        try:
            return real_saes.build_real_sae(name, model) == real_saes.sae_dir(
                spec, "stand-in-identity"
            )
        except Rebuilding:
            return False

    return Kind(
        "real-model SAE",
        lambda: real_saes.sae_dir(spec, "stand-in-identity"),
        used,
        {"sae_weights.safetensors": b"s" * 4096, "cfg.json": b"{}"},
        {"name": name},
    )


@pytest.fixture(params=[_fine_tune, _minilm_sae, _real_sae], ids=["finetune", "minilm", "real"])
def kind(request, tmp_path, monkeypatch) -> Kind:
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    return request.param(tmp_path, monkeypatch)


def build(kind: Kind, weights: bytes | None = None, digests: bool = True, listing: bool = True):
    """The stand-in build: its files, then ``meta.json`` listing their sizes (``listing``) and
    digests (``digests``); without both it is a build of an earlier version."""
    with atomic_dir(kind.target()) as tmp:
        for i, (name, raw) in enumerate(kind.files.items()):
            (tmp / name).write_bytes(weights if i == 0 and weights is not None else raw)
        meta = {**kind.meta, "files": file_sizes(tmp)} if listing else dict(kind.meta)
        if digests:
            meta["sha256"] = file_digests(tmp)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return kind.target()


def weights(kind: Kind) -> Path:
    return kind.target() / next(iter(kind.files))


def replace_bytes(path: Path, raw: bytes) -> None:
    """Put ``raw`` at ``path`` as a new file (how a copied-in file usually arrives)."""
    other = path.with_name(path.name + ".other")
    other.write_bytes(raw)
    os.replace(other, path)


def silently(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_a_healthy_directory_is_used_without_a_word(kind):
    build(kind)
    assert silently(kind.used)
    assert silently(kind.used), "and again (the digests memoised)"


def test_a_truncated_file_is_named_refused_and_rebuilt(kind):
    build(kind)
    w = weights(kind)
    w.write_bytes(w.read_bytes()[:100])
    with pytest.warns(DamagedCacheWarning, match=f"{kind.what} .*{w.name} has 100 bytes"):
        assert not kind.used()
    build(kind)
    assert silently(kind.used)


def test_another_builds_file_of_the_same_size_is_named_refused_and_rebuilt(kind):
    build(kind)
    assert silently(kind.used)
    w = weights(kind)
    replace_bytes(w, b"x" * w.stat().st_size)  # another build's weights: same size, other bytes
    with pytest.warns(DamagedCacheWarning, match=f"{kind.what} .*{w.name}'s bytes do not match"):
        assert not kind.used()
    build(kind)
    assert silently(kind.used)


def test_an_empty_meta_json_is_named_refused_and_rebuilt(kind):
    build(kind)
    (kind.target() / "meta.json").write_text("{}")
    with pytest.warns(DamagedCacheWarning, match=f"{kind.what} .*meta.json has no 'name'"):
        assert not kind.used()
    build(kind)
    assert silently(kind.used)


@pytest.mark.parametrize("listing", [True, False], ids=["sizes-listed", "nothing-listed"])
def test_a_directory_built_before_digests_is_accepted_once_and_then_carries_them(kind, listing):
    build(kind, digests=False, listing=listing)
    meta_path = kind.target() / "meta.json"
    before = json.loads(meta_path.read_text())
    assert "sha256" not in before
    assert silently(kind.used), "an earlier version's build is not rebuilt"
    meta = json.loads(meta_path.read_text())
    w = weights(kind)
    assert w.name in meta["sha256"]
    assert meta["sha256"] == {n: file_digests(kind.target())[n] for n in meta["sha256"]}
    assert {k: v for k, v in meta.items() if k != "sha256"} == before, "the rest is kept"
    assert silently(kind.used)
    replace_bytes(w, b"x" * w.stat().st_size)
    with pytest.warns(DamagedCacheWarning, match=f"{w.name}'s bytes do not match"):
        assert not kind.used(), "checked by its bytes from then on"


def test_a_file_is_hashed_once_per_version_in_a_process(tmp_path, monkeypatch):
    hashed: list[str] = []

    def counting_sha256(path, *args, **kwargs):
        hashed.append(Path(path).name)
        return real_sha256(path, *args, **kwargs)

    real_sha256 = cached.sha256
    monkeypatch.setattr(cached, "sha256", counting_sha256)
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * (3 << 20))  # three 1 MiB chunks
    first = cached.file_sha256(f)
    assert first == hashlib.sha256(b"a" * (3 << 20)).hexdigest()
    assert cached.file_sha256(f) == first and hashed == ["w.bin"], "the second read is memoised"
    replace_bytes(f, b"b" * (3 << 20))
    assert cached.file_sha256(f) == hashlib.sha256(b"b" * (3 << 20)).hexdigest()
    assert hashed == ["w.bin", "w.bin"], "a new file is hashed again"
