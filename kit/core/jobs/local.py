"""The ``local`` engine: worker processes on this machine, and the worker's own side of it.

A worker is ``python -m kit.core.jobs worker``: it reads jobs from its stdin and writes outcomes to
its stdout (length-prefixed JSON, :mod:`multiprocessing.connection` framing); a job's own prints go
to stderr. Workers are kept and reused (imports are paid once per worker, not per job), one per
shape: ``num_cpus`` (started with that many OpenMP/MKL threads) and pinned or not. A pinned job runs
in a worker started with the pinned environment (``PINNED_ENV`` must be in place before torch
loads), kept for the sweep's other pinned jobs: ~4 s of imports per job saved, 5% of notebook 03's
fine-tunes (~35 s each). Reuse keeps the bits: a pinned job seeds every generator it uses and trains
inside ``deterministic()``, as the world build's jobs do when one process builds several members in
turn. A job that needs GPUs gets a fresh worker that exits after it (``CUDA_VISIBLE_DEVICES`` is per
process). When the process that runs the sweep computes in the pinned environment itself (the
runner's notebook kernels, the world build), every worker enters it too, so a job gives the bits
it would give inline.

Each worker runs in its own session (process group), so stopping it stops whatever it started; on
Linux it also dies with the process that started it (``PR_SET_PDEATHSIG``), so a killed sweep
leaves no orphans. A worker that dies in a job (SIGKILL, out of memory) costs that job one attempt.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, cast

from kit.core.jobs.spec import Job, call_job

WORKER_ENV = {"TQDM_DISABLE": "1", "KIT_PROGRESS_LOG": ""}
"""Added to every worker's environment: one progress bar for the sweep, not one per job (in
JupyterLab and in the progress log of a ``kit run`` notebook alike: kit.core.progress)."""
STOP_GRACE_S = 5.0
"""Seconds a worker gets between SIGTERM and SIGKILL when a sweep stops."""


def pinned_env() -> dict[str, str]:
    """``kit.core.pinned.PINNED_ENV``, the one definition of the pinned numerical environment."""
    # lazy: computes_pinned() reads an import of kit.core.pinned as a sign that this process may
    # have entered the pinned environment
    from kit.core.pinned import PINNED_ENV

    return dict(PINNED_ENV)


def env_is_pinned() -> bool:
    """True when this process was started with ``PINNED_ENV`` (so it may enter it)."""
    return all(os.environ.get(k) == v for k, v in pinned_env().items())


def computes_pinned() -> bool:
    """True when this process computes in the pinned environment: started with ``PINNED_ENV`` and
    entered it (``kit.core.pinned.enter_pinned``, which ``kit.start`` and the world build call).
    Cheap when it is not: a process that never imported ``kit.core.pinned`` never entered it."""
    return "kit.core.pinned" in sys.modules and env_is_pinned()


@dataclass
class Finished:
    """A job's attempt ended: ``outcome`` is :func:`call_job`'s dict, or None when its process died
    (``died`` then says how)."""

    job: Job
    outcome: dict[str, Any] | None
    died: str = ""
    attempts: int | None = None
    """Processes that ran the job, counted by an engine that retries by itself (Ray); None: the
    scheduler's own count stands."""


class Worker:
    """One worker process and the two pipe ends that talk to it."""

    def __init__(self, env: dict[str, str], once: bool, pinned: bool):
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        args = [sys.executable, "-m", "kit.core.jobs", "worker"]
        args += ["--once"] * once + ["--pinned"] * pinned
        try:
            self.proc = subprocess.Popen(
                args, stdin=stdin_r, stdout=stdout_w, env=env, start_new_session=True
            )
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        self.send = Connection(stdin_w, readable=False)
        self.recv = Connection(stdout_r, writable=False)
        self.once = once
        self.pinned = pinned
        self.job: Job | None = None

    def start(self, job: Job) -> None:
        self.job = job
        self.send.send_bytes(json.dumps({"fn": job.fn, "args_json": job.args_json}).encode())

    def read(self) -> dict[str, Any] | None:
        """The outcome of the running job, or None if the worker died before sending it."""
        try:
            return json.loads(self.recv.recv_bytes())
        except (EOFError, OSError):
            return None

    def how_it_died(self) -> str:
        try:
            code = self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:  # its pipe closed but it lingers: stop it
            stop_workers([self])
            code = self.proc.returncode
        if code is not None and code < 0:
            return f"its process was killed by {signal.Signals(-code).name}"
        return f"its process exited with code {code} before returning a result"


def stop_workers(workers: list[Worker]) -> None:
    """Close the workers' pipes and end their process groups: SIGTERM to all, then SIGKILL to
    those still running after :data:`STOP_GRACE_S` (one grace period for all of them)."""
    for w in workers:
        w.send.close()
        w.recv.close()
        if w.proc.poll() is None:
            _signal_group(w.proc, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(w.proc, signal.SIGKILL)
            w.proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def visible_gpus() -> list[str]:
    """GPU ids this process may hand out: ``CUDA_VISIBLE_DEVICES`` if set, else torch's count."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    import torch  # lazy: only a sweep with GPU jobs needs it

    return [str(i) for i in range(torch.cuda.device_count())]


class LocalExecutor:
    """Runs up to ``max_workers`` CPU slots of jobs at once in worker processes (see the module's
    doc); a job that needs GPUs gets whole GPUs of this machine (``CUDA_VISIBLE_DEVICES``)."""

    def __init__(self, max_workers: int, need_gpus: bool):
        self.max_workers = max_workers
        self.gpus_free = visible_gpus() if need_gpus else []
        self.pinned_here = computes_pinned()
        self.busy: dict[Connection, Worker] = {}
        self.idle: dict[tuple[int, bool], list[Worker]] = {}  # by (cpus, pinned)
        self.cpus_used = 0
        self._gpus_of: dict[Worker, list[str]] = {}

    def cpus(self, job: Job) -> int:
        return min(job.num_cpus, self.max_workers)  # a job wider than the machine runs alone

    def can_start(self, job: Job) -> bool:
        return self.cpus_used + self.cpus(job) <= self.max_workers and math.ceil(
            job.num_gpus
        ) <= len(self.gpus_free)

    def submit(self, job: Job) -> None:
        cpus, gpus = self.cpus(job), math.ceil(job.num_gpus)
        pinned = job.pinned or self.pinned_here
        env = {**os.environ, **_threads(cpus), **WORKER_ENV}
        if pinned:
            env.update(pinned_env())  # last: the pinned thread counts win
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(self.gpus_free[:gpus])
            worker = self._spawn(env, once=True, pinned=pinned)
            self._gpus_of[worker] = self.gpus_free[:gpus]
            del self.gpus_free[:gpus]
        elif self.idle.get((cpus, pinned)):
            worker = self.idle[(cpus, pinned)].pop()
        else:
            worker = self._spawn(env, once=False, pinned=pinned)
        self.cpus_used += cpus
        self.busy[worker.recv] = worker
        worker.start(job)

    def _spawn(self, env: dict[str, str], once: bool, pinned: bool) -> Worker:
        n_idle = sum(len(v) for v in self.idle.values())
        if n_idle and len(self.busy) + n_idle >= self.max_workers:  # at most max_workers processes
            shape = next(k for k, v in self.idle.items() if v)
            stop_workers([self.idle[shape].pop()])
        return Worker(env, once=once, pinned=pinned)

    def running(self) -> int:
        return len(self.busy)

    def wait(self, timeout: float | None = None) -> list[Finished]:
        done = []
        for conn in wait(list(self.busy), timeout=timeout):
            worker = self.busy.pop(cast(Connection, conn))
            job = worker.job
            assert job is not None
            self.cpus_used -= self.cpus(job)
            self.gpus_free += self._gpus_of.pop(worker, [])
            outcome = worker.read()
            if outcome is None:
                done.append(Finished(job, None, worker.how_it_died()))
                stop_workers([worker])
                continue
            done.append(Finished(job, outcome))
            if worker.once:
                stop_workers([worker])
            else:
                worker.job = None
                self.idle.setdefault((self.cpus(job), worker.pinned), []).append(worker)
        return done

    def close(self) -> None:
        """Stop every worker, busy or idle (and whatever their jobs started)."""
        workers = list(self.busy.values()) + [w for ws in self.idle.values() for w in ws]
        self.busy.clear()
        self.idle.clear()
        stop_workers(workers)


def _threads(n: int) -> dict[str, str]:
    return {"OMP_NUM_THREADS": str(n), "MKL_NUM_THREADS": str(n)}


def _die_with_parent() -> None:
    """Linux: this process gets SIGTERM when the process that started it dies (no orphans)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def worker_main(once: bool, pinned: bool) -> int:
    """The worker process: run jobs from stdin until it closes (one job if ``once``); with
    ``pinned``, enter the pinned environment first (the process must have been started in it)."""
    _die_with_parent()
    recv = Connection(os.dup(0), writable=False)
    send = Connection(os.dup(1), readable=False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # a job that reads stdin sees EOF, not the protocol
    os.dup2(2, 1)  # a job's prints go to stderr, never into the protocol
    if pinned:
        from kit.core.pinned import enter_pinned  # lazy: imports torch

        enter_pinned()
    while True:
        try:
            message = json.loads(recv.recv_bytes())
        except EOFError:
            return 0
        outcome = call_job(message["fn"], message["args_json"])
        sys.stdout.flush()
        sys.stderr.flush()
        send.send_bytes(json.dumps(outcome).encode())
        if once:
            return 0
