"""Fault injection on runs: a full disk under ``--out`` or ``--figures``,
SIGTERM, racing runners, ``latest`` after a failed run, file modes. A run is whole or says why not;
no staging file is left; ``figures/`` keeps its old files."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kit.core import runner
from kit.core.execution import NotebookOutcome
from kit.core.paths import REPO_ROOT, atomic_dir, atomic_write_text
from kit.core.progress import run_order


def _run(tmp_path, nbs, *args, out=None):
    return runner.main(
        [
            "--profile",
            "smoke",
            "--notebooks",
            str(nbs),
            "--out",
            str(out or tmp_path / "runs"),
            *args,
        ]
    )


def _record(out: Path) -> tuple[Path, dict]:
    (run_dir,) = [
        p for p in (out / "smoke").iterdir() if not p.is_symlink() and not p.name.startswith(".")
    ]
    return run_dir, json.loads((run_dir / "run.json").read_text())


def _enospc_after(limit: int, real):
    """``real(src_or_text, path)`` writing at most ``limit`` bytes of a bigger output, then failing
    as a full disk does (errno ENOSPC, no file name)."""

    def write(data, path, *a, **kw):
        size = len(data) if isinstance(data, (str, bytes)) else os.path.getsize(data)
        if size > limit:
            Path(path).write_bytes(b"x" * limit)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(data, path, *a, **kw)

    return write


@pytest.mark.slow
def test_disk_full_under_out_is_named_and_leaves_no_half_written_notebook(
    tmp_path, small_disk, helpers, monkeypatch, capsys
):
    """A truncated notebook, run.json 'running', 'No space left on device: None'."""
    nbs = helpers.notebooks(tmp_path, {"01_big": "print('x' * 3_000_000)"})
    if small_disk is None:  # no tmpfs here: papermill's notebook write fails as on a full disk
        import nbformat
        import papermill.engines as engines
        import papermill.execute as execute

        real = engines.write_ipynb

        def write_ipynb(nb, path, **kw):
            text = nbformat.writes(nb)
            if len(text) > 200_000:
                Path(path).write_text(text[:200_000])
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(nb, path, **kw)

        monkeypatch.setattr(engines, "write_ipynb", write_ipynb)
        monkeypatch.setattr(execute, "write_ipynb", write_ipynb)
    out = (small_disk or tmp_path) / "runs"
    rc = _run(tmp_path, nbs, out=out)
    err = capsys.readouterr().err
    run_dir, record = _record(out)
    assert rc == 1 and record["status"] == "failed", record
    (nb,) = record["notebooks"]
    assert nb["status"] == "failed" and "no space left on device writing" in nb["error"], nb[
        "error"
    ]
    assert str(run_dir / "01_big") in nb["error"], "the message names the file being written"
    assert "None" not in err and "None" not in nb["error"]
    assert not helpers.staging_debris(run_dir), "staging files left behind"
    final = run_dir / "01_big" / "01_big.ipynb"
    assert not final.exists() or json.loads(final.read_text()), "a truncated notebook in the run"
    assert not (out / "smoke" / "latest").exists(), "latest moved to a failed run"


@pytest.mark.slow
def test_disk_full_under_figures_keeps_the_old_figures_and_fails_the_run(
    tmp_path, small_disk, helpers, monkeypatch, capsys
):
    """'.00_quickstart.new-<pid>/' with a partial PNG while run.json said 'ok'."""
    code = (
        "from pathlib import Path\nd = Path(out_dir) / 'figures'\nd.mkdir()\n"
        "(d / 'big.png').write_bytes(b'p' * 700_000)\n(d / 'big.pdf').write_bytes(b'd' * 700_000)\n"
    )
    nbs = helpers.notebooks(tmp_path, {"01_figs": code})
    figures = (small_disk or tmp_path) / "figures"
    (figures / "01_figs").mkdir(parents=True)
    (figures / "01_figs" / "committed.png").write_bytes(b"committed")
    if small_disk is None:
        monkeypatch.setattr(
            runner.shutil, "copyfile", _enospc_after(500_000, runner.shutil.copyfile)
        )
    rc = _run(tmp_path, nbs, "--figures", str(figures))
    err = capsys.readouterr().err
    run_dir, record = _record(tmp_path / "runs")
    assert rc == 1 and record["status"] == "failed", record
    assert f"no space left on device writing {figures / '01_figs'}" in record["error"], record
    assert "no space left on device writing" in err
    assert sorted(p.name for p in (figures / "01_figs").iterdir()) == ["committed.png"]
    assert (figures / "01_figs" / "committed.png").read_bytes() == b"committed"
    assert not helpers.staging_debris(figures), "staging folder left in figures/"
    assert not (tmp_path / "runs" / "smoke" / "latest").exists()


@pytest.mark.slow
def test_sigterm_stops_a_run_like_ctrl_c(tmp_path, helpers):
    """SIGTERM left run.json 'running'. Now: 'interrupted', no staging, figures kept,
    the kernel gone."""
    started, pid_file = tmp_path / "cell-started", tmp_path / "kernel-pid"
    code = (
        f"import os, pathlib, time\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
        f"pathlib.Path({str(started)!r}).touch()\ntime.sleep(300)"
    )
    nbs = helpers.notebooks(tmp_path, {"01_sleep": code})
    figures = tmp_path / "figures"
    (figures / "01_sleep").mkdir(parents=True)
    (figures / "01_sleep" / "committed.png").write_bytes(b"committed")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kit",
            "run",
            "--profile",
            "smoke",
            "--notebooks",
            str(nbs),
            "--out",
            str(tmp_path / "runs"),
            "--figures",
            str(figures),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    for _ in range(600):  # the kernel has started and entered the cell (slow on a loaded machine)
        if started.exists() or proc.poll() is not None:
            break
        time.sleep(0.5)
    assert started.exists(), proc.communicate(timeout=60)
    proc.send_signal(signal.SIGTERM)  # to the runner only, as `kill` or a scheduler sends it
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted during 01_sleep (SIGTERM)" in err, err
    run_dir, record = _record(tmp_path / "runs")
    assert record["status"] == "interrupted" and record["error"] == "SIGTERM", record
    assert record["notebooks"][0]["status"] == "interrupted"
    assert (
        not helpers.staging_debris(run_dir)
        and not (run_dir / "01_sleep" / "01_sleep.ipynb").exists()
    )
    assert sorted(p.name for p in (figures / "01_sleep").iterdir()) == ["committed.png"]
    kernel = int(pid_file.read_text())
    for _ in range(60):
        try:
            os.kill(kernel, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    else:
        os.kill(kernel, signal.SIGKILL)
        pytest.fail("the notebook's kernel outlived the runner")


def test_a_runner_that_loses_the_race_for_a_name_takes_the_next(tmp_path, monkeypatch):
    """``new_run_dir`` failed ~45% of the time with 6 racing runners."""
    mkdir = Path.mkdir
    taken: list[Path] = []

    def another_runner_first(self, *args, **kwargs):
        if self.parent == tmp_path / "runs" / "smoke" and len(taken) < 3:
            taken.append(self)
            mkdir(self)  # the other runner got this name between our check and our mkdir
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", another_runner_first)
    run_dir = runner.new_run_dir(tmp_path / "runs", "smoke")
    assert run_dir not in taken and run_dir.is_dir() and len(taken) == 3


def test_six_racing_runners_get_six_run_directories(tmp_path):
    barrier, got, errors = threading.Barrier(6), [], []

    def start():
        barrier.wait()
        try:
            got.append(runner.new_run_dir(tmp_path / "runs", "smoke"))
        except Exception as e:  # noqa: BLE001 (any failure is the test's failure)
            errors.append(e)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(got)) == 6


def test_latest_points_at_the_newest_complete_run(tmp_path, monkeypatch, capsys):
    """Latest moved to failed runs; a runner finishing late must not move it back."""

    def outcome(status):
        def execute(nb, profile, run_dir, timeout, overrides=None):
            (run_dir / nb.stem).mkdir()
            return NotebookOutcome(
                nb.stem, status, 0.1, error="planted" if status == "failed" else ""
            )

        return execute

    monkeypatch.setattr(runner, "execute", outcome("ok"))
    assert runner.main(["--profile", "smoke", "--only", "00", "--out", str(tmp_path / "runs")]) == 0
    latest = tmp_path / "runs" / "smoke" / "latest"
    good = os.readlink(latest)
    monkeypatch.setattr(runner, "execute", outcome("failed"))
    assert runner.main(["--profile", "smoke", "--only", "00", "--out", str(tmp_path / "runs")]) == 1
    assert os.readlink(latest) == good, "latest moved to a failed run"
    newer = tmp_path / "runs" / "smoke" / "29991231-235959-12"
    newer.mkdir()
    runner.point_latest(newer)
    # an older run finishing after a newer one
    runner.point_latest(tmp_path / "runs" / "smoke" / good)
    assert os.readlink(latest) == newer.name
    assert run_order("20260101-000000-10") > run_order("20260101-000000-9")


def test_outputs_are_readable_by_the_group(tmp_path):
    """Results, params and figures were written 0600 (mkstemp)."""
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "results.json", "{}\n")
        with atomic_dir(tmp_path / "sae") as d:
            (d / "w").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "results.json").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "sae").st_mode) == 0o755
