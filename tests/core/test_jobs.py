"""The job layer: jobs and their ids, sweeps checked before they run, and the same results on every
engine (inline, local worker processes, a local Ray cluster), with killed workers, failing jobs,
pinned jobs and Ctrl-C. The toy jobs (kit.core.jobs.selftest) write content-addressed files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kit.core.jobs import Job, JobsFailed, engine_options, job_id, plan, run_jobs
from kit.core.jobs.selftest import dag_totals, toy_dag
from kit.core.params import ParamsError, load_params
from kit.core.pinned import PINNED_ENV

TOY = "kit.core.jobs.selftest"
WANT = {"a": 1, "b": 2, "c": 3, "d": 4, "ab": 13, "cd": 27, "all": 140}
"""The toy DAG's totals by hand: ab = 10 + 1 + 2, cd = 20 + 3 + 4, all = 100 + 13 + 27."""


def files(root: Path) -> dict[str, str]:
    """The content-addressed files a toy sweep wrote (name -> content)."""
    return {p.name: p.read_text() for p in sorted(root.glob("*.json"))}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


# --- jobs and sweeps, before anything runs --------------------------------------------------


def test_job_id_is_a_hash_of_function_and_canonical_arguments():
    a = Job(f"{TOY}:write_value", {"root": "/r", "key": "a", "value": 1})
    same = Job(f"{TOY}:write_value", {"value": 1, "key": "a", "root": "/r"})
    assert a.id == same.id == job_id(a.fn, '{"key":"a","root":"/r","value":1}')
    assert Job(f"{TOY}:write_value", {"root": "/r", "key": "a", "value": 2}).id != a.id
    assert Job(f"{TOY}:noop", {"i": 1}, id="mine").id == "mine"
    # a tuple is stored as the list every engine passes on, so it is the same job
    job = Job(f"{TOY}:record_call", {"path": "p", "text": ("x",)})
    assert job.kwargs == {"path": "p", "text": ["x"]}
    from kit.core.jobs.selftest import noop

    assert Job(noop, {"i": 3}).fn == f"{TOY}:noop"


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Job(f"{TOY}:noop", {"i": {1, 2}}), ["JSON-able", "noop"]),
        (lambda: Job(f"{TOY}:noop", {"i": float("nan")}), ["JSON-able"]),
        (lambda: Job("kit.core.jobs.selftest.noop", {}), ["module:function"]),
        (lambda: Job(lambda: 1), ["top-level function"]),
        (lambda: Job(f"{TOY}:noop", {"i": 1}, num_cpus=0), ["num_cpus", ">= 1"]),
        (lambda: Job(f"{TOY}:noop", {"i": 1}, num_gpus=-1), ["num_gpus", ">= 0"]),
    ],
)
def test_a_bad_job_is_refused_with_the_reason(make, words):
    with pytest.raises(ValueError) as e:
        make()
    assert all(w in str(e.value) for w in words), str(e.value)


def test_plan_dedupes_and_refuses_conflicts_unknown_dependencies_cycles_and_functions(tmp_path):
    a = Job(f"{TOY}:noop", {"i": 1})
    assert list(plan([a, Job(f"{TOY}:noop", {"i": 1})])) == [a.id]
    with pytest.raises(ValueError, match="different settings"):
        plan([a, Job(f"{TOY}:noop", {"i": 1}, pinned=True)])
    with pytest.raises(ValueError, match="not in this sweep"):
        plan([Job(f"{TOY}:noop", {"i": 2}, after=["nope"])])
    x = Job(f"{TOY}:noop", {"i": 3}, id="x", after=["y"])
    y = Job(f"{TOY}:noop", {"i": 4}, id="y", after=["x"])
    with pytest.raises(ValueError, match="cycle: x -> y -> x|cycle: y -> x -> y"):
        plan([a, x, y])
    # a typo in a function fails the whole sweep before any job runs (the good job writes nothing)
    good = Job(f"{TOY}:record_call", {"path": str(tmp_path / "calls"), "text": "x"})
    for bad, what in (
        (f"{TOY}:no_such_function", "has no function 'no_such_function'"),
        ("kit.no_such_module:f", "cannot be imported"),
    ):
        with pytest.raises(ValueError, match=what):
            run_jobs([good, Job(bad)], engine="inline")
    assert not (tmp_path / "calls").exists()


def test_run_jobs_refuses_bad_engine_arguments():
    with pytest.raises(ValueError, match="engine='threads'; allowed values: inline, local, ray"):
        run_jobs([], engine="threads")
    with pytest.raises(ValueError, match="max_workers=0; allowed values"):
        run_jobs([], max_workers=0)
    assert run_jobs([], engine="local").ok


def test_a_gpu_job_on_a_machine_without_gpus_fails_before_running(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match="needs 1 GPU"):
        run_jobs([Job(f"{TOY}:noop", {"i": 1}, num_gpus=1)], engine="local")


# --- inline and local -------------------------------------------------------------------------


def test_inline_follows_dependencies_and_returns_values(tmp_path):
    jobs = toy_dag(tmp_path, kill=False)  # sink first: write_value raises if an input is missing
    report = run_jobs(jobs, engine="inline")
    assert report.ok and dag_totals(report.results) == WANT
    assert len(report.jobs) == 7  # leaf "a" was given twice
    assert set(report.seconds) == set(report.jobs) and set(report.attempts.values()) == {1}


def test_local_gives_inline_results_and_survives_a_killed_worker(tmp_path):
    want = run_jobs(toy_dag(tmp_path / "inline", kill=False), engine="inline")
    jobs = toy_dag(tmp_path / "local")  # job "cd" SIGKILLs its own worker on its first attempt
    report = run_jobs(jobs, engine="local", max_workers=2)
    assert dag_totals(report.results) == dag_totals(want.results) == WANT
    assert files(tmp_path / "local") == files(tmp_path / "inline")
    killed = [j.id for j in jobs if j.fn.endswith("die_first")]
    assert report.attempts[killed[0]] == 2 and sum(report.attempts.values()) == 8
    dead = int((tmp_path / "local" / "cd.died").read_text())
    assert dead != os.getpid() and not alive(dead)


def test_local_gives_up_on_a_job_that_always_dies(tmp_path):
    job = Job(f"{TOY}:die_first", {"root": str(tmp_path), "key": "k", "value": 1, "times": 5})
    after = Job(f"{TOY}:noop", {"i": 1}, after=[job])
    with pytest.raises(JobsFailed) as e:
        run_jobs([job, after], engine="local", retries=1)
    report = e.value.report
    assert report.failed[job.id].kind == "died" and "SIGKILL" in report.failed[job.id].error
    assert report.attempts[job.id] == 2 and len((tmp_path / "k.died").read_text().split()) == 2
    assert report.skipped[after.id].kind == "skipped" and job.id in report.skipped[after.id].error


def test_identical_jobs_run_once(tmp_path):
    calls = tmp_path / "calls"
    job = Job(f"{TOY}:record_call", {"path": str(calls), "text": "x"})
    twin = Job(f"{TOY}:record_call", {"path": str(calls), "text": "x"})
    report = run_jobs([job, twin], engine="local")
    assert report.results == {job.id: 1} and calls.read_text() == "x\n"


def test_a_failed_job_is_named_with_its_arguments_after_the_others_finish(tmp_path):
    bad = Job(f"{TOY}:fail", {"message": "boom", "number": 3})
    child = Job(f"{TOY}:noop", {"i": 7}, after=[bad])
    grandchild = Job(f"{TOY}:noop", {"i": 8}, after=[child])
    others = toy_dag(tmp_path, kill=False)
    for engine in ("inline", "local"):
        with pytest.raises(JobsFailed) as e:
            run_jobs([bad, child, grandchild, *others], engine=engine, max_workers=2)
        message, report = str(e.value), e.value.report
        assert f"job {bad.id} = {TOY}:fail(message='boom', number=3)" in message
        assert "ValueError: boom (3)" in message
        assert 'raise ValueError(f"{message} ({number})")' in message  # the job's own line
        assert dag_totals(report.results) == WANT  # everything that did not depend on it ran
        assert report.failed[bad.id].kind == "raised"
        assert f"dependency {bad.id} failed (raised)" in report.skipped[child.id].error
        assert f"dependency {child.id} was skipped" in report.skipped[grandchild.id].error
    report = run_jobs([bad, child], engine="inline", raise_on_failure=False)
    assert not report.ok and set(report.failed) == {bad.id} and set(report.skipped) == {child.id}


def test_the_first_line_of_a_failed_sweep_names_its_first_cause(tmp_path):
    """A full cache in a sweep said only "JobsFailed: 2 of 4 job(s) failed": the cause was inside
    each traceback, and run.json's error was cut before it."""
    bad = Job(f"{TOY}:fail", {"message": "no space left on device writing /c/x.json", "number": 1})
    ok = Job(f"{TOY}:noop", {"i": 1})
    with pytest.raises(JobsFailed) as e:
        run_jobs([ok, bad], engine="inline")
    first = str(e.value).splitlines()[0]
    assert first == (
        "1 of 2 job(s) failed (first: ValueError: no space left on device writing /c/x.json (1)) "
        "and 0 were skipped (engine inline):"
    )
    from kit.core.execution import _short_error

    long = JobsFailed(e.value.report)
    long.args = (first + "\n" + "x" * 2000,)
    assert _short_error(long).startswith(f"JobsFailed: {first}")


def test_a_job_that_returns_something_not_json_fails(tmp_path):
    job = Job("kit.core.paths:cache_dir")  # returns a Path
    report = run_jobs([job], engine="inline", raise_on_failure=False)
    assert "must be JSON-able" in report.failed[job.id].error


@pytest.mark.parametrize("engine", ["inline", "local"])
def test_a_pinned_job_runs_in_another_process_with_the_pinned_environment(engine):
    job = Job(f"{TOY}:numerics", {"names": sorted(PINNED_ENV)}, pinned=True)
    result = run_jobs([job], engine=engine).results[job.id]
    assert result["env"] == PINNED_ENV and result["pid"] != os.getpid()
    assert result["mkldnn"] is False  # enter_pinned ran: oneDNN off


def test_local_keeps_a_pinned_worker_for_the_next_pinned_job_and_not_for_a_plain_one():
    """Pinned start-ups are paid once per worker (notebook 03's fine-tunes), and a plain job never
    lands in a pinned worker (nor the reverse): their numerics differ."""
    args = {"names": sorted(PINNED_ENV)}
    chain = [
        Job(f"{TOY}:numerics", args, id=f"p{i}", after=[f"p{i - 1}"] if i else [], pinned=True)
        for i in range(3)
    ]
    plain = Job(f"{TOY}:numerics", args, id="plain", after=["p2"])
    results = run_jobs([*chain, plain], engine="local", max_workers=1).results
    pids = {results[j.id]["pid"] for j in chain}
    assert len(pids) == 1 and all(results[j.id]["env"] == PINNED_ENV for j in chain)
    assert results[plain.id]["pid"] not in pids
    assert results[plain.id]["env"] != PINNED_ENV


def test_a_pinned_sweep_runs_every_job_pinned_and_pinned_jobs_inline_here():
    """A process that computes pinned (the runner's kernels) gets the same numerics in its local
    workers, for unpinned jobs too; inline, a pinned job then runs in that process itself."""
    script = textwrap.dedent(f"""
        import json, os
        from kit.core.pinned import PINNED_ENV, enter_pinned
        enter_pinned()
        from kit.core.jobs import Job, run_jobs
        plain = Job("{TOY}:numerics", {{"names": sorted(PINNED_ENV)}})
        pinned = Job("{TOY}:numerics", {{"names": sorted(PINNED_ENV)}}, pinned=True)
        local = run_jobs([plain], engine="local").results[plain.id]
        inline = run_jobs([pinned], engine="inline").results[pinned.id]
        print(json.dumps({{"local": local, "inline": inline, "pid": os.getpid()}}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **PINNED_ENV},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["local"]["env"] == PINNED_ENV and out["local"]["mkldnn"] is False
    assert out["local"]["pid"] != out["pid"]
    assert out["inline"]["pid"] == out["pid"] and out["inline"]["mkldnn"] is False


def test_the_selftest_command_checks_an_engine(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.core.jobs",
            "selftest",
            "--engine",
            "local",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the same results and files as inline" in done.stdout


def test_ctrl_c_stops_the_sweep_and_its_worker_processes(tmp_path):
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(f"""
        from kit.core.jobs import Job, run_jobs
        job = Job("{TOY}:sleep_job", {{"pid_file": {str(pid_file)!r}, "seconds": 600}})
        run_jobs([job], engine="local")
    """)
    # SIG_DFL in the child: a shell without job control (a CI step, `nohup make test &`) starts its
    # background commands with SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    sweep = subprocess.Popen(
        [sys.executable, "-c", script],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 300
        while not pid_file.exists():
            assert sweep.poll() is None, sweep.stderr.read()
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.2)
        worker = int(pid_file.read_text())
        assert alive(worker)
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=60)
        assert sweep.returncode != 0 and "KeyboardInterrupt" in err
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(worker), "the job's worker process outlived the interrupted sweep"
    finally:
        sweep.kill()


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("engine", "threads", "'inline', 'local' or 'ray'"),
        ("max_workers", 0, "greater than or equal to 1"),
        ("ray_address", "my cluster", "ray://HOST:PORT"),
    ],
)
def test_engine_fields_are_validated_naming_field_value_and_allowed(field, value, allowed):
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "smoke", {field: value})
    message = str(e.value)
    assert f"field {field!r}" in message and repr(value) in message and allowed in message


def test_engine_options_turn_a_config_into_run_jobs_arguments():
    cfg = load_params(
        "00_quickstart",
        "smoke",
        {"engine": "ray", "ray_address": "ray://head:10001", "max_workers": 3},
    )
    assert engine_options(cfg) == {
        "engine": "ray",
        "max_workers": 3,
        "ray_address": "ray://head:10001",
    }
    default = load_params("00_quickstart", "smoke")
    assert engine_options(default) == {"engine": "local", "max_workers": None, "ray_address": None}


# --- a local Ray cluster ----------------------------------------------------------------------


def test_ray_gives_inline_results_and_survives_a_killed_worker(tmp_path, local_ray):
    want = run_jobs(toy_dag(tmp_path / "inline", kill=False), engine="inline")
    jobs = toy_dag(tmp_path / "ray")  # "cd" SIGKILLs its Ray worker once
    report = run_jobs(jobs, engine="ray")
    assert dag_totals(report.results) == dag_totals(want.results) == WANT
    killed = [j.id for j in jobs if j.fn.endswith("die_first")]
    assert report.attempts[killed[0]] == 2, "Ray's own retry of the killed worker's task is counted"
    assert sum(report.attempts.values()) == 8, report.attempts
    assert files(tmp_path / "ray") == files(tmp_path / "inline")
    dead = int((tmp_path / "ray" / "cd.died").read_text())
    assert dead != os.getpid() and not alive(dead)
    assert local_ray.is_initialized()  # a Ray the caller started is left running


def test_ray_reports_a_failed_job_and_skips_its_dependents(tmp_path, local_ray):
    bad = Job(f"{TOY}:fail", {"message": "ray boom"})
    child = Job(f"{TOY}:noop", {"i": 1}, after=[bad])
    with pytest.raises(JobsFailed) as e:
        run_jobs([bad, child, Job(f"{TOY}:noop", {"i": 2})], engine="ray")
    assert "ValueError: ray boom (0)" in str(e.value)
    assert e.value.report.results == {Job(f"{TOY}:noop", {"i": 2}).id: 2}
    assert set(e.value.report.skipped) == {child.id}


def test_a_pinned_job_on_ray_runs_with_the_pinned_environment(local_ray):
    job = Job(f"{TOY}:numerics", {"names": sorted(PINNED_ENV)}, pinned=True)
    result = run_jobs([job], engine="ray").results[job.id]
    assert result["env"] == PINNED_ENV and result["pid"] != os.getpid()
    assert result["mkldnn"] is False
