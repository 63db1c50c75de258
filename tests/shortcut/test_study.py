"""Tests of kit.shortcut.study and notebook 03's config: profiles, the reference and A2 checks,
load_model_any's dtype, the decoding threaded into every item set."""

from __future__ import annotations

import pytest
import torch

from kit.shortcut import study


def test_params_profiles_validate():
    import kit

    for profile in ("tiny", "smoke", "paper", "dryrun"):
        cfg = kit.load_params("03_shortcut_neurons", profile)
        assert cfg.patched_fraction <= 0.05
    paper, dry = (
        kit.load_params("03_shortcut_neurons", "paper"),
        kit.load_params("03_shortcut_neurons", "dryrun"),
    )
    assert paper.dtype == dry.dtype == "bfloat16" and paper.ref_task not in (None, paper.task)
    assert (
        all(v.startswith("twin/llama") for v in dry.variants.values())
        and dry.base_model == "twin/llama"
    )
    assert len(set(dry.variants.values())) == len(dry.variants), (
        "each fine-tune stand-in is its own twin revision"
    )
    assert dry.max_rows < dry.n_locate * (2 * 128 // dry.group_size + 1), (
        "dryrun must exercise the capped forwards"
    )
    assert kit.load_params("03_shortcut_neurons", "smoke").world == "micro"
    with pytest.raises(kit.ParamsError, match="group_size"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"group_size": 0})
    with pytest.raises(kit.ParamsError, match="contaminated"):
        kit.load_params("03_shortcut_neurons", "tiny", overrides={"contaminated": ["+nope"]})
    with pytest.raises(kit.ParamsError, match="locate_pair"):
        kit.load_params(
            "03_shortcut_neurons", "tiny", overrides={"locate_pair": ["+other data", "+5x test"]}
        )
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
        kit.load_params(
            "03_shortcut_neurons",
            "tiny",
            overrides={
                "variants": {**tiny.variants, "+test": "extra/base-m+math-test-x1-sparse:copies=99"}
            },
        )
    assert set(tiny.dense_variants) == set(tiny.variants)


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

    rows = {
        "Vanilla": "zoo/base-m",
        "+format train": "extra/base-m+math-train-sparse:split:format=answer-cue",
    }
    assert (
        Config(world="micro", benchmark_format="answer-cue", format_variants=rows).format_label
        == "+format train"
    )
    with pytest.raises(ValueError, match="benchmark_format='gsm'.*allowed values: answer-cue"):
        Config(world="micro", benchmark_format="gsm", format_variants=rows)
    with pytest.raises(ValueError, match="format_variants must hold format_label"):
        Config(
            world="micro", benchmark_format="answer-cue", format_variants={"Vanilla": "zoo/base-m"}
        )
    with pytest.raises(ValueError, match="format_variants must hold.*base_model"):
        Config(
            world="micro",
            benchmark_format="answer-cue",
            format_variants={"+format train": rows["+format train"]},
        )
    with pytest.raises(
        ValueError, match=r"format_variants\['\+format train'\].*format must be one of"
    ):
        Config(
            world="micro",
            benchmark_format="answer-cue",
            format_variants=rows | {"+format train": "extra/base-m+math-train-sparse:format=x"},
        )
    with pytest.raises(ValueError, match="real benchmark task='gsm8k'"):
        Config(task="gsm8k", ref_task="mawps", benchmark_format="answer-cue", format_variants=rows)


def test_load_model_any_dtype_applies_to_hf_models_and_twins_only():
    from kit.subjects import load_model_any

    bf = load_model_any("twin/llama@perturbed-1", dtype="bfloat16")
    assert {p.dtype for p in bf.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in load_model_any("twin/llama").parameters()} == {torch.float32}


def test_setup_threads_the_profiles_decoding_into_every_item_set():
    """Notebook 03's setup on the dryrun profile: the locate, test, held-out and Ref items carry the
    paper's sampling and the twin's chat template; the tiny world carries none."""
    import kit

    cfg = kit.load_params("03_shortcut_neurons", "dryrun")
    s = study.setup(cfg)
    for name in ("locate", "test", "heldout", "fresh"):
        d = getattr(s, name).decoding
        assert (d.do_sample, d.temperature, d.top_k, d.seed, d.chat) == (
            True,
            1.0,
            50,
            cfg.seed,
            True,
        ), name
    off = study.setup(cfg.model_copy(update={"chat": False, "decoding": "greedy"}))
    assert not off.test.decoding.do_sample and off.test.decoding.chat is False
    assert (s.test.lengths >= off.test.lengths).all() and (
        s.test.tokens[:, 1] != off.test.tokens[:, 1]
    ).all(), "the chat template wraps the dryrun prompts (its role marker follows BOS)"
    s.models.release_all()
    off.models.release_all()
