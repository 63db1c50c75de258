"""Notebook 01's ``real`` and ``realsmoke`` profiles: both validate before anything loads; the
real profile ranks four models and tests the Qwen pair, and with fewer than 3 models the law and
PUR's ranking read "not testable" with the count."""

from __future__ import annotations

import pytest

from kit.core.params import ParamsError, load_params

REAL_MODELS = ["real/smollm2-135m-instruct", "real/gemma-3-270m"]
QWEN = ["real/qwen2.5-coder-0.5b-instruct", "real/qwen2.5-coder-1.5b-instruct"]


def test_real_profile_runs_four_models_and_the_law_and_the_family_pair():
    cfg = load_params("01_utility_law", "real")
    assert cfg.models == [*REAL_MODELS, *QWEN] and cfg.focus_model == REAL_MODELS[0]
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
    assert cfg.law_testable() is None, "four models: the law and PUR's ranking run"
    # the stated true order: by parameter count, largest first
    assert cfg.reference_order == [*QWEN[::-1], "real/gemma-3-270m", REAL_MODELS[0]]
    assert cfg.family_pair == QWEN and cfg.requirements() == []
    # two models still read "not testable" with the count
    two = load_params(
        "01_utility_law",
        "real",
        overrides={"models": REAL_MODELS, "reference_order": None, "family_pair": None},
    )
    assert two.law_testable() == (
        "not testable: 2 models (real/smollm2-135m-instruct, real/gemma-3-270m); "
        "the law across models and PUR's ranking need >= 3"
    )


def test_family_pair_must_be_among_the_models():
    with pytest.raises(ParamsError, match="family_pair"):
        load_params("01_utility_law", "real", overrides={"family_pair": [QWEN[0], "real/x"]})


def test_every_real_comparison_names_the_four_models():
    for notebook, field in (("00_quickstart", "compare_models"), ("04_competency_gaps", "models")):
        assert getattr(load_params(notebook, "real"), field) == [*REAL_MODELS, *QWEN], notebook


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
            overrides={
                "models": [*REAL_MODELS, "real/smollm2-135m-instruct+x"],
                "reference_order": None,
                "family_pair": None,
            },
        )


def test_real_profile_rejects_a_growth_size_beyond_its_pool():
    with pytest.raises(ParamsError, match="growth_sizes"):
        load_params("01_utility_law", "real", overrides={"growth_sizes": [1, 48]})
