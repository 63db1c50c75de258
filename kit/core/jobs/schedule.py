"""``run_jobs``: check a sweep, hand its jobs to an engine in dependency order, report.

The scheduler is the same for every engine: it keeps the DAG, starts a job once all its
dependencies finished (in the order the jobs were given), skips the dependents of a failed job,
retries a job whose process died, and draws one progress bar. Engines only start jobs and say when
they end: ``inline`` here, in this process; ``local`` in worker processes (:mod:`.local`); ``ray``
as Ray tasks (:mod:`.ray_engine`).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Iterable, Literal, Protocol

from kit.core.jobs.local import (
    WORKER_ENV,
    Finished,
    LocalExecutor,
    Worker,
    env_is_pinned,
    pinned_env,
    stop_workers,
)
from kit.core.jobs.spec import Job, JobFailure, JobsFailed, JobsReport, call_job, resolve
from kit.core.progress import progress_bar

ENGINES = ("inline", "local", "ray")
Engine = Literal["inline", "local", "ray"]
DEFAULT_RETRIES = 2
"""Extra attempts for a job whose process died (not one that raised)."""
REDRAW_S = 10.0
"""Seconds between redraws of the progress bar while nothing changes (its elapsed time)."""


class Executor(Protocol):
    def can_start(self, job: Job) -> bool: ...
    def submit(self, job: Job) -> None: ...
    def running(self) -> int: ...
    def wait(self, timeout: float | None = None) -> list[Finished]: ...
    def close(self) -> None: ...


def default_workers() -> int:
    """The cores this process may use: its CPU affinity where the OS tells it, else
    ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def count_arg(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` for a count option (``--max-workers``, ``--parallel``): an integer >= 1,
    else one line naming ``flag`` and the allowed values."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{flag}={text!r}; allowed values: an integer >= 1")
        return n

    return parse


def engine_options(cfg: Any) -> dict[str, Any]:
    """A notebook config's ``engine``, ``max_workers`` and ``ray_address`` as ``run_jobs`` keyword
    arguments: ``run_jobs(jobs, **engine_options(run.cfg))``."""
    return {"engine": cfg.engine, "max_workers": cfg.max_workers, "ray_address": cfg.ray_address}


def plan(jobs: Iterable[Job]) -> dict[str, Job]:
    """Check a sweep before anything runs; return its jobs by id, deduplicated, in the order given.

    Raises ``ValueError`` naming the job for: a job given twice with the same id but different
    settings, a dependency that is not in the sweep, a dependency cycle, a function that cannot be
    imported. Identical jobs collapse into one, so no two processes write the same cache file.
    """
    graph: dict[str, Job] = {}
    for job in jobs:
        if not isinstance(job, Job):
            raise ValueError(f"run_jobs takes Job objects, got {job!r}")
        seen = graph.setdefault(job.id, job)
        if seen != job:
            raise ValueError(
                f"job id {job.id} is given twice with different settings:\n  {seen}\n  {job}"
            )
    for job in graph.values():
        missing = [d for d in job.after if d not in graph]
        if missing:
            raise ValueError(
                f"job {job.id} = {job.describe()} depends on {missing}, which are not in this sweep"
            )
    _check_acyclic(graph)
    for fn in dict.fromkeys(j.fn for j in graph.values()):
        resolve(fn)  # a typo in a function path fails here, before any job runs
    return graph


def _check_acyclic(graph: dict[str, Job]) -> None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    for root in graph:
        stack = [(root, iter(graph[root].after))]
        path = [root]
        state[root] = state.get(root) or 1
        if state[root] == 2:
            continue
        while stack:
            node, deps = stack[-1]
            dep = next(deps, None)
            if dep is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(dep) == 1:
                cycle = path[path.index(dep) :] + [dep]
                raise ValueError(f"jobs depend on each other in a cycle: {' -> '.join(cycle)}")
            elif state.get(dep) is None:
                state[dep] = 1
                stack.append((dep, iter(graph[dep].after)))
                path.append(dep)


class InlineExecutor:
    """Runs each job here, now, when it is submitted. A pinned job runs here too when this process
    was started with ``PINNED_ENV`` (the runner's kernels, the world's build process: it enters the
    pinned environment first), else in a fresh pinned worker process, as on the local engine."""

    def __init__(self) -> None:
        self.done: list[Finished] = []

    def can_start(self, job: Job) -> bool:
        return not self.done

    def submit(self, job: Job) -> None:
        if job.pinned and not env_is_pinned():
            worker = Worker({**os.environ, **WORKER_ENV, **pinned_env()}, once=True, pinned=True)
            try:
                worker.start(job)
                outcome = worker.read()
                died = worker.how_it_died() if outcome is None else ""
                self.done.append(Finished(job, outcome, died))
            finally:
                stop_workers([worker])
            return
        if job.pinned:
            from kit.core.pinned import enter_pinned  # lazy: imports torch

            enter_pinned()
        self.done.append(Finished(job, call_job(job.fn, job.args_json)))

    def running(self) -> int:
        return len(self.done)

    def wait(self, timeout: float | None = None) -> list[Finished]:
        done, self.done = self.done, []
        return done

    def close(self) -> None:
        self.done = []


def run_jobs(
    jobs: Iterable[Job],
    engine: Engine = "local",
    max_workers: int | None = None,
    ray_address: str | None = None,
    desc: str = "jobs",
    retries: int = DEFAULT_RETRIES,
    raise_on_failure: bool = True,
) -> JobsReport:
    """Run a sweep of jobs (a DAG through :attr:`Job.after`) on an engine; return what happened.

    - ``engine``: ``inline`` (this process, one job after another, in the order given where the
      dependencies allow), ``local`` (worker processes on this machine; the default) or ``ray``
      (Ray tasks on the cluster at ``ray_address``, e.g. ``"ray://head:10001"`` or ``"auto"``; with
      None, a Ray already initialised in this process, else a local Ray started for this sweep);
    - ``max_workers``: CPU slots of the local engine (default: this machine's cores); for a Ray
      started here, its ``num_cpus``; not used by ``inline`` or an existing cluster;
    - ``retries``: extra attempts for a job whose process died (SIGKILL, out of memory, a lost
      node); a job that raised is not retried;
    - ``raise_on_failure``: raise :class:`JobsFailed` once every runnable job has run if some job
      failed or was skipped (else the report says so and the caller decides).

    Identical jobs (same id) run once. Every job of a sweep is checked (:func:`plan`) before any
    runs. Ctrl-C stops the sweep and every job still running (their processes and what those
    started), then raises ``KeyboardInterrupt``.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}; allowed values: {', '.join(ENGINES)}")
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1
    ):
        raise ValueError(
            f"max_workers={max_workers!r}; allowed values: an int >= 1, or None (all cores)"
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries={retries!r}; allowed values: an int >= 0")
    graph = plan(jobs)
    report = JobsReport(engine=engine, jobs=graph)
    executor = _executor(engine, graph, max_workers, ray_address, retries)
    try:
        _schedule(graph, executor, report, desc, retries if engine != "ray" else 0)
    finally:
        executor.close()  # on Ctrl-C too: no job keeps running after run_jobs returns
    if raise_on_failure and not report.ok:
        raise JobsFailed(report)
    return report


def _executor(
    engine: str,
    graph: dict[str, Job],
    max_workers: int | None,
    ray_address: str | None,
    retries: int,
) -> Executor:
    if engine == "inline":
        return InlineExecutor()
    if engine == "local":
        need_gpus = any(j.num_gpus for j in graph.values())
        executor = LocalExecutor(max_workers or default_workers(), need_gpus)
        short = [j for j in graph.values() if not executor.can_start(j)]
        if short:  # only GPUs can be short here: a job wider than max_workers runs alone
            job = short[0]
            raise ValueError(
                f"job {job.id} = {job.describe()} needs {job.num_gpus} GPU(s); this "
                f"machine shows {len(executor.gpus_free)}. Use engine 'ray' on a "
                "cluster with GPUs, or num_gpus=0"
            )
        return executor
    try:
        from kit.core.jobs.ray_engine import RayExecutor  # lazy: ray is an optional extra
    except ImportError as e:
        raise ImportError(
            f"engine 'ray' needs Ray ({e}): pip install -e '.[ray]' (make setup "
            "installs it with the test extra)"
        ) from None
    return RayExecutor(graph, ray_address, max_workers, retries)


def _schedule(
    graph: dict[str, Job], executor: Executor, report: JobsReport, desc: str, retries: int
) -> None:
    waiting = dict(graph)  # not started yet, in the order given
    dependents: dict[str, list[str]] = {i: [] for i in graph}
    for job in graph.values():
        for dep in job.after:
            dependents[dep].append(job.id)
    unmet = {i: set(job.after) for i, job in graph.items()}
    started: dict[str, float] = {}
    t0 = time.perf_counter()
    bar = progress_bar(total=len(graph), desc=desc, unit="job")

    def skip_dependents(job_id: str, why: str) -> None:
        todo = [(d, job_id) for d in dependents[job_id]]
        while todo:
            node, cause = todo.pop()
            if node in waiting:
                del waiting[node]
                kind = "failed" if cause == job_id else "was skipped"
                failure = JobFailure(
                    graph[node],
                    "skipped",
                    f"dependency {cause} {kind}" + (f" ({why})" if cause == job_id else ""),
                )
                report.skipped[node] = failure
                bar.update(1)
                todo += [(d, node) for d in dependents[node]]

    shown = ["", 0.0]

    def show() -> None:  # redraw when the counts change, and every few seconds for the elapsed time
        text = (
            f"running {executor.running()}, failed {len(report.failed)}, "
            f"skipped {len(report.skipped)}"
        )
        if text != shown[0] or time.monotonic() - shown[1] > REDRAW_S:
            bar.set_postfix_str(text, refresh=True)
            shown[:] = [text, time.monotonic()]

    try:
        while True:
            for job_id in [i for i in waiting if not unmet[i]]:
                job = graph[job_id]
                if executor.can_start(job):
                    del waiting[job_id]
                    report.attempts[job_id] = report.attempts.get(job_id, 0) + 1
                    started[job_id] = time.perf_counter()
                    executor.submit(job)
            show()
            if not executor.running():
                break  # nothing running and nothing could start: every job is accounted for
            for event in executor.wait(timeout=1.0):  # a timeout keeps Ctrl-C responsive
                job = event.job
                report.seconds[job.id] = time.perf_counter() - started[job.id]
                if event.attempts is not None:  # Ray retried a dead worker's task by itself
                    report.attempts[job.id] = event.attempts
                if event.outcome is None and report.attempts[job.id] <= retries:
                    bar.write(
                        f"job {job.id} = {job.describe()}: {event.died}; retrying (attempt "
                        f"{report.attempts[job.id] + 1} of {retries + 1})"
                    )
                    waiting = {job.id: job, **waiting}  # retried first: it started before the rest
                    continue
                if event.outcome is None:
                    attempts = report.attempts.get(job.id, 1)
                    report.failed[job.id] = JobFailure(
                        job, "died", f"{event.died} ({attempts} attempt(s))"
                    )
                elif not event.outcome["ok"]:
                    report.failed[job.id] = JobFailure(job, "raised", event.outcome["error"])
                else:
                    report.results[job.id] = event.outcome["value"]
                    for d in dependents[job.id]:
                        unmet[d].discard(job.id)
                bar.update(1)
                if job.id in report.failed:
                    skip_dependents(job.id, report.failed[job.id].kind)
        left = [
            i
            for i in graph
            if i not in report.results and i not in report.failed and i not in report.skipped
        ]
        assert not left, f"scheduler bug: jobs {left} neither ran nor were skipped"
    finally:
        report.wall_seconds = time.perf_counter() - t0
        show()
        bar.close()
