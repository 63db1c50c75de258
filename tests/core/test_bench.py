from __future__ import annotations

import pytest

from kit import bench as cli
from kit.__main__ import main as kit_main
from kit.core import bench as bench


def test_bench_line_format():
    assert (
        str(bench.BenchLine("mui/score_vs_forward", 1.234, "ours 1.2 ms"))
        == "mui/score_vs_forward: ratio=1.23 (ours 1.2 ms)"
    )


def test_unknown_workload_lists_allowed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["nope"])
    err = capsys.readouterr().err
    assert "nope" in err and "mui" in err and "patching" in err


def test_every_registered_workload_is_importable():
    import importlib

    for name, target in cli.WORKLOADS.items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), (
            f"bench workload {name} -> {target}"
        )


def test_failing_workload_is_reported_not_fatal(monkeypatch, capsys):
    monkeypatch.setitem(cli.WORKLOADS, "boom", "kit.core.bench:_no_such_function")
    assert cli.main(["boom"]) == 1
    assert "boom: FAILED" in capsys.readouterr().out


def test_median_time_runs_the_function():
    calls = []
    assert bench.median_time(lambda: calls.append(1), repeat=3, warmup=2) >= 0
    assert len(calls) == 5


def test_cli_unknown_command(capsys):
    assert kit_main(["frobnicate"]) == 2
    assert "allowed: run, bench, zoo" in capsys.readouterr().err


def test_dtype_reaches_the_workloads_that_take_it(monkeypatch, capsys):
    import types

    seen = {}

    def run(model="m", device="cpu", dtype=None):
        seen["dtype"] = dtype
        return [bench.BenchLine("fake", 1.0, "ok")]

    monkeypatch.setitem(__import__("sys").modules, "kit_fake_bench", types.SimpleNamespace(run=run))
    monkeypatch.setitem(cli.WORKLOADS, "fake", "kit_fake_bench:run")
    assert cli.main(["fake", "--dtype", "bf16"]) == 0 and seen["dtype"] == "bf16"
    assert cli.main(["cg", "--dtype", "bf16"]) == 1  # cg's encoders have no dtype option
    assert "not taken by this workload" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["fake", "--dtype", "bf17"])
    assert "allowed values" in capsys.readouterr().err


def test_mui_bench_runs_in_bfloat16():
    from kit.mui import bench as mui_bench

    lines = mui_bench.run("random/tiny-gated", dtype="bf16")
    assert [line.name for line in lines][:2] == [
        "mui/score_vs_forward[short]",
        "mui/speedup_vs_public[short]",
    ]
    assert all(line.ratio > 0 and "(bf16)" in line.detail for line in lines)
