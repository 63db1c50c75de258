"""The tables of the methods' variants: one entry extends every place that accepts a name (the
dispatching function, the error message and the notebook config)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from kit.audits import AUDITS, get_audit
from kit.configs.neuronvote import Config as NeuronVoteConfig
from kit.configs.training_trajectories import Config as TrajectoriesConfig
from kit.configs.utility_law import Config as LawConfig
from kit.core.registry import Registry
from kit.mui.key_neurons import MUI_THRESHOLDS, key_neuron_mask, layer_key_mask
from kit.mui.scores import MUI_SCORES
from kit.neuronvote.methods import RANKING_METHODS, rank_neurons


def test_a_registry_refuses_a_second_entry_of_one_name_and_names_the_field():
    reg = Registry("a colour")
    reg.add("red", lambda: 1, "red")
    with pytest.raises(ValueError, match="already registered"):
        reg.add("red", lambda: 2, "again")
    with pytest.raises(ValueError, match=r"shade='blue' is not a colour; allowed values: red"):
        reg.check("blue", "shade")
    assert reg.names() == ("red",) and "red: red" in reg.describe()


def test_the_tables_hold_what_the_papers_define():
    assert list(MUI_THRESHOLDS) == ["topk", "global_topk", "top_pct", "topscore"]
    assert MUI_THRESHOLDS.names(per_layer=False) == ("global_topk",)
    assert MUI_SCORES.names(response_level=True) == ("score_sum", "activate_sum", "gradient_sum")
    assert RANKING_METHODS.names(paper=True) == (
        "probeless",
        "iou",
        "lasso",
        "ridge",
        "lca",
        "gaussian",
    )
    assert len(AUDITS) == 15 and all(v.description for v in AUDITS.values())


@pytest.fixture
def bottom_threshold():
    """A threshold that keeps each token's smallest score: one entry in the table."""

    def bottom(scores, k=None, frac=None):
        idx = scores.argmin(dim=-1, keepdim=True)
        return torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, idx, True)

    MUI_THRESHOLDS.add("bottom", bottom, "the smallest score per token", per_layer=True)
    yield bottom
    MUI_THRESHOLDS.remove("bottom")


def test_a_new_threshold_is_allowed_by_the_masks_and_the_configs(bottom_threshold):
    s = torch.tensor([[0.3, -0.2, 0.9]])
    assert layer_key_mask(s, "bottom").tolist() == [[False, True, False]]
    scores = torch.tensor([[[[0.3, -0.2, 0.9]]]])  # batch, pos, layer, d_mlp
    assert key_neuron_mask(scores, "bottom").tolist() == [[False, True, False]]
    assert (
        LawConfig.model_validate(
            dict(threshold="bottom", grid_thresholds=["topk", "bottom"])
        ).threshold
        == "bottom"
    )
    assert TrajectoriesConfig.model_validate(dict(threshold="bottom")).threshold == "bottom"


def test_names_outside_the_tables_fail_naming_the_field_and_the_allowed_values():
    with pytest.raises(
        ValidationError,
        match=r"threshold[\s\S]*'bottom' is not a threshold "
        r"function; allowed values: topk, global_topk, top_pct, topscore",
    ):
        LawConfig.model_validate(dict(threshold="bottom"))
    with pytest.raises(ValidationError, match="is not a contribution score"):
        TrajectoriesConfig.model_validate(dict(score="sum_of_everything"))
    with pytest.raises(ValidationError, match="is not a neuron-ranking method"):
        NeuronVoteConfig.model_validate(dict(methods=["probeless", "oracle"]))
    with pytest.raises(ValueError, match="threshold='bottom' is not a threshold function"):
        layer_key_mask(torch.zeros(1, 3), "bottom")


def test_a_new_ranking_method_is_allowed_by_rank_neurons_and_the_config():
    RANKING_METHODS.add(
        "index", lambda x, y, seed, o: np.arange(x.shape[1]), "neuron order", display="Index"
    )
    try:
        x, y = np.random.default_rng(0).normal(size=(20, 5)), np.repeat([0, 1], 10)
        assert rank_neurons(x, y, "index").tolist() == [0, 1, 2, 3, 4]
        cfg = NeuronVoteConfig.model_validate(
            dict(methods=["probeless", "index"], voters=["probeless", "index"])
        )
        assert cfg.methods == ["probeless", "index"]
    finally:
        RANKING_METHODS.remove("index")
    with pytest.raises(ValueError, match="method='index' is not a neuron-ranking method"):
        rank_neurons(x, y, "index")


def test_a_new_audit_is_found_by_name():
    AUDITS.add("X99", len, "a placeholder metric")
    try:
        assert get_audit("X99") is len
    finally:
        AUDITS.remove("X99")
    with pytest.raises(ValueError, match="metric='X99' is not an audit"):
        get_audit("X99")
