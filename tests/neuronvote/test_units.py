"""kit.neuronvote.units: one (concept, layer) unit, its shuffled-label null, and the same numbers
computed here, on the inline engine and on the local engine (the cache read back)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from kit.neuronvote import methods as nv
from kit.neuronvote import study as nvs
from kit.neuronvote import units as nv_units
from kit.neuronvote.concepts import TaggedSentence, build_concept_tasks


@pytest.fixture()
def small():
    rng = np.random.default_rng(3)
    tags = rng.choice(["A", "B", "O"], size=600, p=[0.3, 0.3, 0.4])
    sents = [
        TaggedSentence(tuple(f"w{i + j}" for j in range(10)), tuple(tags[i : i + 10]))
        for i in range(0, 600, 10)
    ]
    tasks = build_concept_tasks(sents, ["A", "B"], min_examples=100, max_per_class=80, seed=0)
    vectors = {}
    for layer in (0, 1):
        v = rng.normal(size=(600, 24)).astype(np.float32)
        v[:, 3] += 2.0 * (tags == "A")
        v[:, 7] += 2.0 * (tags == "B")
        vectors[layer] = v
    kw = dict(
        s_values=(5,),
        accuracy_s=(5,),
        pairwise_s=(5,),
        progress=False,
        gaussian_max_neurons=5,
        random_draws=2,
        reseeds=1,
        shuffles=2,
        iou_percentile=50,
    )
    return tasks, vectors, kw


def test_shuffled_labels_keep_the_class_counts_and_differ_by_copy():
    y = np.array([1] * 30 + [0] * 30)
    a, b = (nv_units.shuffled_labels(y, 0, "A", 1, k) for k in (1, 2))
    assert a.sum() == b.sum() == 30 and not np.array_equal(a, b) and not np.array_equal(a, y)
    np.testing.assert_array_equal(a, nv_units.shuffled_labels(y, 0, "A", 1, 1))


def test_shuffled_labels_lose_the_planted_neurons():
    """Five planted neurons of equal scale to the rest (columns z-scored): on the labels every
    method finds them; on shuffled labels their agreement falls, but stays far above the chance
    overlap of random top-s sets (5 / 55), because every method ranks the same spurious mean
    differences of the same words: why Random is no null for agreement and shuffled labels are."""
    rng = np.random.default_rng(5)
    tags = rng.choice(["A", "O"], size=800, p=[0.5, 0.5])
    sents = [
        TaggedSentence(tuple(f"w{i + j}" for j in range(10)), tuple(tags[i : i + 10]))
        for i in range(0, 800, 10)
    ]
    tasks = build_concept_tasks(sents, ["A"], min_examples=100, max_per_class=150, seed=0)
    v = rng.normal(size=(800, 30))
    v[:, :5] += 1.5 * (tags == "A")[:, None]
    v = (v - v.mean(0)) / v.std(0)
    res = nvs.run_study(
        tasks,
        {0: v},
        "syn",
        "x",
        s_values=(5,),
        accuracy_s=(5,),
        pairwise_s=(5,),
        progress=False,
        gaussian_max_neurons=5,
        random_draws=2,
        shuffles=3,
        iou_percentile=50,
    )
    assert set(res.rankings[(0, "A")]["probeless"][:5]) == set(range(5)), (
        "Probeless finds the planted neurons"
    )
    sh = res.shuffled_scores
    assert set(sh["shuffle"]) == {1, 2, 3} and set(sh["method"]) == set(res.voters) | {"meanselect"}
    voters = list(res.voters)
    real = res.scores[
        res.scores.method.isin(voters) & (res.scores.metric == "AvgOverlap")
    ].score.mean()
    null = sh[sh.method.isin(voters) & (sh.metric == "AvgOverlap")].score.mean()
    chance = 5 / (2 * 30 - 5)
    assert real > null + 0.3 and null > 2 * chance, (real, null, chance)


def test_same_numbers_here_inline_and_local(small, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    tasks, vectors, kw = small
    here = nvs.run_study(tasks, vectors, "syn", "x", **kw)
    inline = nvs.run_study(tasks, vectors, "syn", "x", jobs={"engine": "inline"}, **kw)
    cached = sorted((tmp_path / "cache" / "neuronvote" / "units").glob("*.json"))
    assert len(cached) == 2 * 2 * 2, "one rank and one shuffle result per (concept, layer)"
    for f in cached:
        f.unlink()  # the local engine must compute them again, in its worker processes
    local = nvs.run_study(
        tasks, vectors, "syn", "x", jobs={"engine": "local", "max_workers": 2}, **kw
    )
    for other in (inline, local):
        for name in ("scores", "accuracy", "reseed_scores", "shuffled_scores"):
            pd.testing.assert_frame_equal(
                getattr(here, name), getattr(other, name), check_exact=True
            )
        assert set(here.pairwise) == set(other.pairwise)
        for pos in here.pairwise:
            pd.testing.assert_frame_equal(here.pairwise[pos], other.pairwise[pos], check_exact=True)
        for key, rankings in here.rankings.items():
            for m, r in rankings.items():
                np.testing.assert_array_equal(r, other.rankings[key][m])


def test_a_finished_unit_is_read_back_not_recomputed(small, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    tasks, vectors, kw = small
    first = nvs.run_study(tasks, vectors, "syn", "x", jobs={"engine": "inline"}, **kw)

    def refuse(*a, **k):
        raise AssertionError("a cached unit was computed again")

    monkeypatch.setattr(nv_units, "compute_unit", refuse)
    again = nvs.run_study(tasks, vectors, "syn", "x", jobs={"engine": "inline"}, **kw)
    pd.testing.assert_frame_equal(first.scores, again.scores)


def test_cache_keys_follow_content_and_code(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert nv_units.stage_array(a) == nv_units.stage_array(a.copy())
    assert nv_units.stage_array(a) != nv_units.stage_array(a + 1)
    assert nv_units.stage_array(a) != nv_units.stage_array(a.astype(np.float64)), (
        "dtype is part of the key"
    )
    np.testing.assert_array_equal(nv_units.load_array(nv_units.stage_array(a)), a)
    settings = nv_units.UnitSettings(("probeless", "lca"), ("probeless", "lca"), (5,), (5,), (5,))
    jobs = nv_units.unit_jobs("v", "t", "A", 0, "first", settings, code="one")
    other = nv_units.unit_jobs("v", "t", "A", 0, "first", settings, code="two")
    assert len(jobs) == 1, "no shuffle job without shuffles"
    assert jobs[0].id != other[0].id, "a change of the ranking code must not return old results"
    assert nv_units.UnitSettings.from_json(settings.as_json()) == settings


def test_task_table_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    t = nv_units.task_table(
        np.array([1, 4, 7]), np.array([1, 0, 1]), np.array([2, 9]), np.array([0, 1])
    )
    xt, yt, xs, ys = nv_units._task_arrays(nv_units.stage_array(x), nv_units.stage_array(t))
    np.testing.assert_array_equal(xt, x[[1, 4, 7]])
    np.testing.assert_array_equal(yt, [1, 0, 1])
    np.testing.assert_array_equal(xs, x[[2, 9]])
    np.testing.assert_array_equal(ys, [0, 1])


def test_plan_rejects_bad_counts(small):
    tasks, vectors, kw = small
    with pytest.raises(ValueError, match="shuffles must be >= 0"):
        nvs.plan_study(
            tasks, vectors, "syn", "x", shuffles=-1, s_values=(5,), accuracy_s=(5,), pairwise_s=(5,)
        )


def test_rank_job_is_keyed_without_the_shuffle_count():
    # The notebook runs its main study once without shuffles, then again with them: the second
    # sweep must find the rankings of the first in the cache, not compute them again.
    plain = nv_units.UnitSettings(("probeless", "lca"), ("probeless", "lca"), (5,), (5,), (5,))
    shuffled = nv_units.UnitSettings(
        ("probeless", "lca"), ("probeless", "lca"), (5,), (5,), (5,), shuffles=3
    )
    a = nv_units.unit_jobs("v", "t", "A", 0, "first", plain, code="one")
    b = nv_units.unit_jobs("v", "t", "A", 0, "first", shuffled, code="one")
    assert len(b) == 2 and b[1].fn.endswith(":shuffle_unit_job")
    assert a[0].id == b[0].id, "the ranking part does not depend on the shuffle count"
    assert b[1].kwargs["settings"]["shuffles"] == 3, "the shuffle part keeps its count"


@pytest.mark.parametrize("voters", [("a", "b", "c"), ("a", "b", "random")])
def test_draw_scores_equal_scoring_each_draw_among_the_voters(voters):
    # Random's further draws are scored against the voters' sets formed once; the numbers must be
    # those of scoring every draw with the full AvgOverlap / NeuronVote (Random a voter or not).
    rng = np.random.default_rng(0)
    rankings: dict[str, Any] = {m: rng.permutation(30) for m in ("a", "b", "c", "random")}
    draws: list[Any] = [rng.permutation(30) for _ in range(4)]
    pool: dict[str, Any] = {v: rankings[v] for v in voters}
    for metric, fn in (("AvgOverlap", nv.avg_overlap), ("NeuronVote", nv.neuron_vote)):
        for s in (1, 4, 10):
            naive = [fn({**pool, "random": r}, s, voters=voters)["random"] for r in draws]
            got = nv_units._draw_scores(metric, rankings, voters, s, draws)
            assert got == naive, (metric, s)
    # a hand-computed case: voters' top-2 {0, 1} and {1, 2}; the draw's top-2 {1, 5}
    hand = {"a": np.array([0, 1, 2, 3, 4, 5]), "b": np.array([1, 2, 0, 3, 4, 5])}
    draw = [np.array([1, 5, 0, 2, 3, 4])]
    assert nv_units._draw_scores("AvgOverlap", hand, ("a", "b"), 2, draw) == [(1 / 3 + 1 / 3) / 2]
    # Borda of a, b with s = 2: neuron 1 gets 1 + 2 = 3, 0 gets 2, 2 gets 1 -> top-2 {1, 0}
    assert nv_units._draw_scores("NeuronVote", hand, ("a", "b"), 2, draw) == [1 / 3]
