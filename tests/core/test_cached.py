"""kit.core.cached: a cached JSON value is returned only when its bytes match the digest written
with it and the caller's schema accepts it; anything else is named, recomputed and rewritten."""

from __future__ import annotations

import json
import math
import warnings

import pytest

from kit.core import cached as C


def _schema(value):
    """A record of 'n' (an int in 0..9) and 'xs' (a list)."""
    return C.has_keys(value, {"n": int, "xs": list}) or (
        None if 0 <= value["n"] < 10 else f"n={value['n']} outside 0..9"
    )


GOOD = {"n": 3, "xs": [1.5, 2.0]}


def test_a_written_value_reads_back_with_its_digest(tmp_path):
    path = tmp_path / "sub" / "v.json"
    C.write_json(path, GOOD)
    doc = json.loads(path.read_text())
    assert doc["format"] == C.ENVELOPE and doc["value"] == GOOD
    # the digest is sha256 of the sorted, spaceless bytes: computed here by hand
    import hashlib

    assert doc["sha256"] == hashlib.sha256(b'{"n":3,"xs":[1.5,2.0]}').hexdigest()
    assert C.read_json(path, _schema) == GOOD
    assert C.read_json(tmp_path / "absent.json", _schema) is C.MISSING


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("{}", "missing key 'n'"),
        ("truncated", "not JSON"),
        ("changed", "does not match the digest"),
        ("out of range", "n=12 outside"),
        ("bytes", "not UTF-8"),
    ],
)
def test_a_refused_file_is_named_with_its_reason_recomputed_and_rewritten(tmp_path, damage, reason):
    path = tmp_path / "v.json"
    C.write_json(path, GOOD)
    doc = json.loads(path.read_text())
    if damage == "{}":
        path.write_text("{}")
    elif damage == "truncated":
        path.write_text(path.read_text()[:30])
    elif damage == "changed":  # valid by the schema: only the digest sees it
        doc["value"]["n"] = 4
        path.write_text(json.dumps(doc))
    elif damage == "out of range":  # a legacy file (no digest) that the schema refuses
        path.write_text(json.dumps({"n": 12, "xs": []}))
    else:
        path.write_bytes(b"\xff\xfe")
    calls = []
    with pytest.warns(C.DamagedCacheWarning) as seen:
        value = C.cached_json(path, lambda: calls.append(1) or GOOD, _schema, what="test cache")
    assert value == GOOD and calls == [1]
    (w,) = seen
    assert str(path) in str(w.message) and reason in str(w.message), str(w.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: the next read is clean
        assert C.cached_json(path, lambda: pytest.fail("recomputed"), _schema) == GOOD


def test_a_legacy_file_without_digest_is_read_when_the_schema_accepts_it(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(GOOD))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert C.cached_json(path, lambda: pytest.fail("recomputed"), _schema) == GOOD


def test_a_computed_value_failing_its_schema_is_not_stored(tmp_path):
    path = tmp_path / "v.json"
    with pytest.raises(ValueError, match="just computed is invalid"):
        C.cached_json(path, lambda: {"n": 99, "xs": []}, _schema)
    assert not path.exists()


def test_nan_survives_the_digest_and_non_finite_is_found():
    value = {"x": [1.0, float("nan")]}
    assert C.value_digest(value) == C.value_digest(json.loads(json.dumps(value)))
    assert C.non_finite(value) == "non-finite number" and C.non_finite([1, "a"]) is None
    assert math.isnan(json.loads(C.canonical(value))["x"][1])


def test_a_built_directory_is_whole_only_with_every_listed_file_at_its_size(tmp_path):
    d = tmp_path / "sae"
    d.mkdir()
    (d / "cfg.json").write_text("{}")
    (d / "sae_weights.safetensors").write_bytes(b"w" * 100)
    assert C.built_dir_refusal(d) == "not built"
    (d / "meta.json").write_text(json.dumps({"name": "x", "files": C.file_sizes(d)}))
    assert C.file_sizes(d) == {
        "cfg.json": 2,
        "meta.json": C.file_sizes(d)["meta.json"],
        "sae_weights.safetensors": 100,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert C.is_built_dir(d, what="SAE")
    (d / "sae_weights.safetensors").write_bytes(b"w" * 10)  # truncated
    with pytest.warns(C.DamagedCacheWarning, match=r"SAE .*sae_weights.safetensors has 10 bytes"):
        assert not C.is_built_dir(d, what="SAE")
    (d / "sae_weights.safetensors").unlink()
    assert C.built_dir_refusal(d) == "sae_weights.safetensors is missing"
    # written before meta.json listed its files: the required files, non-empty
    (d / "meta.json").write_text(json.dumps({"name": "x"}))
    (d / "sae_weights.safetensors").write_bytes(b"")
    assert "sae_weights.safetensors has 0 bytes" in str(
        C.built_dir_refusal(d, ("cfg.json", "sae_weights.safetensors"))
    )
    (d / "sae_weights.safetensors").write_bytes(b"w")
    assert C.built_dir_refusal(d, ("cfg.json", "sae_weights.safetensors")) is None
    (d / "meta.json").write_text("{")
    assert "meta.json unreadable" in str(C.built_dir_refusal(d))


def test_one_file_hash_memo_remembered_on_disk_only_when_asked(tmp_path, monkeypatch):
    """``file_sha256``: once per file version in a process; on disk (``<cache>/identity/``) only
    with ``persist`` (model identities), also for a file first hashed without it (a built
    directory's check), and not re-hashed for that."""
    import hashlib

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(C, "_FILE_SHA256", {})
    hashed = []
    real_sha256 = C.sha256
    monkeypatch.setattr(C, "sha256", lambda p, *a: hashed.append(p.name) or real_sha256(p, *a))
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    want = hashlib.sha256(b"weights").hexdigest()
    assert C.file_sha256(f) == want and C.file_sha256(f) == want and hashed == ["w.bin"]
    memos = tmp_path / "cache" / "identity"
    assert not memos.exists() or not list(memos.iterdir()), "persist=False writes nothing"
    assert C.file_sha256(f, persist=True) == want and hashed == ["w.bin"], "not hashed again"
    (memo,) = memos.glob("*.json")
    assert C.read_json(memo)["sha256"] == want
    C._FILE_SHA256.clear()  # a new process: the memo on disk answers without hashing
    assert C.file_sha256(f, persist=True) == want and hashed == ["w.bin"]
    C._FILE_SHA256.clear()  # without persist the bytes are read again (a built directory's check)
    assert C.file_sha256(f) == want and hashed == ["w.bin", "w.bin"]
