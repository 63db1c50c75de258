"""kit.shortcut.neurons: comparative (eq. 3) and causal (eq. 4) scores, ranking, trustworthy evaluation."""

from __future__ import annotations

import copy
from dataclasses import replace
import math

import numpy as np
import pandas as pd
import pytest
import torch

from kit.shortcut import patching as pt
from kit.shortcut import neurons as sc
from kit.models.load import random_model

PLANT_LAYER, PLANT_INDEX, TARGET = 1, 37, 42


# --------------------------------------------------------------------------- formulas by hand
def test_comparative_score_hand_computed_and_streaming():
    con = torch.tensor([[[1.0, 2.0]], [[3.0, 4.0]], [[0.0, 0.0]]])  # [prompt=3, layer=1, d_mlp=2]
    un = torch.tensor([[[0.0, 4.0]], [[0.0, 4.0]], [[1.0, 0.0]]])
    # diffs: neuron 0: 1, 3, -1 -> sqrt(11/3); neuron 1: -2, 0, 0 -> sqrt(4/3)
    want = torch.tensor([[math.sqrt(11 / 3), math.sqrt(4 / 3)]])
    assert torch.allclose(sc.comparative_scores(con, un), want), "eq. 3 is the RMS over prompts of the difference"
    assert torch.allclose(sc.comparative_scores(con, un, chunk=1), want), "streaming over chunks changed the result"
    assert torch.allclose(sc.comparative_scores(un, con), want), "the score is symmetric in the two models"
    with pytest.raises(ValueError, match="shape"):
        sc.comparative_scores(con, un[:, :, :1])
    with pytest.raises(ValueError, match="no prompts"):
        sc.ComparativeAccumulator().scores()


def test_causal_score_hand_computed():
    # contaminated drops 0.8 -> 0.3 under the patch, uncontaminated 0.6 -> 0.55
    assert sc.causal_score(0.8, 0.3, 0.6, 0.55) == pytest.approx(0.8 - 0.3 + 1 - (0.6 - 0.55))  # 1.45
    assert sc.causal_score(0.5, 0.5, 0.4, 0.4) == pytest.approx(1.0), "a patch that changes nothing scores 1"
    assert sc.causal_score(0.5, 0.5, 0.9, 0.1) == pytest.approx(0.2), "hurting the clean model must lower C"
    arr = sc.causal_score(np.array([1.0, 0.5]), np.array([0.0, 0.5]), np.array([0.2, 0.2]), np.array([0.2, 0.0]))
    assert np.allclose(arr, [2.0, 0.8])
    with pytest.raises(ValueError, match="acc_con.*fractions"):
        sc.causal_score(80.0, 30.0, 60.0, 55.0)


def test_neuron_groups_are_adjacent_and_cover_each_layer():
    groups = sc.neuron_groups(2, 10, 4)
    assert [len(g) for g in groups] == [4, 4, 2, 4, 4, 2]
    assert groups[1] == [(0, 4), (0, 5), (0, 6), (0, 7)] and groups[3][0] == (1, 0)
    assert sc.neuron_groups(3, 10, 5, layers=[2]) == [[(2, i) for i in range(5)], [(2, i) for i in range(5, 10)]]


def test_combine_scores_and_top_neurons_by_hand():
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 1.9, 1.9], [1.2, 1.2, float("nan")]])
    combined = sc.combine_scores(comp, caus, "rank_mean", causal_weight=0.5)
    # pct ranks comp: 0.1->2/6, 5->1, .2->3/6, 3->5/6, 0->1/6, .3->4/6
    # causal (nan -> 0): 1.0->1/5, 1.9->4.5/5, 1.2->2.5/5
    want = 0.5 * torch.tensor([[1 / 5, 4.5 / 5, 4.5 / 5], [2.5 / 5, 2.5 / 5, 0]]) + \
        0.5 * torch.tensor([[2 / 6, 1, 3 / 6], [5 / 6, 1 / 6, 4 / 6]])
    assert torch.allclose(combined, want)
    assert sc.top_neurons(combined, 3) == [(0, 1), (0, 2), (1, 0)]
    assert sc.top_neurons(sc.combine_scores(comp, None), 2) == [(0, 1), (1, 0)]
    with pytest.raises(ValueError, match="n=7"):
        sc.top_neurons(combined, 7)


def test_combine_scores_veto_by_hand():
    """Comparative order, except neurons of groups with C < 1 go last; unscored (NaN) stay."""
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 0.9, 1.9], [0.5, 1.2, float("nan")]])
    veto = sc.combine_scores(comp, caus)
    # kept by comparative: (0,2) .2, (1,2) .3, (0,0) .1, (1,1) 0 -> then vetoed: (0,1) 5.0, (1,0) 3.0
    assert sc.top_neurons(veto, 6) == [(1, 2), (0, 2), (0, 0), (1, 1), (0, 1), (1, 0)]
    with pytest.raises(ValueError, match="rule='max'.*veto, rank_mean, sum"):
        sc.combine_scores(comp, caus, "max")


def test_combine_scores_sum_is_the_public_codes_rule_by_hand():
    """Public code: change_scores + (a_con - a_con_p) - (a_un - a_un_p) = S + C - 1, raw units."""
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    caus = torch.tensor([[1.0, 0.9, 1.9], [0.5, 1.2, float("nan")]])
    got = sc.combine_scores(comp, caus, "sum")
    want = torch.tensor([[0.1, 4.9, 1.1], [2.5, 0.2, 0.3]])  # NaN (unscored): C - 1 taken as 0
    assert torch.allclose(got, want), "sum rule is S + C - 1 (not percentile ranks)"
    assert sc.top_neurons(got, 3) == [(0, 1), (1, 0), (0, 2)]
    # public code's two causal terms with hand accuracies: con 0.8 -> 0.3, un 0.6 -> 0.55
    c = sc.causal_score(0.8, 0.3, 0.6, 0.55)
    assert float(sc.combine_scores(torch.tensor([[2.0]]), torch.tensor([[c]]), "sum")) == pytest.approx(2.0 + 0.5 - 0.05)


def test_rule_specs_rerank_and_best_rule():
    comp = torch.tensor([[0.1, 5.0, 0.2], [3.0, 0.0, 0.3]])
    groups = [[(0, 0), (0, 1), (0, 2)], [(1, 0), (1, 1), (1, 2)]]
    cs = lambda score, m: sc.CausalScores(groups, 1.0, 1.0, np.zeros(2), np.zeros(2), np.array(score), m)
    loc = sc.Located(comp, cs([0.5, 1.5], "exact"), cs([1.5, 0.5], "teacher_forced"), comp, [])
    specs = sc.rule_specs()
    assert list(specs)[0] == "sum (exact)" and "comparative only" in specs and "causal only (exact)" in specs
    veto = loc.rerank("veto (exact)")
    assert veto.rule == "veto (exact)" and veto.ranked[:3] == [(1, 0), (1, 2), (1, 1)], "layer 0 vetoed (C < 1)"
    assert loc.rerank("veto (teacher_forced)").ranked[:3] == [(0, 1), (0, 2), (0, 0)]
    assert torch.equal(loc.rerank("sum (exact)").combined, sc.combine_scores(comp, loc.causal_exact.per_neuron(2, 3), "sum"))
    with pytest.raises(ValueError, match="rule 'max'.*allowed values"):
        loc.rerank("max")
    rules = pd.DataFrame({"rule": ["sum (exact)", "veto (exact)", "comparative only"], "objective": [3.0, 5.0, 5.0]})
    assert sc.best_rule(rules) == "veto (exact)", "highest objective, first on ties"


def test_rule_intervals_by_hand():
    # 4 held-out items; row 0 unpatched, then rules A and B
    con = np.array([[1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]], float)  # drop: A 50 pts, B 25 pts
    un = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]], float)    # change: A 0, B -25 pts
    assert sc.objective_items(con[0], con[1], un[0], un[1]) == 50.0
    assert sc.objective_items(con[0], con[2], un[0], un[2]) == 0.0, "25 drop - |−25| change"
    rules = pd.DataFrame({"rule": ["A", "B"], "objective": [50.0, 0.0]})
    rules.attrs["items"] = {"con": con, "un": un}
    out = sc.rule_intervals(rules, "A", n_boot=200, seed=0)
    a, b = out.set_index("rule").loc["A"], out.set_index("rule").loc["B"]
    assert a.vs_chosen == 0 and a.vs_chosen_low == 0 and a.vs_chosen_high == 0, "the chosen rule vs itself"
    assert b.vs_chosen == -50.0 and b.vs_chosen_low <= -50.0 <= b.vs_chosen_high and b.vs_chosen_high <= 0
    with pytest.raises(ValueError, match="chosen='C'; allowed values: A, B"):
        sc.rule_intervals(rules, "C")
    with pytest.raises(ValueError, match="attrs"):
        sc.rule_intervals(pd.DataFrame({"rule": ["A"]}), "A")


def test_paper_relative_changes_from_table2():
    r = sc.paper_relative_changes()
    # LLaMA +GSM-i: (27.0 - 40.5) / 40.5 = -33.3%; the text's 37% and 3% are such relative numbers
    assert 35 < r["con_drop_table2"] < 38 and 2 < r["un_change_table2"] < 3.5
    t = pd.DataFrame({"contaminated": [True, False], "ref": [20.0, 25.0], "ori": [40.0, 20.0], "te": [30.0, 21.0]})
    s = sc.table2_summary(t)
    assert s["contaminated_mean_relative_delta_acc"] == pytest.approx(-25.0)
    assert s["uncontaminated_mean_abs_relative_delta_acc"] == pytest.approx(5.0)
    text = "\n".join(sc.findings(s, 29, 2048, paper=r | {"con_drop": 37.0, "un_change": 3.0}))
    assert "clean |change| 5.0%, contaminated drop 25.0%" in text and "paper text: 3% and 37%" in text
    assert "|TE-Ref| = 4.0 vs |Ori-Ref| = 5.0 pts: TE moves them toward" in text
    a2 = sc.a2_findings(pd.DataFrame({"variant": ["+train split"], "ori": [30.0], "ref": [28.0], "te": [32.0],
                                      "delta_acc": [2.0]}))
    assert "rises" in a2[0] and "drops (-6.5 / -4.3 pts)" in a2[0]


def test_default_n_patched_scales_like_the_paper():
    assert sc.default_n_patched(32, 11008) == 5000
    assert sc.default_n_patched(4, 512) == round(5000 / 352256 * 2048)  # 29 neurons, 1.42%


def test_agreement_hand_computed():
    ref = [10.0, 20.0, 30.0, 40.0]
    a = sc.agreement([12.0, 22.0, 32.0, 42.0], ref)
    assert a["spearman"] == pytest.approx(1.0) and a["rmse"] == pytest.approx(0.0, abs=1e-9)
    assert a["mean_abs_diff"] == pytest.approx(2.0)
    # y = [1, 3, 2, 4] on x = [1, 2, 3, 4]: fit y = 0.8x + 0.5, residuals -.3, .9, -.9, .3
    b = sc.agreement([1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    assert b["slope"] == pytest.approx(0.8) and b["rmse"] == pytest.approx(math.sqrt((0.09 + 0.81) * 2 / 4))
    assert b["spearman"] == pytest.approx(0.8)
    # a constant reference (every variant at 0% on a twin): no line, e = spread of the scores about their mean
    c = sc.agreement([1.0, 3.0, 2.0], [5.0, 5.0, 5.0])
    assert math.isnan(c["slope"]) and math.isnan(c["spearman"]) and c["rmse"] == pytest.approx(math.sqrt(2 / 3))


def test_table9_recomputed_from_printed_values():
    t9 = sc.table9_agreement()
    te, ori = t9.set_index("score").loc["TE"], t9.set_index("score").loc["ORI"]
    assert te["spearman"] > ori["spearman"], "the paper's point: TE ranks models closer to MixEval than Ori"
    assert te["rmse"] < ori["rmse"]
    assert 0.8 < te["spearman"] <= 1.0


# --------------------------------------------------------------------------- a planted shortcut neuron
def _perturbed(model, seed: int, scale: float = 0.01):
    m = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g) * (p.std() if p.numel() > 1 else 1))
    return m


def _planted():
    """M0 with neuron (1, 37) silent; M_un a lightly perturbed copy; M_con another perturbed copy
    whose neuron (1, 37) fires on every token and writes the TARGET token's unembedding direction."""
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
    acc = [sc.patched_accuracy(m, base, tokens, lengths, targets, [[]])[0] for m in (con, un, base)]
    assert acc[0] == 1.0 and acc[1] <= 0.2 and acc[2] <= 0.2, f"planting failed: accuracies {acc}"


def test_planted_neuron_is_found_by_the_comparative_score():
    base, con, un, tokens, lengths, targets = _planted()
    s = sc.comparative_scores(sc.neuron_acts(con, tokens, lengths), sc.neuron_acts(un, tokens, lengths))
    assert s.shape == (2, 64)
    assert sc.top_neurons(s, 1) == [(PLANT_LAYER, PLANT_INDEX)], \
        "eq. 3 did not rank the planted neuron first: wrong position (last prompt token is lengths-1)?"
    streamed = sc.comparative_scores_of_models(con, un, [(tokens[:4], lengths[:4]), (tokens[4:], lengths[4:])])
    assert torch.allclose(streamed, s, atol=1e-5)


@pytest.mark.parametrize("method", ["exact", "teacher_forced"])
def test_planted_neuron_is_found_by_the_causal_score(method):
    base, con, un, tokens, lengths, targets = _planted()
    groups = sc.neuron_groups(2, 64, 8)
    cs = sc.causal_scores(con, un, base, tokens, lengths, targets, groups, method=method)
    best = int(np.argmax(cs.score))
    assert (PLANT_LAYER, PLANT_INDEX) in cs.groups[best], f"top causal group is {cs.groups[best][:2]}..."
    if method == "exact":
        assert cs.acc_con == 1.0 and cs.score[best] >= 1.8, "patching the planted group should remove the shortcut"
        others = np.delete(cs.score, best)
        assert np.all(others < cs.score[best] - 0.5)
    per = cs.per_neuron(2, 64)
    assert per[PLANT_LAYER, PLANT_INDEX] == pytest.approx(cs.score[best])
    assert len(cs.table()) == len(groups)


@pytest.mark.parametrize("position", ["last", "completion"])
def test_locate_finds_the_planted_neuron_at_either_position(position):
    base, con, un, tokens, lengths, targets = _planted()
    data = sc.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    loc = sc.locate(con, un, base, data, 8, rule="sum", position=position)
    assert loc.ranked[0] == (PLANT_LAYER, PLANT_INDEX) and loc.rule == "sum (exact)"


def test_trustworthy_evaluation_on_the_planted_case():
    base, con, un, tokens, lengths, targets = _planted()
    s = sc.comparative_scores(sc.neuron_acts(con, tokens, lengths), sc.neuron_acts(un, tokens, lengths))
    cs = sc.causal_scores(con, un, base, tokens, lengths, targets, sc.neuron_groups(2, 64, 8))
    ranked = sc.top_neurons(sc.combine_scores(s, cs.per_neuron(2, 64)), 128)
    assert ranked[0] == (PLANT_LAYER, PLANT_INDEX)
    top = ranked[:2]
    ori_con, te_con = sc.patched_accuracy(con, base, tokens, lengths, targets, [[], top])
    ori_un, te_un = sc.patched_accuracy(un, base, tokens, lengths, targets, [[], top])
    assert ori_con == 1.0 and te_con <= 0.2, "TE must bring the contaminated model down to its real level"
    assert abs(te_un - ori_un) <= 0.1, "TE must leave the uncontaminated model (almost) alone"
    curve = sc.sparsity_curve(con, un, base, tokens, lengths, targets, ranked, [1, 4], seed=0)
    assert set(curve.columns) == {"model", "neurons", "n", "accuracy"} and len(curve) == 8
    loc = curve[(curve.model == "contaminated") & (curve.neurons == "located")].sort_values("n")
    assert loc.accuracy.iloc[0] <= 0.2


def test_table2_summary_and_findings():
    t = pd.DataFrame({"contaminated": [True, True, False], "ref": [20.0, 30.0, 25.0],
                      "ori": [60.0, 50.0, 26.0], "te": [25.0, 28.0, 24.0]})
    s = sc.table2_summary(t)
    assert s["contaminated_mean_abs_ori_minus_ref"] == pytest.approx(30.0)
    assert s["contaminated_mean_abs_te_minus_ref"] == pytest.approx(3.5)
    assert s["uncontaminated_mean_abs_delta_acc"] == pytest.approx(2.0)
    text = "\n".join(sc.findings(s, 29, 2048))
    assert "1.42%" in text and "closer to" in text and "NOT" not in text


# --------------------------------------------------------------------------- the study on world-shaped random models
def _world_model(seed: int):
    from kit.world.train import Arch, make_model

    m = make_model(Arch(1, 32, 2, 64, n_ctx=64), seed=seed)
    m.cfg.model_name = f"zoo/test-{seed}"
    return m.eval()


def test_trustworthy_table_vanilla_row_is_unchanged_by_patching_itself():
    base, other = _world_model(0), _world_model(1)
    test = sc.task_data(base, sc.benchmark_items("add", "test", 16))
    fresh = sc.task_data(base, sc.benchmark_items("add", "fresh", 16))
    assert test.tokens.shape[0] == 16 and all(len(t) == 1 for t in test.targets)
    assert (test.tokens[torch.arange(16), test.lengths - 1] != 0).all(), "lengths must point at the last prompt token"
    neurons = [(0, i) for i in range(0, 64, 2)]
    t2 = sc.trustworthy_table({"Vanilla": base, "+x": other}, base, test, fresh, neurons, ["+x"])
    assert list(t2.columns) == ["variant", "contaminated", "ref", "ori", "te", "delta_acc"]
    van = t2.set_index("variant").loc["Vanilla"]
    assert van.te == van.ori and van.delta_acc == 0, "TE of the base model patched with itself must equal Ori"
    assert t2[["ref", "ori", "te"]].apply(lambda c: c.between(0, 100)).all().all(), "scores are percentages"
    t3 = sc.side_effect_table({"+x": other}, base, {"add2": sc.task_data(base, sc.benchmark_items("add2", "test", 8))},
                              neurons)
    assert list(t3.columns) == ["variant", "task", "ori", "te", "delta_acc"] and len(t3) == 1


def test_params_profiles_validate():
    import kit

    for profile in ("tiny", "smoke", "paper", "dryrun"):
        cfg = kit.load_params("03_shortcut_neurons", profile)
        assert cfg.patched_fraction <= 0.05
    paper, dry = kit.load_params("03_shortcut_neurons", "paper"), kit.load_params("03_shortcut_neurons", "dryrun")
    assert paper.dtype == dry.dtype == "bfloat16" and paper.ref_task not in (None, paper.task)
    assert all(v.startswith("twin/llama") for v in dry.variants.values()) and dry.base_model == "twin/llama"
    assert len(set(dry.variants.values())) == len(dry.variants), "each fine-tune stand-in is its own twin revision"
    assert dry.max_rows < dry.n_locate * (2 * 128 // dry.group_size + 1), "dryrun must exercise the capped forwards"
    assert kit.load_params("03_shortcut_neurons", "smoke").world == "micro"
    with pytest.raises(kit.ParamsError, match="group_size"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"group_size": 0})
    with pytest.raises(kit.ParamsError, match="contaminated"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"contaminated": ["+nope"]})
    with pytest.raises(kit.ParamsError, match="locate_pair"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"locate_pair": ["+other data", "+5x test"]})
    with pytest.raises(kit.ParamsError, match="combine"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"combine": "max"})
    with pytest.raises(kit.ParamsError, match="strength_lrs > 0"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"strength_lrs": [0.0]})
    with pytest.raises(kit.ParamsError, match="table5_task='add'.*allowed values: add2, "):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"table5_task": "add"})
    with pytest.raises(kit.ParamsError, match="table5_task='sort'"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"table5_task": "sort"})
    with pytest.raises(kit.ParamsError, match="comparative_position"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"comparative_position": "all"})
    with pytest.raises(kit.ParamsError, match="combine='held_out'.*n_eval > n_locate"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"n_locate": 200, "n_eval": 200})
    tiny = kit.load_params("03_shortcut_neurons", "tiny")
    assert tiny.combine == "held_out" and tiny.n_eval > tiny.n_locate
    from kit.shortcut import variants
    specs = {k: variants.extra_spec(v, "tiny") for k, v in tiny.variants.items() if k != "Vanilla"}
    assert all(f.plastic for f in specs.values()), "Table 2's rows are sparse fine-tunes"
    assert {f.plastic_seed for k, f in specs.items() if k in tiny.contaminated} == {"shortcut"}
    assert {f.plastic_seed for k, f in specs.items() if k not in tiny.contaminated} == {"ability"}
    with pytest.raises(kit.ParamsError, match="variants.*copies must be"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"variants": {**tiny.variants, "+test": "extra/base-m+math-test-x1-sparse:copies=99"}})
    assert set(tiny.dense_variants) == set(tiny.variants)


def test_transfer_finetune_uses_the_recipe_of_its_row(micro_world):
    """Table 4's models: the named zoo fine-tune's recipe on another task, cached and sparse if it is."""
    import kit

    m = sc.transfer_finetune("zoo/base-m+math-test-x5-sparse", "add2", world=micro_world)
    assert m.cfg.model_name == "zoo/base-m+add2-test-x5-sparse"
    base = kit.load_model("zoo/base-m", world=micro_world)
    changed = [(L, i) for L in range(base.cfg.n_layers) for i in range(base.cfg.d_mlp)
               if not torch.equal(m.blocks[L].mlp.W_in[:, i], base.blocks[L].mlp.W_in[:, i])]
    plastic = kit.world.plastic_neurons("zoo/base-m", 0.04, micro_world)
    assert changed and all(plastic[L, i] for L, i in changed)
    again = sc.transfer_finetune("zoo/base-m+math-test-x5-sparse", "add2", world=micro_world)  # from the cache
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), again.state_dict().values()))
    with pytest.raises(ValueError, match="like='zoo/base-m\\+general'.*allowed values"):
        sc.transfer_finetune("zoo/base-m+general", "add2", world=micro_world)


def test_text_scoring_for_free_text_benchmarks():
    from kit.data.items import Item

    num = Item("g/1", "q", answer="18")
    assert sc.text_correct("so 9 + 9 = 18 .", num) and not sc.text_correct("the answer is 17", num)
    mc = Item("m/1", "q", choices=("a", "b", "c", "d"), label=2)
    assert sc.text_correct("C", mc) and not sc.text_correct("A", mc)
    word = Item("w/1", "q", answer="alice")
    assert sc.text_correct(" alice went", word) and not sc.text_correct("bob", word)
    # the free-text path runs end to end on a model that is not a zoo member (tokenizer path)
    m = _world_model(0)
    m.cfg.model_name = "not-a-zoo-model"
    data = sc.task_data(m, sc.benchmark_items("add", "test", 6))
    assert data.items is not None and data.tokens.shape[0] == 6
    acc = sc.accuracies(m, _world_model(1), data, [[], [(0, 1), (0, 2)]], max_new_tokens=2)
    assert acc.shape == (2,) and ((acc >= 0) & (acc <= 1)).all()


def test_neuron_acts_last_token_and_completion_rows():
    m = random_model("tiny-gelu", seed=0)
    tokens = torch.randint(4, 97, (2, 6))
    lengths = torch.tensor([4, 3])
    _, cache = m.run_with_cache(tokens)
    last = sc.neuron_acts(m, tokens, lengths)
    assert last.shape == (2, 2, 64)
    assert torch.allclose(last[1, 1], cache["blocks.1.mlp.hook_post"][1, 2]), "last prompt token is lengths - 1"
    comp = sc.neuron_acts(m, tokens, lengths, "completion", torch.tensor([2, 1]))
    # comparative over M_con's greedy completion: both models read on the same generated sequence
    other = random_model("tiny-gelu", seed=1)
    gen = pt.generate(m, tokens, 2, lengths=lengths)
    want = sc.comparative_scores(sc.neuron_acts(m, gen, lengths, "completion", torch.tensor([2, 2])),
                                 sc.neuron_acts(other, gen, lengths, "completion", torch.tensor([2, 2])))
    got = sc.comparative_scores_of_models(m, other, [(tokens, lengths)], "completion", max_new_tokens=2)
    assert torch.allclose(got, want, atol=1e-6)
    assert not torch.allclose(got, sc.comparative_scores_of_models(m, other, [(tokens, lengths)]))
    with pytest.raises(ValueError, match="position='all'.*last, completion"):
        sc.comparative_scores_of_models(m, other, [(tokens, lengths)], "all")
    assert comp.shape == (3, 2, 64)
    assert torch.allclose(comp[2, 0], cache["blocks.0.mlp.hook_post"][1, 3])
    with pytest.raises(ValueError, match="position"):
        sc.neuron_acts(m, tokens, lengths, "first")


# --------------------------------------------------------------------------- Ref is never the test set
def test_fresh_items_have_one_item_per_content():
    """Re-rendered contents are correlated items: a tiny-world fresh set holds each content once."""
    from kit.world import get_task

    items = sc.benchmark_items("add", "fresh", 300, seed=2)
    assert len(items) == 300 == len({it.metadata["content"] for it in items})
    drawn = get_task("add").items("fresh", n=300, seed=2)
    assert len({it.metadata["content"] for it in drawn}) < 300, "the plain split repeats contents (else this test is moot)"
    assert items[0] == drawn[0] and sc.benchmark_items("add", "fresh", 300, seed=2) == items, "seeded, first draws first"
    assert sc.reference_items("add", 300, seed=2) == items
    assert sc.benchmark_items("add", "test", 50) == get_task("add").items("test", n=50), "other splits unchanged"
    with pytest.raises(ValueError, match="n=1000: task 'add' has .* distinct fresh contents"):
        sc.benchmark_items("add", "fresh", 1000)


def test_reference_items_are_never_the_evaluated_test_items():
    test = sc.benchmark_items("gsm8k", "test", 5)
    ref = sc.reference_items("gsm8k", 5, ref_task="mawps")
    assert len(ref) == 5 and not {it.id for it in ref} & {it.id for it in test}
    assert [it.id for it in sc.reference_items("gsm8k", 3, ref_task="gsm8k", ref_split="train")][0].startswith("gsm8k/train/")
    with pytest.raises(ValueError, match="ref_task is required"):
        sc.reference_items("gsm8k", 5)
    with pytest.raises(ValueError, match="Ref would equal Ori"):
        sc.reference_items("gsm8k", 5, ref_task="gsm8k")
    with pytest.raises(ValueError, match="no 'fresh' split"):
        sc.benchmark_items("gsm8k", "fresh", 5)


def test_config_refuses_a_reference_that_is_the_test_set():
    from kit.configs.shortcut_neurons import Config

    with pytest.raises(ValueError, match="ref_task: required"):
        Config(task="gsm8k")
    with pytest.raises(ValueError, match="evaluated test set"):
        Config(task="gsm8k", ref_task="gsm8k")
    assert Config(task="gsm8k", ref_task="gsm8k", ref_split="train").ref_split == "train"
    assert Config().ref_task is None  # the tiny world: the task's fresh split


def test_config_checks_the_a2_format_section():
    from kit.configs.shortcut_neurons import Config

    rows = {"Vanilla": "zoo/base-m", "+format train": "extra/base-m+math-train-sparse:split:format=answer-cue"}
    assert Config(world="micro", benchmark_format="answer-cue", format_variants=rows).format_label == "+format train"
    with pytest.raises(ValueError, match="benchmark_format='gsm'.*allowed values: answer-cue"):
        Config(world="micro", benchmark_format="gsm", format_variants=rows)
    with pytest.raises(ValueError, match="format_variants must hold format_label"):
        Config(world="micro", benchmark_format="answer-cue", format_variants={"Vanilla": "zoo/base-m"})
    with pytest.raises(ValueError, match="format_variants must hold.*base_model"):
        Config(world="micro", benchmark_format="answer-cue", format_variants={"+format train": rows["+format train"]})
    with pytest.raises(ValueError, match=r"format_variants\['\+format train'\].*format must be one of"):
        Config(world="micro", benchmark_format="answer-cue",
               format_variants=rows | {"+format train": "extra/base-m+math-train-sparse:format=x"})
    with pytest.raises(ValueError, match="real benchmark task='gsm8k'"):
        Config(task="gsm8k", ref_task="mawps", benchmark_format="answer-cue", format_variants=rows)


def test_a_pool_holds_one_model_beside_the_base_and_changes_no_result():
    """Notebook 03 holds the donor base and ONE other model (kit.shortcut.pool): locating through lazy
    handles and Table 2 through a pool give exactly the results of models held all at once."""
    from kit.shortcut.pool import ModelPool, release

    base, con, un, tokens, lengths, targets = _planted()
    data = sc.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    ref_loc = sc.locate(con, un, base, data, 8, rule="sum")
    ref_t2 = sc.trustworthy_table({"Vanilla": base, "con": con, "un": un}, base, data, data, ref_loc.ranked[:2], ["con"])
    resident_at_load: list[list[str]] = []

    def load(name):
        resident_at_load.append(pool.resident())
        return copy.deepcopy({"m/con": con, "m/un": un}[name])

    pool = ModelPool({"Vanilla": "m/base", "con": "m/con", "un": "m/un"}, load, base=base, base_name="m/base")
    loc = sc.locate(pool.lazy("con"), pool.lazy("un"), base, data, 8, rule="sum")
    t2 = sc.trustworthy_table(pool, base, data, data, loc.ranked[:2], ["con"])
    assert torch.equal(loc.comparative, ref_loc.comparative) and loc.ranked == ref_loc.ranked
    assert np.array_equal(loc.causal_exact.score, ref_loc.causal_exact.score)
    pd.testing.assert_frame_equal(t2, ref_t2)
    assert all(r == ["m/base"] for r in resident_at_load), f"more than one model beside the base: {resident_at_load}"
    assert pool.loads == ["m/con", "m/un", "m/con", "m/un"]  # eq. 3, eq. 4 (un held first), Table 2 (con held)
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


def test_load_any_dtype_applies_to_hf_models_and_twins_only():
    bf = sc.load_any("twin/llama@perturbed-1", dtype="bfloat16")
    assert {p.dtype for p in bf.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in sc.load_any("twin/llama").parameters()} == {torch.float32}


def test_task_data_truncates_prompts_to_the_context_left_for_the_answer():
    """A prompt + its answer must fit the context (GSM8K item 4 is 256 twin tokens, the twin's n_ctx):
    long prompts keep BOS and their last tokens, with a warning; a generation then runs."""
    m = sc.load_any("twin/llama")
    items = sc.benchmark_items("gsm8k", "test", 5)
    full = m.to_tokens(items[4].prompt, prepend_bos=True)[0].tolist()
    assert len(full) >= m.cfg.n_ctx - 8
    with pytest.warns(UserWarning, match="1 of 5 prompts.*truncated"):
        d = sc.task_data(m, items, max_new_tokens=8)
    L = int(d.lengths[4])
    assert L == m.cfg.n_ctx - 8 and d.tokens[4, :L].tolist() == full[:1] + full[-(L - 1):]
    assert d.lengths[:4].tolist() == [len(m.to_tokens(it.prompt)[0]) for it in items[:4]], "short prompts untouched"
    assert sc.item_correct(m, None, d, [[]], max_new_tokens=8).shape == (1, 5)
    with pytest.raises(ValueError, match="max_new_tokens=300"):
        sc.task_data(m, items, max_new_tokens=300)


def test_comparative_position_reaches_locate_from_the_config():
    """Issue 19 item 5: ``comparative_position: completion`` (the public code's default) is what
    section 1's ``locate_and_choose`` uses for eq. 3."""
    from types import SimpleNamespace

    from kit.shortcut.pool import ModelPool

    base, con, un, tokens, lengths, targets = _planted()
    data = sc.TaskData(tokens, lengths, [[int(t)] for t in targets], len(targets))
    pool = ModelPool({"con": "con", "un": "un"}, {"con": con, "un": un}.__getitem__, base=base, base_name="base",
                     hold_all=True)
    s = sc.Setup(base, pool, pool.lazy("con"), pool.lazy("un"), data, data, data)
    want = {p: sc.comparative_scores_of_models(con, un, [(tokens, lengths)], p, 2) for p in ("last", "completion")}
    assert not torch.allclose(want["last"], want["completion"])
    for position in ("last", "completion"):
        cfg = SimpleNamespace(combine="sum", causal_weight=0.5, causal_rank_by="exact", max_rows=64, max_new_tokens=2,
                              group_size=8, comparative_position=position)
        located, rules = sc.locate_and_choose(s, cfg, 2)
        assert rules is None and torch.allclose(located.comparative, want[position], atol=1e-5), position


# --------------------------------------------------------------------------- decoding and chat (issue 14 item 3)
def test_decoding_fields_validate_and_reach_the_settings():
    """The paper samples at T=1, top-k 50 (section 4.1): the paper profile does, dryrun inherits it, the tiny world
    stays greedy; bad values fail naming the field and the allowed values."""
    import kit

    paper, dry, tiny = (kit.load_params("03_shortcut_neurons", p) for p in ("paper", "dryrun", "tiny"))
    assert (paper.decoding, paper.temperature, paper.top_k) == (dry.decoding, dry.temperature, dry.top_k) == ("sample", 1.0, 50)
    assert tiny.decoding == "greedy" and tiny.chat is None and paper.chat is None
    st = sc.decoding_settings(paper)
    assert (st.do_sample, st.temperature, st.top_k, st.seed, st.chat, st.max_new_tokens) == (True, 1.0, 50, 0, None, 256)
    assert sc.decoding_settings(paper.model_copy(update={"generation_seed": 7, "seed": 3})).seed == 7
    assert sc.decoding_settings(paper.model_copy(update={"seed": 3})).seed == 3, "generation_seed None = seed"
    assert not sc.decoding_settings(tiny).do_sample
    d = sc.TaskData(torch.zeros(1, 1), torch.ones(1), [[0]], 1, decoding=st)
    assert sc.generation_kwargs(d) == dict(do_sample=True, temperature=1.0, top_k=50, top_p=None, seed=0)
    d.decoding = replace(st, top_k=0, temperature=0.5)
    assert sc.generation_kwargs(d)["top_k"] is None and sc.generation_kwargs(d)["temperature"] == 0.5
    d.decoding = sc.decoding_settings(tiny)
    assert sc.generation_kwargs(d) == {} and sc.generation_kwargs(replace(d, decoding=None)) == {}
    with pytest.raises(kit.ParamsError, match=r"(?s)field 'decoding'.*allowed values: 'greedy' or 'sample'"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"decoding": "beam"})
    with pytest.raises(kit.ParamsError, match="temperature"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"temperature": 0})
    with pytest.raises(kit.ParamsError, match="top_k"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"top_k": -1})
    with pytest.raises(kit.ParamsError, match="chat"):
        kit.load_params("03_shortcut_neurons", "paper", overrides={"chat": "yes please"})
    with pytest.raises(kit.ParamsError, match="(?s)decoding=.sample..*allowed values on them: greedy"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"decoding": "sample"})
    with pytest.raises(kit.ParamsError, match="(?s)chat=True.*allowed values on them: None or False"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"chat": True})
    assert kit.load_params("03_shortcut_neurons", "tiny", overrides={"chat": False}).chat is False


def test_world_models_refuse_sampling_and_chat_in_task_data():
    from types import SimpleNamespace

    from kit.models.generate import GenerationSettings

    world = SimpleNamespace(cfg=SimpleNamespace(model_name="kit-world"))
    for bad in (GenerationSettings(do_sample=True), GenerationSettings(chat=True)):
        with pytest.raises(ValueError, match="decoding: tiny-world models.*allowed on them: decoding='greedy'"):
            sc.task_data(world, [object()], 1, bad)


def _gsm8k_twin(n: int = 3):
    m = sc.load_any("twin/llama")
    items = [it for it in sc.benchmark_items("gsm8k", "test", 8) if len(m.to_tokens(it.prompt)[0]) < 200][:n]
    return m, items


def test_chat_switch_changes_the_prompt_tokens_of_a_tokenizer_with_a_template():
    """chat=None/True wrap the prompt in the twin's template (it has one), chat=False is the old raw prompt; a
    tokenizer without a template: None = raw, True fails naming the field."""
    from kit.models.generate import GenerationSettings

    m, items = _gsm8k_twin()
    tok = m.tokenizer
    raw = sc.task_data(m, items, 8)
    off = sc.task_data(m, items, 8, GenerationSettings(chat=False))
    auto = sc.task_data(m, items, 8, GenerationSettings(chat=None))
    on = sc.task_data(m, items, 8, GenerationSettings(chat=True))
    assert torch.equal(off.tokens, raw.tokens) and off.decoding.chat is False, "chat off = the old prompt tokens"
    assert torch.equal(auto.tokens, on.tokens) and auto.decoding.chat is True
    L0 = int(on.lengths[0])
    want = tok(f"<|user|>\n{items[0].prompt}{tok.eos_token}\n<|assistant|>\n")["input_ids"]  # the template by hand
    assert on.tokens[0, :L0].tolist() == want and want[0] == tok.bos_token_id and want.count(tok.bos_token_id) == 1
    assert (on.lengths > raw.lengths).all(), "the template adds the role markers"
    saved = tok.chat_template
    try:
        tok.chat_template = None
        assert torch.equal(sc.task_data(m, items, 8, GenerationSettings(chat=None)).tokens, raw.tokens)
        with pytest.raises(ValueError, match="chat=True.*no chat_template"):
            sc.task_data(m, items, 8, GenerationSettings(chat=True))
    finally:
        tok.chat_template = saved


def test_decoding_reaches_the_patched_generator(monkeypatch):
    """Greedy = the old behaviour (the same generator call, the same tokens); sampling at T=1, top-k 50 reaches
    the generator, differs from greedy and repeats exactly under the same seed (another seed differs)."""
    from kit.models.generate import GenerationSettings, SHORTCUT_PAPER_SAMPLING

    m, items = _gsm8k_twin()
    base = sc.load_any("twin/llama@perturbed-1")
    calls = []

    def spy(*args, **kwargs):
        out = pt.group_patched_generate(*args, **kwargs)
        calls.append((kwargs, out.clone()))
        return out

    monkeypatch.setattr(sc, "group_patched_generate", spy)
    neurons = [[], [(0, i) for i in range(16)]]
    old = sc.task_data(m, items, 8)
    sc.item_correct(m, base, old, neurons, max_new_tokens=8)
    greedy = sc.task_data(m, items, 8, GenerationSettings(max_new_tokens=8, chat=False))
    sc.item_correct(m, base, greedy, neurons, max_new_tokens=8)
    (k_old, g_old), (k_greedy, g_greedy) = calls[-2:]
    assert k_old.keys() == k_greedy.keys() and "do_sample" not in k_greedy and torch.equal(g_old, g_greedy)
    ref = pt.group_patched_generate(m, base, old.tokens, neurons, 8, lengths=old.lengths, max_rows=2048,
                                    stop_token_ids=[m.tokenizer.eos_token_id])
    assert torch.equal(g_greedy, ref), "greedy is the generator's default (argmax) decoding"

    sampled = {}
    for seed in (0, 0, 1):
        data = sc.task_data(m, items, 8, replace(SHORTCUT_PAPER_SAMPLING, max_new_tokens=8, seed=seed, chat=False))
        acc = sc.accuracies(m, base, data, neurons, max_new_tokens=8)
        kw, gen = calls[-1]
        assert (kw["do_sample"], kw["temperature"], kw["top_k"], kw["seed"]) == (True, 1.0, 50, seed)
        sampled.setdefault(seed, []).append((gen, acc))
    (a, acc_a), (b, acc_b) = sampled[0]
    assert torch.equal(a, b) and np.array_equal(acc_a, acc_b), "same seed, same samples, same accuracies"
    assert not torch.equal(a, g_greedy), "sampling at T=1 over the twin's near-flat logits must leave the argmax path"
    assert not torch.equal(a, sampled[1][0][0]), "another generation_seed draws other samples"


def test_setup_threads_the_profiles_decoding_into_every_item_set():
    """Notebook 03's setup on the dryrun profile: the locate, test, held-out and Ref items carry the paper's
    sampling and the twin's chat template; the tiny world carries none."""
    import kit

    cfg = kit.load_params("03_shortcut_neurons", "dryrun")
    s = sc.setup(cfg)
    for name in ("locate", "test", "heldout", "fresh"):
        d = getattr(s, name).decoding
        assert (d.do_sample, d.temperature, d.top_k, d.seed, d.chat) == (True, 1.0, 50, cfg.seed, True), name
    off = sc.setup(cfg.model_copy(update={"chat": False, "decoding": "greedy"}))
    assert not off.test.decoding.do_sample and off.test.decoding.chat is False
    assert (s.test.lengths >= off.test.lengths).all() and (s.test.tokens[:, 1] != off.test.tokens[:, 1]).all(), \
        "the chat template wraps the dryrun prompts (its role marker follows BOS)"
    s.models.release_all()
    off.models.release_all()
