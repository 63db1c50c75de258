"""Tests of kit.mui.measurements: notebook 02's performance and MUI table with the subjects faked,
on revision twins one model at a time, and the items a contaminated real fine-tune leaked."""

from __future__ import annotations

import pytest
import torch

from kit.mui.measurements import leak_items, measure


def test_measure_tabulates_perf_and_mui(monkeypatch):
    """measure() with the subjects faked (the world's respond and MUI boundaries): checks the tidy
    table it builds."""
    import kit.mui.metric
    import kit.subjects
    import kit.world as kworld
    from kit.data.items import Item
    from kit.world import WorldSubject

    class FakeTask:
        group = "math"
        chance = 0.5

        def items(self, split, n, seed):
            return [Item(f"{split}/{i}", "p", answer="1") for i in range(n)]

    def Res(mui):  # what kit.mui.metric.utilization returns
        return kit.mui.metric.MUIResult(mui, torch.zeros(1, 1, dtype=torch.bool), 1)

    class Stub(WorldSubject):
        def respond(self, task, items, max_new_tokens=1, ablate=()):
            # right answer ("1") on the first 3 (zoo/a) or 1 (zoo/b)
            k = 3 if self.name.endswith("a") else 1
            return ["1 x"] * k + ["10"] * (len(items) - k)

        def tokens(self, items, responses):  # the rows MUI reads: faked with it below
            return None, None

    monkeypatch.setattr(kit.subjects, "load_subject", lambda name, **kw: Stub(name, model=name))
    monkeypatch.setattr(kworld, "get_task", lambda t: FakeTask(), raising=False)
    monkeypatch.setattr(
        kit.mui.metric,
        "utilization",
        lambda m, tokens, mask, **kw: Res(2.5 if kw["score"] == "score" else 0.0),
    )
    df = measure(["zoo/a", "zoo/b"], ["add"], splits=["test", "fresh"], n_items=4)
    assert list(df.columns)[:7] == ["model", "task", "group", "split", "n", "perf", "mui"]
    assert len(df) == 4 and set(df["split"]) == {"test", "fresh"}
    # exact match on the first word: "1 x" counts, "10" does not
    assert list(df[df["model"] == "zoo/a"]["perf"]) == [75.0, 75.0] and list(
        df[df["model"] == "zoo/b"]["perf"]
    ) == [25.0, 25.0]
    assert (df["mui"] == 2.5).all() and (df["group"] == "math").all()
    assert (
        (df["chance"] == 0.5).all()
        and (df["parse_failures"] == 0).all()
        and (df["truncated"] == 0).all()
    )
    assert (df["perf_low"] < df["perf"]).all() and (df["perf"] < df["perf_high"]).all(), (
        "Wilson interval around it"
    )
    with pytest.raises(ValueError, match="allowed values"):
        measure(["zoo/a"], ["add"], splits=["dev"])


def test_measure_real_models_one_at_a_time_with_teacher_forced_mui(monkeypatch, tmp_path):
    """Revision twins through the real-model path: each model is freed (and its HF generation copy
    released) before the next loads; MUI equals kit.mui.metric on the same responses in one
    batch."""
    import gc
    import weakref

    import kit
    import kit.models.load
    from kit import load_benchmark
    from kit.data.prompts import instructed_items
    from kit.models import generate as gen
    from kit.models import twins
    from kit.mui import metric as kmui

    names = ["twin/olmo2@step1", "twin/olmo2@step2"]
    for n in names:  # built in the shared cache before the per-item caches move to tmp_path
        twins.twin_path("olmo2", revision=n.split("@")[1])
    monkeypatch.setattr(twins, "twins_root", lambda root=twins.twins_root(): root)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    real_load, alive, held_at_load = kit.models.load.load_model, [], []

    def load(name, **kw):
        gc.collect()
        alive.append(sum(r() is not None for r in alive_refs))
        held_at_load.append(len(gen._HELD))
        model = real_load(name, **kw)
        alive_refs.append(weakref.ref(model))
        return model

    alive_refs: list = []
    monkeypatch.setattr(kit.models.load, "load_model", load)
    df = measure(
        names, ["gsm8k"], splits=["test"], n_items=4, max_new_tokens=4, max_batch_tokens=64
    )
    assert alive == [0, 0] and held_at_load == [0, 0], "a previous model was still in memory"
    assert list(df["model"]) == names and (df["n"] == 4).all()
    # the default style
    items = instructed_items("gsm8k", load_benchmark("gsm8k", "test", limit=4), "instructed")
    for name, mui in zip(names, df["mui"]):
        model = real_load(name)
        responses = gen.respond(
            model, [it.prompt for it in items], gen.GenerationSettings(max_new_tokens=4)
        )
        assert mui == pytest.approx(
            kmui.utilization_for_items(model, items, responses).mui, abs=1e-9
        )
    assert df["mui"].iloc[0] != df["mui"].iloc[1], "two revisions are two different models"
    # responses and key neurons, per model
    assert len(list((tmp_path / "items").glob("*.jsonl"))) == 4


# --- real fine-tunes: every model asked the same items (items_of) ------------------------------


def test_leak_items_are_the_recipes_leaked_and_unseen_items_asked_as_trained():
    from kit.models.finetune_examples import LETTER_INSTRUCTION, split_items
    from kit.models.recipes import SMOKE

    name = "real/smollm2-135m-instruct+arc-test-x4-smoke"
    r = SMOKE[name]
    got = leak_items(name, ["arc_challenge", "mmlu"], ["test", "fresh"], n_items=4, seed=0)
    injected, _ = split_items(r.benchmark, "test", r.n_items, r.items_seed)
    # the recipe injected 2 items: test is those 2 (n_items=4 is capped), fresh 4 never injected
    assert [it.id for it in got[("arc_challenge", "test")]] == [it.id for it in injected]
    fresh = got[("arc_challenge", "fresh")]
    assert len(fresh) == 4 and not {it.id for it in fresh} & {it.id for it in injected}
    # out of domain: the same unseen items in both splits
    assert got[("mmlu", "test")] == got[("mmlu", "fresh")] and len(got[("mmlu", "test")]) == 4
    assert all(it.prompt.endswith(LETTER_INSTRUCTION) for items in got.values() for it in items)
    with pytest.raises(ValueError, match="injects no test items"):
        leak_items("real/smollm2-135m-instruct+other-smoke", ["arc_challenge"], ["test"], 4)
    with pytest.raises(ValueError, match="not among tasks"):
        leak_items(name, ["mmlu"], ["test"], 4)
    with pytest.raises(ValueError, match="allowed values: test, fresh"):
        leak_items(name, ["arc_challenge"], ["test-syn"], 4)
