"""Notebook 06's audit steps cached by content (kit.audits.step_cache)."""

import json

import pytest
import torch

import kit
from kit.audits import circuit_family, step_cache, suite
from kit.audits.result import AuditResult


def _saes(d: int, seed: int = 0):
    from sae_lens import StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig

    torch.manual_seed(seed)
    return {
        "arch_a": StandardSAE(StandardSAEConfig(d_in=d, d_sae=64)),
        "arch_b": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)),
        "small": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)),
        "large": TopKSAE(TopKSAEConfig(d_in=d, d_sae=128, k=4)),
    }


def _every_step(model, cfg, saes):
    """The notebook's calls, as test_suite's end-to-end test makes them; every result as JSON."""
    names = {k: f"test/{k}" for k in saes}
    prompts, labels = suite.task_prompts(cfg.sae_tasks, cfg.n_prompts_per_task)
    ctx = suite.sae_context(
        model, "m", saes, names, prompts, labels, hook="blocks.1.hook_resid_post"
    )
    r1, art = suite.run_sae_audits(ctx, model, cfg)
    m09 = suite.run_m09(ctx, cfg)
    items = circuit_family.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model)
    cc = circuit_family.circuit_context(model, items, cfg)
    r2, c_art = circuit_family.run_circuit_audits(model, cc, cfg, "m")
    ex25 = suite.run_ex25(model, "m", cc, ctx, cfg)
    m14 = suite.run_m14(model, "m", cfg)
    results = r1 + [m09] + r2 + ex25 + [m14]
    assert art["m11"] in r1 and art["m13"] in r1 and c_art["ex1"] is r2[1]
    rest = {"curve": c_art["curve"], "signal": c_art["signal"], "heads": cc.circuit.heads}
    return [r.model_dump(mode="json") for r in results], rest


@pytest.mark.slow
def test_a_rerun_reads_every_step_and_gives_the_same_results(make_model, tmp_path, monkeypatch):
    """First run: every step computed and stored; rerun: every step read (the computing functions
    would raise), the same results; a model without a content identity is never cached."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    cfg = kit.load_params("06_measurement_audits", "smoke")
    model = make_model(n_layers=2, seed=3)
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"the model's files")
    model.kit_path = str(weights)  # what kit.load_model sets for a model loaded from files
    saes = _saes(model.cfg.d_model)
    first, rest = _every_step(model, cfg, saes)
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
    assert _every_step(model, cfg, saes) == (first, rest)

    other = make_model(n_layers=2, seed=3)  # the same weights, but known by nothing
    monkeypatch.undo()
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache2"))
    assert step_cache.identity_of(other) is None
    _every_step(other, cfg, saes)
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

    assert step_cache.cached(path, compute) == {"a": [1.5, 2.0], "b": 3}
    assert step_cache.cached(path, compute) == {"a": [1.5, 2.0], "b": 3} and len(calls) == 1
    path.write_text('{"a": [1.5, 2')  # a torn write
    with pytest.warns(UserWarning, match="unreadable audit cache"):
        assert step_cache.cached(path, compute) == {"a": [1.5, 2.0], "b": 3}
    assert len(calls) == 2 and json.loads(path.read_text()) == {"a": [1.5, 2.0], "b": 3}
    assert step_cache.cached(None, compute) and len(calls) == 3


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
