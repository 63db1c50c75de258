"""Notebook 06's audit steps cached by content (kit.audits.step_cache)."""

import json

import pytest
import torch

import kit
from kit.audits import circuit_family, step_cache, suite
from kit.audits.result import AuditResult
from kit.models.identity import cache_identity


def _every_step(audit_steps, model, cfg):
    """The notebook's steps (conftest's ``every_step``); every result as JSON, and what the
    figures and later cells read."""
    run = audit_steps(model, cfg, name="m")
    art, c_art, r1, r2 = run["art"], run["c_art"], run["sae"], run["circuit"]
    assert art["m11"] in r1 and art["m13"] in r1 and c_art["ex1"] is r2[1]
    rest = {"curve": c_art["curve"], "signal": c_art["signal"], "heads": run["cc"].circuit.heads}
    return [r.model_dump(mode="json") for r in run["results"]], rest


@pytest.mark.slow
def test_a_rerun_reads_every_step_and_gives_the_same_results(
    make_model, audit_steps, tmp_path, monkeypatch
):
    """First run: every step computed and stored; rerun: every step read (the computing functions
    would raise), the same results; a model without a content identity is never cached."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    cfg = kit.load_params("06_measurement_audits", "smoke")
    model = make_model(n_layers=2, seed=3)
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"the model's files")
    model.kit_path = str(weights)  # what kit.load_model sets for a model loaded from files
    first, rest = _every_step(audit_steps, model, cfg)
    steps = tmp_path / "cache" / "audits" / "steps"
    assert sorted(p.name for p in steps.iterdir()) == [
        "circuit",
        "circuit-audits",
        "ex25",
        "m09",
        "m14",
        "sae",
    ]
    for name in ("_sae_audits", "_m09", "_ex25", "_m14"):
        monkeypatch.setattr(suite, name, lambda *a, **k: pytest.fail("recomputed"))
    monkeypatch.setattr(circuit_family, "_circuit_audits", lambda *a, **k: pytest.fail("again"))
    monkeypatch.setattr(
        circuit_family.circuits, "discover_circuit", lambda *a, **k: pytest.fail("again")
    )
    assert _every_step(audit_steps, model, cfg) == (first, rest)

    other = make_model(n_layers=2, seed=3)  # the same weights, but known by nothing
    monkeypatch.undo()
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache2"))
    assert cache_identity(other) is None
    _every_step(audit_steps, other, cfg)
    assert not (tmp_path / "cache2" / "audits").exists()


def test_every_input_is_part_of_the_key(tmp_path, monkeypatch):
    """Another config field, model, tensor, plain input or step gives another file; the scheduling
    fields (engine, workers) do not."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    cfg = kit.load_params("06_measurement_audits", "smoke")
    t = [torch.arange(6).reshape(2, 3)]
    base = step_cache.step_path("sae", ["sha256:a"], cfg, t, {"hook": "h"})
    variants = [
        step_cache.step_path("m09", ["sha256:a"], cfg, t, {"hook": "h"}),
        step_cache.step_path("sae", ["sha256:b"], cfg, t, {"hook": "h"}),
        step_cache.step_path(
            "sae", ["sha256:a"], cfg.model_copy(update={"n_null_seeds": 7}), t, {"hook": "h"}
        ),
        step_cache.step_path("sae", ["sha256:a"], cfg, [t[0] + 1], {"hook": "h"}),
        step_cache.step_path("sae", ["sha256:a"], cfg, [t[0].reshape(3, 2)], {"hook": "h"}),
        step_cache.step_path("sae", ["sha256:a"], cfg, [t[0].float()], {"hook": "h"}),
        step_cache.step_path("sae", ["sha256:a"], cfg, t, {"hook": "g"}),
    ]
    assert base is not None and len({base, *variants}) == len(variants) + 1
    same = cfg.model_copy(update={"engine": "inline", "max_workers": 1})
    assert step_cache.step_path("sae", ["sha256:a"], same, t, {"hook": "h"}) == base
    assert step_cache.step_path("sae", ["sha256:a", None], cfg, t) is None


def test_a_damaged_file_is_recomputed_and_json_comes_back_plain(tmp_path):
    path = tmp_path / "x.json"
    calls = []

    def compute():
        calls.append(1)
        return {"a": torch.tensor([1.5, 2.0]), "b": torch.tensor(3)}

    def cached():
        return step_cache.cached(path, compute, schema=None)

    assert cached() == {"a": [1.5, 2.0], "b": 3}
    assert cached() == {"a": [1.5, 2.0], "b": 3} and len(calls) == 1
    path.write_text('{"a": [1.5, 2')  # a torn write
    with pytest.warns(UserWarning, match="not JSON"):
        assert cached() == {"a": [1.5, 2.0], "b": 3}
    assert len(calls) == 2 and json.loads(path.read_text())["value"] == {"a": [1.5, 2.0], "b": 3}
    assert step_cache.cached(None, compute, schema=None) and len(calls) == 3


def _result(metric: str, value: float) -> AuditResult:
    return AuditResult(
        metric=metric, name=metric, value=value, pass_condition="v > 0", passed=value > 0
    )


GOOD = {"results": step_cache.dump_results([_result("M11", 0.5), _result("M13", 0.25)])}


@pytest.mark.parametrize("damage", ["{}", "truncated", "changed value", "wrong results"])
def test_a_damaged_step_file_is_named_recomputed_and_rewritten(tmp_path, damage):
    """A step file holding ``{}`` blocked notebook 06 for good (``KeyError: 'results'`` on every
    rerun); a changed value was returned as it was."""
    path = tmp_path / "steps" / "sae" / "k.json"
    schema = step_cache.results_schema(metrics=("M11", "M13"))
    calls = []

    def compute():
        calls.append(1)
        return GOOD

    assert step_cache.cached(path, compute, schema) == GOOD
    doc = json.loads(path.read_text())
    if damage == "{}":
        path.write_text("{}")
    elif damage == "truncated":
        path.write_text(path.read_text()[:40])
    elif damage == "changed value":  # plausible, valid by the schema: only the digest sees it
        doc["value"]["results"][0]["value"] = 0.99
        path.write_text(json.dumps(doc))
    else:  # a legacy-looking file (no digest) whose results lack a metric the caller reads
        path.write_text(json.dumps({"results": GOOD["results"][:1]}))
    with pytest.warns(UserWarning) as seen:
        again = step_cache.cached(path, compute, schema)
    assert again == GOOD and len(calls) == 2
    assert any(str(path) in str(w.message) for w in seen), "the damaged file is named"
    assert step_cache.cached(path, compute, schema) == GOOD and len(calls) == 2, "rewritten"


def test_a_step_file_written_before_digests_is_read_when_it_passes_its_schema(tmp_path):
    """Caches built by earlier versions (the bare value, no digest) stay valid."""
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(GOOD))
    value = step_cache.cached(path, lambda: pytest.fail("recomputed"), step_cache.RESULTS)
    assert value == GOOD


def test_results_survive_the_round_trip():
    r = AuditResult(
        metric="M07",
        name="x",
        value=0.25,
        values={"a": [1, 2]},
        pass_condition="v > 0.3",
        passed=False,
        null_values=[0.1, float("nan")],
    ).with_null([0.1, 0.2], "random", passed=False)
    (back,) = step_cache.load_results(step_cache.dump_results([r]))
    assert back == r
