import pytest
import torch

import kit
from kit.audits import circuit_family


def test_ioi_items_capitalize_and_filter(model):
    items = circuit_family.ioi_items("ioi", 6, capitalize=True)
    it = items[0]
    assert it.metadata["io"][0].isupper() and it.metadata["io"] in it.prompt.split()
    assert it.answer == it.metadata["io"]
    # the world's word-level vocabulary has no capitalised names: all filtered, clear error
    with pytest.raises(ValueError, match="single-token"):
        circuit_family.ioi_items("ioi", 6, capitalize=True, model=model)
    assert len(circuit_family.ioi_items("ioi", 6, model=model)) == 6


def test_a_gpt2_circuit_on_a_smaller_model_is_refused(model, ioi_items):
    cfg = kit.load_params("06_measurement_audits", "smoke", overrides={"circuit": "wang2023"})
    with pytest.raises(ValueError, match="outside this model.*discover"):
        circuit_family.circuit_context(
            model, ioi_items, cfg, fixed_heads=circuit_family.circuit_heads_for(cfg)
        )


def test_circuit_items_regroup_before_the_single_token_filter(model):
    """A non-zoo model gets capitalised world names, none a token of the word-level test model: with
    name categories the world's names are replaced first, so only the categories' names must be
    tokens."""
    items = circuit_family.ioi_items("ioi", 6)
    vocab = sorted({it.metadata["io"] for it in items} | {it.metadata["s"] for it in items})
    groups = {"a": vocab[:2] + ["Zyxwvut", "Qwertz"], "b": vocab[2:4], "c": vocab[4:6]}
    # a non-zoo model without a tokenizer readable offline (so the config checks no names) and its
    # SAEs named
    saes = {
        role: f"test-sae/{role}" for role in ("sae_arch_a", "sae_arch_b", "sae_small", "sae_large")
    }
    cfg = kit.load_params(
        "06_measurement_audits",
        "smoke",
        overrides={
            "model": "random/tiny-gated",
            "n_ioi": 9,
            "circuit_model": None,
            "dif_name_groups": groups,
            **saes,
        },
    )
    out, dropped = circuit_family.circuit_items(model, cfg)
    assert len(out) == 9 and {it.metadata["name_group"] for it in out} == {"a", "b", "c"}
    assert dropped == {"a": ["Zyxwvut", "Qwertz"], "b": [], "c": []}
    with pytest.raises(ValueError, match="single-token"):
        circuit_family.circuit_items(model, cfg.model_copy(update={"dif_name_groups": None}))
    assert circuit_family.load_circuit_model(cfg, model) == (model, "random/tiny-gated"), (
        "no circuit_model: the audited model"
    )


def test_split_items_holds_out_each_name_group_and_is_seeded():
    from kit.world.tasks import get_task

    items = get_task("ioi").items("test", 40)
    disc, held = circuit_family.split_items(items, 0.5, seed=0)
    assert len(disc) + len(held) == 40 and not {i.id for i in disc} & {i.id for i in held}
    groups = {str(i.metadata.get("name_group", "")) for i in items}
    assert {str(i.metadata.get("name_group", "")) for i in held} == groups, "every group is audited"
    assert {str(i.metadata.get("name_group", "")) for i in disc} == groups
    assert [i.id for i in circuit_family.split_items(items, 0.5, seed=0)[1]] == [i.id for i in held]
    assert [i.id for i in circuit_family.split_items(items, 0.5, seed=1)[1]] != [i.id for i in held]
    with pytest.raises(ValueError, match="raise n_ioi"):
        circuit_family.split_items(items[:2], 0.5)


def test_the_circuit_is_found_on_other_prompts_than_it_is_audited_on(model):
    """Heads chosen by their ablation score on the batch the audits read gave EX1 a hit
    rate of 1 by selection. Discovery (head scores, means) reads one half, every audit the other."""
    from kit.audits import circuits

    cfg = kit.load_params("06_measurement_audits", "smoke").model_copy(
        update={"circuit_edges": "off"}
    )
    items = circuit_family.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model)
    cc = circuit_family.circuit_context(model, items, cfg)
    assert not set(cc.discovery.ids) & set(cc.batch.ids) and len(cc.discovery) + len(
        cc.batch
    ) == len(items)
    means = circuits.head_means(model, cc.discovery)
    assert torch.allclose(cc.means, means), "mean-ablation means come from the discovery prompts"
    assert torch.allclose(cc.circuit.head_scores, circuits.head_scores(model, cc.discovery, means))
    assert torch.allclose(cc.lds["full"], circuits.run_heads(model, cc.batch, means)), (
        "audits read the held-out half"
    )
