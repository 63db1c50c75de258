"""Jobs: units of work that any engine can run, and ``run_jobs`` to run a sweep (a DAG) of them.

A :class:`Job` is a top-level function named by its import path plus JSON-able keyword arguments;
its work lands in the content-addressed caches and it may return a small JSON-able value::

    from kit.core.jobs import Job, run_jobs

    first = Job("kit.core.jobs.selftest:write_value", {"root": "/tmp/sq", "key": "a", "value": 3})
    second = Job("kit.core.jobs.selftest:write_value",
                 {"root": "/tmp/sq", "key": "b", "value": 4, "inputs": ["a"]}, after=[first])
    report = run_jobs([first, second], engine="local")    # or "inline", or "ray"
    report.results[second.id]                             # what the function returned

Engines: ``inline`` (this process, in order), ``local`` (worker processes over this machine's
cores; the default) and ``ray`` (a Ray cluster, or a local Ray started on demand). The engine only
schedules: the same jobs give the same results on every engine. A notebook passes its config's
choice with ``run_jobs(jobs, **engine_options(run.cfg))`` (the fields ``engine``, ``max_workers``
and ``ray_address`` of every config, settable with ``--set`` or papermill ``-p``).

``python -m kit.core.jobs selftest --engine ray [--ray-address ADDR]`` checks an engine (or a
cluster) on a small DAG of toy jobs against ``inline``, with a worker killed mid-job;
``python -m kit.core.jobs overhead --engine ENGINE`` times trivial jobs.
"""

from kit.core.jobs.schedule import (
    DEFAULT_RETRIES,
    ENGINES,
    Engine,
    default_workers,
    engine_options,
    plan,
    run_jobs,
)
from kit.core.jobs.spec import Job, JobFailure, JobsFailed, JobsReport, call_job, job_id

__all__ = [
    "DEFAULT_RETRIES",
    "ENGINES",
    "Engine",
    "Job",
    "JobFailure",
    "JobsFailed",
    "JobsReport",
    "call_job",
    "default_workers",
    "engine_options",
    "job_id",
    "plan",
    "run_jobs",
]
