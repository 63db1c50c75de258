"""Models' own answers as jobs (kit.cg.answers): the same files and numbers on every engine, read
back into the suite by position."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kit.cg import answers as A
from kit.core.jobs import run_jobs
from kit.core.paths import cache_dir


def test_answered_positions_are_a_seeded_subset():
    a = A.answered_positions(20, 5, "bbh", seed=0)
    assert a.tolist() == sorted(a.tolist()) and len(set(a.tolist())) == 5 and a.max() < 20
    assert a.tolist() == A.answered_positions(20, 5, "bbh", seed=0).tolist()
    assert a.tolist() != A.answered_positions(20, 5, "mmlu", seed=0).tolist(), (
        "each benchmark its own order"
    )
    assert set(A.answered_positions(20, 5, "bbh", 0)) <= set(
        A.answered_positions(20, 8, "bbh", 0)
    ), "more items extend the subset"
    with pytest.raises(ValueError, match="n_answer"):
        A.answered_positions(20, 0, "bbh")


def test_model_answers_summary_has_its_interval():
    a = A.ModelAnswers(
        "m",
        "arc_challenge",
        np.arange(4),
        list("abcd"),
        ["A", "B", "C", "D"],
        np.array([True, False, False, True]),
        np.array([False, False, True, False]),
        8,
    )
    s = a.summary()
    assert (
        s["accuracy"] == 0.5
        and s["accuracy_low"] < 0.5 < s["accuracy_high"]
        and s["truncated"] == 1
    )


def test_math_answers_are_keyed_by_their_checker(monkeypatch):
    """A MATH-style file scored by the normaliser is not read back once math-verify is installed;
    other benchmarks' files keep their names."""

    def path(benchmark, checker):
        monkeypatch.setattr(A, "math_checker", lambda: checker)
        return A.answers_path("twin/llama", benchmark, 6, 3, 0, 4, None)

    assert path("math500", "normaliser (math-verify not installed)") != path(
        "math500", "math-verify 0.8.0"
    )
    assert path("arc_challenge", "normaliser (math-verify not installed)") == path(
        "arc_challenge", "math-verify 0.8.0"
    )


@pytest.mark.slow
def test_answer_jobs_give_the_same_answers_inline_and_local(tmp_path, monkeypatch):
    """One job per (model, benchmark) writes its scored answers into the cache; the inline
    and the local engine (worker processes) write the same files."""
    twins = cache_dir() / "twins"
    files = {}
    for engine in ("inline", "local"):
        root = tmp_path / engine
        root.mkdir()
        if twins.is_dir():  # the random twins built once, read by both engines
            (root / "twins").symlink_to(twins)
        monkeypatch.setenv("KIT_CACHE_DIR", str(root))  # worker processes inherit it
        jobs = A.answer_jobs(
            ["twin/llama"],
            ["arc_challenge", "gsm8k"],
            n_items=6,
            n_answer=3,
            max_new_tokens=4,
            batch_size=2,
        )
        report = run_jobs(jobs, engine=engine, max_workers=2)
        assert report.ok and len(report.results) == 2
        files[engine] = {
            p.name: json.loads(p.read_text())["value"]
            for p in sorted((root / "cg" / "answers").glob("*.json"))
        }
        again = run_jobs(jobs, engine="inline")  # a rerun reads the files back
        assert again.results == report.results
    assert list(files["inline"]) == list(files["local"]) and len(files["inline"]) == 2
    assert files["inline"] == files["local"], (
        "the engine only schedules: same responses, same scores"
    )
    one = next(iter(files["inline"].values()))
    assert len(one["responses"]) == 3 and len(one["positions"]) == 3 and one["max_new_tokens"] == 4
