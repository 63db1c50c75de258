import pytest
import torch

import kit
from kit.audits import circuit_family, suite
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
        assert circuit_family.circuit_heads_for(cfg)[0] == (0, 1)
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


@pytest.mark.slow
def test_every_step_runs_on_a_random_model_and_random_saes(model, tmp_path, audit_steps):
    """The notebook's sequence end to end without the built world (random weights, smoke sizes)."""
    import matplotlib

    matplotlib.use("Agg")

    import kit.audits as audits
    from kit.audits import plots

    cfg = kit.load_params("06_measurement_audits", "smoke")
    run = audit_steps(model, cfg)
    results, r2, art, c_art, cc = (run[k] for k in ("results", "circuit", "art", "c_art", "cc"))
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


def test_regroup_names_keeps_single_tokens_and_counts_dropped(model):
    from kit.audits import sources

    items = circuit_family.ioi_items("ioi", 6)
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
