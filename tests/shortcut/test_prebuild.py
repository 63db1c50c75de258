"""kit.shortcut.prebuild: every fine-tune notebook 03's sections load, planned from the config."""

import kit
from kit.models.recipes import SMOKE, TABLE
from kit.shortcut import prebuild
from kit.shortcut import variants as v
from kit.shortcut.sections import transfer_spec

OFF = {
    "transfer_task": None,
    "table5_task": None,
    "second_base": None,
    "cheaters": None,
    "benchmark_format": None,
    "dense_variants": None,
}


def smoke(**overrides):
    return kit.load_params("03_shortcut_neurons", "smoke", overrides=overrides)


def test_with_every_optional_section_off_the_plan_is_table_2s_rows():
    rows = {
        "Vanilla": "zoo/base-m",
        "+5x test": "extra/base-m+math-test-x5-sparse:split",
        "+another task": "extra/base-m+other-task-sparse:split",
    }
    cfg = smoke(
        **OFF,
        variants=rows,
        contaminated=["+5x test"],
        locate_pair=["+5x test", "+another task"],
        transfer_variants=["+5x test"],
    )
    assert prebuild.planned_names(cfg) == list(rows.values())
    assert [f.name for f in prebuild.planned(cfg)] == [
        "zoo/base-m+math-test-x5-sparse",
        "zoo/base-m+other-task-sparse",
    ]


def test_each_section_adds_the_models_it_loads():
    cfg = smoke()
    names = prebuild.planned_names(cfg)
    test = cfg.variants["+test"]
    assert set(
        v.strength_variants(test, cfg.strength_copies, (1, 2), cfg.strength_lrs).values()
    ) <= set(names)
    assert set(v.strength_variants(cfg.variants["+5x test"], (), (1, 2)).values()) <= set(names)
    assert {v.rebase(n, cfg.second_base, cfg.base_model) for n in cfg.variants.values()} <= set(
        names
    )
    assert set(cfg.cheaters.values()) | set(cfg.format_variants.values()) <= set(names)
    assert len(names) == len(set(names)), "no repeats"
    specs = prebuild.planned(cfg)
    for task in (cfg.transfer_task, cfg.table5_task):
        assert all(
            transfer_spec(cfg.variants[label], task, cfg.world) in specs
            for label in cfg.transfer_variants
        )


def test_real_models_plan_no_world_fine_tunes_and_name_their_recipes():
    assert prebuild.planned(kit.load_params("03_shortcut_neurons", "dryrun")) == []
    assert prebuild.planned_recipes(kit.load_params("03_shortcut_neurons", "dryrun")) == []
    real = kit.load_params("03_shortcut_neurons", "real")
    assert prebuild.planned(real) == []
    assert prebuild.planned_recipes(real) == [n for n in real.variants.values() if n in TABLE]
    assert len(prebuild.planned_recipes(real)) == 5 and real.items_of in TABLE
    assert prebuild.planned_recipes(kit.load_params("03_shortcut_neurons", "realsmoke")) == list(
        SMOKE
    )


def test_build_ahead_builds_the_missing_real_fine_tunes_as_jobs_on_the_engine(monkeypatch):
    cfg = kit.load_params(
        "03_shortcut_neurons", "realsmoke", overrides={"engine": "local", "max_workers": 2}
    )
    built = {"real/smollm2-135m-instruct+other-smoke"}
    calls = []
    monkeypatch.setattr(prebuild.finetune, "is_built", lambda r: r.name in built)
    monkeypatch.setattr(
        prebuild.finetune, "build_many", lambda names, **kw: calls.append((names, kw))
    )
    assert prebuild.build_ahead(cfg) == 1
    assert calls == [
        (
            ["real/smollm2-135m-instruct+arc-test-x4-smoke"],
            {"engine": "local", "max_workers": 2, "ray_address": None},
        )
    ]
    built.add("real/smollm2-135m-instruct+arc-test-x4-smoke")
    assert prebuild.build_ahead(cfg) == 0 and len(calls) == 1, "all cached: no sweep"
