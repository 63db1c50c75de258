"""Progress of a run: the live lines' text and estimate, the per-notebook log, heartbeats, and kit's
bars going to the log (never into a cell's saved output) under ``kit run``."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from kit.core import progress, runner
from kit.core.paths import REPO_ROOT
from kit.core.progress import (
    CellLog,
    LogState,
    RunProgress,
    duration,
    estimate_text,
    last_heading,
    last_seconds,
    notebook_line,
    read_state,
    run_line,
)

from .test_runner import fake_notebooks


def write_run(root, name: str, notebooks: dict[str, tuple[str, float]]) -> None:
    folder = root / "smoke" / name
    folder.mkdir(parents=True)
    record = {
        "notebooks": [
            {"notebook": k, "status": status, "seconds": s} for k, (status, s) in notebooks.items()
        ]
    }
    (folder / "run.json").write_text(json.dumps(record))


def test_estimates_are_the_newest_ok_time_of_each_notebook(tmp_path):
    write_run(tmp_path, "20260101-000000", {"01_a": ("ok", 100.0), "02_b": ("ok", 50.0)})
    write_run(tmp_path, "20260102-000000", {"01_a": ("ok", 130.0), "02_b": ("failed", 1.0)})
    write_run(tmp_path, "20260102-000000-1", {"03_c": ("interrupted", 9.0)})
    (tmp_path / "smoke" / "20260103-000000").mkdir()
    (tmp_path / "smoke" / "20260103-000000" / "run.json").write_text("{damaged")
    assert last_seconds(tmp_path, "smoke") == {"01_a": 130.0, "02_b": 50.0}, (
        "a failed or interrupted notebook's time is no estimate; a damaged record is skipped"
    )
    assert last_seconds(tmp_path, "tiny") == {}


@pytest.mark.parametrize(
    "seconds, text", [(0, "0s"), (42.4, "42s"), (59.6, "1m00s"), (307, "5m07s"), (7380, "2h03m")]
)
def test_durations(seconds, text):
    assert duration(seconds) == text


def test_a_notebook_line_names_cell_section_elapsed_estimate_and_bar():
    state = LogState(cell="4/20 § 2. Patching", bar="fine-tunes: 3/8 [01:20<02:10, 26.7s/it]")
    assert notebook_line("03_shortcut", state, 185, 720) == (
        "[03_shortcut] cell 4/20 § 2. Patching | 3m05s of ~12m00s (last run) | "
        "fine-tunes: 3/8 [01:20<02:10, 26.7s/it]"
    )
    assert notebook_line("03_shortcut", LogState(), 5, None) == (
        "[03_shortcut] starting its kernel | 5s (no earlier run to compare)"
    )
    assert estimate_text(800, 720) == "13m20s, over the last run's 12m00s"
    # no earlier run of this profile: a first run's typical time, said to be an estimate
    assert notebook_line("03_shortcut", LogState(), 185, 720, first_run=True) == (
        "[03_shortcut] starting its kernel | 3m05s of ~12m00s (a first run's estimate)"
    )
    assert estimate_text(800, 720, True) == "13m20s, over a first run's estimated 12m00s"


def test_the_run_line_spreads_what_is_left_over_the_slots():
    expected = {"01_a": 600.0, "02_b": 300.0, "03_c": 120.0}
    # 01_a has 400 s left, 02_b 300 s (waiting), 03_c 120 s (waiting): 820 s over 2 slots = 410 s
    line = run_line(1, 4, {"01_a": 200.0}, ["02_b", "03_c"], expected, parallel=2)
    assert line == "[run] 1/4 notebooks done, 1 running, ~6m50s left (last run's times)"
    # one slot: the sum; the longest notebook bounds it from below
    assert run_line(0, 3, {"01_a": 200.0}, ["02_b", "03_c"], expected, 1).endswith(
        "~13m40s left (last run's times)"
    )
    assert run_line(0, 2, {"01_a": 0.0}, ["03_c"], expected, 8).endswith(
        "~10m00s left (last run's times)"
    )
    assert run_line(0, 2, {"01_a": 0.0}, ["09_new"], expected, 2) == (
        "[run] 0/2 notebooks done, 1 running"
    ), "no estimate when a notebook has no earlier time"
    assert run_line(0, 1, {"01_a": 900.0}, [], expected, 1).endswith(
        "past the expected times (last run's times)"
    )
    # a first run: the same sum over first-run estimates, said so while one is still to come
    line = run_line(1, 4, {"01_a": 200.0}, ["02_b", "03_c"], expected, 2, frozenset({"03_c"}))
    assert line.endswith("~6m50s left (with first-run estimates)")
    assert run_line(2, 4, {"01_a": 200.0}, [], expected, 2, frozenset({"03_c"})).endswith(
        "~6m40s left (last run's times)"
    ), "the estimated notebook is done: only measured times are left"


@pytest.mark.parametrize(
    "source, heading",
    [
        ("# Title\n\ntext\n\n## 2. The law", "2. The law"),
        ("### 3.1 Fit ###", "3.1 Fit"),
        ("no heading, #not one either", None),
        ("```\ncode\n```", None),
    ],
)
def test_last_heading(source, heading):
    assert last_heading(source) == heading


def cell(kind: str, source: str):
    return SimpleNamespace(cell_type=kind, source=source)


def test_cell_log_counts_code_cells_under_their_section(tmp_path):
    log = tmp_path / "progress.log"
    hook = CellLog(log, n_cells=3)
    hook(cell=cell("code", "profile = 'smoke'"), cell_index=0)
    hook(cell=cell("markdown", "## 1. Data\ntext"), cell_index=1)
    hook(cell=cell("code", "   "), cell_index=2)  # empty: not executed, not counted
    hook(cell=cell("code", "x = 1"), cell_index=3)
    hook(cell=cell("markdown", "plain text"), cell_index=4)  # no heading: the section stays
    hook(cell=cell("code", "y = 2"), cell_index=5)
    hook(cell=cell("code", "z = 3"), cell_index=6)  # one more than announced: n grows
    kinds = [line.split(" ", 2)[1:] for line in log.read_text().splitlines()]
    assert kinds == [
        ["cell", "1/3"],
        ["cell", "2/3 § 1. Data"],
        ["cell", "3/3 § 1. Data"],
        ["cell", "4/4 § 1. Data"],
    ]


def test_cell_log_counts_the_notebook_s_code_cells_and_papermill_s(tmp_path):
    nbs = fake_notebooks(tmp_path, {"01_a": "x = 1"})
    assert CellLog.for_notebook(tmp_path / "log", nbs / "01_a.ipynb").n_cells == 3


def test_the_log_state_is_the_last_cell_and_its_newest_bar(tmp_path):
    log = tmp_path / "progress.log"
    assert read_state(log) == LogState(), "no log yet: nothing known"
    log.write_text(
        "10:00:00 cell 1/4\n10:00:01 bar items: 1/9 [..]\n10:00:02 cell 2/4 § B\n"
        "10:00:30 beat 30s, cell 2/4 § B\n10:00:40 bar models: 2/3 [..]\n"
        "10:00:50 bar models: 3/3 [..]\nbroken\n"
    )
    assert read_state(log) == LogState(cell="2/4 § B", bar="models: 3/3 [..]")
    with open(log, "a") as f:
        f.write("10:01:00 cell 3/4 § B\n")
    assert read_state(log) == LogState(cell="3/4 § B"), "a bar of an earlier cell is not shown"
    # a long loop's bars fill the tail that is read: the cell is still known (a real 05 run's
    # 108 units wrote 19 KB of bar lines after its cell line, and its line said "starting its
    # kernel")
    with open(log, "a") as f:
        f.write("".join(f"10:02:{i % 60:02d} bar units: {i}/500 [..]\n" for i in range(500)))
    assert read_state(log, tail_bytes=1024) == LogState(cell="3/4 § B", bar="units: 499/500 [..]")


def test_bars_go_to_the_log_under_the_runner_and_stay_off_in_job_workers(tmp_path, monkeypatch):
    log = tmp_path / "progress.log"
    monkeypatch.setenv("KIT_BATCH", "1")
    monkeypatch.setenv("TQDM_DISABLE", "1")  # as the runner's kernels: third-party bars off
    monkeypatch.setenv(progress.LOG_ENV, str(log))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert sum(progress.progress_bar(range(5), desc="models", unit="model")) == 10
    lines = log.read_text().splitlines()
    assert lines[-1].split(" ", 2)[1:] == ["bar", lines[-1].split(" ", 2)[2]]
    assert "models: 5/5" in lines[-1] and "\r" not in log.read_text()
    assert err.getvalue() == "", "nothing on the kernel's stderr (a cell's saved output)"
    monkeypatch.setenv(progress.LOG_ENV, "")  # a job worker: one bar per loop, not per job
    log.unlink()
    assert list(progress.progress_bar(range(3), desc="inner")) == [0, 1, 2]
    assert not log.exists() and err.getvalue() == ""


def test_bars_are_tqdm_auto_in_jupyterlab(monkeypatch):
    import tqdm.auto

    monkeypatch.delenv("KIT_BATCH", raising=False)
    bar = progress.progress_bar(desc="models", total=3, leave=False)
    assert isinstance(bar, tqdm.auto.tqdm)
    bar.close()


def test_heartbeats_go_to_each_running_notebook_s_log_and_to_a_non_terminal(tmp_path):
    (tmp_path / "01_a").mkdir()
    (tmp_path / "01_a" / "progress.log").write_text("10:00:00 cell 2/5 § Fit\n")
    out = io.StringIO()
    view = RunProgress(tmp_path, ["01_a", "02_b"], {"01_a": 600.0}, 2, out, tty=False)
    view.heartbeat_s = 0.0  # every call is due: no waiting in a test
    view.started("01_a")
    view.beat()
    beat = (tmp_path / "01_a" / "progress.log").read_text().splitlines()[-1]
    assert beat.split(" ", 2)[1] == "beat" and beat.endswith(
        "of ~10m00s (last run), cell 2/5 § Fit"
    )
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("[01_a] cell 2/5 § Fit | ") and printed[0].endswith("(last run)")
    assert printed[1] == "[run] 0/2 notebooks done, 1 running"
    view.finished("01_a")
    view.say("[01_a] ok in 1.0s")
    assert out.getvalue().splitlines()[-1] == "[01_a] ok in 1.0s"
    assert "\x1b" not in out.getvalue(), "no terminal codes in a log"


def test_on_a_terminal_the_live_lines_are_redrawn_in_place(tmp_path):
    out = io.StringIO()
    view = RunProgress(tmp_path, ["01_a"], {}, 1, out, tty=True)
    view.started("01_a")
    view.say("[01_a] running ...")
    assert out.getvalue().endswith("[run] 0/1 notebooks done, 1 running\n")
    drawn = out.getvalue()
    view.say("[01_a] ok in 1.0s")
    rest = out.getvalue()[len(drawn) :]
    assert rest.startswith("\x1b[1A\x1b[2K" * 2 + "[01_a] ok in 1.0s\n"), (
        "the two live lines are erased before a message is printed above them"
    )


def test_a_long_notebook_s_log_gets_cells_bars_and_heartbeats(tmp_path, capsys, monkeypatch):
    """The notebook waits (at most 5 min) until the runner's heartbeat is in its log, so nothing
    here depends on how fast the machine is."""
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.5)
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the kernel imports this checkout's kit
    code = (
        "import time\nfrom pathlib import Path\nfrom kit.core.progress import progress_bar\n"
        "log = Path(out_dir) / 'progress.log'\n"
        "for _ in progress_bar(range(2), desc='models', unit='model'):\n    pass\n"
        "for _ in range(3000):\n    if ' beat ' in log.read_text():\n        break\n"
        "    time.sleep(0.1)\nelse:\n    raise RuntimeError('no heartbeat in the log')\n"
    )
    nbs = fake_notebooks(tmp_path, {"01_long": code})
    rc = runner.main(
        ["--profile", "smoke", "--out", str(tmp_path / "runs"), "--notebooks", str(nbs)]
        + ["--parallel", "1", "--figures", str(tmp_path / "figs")]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    (run_dir,) = [p for p in (tmp_path / "runs" / "smoke").iterdir() if p.name != "latest"]
    log = (run_dir / "01_long" / "progress.log").read_text()
    kinds = [line.split(" ", 2)[1] for line in log.splitlines()]
    assert {"cell", "bar", "beat"} <= set(kinds), log
    assert "models: 2/2" in log
    assert any(line.startswith("[01_long] ") and " | " in line for line in out.splitlines()), (
        "the heartbeat printed on a non-terminal output"
    )
    executed = (run_dir / "01_long" / "01_long.ipynb").read_text()
    assert "models: " not in executed, "no bar in the executed notebook's outputs"


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [1, 2])
def test_ctrl_c_while_notebooks_start_side_by_side_prints_one_line(tmp_path, parallel):
    """Ctrl-C to the terminal's process group while notebooks are still starting (side-by-side
    children importing, kernels starting): one line, run.json interrupted, no staging file, exit
    130. A kernel still starting once printed a zmq traceback: its socket folder was removed under
    it."""
    nbs = fake_notebooks(tmp_path, {f"0{i}_sleep": "import time\ntime.sleep(300)" for i in (1, 2)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "kit", "run", "--profile", "smoke", "--notebooks", str(nbs)]
        + ["--out", str(tmp_path / "runs"), "--parallel", str(parallel)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for _ in range(600):  # the notebooks started: their folders exist, their kernels starting
        if len(list((tmp_path / "runs").glob("smoke/*/0[12]_sleep"))) == parallel:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "interrupted during" in err, err
    (run_dir,) = (tmp_path / "runs" / "smoke").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    assert not list(run_dir.rglob(".*.partial.ipynb")) and not (run_dir / ".specs").exists()
