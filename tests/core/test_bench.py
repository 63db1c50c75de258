from __future__ import annotations

import pytest

from kit.core import bench as bench
from kit.__main__ import main as kit_main


def test_bench_line_format():
    assert str(bench.BenchLine("mui/score_vs_forward", 1.234, "ours 1.2 ms")) == "mui/score_vs_forward: ratio=1.23 (ours 1.2 ms)"


def test_unknown_workload_lists_allowed(capsys):
    with pytest.raises(SystemExit):
        bench.main(["nope"])
    err = capsys.readouterr().err
    assert "nope" in err and "mui" in err and "patching" in err


def test_every_registered_workload_is_importable():
    import importlib

    for name, target in bench.WORKLOADS.items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), f"bench workload {name} -> {target}"


def test_failing_workload_is_reported_not_fatal(monkeypatch, capsys):
    monkeypatch.setitem(bench.WORKLOADS, "boom", "kit.core.bench:_no_such_function")
    assert bench.main(["boom"]) == 1
    assert "boom: FAILED" in capsys.readouterr().out


def test_median_time_runs_the_function():
    calls = []
    assert bench.median_time(lambda: calls.append(1), repeat=3, warmup=2) >= 0
    assert len(calls) == 5


def test_cli_unknown_command(capsys):
    assert kit_main(["frobnicate"]) == 2
    assert "allowed: run, bench, zoo" in capsys.readouterr().err
