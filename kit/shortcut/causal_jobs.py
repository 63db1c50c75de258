"""Eq. 4's patched accuracies of the locating pair: each model's every neuron group patched from the
donor, computed here or as one job per model (:mod:`kit.core.jobs`).

Causal localisation is most of notebook 03's time on a real model (every group of neurons patched
into M_con and into M_un, on every locating item). The two models' passes do not depend on each
other, so with ``Remote`` (the models' names, how to load them, the engine) each is a job: a worker
loads the model and the donor by name, reads the item set from the cache (:func:`save_task_data`:
a file named by its content, so a Ray cluster's workers read it from the shared cache), and runs
:func:`patched_accuracies`, the function that runs here otherwise. Each job writes only its own
model's patched-answer cache (the cache is keyed by the model), and returns its accuracies, which
travel as exact float lists: the engine only schedules (tests/shortcut/test_causal_jobs.py).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from kit.core.cached import MISSING, read_bytes_cached, write_bytes_cached
from kit.core.paths import cache_dir
from kit.shortcut.items import TaskData, generation_kwargs
from kit.shortcut.patching import Neuron

METHODS = ("exact", "teacher_forced")
"""Eq. 4's two accuracies: exact match of the (greedy) answer, and the teacher-forced probability of
the first target token."""


@dataclass(frozen=True)
class Remote:
    """How the locating pair's patched accuracies run as jobs."""

    names: Mapping[str, str]
    """``"con"`` / ``"un"`` / ``"base"`` -> the model's name, as :func:`kit.subjects.load_model_any`
    loads it in a worker."""
    load: Mapping[str, Any] = field(default_factory=dict)
    """``load_model_any``'s other arguments: ``device``, ``world``, ``dtype``."""
    jobs: Mapping[str, Any] = field(default_factory=dict)
    """``run_jobs``'s engine options (``engine_options(cfg)``)."""


def patched_accuracies(
    model,
    base,
    data: TaskData,
    sets: Sequence[Sequence[Neuron]],
    max_rows: int,
    max_new_tokens: int | None,
    n_new: int,
) -> dict[str, np.ndarray]:
    """``{"exact": Float[ndarray, "set"], "teacher_forced": Float[ndarray, "set"]}``: ``model``'s
    accuracy on ``data`` with each neuron set patched from ``base``. Token answers (the tiny world):
    dynamic-patching greedy generation and the first target token's probability. Free-text answers
    (benchmark items): the decoded responses scored as text; a one-token greedy answer is the argmax
    of the teacher-forced pass, not generated again."""
    from kit.shortcut.evaluate import accuracies, first_token_correct, first_tokens
    from kit.shortcut.scores import group_accuracy

    if data.items is None and not generation_kwargs(data):
        exact, tf = (
            group_accuracy(
                model,
                base,
                data.tokens,
                data.lengths,
                data.targets,
                sets,
                method=method,
                max_rows=max_rows,
            ).numpy()
            for method in METHODS
        )
        return {"exact": exact, "teacher_forced": tf}
    prob, top = first_tokens(model, base, data, sets, max_rows)
    if n_new == 1 and not generation_kwargs(data):
        exact = first_token_correct(model, data, top).mean(axis=1)
    else:
        exact = accuracies(model, base, data, sets, max_rows, max_new_tokens)
    return {"exact": exact, "teacher_forced": prob.mean(axis=1)}


def save_task_data(data: TaskData) -> str:
    """Write ``data`` to the cache under the digest of its bytes (once); return the file's path.

    The file's name is the digest of its bytes: a file there whose bytes no longer match it
    (changed or torn) is warned about and rewritten here, before any job reads it."""
    import torch

    buf = io.BytesIO()
    torch.save(data, buf)
    raw = buf.getvalue()
    path = cache_dir() / "shortcut" / "task-data" / f"{hashlib.sha256(raw).hexdigest()[:24]}.pt"
    if read_bytes_cached(path, lambda b: b, _named_by_digest(path), "task-data cache") is MISSING:
        write_bytes_cached(path, raw)
    return str(path)


def _named_by_digest(path: Path):
    def check(raw: bytes) -> str | None:
        digest = hashlib.sha256(raw).hexdigest()[:24]
        return None if digest == path.stem else f"its bytes' digest {digest} is not its name"

    return check


def read_task_data(path: str) -> TaskData:
    """The item set :func:`save_task_data` wrote at ``path``; a file whose bytes do not match its
    name (the digest they were written under) fails naming it."""
    import torch

    p = Path(path)
    raw = read_bytes_cached(p, lambda b: b, _named_by_digest(p), "task-data cache")
    if raw is MISSING:
        raise ValueError(
            f"task-data file {p} is missing or damaged (its bytes are not the digest it is "
            "named by): rerun the step that saves it (save_task_data rewrites it)"
        )
    # our own file (benchmark items are kit dataclasses): not weights-only
    return torch.load(io.BytesIO(raw), weights_only=False)


def patched_accuracies_job(
    model: str,
    base: str,
    load: Mapping[str, Any],
    data: str,
    sets: Sequence[Sequence[Sequence[int]]],
    max_rows: int,
    max_new_tokens: int | None,
    n_new: int,
) -> dict[str, Any]:
    """Job: :func:`patched_accuracies` of the model called ``model``, the donor ``base``, the item
    set saved at ``data``. Returns each accuracy as ``{"dtype", "values"}`` (exact)."""
    from kit.subjects import load_model_any

    m, b = load_model_any(model, **load), load_model_any(base, **load)
    neuron_sets = [[(int(L), int(i)) for L, i in s] for s in sets]  # JSON gave lists
    acc = patched_accuracies(
        m, b, read_task_data(data), neuron_sets, max_rows, max_new_tokens, n_new
    )
    return {k: {"dtype": str(v.dtype), "values": v.tolist()} for k, v in acc.items()}


def pair_accuracies(
    models: Mapping[str, Any],
    base,
    data: TaskData,
    sets: Sequence[Sequence[Neuron]],
    max_rows: int,
    max_new_tokens: int | None,
    n_new: int,
    remote: Remote | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`patched_accuracies` of each model of ``models`` (key -> model or
    :class:`kit.shortcut.pool.Lazy` handle, loaded in turn). ``remote``: one job per model instead
    (its ``names`` must name every key and ``"base"``)."""
    if remote is None:
        from kit.shortcut.pool import resolve

        out = {}
        for key, m in models.items():
            m = resolve(m)
            out[key] = patched_accuracies(m, base, data, sets, max_rows, max_new_tokens, n_new)
            del m
        return out
    from kit.core.jobs import Job, run_jobs

    missing = [k for k in (*models, "base") if k not in remote.names]
    if missing:
        raise ValueError(f"Remote.names lacks {missing}; it has {sorted(remote.names)}")
    path = save_task_data(data)
    common = {
        "base": remote.names["base"],
        "load": dict(remote.load),
        "data": path,
        "sets": [[list(n) for n in s] for s in sets],
        "max_rows": max_rows,
        "max_new_tokens": max_new_tokens,
        "n_new": n_new,
    }
    sweep = {k: Job(patched_accuracies_job, {"model": remote.names[k], **common}) for k in models}
    report = run_jobs(list(sweep.values()), desc="causal scores (a job per model)", **remote.jobs)
    return {
        k: {
            name: np.asarray(v["values"], dtype=v["dtype"])
            for name, v in report.results[job.id].items()
        }
        for k, job in sweep.items()
    }
