"""Rows per model: one function over many models, one model in memory at a time, here or as jobs.

Notebooks 01 and 02 measure every model on every task the same way: load a model, compute a few
rows for each task, free it, load the next. :func:`rows_per_model` is that loop, once. Its
``compute`` is a top-level function ``compute(subject, name, **kwargs) -> list[dict]``; with
``jobs=None`` the models are measured here, one after another (a subject the caller already holds
is used as it is); otherwise each model is one job of :mod:`kit.core.jobs` (``jobs``: the keyword
arguments of ``run_jobs``, e.g. ``engine_options(cfg)``), loaded in the worker that runs it, and its
rows come back as the job's value. The rows are the same either way (tests/subjects/test_sweep.py):
the engine only schedules, and what a model's answers cost to recompute is held by the per-item
caches of the subjects (a rerun after a killed sweep reads them back).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from kit.core.jobs.spec import function_path, resolve

NAN = "NaN"
"""How a NaN float travels in a job's value (canonical JSON has no NaN)."""


def _plain(v: Any) -> Any:
    """A row value as JSON: numpy scalars as Python ones, NaN as :data:`NAN`."""
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        v = v.item()  # numpy scalar
    if isinstance(v, float) and math.isnan(v):
        return NAN
    return v


def encode_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[list[Any]]]:
    """``rows`` as a job's JSON-able value: each row a list of ``[column, value]`` pairs (a job's
    value travels as canonical JSON, whose objects have sorted keys; pairs keep the columns' order).
    :func:`decode_rows` inverts it exactly."""
    return [[[k, _plain(v)] for k, v in r.items()] for r in rows]


def decode_rows(rows: Sequence[Sequence[Sequence[Any]]]) -> list[dict[str, Any]]:
    return [{k: math.nan if v == NAN else v for k, v in r} for r in rows]


def model_rows_job(
    compute: str, model: str, load: Mapping[str, Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Job: load ``model`` (:func:`kit.subjects.load_subject` with ``load``), run ``compute`` on it,
    free it. Returns ``{"rows": encoded rows}``."""
    rows = _measure_one(resolve(compute), model, load, kwargs, None)
    return {"rows": encode_rows(rows)}


def _measure_one(
    compute: Callable[..., list[dict[str, Any]]],
    model: str,
    load: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    subject: Any,
) -> list[dict[str, Any]]:
    from kit.models.generate import release
    from kit.subjects import load_subject

    held = subject is not None
    subject = subject if held else load_subject(model, **load)
    try:
        return compute(subject, model, **kwargs)
    finally:
        if not held:
            del subject
            release()  # the Hugging Face copy that generated, the GPU cache: one model at a time


def rows_per_model(
    compute: str | Callable[..., list[dict[str, Any]]],
    models: Sequence[str],
    load: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    jobs: Mapping[str, Any] | None = None,
    loaded: Mapping[str, Any] | None = None,
    desc: str = "models",
) -> list[dict[str, Any]]:
    """Every row of ``compute(subject, name, **kwargs)`` for each model of ``models`` (duplicates
    measured once), in the order of ``models``.

    ``load``: :func:`kit.subjects.load_subject`'s keyword arguments (``device``, ``world``,
    ``dtype``, ``prompt_style``); ``kwargs``: ``compute``'s, JSON-able when ``jobs`` is given.
    ``jobs=None``: here, one model after another; ``loaded``: subjects already held, by name, used
    instead of loading them again (only here: a worker loads its own). Otherwise one job per model
    on ``run_jobs(**jobs)``; a failed model raises :class:`kit.core.jobs.JobsFailed` naming it.
    """
    from kit.core.jobs import Job, run_jobs

    names = list(dict.fromkeys(models))
    if jobs is None:
        from kit.core.progress import progress_bar

        fn = compute if callable(compute) else resolve(function_path(compute))
        held = loaded or {}
        return [
            row
            for name in progress_bar(names, desc=desc, unit="model")
            for row in _measure_one(fn, name, load, kwargs, held.get(name))
        ]
    sweep = [
        Job(
            model_rows_job,
            {
                "compute": function_path(compute),
                "model": m,
                "load": dict(load),
                "kwargs": dict(kwargs),
            },
        )
        for m in names
    ]
    report = run_jobs(sweep, desc=desc, **dict(jobs))
    return [row for j in sweep for row in decode_rows(report.results[j.id]["rows"])]
