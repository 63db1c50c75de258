"""The runner's memory plan: fewer notebooks at once when their peaks would not fit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.core import memory as M
from kit.core.runner import _next_to_start

GIB = M.GIB


def _plan(peaks_gib: dict[str, float], budget_gib: float | None) -> M.MemoryPlan:
    budget = None if budget_gib is None else int(budget_gib * GIB)
    return M.MemoryPlan({k: int(v * GIB) for k, v in peaks_gib.items()}, budget)


def test_two_large_notebooks_do_not_start_together_on_24_gib():
    # fake peaks: a 1.5B model's notebooks (~14 GiB each) and a small one
    plan = _plan({"01": 14.0, "00": 13.5, "05": 3.0, "06": 6.0}, budget_gib=22.0)
    assert M.fits("01", [], plan), "with nothing running a notebook always starts"
    assert not M.fits("00", ["01"], plan), "14 + 13.5 GiB exceed 22 GiB"
    assert M.fits("06", ["01"], plan) and M.fits("05", ["01"], plan)
    # longest first order 01, 00, 06, 05: with 01 running, 00 waits and 06 goes ahead of it
    assert M.next_that_fits(["00", "06", "05"], ["01"], plan) == 1
    assert M.next_that_fits(["00"], ["01", "06"], plan) is None
    # the runner's choice: the plan's pick, or the first waiting one without a plan
    waiting = [Path("00_quickstart"), Path("06_audits")]
    plan2 = _plan({"00_quickstart": 13.5, "01_law": 14.0, "06_audits": 6.0}, 22.0)
    assert _next_to_start(waiting, {"01_law": None}, plan2) == 1
    assert _next_to_start(waiting, {"01_law": None}, None) == 0


def test_an_unknown_budget_or_an_exact_fit_does_not_hold_a_notebook_back():
    assert M.fits("a", ["b"], _plan({"a": 50, "b": 50}, None))
    assert M.fits("a", ["b"], _plan({"a": 10, "b": 12}, 22.0)), "a sum equal to the budget fits"
    assert not M.fits("a", ["b"], _plan({"a": 10, "b": 12.5}, 22.0))


def test_estimate_is_kernel_plus_two_copies_of_the_largest_model_in_its_dtype():
    cfg = {"models": ["real/smollm2-135m-instruct", "real/qwen2.5-coder-1.5b-instruct"]}
    n = M.N_PARAMS["real/qwen2.5-coder-1.5b-instruct"]
    assert M.estimate_peak(cfg) == M.KERNEL_BYTES + 2 * 4 * n
    assert M.estimate_peak({**cfg, "dtype": "bfloat16"}) == M.KERNEL_BYTES + 2 * 2 * n
    # hand-computed: (1,543,714,304 + 151,936 x 1536 untied output) x 8 bytes = 13.2 GiB, plus the
    # kernel's 1.5: near the 14.0 GiB measured when the 1.5B model loads
    assert M.estimate_peak(cfg) / GIB == pytest.approx(1.5 + 1_777_088_000 * 8 / GIB)
    # a fine-tune (dict key) adds one training worker of its base: 52 bytes a parameter (~7 GB)
    small = M.N_PARAMS["real/smollm2-135m-instruct"]
    base = "real/smollm2-135m-instruct"
    tuned = {"contaminated": {f"{base}+arc-test-x5": base}}
    assert M.estimate_peak(tuned, cores=2) == M.KERNEL_BYTES + 2 * 4 * small + 52 * small
    five = {"models": [f"{base}+r{i}" for i in range(5)], "max_workers": 2}
    assert M.estimate_peak(five) == M.KERNEL_BYTES + 2 * 4 * small + 2 * 52 * small
    # max_workers None means every core (the job engine's reading): five fine-tunes on two cores
    # train two at a time, on eight cores five
    unset = {**five, "max_workers": None}
    assert M.estimate_peak(unset, cores=2) == M.estimate_peak(five)
    assert M.estimate_peak(unset, cores=8) == M.KERNEL_BYTES + 2 * 4 * small + 5 * 52 * small
    assert M.estimate_peak({**five, "max_workers": 1}, cores=8) == M.estimate_peak(tuned)
    assert M.estimate_peak({"model": "zoo/base-m"}) == M.KERNEL_BYTES, "tiny models count nothing"
    with pytest.raises(ValueError, match="dtype='int8'; allowed values: float32"):
        M.estimate_peak({"model": "real/gemma-3-270m", "dtype": "int8"})


def test_recorded_peaks_replace_estimates_newest_run_first(tmp_path):
    prof = tmp_path / "real"
    for name, peak in [("20260101-000000", 9 * GIB), ("20260102-000000", 7 * GIB)]:
        (prof / name).mkdir(parents=True)
        notebooks = [{"notebook": "01_utility_law", "status": "ok", "peak_bytes": peak}]
        (prof / name / "run.json").write_text(json.dumps({"notebooks": notebooks}))
    (prof / "20260103-000000").mkdir()
    (prof / "20260103-000000" / "run.json").write_text("{damaged")
    configs = {
        "01_utility_law": {"models": ["real/qwen2.5-coder-1.5b-instruct"]},
        "00_quickstart": {"model": "real/gemma-3-270m"},
    }
    plan = M.plan_memory(configs, tmp_path, "real", budget=20 * GIB)
    assert plan.peaks["01_utility_law"] == 7 * GIB and plan.source["01_utility_law"] == "recorded"
    assert plan.source["00_quickstart"] == "estimated"
    assert "01_utility_law 7.0 (recorded)" in plan.describe() and "20.0 GiB" in plan.describe()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_tree_peak_sees_a_child_process_memory():
    grow = "b = bytearray(300 * 1024 * 1024); import time; time.sleep(1.5)"
    with M.TreePeak(interval=0.1) as peak:
        subprocess.run([sys.executable, "-c", grow], check=True)
        time.sleep(0.2)
    assert peak.peak > 300 * 1024 * 1024, "the child's 300 MB must count in the tree's peak"
