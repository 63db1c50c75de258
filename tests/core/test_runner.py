"""The runner never destroys good outputs, never accepts what it cannot run, and fails in one line.

Figures are exported into a temporary git repository, never the real ``figures/``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kit.core import machine, runner
from kit.core.export import changed_figures, export_figures
from kit.core.paths import REPO_ROOT


def fake_notebooks(tmp_path, notebooks: dict[str, str]):
    """Notebooks with a parameters cell whose body writes ``figures/<name>.png`` then runs
    ``code``."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    folder = tmp_path / "nbs"
    folder.mkdir()
    for name, code in notebooks.items():
        save = (
            "from pathlib import Path\nd = Path(out_dir) / 'figures'\nd.mkdir(exist_ok=True)\n"
            f"(d / '{name}.png').write_bytes(b'new {name}')\n"
        )
        nb = new_notebook(
            cells=[
                new_code_cell(
                    "profile = 'smoke'\nout_dir = None", metadata={"tags": ["parameters"]}
                ),
                new_code_cell(save + code),
            ]
        )
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


def committed_figures(tmp_path, notebooks: list[str]):
    """A git repository holding one committed figure per notebook, as figures/ does."""
    figures = tmp_path / "figures"
    for name in notebooks:
        (figures / name).mkdir(parents=True)
        (figures / name / "committed.png").write_bytes(b"committed")
    git = ["git", "-C", str(figures), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(figures)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "figures"], check=True)
    return figures


def run(tmp_path, *args):
    return runner.main(["--profile", "smoke", "--out", str(tmp_path / "runs"), *args])


def test_a_failed_notebook_keeps_its_committed_figures(tmp_path, capsys):
    """A notebook that fails after saving a figure must not replace or delete
    figures/."""
    nbs = fake_notebooks(
        tmp_path, {"01_broken": "raise RuntimeError('planted failure')", "02_fine": "x = 1"}
    )
    figures = committed_figures(tmp_path, ["01_broken", "02_fine"])
    rc = run(tmp_path, "--notebooks", str(nbs), "--figures", str(figures))
    out = capsys.readouterr().out
    assert rc == 1
    assert (figures / "01_broken" / "committed.png").read_bytes() == b"committed", (
        "a failed run deleted figures"
    )
    assert not (figures / "01_broken" / "01_broken.png").exists(), (
        "a failed notebook's figures are not exported"
    )
    assert sorted(p.name for p in (figures / "02_fine").iterdir()) == ["02_fine.png"], (
        "a success replaces its folder"
    )
    assert (
        "WARNING: differs from the committed figure: 02_fine/02_fine.png (new, not committed)"
        in out
    )
    assert "WARNING: differs from the committed figure: 02_fine/committed.png (deleted)" in out
    assert "01_broken/" not in out.split("exported")[1], (
        "no warning for a notebook that was not exported"
    )
    assert not list(figures.glob(".*.new-*")) and not list(figures.glob(".*.old-*")), (
        "no staging debris"
    )


def test_export_of_unchanged_figures_warns_nothing(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "02_fine" / "figures").mkdir(parents=True)
    (run_dir / "02_fine" / "figures" / "committed.png").write_bytes(b"committed")
    figures = committed_figures(tmp_path, ["02_fine"])
    assert export_figures(run_dir, figures, ["02_fine"]) == 1
    assert changed_figures(figures, ["02_fine"]) == []
    assert changed_figures(tmp_path / "run", ["02_fine"]) == [], (
        "outside git there is nothing to compare"
    )


def test_unknown_profile_fails_before_anything_exists(tmp_path, capsys):
    """--profile papr used to exit 0, create runs/papr/<ts>/ and repoint latest."""
    rc = runner.main(["--profile", "papr", "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert rc == 2
    assert (
        "profile 'papr' is not defined" in err
        and "allowed profiles: dryrun, paper, real, realsmoke, smoke, tiny" in err
    )
    assert not (tmp_path / "runs").exists(), "nothing is created for a profile that cannot run"


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("n_evl=5", "--set n_evl: no selected notebook has such a field"),
        ("n_eval=0", "field 'n_eval'"),
        ("task=addd", "'task'"),
        ("n_eval", "expected field=value"),
    ],
)
def test_bad_set_fails_before_anything_exists(tmp_path, capsys, setting, fragment):
    """--set values are validated like the YAML, before a run directory exists."""
    rc = run(tmp_path, "--only", "00", "--set", setting)
    assert rc == 2 and fragment in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_set_reaches_only_notebooks_that_have_the_field():
    notebooks = runner.discover(["00", "03"])
    plan = runner.plan(notebooks, "smoke", {"n_eval": 30})
    assert plan == {"00_quickstart": {"n_eval": 30}, "03_shortcut_neurons": {"n_eval": 30}}
    plan = runner.plan(notebooks, "smoke", {"top_neurons": 7})
    assert plan == {"00_quickstart": {"top_neurons": 7}, "03_shortcut_neurons": {}}


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    """--out under a file used to end in a traceback."""
    (tmp_path / "file").write_text("")
    rc = runner.main(
        ["--profile", "smoke", "--only", "00", "--out", str(tmp_path / "file" / "runs")]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "cannot create the run directory" in err and "--out" in err


def test_read_only_runs_is_one_line(tmp_path, capsys, monkeypatch):
    """A read-only runs/ (simulated: the tests may run as root, who may write
    anywhere)."""
    mkdir = runner.Path.mkdir

    def refuse(self, *args, **kwargs):
        if str(self).startswith(str(tmp_path / "runs")):
            raise PermissionError(13, "Permission denied", str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(runner.Path, "mkdir", refuse)
    rc = runner.main(["--profile", "smoke", "--only", "00", "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Permission denied" in err and "--out" in err


def test_cache_dir_that_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    """KIT_CACHE_DIR naming a file fails before the run, naming the variable."""
    (tmp_path / "cache").write_text("")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    rc = run(tmp_path, "--only", "00")
    err = capsys.readouterr().err.strip()
    assert (
        rc == 2 and len(err.splitlines()) == 1 and "KIT_CACHE_DIR" in err and "not a folder" in err
    )
    assert not (tmp_path / "runs").exists()


def test_interrupted_run_is_marked_and_exports_nothing(tmp_path, capsys, monkeypatch):
    """Ctrl-C leaves run.json saying 'interrupted' and touches no exported figure."""

    def interrupt(nb, profile, run_dir, timeout, overrides=None):
        (run_dir / nb.stem / "figures").mkdir(parents=True)
        (run_dir / nb.stem / "figures" / "half.png").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "execute", interrupt)
    figures = committed_figures(tmp_path, ["00_quickstart"])
    rc = run(tmp_path, "--only", "00", "--figures", str(figures))
    err = capsys.readouterr().err.strip()
    assert rc == 130 and "interrupted during 00_quickstart" in err and len(err.splitlines()) == 1
    (run_dir,) = (tmp_path / "runs" / "smoke").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["notebooks"][0]["status"] == "interrupted"
    assert sorted(p.name for p in (figures / "00_quickstart").iterdir()) == ["committed.png"]
    assert not (tmp_path / "runs" / "smoke" / "latest").exists(), (
        "latest keeps pointing at a complete run"
    )


@pytest.mark.slow
def test_ctrl_c_on_a_real_kernel_prints_one_line(tmp_path):
    """Ctrl-C to the runner's process group (as a terminal sends it): no zmq tracebacks, run.json
    marked."""
    started = tmp_path / "cell-started"
    nbs = fake_notebooks(
        tmp_path,
        {
            "01_sleep": "import pathlib, "
            f"time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(120)"
        },
    )
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
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    record = None
    for _ in range(120):  # wait until the notebook is running (run.json exists), then press Ctrl-C
        time.sleep(0.5)
        found = list((tmp_path / "runs" / "smoke").glob("*/01_sleep"))
        if found:
            record = found[0].parent / "run.json"
            break
    for _ in range(240):  # the kernel has started and entered the cell (slow on a loaded machine)
        if started.exists():
            break
        time.sleep(0.5)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert (
        err.strip().splitlines() == [err.strip().splitlines()[0]]
        and "interrupted during 01_sleep" in err
    ), err
    assert json.loads(record.read_text())["status"] == "interrupted"


def _rendezvous(tmp_path, me: str, other: str) -> str:
    """Cell code: announce ``me`` has started, then wait (at most 5 min) until ``other`` has too.
    Run one after another, the first notebook would wait in vain and fail."""
    return (
        f"import pathlib, time\nd = pathlib.Path({str(tmp_path)!r})\n(d / '{me}.started').touch()\n"
        f"for _ in range(3000):\n    if (d / '{other}.started').exists():\n        break\n    "
        f"time.sleep(0.1)\nelse:\n    raise RuntimeError('{other} never started while {me} ran')\n"
    )


def test_notebooks_run_side_by_side(tmp_path, capsys):
    """Independent notebooks run at once, each in its own process and kernel; the record
    lists them in notebook order and no kernel socket is left in the notebooks' folder."""
    nbs = fake_notebooks(
        tmp_path,
        {
            "01_a": _rendezvous(tmp_path, "a", "b"),
            "02_b": _rendezvous(tmp_path, "b", "a"),
            "03_c": "x = 1",
        },
    )
    rc = run(
        tmp_path, "--notebooks", str(nbs), "--parallel", "2", "--figures", str(tmp_path / "figs")
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    (run_dir,) = [p for p in (tmp_path / "runs" / "smoke").iterdir() if p.name != "latest"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["parallel"] == 2
    assert [o["notebook"] for o in record["notebooks"]] == ["01_a", "02_b", "03_c"]
    assert all((run_dir / stem / f"{stem}.ipynb").exists() for stem in ("01_a", "02_b", "03_c"))
    assert sorted(p.name for p in nbs.iterdir()) == ["01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]
    assert not (run_dir / ".specs").exists(), "the runner's own files are removed"
    # each notebook's process tree peak (its kernel at least) is recorded for the next run's plan
    assert all(o["peak_bytes"] > 50 * 1024 * 1024 for o in record["notebooks"]), record
    assert "memory plan, GiB per notebook" in out
    assert record["memory_plan"].startswith("memory plan")


def test_a_failed_notebook_beside_others_is_named(tmp_path, capsys):
    nbs = fake_notebooks(
        tmp_path, {"01_broken": "raise RuntimeError('planted failure')", "02_fine": "x = 1"}
    )
    rc = run(
        tmp_path, "--notebooks", str(nbs), "--parallel", "2", "--figures", str(tmp_path / "figs")
    )
    captured = capsys.readouterr()
    assert rc == 1 and "FAILED notebooks: 01_broken" in captured.err
    (run_dir,) = (tmp_path / "runs" / "smoke").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert {o["notebook"]: o["status"] for o in record["notebooks"]} == {
        "01_broken": "failed",
        "02_fine": "ok",
    }
    assert "planted failure" in record["notebooks"][0]["error"]


def test_longest_notebooks_start_first(tmp_path):
    """The order of a side-by-side run: never-timed notebooks first (in number order), then the
    timed ones by their newest ok time, longest first."""
    for name, times in {
        "20260101-000000": {"01_a": 10, "02_b": 500, "03_c": 50},
        "20260102-000000": {"02_b": 5, "03_c": 60},
    }.items():
        (tmp_path / "smoke" / name).mkdir(parents=True)
        (tmp_path / "smoke" / name / "run.json").write_text(
            json.dumps(
                {
                    "notebooks": [
                        {"notebook": k, "status": "ok", "seconds": v} for k, v in times.items()
                    ]
                }
            )
        )
    (tmp_path / "smoke" / "20260103-000000").mkdir()
    (tmp_path / "smoke" / "20260103-000000" / "run.json").write_text("{damaged")
    nbs = [runner.Path(f"{s}.ipynb") for s in ("00_new", "01_a", "02_b", "03_c")]
    order = [p.stem for p in runner.longest_first(nbs, tmp_path, "smoke")]
    assert order == ["00_new", "03_c", "01_a", "02_b"]


def test_a_first_run_starts_the_notebooks_typically_longest_first(tmp_path):
    """No earlier run: the profile's first-run minutes order the notebooks (a fresh clone starts
    the long ones first); one without a typical time goes ahead; an earlier run's time wins."""
    nbs = [runner.Path(f"{s}.ipynb") for s in ("00_q", "03_s", "04_c", "06_a", "09_new")]
    typical = runner.FIRST_RUN_MINUTES["tiny"]
    expect = ["09_new"] + sorted(("00_q", "03_s", "04_c", "06_a"), key=lambda s: -typical[s[:2]])
    assert [p.stem for p in runner.longest_first(nbs, tmp_path, "tiny")] == expect
    (tmp_path / "tiny" / "20260101-000000").mkdir(parents=True)
    (tmp_path / "tiny" / "20260101-000000" / "run.json").write_text(
        json.dumps({"notebooks": [{"notebook": "00_q", "status": "ok", "seconds": 1e6}]})
    )
    assert runner.longest_first(nbs, tmp_path, "tiny")[1].stem == "00_q"
    assert [p.stem for p in runner.longest_first(nbs, tmp_path, "no-such-profile")] == [
        p.stem for p in nbs
    ]
    # the same times are the progress lines' expectations, first-run ones marked as estimates
    seconds, first = runner.expected_seconds(nbs, tmp_path, "tiny")
    assert seconds["00_q"] == 1e6 and "00_q" not in first, "an earlier run's time is measured"
    assert seconds["03_s"] == 60.0 * typical["03"] and first == {"03_s", "04_c", "06_a"}
    assert "09_new" not in seconds


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_bad_parallel_fails_in_one_line(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as e:
        run(tmp_path, "--only", "00", "--parallel", value)
    assert e.value.code == 2 and "--parallel" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_sigterm_stops_notebooks_running_side_by_side(tmp_path):
    """SIGTERM to the runner stops every running child: run.json says interrupted, both named."""
    nbs = fake_notebooks(
        tmp_path,
        {
            f"0{i}_sleep{i}": f"import pathlib, time\npathlib.Path({str(tmp_path)!r}, "
            f"'s{i}').touch()\ntime.sleep(300)"
            for i in (1, 2)
        },
    )
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
            "--parallel",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    for _ in range(600):  # both kernels in their cells (slow on a loaded machine)
        if (tmp_path / "s1").exists() and (tmp_path / "s2").exists():
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    assert (
        "interrupted during 01_sleep1, 02_sleep2" in err
        or "interrupted during 02_sleep2, 01_sleep1" in err
    ), err
    (run_dir,) = [p for p in (tmp_path / "runs" / "smoke").iterdir()]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    assert sorted(o["status"] for o in record["notebooks"]) == ["interrupted", "interrupted"]
    assert not list(run_dir.rglob(".*.partial.ipynb")) and not (run_dir / ".specs").exists()


def test_kernels_get_a_generous_iopub_timeout_and_no_cell_timeout(tmp_path, monkeypatch):
    """nbclient's 4 s wait for a finished cell's output failed a heatmap cell under load; the runner
    asks for IOPUB_TIMEOUT_S and sets no cell timeout unless one is given."""
    import papermill

    from kit.core import execution

    seen = {}

    def fake(src, dst, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    nb = tmp_path / "00_x.ipynb"
    nb.write_text("{}")
    (tmp_path / "run").mkdir()
    outcome = execution.execute(nb, "smoke", tmp_path / "run", timeout=None)
    assert outcome.status == "failed" and "stop here" in outcome.error
    assert seen["iopub_timeout"] == execution.IOPUB_TIMEOUT_S >= 300
    assert seen["execution_timeout"] is None


def test_run_json_records_when_where_and_how_busy(tmp_path, monkeypatch):
    """docs/timings.md prints each run's start, wall time, machine, commit and load (run.json)."""
    from kit.core.execution import NotebookOutcome

    def ok(nb, profile, run_dir, timeout, overrides=None):
        (run_dir / nb.stem).mkdir(parents=True)
        return NotebookOutcome(nb.stem, "ok", 1.5, 0, 0, "")

    monkeypatch.setattr(runner, "execute", ok)
    monkeypatch.setattr(runner, "_finish", lambda args, run_dir, outcomes, save: save("ok") or 0)
    assert run(tmp_path, "--only", "00", "--parallel", "1") == 0
    (run_dir,) = (tmp_path / "runs" / "smoke").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["notebooks"][0]["seconds"] == 1.5
    assert record["started"].endswith(" UTC") and record["started"][:4].isdigit()
    assert record["wall_s"] >= 0 and f"{record['cores']} cores" in record["machine"]
    assert record["commit"] == machine.commit()
    assert record["load_max"] is None or record["load_max"] >= (record["load_start"] or 0)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_machine_lacks_is_refused_before_any_kernel(tmp_path, capsys, monkeypatch):
    """device=cuda on a CPU-only torch passed validation, then failed raw ~40 s into the kernel."""
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a kernel started"))
    rc = run(tmp_path, "--only", "00", "--set", "device=cuda")
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("00_quickstart: field 'device': 'cuda' but ") and "cpu" in err, err
    assert not (tmp_path / "runs").exists()


def test_a_killed_runner_s_run_is_marked_killed_and_its_staging_removed(tmp_path, monkeypatch):
    """After SIGKILL of the runner, run.json stayed 'running' and .<nb>.partial.ipynb stayed."""
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is free (a reuse before the check would only leave the run as it was)
    old = tmp_path / "runs" / "smoke" / "20260101-000000"
    (old / "00_quickstart").mkdir(parents=True)
    staging = old / "00_quickstart" / ".00_quickstart.partial.ipynb"
    staging.write_text("{}")
    record = {"status": "running", "pid": dead.pid, "host": socket.gethostname(), "notebooks": []}
    (old / "run.json").write_text(json.dumps(record))
    alive = tmp_path / "runs" / "smoke" / "20260101-000001"  # a runner still running: left alone
    alive.mkdir()
    (alive / "run.json").write_text(json.dumps({**record, "pid": os.getpid()}))

    def ok(nb, profile, run_dir, timeout, overrides=None):
        (run_dir / nb.stem).mkdir()
        return runner.NotebookOutcome(nb.stem, "ok", 0.1)

    monkeypatch.setattr(runner, "execute", ok)
    monkeypatch.setattr(runner, "_finish", lambda *a: 0)
    assert run(tmp_path, "--only", "00", "--parallel", "1") == 0
    marked = json.loads((old / "run.json").read_text())
    assert marked["status"] == "killed" and f"pid {dead.pid}" in marked["error"]
    assert not staging.exists()
    assert json.loads((alive / "run.json").read_text())["status"] == "running"
    assert runner.mark_killed_runs(tmp_path / "runs" / "smoke") == [], "marked once"
