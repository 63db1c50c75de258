"""Models' own answers to the suite's benchmarks, one job per (model, benchmark).

Competency Gaps' model gaps need per-item correctness ``m_b(i)`` (eq. 4). In the ``real`` profile
the models answer the suite's items themselves: greedy generation by the model's Hugging Face copy
(:func:`kit.models.generate.generate_responses`, chat template when the tokenizer has one, prompts
as ``kit.load_benchmark`` gives them, as the paper path does), scored by
:func:`kit.data.scorers.score`, with a truncation flag per response.

Each (model, benchmark) is a :class:`kit.core.jobs.Job` running :func:`answer_benchmark`: it writes
one JSON file under ``<cache>/cg/answers/`` named by the hash of everything that determines it (the
model, its files' content, the benchmark, the items, the decoding settings, :data:`ANSWERS_VERSION`)
and returns a small summary. Generation keeps finished batches in a per-item cache, so a killed job
resumes; a rerun finds the file and returns at once. :func:`run_answers` hands the jobs to the
config's engine (``inline``, ``local``, ``ray``: the same files and numbers on each) and reads them
back as :class:`ModelAnswers`.

Which items: the suite's coverage sample of each benchmark (:func:`kit.cg.suite.benchmark_items`,
``n_items``) in a seeded order, the first ``n_answer`` of them (:func:`answered_positions`), so
coverage and performance read the same datapoints and BBH's pooled tasks stay mixed.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kit.core.cached import MISSING, has_keys, read_json, write_json
from kit.core.jobs import Job, engine_options, run_jobs
from kit.core.paths import cache_dir
from kit.core.stats import wilson_interval
from kit.data.math_answers import math_checker
from kit.models.identity import name_identity

MATH_STYLE = ("math500", "agieval")
"""Benchmarks whose answers :func:`kit.data.scorers.score` may check with math-verify (agieval: its
cloze subset)."""

ANSWERS_VERSION = 1
"""Bump when generation or scoring changes what a file holds: older files are then not read."""


@dataclass
class ModelAnswers:
    """One model's scored answers to ``n`` items of one benchmark."""

    model: str
    benchmark: str
    positions: np.ndarray
    """Int[ndarray, "n"]: each answered item's row in the suite's coverage sample of the
    benchmark."""
    ids: list[str]
    responses: list[str]
    correct: np.ndarray
    """Bool[ndarray, "n"]: :func:`kit.data.scorers.score`."""
    truncated: np.ndarray
    """Bool[ndarray, "n"]: the response used all ``max_new_tokens`` (cut at the budget, not
    ended)."""
    max_new_tokens: int

    @property
    def accuracy(self) -> float:
        return float(np.mean(self.correct)) if len(self.correct) else float("nan")

    def summary(self) -> dict[str, Any]:
        """Accuracy with its Wilson interval, items and truncations (JSON-plain)."""
        acc, lo, hi = wilson_interval(int(np.sum(self.correct)), len(self.correct))
        return {
            "model": self.model,
            "benchmark": self.benchmark,
            "items": len(self.correct),
            "accuracy": acc,
            "accuracy_low": lo,
            "accuracy_high": hi,
            "truncated": int(np.sum(self.truncated)),
            "max_new_tokens": self.max_new_tokens,
        }


def answered_positions(n_coverage: int, n_answer: int, benchmark: str, seed: int = 0) -> np.ndarray:
    """Rows of a benchmark's coverage sample (``n_coverage`` items) the models answer: the first
    ``n_answer`` of a seeded order (a random subset, BBH's tasks mixed), in increasing order."""
    if n_answer < 1:
        raise ValueError(f"n_answer={n_answer}: at least one item per benchmark")
    order = list(range(n_coverage))
    random.Random(f"answered/{seed}/{benchmark}").shuffle(order)
    return np.sort(np.asarray(order[:n_answer], dtype=np.int64))


def model_key(model: str) -> str:
    """A model's short name in tables and results (``real/smollm2-135m-instruct`` ->
    ``smollm2-135m-instruct``)."""
    return model.rstrip("/").split("/")[-1]


def _settings(
    n_items: int, n_answer: int, seed: int, max_new_tokens: int, dtype: str | None
) -> dict[str, Any]:
    return {
        "n_items": n_items,
        "n_answer": n_answer,
        "seed": seed,
        "max_new_tokens": max_new_tokens,
        "dtype": dtype,
        "v": ANSWERS_VERSION,
    }


def _checker(benchmark: str) -> dict[str, str]:
    """MATH-style answers are scored by math-verify when it is installed, else by a normaliser
    (:func:`kit.data.math_answers.math_checker`): the checker is part of what a file's scores mean,
    so it names the file; other benchmarks' keys are unchanged."""
    if benchmark.split("/", 1)[0] not in MATH_STYLE:
        return {}
    return {"checker": math_checker()}


def answers_path(
    model: str,
    benchmark: str,
    n_items: int,
    n_answer: int,
    seed: int,
    max_new_tokens: int,
    dtype: str | None,
) -> Path:
    """Where :func:`answer_benchmark` keeps one (model, benchmark)'s answers: named by a hash of the
    model (its name and its files' content, :func:`kit.models.identity.name_identity`), the
    benchmark, the item sample, the decoding settings and, for MATH-style answers, the checker that
    scores them."""
    from kit.models.load import model_dir  # lazy: loads transformers

    key = json.dumps(
        {
            "model": model,
            "files": name_identity(str(model_dir(model))),
            "benchmark": benchmark,
            **_settings(n_items, n_answer, seed, max_new_tokens, dtype),
            **_checker(benchmark),
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    safe = "".join(
        c if c.isalnum() or c in "-." else "_" for c in f"{model_key(model)}__{benchmark}"
    )
    return cache_dir() / "cg" / "answers" / f"{safe}-{digest}.json"


def answer_benchmark(
    model: str,
    benchmark: str,
    n_items: int,
    n_answer: int,
    seed: int = 0,
    max_new_tokens: int = 64,
    batch_size: int = 8,
    dtype: str | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Job: ``model`` answers the :func:`answered_positions` items of ``benchmark``'s coverage
    sample (greedy, one torch thread: the engine spreads jobs over the cores), each response scored
    and checked for truncation; written once to :func:`answers_path`. Returns
    :meth:`ModelAnswers.summary`."""
    import torch

    from kit.cg.suite import benchmark_items
    from kit.data.scorers import score
    from kit.models import generate
    from kit.models.cache import ItemCache
    from kit.models.load import model_dir

    path = answers_path(model, benchmark, n_items, n_answer, seed, max_new_tokens, dtype)
    done = read_json(path, answers_check, what="answers cache")  # a refused file is recomputed
    if done is not MISSING:
        return answers_of(done).summary()
    torch.set_num_threads(1)
    pairs = benchmark_items(benchmark, n_items, seed)
    pos = answered_positions(len(pairs), min(n_answer, len(pairs)), benchmark, seed)
    chosen = [pairs[i] for i in pos]
    ids = [f"{name}/{getattr(it, 'id', i)}" for i, (name, it) in zip(pos, chosen)]
    settings = generate.GenerationSettings(max_new_tokens=max_new_tokens, seed=seed)
    where = model_dir(model)
    responses = generate.generate_responses(
        where,
        [it.prompt for _, it in chosen],
        settings,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        ids=ids,
        cache=ItemCache(str(where), benchmark, {**settings.as_dict(), "dtype": dtype}),
    )
    _, tokenizer = generate.hf_model(where, device, dtype)
    n_tokens = [len(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in responses]
    record = {
        "model": model,
        "benchmark": benchmark,
        "positions": pos.tolist(),
        "ids": ids,
        "responses": responses,
        "correct": [bool(score(name, it, r)) for (name, it), r in zip(chosen, responses)],
        "truncated": [n >= max_new_tokens for n in n_tokens],
        "max_new_tokens": max_new_tokens,
        **_checker(benchmark),
    }
    write_json(path, record)
    return read_answers(path).summary()


def answers_check(d: Any) -> str | None:
    """The check of a cached answers record: its keys and types, one position, id, response,
    verdict and truncation flag per answered item, positions >= 0."""
    why = has_keys(
        d,
        {
            "model": str,
            "benchmark": str,
            "positions": list,
            "ids": list,
            "responses": list,
            "correct": list,
            "truncated": list,
            "max_new_tokens": int,
        },
    )
    if why is not None:
        return why
    n = len(d["positions"])
    uneven = [k for k in ("ids", "responses", "correct", "truncated") if len(d[k]) != n]
    if uneven:
        return f"{', '.join(uneven)}: not one per position ({n})"
    if not all(type(p) is int and p >= 0 for p in d["positions"]):
        return "positions are not integers >= 0"
    if not all(isinstance(r, str) for r in d["responses"]):
        return "responses are not texts"
    if not all(type(b) is bool for b in d["correct"] + d["truncated"]):
        return "correct / truncated are not booleans"
    return None


def read_answers(path: Path) -> ModelAnswers:
    """The answers a finished :func:`answer_benchmark` job stored at ``path``."""
    d = read_json(path, answers_check, what="answers cache")
    if d is MISSING:
        raise FileNotFoundError(f"{path}: no usable answers (rerun: the job recomputes them)")
    return answers_of(d)


def answers_of(d: dict[str, Any]) -> ModelAnswers:
    return ModelAnswers(
        d["model"],
        d["benchmark"],
        np.asarray(d["positions"], dtype=np.int64),
        d["ids"],
        d["responses"],
        np.asarray(d["correct"], dtype=bool),
        np.asarray(d["truncated"], dtype=bool),
        int(d["max_new_tokens"]),
    )


def answer_jobs(
    models: Sequence[str],
    benchmarks: Sequence[str],
    n_items: int,
    n_answer: int,
    seed: int = 0,
    max_new_tokens: int = 64,
    batch_size: int = 8,
    dtype: str | None = None,
    device: str = "cpu",
) -> list[Job]:
    """One :func:`answer_benchmark` job per (model, benchmark), models in the outer loop (a worker
    that keeps one model's copy loaded serves its next benchmark without reloading)."""
    return [
        Job(
            answer_benchmark,
            {
                "model": m,
                "benchmark": b,
                "n_items": n_items,
                "n_answer": n_answer,
                "seed": seed,
                "max_new_tokens": max_new_tokens,
                "batch_size": batch_size,
                "dtype": dtype,
                "device": device,
            },
        )
        for m in models
        for b in benchmarks
    ]


def run_answers(cfg, benchmarks: Sequence[str]) -> dict[str, dict[str, ModelAnswers]]:
    """Every model of ``cfg.models`` on every benchmark of ``benchmarks``: the jobs of
    :func:`answer_jobs` on the config's engine (``engine``, ``max_workers``, ``ray_address``), then
    the files read back. Returns ``{model key: {benchmark: ModelAnswers}}``."""
    from kit.models import generate  # lazy: loads transformers

    jobs = answer_jobs(
        cfg.models,
        benchmarks,
        cfg.n_items,
        cfg.n_response_items,
        cfg.seed,
        cfg.max_new_tokens,
        cfg.gen_batch_size,
        cfg.dtype,
        cfg.device,
    )
    run_jobs(jobs, desc="answers (model x benchmark)", **engine_options(cfg))
    generate.release()  # the inline engine loaded the models here
    out: dict[str, dict[str, ModelAnswers]] = {}
    for job in jobs:
        a = job.kwargs
        path = answers_path(
            a["model"],
            a["benchmark"],
            a["n_items"],
            a["n_answer"],
            a["seed"],
            a["max_new_tokens"],
            a["dtype"],
        )
        out.setdefault(model_key(a["model"]), {})[a["benchmark"]] = read_answers(path)
    return out
