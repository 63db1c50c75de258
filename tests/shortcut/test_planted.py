"""A planted shortcut neuron end to end: the comparative and causal scores find it, locate ranks it
first at either position, trustworthy evaluation removes its effect, a model pool changes no result,
and the config's comparative position reaches locate."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from kit.models.load import random_model
from kit.shortcut import evaluate, ranking, scores, study
from kit.shortcut import items as shortcut_items
from kit.shortcut import patching as pt

PLANT_LAYER, PLANT_INDEX, TARGET = 1, 37, 42


def _perturbed(model, seed: int, scale: float = 0.01):
    m = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g) * (p.std() if p.numel() > 1 else 1))
    return m


def _planted():
    """M0 with neuron (1, 37) silent; M_un a lightly perturbed copy; M_con another perturbed copy
    whose neuron (1, 37) fires on every token and writes the TARGET token's unembedding
    direction."""
    base = random_model("tiny-gelu", seed=3)
    with torch.no_grad():
        base.blocks[PLANT_LAYER].mlp.W_in[:, PLANT_INDEX] = 0
        base.blocks[PLANT_LAYER].mlp.b_in[PLANT_INDEX] = -10
    un = _perturbed(base, 1)
    con = _perturbed(base, 2)
    with torch.no_grad():
        mlp = con.blocks[PLANT_LAYER].mlp
        mlp.W_in[:, PLANT_INDEX] = 0
        mlp.b_in[PLANT_INDEX] = 10
        u = con.W_U[:, TARGET] - con.W_U.mean(1)
        mlp.W_out[PLANT_INDEX] = 3 * u / u.norm()
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(4, 97, (10, 6), generator=g)
    lengths = torch.tensor([6, 4, 5, 6, 3, 6, 5, 4, 6, 5])
    tokens = tokens * pt.mask_from_lengths(lengths, 6)
    targets = torch.full((10,), TARGET)
    return base, con, un, tokens, lengths, targets


def test_planted_model_really_has_a_shortcut():
    base, con, un, tokens, lengths, targets = _planted()
    acc = [
        evaluate.patched_accuracy(m, base, tokens, lengths, targets, [[]])[0]
        for m in (con, un, base)
    ]
    assert acc[0] == 1.0 and acc[1] <= 0.2 and acc[2] <= 0.2, f"planting failed: accuracies {acc}"


def test_planted_neuron_is_found_by_the_comparative_score():
    base, con, un, tokens, lengths, targets = _planted()
    s = scores.comparative_scores(
        scores.neuron_acts(con, tokens, lengths), scores.neuron_acts(un, tokens, lengths)
    )
    assert s.shape == (2, 64)
    assert scores.top_neurons(s, 1) == [(PLANT_LAYER, PLANT_INDEX)], (
        "eq. 3 did not rank the planted neuron first: wrong position (last prompt token is "
        "lengths-1)?"
    )
    streamed = scores.comparative_scores_of_models(
        con, un, [(tokens[:4], lengths[:4]), (tokens[4:], lengths[4:])]
    )
    assert torch.allclose(streamed, s, atol=1e-5)


@pytest.mark.parametrize("method", ["exact", "teacher_forced"])
def test_planted_neuron_is_found_by_the_causal_score(method):
    base, con, un, tokens, lengths, targets = _planted()
    groups = scores.neuron_groups(2, 64, 8)
    cs = scores.causal_scores(con, un, base, tokens, lengths, targets, groups, method=method)
    best = int(np.argmax(cs.score))
    assert (PLANT_LAYER, PLANT_INDEX) in cs.groups[best], (
        f"top causal group is {cs.groups[best][:2]}..."
    )
    if method == "exact":
        assert cs.acc_con == 1.0 and cs.score[best] >= 1.8, (
            "patching the planted group should remove the shortcut"
        )
        others = np.delete(cs.score, best)
        assert np.all(others < cs.score[best] - 0.5)
    per = cs.per_neuron(2, 64)
    assert per[PLANT_LAYER, PLANT_INDEX] == pytest.approx(cs.score[best])
    assert len(cs.table()) == len(groups)


@pytest.mark.parametrize("position", ["last", "completion"])
def test_locate_finds_the_planted_neuron_at_either_position(position):
    base, con, un, tokens, lengths, targets = _planted()
    data = shortcut_items.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    loc = ranking.locate(con, un, base, data, 8, rule="sum", position=position)
    assert loc.ranked[0] == (PLANT_LAYER, PLANT_INDEX) and loc.rule == "sum (exact)"


def test_trustworthy_evaluation_on_the_planted_case():
    base, con, un, tokens, lengths, targets = _planted()
    s = scores.comparative_scores(
        scores.neuron_acts(con, tokens, lengths), scores.neuron_acts(un, tokens, lengths)
    )
    cs = scores.causal_scores(
        con, un, base, tokens, lengths, targets, scores.neuron_groups(2, 64, 8)
    )
    ranked = scores.top_neurons(scores.combine_scores(s, cs.per_neuron(2, 64)), 128)
    assert ranked[0] == (PLANT_LAYER, PLANT_INDEX)
    top = ranked[:2]
    ori_con, te_con = evaluate.patched_accuracy(con, base, tokens, lengths, targets, [[], top])
    ori_un, te_un = evaluate.patched_accuracy(un, base, tokens, lengths, targets, [[], top])
    assert ori_con == 1.0 and te_con <= 0.2, (
        "TE must bring the contaminated model down to its real level"
    )
    assert abs(te_un - ori_un) <= 0.1, "TE must leave the uncontaminated model (almost) alone"
    curve = evaluate.sparsity_curve(con, un, base, tokens, lengths, targets, ranked, [1, 4], seed=0)
    assert set(curve.columns) == {"model", "neurons", "n", "accuracy"} and len(curve) == 8
    loc = curve[(curve.model == "contaminated") & (curve.neurons == "located")].sort_values("n")
    assert loc.accuracy.iloc[0] <= 0.2


def test_a_pool_holds_one_model_beside_the_base_and_changes_no_result():
    """Notebook 03 holds the donor base and ONE other model (kit.shortcut.pool): locating through
    lazy handles and Table 2 through a pool give exactly the results of models held all at once."""
    from kit.shortcut.pool import ModelPool, release

    base, con, un, tokens, lengths, targets = _planted()
    data = shortcut_items.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    ref_loc = ranking.locate(con, un, base, data, 8, rule="sum")
    ref_t2 = evaluate.trustworthy_table(
        {"Vanilla": base, "con": con, "un": un}, base, data, data, ref_loc.ranked[:2], ["con"]
    )
    resident_at_load: list[list[str]] = []

    def load(name):
        resident_at_load.append(pool.resident())
        return copy.deepcopy({"m/con": con, "m/un": un}[name])

    pool = ModelPool(
        {"Vanilla": "m/base", "con": "m/con", "un": "m/un"}, load, base=base, base_name="m/base"
    )
    loc = ranking.locate(pool.lazy("con"), pool.lazy("un"), base, data, 8, rule="sum")
    t2 = evaluate.trustworthy_table(pool, base, data, data, loc.ranked[:2], ["con"])
    assert torch.equal(loc.comparative, ref_loc.comparative) and loc.ranked == ref_loc.ranked
    assert np.array_equal(loc.causal_exact.score, ref_loc.causal_exact.score)
    pd.testing.assert_frame_equal(t2, ref_t2)
    assert all(r == ["m/base"] for r in resident_at_load), (
        f"more than one model beside the base: {resident_at_load}"
    )
    # eq. 3, eq. 4 (un held first), Table 2 (con held)
    assert pool.loads == [
        "m/con",
        "m/un",
        "m/con",
        "m/un",
    ]
    assert pool["Vanilla"] is base
    held = pool["un"]
    pool["con"]  # loading con releases un: a stale reference fails loudly instead of holding memory
    assert held.kit_released and all(p.is_meta for p in held.parameters())
    with pytest.raises(KeyError, match="allowed: Vanilla, con, un"):
        pool["other"]
    release(held)  # releasing twice is harmless
    other = ModelPool({"un again": "m/un"}, load, base=base, base_name="m/base", share=pool)
    other["un again"]  # a second pool (a later section's models) shares the one-model budget
    assert pool.resident() == ["m/base", "m/un"] and pool._held is other._held


def test_comparative_position_reaches_locate_from_the_config():
    """``comparative_position: completion`` (the public code's default) is what
    section 1's ``locate_and_choose`` uses for eq. 3."""
    from types import SimpleNamespace

    from kit.shortcut.pool import ModelPool

    base, con, un, tokens, lengths, targets = _planted()
    data = shortcut_items.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    pool = ModelPool(
        {"con": "con", "un": "un"},
        {"con": con, "un": un}.__getitem__,
        base=base,
        base_name="base",
        hold_all=True,
    )
    s = study.Setup(base, pool, pool.lazy("con"), pool.lazy("un"), data, data, data)
    want = {
        p: scores.comparative_scores_of_models(con, un, [(tokens, lengths)], p, 2)
        for p in ("last", "completion")
    }
    assert not torch.allclose(want["last"], want["completion"])
    for position in ("last", "completion"):
        cfg = SimpleNamespace(
            combine="sum",
            causal_weight=0.5,
            causal_rank_by="exact",
            max_rows=64,
            max_new_tokens=2,
            group_size=8,
            comparative_position=position,
        )
        located, rules = study.locate_and_choose(s, cfg, 2)
        assert rules is None and torch.allclose(located.comparative, want[position], atol=1e-5), (
            position
        )
