"""The ``ray`` engine: each job a Ray task with the job's ``num_cpus`` and ``num_gpus``.

Pointing it at a cluster: ``run_jobs(jobs, engine="ray", ray_address="ray://head:10001")`` (Ray
Client), or ``ray_address="auto"`` on a node of the cluster (``ray start --head`` there, ``ray
start --address=HEAD:6379`` on the others). With no address, a Ray this process already
initialised is used as it is (and left running), else a local Ray is started for the sweep
(:func:`init_local_ray`) and shut down after it. Every node needs this package installed (``pip
install -e '.[ray]'``, the same Ray and Python versions as the driver) and the same cache
directory: the driver's ``KIT_*`` variables (``KIT_CACHE_DIR``, ``KIT_DATA_DIR``, ``KIT_WORLD``)
are passed to every task, so point ``KIT_CACHE_DIR`` at storage that every node mounts at the same
path.

A task whose worker dies (SIGKILL, out of memory, a lost node) is retried by Ray (``max_retries``);
a job that raises is not (its error comes back as the job's outcome, as on every engine). A pinned
job runs in a worker started with ``PINNED_ENV`` (``runtime_env``) that serves only that job
(``max_calls=1``): Ray reuses a worker only within one ``runtime_env``, and the local engine's
pinned workers are what saves the start-ups on one machine.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import ray
import ray.exceptions

from kit.core.jobs.local import WORKER_ENV, Finished, pinned_env
from kit.core.jobs.spec import Job, call_job, last_lines

OBJECT_STORE_BYTES = 200 * 1024**2
"""Object store of a Ray started here: jobs return small JSON, so 200 MB (Ray's default: 30% of
the machine's memory)."""


def ray_call(fn: str, args_json: str, pinned: bool) -> dict[str, Any]:
    """What a Ray worker runs for a job: :func:`call_job`, in the pinned environment if asked,
    with ``attempt``: which of Ray's attempts of this task ran it (1 first, then its retries)."""
    if pinned:
        from kit.core.pinned import enter_pinned  # lazy: imports torch

        enter_pinned()
    return {**call_job(fn, args_json), "attempt": ray_attempt()}


def ray_attempt() -> int | None:
    """The running task's attempt, 1-based (Ray counts from 0, retries included); None where this
    Ray does not say (the call is not public API: a missing count is only a count lost)."""
    try:
        from ray._private.worker import global_worker

        core = getattr(global_worker, "core_worker")  # set in a worker; pyright cannot know
        return int(core.get_current_task_attempt_number()) + 1
    except Exception:  # any Ray without it, or outside a task
        return None


def init_local_ray(
    num_cpus: int | None = None, object_store_bytes: int = OBJECT_STORE_BYTES, attempts: int = 3
) -> None:
    """Start a single-node Ray on this machine and connect to it: no dashboard, a small object
    store, no usage statistics. ``ray.shutdown()`` stops it (and it stops when this process dies).

    Ray (2.60) listens on every interface and cannot be bound to 127.0.0.1 alone; its token
    authentication (on by default, the token in ``~/.ray``) keeps other users out. Retried: Ray's
    raylet gives its helper processes 15 s to start, and each imports ``ray`` (about a CPU-second),
    which a heavily loaded machine may not give them in time.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report over the network
    for attempt in range(1, attempts + 1):
        try:
            # "local": a new Ray of our own, never one found on the machine (another user's)
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                log_to_driver=True,
                object_store_memory=object_store_bytes,
            )
            return
        except Exception as e:  # Ray raises a bare Exception when its node times out starting
            ray.shutdown()
            if attempt == attempts or "timed out during startup" not in str(e):
                raise RuntimeError(
                    f"could not start a local Ray ({attempt} attempt(s)): {e} On a "
                    "loaded machine Ray's helper processes may miss the raylet's "
                    "start-up window; retry when fewer processes compete for the "
                    "cores"
                ) from e
            warnings.warn(
                f"a local Ray did not start (attempt {attempt} of {attempts}): {e}; retrying",
                stacklevel=2,
            )


class RayExecutor:
    """Submits every ready job at once (Ray queues what the cluster cannot start yet)."""

    def __init__(
        self, graph: dict[str, Job], ray_address: str | None, max_workers: int | None, retries: int
    ):
        self.started_here = False
        if not ray.is_initialized():
            if ray_address is None:
                init_local_ray(num_cpus=max_workers)
            else:
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                ray.init(address=ray_address, log_to_driver=True)
            self.started_here = True
        self.remote = ray.remote(ray_call)
        self.remote_fresh = ray.remote(max_calls=1)(ray_call)  # its worker exits after one call
        self.retries = retries
        self.refs: dict[ray.ObjectRef, Job] = {}
        self.env = {**{k: v for k, v in os.environ.items() if k.startswith("KIT_")}, **WORKER_ENV}
        self._warn_infeasible(graph)

    def _warn_infeasible(self, graph: dict[str, Job]) -> None:
        """A job wider than every node waits forever (unless an autoscaler adds such a node)."""
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        for job in graph.values():
            if not any(
                r.get("CPU", 0) >= job.num_cpus and r.get("GPU", 0) >= job.num_gpus for r in nodes
            ):
                warnings.warn(
                    f"no node of the Ray cluster has {job.num_cpus} CPU(s) and "
                    f"{job.num_gpus} GPU(s) for job {job.id} = {job.describe()}: it "
                    "waits until one joins",
                    stacklevel=4,
                )

    def can_start(self, job: Job) -> bool:
        return True

    def submit(self, job: Job) -> None:
        env = {**self.env, **pinned_env()} if job.pinned else self.env
        options: dict[str, Any] = {
            "num_cpus": job.num_cpus,
            "num_gpus": job.num_gpus,
            "max_retries": self.retries,
            "retry_exceptions": False,
            "runtime_env": {"env_vars": env},
        }
        remote = self.remote_fresh if job.pinned else self.remote  # a fresh process per pinned job
        self.refs[remote.options(**options).remote(job.fn, job.args_json, job.pinned)] = job

    def running(self) -> int:
        return len(self.refs)

    def wait(self, timeout: float | None = None) -> list[Finished]:
        ready, _ = ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if ready:  # collect whatever else has finished too
            ready, _ = ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
        done = []
        for ref in ready:
            job = self.refs.pop(ref)
            try:
                outcome = ray.get(ref)
                done.append(Finished(job, outcome, attempts=outcome.pop("attempt", None)))
            except ray.exceptions.RayError as e:  # its worker died on every attempt, or it was lost
                died = isinstance(
                    e, (ray.exceptions.WorkerCrashedError, ray.exceptions.OutOfMemoryError)
                )
                done.append(
                    Finished(
                        job,
                        None,
                        f"its Ray task failed: {last_lines(str(e), 6)}",
                        attempts=self.retries + 1 if died else None,
                    )
                )
        return done

    def close(self) -> None:
        for ref in self.refs:
            ray.cancel(ref, force=True)  # ends the worker processes of running tasks
        self.refs.clear()
        if self.started_here:
            ray.shutdown()
