"""Notebook 00 on the ``realsmoke`` profile: a real pretrained LLM (SmolLM2-135M-Instruct, installed
offline by ``make setup``) asked ARC-Challenge with the benchmark's answer instruction, through the
runner as ``make run`` executes notebooks; its accuracy comes with interval, chance, parse failures and
truncations; then the comparison of models x benchmarks."""

from __future__ import annotations

import pytest

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.mark.notebook_run("realsmoke", "00")
def test_notebook_00_asks_a_real_llm(notebook_run):
    run = notebook_run("realsmoke", "00")
    assert run.status == "ok", f"00 failed on realsmoke ({run.dir}):\n{run.error[-3000:]}"
    r = run.results()
    assert r["model"] == "real/smollm2-135m-instruct" and r["task"] == "arc_challenge"
    assert r["n"] == r["n_eval"] == 8 and r["prompt_style"] == "instructed"
    assert r["accuracy"] == pytest.approx(r["n_correct"] / r["n"])
    low, high = r["accuracy_ci95"]
    assert 0 <= low <= r["accuracy"] <= high <= 1 and high - low > 0
    assert r["chance"] == pytest.approx(0.25, abs=0.05), "ARC-Challenge: four options, a few with three or five"
    assert 0 <= r["parse_failures"] <= r["n"] and 0 <= r["truncated"] <= r["n"]
    assert 0 < r["mui"] < 100
    # the comparison section: one record per (model, benchmark), each with the walk-through's numbers
    cells = r["comparison"]
    assert [(c["model"], c["task"]) for c in cells] == [
        ("real/smollm2-135m-instruct", "arc_challenge"),
        ("real/smollm2-135m-instruct", "gsm8k"),
    ]
    assert [c["max_new_tokens"] for c in cells] == [8, 16] and all(c["n"] == 2 for c in cells)
    assert cells[1]["chance"] is None, "GSM8K is free-form: no chance level"
    assert all(0 < c["mui"] < 100 and 0 <= c["parse_failures"] <= c["n"] for c in cells)
