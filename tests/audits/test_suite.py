import pytest

import kit
from kit.audits import suite
from kit.core.params import ParamsError

WORLD_SAES = ["zoo-sae/base-m/topk-512", "zoo-sae/base-m/relu-512", "zoo-sae/base-m/topk-1024",
              "zoo-sae/base-s/topk-512"]


def test_choose_saes_roles():
    r = suite.choose_saes(WORLD_SAES, "zoo/base-m")
    assert {r["arch_a"], r["arch_b"]} == {"zoo-sae/base-m/topk-512", "zoo-sae/base-m/relu-512"}
    assert (r["small"], r["large"]) == ("zoo-sae/base-m/topk-512", "zoo-sae/base-m/topk-1024")
    explicit = suite.choose_saes([], "gpt2", "a/x", "b/y", "c/z", "d/w")
    assert explicit == {"arch_a": "a/x", "arch_b": "b/y", "small": "c/z", "large": "d/w"}
    with pytest.raises(ValueError, match="sae_arch_a"):
        suite.choose_saes(["zoo-sae/base-m/topk-512"], "zoo/base-m")


@pytest.mark.parametrize("profile", ["tiny", "smoke", "paper"])
def test_profiles_validate(profile):
    cfg = kit.load_params("06_measurement_audits", profile)
    assert cfg.world in ("tiny", "micro")
    if profile == "paper":
        assert cfg.model == "gpt2" and cfg.circuit == "wang2023"
        assert suite.circuit_heads_for(cfg)[0] == (0, 1)


def test_bad_config_names_field():
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
    saes = {"arch_a": StandardSAE(StandardSAEConfig(d_in=d, d_sae=64)), "arch_b": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)),
            "small": TopKSAE(TopKSAEConfig(d_in=d, d_sae=64, k=4)), "large": TopKSAE(TopKSAEConfig(d_in=d, d_sae=128, k=4))}
    names = {k: f"test/{k}" for k in saes}
    prompts, labels = suite.task_prompts(cfg.sae_tasks, cfg.n_prompts_per_task)
    ctx = suite.sae_context(model, "random", saes, names, prompts, labels, hook="blocks.1.hook_resid_post")
    r1, art = suite.run_sae_audits(ctx, model, cfg)
    m09 = suite.run_m09(ctx, cfg)
    cc = suite.circuit_context(model, suite.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model), cfg)
    r2, c_art = suite.run_circuit_audits(model, cc, cfg, "random")
    ex25 = suite.run_ex25(model, "random", cc, ctx, cfg)
    m14 = suite.run_m14(model, "random", cfg)
    results = r1 + [m09] + r2 + ex25 + [m14]
    assert {r.metric for r in results} == set(audits.REGISTRY), "every metric of the summary table must run"
    table = audits.summary_table(results)
    assert len(table) == len(results)
    back = audits.load_audits(audits.save_audits(results, tmp_path / "audits.json"))
    assert [r.metric for r in back] == [r.metric for r in results]
    for fig in [plots.summary_table_figure(table), plots.participation_figure(art["m13"]),
                plots.correspondence_figure(art["m11"]), plots.mib_curve_figure(c_art["curve"], r2[0].value),
                plots.roc_figure(c_art["ex1"]), plots.weber_figure(c_art["ex11"]),
                plots.dif_figure(cc.lds["circuit_only"].numpy(), cc.batch.groups, cc.lds["full"].numpy())]:
        assert fig.axes
    assert torch.get_num_threads() >= 1
