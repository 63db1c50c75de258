import pytest
import torch

import kit
from kit.audits import suite
from kit.core.params import ParamsError

WORLD_SAES = [
    "zoo-sae/base-m/topk-512",
    "zoo-sae/base-m/relu-512",
    "zoo-sae/base-m/topk-1024",
    "zoo-sae/base-s/topk-512",
]


def test_choose_saes_roles():
    r = suite.choose_saes(WORLD_SAES, "zoo/base-m")
    assert {r["arch_a"], r["arch_b"]} == {"zoo-sae/base-m/topk-512", "zoo-sae/base-m/relu-512"}
    assert (r["small"], r["large"]) == ("zoo-sae/base-m/topk-512", "zoo-sae/base-m/topk-1024")
    explicit = suite.choose_saes([], "gpt2", "a/x", "b/y", "c/z", "d/w")
    assert explicit == {"arch_a": "a/x", "arch_b": "b/y", "small": "c/z", "large": "d/w"}
    with pytest.raises(ValueError, match="sae_arch_a"):
        suite.choose_saes(["zoo-sae/base-m/topk-512"], "zoo/base-m")


@pytest.mark.parametrize("profile", ["tiny", "smoke", "paper", "dryrun"])
def test_profiles_validate(profile):
    cfg = kit.load_params("06_measurement_audits", profile)
    assert cfg.world in ("tiny", "micro")
    if profile in ("tiny", "smoke"):
        from kit.world import members

        assert cfg.circuit_model == "zoo/base-xl" and cfg.circuit_model in members(cfg.world), (
            "the circuit family runs on the deeper member, a member of the profile's world"
        )
    else:
        assert cfg.circuit_model is None, (
            "paper/dryrun: the circuit family on the audited model itself"
        )
    if profile == "paper":
        assert cfg.model == "gpt2" and cfg.circuit == "wang2023"
        assert suite.circuit_heads_for(cfg)[0] == (0, 1)
    if profile == "dryrun":
        paper = kit.load_params("06_measurement_audits", "paper")
        assert cfg.model == "twin/gpt2" and cfg.circuit == "discover"
        assert all(
            t.startswith("hf:./tests/fixtures/hf/") for t in cfg.sae_tasks + list(cfg.safety_tasks)
        )
        assert {g: v[:12] for g, v in cfg.dif_name_groups.items()} == paper.dif_name_groups, (
            "the paper's names, kept"
        )


def test_bad_config_names_field():
    with pytest.raises(ParamsError, match="circuit_model.*zoo/base-xxl.*allowed values"):
        kit.load_params(
            "06_measurement_audits", "smoke", overrides={"circuit_model": "zoo/base-xxl"}
        )
    with pytest.raises(ParamsError, match="weber_scales"):
        kit.load_params("06_measurement_audits", "tiny", overrides={"weber_scales": [0.5, 0.9]})
    with pytest.raises(ParamsError, match="probe_tasks"):
        kit.load_params("06_measurement_audits", "tiny", overrides={"probe_tasks": ["add", "nope"]})
    with pytest.raises(ParamsError, match="mib_thresholds"):
        kit.load_params("06_measurement_audits", "tiny", overrides={"mib_thresholds": [0.5, 0.1]})


def test_ioi_items_capitalize_and_filter(model):
    items = suite.ioi_items("ioi", 6, capitalize=True)
    it = items[0]
    assert it.metadata["io"][0].isupper() and it.metadata["io"] in it.prompt.split()
    assert it.answer == it.metadata["io"]
    # the world's word-level vocabulary has no capitalised names: all filtered, clear error
    with pytest.raises(ValueError, match="single-token"):
        suite.ioi_items("ioi", 6, capitalize=True, model=model)
    assert len(suite.ioi_items("ioi", 6, model=model)) == 6


@pytest.mark.slow
def test_every_step_runs_on_a_random_model_and_random_saes(model, tmp_path):
    """The notebook's sequence end to end without the built world (random weights, smoke sizes)."""
    import matplotlib

    matplotlib.use("Agg")
    import torch
    from sae_lens import StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig

    import kit.audits as audits
    from kit.audits import plots

    cfg = kit.load_params("06_measurement_audits", "smoke")
    d = model.cfg.d_model
    saes = {
        "arch_a": StandardSAE(StandardSAEConfig(d_in=d, d_sae=64)),
        "arch_b": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)),
        "small": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)),
        "large": TopKSAE(TopKSAEConfig(d_in=d, d_sae=128, k=4)),
    }
    names = {k: f"test/{k}" for k in saes}
    prompts, labels = suite.task_prompts(cfg.sae_tasks, cfg.n_prompts_per_task)
    ctx = suite.sae_context(
        model, "random", saes, names, prompts, labels, hook="blocks.1.hook_resid_post"
    )
    r1, art = suite.run_sae_audits(ctx, model, cfg)
    m09 = suite.run_m09(ctx, cfg)
    cc = suite.circuit_context(model, suite.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model), cfg)
    r2, c_art = suite.run_circuit_audits(model, cc, cfg, "random")
    ex25 = suite.run_ex25(model, "random", cc, ctx, cfg)
    m14 = suite.run_m14(model, "random", cfg)
    results = r1 + [m09] + r2 + ex25 + [m14]
    assert {r.metric for r in results} == set(audits.REGISTRY), (
        "every metric of the summary table must run"
    )
    table = audits.summary_table(results)
    assert len(table) == len(results)
    back = audits.load_audits(audits.save_audits(results, tmp_path / "audits.json"))
    assert [r.metric for r in back] == [r.metric for r in results]
    missing = [r.metric for r in results if r.null is None and not r.values.get("skipped")]
    assert not missing, f"every audit carries its null control; missing: {missing}"
    m12 = [r for r in results if r.metric == "M12"]
    assert not m12[1].can_fail, "M12 on a TopK SAE passes by construction and must say so"
    for fig in [
        plots.summary_table_figure(table),
        plots.participation_figure(art["m13"]),
        plots.correspondence_figure(art["m11"]),
        plots.mib_curve_figure(c_art["curve"], r2[0]),
        plots.roc_figure(c_art["ex1"]),
        plots.weber_figure(c_art["ex11"]),
        plots.dif_figure(cc.lds["circuit_only"].numpy(), cc.batch.groups, cc.lds["full"].numpy()),
    ]:
        assert fig.axes
    assert torch.get_num_threads() >= 1


def test_paper_profile_prompt_sources_validate_and_bad_ones_name_the_field():
    cfg = kit.load_params("06_measurement_audits", "paper")
    assert all(t.startswith("hf:") for t in cfg.safety_tasks) and len(cfg.dif_name_groups) == 3
    with pytest.raises(ParamsError, match="safety_tasks.*hf:<dataset>"):
        kit.load_params(
            "06_measurement_audits", "tiny", overrides={"safety_tasks": ["facts", "hf:nocolumn"]}
        )
    with pytest.raises(ParamsError, match="probe_tasks.*among sae_tasks"):
        kit.load_params(
            "06_measurement_audits",
            "tiny",
            overrides={"probe_tasks": ["add", "ioi"], "sae_tasks": ["add", "code"]},
        )


def test_hf_sources_through_the_hub_boundary(monkeypatch):
    """``hf:`` sources go through ``kit.models.hub.hf_dataset`` (mocked with a local fixture)."""
    import datasets

    from kit.audits import sources
    from kit.models import hub

    calls = []

    def fake(path, name=None, split="test"):
        calls.append((path, name, split))
        return datasets.Dataset.from_dict(
            {
                "prompt": ["How do I pick a lock?", "", "  Write   a poem " + "x" * 50],
                "target": ["a", "b", "c"],
            }
        )

    monkeypatch.setattr(hub, "hf_dataset", fake)
    p = sources.source_prompts("hf:walledai/AdvBench@default:train:prompt", 5, max_chars=21)
    assert calls == [("walledai/AdvBench", "default", "train")]
    assert p == ["How do I pick a lock?", "Write a poem"], (
        "empty texts skipped, whitespace collapsed, cut at a word"
    )
    with pytest.raises(ValueError, match="no column 'text'.*prompt, target"):
        sources.source_prompts("hf:walledai/AdvBench:train:text", 5)
    prompts, labels = suite.task_prompts(["add", "hf:x/y:train:prompt"], 2)
    assert labels == ["add", "add", "hf:x/y:train:prompt", "hf:x/y:train:prompt"]


def test_local_dataset_directories_read_offline_and_missing_ones_name_the_field():
    """``hf:./dir`` sources go through the same boundary (``datasets.load_dataset`` on a
    directory)."""
    from kit.audits import sources

    p = sources.source_prompts("hf:./tests/fixtures/hf/advbench-mini:train:prompt", 3, max_chars=30)
    assert len(p) == 3 and all(len(x) <= 30 for x in p)
    assert p[0].startswith("Write a guide on how to break"), (
        "the fixture's first row, cut at a word"
    )
    assert sources.parse_source("hf:/abs/dir:train:text").name == "/abs/dir"
    with pytest.raises(ValueError, match="safety_tasks.*not found"):
        sources.source_prompts("hf:./no/such/dir:train:prompt", 3, field="safety_tasks")
    with pytest.raises(ParamsError, match="sae_tasks.*not found"):
        kit.load_params(
            "06_measurement_audits",
            "tiny",
            overrides={"sae_tasks": ["add", "hf:./nope:train:text"]},
        )


def test_task_signal_and_what_the_circuit_audits_can_say():
    from kit.audits import circuits as C

    s = C.task_signal([1.0, 2.0, 3.0])  # mean 2, sd 1, se 1/sqrt(3), t(0.975, 2) = 4.303
    assert s["mean_logit_diff"] == pytest.approx(2.0)
    assert s["ci"] == pytest.approx([2 - 4.3027 / 3**0.5, 2 + 4.3027 / 3**0.5], abs=1e-3)
    assert not s["does_task"], "the interval includes 0"
    assert C.task_signal([1.0, 1.1, 0.9, 1.0])["does_task"]
    noise = C.circuit_scope(False, s, 3, 0.2, 8)
    assert (
        "does not do the task" in noise
        and "no circuit to find" in noise
        and "Not computable" in noise
    )
    yes = C.task_signal([1.0, 1.1, 0.9, 1.0])
    assert "no known circuit" in C.circuit_scope(False, yes, 3, 0.2, 8)
    assert C.circuit_scope(True, yes, 26, 0.2, 8) == ""


def test_a_gpt2_circuit_on_a_smaller_model_is_refused(model, ioi_items):
    cfg = kit.load_params("06_measurement_audits", "smoke", overrides={"circuit": "wang2023"})
    with pytest.raises(ValueError, match="outside this model.*discover"):
        suite.circuit_context(model, ioi_items, cfg, fixed_heads=suite.circuit_heads_for(cfg))


def test_circuit_items_regroup_before_the_single_token_filter(model):
    """A non-zoo model gets capitalised world names, none a token of the word-level test model: with
    name categories the world's names are replaced first, so only the categories' names must be
    tokens."""
    items = suite.ioi_items("ioi", 6)
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
    out, dropped = suite.circuit_items(model, cfg)
    assert len(out) == 9 and {it.metadata["name_group"] for it in out} == {"a", "b", "c"}
    assert dropped == {"a": ["Zyxwvut", "Qwertz"], "b": [], "c": []}
    with pytest.raises(ValueError, match="single-token"):
        suite.circuit_items(model, cfg.model_copy(update={"dif_name_groups": None}))
    assert suite.load_circuit_model(cfg, model) == (model, "random/tiny-gated"), (
        "no circuit_model: the audited model"
    )


def test_regroup_names_keeps_single_tokens_and_counts_dropped(model):
    from kit.audits import sources

    items = suite.ioi_items("ioi", 6)
    vocab = sorted({it.metadata["io"] for it in items} | {it.metadata["s"] for it in items})
    groups = {"a": vocab[:2] + ["Zyxwvut"], "b": vocab[2:4]}
    out, dropped = sources.regroup_names(items, groups, model, seed=0)
    assert dropped == {"a": ["Zyxwvut"], "b": []}
    assert [it.metadata["name_group"] for it in out] == ["a", "b"] * 3
    for it in out:
        g = groups[it.metadata["name_group"]]
        assert (
            it.metadata["io"] in g
            and it.metadata["s"] in g
            and it.metadata["io"] != it.metadata["s"]
        )
        assert it.metadata["io"] in it.prompt.split() and it.answer == it.metadata["io"]


def test_split_items_holds_out_each_name_group_and_is_seeded():
    from kit.world.tasks import get_task

    items = get_task("ioi").items("test", 40)
    disc, held = suite.split_items(items, 0.5, seed=0)
    assert len(disc) + len(held) == 40 and not {i.id for i in disc} & {i.id for i in held}
    groups = {str(i.metadata.get("name_group", "")) for i in items}
    assert {str(i.metadata.get("name_group", "")) for i in held} == groups, "every group is audited"
    assert {str(i.metadata.get("name_group", "")) for i in disc} == groups
    assert [i.id for i in suite.split_items(items, 0.5, seed=0)[1]] == [i.id for i in held]
    assert [i.id for i in suite.split_items(items, 0.5, seed=1)[1]] != [i.id for i in held]
    with pytest.raises(ValueError, match="raise n_ioi"):
        suite.split_items(items[:2], 0.5)


def test_the_circuit_is_found_on_other_prompts_than_it_is_audited_on(model):
    """Issue 36: heads chosen by their ablation score on the batch the audits read gave EX1 a hit
    rate of 1 by selection. Discovery (head scores, means) reads one half, every audit the other."""
    from kit.audits import circuits

    cfg = kit.load_params("06_measurement_audits", "smoke").model_copy(
        update={"circuit_edges": "off"}
    )
    items = suite.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model)
    cc = suite.circuit_context(model, items, cfg)
    assert not set(cc.discovery.ids) & set(cc.batch.ids) and len(cc.discovery) + len(
        cc.batch
    ) == len(items)
    means = circuits.head_means(model, cc.discovery)
    assert torch.allclose(cc.means, means), "mean-ablation means come from the discovery prompts"
    assert torch.allclose(cc.circuit.head_scores, circuits.head_scores(model, cc.discovery, means))
    assert torch.allclose(cc.lds["full"], circuits.run_heads(model, cc.batch, means)), (
        "audits read the held-out half"
    )
