"""Notebook 04 on the ``realsmoke`` profile: SmolLM2 answers a few items of three benchmarks itself
(the ``real`` profile's path in seconds), through the runner as ``make run`` executes notebooks."""

from __future__ import annotations

import pytest

from kit.cg.claims import REQUIRED_IDS
from kit.core.claims import check_consistent

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.mark.notebook_run("realsmoke", "04")
def test_notebook_04_runs_on_realsmoke(notebook_run):
    run = notebook_run("realsmoke", "04")
    assert run.status == "ok", f"04 failed on realsmoke ({run.dir}):\n{run.error[-3000:]}"
    results = run.results()
    answers = results["answers"]
    assert {a["benchmark"] for a in answers} == {"arc_challenge", "mmlu", "bbq"}
    assert all(a["model"] == "real/smollm2-135m-instruct" and a["items"] == 4 for a in answers)
    assert all(0 <= a["accuracy_low"] <= a["accuracy"] <= a["accuracy_high"] <= 1 for a in answers)
    assert results["model_benchmarks"] and {r["model"] for r in results["model_benchmarks"]} == {
        "smollm2-135m-instruct"
    }
    claims = {c["id"]: c for c in results["claims"]}
    assert set(REQUIRED_IDS["04_competency_gaps"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    assert claims["model_gaps.vs_shuffled"]["rests_on"].startswith(
        "smollm2-135m-instruct: its own greedy answers generated here (12 items of "
        "arc_challenge, mmlu, bbq)"
    )
