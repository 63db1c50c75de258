"""Identities of models and files: content, not names; hashed once per version of a file."""

from __future__ import annotations

import hashlib
import os

import pytest

from kit.core import cached
from kit.models import identity as ident


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    cached._FILE_SHA256.clear()


def test_file_sha256_is_the_hash_of_the_bytes(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"abc")
    assert ident.file_sha256(f) == hashlib.sha256(b"abc").hexdigest()
    assert ident.path_identity(f) == "sha256:" + hashlib.sha256(b"abc").hexdigest()


def test_a_file_is_hashed_once_per_version(tmp_path, monkeypatch):
    f = tmp_path / "w.bin"
    f.write_bytes(b"one")
    calls = []
    original = cached.sha256
    monkeypatch.setattr(cached, "sha256", lambda p, *a: calls.append(p) or original(p, *a))
    first = ident.file_sha256(f)
    cached._FILE_SHA256.clear()  # a new process: only the memo on disk is left
    assert ident.file_sha256(f) == first and len(calls) == 1, "an unchanged file was hashed again"
    f.write_bytes(b"two")  # rewritten in place: new content, new ctime
    assert ident.file_sha256(f) == hashlib.sha256(b"two").hexdigest() and len(calls) == 2


def test_same_size_and_mtime_still_changes_the_identity(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"aaaa")
    st = os.stat(f)
    before = ident.file_sha256(f)
    f.write_bytes(b"bbbb")  # same size; mtime set back as `cp -p` or a restore would
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert ident.file_sha256(f) != before, (
        "a replaced file kept the old hash (ctime must be part of the memo)"
    )


def test_directory_identity_covers_weights_config_and_tokenizer_not_hidden_files(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"w1")
    (d / "tokenizer.json").write_text("t")
    first = ident.path_identity(d)
    assert first.startswith("dir-sha256:")
    (d / ".cache").mkdir()
    (d / ".cache" / "x").write_text("download bookkeeping")
    (d / "sub").mkdir()
    assert ident.path_identity(d) == first, "hidden files and subfolders are not part of the model"
    for name, data in [
        ("model.safetensors", b"w2"),
        ("tokenizer.json", "u"),
        ("config.json", '{"a": 1}'),
    ]:
        before = ident.path_identity(d)
        (d / name).write_bytes(data) if isinstance(data, bytes) else (d / name).write_text(data)
        assert ident.path_identity(d) != before, f"changing {name} kept the identity"


def test_name_identity_of_paths_zoo_members_and_hub_ids(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text("x")
    assert ident.name_identity(str(f)) == ident.path_identity(f)
    assert ident.name_identity("meta-llama/Llama-3.1-8B") == "name:meta-llama/Llama-3.1-8B"
    zoo = ident.name_identity("zoo/base-m", world="micro")
    assert zoo.startswith("zoo:micro:base-m:") and zoo != ident.name_identity(
        "zoo/base-s", world="micro"
    )
    assert ident.name_identity("zoo/base-l@step-100", world="micro") != ident.name_identity(
        "zoo/base-l", world="micro"
    )
    with pytest.raises(FileNotFoundError, match="no file or directory"):
        ident.path_identity(tmp_path / "missing")


def test_fingerprints_bind_records_to_their_text():
    assert ident.fingerprints(["p1", "p2"], ["r", "r"]) == [
        ident.text_fingerprint("p1", "r"),
        ident.text_fingerprint("p2", "r"),
    ]
    assert ident.text_fingerprint("ab", "c") != ident.text_fingerprint("a", "bc")
    with pytest.raises(ValueError, match="different lengths"):
        ident.fingerprints(["a"], ["b", "c"])
