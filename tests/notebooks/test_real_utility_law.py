"""Notebook 01 on the ``realsmoke`` profile: SmolLM2-135M-Instruct (installed offline by ``make
setup``) answers a few ARC-Challenge and MMLU items with their answer instructions, and the MUI
sections run on its own responses, through the runner as ``make run`` executes notebooks.
With one model the law and PUR's ranking are not testable, and the claims table must say so."""

from __future__ import annotations

import pytest

from kit.core.claims import check_consistent
from kit.mui.claims import REQUIRED_IDS

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

FOCUS = "real/smollm2-135m-instruct"
LAW_IDS = ("law.tiny_pooled", "law.tiny_per_task_sign", "pur.ranking_vs_performance")
MEASURED_IDS = ("diversity.mixed_grows_faster", "correctness.no_difference", "masking.key_vs_random")


@pytest.mark.notebook_run("realsmoke", "01")
def test_notebook_01_measures_a_real_llm(notebook_run):
    run = notebook_run("realsmoke", "01")
    assert run.status == "ok", f"01 failed on realsmoke ({run.dir}):\n{run.error[-3000:]}"
    r = run.results()
    grid = r["tiny_grid"]
    assert {(g["model"], g["task"]) for g in grid} == {(FOCUS, "arc_challenge"), (FOCUS, "mmlu")}
    for g in grid:  # the real benchmarks' answers, scored, with an interval and MUI in (0, 100)
        assert g["n_items"] == 4 and 0 <= g["perf_low"] <= g["performance"] <= g["perf_high"] <= 100
        assert 0 < g["mui"] < 100
    assert r["law_not_testable"].startswith("not testable: 1 model (real/smollm2-135m-instruct)")
    claims = {c["id"]: c for c in r["claims"]}
    assert set(REQUIRED_IDS["01_utility_law"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    for cid in LAW_IDS:  # one model: the law across models and PUR's ranking read the cause
        assert claims[cid]["verdict"] == "not testable here", cid
        assert "1 model" in claims[cid]["why"] and FOCUS in claims[cid]["rests_on"], cid
    for cid in MEASURED_IDS:  # measured on SmolLM2: a verdict from numbers, or the cause it lacks
        c = claims[cid]
        assert c["rests_on"].startswith(FOCUS), cid
        assert c["verdict"] != "not testable here" or c["why"], cid
    assert claims["diversity.mixed_grows_faster"]["ours"] is not None, "§3.6 has growth curves here"
    # the tiny world's own sections (multi-token answers) do not run on a real model, and say so
    assert claims["law.multi_token"]["verdict"] == "not testable here"
