"""Fault injection before and after a run: what the machine lacks is refused before any kernel
starts, in one line naming the variable or field; a runner killed outright is found by the next
run."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections import namedtuple

import pytest

from kit.core import preflight, runner
from kit.core.paths import REPO_ROOT


def _refused(tmp_path, nbs, capsys, monkeypatch) -> str:
    """Run ``nbs``; the run must be refused (exit 2) before any kernel or run folder, in one
    line: that line."""
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a kernel started"))
    rc = runner.main(
        ["--profile", "smoke", "--notebooks", str(nbs), "--out", str(tmp_path / "runs")]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists(), "a run folder was created"
    return err


def test_a_read_only_cache_is_refused_before_any_kernel(tmp_path, helpers, capsys, monkeypatch):
    """It died with a raw OSError [Errno 30] 40-88 s into the kernel."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(preflight.tempfile, "mkstemp", read_only)
    nbs = helpers.notebooks(tmp_path, {"01_x": "pass"})
    err = _refused(tmp_path, nbs, capsys, monkeypatch)
    assert err.startswith("KIT_CACHE_DIR: ") and "read-only file system" in err


def test_a_full_cache_is_refused_before_any_kernel(tmp_path, helpers, capsys, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda p: usage(10**9, 10**9, 5 << 20))
    nbs = helpers.notebooks(tmp_path, {"01_x": "pass"})
    err = _refused(tmp_path, nbs, capsys, monkeypatch)
    assert err.startswith("KIT_CACHE_DIR: ") and "has 5 MiB free" in err and "1 GiB" in err


def test_a_missing_data_folder_is_refused_before_any_kernel(tmp_path, helpers, capsys, monkeypatch):
    """KIT_DATA_DIR missing was found only inside the kernel."""
    monkeypatch.setenv("KIT_DATA_DIR", str(tmp_path / "no-data"))
    nbs = helpers.notebooks(tmp_path, {"01_x": "pass"})
    err = _refused(tmp_path, nbs, capsys, monkeypatch)
    assert err.startswith("KIT_DATA_DIR: ") and "no-data" in err


@pytest.mark.slow
def test_a_runner_killed_outright_is_marked_killed_by_the_next_run(tmp_path, helpers):
    """After SIGKILL of the runner, run.json stayed 'running' and .<nb>.partial.ipynb stayed."""
    started, pid_file = tmp_path / "cell-started", tmp_path / "kernel-pid"
    code = (
        f"import os, pathlib, time\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
        f"pathlib.Path({str(started)!r}).touch()\ntime.sleep(300)"
    )
    nbs = helpers.notebooks(tmp_path, {"01_sleep": code})
    args = ["--profile", "smoke", "--notebooks", str(nbs), "--out", str(tmp_path / "runs")]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kit", "run", "--parallel", "1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    for _ in range(600):
        if started.exists() or proc.poll() is not None:
            break
        time.sleep(0.5)
    assert started.exists(), proc.communicate(timeout=60)
    proc.kill()  # SIGKILL: no handler runs
    proc.communicate(timeout=60)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # its kernel, orphaned
    (first,) = (tmp_path / "runs" / "smoke").iterdir()
    assert json.loads((first / "run.json").read_text())["status"] == "running"
    assert helpers.staging_debris(first), "the killed run left its staging notebook"
    nbs.joinpath("01_sleep.ipynb").unlink()
    (tmp_path / "again").mkdir()
    helpers.notebooks(tmp_path / "again", {"01_quick": "pass"})
    rc = runner.main([*args[:2], "--notebooks", str(tmp_path / "again" / "nbs"), *args[4:]])
    assert rc == 0
    record = json.loads((first / "run.json").read_text())
    assert record["status"] == "killed" and f"pid {proc.pid}" in record["error"], record
    assert not helpers.staging_debris(first)
