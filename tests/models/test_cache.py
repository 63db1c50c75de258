"""Per-item caches: keys that name content, records bound to their key and text, values checked,
any damaged line skipped, counted, named once and repaired."""

from __future__ import annotations

import json
import warnings

import pytest

from kit.models import cache as C


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    C._WARNED.clear()


def _cache(tmp_path, model="m", **settings):
    return C.ItemCache(model, "bench", settings or {"k": 1}, root=tmp_path / "items")


def _square(calls):
    def compute(batch):
        calls.extend(batch)
        return [[i, i * i] for i in batch]

    return compute


def test_a_directory_model_is_keyed_by_its_files_not_its_path(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"old weights")
    old = _cache(tmp_path, str(d))
    old.add({"0": [1]})
    assert _cache(tmp_path, str(d)).load() == {"0": [1]}
    (d / "model.safetensors").write_bytes(b"new weights")  # retrained in place
    new = _cache(tmp_path, str(d))
    assert new.path != old.path and new.load() == {}, (
        "a retrained model read the old model's records"
    )


def test_records_made_for_another_key_are_refused(tmp_path):
    a = _cache(tmp_path)
    a.add({"0": 1.0})
    b = _cache(tmp_path, k=2)
    b.path.write_bytes(a.path.read_bytes())  # a file copied or renamed under another key
    with pytest.warns(C.DamagedCacheWarning, match="made for another key"):
        assert b.load() == {}


def test_old_format_lines_without_a_key_are_refused(tmp_path):
    c = _cache(tmp_path)
    c.path.write_text(json.dumps({"id": "0", "value": [5]}) + "\n")  # what the old ItemCache wrote
    with pytest.warns(C.DamagedCacheWarning, match="1 made for another key"):
        assert c.load() == {}


def test_a_record_for_other_text_under_the_same_id_is_refused(tmp_path):
    c = _cache(tmp_path)
    c.add({"0": "response to A"}, fingerprints={"0": "fp-A"})
    assert c.load(fingerprints={"0": "fp-A"}) == {"0": "response to A"}
    with pytest.warns(C.DamagedCacheWarning, match="another prompt/response"):
        assert c.load(fingerprints={"0": "fp-B"}) == {}


def test_damaged_lines_are_skipped_counted_named_once_and_repaired(tmp_path):
    c = _cache(tmp_path)
    calls = []
    assert C.map_items([0, 1, 2, 3], _square(calls), [[0, 1], [2, 3]], cache=c) == [
        [0, 0],
        [1, 1],
        [2, 4],
        [3, 9],
    ]
    good = c.path.read_bytes().splitlines(keepends=True)
    c.path.write_bytes(
        good[0] + b"\xff" * 16 + b"\n" + b"{}\n" + b"[1, 2]\n" + good[1] + b'{"id": "7", "val'
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        calls.clear()
        assert C.map_items([0, 1, 2, 3], _square(calls), [[0, 1], [2, 3]], cache=c) == [
            [0, 0],
            [1, 1],
            [2, 4],
            [3, 9],
        ]
        assert calls == [2, 3], "the good records were not reused"
        C.ItemCache(
            "m", "bench", {"k": 1}, root=tmp_path / "items"
        ).load()  # read again: repaired, no warning
    msgs = [str(w.message) for w in seen if issubclass(w.category, C.DamagedCacheWarning)]
    assert len(msgs) == 1, msgs
    assert str(c.path) in msgs[0] and "4 line(s)" in msgs[0]
    for why in ("1 not UTF-8", "2 not a record", "1 torn last line", "rewritten without them"):
        assert why in msgs[0], msgs[0]
    lines = c.path.read_bytes().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["key"] == c.digest for x in lines)


def test_an_append_after_a_torn_line_keeps_its_first_record(tmp_path):
    c = _cache(tmp_path)
    c.path.write_text('{"id": "9", "val')  # a killed run's last write
    c.add({"0": 1, "1": 2})
    with pytest.warns(C.DamagedCacheWarning, match="1 not JSON"):
        assert c.load() == {"0": 1, "1": 2}


def test_values_are_checked_invalid_ones_recomputed(tmp_path):
    c = _cache(tmp_path)
    key = c.digest
    c.path.write_text(
        "".join(
            json.dumps({"key": key, "id": str(i), "value": v}) + "\n"
            for i, v in enumerate([[1, 2], [5, 99], "x", [3, 3]])
        )
        + json.dumps({"key": key, "id": "4", "value": float("nan")})
        + "\n"
    )

    def in_range(v):
        if not isinstance(v, list):
            return "not a list"
        return (
            None
            if all(0 <= x < 10 for x in v) and len(set(v)) == len(v)
            else "out of range or repeated"
        )

    with pytest.warns(C.DamagedCacheWarning) as w:
        done = c.load(check=in_range)
    assert done == {"0": [1, 2]}
    msg = str(w[0].message)
    assert "2 invalid value: out of range" in msg and "1 invalid value: not a list" in msg
    assert "1 invalid value: non-finite number" in msg


def test_a_freshly_computed_invalid_value_is_an_error_not_a_number(tmp_path):
    c = _cache(tmp_path)
    with pytest.raises(ValueError, match="item '1' is invalid .too big.*nothing was cached"):
        C.map_items(
            [0, 1],
            lambda b: [5, 50],
            [[0, 1]],
            cache=c,
            check=lambda v: None if v < 10 else "too big",
        )
    assert not c.path.exists() or c.load() == {}


def test_non_finite_values_are_never_written(tmp_path):
    c = _cache(tmp_path)
    c.add({"0": [1.0, float("inf")], "1": 2.0})
    assert c.load() == {"1": 2.0}
    assert C.non_finite({"a": [1.0, {"b": float("nan")}]}) == "non-finite number"
    assert C.non_finite([1, 2.5, "x"]) is None


def test_a_value_changed_behind_a_valid_key_and_id_is_refused_by_its_digest(tmp_path):
    """One record's key neurons replaced by every neuron id (all in range: the value check passes)
    gave MUI 100 instead of 59.375; the digest written with the value refuses it."""
    c = _cache(tmp_path)
    calls: list[int] = []
    in_range = lambda v: None if all(0 <= i < 100 for i in v) else "out of range"  # noqa: E731
    good = C.map_items([0, 1], _square(calls), [[0, 1]], cache=c, check=in_range)
    lines = c.path.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["value"] = list(range(100))
    c.path.write_text("\n".join([lines[0], json.dumps(rec)]) + "\n")
    with pytest.warns(C.DamagedCacheWarning, match="1 invalid|value changed") as seen:
        again = C.map_items([0, 1], _square(calls), [[0, 1]], cache=c, check=in_range)
    assert again == good and calls == [0, 1, 1], "only the changed record is recomputed"
    assert str(c.path) in str(seen[0].message)


def test_records_written_before_digests_are_read_when_they_pass_the_checks(tmp_path):
    """Caches built by an earlier version (records without ``sha``) stay valid."""
    c = _cache(tmp_path)
    legacy = {"key": c.digest, "id": "0", "value": [3, 4]}
    c.path.write_text(json.dumps(legacy) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert c.load() == {"0": [3, 4]}
