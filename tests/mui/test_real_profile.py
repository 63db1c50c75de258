"""Notebook 01's ``real`` and ``realsmoke`` profiles (issue 35): both validate before anything
loads, and with fewer than 3 models the law and PUR's ranking read "not testable" with the count."""

from __future__ import annotations

import pytest

from kit.core.params import ParamsError, load_params

REAL_MODELS = ["real/smollm2-135m-instruct", "real/gemma-3-270m"]


def test_real_profile_runs_both_models_and_the_law_reads_two_models():
    cfg = load_params("01_utility_law", "real")
    assert cfg.models == REAL_MODELS and cfg.focus_model == REAL_MODELS[0]
    assert set(cfg.tasks) <= {
        "arc_challenge",
        "mmlu",
        "gsm8k",
        "math500",
        "humaneval",
        "mbpp",
        "bbh",
    }
    assert cfg.n_fresh == 0 and cfg.sae_names == [] and cfg.multi_token_tasks == []
    assert cfg.law_testable() == (
        "not testable: 2 models (real/smollm2-135m-instruct, real/gemma-3-270m); "
        "the law across models and PUR's ranking need >= 3"
    )
    assert cfg.requirements() == []


def test_realsmoke_profile_is_one_model():
    cfg = load_params("01_utility_law", "realsmoke")
    assert cfg.models == REAL_MODELS[:1]
    assert cfg.law_testable().startswith("not testable: 1 model (real/smollm2-135m-instruct)")


def test_real_profile_with_a_third_model_needs_a_true_order():
    # three real models can be ranked only against a given order: fails at load, naming the field
    with pytest.raises(ParamsError, match="reference_order"):
        load_params(
            "01_utility_law",
            "real",
            overrides={"models": [*REAL_MODELS, "real/smollm2-135m-instruct+x"]},
        )


def test_real_profile_rejects_a_growth_size_beyond_its_pool():
    with pytest.raises(ParamsError, match="growth_sizes"):
        load_params("01_utility_law", "real", overrides={"growth_sizes": [1, 48]})
